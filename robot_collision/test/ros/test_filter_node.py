"""The velocity_filter node with the mock arm, in-process over real topics and services.

The main test drives the default arm at constant velocity into a wall through
``velocity_filter/command`` → filter → ``forward_velocity_controller/commands`` → mock arm →
``joint_states`` → filter, and checks every published joint state with the core checker (an
exhaustive evaluation independent of the filter): the arm never comes closer to the wall than the
safety distance − 1 mm, stops there, moves again when the command points away, and gets zeros
once its joint states stop. The other tests cover bad commands, the deadman, the protection
service, configuration errors, joint subsets and parameter changes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import numpy as np
import pytest

from robot_collision import (
    Box,
    CollisionChecker,
    RobotModel,
    Sphere,
    WorldObject,
    default_robot_paths,
)
from robot_collision.control.velocity_filter import FilterOptions

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from shape_msgs.msg import SolidPrimitive  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402

from robot_collision.ros.filter_node import VelocityFilterNode  # noqa: E402
from robot_collision.ros.mock_arm import MockArmNode  # noqa: E402
from robot_collision_interfaces.msg import FilterStatus  # noqa: E402
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg  # noqa: E402
from robot_collision_interfaces.srv import SetProtection  # noqa: E402

pytestmark = pytest.mark.ros

URDF, SRDF = default_robot_paths()
OPTS = FilterOptions()
TOL = 1e-3  # the guarantee: distance >= safety distance - 1 mm
# A wall in front of the arm (its face at x = 0.35 m); joint2 > 0 tilts the arm into it.
WALL_POSE = (0.40, 0.0, 0.6)
WALL_SIZE = (0.1, 2.0, 2.0)
Q_START = [0.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0]  # 12 cm from the wall
INTO_WALL = [0.0, 1.2, 0.0, 0.0, 0.0, 0.0, 0.0]  # rad/s
# Node rates of the tests: every node of a test module shares one Python executor (and the GIL)
# with the test, so the tests run slower than the 250 Hz defaults to leave CPU headroom.
RATE = 100.0
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


@pytest.fixture(scope="module")
def wall() -> list[WorldObject]:
    T = np.eye(4)
    T[:3, 3] = WALL_POSE
    return [WorldObject(Box(*WALL_SIZE), T, "wall")]


@pytest.fixture(scope="module")
def wall_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("world") / "wall.yaml"
    path.write_text(
        "objects:\n"
        f"  - {{id: wall, type: box, dimensions: {list(WALL_SIZE)}, "
        f"position: {list(WALL_POSE)}}}\n",
        encoding="utf-8")
    return path


class Streamer:
    """Publishes ``value`` on ``velocity_filter/command`` at 50 Hz from a helper-node timer
    (nothing while ``value`` is None)."""

    def __init__(self, helper: Any) -> None:
        self.pub = helper.create_publisher(Float64MultiArray, "velocity_filter/command", 10)
        self.value: Optional[list[float]] = None
        self.timer = helper.create_timer(0.02, self._tick)

    def _tick(self) -> None:
        if self.value is not None:
            self.send(self.value)

    def send(self, values: Sequence[float], label: str = "") -> None:
        msg = Float64MultiArray()
        if label:
            msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=1)]
        msg.data = [float(v) for v in values]
        self.pub.publish(msg)


def _start(ros: Any, arm: bool = True, arm_params: Optional[dict[str, Any]] = None,
           **params: Any) -> SimpleNamespace:
    """Filter node (+ mock arm) in a fresh namespace, with a command streamer and collectors."""
    ns = ros.namespace()
    robot_params = {"urdf_path": str(URDF), "srdf_path": str(SRDF)}
    mock = None
    if arm:
        values = {**robot_params, "rate": RATE, "initial_positions": Q_START,
                  **(arm_params or {})}
        mock = ros.add_node(MockArmNode(
            context=ros.context, namespace=ns,
            parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    values = {**robot_params, "rate": RATE, **params}
    node = ros.add_node(VelocityFilterNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    helper = ros.helper(ns)
    _created.extend(n for n in (mock, node, helper) if n is not None)
    rig = SimpleNamespace(
        ns=ns, node=node, arm=mock, helper=helper, cmd=Streamer(helper),
        out=ros.collect(helper, Float64MultiArray, "forward_velocity_controller/commands"),
        status=ros.collect(helper, FilterStatus, "velocity_filter/status"),
        states=ros.collect(helper, JointState, "joint_states"),
    )
    assert ros.wait_for_subscribers(rig.cmd.pub), "filter did not subscribe to its command topic"
    assert rig.status.wait(1, timeout=10.0), "no filter status"
    assert rig.out.wait(1, timeout=10.0), "no filter output"
    if arm:
        assert rig.states.wait(1, timeout=10.0), "no joint states from the mock arm"
    return rig


def _world_distances(checker: CollisionChecker, q: np.ndarray,
                     world: list[WorldObject]) -> tuple[float, float]:
    """(smallest robot-world, smallest self) padded signed distance, exhaustive evaluation."""
    res = checker.check(q, world, exhaustive=True)
    m = len(res.row_names)
    return float(res.signed[:, m:].min(initial=np.inf)), float(res.signed[:, :m].min())


def _status_after(rig: SimpleNamespace, t: float, pred: Any, timeout: float = 3.0) -> Any:
    """First status stamped by the node at/after monotonic time ``t`` that satisfies ``pred``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msg, when in zip(list(rig.status.messages), list(rig.status.stamps)):
            if when >= t and pred(msg):
                return msg
        time.sleep(0.01)
    return None


