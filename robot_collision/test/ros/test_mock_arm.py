"""The mock_arm node, in-process over real topics and services.

Each test starts a MockArmNode in its own namespace, sends Float64MultiArray velocity commands
on ``forward_velocity_controller/commands`` and reads ``joint_states``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robot_collision import RobotModel, default_robot_paths

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402

from robot_collision.ros.mock_arm import MockArmNode  # noqa: E402

pytestmark = pytest.mark.ros

URDF, SRDF = default_robot_paths()
RATE = 200.0
_created: list[Any] = []


@pytest.fixture(autouse=True)
def _remove_nodes(ros: Any) -> Any:
    """Take the nodes a test created out of the shared executor, so that they stop loading it.

    They are not destroyed here (destroying a node while the executor spins can kill the spin
    thread with InvalidHandle); the harness destroys every node at the end of the module."""
    yield
    while _created:
        ros.executor.remove_node(_created.pop())


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    return RobotModel.from_urdf(URDF, srdf=SRDF)


def _start(ros: Any, **params: Any) -> SimpleNamespace:
    ns = ros.namespace()
    values: dict[str, Any] = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "rate": RATE}
    values.update(params)
    node = ros.add_node(MockArmNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    helper = ros.helper(ns)
    _created.extend((node, helper))
    pub = helper.create_publisher(Float64MultiArray, "forward_velocity_controller/commands", 10)
    states = ros.collect(helper, JointState, "joint_states")
    assert ros.wait_for_subscribers(pub), "mock_arm did not subscribe to the command topic"
    assert states.wait(3), "no joint states"
    return SimpleNamespace(ns=ns, node=node, helper=helper, pub=pub, states=states)


def _command(pub: Any, values: Sequence[float]) -> None:
    msg = Float64MultiArray()
    msg.data = [float(v) for v in values]
    pub.publish(msg)


def _stream(ros: Any, rig: SimpleNamespace, values: Sequence[float], seconds: float,
            period: float = 0.02) -> None:
    """Publish ``values`` every ``period`` s for ``seconds`` s."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _command(rig.pub, values)
        time.sleep(period)


