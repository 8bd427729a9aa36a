"""The velocity filter and the planner fed as a real cell feeds them (issue 18).

Every node runs as its own process with the shipped parameter file (``ros_procs``); this
process stands in for the cell's other parts over real topics:

- ``lag``: the mock arm publishes its joint states on ``mock/joint_states``; a relay here hands
  them on to ``joint_states`` 0 / 100 / 250 ms later, stamps untouched (a lagging driver or
  network). A command pushes the tool straight at a wall. Judged against the TRUE world: the
  smallest distance between the arm at the mock arm's own positions (the undelayed stream) and
  the wall primitive, against the margin ``safety_distance_env`` (0.03 m).
- ``split``: the arm's joints on two publishers (joints 1-5 and 6-7, a controller each), and a
  full stream plus a gripper-only publisher (a joint the model lacks) at 20 Hz, while a safe
  command streams: the share of non-zero outputs and the ok -> fault flips of the status, the
  fault reasons seen, and the relay's own longest pause (this process relays the states; the
  share of non-zero outputs while its last relayed state was younger than the filter's
  ``state_timeout`` is given apart).
- ``escapes``: near-contact configurations of the default arm (wall and floor) and the MBM
  Panda (cage), found by rejection sampling; the escape command (moves every pair inside its
  safety distance apart, found by SciPy's LP) must never come out as zero.
- ``stale_goal``: joint states stop for a few seconds, then a ``PlanMotion`` goal from the
  current state: the result's code and message.
- ``foreign_description``: the filter takes the robot from ``/robot_description``; after the
  7-joint arm, a 2-joint description is published: the output sizes seen after it.
- ``kill_pause``: a joint-state publisher process killed with SIGKILL; the longest gap of
  another stream that this process receives, over Fast DDS' default transports (shared memory
  + UDP) and over UDP only (``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``).

Before/after in one sitting: run it once with ``PYTHONPATH=<old checkout>/robot_collision`` (the
old package, nodes included) and once without.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np
from ros_procs import NodeProcesses, frozen_heap, ros_environment

WALL_POSE = (0.40, 0.0, 0.6)
WALL_SIZE = (0.1, 2.0, 2.0)
Q_START = [0.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0]
INTO_WALL = [0.0, 1.2, 0.0, 0.0, 0.0, 0.0, 0.0]
MARGIN = 0.03


def _wall_file(folder: Path) -> str:
    path = folder / "wall.yaml"
    path.write_text("objects:\n"
                    f"  - {{id: wall, type: box, dimensions: {list(WALL_SIZE)}, "
                    f"position: {list(WALL_POSE)}}}\n", encoding="utf-8")
    return str(path)


class _Cell:
    """This process's ROS side: a relay of the mock arm's joint states, command and output
    streams, the filter's status."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from robot_collision_interfaces.msg import FilterStatus

        if not rclpy.ok():
            rclpy.init()
        self.node = rclpy.create_node("realstate_bench")
        rel = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.lag = 0.0
        self.split: Optional[tuple[list[str], list[str]]] = None
        self.relay_on = True
        self._queue: collections.deque[tuple[float, Any]] = collections.deque()
        self.true: list[tuple[float, list[float]]] = []  # (monotonic, q) of the mock arm
        self.outputs: list[tuple[float, bool, int]] = []  # (monotonic, non-zero, size)
        self.status: list[tuple[float, bool, str]] = []
        self.relayed: list[float] = []  # (monotonic) each relayed joint state
        self._lock = threading.Lock()
        self.pub_a = self.node.create_publisher(JointState, "joint_states", rel)
        self.pub_b = self.node.create_publisher(JointState, "joint_states", rel)
        self.cmd_pub = self.node.create_publisher(Float64MultiArray, "velocity_filter/command",
                                                  rel)
        self.node.create_subscription(JointState, "mock/joint_states", self._on_true, rel)
        self.node.create_subscription(Float64MultiArray, "forward_velocity_controller/commands",
                                      self._on_output, rel)
        self.node.create_subscription(FilterStatus, "velocity_filter/status", self._on_status,
                                      rel)
        self.command: Optional[list[float]] = None
        self.gripper_rate = 0.0
        self._JointState = JointState
        self._Float64MultiArray = Float64MultiArray
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._stop = False
        self._threads = [threading.Thread(target=self.executor.spin, daemon=True),
                         threading.Thread(target=self._relay_loop, daemon=True),
                         threading.Thread(target=self._command_loop, daemon=True)]
        for t in self._threads:
            t.start()

    def _on_true(self, msg: Any) -> None:
        now = time.monotonic()
        with self._lock:
            self.true.append((now, list(msg.position)))
            self._queue.append((now, msg))

    def _on_output(self, msg: Any) -> None:
        self.outputs.append((time.monotonic(), any(msg.data), len(msg.data)))

    def _on_status(self, msg: Any) -> None:
        self.status.append((time.monotonic(), bool(msg.ok), str(msg.fault)))

    def _relay_loop(self) -> None:
        last_gripper = 0.0
        while not self._stop:
            now = time.monotonic()
            due = []
            with self._lock:
                while self._queue and self._queue[0][0] + self.lag <= now:
                    due.append(self._queue.popleft()[1])
            if self.relay_on:
                if due:
                    self.relayed.append(time.monotonic())
                for msg in due:
                    if self.split is None:
                        self.pub_a.publish(msg)
                        continue
                    for pub, names in zip((self.pub_a, self.pub_b), self.split):
                        part = self._JointState()
                        part.header = msg.header
                        idx = [list(msg.name).index(n) for n in names]
                        part.name = names
                        part.position = [msg.position[i] for i in idx]
                        pub.publish(part)
                if self.gripper_rate > 0 and now - last_gripper >= 1.0 / self.gripper_rate:
                    last_gripper = now
                    g = self._JointState()
                    g.header.stamp = self.node.get_clock().now().to_msg()
                    g.name = ["gripper_finger_joint"]
                    g.position = [0.01]
                    self.pub_b.publish(g)
            time.sleep(0.0005)

    def _command_loop(self) -> None:
        while not self._stop:
            cmd = self.command
            if cmd is not None:
                msg = self._Float64MultiArray()
                msg.data = [float(v) for v in cmd]
                self.cmd_pub.publish(msg)
            time.sleep(0.01)

    def clear(self) -> None:
        with self._lock:
            self.true.clear()
        self.outputs.clear()
        self.status.clear()
        self.relayed.clear()

    def wait_for(self, pred: Any, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        self._stop = True
        self.executor.shutdown()
        self.node.destroy_node()


def _start_filter_arm(folder: Path, overrides: dict[str, Any]) -> NodeProcesses:
    procs = NodeProcesses(["mock_arm", "velocity_filter"], overrides={
        "mock_arm": {"joint_states_topic": "mock/joint_states",
                     "initial_positions": "[" + ", ".join(str(v) for v in Q_START) + "]"},
        "velocity_filter": {"world_file": _wall_file(folder), **overrides},
    }, log_dir=str(folder / "logs"))
    procs.start()
    return procs


def _ready(cell: _Cell, procs: NodeProcesses, timeout: float = 240.0) -> bool:
    """The filter answers (a zero command gives ok outputs) within ``timeout`` s."""
    cell.command = [0.0] * 7
    ok = cell.wait_for(lambda: any(ok for _, ok, _ in cell.status[-20:]), timeout)
    cell.command = None
    return ok and all(procs.alive(n) for n in procs.names)


def _true_clearance(qs: list[list[float]]) -> float:
    from robot_collision import Box, CollisionChecker, RobotModel, WorldObject, default_robot_paths

    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    T = np.eye(4)
    T[:3, 3] = WALL_POSE
    wall = [WorldObject(Box(*WALL_SIZE), T, "wall")]
    checker = CollisionChecker(robot)
    best = np.inf
    for q in qs[::2]:
        tab = checker.clearance(np.asarray(q), wall, np.inf)
        env = tab.distances[tab.kinds == 1]
        if env.shape[0]:
            best = min(best, float(env.min()))
    return best


def _lag_push(cell: _Cell, lag_ms: float, push_s: float) -> dict[str, Any]:
    cell.split = None
    cell.gripper_rate = 0.0
    cell.lag = lag_ms / 1000.0
    time.sleep(0.5)
    cell.clear()
    cell.command = INTO_WALL
    time.sleep(push_s)
    cell.command = None
    with cell._lock:
        qs = [q for _, q in cell.true]
    status = list(cell.status)
    faults = [f for _, ok, f in status if not ok and not f.startswith(("no command",
                                                                      "command timeout"))]
    d = _true_clearance(qs)
    # how long the mock arm went without a new output from the filter (a starved filter
    # process: the arm runs on its last output up to mock_arm's command_timeout)
    times = [t for t, _, _ in cell.outputs]
    gap = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    return {"min_true_clearance_mm": round(1000 * d, 2), "margin_mm": 1000 * MARGIN,
            "inside_margin": bool(d < MARGIN - 1e-3), "longest_output_gap_ms": round(1000 * gap),
            "fault_ticks": len(faults), "faults": sorted({f.split(":")[0] for f in faults})}


def _back_to_start(cell: _Cell, timeout: float = 4.0) -> None:
    """Drive the arm back to Q_START (a proportional command on the mock arm's own
    positions), then stop."""
    cell.lag = 0.0
    cell.split = None
    cell.gripper_rate = 0.0
    target = np.asarray(Q_START)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with cell._lock:
            q = np.asarray(cell.true[-1][1]) if cell.true else None
        if q is not None:
            err = target - q
            if np.abs(err).max() < 0.005:
                break
            cell.command = list(np.clip(2.0 * err, -0.8, 0.8))
        time.sleep(0.02)
    cell.command = None
    time.sleep(0.3)


def _filter_state_timeout() -> float:
    """The filter's ``state_timeout`` (s) in the parameter file the nodes start with."""
    import yaml

    from robot_collision import data_path

    params = yaml.safe_load(data_path("config", "robot_collision.yaml").read_text())
    return float(params["velocity_filter"]["ros__parameters"]["state_timeout"])


def _split(cell: _Cell, mode: str, seconds: float) -> dict[str, Any]:
    cell.lag = 0.0
    names = [f"joint{i}" for i in range(1, 8)]
    if mode == "two_publishers":
        cell.split = (names[:5], names[5:])
        cell.gripper_rate = 0.0
    else:  # full stream + a gripper-only publisher at 20 Hz
        cell.split = None
        cell.gripper_rate = 20.0
    time.sleep(0.5)
    cell.clear()
    # a safe motion, there and back
    cell.command = [0.15, -0.1, 0.0, 0.0, 0.0, 0.0, 0.0]
    time.sleep(seconds / 2)
    cell.command = [-0.15, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0]
    time.sleep(seconds / 2)
    cell.command = None
    outs = [nz for t, nz, _ in cell.outputs]
    flips = 0
    prev = None
    for _, ok, _ in cell.status:
        if prev is True and not ok:
            flips += 1
        prev = ok
    cell.split = None
    cell.gripper_rate = 0.0
    # This process relays the states: on a starved machine its own relay can pause past the
    # filter's state_timeout, and then zero outputs are the filter doing its job. The outputs
    # while the relay kept up (its last relayed state younger than that) are reported apart.
    timeout = _filter_state_timeout()
    relayed = list(cell.relayed)
    fresh = [nz for t, nz, _ in cell.outputs
             if (k := bisect.bisect_right(relayed, t)) > 0 and t - relayed[k - 1] <= timeout]
    gaps = np.diff(relayed) if len(relayed) > 1 else np.zeros(1)
    return {"nonzero_output_fraction": round(sum(outs) / max(len(outs), 1), 3),
            "outputs": len(outs), "ok_to_fault_flips": flips,
            "nonzero_fraction_relay_fresh": round(sum(fresh) / max(len(fresh), 1), 3),
            "outputs_relay_fresh": len(fresh),
            "relay_max_gap_s": round(float(gaps.max()), 3),
            "relay_gaps_over_timeout": int((gaps > timeout).sum()),
            "faults": sorted({f.split(":")[0] for _, ok, f in cell.status if not ok})}


def _escapes(count: int, panda: bool = True) -> dict[str, Any]:
    """Near-contact escape commands zeroed (must be 0), default arm and MBM Panda."""
    from scipy.optimize import linprog

    from robot_collision import Box, CollisionChecker, RobotModel, WorldObject, default_robot_paths
    from robot_collision.control.velocity_filter import FilterOptions, VelocityFilter

    def escape(J: np.ndarray, vmax: np.ndarray) -> Optional[np.ndarray]:
        n = J.shape[1]
        c = np.zeros(n + 1)
        c[-1] = -1.0
        A = np.hstack([-J, np.ones((J.shape[0], 1))])
        lp = linprog(c, A_ub=A, b_ub=np.zeros(J.shape[0]),
                     bounds=[(-v, v) for v in vmax] + [(None, 1.0)], method="highs")
        if lp.status != 0 or lp.x[-1] < 1e-6:
            return None
        return np.asarray(lp.x[:n])

    def robots() -> list[tuple[str, Any, list[Any]]]:
        urdf, srdf = default_robot_paths()
        arm = RobotModel.from_urdf(urdf, srdf=srdf)
        w = []
        for name, size, pos in (("wall", (0.1, 1.0, 1.0), (0.45, 0.0, 0.6)),
                                ("floor", (1.0, 1.0, 0.1), (0.0, 0.0, -0.1))):
            T = np.eye(4)
            T[:3, 3] = pos
            w.append(WorldObject(Box(*size), T, name))
        out = [("default_arm", arm, w)]
        if not panda:
            return out
        try:
            import mbm

            if mbm.available():
                prob = mbm.load_problems()["problems"]["cage"][0]
                out.append(("panda_cage", mbm.panda(), mbm.world_of(prob, "cage")))
        except Exception:
            pass
        return out

    res: dict[str, Any] = {}
    for name, robot, world in robots():
        filt = VelocityFilter(CollisionChecker(robot), FilterOptions(), world)
        o = filt.options
        vmax = np.where(np.isfinite(robot.velocity_limits), robot.velocity_limits, 1.0)
        lo = np.where(np.isfinite(robot.lower), robot.lower, -np.pi)
        hi = np.where(np.isfinite(robot.upper), robot.upper, np.pi)
        rng = np.random.default_rng(7)
        tried = zeroed = pinched = faults = 0
        for _ in range(400 * count):
            if tried == count:
                break
            q = lo + (hi - lo) * rng.random(lo.shape[0])
            tab = filt.checker.clearance(q, world, np.inf)
            ds = np.where(tab.kinds == 0, o.safety_distance_self,
                          o.safety_distance_env) + o.discrete_margin
            inside = (tab.distances < ds) & (np.linalg.norm(tab.jacobians, axis=1) > 1e-3)
            if not (inside & (tab.distances > -0.005)).any():
                continue
            J = tab.jacobians[inside]
            away = escape(J, vmax * 0.5)
            if away is None:
                pinched += 1
                continue
            tried += 1
            filt.reset()
            r = filt.filter(q, away, 0.004)
            faults += not r.ok
            if not r.velocity.any() or np.any(J @ r.velocity < -1e-9):
                zeroed += 1
        res[name] = {"configurations": tried, "escapes_zeroed": zeroed,
                     "faults": faults, "pinched_skipped": pinched}
    return res


def _stale_goal(folder: Path, wait_s: float) -> dict[str, Any]:
    """Joint states stop for ``wait_s`` s, then a goal from the current state."""
    import rclpy
    from rclpy.action import ActionClient
    from std_srvs.srv import SetBool

    from robot_collision_interfaces.action import PlanMotion

    procs = NodeProcesses(["mock_arm", "planner"], overrides={
        "planner": {"world_file": _wall_file(folder)}}, log_dir=str(folder / "logs_plan"))
    procs.start()
    node = rclpy.create_node("realstate_goal")
    try:
        if not procs.wait_for_log("planner", "kernels ready", 300.0):
            return {"error": "planner did not start"}
        client = ActionClient(node, PlanMotion, "planner/plan_motion")
        srv = node.create_client(SetBool, "mock_arm/set_publishing")
        if not client.wait_for_server(timeout_sec=30.0) or not srv.wait_for_service(30.0):
            return {"error": "no planner action or mock_arm service"}
        time.sleep(1.0)
        fut = srv.call_async(SetBool.Request(data=False))
        rclpy.spin_until_future_complete(node, fut, timeout_sec=10.0)
        time.sleep(wait_s)
        goal = PlanMotion.Goal()
        goal.joint_names = [f"joint{i}" for i in range(1, 8)]
        goal.goal_positions = [0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        goal.time_limit = 5.0
        t0 = time.monotonic()
        send = client.send_goal_async(goal)
        rclpy.spin_until_future_complete(node, send, timeout_sec=30.0)
        handle = send.result()
        rfut = handle.get_result_async()
        rclpy.spin_until_future_complete(node, rfut, timeout_sec=60.0)
        result = rfut.result().result
        names = {v: k for k, v in vars(PlanMotion.Result).items()
                 if k.isupper() and isinstance(v, int)}
        return {"states_stopped_s": wait_s, "error_code": names.get(result.error_code,
                                                                   result.error_code),
                "message": result.message[:200], "answer_s": round(time.monotonic() - t0, 2)}
    finally:
        node.destroy_node()
        procs.stop()


def _foreign_description(folder: Path) -> dict[str, Any]:
    """Robot from /robot_description: the arm, then a 2-joint description."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray, String

    from robot_collision import data_path, default_robot_paths

    urdf, _ = default_robot_paths()
    procs = NodeProcesses(["velocity_filter"], overrides={"velocity_filter": {
        "world_file": _wall_file(folder)}}, log_dir=str(folder / "logs_desc"),
        robot_from_parameters=False)
    procs.start()
    node = rclpy.create_node("realstate_desc")
    sizes: list[tuple[float, int]] = []
    node.create_subscription(Float64MultiArray, "forward_velocity_controller/commands",
                             lambda m: sizes.append((time.monotonic(), len(m.data))), 10)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = node.create_publisher(String, "robot_description", latched)
    try:
        pub.publish(String(data=Path(urdf).read_text(encoding="utf-8")))
        end = time.monotonic() + 240.0
        while time.monotonic() < end and not any(n == 7 for _, n in sizes):
            rclpy.spin_once(node, timeout_sec=0.05)
        before = sorted({n for _, n in sizes})
        t = time.monotonic()
        two = data_path("urdf", "two_link.urdf")
        pub.publish(String(data=Path(two).read_text(encoding="utf-8")))
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        after = sorted({n for w, n in sizes if w > t + 0.5})
        log = procs.log_text("velocity_filter")
        refused = ("refused" in log and "two_link" in log) or "lacks joints" in log
        return {"output_sizes_before": before, "output_sizes_after": after,
                "refusal_logged": bool(refused)}
    finally:
        node.destroy_node()
        procs.stop()


_KILL_CHILD = r"""
import sys, time, rclpy
from sensor_msgs.msg import JointState
rclpy.init()
n = rclpy.create_node('victim_%d' % int(sys.argv[1]))
p = n.create_publisher(JointState, 'victim_states', 10)
m = JointState(name=['a'], position=[0.0])
print('up', flush=True)
while True:
    p.publish(m)
    time.sleep(0.01)
"""

_KILL_MEASURE = r"""
import json, os, signal, subprocess, sys, threading, time, rclpy
from sensor_msgs.msg import JointState
kills = int(sys.argv[1])
rclpy.init()
node = rclpy.create_node('kill_observer')
stamps = []
node.create_subscription(JointState, 'observed_states',
                         lambda m: stamps.append(time.monotonic()), 10)
pubn = rclpy.create_node('kill_stream')
pub = pubn.create_publisher(JointState, 'observed_states', 10)
stop = False
def stream():
    m = JointState(name=['b'], position=[0.0])
    while not stop:
        pub.publish(m)
        time.sleep(0.005)
threading.Thread(target=stream, daemon=True).start()
from rclpy.executors import MultiThreadedExecutor
ex = MultiThreadedExecutor()
ex.add_node(node)
threading.Thread(target=ex.spin, daemon=True).start()
gaps = []
for k in range(kills):
    child = subprocess.Popen([sys.executable, '-c', sys.argv[2], str(k)], stdout=subprocess.PIPE)
    child.stdout.readline()
    time.sleep(1.0)
    t_kill = time.monotonic()
    child.send_signal(signal.SIGKILL)
    child.wait()
    time.sleep(1.5)
    window = [t for t in list(stamps) if t > t_kill - 0.05]
    g = max((b - a for a, b in zip(window, window[1:])), default=0.0)
    gaps.append(g)
stop = True
print(json.dumps(gaps))
"""


def _kill_pause(kills: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, extra in (("fastdds_default", {}),
                        ("udp_only", {"FASTDDS_BUILTIN_TRANSPORTS": "UDPv4"})):
        env = dict(os.environ, **extra)
        try:
            r = subprocess.run([sys.executable, "-c", _KILL_MEASURE, str(kills), _KILL_CHILD],
                               env=env, capture_output=True, text=True, timeout=60 + 4 * kills)
            gaps = [float(g) for g in r.stdout.strip().splitlines()[-1].strip("[]").split(",")
                    if g.strip()]
        except Exception as exc:  # report, do not fail the benchmark
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[name] = {"kills": len(gaps), "longest_gap_ms": round(1000 * max(gaps), 1),
                     "gaps_over_200ms": sum(g > 0.2 for g in gaps),
                     "median_gap_ms": round(1000 * float(np.median(gaps)), 1)}
    return out


def realstate(lags: tuple[int, ...] = (0, 100, 250), push_s: float = 5.0, split_s: float = 6.0,
              escapes: int = 400, panda: bool = True, stale_s: float = 5.0,
              kills: int = 20, pushes: int = 3) -> dict[str, Any]:
    """Every scenario of the module docstring (``kills`` 0: no kill_pause)."""
    with frozen_heap():
        return _realstate(lags, push_s, split_s, escapes, panda, stale_s, kills, pushes)


def _realstate(lags: tuple[int, ...], push_s: float, split_s: float, escapes: int, panda: bool,
               stale_s: float, kills: int, pushes: int) -> dict[str, Any]:
    ros_environment()
    import robot_collision

    folder = Path(tempfile.mkdtemp(prefix="realstate_"))
    res: dict[str, Any] = {"package": str(Path(robot_collision.__file__).parent),
                           "log_dir": str(folder)}
    cell = _Cell()
    procs = _start_filter_arm(folder, {})
    try:
        if not _ready(cell, procs):
            log = procs.log_text("velocity_filter")[-500:]
            res["error"] = "filter/mock arm did not start: " + log
            return res
        # split publishers first, from the start pose (a filter that let the arm into the
        # wall in the lag runs would refuse the split runs' safe command for that)
        res["split"] = {}
        for mode in ("two_publishers", "full_plus_gripper"):
            res["split"][mode] = _split(cell, mode, split_s)
            _back_to_start(cell)
        lag: dict[str, Any] = {}
        for ms in lags:
            runs = []
            for _ in range(pushes):
                runs.append(_lag_push(cell, ms, push_s))
                _back_to_start(cell)
            worst = min(runs, key=lambda r: r["min_true_clearance_mm"])
            lag[f"{ms}ms"] = {**worst, "pushes": pushes,
                              "pushes_inside_margin": sum(r["inside_margin"] for r in runs),
                              "min_true_clearance_mm_each": [r["min_true_clearance_mm"]
                                                             for r in runs]}
        res["lag"] = lag
    finally:
        cell.close()
        procs.stop()
    res["escapes"] = _escapes(escapes, panda)
    res["stale_goal"] = _stale_goal(folder, stale_s)
    res["foreign_description"] = _foreign_description(folder)
    if kills:
        res["kill_pause"] = _kill_pause(kills)
    return res


def run(quick: bool = False) -> dict[str, Any]:
    if quick:
        return realstate(push_s=2.0, split_s=3.0, escapes=100, stale_s=2.0, kills=3)
    return realstate()
