"""The ``planner`` node, in-process through a real ``rclpy.action.ActionClient``.

One PlannerNode (default arm, demo world) per module in its own namespace; every test sends real
PlanMotion goals and checks results against the core API: a reachable goal gives a collision-free
trajectory (re-checked densely with the core checker), bad input gives the documented error code
with a message, cancel and preemption stop planning quickly. The cancel and preemption latencies
are printed (run with ``-s`` to see them).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any, Optional

import numpy as np
import pytest

from robot_collision import CollisionChecker, RobotModel, data_path, default_robot_paths
from robot_collision.ros.world import WorldModel

rclpy = pytest.importorskip("rclpy")

from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from shape_msgs.msg import SolidPrimitive  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from robot_collision.ros.planner_node import PlannerNode  # noqa: E402
from robot_collision_interfaces.action import PlanMotion  # noqa: E402
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg  # noqa: E402

# the action server must also work on a multi-threaded executor (test_planner_node_single.py
# runs the same tests on the default single-threaded one)
ROS_EXECUTOR = "multi"

pytestmark = pytest.mark.ros

URDF, SRDF = default_robot_paths()
WORLD_FILE = data_path("config", "demo_world.yaml")
JOINTS = [f"joint{i + 1}" for i in range(7)]
READY = np.array([0.0, 0.5, 0.0, 1.7, 0.0, 0.94, 0.0])
Q_RIGHT = READY + np.array([-1.2, 0, 0, 0, 0, 0, 0])  # tool over the table, right of the crate
Q_LEFT = READY + np.array([1.2, 0, 0, 0, 0, 0, 0])  # left of it: the straight motion hits it
Q_HIT = np.array([0.0, 1.2, 0.0, 1.2, 0.0, 0.8, 0.0])  # tool into the table
R = PlanMotion.Result
CHECKS_PER_RAD = 32.0


# --------------------------------------------------------------------------- fixtures
class ClientSide:
    """The action client on a node and SingleThreadedExecutor of its own; every client call runs
    as a task of that executor.

    rclpy's ActionClient is not thread-safe: it sends a request, then registers the future for
    the response, and a response the spinning thread processes in between is dropped ("Ignoring
    unexpected goal response"). Calls made in the spinning thread itself cannot interleave so,
    whatever executor the planner runs on.
    """

    def __init__(self, context: Any, namespace: str, action: str) -> None:
        from rclpy.executors import SingleThreadedExecutor

        self.context = context
        self.node = rclpy.create_node(f"client_{uuid.uuid4().hex[:8]}", context=context,
                                      namespace=namespace)
        self.client = ActionClient(self.node, PlanMotion, action)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="action_client", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.02)
            except Exception:
                if not self.context.ok():
                    break

    def call(self, fn: Any, timeout: float = 10.0) -> Any:
        """``fn()`` run in the client's spinning thread; its return value."""
        task = self.executor.create_task(fn)
        deadline = time.monotonic() + timeout
        while not task.done():
            assert time.monotonic() < deadline, "the client's executor did not run the call"
            time.sleep(0.001)
        return task.result()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        with contextlib.suppress(Exception):
            self.executor.remove_node(self.node)
        with contextlib.suppress(Exception):
            self.client.destroy()
        with contextlib.suppress(Exception):
            self.node.destroy_node()
        with contextlib.suppress(Exception):
            self.executor.shutdown()


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    return RobotModel.from_urdf(URDF, srdf=SRDF)


@pytest.fixture(scope="module")
def world() -> WorldModel:
    w = WorldModel()
    w.use_file(WORLD_FILE)
    return w


@pytest.fixture(scope="module")
def core(robot: RobotModel) -> CollisionChecker:
    return CollisionChecker(robot)


def _params(**extra: Any) -> list[Parameter]:
    values: dict[str, Any] = {
        "urdf_path": str(URDF),
        "srdf_path": str(SRDF),
        "world_file": str(WORLD_FILE),
        "seed": 7,
        "goal_ik_attempts": 60,
        # edges are checked every validation_distance; between two checks a path may graze an
        # obstacle by a fraction of a millimetre (seen: 0.7 mm): plan with a margin, as the
        # shipped configuration does (0.02 m), and check the result without one
        "padding": 0.005,
    }
    values.update(extra)
    return [Parameter(k, value=v) for k, v in values.items()]


def _start(ros: Any, **params: Any) -> SimpleNamespace:
    ns = ros.namespace()
    node = ros.add_node(PlannerNode(
        context=ros.context, namespace=ns, parameter_overrides=_params(**params)))
    helper = ros.helper(ns)
    client = ClientSide(ros.context, ns, f"{ns}/planner/plan_motion")
    assert client.client.wait_for_server(timeout_sec=10.0), "planner action server not available"
    assert ros.wait_until(lambda: node.robot is not None), "planner did not load the robot"
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    paths = ros.collect(helper, MarkerArray, f"{ns}/planner/planned_path", latched)
    # publishers live as long as the helper node: destroying entities while the executor
    # spins is racy, so only whole nodes are removed (in _stop)
    joint_pub = helper.create_publisher(JointState, "joint_states", 10)
    world_pub = helper.create_publisher(WorldObjectMsg, "collision_checker/world_objects", 10)
    return SimpleNamespace(ns=ns, node=node, helper=helper, client=client, paths=paths,
                           joint_pub=joint_pub, world_pub=world_pub)


@pytest.fixture(scope="module")
def planner(ros: Any) -> Iterator[SimpleNamespace]:
    s = _start(ros)
    yield s
    _stop(ros, s)


def _stop(ros: Any, s: SimpleNamespace) -> None:
    s.client.close()  # stops its spinning before destroying the action client
    ros.remove_node(s.helper)
    ros.remove_node(s.node)
    # let the executor settle after removing nodes: the harness' spin thread only tolerates
    # ExternalShutdownException, and a shutdown racing a busy executor raises RCLError there
    time.sleep(0.2)


def _publish_joint_state(ros: Any, s: SimpleNamespace, q: Sequence[float]) -> None:
    """Publish ``q`` on joint_states until the planner has it (best-effort subscription)."""
    assert ros.wait_for_subscribers(s.joint_pub)
    msg = JointState()
    msg.name = [*reversed(JOINTS), "gripper_finger"]  # any order, extra joints ok
    msg.position = [float(v) for v in reversed(list(q))] + [0.01]

    def arrived() -> bool:
        latest = s.node.latest_joint_state()
        if latest is not None and np.allclose(latest, q):
            return True
        s.joint_pub.publish(msg)
        return False

    assert ros.wait_until(arrived, timeout=10.0, period=0.05), "joint state not received"


# --------------------------------------------------------------------------- goals
def _goal(
    goal: Optional[Sequence[float]] = None,
    start: Optional[Sequence[float]] = None,
    names: Optional[Sequence[str]] = None,
    **fields: Any,
) -> Any:
    g = PlanMotion.Goal()
    g.joint_names = list(JOINTS if names is None else names)
    if goal is not None:
        g.goal_positions = [float(v) for v in goal]
    if start is not None:
        g.use_start = True
        g.start_positions = [float(v) for v in start]
    for k, v in fields.items():
        setattr(g, k, v)
    return g


class GoalRun:
    """One goal sent through the ActionClient: feedback, result and timing."""

    def __init__(self, side: ClientSide, goal: Any) -> None:
        self.feedback: list[Any] = []
        self.first_feedback = threading.Event()
        self.result_time = math.nan
        self._side = side
        self.sent = time.monotonic()
        self._send = side.call(
            lambda: side.client.send_goal_async(goal, feedback_callback=self._on_feedback))
        self.handle: Any = None
        self._result: Any = None

    def _on_feedback(self, msg: Any) -> None:
        self.feedback.append(msg.feedback)
        self.first_feedback.set()

    def accepted(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while not self._send.done():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        self.handle = self._send.result()
        if self.handle.accepted:
            handle = self.handle

            def ask() -> Any:
                future = handle.get_result_async()
                future.add_done_callback(self._on_result)
                return future

            self._result = self._side.call(ask)
        return bool(self.handle.accepted)

    def cancel(self) -> None:
        """Request cancellation (the goal must have been accepted)."""
        handle = self.handle
        self._side.call(lambda: handle.cancel_goal_async())

    def _on_result(self, _future: Any) -> None:
        self.result_time = time.monotonic()

    def result(self, timeout: float = 30.0) -> tuple[int, Any]:
        """(goal status, PlanMotion.Result)."""
        assert self.handle is not None or self.accepted(), "goal not accepted"
        deadline = time.monotonic() + timeout
        while not self._result.done():
            assert time.monotonic() < deadline, "no result in time"
            time.sleep(0.002)
        res = self._result.result()
        while math.isnan(self.result_time):  # done callbacks run just after done() turns true
            assert time.monotonic() < deadline + 1.0, "result callback did not run"
            time.sleep(0.001)
        return int(res.status), res.result


def _run(s: SimpleNamespace, goal: Any, timeout: float = 30.0) -> tuple[int, Any, GoalRun]:
    run = GoalRun(s.client, goal)
    assert run.accepted(), "goal rejected"
    status, result = run.result(timeout)
    return status, result, run


def _hard_goal() -> Any:
    """Right -> left around the crate with a 10 um checking step: minutes of planning."""
    return _goal(Q_LEFT, start=Q_RIGHT, validation_distance=1e-5, max_connection_distance=0.05,
                 max_iterations=2**31 - 1, time_limit=120.0)


# --------------------------------------------------------------------------- checks
def _positions(traj: Any) -> np.ndarray:
    return np.array([list(p.positions) for p in traj.points])


def _times(traj: Any) -> np.ndarray:
    return np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                     for p in traj.points])