def _settled(rig: SimpleNamespace, window: int = 25, speed: float = 0.02) -> bool:
    """The last ``window`` joint states (0.25 s) all move slower than ``speed`` and the
    filter is ok (a short zero-output fault, e.g. a starved test process, is not a stop)."""
    msgs = list(rig.states.messages)[-window:]
    return (len(msgs) == window and rig.status.last is not None and rig.status.last.ok
            and all(np.abs(m.velocity).max() < speed for m in msgs))


def _outputs_since(rig: SimpleNamespace, t: float) -> list[np.ndarray]:
    return [np.asarray(m.data) for m, w in zip(list(rig.out.messages), list(rig.out.stamps))
            if w >= t]


# --------------------------------------------------------------------------- main scenario
def test_stops_at_safety_distance_moves_away_and_zeros_without_state(
        ros: Any, robot: RobotModel, wall: list[WorldObject], wall_file: Path) -> None:
    # the arm stops 5 ticks after its last command: a starved test process (shared CPU) must
    # not leave it moving on an old command while the filter waits for the CPU
    rig = _start(ros, world_file=str(wall_file), arm_params={"command_timeout": 0.05})
    judge = CollisionChecker(robot)
    q0 = np.asarray(rig.states.last.position)
    np.testing.assert_allclose(q0, Q_START, atol=1e-12)
    d_env0, d_self0 = _world_distances(judge, q0, wall)
    assert d_env0 > OPTS.influence_distance_env > 0.1

    # 1) constant velocity into the wall until the arm stops
    rig.states.clear()
    rig.cmd.value = INTO_WALL
    # (~2 s of motion; a process starved of CPU by other jobs runs the arm slower)
    stopped = ros.wait_until(lambda: _settled(rig), 30.0)
    assert stopped, f"the arm did not stop: velocity {list(rig.states.last.velocity)}"
    q_stop = np.asarray(rig.states.last.position)
    # at rest against the wall (a state that arrived late can let a small step through
    # while the arm creeps onto the safety distance: the status settles within a moment)
    st_stop = _status_after(rig, time.monotonic(), lambda m: m.ok and m.scaling < 0.05)
    assert st_stop is not None and st_stop.fault == "", rig.status.last
    assert any("wall" in c for c in st_stop.active_constraints)

    # 2) command pointing away: passes unchanged (bit for bit) and the arm moves off the wall
    away = [-v for v in INTO_WALL]
    rig.cmd.value = away
    assert ros.wait_until(lambda: rig.states.last.velocity[1] < -1.0, 2.0), "did not move away"
    assert rig.out.wait_for(lambda m: list(m.data) == away, 2.0) is not None
    assert ros.wait_until(lambda: rig.states.last.position[1] < q_stop[1] - 0.1, 10.0)
    q_away = np.asarray(rig.states.last.position)

    # 3) the joint-state source dies: zeros (once per tick) while the command keeps coming
    res = ros.call(rig.helper, SetBool, f"{rig.ns}/mock_arm/set_publishing",
                   SetBool.Request(data=False))
    assert res.success
    t_kill = time.monotonic()
    st = _status_after(rig, t_kill, lambda m: m.fault.startswith("stale state"))
    assert st is not None and not st.ok and st.scaling == 0.0
    # states still in flight when the source stopped (a starved process receives them late)
    # are late states, used as such: judge the outputs once none can be in flight any more
    time.sleep(0.3)
    t_stale = time.monotonic()
    zeros0, ticks0 = rig.node.stats["zeros"], rig.node.stats["ticks"]
    time.sleep(0.5)
    zeros = _outputs_since(rig, t_stale)
    # one zero output per tick (a tick only skips when an output went out within half a tick;
    # late ticks of a starved process can come closer together than that, hence the 1/2)
    ticks = rig.node.stats["ticks"] - ticks0
    assert ticks >= 3 and rig.node.stats["zeros"] - zeros0 >= 0.5 * ticks
    assert len(zeros) >= 3
    assert all(not z.any() and z.shape == (7,) for z in zeros), "non-zero output on stale state"
    assert rig.arm is not None
    q_frozen = rig.arm.positions

    # 4) fresh state again: commands are forwarded again
    ros.call(rig.helper, SetBool, f"{rig.ns}/mock_arm/set_publishing", SetBool.Request(data=True))
    assert _status_after(rig, time.monotonic(), lambda m: m.ok) is not None
    assert ros.wait_until(lambda: rig.states.last.velocity[1] < -1.0, 2.0)
    rig.cmd.value = None
    assert np.abs(q_frozen - np.asarray(rig.states.last.position)).max() > 0.01

    # 5) every joint state of the run against the core checker (done last: CPU-bound work in
    # the test thread starves the nodes' executor threads of the GIL)
    msgs = list(rig.states.messages)
    assert max(abs(v) for m in msgs for v in m.velocity) > 0.5  # it was moving
    env = np.empty(len(msgs))
    for k, msg in enumerate(msgs):
        env[k], d_self = _world_distances(judge, np.asarray(msg.position), wall)
        assert d_self >= min(d_self0, OPTS.safety_distance_self) - TOL
    assert env.min() >= OPTS.safety_distance_env - TOL, f"came within {env.min():.4f} m"
    d_stop, _ = _world_distances(judge, q_stop, wall)
    # it went all the way: it stopped at the safety distance, not before
    assert d_stop < OPTS.safety_distance_env + 0.005
    assert st_stop.min_distance <= d_stop + 2e-3
    d_away, _ = _world_distances(judge, q_away, wall)
    assert d_away > d_stop + 0.02


