"""The planner's action server on a SingleThreadedExecutor (as bring-up runs it): the same tests,
so cancel, preemption and feedback must not depend on executor threads."""

from __future__ import annotations

import contextlib

from test_planner_node import *  # noqa: F403
from test_planner_node import _goal, _params

ROS_EXECUTOR = "single"


def test_result_arrives_when_nothing_else_wakes_the_executor(ros: Any) -> None:  # noqa: F405
    """The planner spun by ``executor.spin()`` (no timeout, as the console script and bring-up
    do) with no other traffic: the execute coroutine resumes only when its executor wakes, so
    the goal thread must wake it (results were lost once joint states stopped waking it)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    ns = ros.namespace()
    node = PlannerNode(context=ctx, namespace=ns,  # noqa: F405
                       parameter_overrides=_params())
    executor.add_node(node)

    def spin() -> None:
        with contextlib.suppress(Exception):  # ExternalShutdownException at the end
            executor.spin()

    spinner = threading.Thread(target=spin, daemon=True)  # noqa: F405
    spinner.start()
    client = ClientSide(ros.context, ns, f"{ns}/planner/plan_motion")  # noqa: F405
    try:
        assert client.client.wait_for_server(timeout_sec=10.0)
        assert ros.wait_until(lambda: node.robot is not None)
        for _ in range(3):
            run = GoalRun(client, _goal(Q_LEFT, start=Q_RIGHT))  # noqa: F405
            assert run.accepted()
            t0 = time.monotonic()  # noqa: F405
            status, result = run.result(timeout=20.0)
            assert status == GoalStatus.STATUS_SUCCEEDED, result.message  # noqa: F405
            assert run.result_time - t0 < result.planning_time + 2.0
    finally:
        client.close()
        rclpy.try_shutdown(context=ctx)
        spinner.join(timeout=10.0)
        executor.shutdown()
        node.destroy_node()