def _assert_collision_free(core: CollisionChecker, world: WorldModel, Q: np.ndarray) -> int:
    """Every trajectory point and straight steps between consecutive points, at least
    ``CHECKS_PER_RAD`` per radian (joint-space L2), are collision-free. Returns the count."""
    dense = [Q[:1]]
    for a, b in itertools.pairwise(Q):
        steps = max(1, math.ceil(np.linalg.norm(b - a) * CHECKS_PER_RAD))
        t = (np.arange(1, steps + 1) / steps)[:, None]
        dense.append(a + (b - a) * t)
    D = np.concatenate(dense)
    valid = core.is_valid_batch(D, world.objects())
    assert valid.all(), f"{int((~valid).sum())} of {len(D)} checked configurations collide"
    return len(D)


def _assert_failed(status: int, result: Any, code: int, *words: str) -> None:
    assert status == GoalStatus.STATUS_ABORTED, f"status {status}: {result.message}"
    assert result.error_code == code, f"error_code {result.error_code}: {result.message}"
    assert result.message, "a failure must say why"
    for w in words:
        assert w in result.message, f"{w!r} not in {result.message!r}"
    assert len(result.trajectory.points) == 0


# --------------------------------------------------------------------------- tests
def test_reachable_goal_from_joint_states(
    ros: Any, planner: SimpleNamespace, robot: RobotModel, core: CollisionChecker,
    world: WorldModel,
) -> None:
    _publish_joint_state(ros, planner, Q_RIGHT)
    assert not core.is_motion_valid(Q_RIGHT, Q_LEFT, world.objects()), "needs a detour"
    order = [6, 2, 0, 4, 1, 5, 3]  # the goal may name the joints in any order
    goal = _goal([Q_LEFT[i] for i in order], names=[JOINTS[i] for i in order],
                 velocity_scaling=0.5)
    status, result, run = _run(planner, goal)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    assert result.error_code == R.SUCCESS
    assert result.iterations >= 1 and result.planning_time > 0
    assert run.feedback, "no feedback received"
    fb = run.feedback[-1]
    assert fb.start_tree_size >= 1 and fb.goal_tree_size >= 1 and fb.elapsed >= 0

    traj = result.trajectory
    assert list(traj.joint_names) == robot.joint_names
    assert traj.header.frame_id == "base_link"
    Q, t = _positions(traj), _times(traj)
    assert len(Q) >= 2
    np.testing.assert_allclose(Q[0], Q_RIGHT, atol=1e-6)
    np.testing.assert_allclose(Q[-1], Q_LEFT, atol=1e-6)
    assert t[0] == 0.0 and np.all(np.diff(t) > 0), "times must increase strictly"
    V = np.array([list(p.velocities) for p in traj.points])
    A = np.array([list(p.accelerations) for p in traj.points])
    assert V.shape == Q.shape and A.shape == Q.shape
    vmax = robot.velocity_limits * 0.5
    assert np.all(np.abs(V) <= vmax * (1 + 1e-6) + 1e-9), "velocity limits (scaled) exceeded"
    np.testing.assert_allclose(V[0], 0.0, atol=1e-9)
    np.testing.assert_allclose(V[-1], 0.0, atol=1e-9)
    assert all(robot.within_limits(q) for q in Q)
    _assert_collision_free(core, world, Q)

    # the path on ~/planned_path: end-effector line from start to goal, ghost poses
    def has_line(m: MarkerArray) -> bool:
        return any(k.ns == "end_effector_path" and k.action == Marker.ADD for k in m.markers)

    arr = planner.paths.wait_for(has_line, timeout=5.0)
    assert arr is not None, "no planned path markers"
    line = next(k for k in arr.markers if k.ns == "end_effector_path")
    assert line.type == Marker.LINE_STRIP and len(line.points) >= 2
    assert line.header.frame_id == "base_link"
    tool = robot.link_transforms(Q_RIGHT)["tool"][:3, 3]
    p0 = line.points[0]
    np.testing.assert_allclose([p0.x, p0.y, p0.z], tool, atol=1e-6)
    assert {k.ns for k in arr.markers if k.ns.startswith("ghost_")} >= {"ghost_0", "ghost_3"}