# --------------------------------------------------------------------------- bad input
def test_bad_commands_give_zeros_and_no_crash(ros: Any) -> None:
    rig = _start(ros, arm_params={"initial_positions": [0.0] * 7})
    good = [0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    rig.cmd.send(good, label="7")
    assert rig.out.wait_for(lambda m: list(m.data) == good, 3.0) is not None
    # a valid command's layout is forwarded with it
    fwd = rig.out.wait_for(lambda m: list(m.data) == good and m.layout.dim, 3.0)
    assert fwd is not None and fwd.layout.dim[0].label == "7"
    cases = {
        "wrong length": [0.1] * 6,
        "wrong length ": [0.1] * 8,
        "wrong length  ": [],
        "non-finite command": [math.nan] + [0.1] * 6,
        "non-finite command ": [0.1] * 6 + [-math.inf],
    }
    for reason, bad in cases.items():
        rig.cmd.send(good)
        assert rig.out.wait_for(lambda m: any(m.data), 3.0) is not None
        t = time.monotonic()
        rig.cmd.send(bad)
        prefix = reason.strip()
        st = _status_after(rig, t, lambda m, r=prefix: m.fault.startswith(r))
        assert st is not None, f"no '{prefix}' fault for {bad}"
        assert not st.ok
        t_fault = time.monotonic()
        # zeros every tick until a valid command arrives
        assert ros.wait_until(lambda tf=t_fault: len(_outputs_since(rig, tf)) >= 3, 3.0)
        outs = _outputs_since(rig, t_fault)
        assert outs and all(o.shape == (7,) and not o.any() for o in outs), f"motion on {bad}"
        assert not any(rig.states.last.velocity)
    assert rig.node.stats["errors"] == 0
    assert rig.node.stats["rejected_commands"] >= len(cases)
    rig.cmd.send(good)
    assert rig.out.wait_for(lambda m: list(m.data) == good, 3.0) is not None


def test_deadman_command_timeout(ros: Any) -> None:
    rig = _start(ros, command_timeout=0.1, arm_params={"initial_positions": [0.0] * 7})
    rig.cmd.value = [0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0]
    assert ros.wait_until(lambda: rig.states.last.velocity[2] == pytest.approx(0.2), 3.0)
    rig.cmd.value = None
    t = time.monotonic()
    st = _status_after(rig, t, lambda m: m.fault.startswith("command timeout"))
    assert st is not None and time.monotonic() - t < 1.0
    assert ros.wait_until(lambda: not any(rig.states.last.velocity), 1.0)


def test_unknown_joints_publish_zeros_and_report(ros: Any) -> None:
    rig = _start(ros, arm=False, joints=["joint1", "elbow_of_nowhere"])
    st = _status_after(rig, 0.0, lambda m: m.fault.startswith("configuration error"))
    assert st is not None and "elbow_of_nowhere" in st.fault
    rig.cmd.send([0.5, 0.5])
    time.sleep(0.1)
    outs = list(rig.out.messages)
    assert outs and all(len(m.data) == 2 and not any(m.data) for m in outs)
    res = ros.call(rig.helper, SetProtection, f"{rig.ns}/velocity_filter/set_protection",
                   SetProtection.Request(group="wrist", enabled=False))
    assert not res.success and "not ready" in res.message


def test_bad_joint_states_are_rejected(ros: Any, robot: RobotModel) -> None:
    rig = _start(ros, arm=False)
    pub = rig.helper.create_publisher(JointState, "joint_states", 10)
    assert ros.wait_for_subscribers(pub)
    names = list(robot.joint_names)
    # a state naming only some joints is not refused (joints are merged from every publisher)
    # but the filter waits for the others
    pub.publish(JointState(name=names[:6], position=[0.0] * 6))
    rig.cmd.send([0.1] * 7)
    st = _status_after(rig, time.monotonic(), lambda m: "(1 of 7 needed)" in m.fault)
    assert st is not None and st.fault.startswith("no joint state yet for joints ['joint7']")
    bad = [
        (names, [0.0] * 6),  # lengths differ
        (names, [0.0] * 6 + [math.nan]),  # non-finite
        ([*names[:6], "joint1"], [0.0] * 7),  # a name twice
    ]
    for k, (joint_names, positions) in enumerate(bad):
        pub.publish(JointState(name=joint_names, position=positions))  # one at a time: the
        assert ros.wait_until(  # node keeps only the newest joint state (depth 1)
            lambda n=k + 1: rig.node.stats["rejected_joint_states"] >= n, 5.0), joint_names
    rig.cmd.send([0.1] * 7)
    st = _status_after(rig, time.monotonic(), lambda m: True)
    # the newest (refused) state is reported: a name twice
    assert st is not None and st.fault.startswith("rejected joint state"), st.fault
    assert "joint1" in st.fault and "twice" in st.fault
    assert all(not any(m.data) for m in rig.out.messages)
    assert rig.node.stats["errors"] == 0
    # a good one (extra joints are ignored) and the command goes through
    pub.publish(JointState(name=[*names, "gripper"], position=[0.0] * 8))
    rig.cmd.send([0.1] * 7)
    assert rig.out.wait_for(lambda m: list(m.data) == [0.1] * 7, 5.0) is not None


class StateStreamer:
    """Publishes ``position`` (or nothing while it is None) on ``joint_states`` at 100 Hz from
    a helper-node timer, standing in for the robot's joint-state broadcaster."""

    def __init__(self, helper: Any, names: Sequence[str], position: Sequence[float]) -> None:
        self.pub = helper.create_publisher(JointState, "joint_states", 10)
        self.names = list(names)
        self.position: Optional[list[float]] = list(position)
        self.last_sent = -math.inf  # time.monotonic() after the newest publish()
        self.timer = helper.create_timer(0.01, self._tick)

    def _tick(self) -> None:
        if self.position is not None:
            self.send(self.position)

    def send(self, position: Sequence[float]) -> None:
        self.pub.publish(JointState(name=self.names, position=[float(v) for v in position]))
        self.last_sent = time.monotonic()


def _moving(ros: Any, robot: RobotModel, **params: Any) -> tuple[SimpleNamespace, StateStreamer]:
    """Filter node without the mock arm, fed joint states at home and a command of 0.2 rad/s
    on joint1 (far from everything: passed unchanged) until its outputs move."""
    rig = _start(ros, arm=False, **params)
    states = StateStreamer(rig.helper, robot.joint_names, [0.0] * 7)
    assert ros.wait_for_subscribers(states.pub)
    rig.cmd.value = [0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert rig.out.wait_for(lambda m: any(m.data), 5.0) is not None, "no motion"
    return rig, states


def _first_zero_after(rig: SimpleNamespace, t: float, timeout: float) -> Optional[float]:
    """Arrival time (monotonic) of the first all-zero output that arrived after ``t``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msg, when in zip(list(rig.out.messages), list(rig.out.stamps)):
            if when > t and not any(msg.data):
                return when
        time.sleep(0.002)
    return None


def test_watchdog_sends_zeros_without_the_executor(ros: Any, robot: RobotModel) -> None:
    """The node's executor stops serving it (as when a callback runs for seconds or the
    process is starved): no tick, no callback. Its watchdog thread still sends zeros when the
    output in force expires, state_timeout after the last joint state the node received."""
    rig, states = _moving(ros, robot, state_timeout=0.1, command_timeout=0.0)
    ros.executor.remove_node(rig.node)  # the node is not spun any more
    t_stall = time.monotonic()
    time.sleep(0.03)
    states.position = None
    rig.cmd.value = None
    t_zero = _first_zero_after(rig, t_stall, 3.0)
    assert t_zero is not None, "no zeros from a node whose executor stalled"
    # the last state the node took was received before the stall: zeros by 0.1 s after it
    # (+ the test process's own scheduling)
    assert t_zero - t_stall <= 0.1 + 0.1, t_zero - t_stall
    assert rig.node.stats["watchdog"] >= 1
    ok, fault = rig.node.last_status
    assert not ok and fault.startswith("stale state"), fault
    time.sleep(0.2)
    late = [m for m, w in zip(list(rig.out.messages), list(rig.out.stamps)) if w > t_zero]
    assert all(not any(m.data) for m in late), "motion after the watchdog's zeros"


def test_refused_joint_state_stops_at_once(ros: Any, robot: RobotModel) -> None:
    """A refused joint state (NaN, lengths that differ) is not driven on until the state
    timeout: zeros go out at once and until a valid state arrives. (A state naming only some
    joints is not refused: see test_split_publishers.)"""
    rig, states = _moving(ros, robot, state_timeout=0.5, command_timeout=0.0)
    names = list(robot.joint_names)
    bad_states = [
        (names, [0.0] * 6 + [math.nan]),
        (names, [0.0] * 8),
    ]
    for bad_names, positions in bad_states:
        states.position = None
        time.sleep(0.03)
        assert rig.out.wait_for(lambda m: any(m.data), 2.0) is not None
        t_bad = time.monotonic()
        states.pub.publish(JointState(name=bad_names, position=positions))
        t_zero = _first_zero_after(rig, t_bad, 2.0)
        assert t_zero is not None
        # far sooner than the 0.5 s state timeout (which the old node waited for)
        assert t_zero - t_bad < 0.1, (bad_names, t_zero - t_bad)
        st = _status_after(rig, t_bad, lambda m: m.fault.startswith("rejected joint state"))
        assert st is not None and not st.ok
        time.sleep(0.1)
        late = [m for m, w in zip(list(rig.out.messages), list(rig.out.stamps)) if w > t_zero]
        assert late and all(not any(m.data) for m in late), "motion on a refused state"
        states.position = [0.0] * 7  # valid again: moving again
        t_ok = time.monotonic()
        assert ros.wait_until(lambda t=t_ok: any(
            any(m.data) for m, w in zip(list(rig.out.messages), list(rig.out.stamps))
            if w > t), 2.0)
    # a state far outside the position limits (a wrong mapping, not the robot): zeros
    far = [0.0] * 7
    far[1] = float(robot.upper[1]) + 1.0
    states.position = far
    st = _status_after(rig, time.monotonic(), lambda m: m.fault.startswith("state out of limits"))
    assert st is not None and "joint2" in st.fault
    states.position = None
    assert rig.node.stats["errors"] == 0


def test_acceleration_limits_ramp_the_output(ros: Any, robot: RobotModel) -> None:
    """With acceleration_limits the output follows a command step at the limit: each output
    differs from the previous one by at most a / rate (outputs come once per tick here)."""
    a = 2.0
    rig = _start(ros, arm=False, acceleration_limits=[a], filter_on_command=False)
    states = StateStreamer(rig.helper, robot.joint_names, [0.0] * 7)
    assert ros.wait_for_subscribers(states.pub)
    rig.out.clear()
    rig.cmd.value = [0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert rig.out.wait_for(lambda m: m.data[0] == 0.6, 10.0) is not None, "never got there"
    values = [m.data[0] for m in rig.out.messages]
    end = values.index(0.6)
    # the last ramp from zero: a state stream starved by other jobs on the machine makes the
    # filter send zeros (stale state) and ramp up again, as it must
    start = max(k for k in range(end) if values[k] == 0.0)
    ramp = np.asarray(values[start:end + 1])
    steps = np.diff(ramp)
    assert np.all(steps >= -1e-12) and np.all(steps <= a / RATE + 1e-9), steps.max()
    assert len(ramp) >= 0.6 / (a / RATE)  # it took the ticks the limit needs (0.3 s)
    # a wrong number of limits is refused at run time, the old ones stay
    [res] = rig.node.set_parameters([Parameter("acceleration_limits", value=[1.0, 2.0])])
    assert not res.successful and "acceleration_limits" in res.reason
    assert rig.node.settings.acceleration_limits == (a,)
    rig.cmd.value = None
    states.position = None


def test_joint_subset_holds_the_other_joints(ros: Any) -> None:
    rig = _start(ros, joints=["joint4", "joint2"],
                 arm_params={"initial_positions": [0.0] * 7})
    rig.cmd.send([0.3, -0.2])
    out = rig.out.wait_for(lambda m: any(m.data), 3.0)
    assert out is not None and list(out.data) == [0.3, -0.2]
    rig.cmd.send([0.3, -0.2, 0.0])
    st = _status_after(rig, time.monotonic() - 0.05, lambda m: m.fault.startswith("wrong length"))
    assert st is not None and "expected 2" in st.fault


# --------------------------------------------------------------------------- protection service
def test_set_protection_toggles_groups(ros: Any, wall: list[WorldObject], wall_file: Path) -> None:
    rig = _start(ros, world_file=str(wall_file))
    srv = f"{rig.ns}/velocity_filter/set_protection"

    def call(group: str, enabled: bool) -> Any:
        return ros.call(rig.helper, SetProtection, srv,
                        SetProtection.Request(group=group, enabled=enabled))

    res = call("nope", False)
    assert not res.success and "wrist" in res.message and "arm" in res.message

    res = call("wrist", False)
    assert res.success, res.message
    assert rig.node.protection["wrist"] is False
    st = _status_after(rig, time.monotonic(), lambda m: list(m.disabled_groups) == ["wrist"])
    assert st is not None

    # drive to the wall, then switch protection off for the whole arm: the command goes through
    rig.cmd.value = INTO_WALL
    assert ros.wait_until(lambda: _settled(rig, speed=0.05), 30.0)
    out = np.asarray(rig.out.last.data)
    assert np.abs(out).max() < 0.1
    res = call("arm", False)
    assert res.success and "protected joints: none" in res.message
    t = time.monotonic()
    assert rig.out.wait_for(lambda m: list(m.data) == INTO_WALL, 2.0) is not None
    rig.cmd.value = None  # stop before the arm reaches the wall
    assert time.monotonic() - t < 2.0
    for group in ("arm", "wrist"):
        assert call(group, True).success
    st = _status_after(rig, time.monotonic(), lambda m: list(m.disabled_groups) == [])
    assert st is not None


def test_protection_groups_parameter(ros: Any) -> None:
    rig = _start(ros, arm=False, protection_groups=["tip: joint6, joint7", "wrist: joint5"])
    assert rig.node.protection == {"arm": True, "shoulder": True, "forearm": True,
                                   "wrist": True, "tip": True}
    res = ros.call(rig.helper, SetProtection, f"{rig.ns}/velocity_filter/set_protection",
                   SetProtection.Request(group="tip", enabled=False))
    assert res.success and "joint6" not in res.message.split("protected joints:")[1]


# --------------------------------------------------------------------------- parameters
def test_parameter_changes_are_validated(ros: Any) -> None:
    rig = _start(ros, arm=False)
    node = rig.node
    [res] = node.set_parameters([Parameter("gain", value=-1.0)])
    assert not res.successful and "gain" in res.reason
    [res] = node.set_parameters([Parameter("safety_distance_env", value=0.5)])
    assert not res.successful  # above the influence distance
    [res] = node.set_parameters([Parameter("rate", value=5.0)])
    assert not res.successful and "rate" in res.reason
    [res] = node.set_parameters([Parameter("joints", value=["joint1"])])
    assert not res.successful  # read-only
    results = node.set_parameters([Parameter("influence_distance_env", value=0.2),
                                   Parameter("safety_distance_env", value=0.05),
                                   Parameter("rate", value=40.0)])
    assert all(r.successful for r in results)
    assert node.settings.options.safety_distance_env == 0.05
    assert node.settings.rate == 40.0
    # a negative safety distance would allow penetration: refused with the reason
    [res] = node.set_parameters([Parameter("safety_distance_env", value=-0.1)])
    assert not res.successful and "safety_distance_env must be >= 0" in res.reason
    assert node.settings.options.safety_distance_env == 0.05
    time.sleep(0.1)
    rig.status.clear()
    time.sleep(1.0)
    assert 1 <= len(rig.status) <= 55  # the tick follows the new rate (fewer when starved)


# --------------------------------------------------------------------------- world, idle, modes
def test_world_objects_topic_and_idle_status(ros: Any, robot: RobotModel) -> None:
    rig = _start(ros, arm_params={"initial_positions": [0.0] * 7})
    judge = CollisionChecker(robot)
    # idle (no command): zeros, but the status still reports the distances (rows closer than
    # the larger influence distance; at home: a self pair)
    _, d_self = _world_distances(judge, np.zeros(7), [])
    st = _status_after(rig, 0.0, lambda m: m.fault.startswith("no command")
                       and math.isfinite(m.min_distance))
    assert st is not None and not st.ok
    assert st.min_distance == pytest.approx(d_self, abs=1e-9)
    tool = robot.link_transforms(np.zeros(7))["tool"][:3, 3]
    msg = WorldObjectMsg(id="ball", operation=WorldObjectMsg.ADD)
    msg.primitive.type = SolidPrimitive.SPHERE
    msg.primitive.dimensions = [0.03]
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
        float(tool[0]) + 0.10, float(tool[1]), float(tool[2]))
    msg.pose.orientation.w = 1.0
    pub = rig.helper.create_publisher(WorldObjectMsg, "velocity_filter/world_objects", 10)
    assert ros.wait_for_subscribers(pub)
    pub.publish(msg)
    T = np.eye(4)
    T[:3, 3] = (msg.pose.position.x, msg.pose.position.y, msg.pose.position.z)
    d_ball, _ = _world_distances(judge, np.zeros(7), [WorldObject(Sphere(0.03), T, "ball")])
    assert d_ball < d_self
    st = _status_after(rig, 0.0, lambda m: m.min_distance < d_self - 1e-6)
    assert st is not None and st.min_distance == pytest.approx(d_ball, abs=1e-9)
    pub.publish(WorldObjectMsg(id="ball", operation=WorldObjectMsg.REMOVE))
    t = time.monotonic()
    assert _status_after(rig, t, lambda m: m.min_distance == pytest.approx(d_self)) is not None


def test_filter_on_ticks_only(ros: Any) -> None:
    rig = _start(ros, arm=True, filter_on_command=False,
                 arm_params={"initial_positions": [0.0] * 7})
    rig.cmd.value = [0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0]
    assert rig.out.wait_for(lambda m: list(m.data) == rig.cmd.value, 5.0) is not None
    assert len(rig.node.command_latencies) == 0  # nothing published from the command callback
    assert rig.node.stats["commands"] > 0
    rig.cmd.value = None
    [res] = rig.node.set_parameters([Parameter("filter_on_command", value=True)])
    assert res.successful
    rig.cmd.send([0.0, 0.0, 0.0, 0.0, 0.2, 0.0, 0.0])
    assert ros.wait_until(lambda: len(rig.node.command_latencies) > 0, 5.0)


# --------------------------------------------------------------------------- real state streams
def test_split_publishers_are_merged(ros: Any, robot: RobotModel) -> None:
    """The arm's joints on two publishers (a controller each) plus a gripper publisher of a
    joint the model lacks: merged joint by joint, the command passes on every tick."""
    rig = _start(ros, arm=False, state_timeout=0.5)
    arm_pub = rig.helper.create_publisher(JointState, "joint_states", 10)
    wrist_pub = rig.helper.create_publisher(JointState, "joint_states", 10)
    grip_pub = rig.helper.create_publisher(JointState, "joint_states", 10)
    names = list(robot.joint_names)

    def publish() -> None:
        stamp = rig.helper.get_clock().now().to_msg()
        arm_pub.publish(JointState(name=names[:5], position=[0.0] * 5))
        wrist_pub.publish(JointState(name=names[5:], position=[0.0] * 2))
        msg = JointState(name=["gripper_finger_joint"], position=[0.01])
        msg.header.stamp = stamp
        grip_pub.publish(msg)

    timer = rig.helper.create_timer(0.01, publish)
    try:
        rig.cmd.value = [0.1] + [0.0] * 6
        got = rig.out.wait_for(lambda m: list(m.data) == rig.cmd.value, 5.0)
        assert got is not None, (rig.status.last.fault, str(rig.node.stats))
        rig.status.clear()
        time.sleep(1.0)
        statuses = list(rig.status.messages)
        # (a test process starved of CPU can publish late: a stale state now and then)
        ok = sum(m.ok for m in statuses)
        assert statuses and ok >= 0.9 * len(statuses), {m.fault for m in statuses}
        assert not [m.fault for m in statuses
                    if m.fault.startswith(("rejected", "no joint state"))]
        assert rig.node.stats["rejected_joint_states"] == 0
        assert rig.node.stats["ignored_joint_states"] > 0  # the gripper's
    finally:
        rig.helper.destroy_timer(timer)


def test_future_stamps_and_stale_stamps_stop(ros: Any, robot: RobotModel) -> None:
    """A state stamped 10 s ahead is refused; one stamped older than max_state_age is stale,
    however regularly it arrives."""
    rig = _start(ros, arm=False, max_state_age=0.3)
    pub = rig.helper.create_publisher(JointState, "joint_states", 10)
    names = list(robot.joint_names)
    offset = [0.0]

    def publish() -> None:
        t = rig.helper.get_clock().now().nanoseconds * 1e-9 + offset[0]
        msg = JointState(name=names, position=[0.0] * 7)
        msg.header.stamp.sec = int(t)
        msg.header.stamp.nanosec = int((t - int(t)) * 1e9)
        pub.publish(msg)

    timer = rig.helper.create_timer(0.01, publish)
    try:
        rig.cmd.value = [0.1] + [0.0] * 6
        assert rig.out.wait_for(lambda m: any(m.data), 5.0) is not None
        offset[0] = 10.0
        st = _status_after(rig, time.monotonic(), lambda m: "ahead of this node's clock" in m.fault)
        assert st is not None and not st.ok
        offset[0] = -0.5  # arrives every 10 ms, measured 0.5 s ago
        st = _status_after(rig, time.monotonic(), lambda m: "max_state_age" in m.fault)
        assert st is not None and not st.ok and "stale state" in st.fault
        time.sleep(0.2)
        t = time.monotonic()
        time.sleep(0.3)
        assert all(not z.any() for z in _outputs_since(rig, t))
        offset[0] = -0.1  # 100 ms late: used (slower near obstacles), not refused
        assert rig.out.wait_for(lambda m: any(m.data), 5.0) is not None
    finally:
        rig.helper.destroy_timer(timer)


def test_foreign_description_keeps_the_output_layout(ros: Any) -> None:
    """The first robot fixes the output layout; a description lacking those joints is refused
    (zeros of the same size, a fault naming it)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from robot_collision import data_path

    ns = ros.namespace()
    node = ros.add_node(VelocityFilterNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter("rate", value=RATE)]))
    helper = ros.helper(ns)
    _created.extend([node, helper])
    out = ros.collect(helper, Float64MultiArray, "forward_velocity_controller/commands")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = helper.create_publisher(String, "robot_description", latched)
    pub.publish(String(data=Path(URDF).read_text(encoding="utf-8")))
    assert out.wait_for(lambda m: len(m.data) == 7, 30.0) is not None
    pub.publish(String(data=Path(data_path("urdf", "two_link.urdf")).read_text(
        encoding="utf-8")))
    assert ros.wait_until(lambda: "refused" in node.last_status[1], 10.0), node.last_status
    assert "lacks joints" in node.last_status[1]
    out.clear()
    time.sleep(0.3)
    assert out.messages and all(len(m.data) == 7 and not any(m.data) for m in out.messages)


def test_several_command_sources_are_reported_and_refused(ros: Any) -> None:
    rig = _start(ros, single_command_source=True)
    rig.cmd.value = [0.1] + [0.0] * 6
    assert rig.out.wait_for(lambda m: any(m.data), 5.0) is not None
    second = rig.helper.create_publisher(Float64MultiArray, "velocity_filter/command", 10)
    try:
        st = _status_after(rig, time.monotonic(), lambda m: "several command sources" in m.fault,
                           timeout=5.0)
        assert st is not None and not st.ok and "2 publishers" in st.fault
    finally:
        rig.helper.destroy_publisher(second)
    assert rig.out.wait_for(lambda m: any(m.data), 5.0) is not None  # one source again