def _stream_until(ros: Any, rig: SimpleNamespace, values: Sequence[float], pred: Any,
                  timeout: float = 10.0) -> bool:
    """Publish ``values`` every 20 ms until ``pred()`` holds (or ``timeout`` s pass)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _command(rig.pub, values)
        if pred():
            return True
        time.sleep(0.02)
    return bool(pred())


def _stamp_of(t: Any) -> float:
    return float(t.sec + 1e-9 * t.nanosec)


def _stamp(msg: JointState) -> float:
    return _stamp_of(msg.header.stamp)


def test_publishes_all_joints_at_rate_from_initial_pose(ros: Any, robot: RobotModel) -> None:
    q0 = [0.1, 0.2, -0.3, 0.4, 0.0, 0.5, -0.6]
    rig = _start(ros, initial_positions=q0)
    rig.states.clear()
    time.sleep(1.0)
    msgs = list(rig.states.messages)
    assert msgs[0].name == robot.joint_names
    np.testing.assert_allclose(msgs[-1].position, q0)
    np.testing.assert_allclose(msgs[-1].velocity, 0.0)
    span = _stamp(msgs[-1]) - _stamp(msgs[0])
    rate = (len(msgs) - 1) / span
    # never faster than the rate (a process starved of CPU by other jobs publishes less often)
    assert rate < 1.2 * RATE, f"published at {rate:.0f} Hz, expected {RATE:g}"
    assert all(_stamp(b) > _stamp(a) for a, b in pairwise(msgs))


def test_integrates_velocity_commands(ros: Any) -> None:
    rig = _start(ros)
    v = np.array([0.5, -0.25, 0.0, 0.0, 0.0, 0.0, 0.2])
    assert _stream_until(ros, rig, v, lambda: rig.states.last.velocity[0] != 0.0)
    rig.states.clear()
    _stream(ros, rig, v, 0.5)
    msgs = list(rig.states.messages)
    a, b = msgs[5], msgs[-5]
    dt = _stamp(b) - _stamp(a)
    moved = np.asarray(b.position) - np.asarray(a.position)
    # q advances by v / rate per step: along v, by v * dt at most (fixed steps: a starved
    # process takes fewer steps and moves less than the wall-clock time would give)
    scale = moved[0] / v[0]
    np.testing.assert_allclose(moved, scale * v, rtol=1e-9, atol=1e-12)
    steps = round(scale * RATE)
    assert scale == pytest.approx(steps / RATE, abs=1e-9)
    assert 0.1 * dt < scale < dt + 2.0 / RATE, f"integrated {scale:.3f} s over {dt:.3f} s"
    np.testing.assert_allclose(b.velocity, v, atol=1e-9)


def test_clamps_to_velocity_and_position_limits(ros: Any, robot: RobotModel) -> None:
    upper = robot.upper
    start = [0.0, float(upper[1]) - 0.05, 0.0, 0.0, 0.0, 0.0, 0.0]
    rig = _start(ros, initial_positions=start)
    assert _stream_until(ros, rig, [10.0, 0.0, 0, 0, 0, 0, -10.0],
                         lambda: rig.states.last.velocity[0] != 0.0)
    last = rig.states.last
    np.testing.assert_allclose(last.velocity[0], robot.velocity_limits[0], rtol=1e-9)
    np.testing.assert_allclose(last.velocity[6], -robot.velocity_limits[6], rtol=1e-9)
    assert _stream_until(ros, rig, [0.0, 1.0, 0, 0, 0, 0, 0],
                         lambda: rig.states.last.position[1] >= upper[1])
    _stream(ros, rig, [0.0, 1.0, 0, 0, 0, 0, 0], 0.1)
    q = np.asarray(rig.states.last.position)
    assert q[1] == upper[1], "joint2 must stop at its upper limit"
    assert rig.states.last.velocity[1] == 0.0
    qs = np.array([m.position for m in rig.states.messages])
    assert np.all(qs <= robot.upper + 1e-12) and np.all(qs >= robot.lower - 1e-12)


def test_rejects_bad_commands_and_holds_still(ros: Any) -> None:
    rig = _start(ros)
    assert _stream_until(ros, rig, [0.3] * 7, lambda: rig.states.last.velocity[0] == 0.3)
    for bad in ([0.3] * 6, [0.3] * 8, [math.nan] + [0.3] * 6, [math.inf] * 7):
        _command(rig.pub, bad)
        assert ros.wait_until(lambda: not any(rig.states.last.velocity), 2.0), f"moved on {bad}"
        held = np.asarray(rig.states.last.position)
        time.sleep(0.1)
        np.testing.assert_array_equal(rig.states.last.position, held)
    assert rig.node.stats["rejected_commands"] >= 4
    assert _stream_until(ros, rig, [0.0, 0.0, 0.0, -0.2, 0.0, 0.0, 0.0],  # still alive
                         lambda: rig.states.last.velocity[3] == -0.2)


def test_command_timeout_stops_the_arm(ros: Any) -> None:
    """The command watchdog: the arm stops command_timeout after the last command (+ a step,
    + this test process's scheduling) and stays stopped."""
    rig = _start(ros, command_timeout=0.1)
    assert _stream_until(ros, rig, [0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0],
                         lambda: rig.states.last.velocity[2] == 0.4)
    t_last = time.monotonic()  # _stream_until's last command went out just before
    assert ros.wait_until(lambda: rig.states.last.velocity[2] == 0.0, 5.0)
    t_stop = next(w for m, w in zip(list(rig.states.messages), list(rig.states.stamps))
                  if w > t_last and m.velocity[2] == 0.0)
    assert t_stop - t_last <= 0.1 + 2.0 / RATE + 0.1, t_stop - t_last
    assert rig.node.stats["timeouts"] >= 1
    held = rig.states.last.position[2]
    time.sleep(0.1)
    assert rig.states.last.position[2] == held


def test_command_aged_from_its_arrival(ros: Any) -> None:
    """A command that waited in the queue while the arm's executor was busy is as old as its
    arrival says: it does not move the arm once it is older than command_timeout."""
    rig = _start(ros, command_timeout=0.1)
    ros.executor.remove_node(rig.node)  # busy: neither callbacks nor steps run
    time.sleep(0.2)  # (the executor's wait in progress may still serve it once)
    commands = rig.node.stats["commands"]
    _command(rig.pub, [0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0])
    time.sleep(0.3)  # the command is now 0.3 s old
    t = time.monotonic()
    ros.executor.add_node(rig.node)
    time.sleep(0.3)
    after = [m for m, w in zip(list(rig.states.messages), list(rig.states.stamps)) if w > t]
    assert after, "no joint states after the executor came back"
    assert rig.node.stats["commands"] == commands + 1, "the queued command was not processed"
    assert all(not any(m.velocity) for m in after), "moved on an expired command"
    assert _stream_until(ros, rig, [0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0],  # fresh ones do
                         lambda: rig.states.last.velocity[2] == 0.4)


def test_set_publishing_stops_and_resumes_joint_states(ros: Any) -> None:
    rig = _start(ros)
    res = ros.call(rig.helper, SetBool, f"{rig.ns}/mock_arm/set_publishing",
                   SetBool.Request(data=False))
    assert res.success
    t_off = _stamp_of(rig.node.get_clock().now().to_msg())
    time.sleep(0.4)
    late = [m for m in rig.states.messages if _stamp(m) > t_off]
    assert not late, "joint states still published after set_publishing(false)"
    assert not rig.node.publishing
    res = ros.call(rig.helper, SetBool, f"{rig.ns}/mock_arm/set_publishing",
                   SetBool.Request(data=True))
    assert res.success and rig.states.wait(5, timeout=2.0)


def test_subset_of_joints_and_bad_initial_positions(ros: Any, robot: RobotModel) -> None:
    rig = _start(ros, joints=["joint4", "joint2"], initial_positions=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(rig.states.last.position, robot.home_configuration())
    assert _stream_until(ros, rig, [0.2, -0.1], lambda: rig.states.last.velocity[3] != 0.0)
    v = np.asarray(rig.states.last.velocity)
    np.testing.assert_allclose(v, [0, -0.1, 0, 0.2, 0, 0, 0], atol=1e-12)
    rig2 = _start(ros, joints=["joint4", "joint2"], initial_positions=[0.1, 5.0])
    q = np.asarray(rig2.states.last.position)
    assert q[3] == pytest.approx(0.1) and q[1] == pytest.approx(robot.upper[1])