def test_display_trajectory_with_moveit(ros: Any, robot: RobotModel) -> None:
    """With moveit_msgs installed (the real-ROS tier), a planned goal is also published on
    /display_planned_path as moveit_msgs/DisplayTrajectory: the action's trajectory, the start
    state and the robot's name."""
    moveit = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed")
    s = _start(ros)
    try:
        assert s.node.MOVEIT_INTERFACES and s.node._display_pub is not None
        shown = ros.collect(s.helper, moveit.DisplayTrajectory, "/display_planned_path")
        assert ros.wait_until(lambda: shown.sub.get_publisher_count() > 0)
        status, result, _ = _run(s, _goal(Q_LEFT, start=Q_RIGHT))
        assert status == GoalStatus.STATUS_SUCCEEDED, result.message
        msg = shown.wait_for(lambda m: m.trajectory and len(
            m.trajectory[0].joint_trajectory.points) == len(result.trajectory.points), 10.0)
        assert msg is not None, "no DisplayTrajectory for the goal"
        assert msg.model_id == robot.name
        jt = msg.trajectory[0].joint_trajectory
        assert list(jt.joint_names) == robot.joint_names
        np.testing.assert_allclose(_positions(jt), _positions(result.trajectory))
        assert list(msg.trajectory_start.joint_state.name) == robot.joint_names
        np.testing.assert_allclose(msg.trajectory_start.joint_state.position, Q_RIGHT, atol=1e-9)
    finally:
        _stop(ros, s)


def test_goal_in_collision_names_the_pair(
    planner: SimpleNamespace, core: CollisionChecker, world: WorldModel
) -> None:
    pairs = core.check(Q_HIT, world.objects(), exhaustive=True).colliding_pairs
    assert pairs
    status, result, _ = _run(planner, _goal(Q_HIT, start=READY))
    _assert_failed(status, result, R.GOAL_IN_COLLISION, "collision")
    for a, b in pairs:
        assert f"{a} <-> {b}" in result.message or f"{b} <-> {a}" in result.message


def test_start_in_collision(planner: SimpleNamespace) -> None:
    status, result, _ = _run(planner, _goal(READY, start=Q_HIT))
    _assert_failed(status, result, R.START_IN_COLLISION, "table")


def test_outside_limits(planner: SimpleNamespace) -> None:
    q = READY.copy()
    q[1] = 2.5  # joint2 limit is 2.0944
    status, result, _ = _run(planner, _goal(q, start=READY))
    _assert_failed(status, result, R.OUTSIDE_LIMITS, "joint2")


@pytest.mark.parametrize(
    ("label", "kwargs", "words"),
    [
        ("unknown joint", {"names": [*JOINTS[:6], "elbow"]}, ["elbow"]),
        ("duplicate joint", {"names": [*JOINTS[:6], "joint1"]}, ["joint1"]),
        ("missing joint", {"names": JOINTS[:6], "goal": READY[:6]}, ["joint7"]),
        ("short positions", {"goal": READY[:6]}, ["7 joint names but 6 positions"]),
        ("long start", {"start": [*READY, 0.0]}, ["start_positions"]),
        ("nan goal", {"goal": [math.nan, *READY[1:]]}, ["non-finite", "joint1"]),
        ("inf start", {"start": [*READY[:6], math.inf]}, ["non-finite", "joint7"]),
        ("nameless short", {"names": [], "goal": READY[:5]}, ["7 values"]),
        ("negative time limit", {"time_limit": -1.0}, ["time_limit"]),
        ("nan validation", {"validation_distance": math.nan}, ["validation_distance"]),
        ("coarse validation", {"validation_distance": 0.5}, ["only check more finely"]),
        ("huge time limit", {"time_limit": 1e300}, ["time_limit"]),
        ("velocity scaling > 1", {"velocity_scaling": 1.5}, ["velocity_scaling"]),
        ("negative iterations", {"max_iterations": -5}, ["max_iterations"]),
        # tiny positive values: INTERNAL_ERROR (allocation failures) before issue 10 item 5
        ("tiny velocity scaling", {"velocity_scaling": 1e-300}, ["velocity_scaling", "last"]),
        ("tiny acceleration scaling", {"acceleration_scaling": 1e-300},
         ["acceleration_scaling", "last"]),
        ("tiny validation", {"validation_distance": 1e-300}, ["validation_distance", "1e-06"]),
        ("tiny connection distance", {"max_connection_distance": 1e-300},
         ["max_connection_distance", "too small"]),
        ("1e5 goal values", {"names": [], "goal": [0.0] * 100_000},
         ["goal_positions", "max_message_entries"]),
    ],
)
def test_invalid_goal(
    planner: SimpleNamespace, label: str, kwargs: dict[str, Any], words: list[str]
) -> None:
    kw = dict(kwargs)
    goal = _goal(kw.pop("goal", READY), start=kw.pop("start", Q_RIGHT), names=kw.pop("names", None),
                 **kw)
    status, result, _ = _run(planner, goal, timeout=10.0)
    _assert_failed(status, result, R.INVALID_GOAL, *words)


def test_invalid_goal_region(planner: SimpleNamespace) -> None:
    g = _goal(start=READY, use_goal_region=True, end_effector="no_such_link")
    status, result, _ = _run(planner, g)
    _assert_failed(status, result, R.INVALID_GOAL, "no_such_link")
    bounds = np.zeros((6, 2))
    bounds[0] = [0.1, -0.1]  # min > max
    g = _goal(start=READY, use_goal_region=True, goal_region_bounds=bounds.ravel().tolist())
    status, result, _ = _run(planner, g)
    _assert_failed(status, result, R.INVALID_GOAL, "min <= max")
    g = _goal(start=READY, use_goal_region=True)
    g.reference_pose.orientation.w = 0.0  # zero quaternion
    status, result, _ = _run(planner, g)
    _assert_failed(status, result, R.INVALID_GOAL, "quaternion")


def test_unreachable_goal_region(planner: SimpleNamespace) -> None:
    g = _goal(start=READY, use_goal_region=True, end_effector="tool")
    g.reference_pose.position.x = 3.0  # the arm reaches about 1 m
    g.reference_pose.position.z = 0.5
    status, result, _ = _run(planner, g)
    _assert_failed(status, result, R.GOAL_UNREACHABLE, "tool")


def test_reachable_goal_region(
    planner: SimpleNamespace, robot: RobotModel, core: CollisionChecker, world: WorldModel
) -> None:
    target = robot.link_transforms(Q_LEFT)["tool"]
    g = _goal(start=Q_RIGHT, use_goal_region=True)  # end_effector "" = parameter ("tool")
    g.reference_pose.position.x, g.reference_pose.position.y, g.reference_pose.position.z = (
        float(v) for v in target[:3, 3])
    from robot_collision.geometry.transforms import matrix_to_quat_xyzw

    x, y, z, w = matrix_to_quat_xyzw(target[:3, :3]).tolist()
    o = g.reference_pose.orientation
    o.x, o.y, o.z, o.w = x, y, z, w
    bounds = np.zeros((6, 2))
    bounds[:3] = [[-0.02, 0.02]] * 3
    bounds[3] = [-math.pi, math.pi]  # any rotation about the reference z axis
    g.goal_region_bounds = bounds.ravel().tolist()
    status, result, _ = _run(planner, g)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    Q = _positions(result.trajectory)
    _assert_collision_free(core, world, Q)
    end = robot.link_transforms(Q[-1])["tool"]
    assert np.linalg.norm(end[:3, 3] - target[:3, 3]) <= 0.02 * math.sqrt(3) + 1e-4


def test_world_object_from_the_checker_topic(
    ros: Any, planner: SimpleNamespace, robot: RobotModel
) -> None:
    """An object published on collision_checker/world_objects reaches the planner."""
    pub = planner.world_pub
    assert ros.wait_for_subscribers(pub)
    msg = WorldObjectMsg()
    msg.id = "planner_test_ball"
    msg.operation = WorldObjectMsg.ADD
    msg.primitive.type = SolidPrimitive.SPHERE
    msg.primitive.dimensions = [0.05]
    tool = robot.link_transforms(Q_LEFT)["tool"][:3, 3]
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in tool)
    msg.pose.orientation.w = 1.0
    pub.publish(msg)
    assert ros.wait_until(lambda: "planner_test_ball" in planner.node.world)
    try:
        status, result, _ = _run(planner, _goal(Q_LEFT, start=Q_RIGHT))
        _assert_failed(status, result, R.GOAL_IN_COLLISION, "planner_test_ball")
    finally:
        msg.operation = WorldObjectMsg.REMOVE
        pub.publish(msg)
        assert ros.wait_until(lambda: "planner_test_ball" not in planner.node.world)


def test_cancel_mid_plan(planner: SimpleNamespace) -> None:
    run = GoalRun(planner.client, _hard_goal())
    assert run.accepted()
    assert run.first_feedback.wait(10.0), "planning did not start"
    time.sleep(0.2)
    t_cancel = time.monotonic()
    run.cancel()
    status, result = run.result(timeout=10.0)
    latency = run.result_time - t_cancel
    print(f"\ncancel -> result latency (client side): {latency * 1e3:.1f} ms; "
          f"cancel -> planner stopped (server side): "
          f"{planner.node.last_cancel_latency * 1e3:.1f} ms")
    assert status == GoalStatus.STATUS_CANCELED, result.message
    assert result.error_code == R.CANCELLED
    assert "cancel" in result.message
    assert len(result.trajectory.points) == 0
    assert latency < 0.1, f"cancel took {latency * 1e3:.1f} ms"


def test_new_goal_preempts_running_goal(planner: SimpleNamespace) -> None:
    first = GoalRun(planner.client, _hard_goal())
    assert first.accepted()
    assert first.first_feedback.wait(10.0), "planning did not start"
    t_second = time.monotonic()
    second = GoalRun(planner.client, _goal(Q_LEFT, start=Q_RIGHT))
    assert second.accepted()
    status, result = first.result(timeout=10.0)
    print(f"\nsecond goal sent -> first goal preempted: {(first.result_time - t_second) * 1e3:.1f}"
          " ms")
    assert status == GoalStatus.STATUS_ABORTED
    assert result.error_code == R.PREEMPTED, result.message
    assert "preempted" in result.message
    status2, result2 = second.result(timeout=30.0)
    assert status2 == GoalStatus.STATUS_SUCCEEDED, result2.message
    assert first.result_time <= second.result_time


def test_stop_during_time_parameterization(
    planner: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shortening and timing cannot be interrupted; the stopped goal gets its result at once
    anyway, and a preempting goal runs when the worker is free."""
    import robot_collision.ros.planner_node as planner_node

    real = planner_node.time_parameterize_path
    entered = threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(planner_node, "time_parameterize_path", slow)
    run = GoalRun(planner.client, _goal(Q_LEFT, start=Q_RIGHT))
    assert run.accepted() and entered.wait(10.0)
    t_cancel = time.monotonic()
    run.cancel()
    status, result = run.result(timeout=10.0)
    latency = run.result_time - t_cancel
    print(f"\ncancel during timing -> result: {latency * 1e3:.1f} ms")
    assert status == GoalStatus.STATUS_CANCELED and result.error_code == R.CANCELLED
    assert latency < 0.1

    entered.clear()
    first = GoalRun(planner.client, _goal(Q_LEFT, start=Q_RIGHT))
    assert first.accepted() and entered.wait(10.0)
    t_second = time.monotonic()
    monkeypatch.setattr(planner_node, "time_parameterize_path", real)
    second = GoalRun(planner.client, _goal(Q_RIGHT, start=Q_LEFT))
    assert second.accepted()
    status, result = first.result(timeout=10.0)
    assert status == GoalStatus.STATUS_ABORTED and result.error_code == R.PREEMPTED
    assert first.result_time - t_second < 0.1
    status, result = second.result(timeout=30.0)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    np.testing.assert_allclose(_positions(result.trajectory)[-1], Q_RIGHT, atol=1e-6)


def test_malformed_goal_does_not_preempt(planner: SimpleNamespace) -> None:
    first = GoalRun(planner.client, _hard_goal())
    assert first.accepted()
    assert first.first_feedback.wait(10.0), "planning did not start"
    status, result, _ = _run(planner, _goal([math.nan] * 7, start=READY), timeout=10.0)
    _assert_failed(status, result, R.INVALID_GOAL)
    assert math.isnan(first.result_time), "the running goal must keep planning"
    first.cancel()
    status, result = first.result(timeout=10.0)
    assert status == GoalStatus.STATUS_CANCELED and result.error_code == R.CANCELLED


def test_no_path_within_time_limit(planner: SimpleNamespace) -> None:
    goal = _hard_goal()
    goal.time_limit = 0.3
    status, result, _ = _run(planner, goal)
    _assert_failed(status, result, R.NO_PATH, "time limit")


def test_no_joint_state_is_invalid_goal(ros: Any) -> None:
    s = _start(ros, joint_state_timeout=0.2)
    try:
        t0 = time.monotonic()
        status, result, _ = _run(s, _goal(READY))
        assert time.monotonic() - t0 < 5.0
        _assert_failed(status, result, R.INVALID_GOAL, "joint state", "use_start")
        # the node still plans goals that bring their own start
        status, result, _ = _run(s, _goal(READY, start=np.zeros(7)))
        assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    finally:
        _stop(ros, s)


def test_destroy_node_mid_plan_is_prompt(ros: Any) -> None:
    """Destroying the node stops a running plan and the planning thread at once."""
    s = _start(ros)
    try:
        run = GoalRun(s.client, _hard_goal())
        assert run.accepted() and run.first_feedback.wait(10.0)
        t0 = time.monotonic()
        ros.remove_node(s.node)
        assert time.monotonic() - t0 < 2.0
        assert not s.node._worker.is_alive()
    finally:
        _stop(ros, s)
