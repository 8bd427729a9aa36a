"""The demo's client node: topics, services and action of the running system, recording and
the
phase runner that the scenario steps are built from."""

from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Optional, Union

import numpy as np
from numpy.typing import NDArray

from ...collision.checker import CollisionChecker
from ...geometry.shapes import WorldObject
from ...geometry.transforms import pose_from_position_quat
from ...model.kinematics import point_jacobian_into
from ...model.robot_model import RobotModel
from .bringup_process import CAMERA_POSE, BringupProcess
from .settings import (
    END_EFFECTOR,
    ENV_KIND,
    FEEDBACK_LIMIT,
    SELF_KIND,
    STALL_TIMEOUT,
    TCP_OFFSET,
    TRACK_ERROR_SLOW,
    TRACK_ERROR_STOP,
    DemoAborted,
    DemoSettings,
    StepResult,
)


@dataclass
class _CallResult:
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: Optional[BaseException] = None



# ----------------------------------------------------------------------------- helpers
LIVE_STATE_AGE = 0.06
"""A sample is "live" when its joint state is at most this old (s) and the filter is not
faulting; on a loaded machine the bring-up process can stall for a few hundred ms (the filter
then sends zeros), and such samples must neither count as "stopped" nor as "slow"."""


def is_live(sample: dict[str, Any]) -> bool:
    return bool(sample["state_age"] <= LIVE_STATE_AGE and sample["filter_ok"])


class Held:
    """``done(t)`` for :meth:`DemoClient.run_phase`: true once ``condition(sample)`` has held on
    live samples for ``window`` s of live time (a stall neither counts nor resets it)."""

    def __init__(self, samples: list[dict[str, Any]], condition: Callable[[dict[str, Any]], bool],
                 window: float) -> None:
        self._samples = samples
        self._condition = condition
        self._window = window
        self._held = 0.0
        self._last_t = math.nan

    def __call__(self, t: float) -> bool:
        s = self._samples[-1]
        if is_live(s):
            if self._condition(s):
                if math.isfinite(self._last_t):
                    self._held += t - self._last_t
            else:
                self._held = 0.0
            self._last_t = t
        else:
            self._last_t = math.nan
        return self._held >= self._window


class Settled:
    """``done(t)`` for :meth:`DemoClient.run_phase`: true once ``check(window)`` holds for the
    live samples of the last ``window`` s of live time (a stall neither counts nor resets it).

    Unlike :class:`Held`, judged on the window as a whole (quantiles), as the step's verdict
    is: a sensed surface is measured anew with every cloud, and an arm held against it can
    twitch for a tick or two each time; a per-sample condition restarts at every twitch."""

    def __init__(self, samples: list[dict[str, Any]],
                 check: Callable[[list[dict[str, Any]]], bool], window: float) -> None:
        self._samples = samples
        self._check = check
        self._window = window
        self._live: list[tuple[float, dict[str, Any]]] = []  # (live time, sample)
        self._clock = 0.0
        self._last_t = math.nan
        self.window: list[dict[str, Any]] = []
        """The live samples last judged (the last ``window`` s of live time, or fewer at the
        start): a verdict after the phase judges the same samples."""

    def __call__(self, t: float) -> bool:
        s = self._samples[-1]
        if not is_live(s):
            self._last_t = math.nan
            return False
        if math.isfinite(self._last_t):
            self._clock += t - self._last_t
        self._last_t = t
        self._live.append((self._clock, s))
        start = self._clock - self._window
        while self._live and self._live[0][0] < start:
            self._live.pop(0)
        self.window = [x for _, x in self._live]
        if self._clock < self._window:
            return False
        return bool(self._check(self.window))


def fmt_mm(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 1e3:.1f} mm"


def finite_median(values: Sequence[float]) -> float:
    vals = [v for v in values if math.isfinite(v)]
    return float(np.median(vals)) if vals else math.nan


def upper_quartile(values: Sequence[float]) -> float:
    """The 75th percentile of the finite ``values`` (nan if none)."""
    vals = [v for v in values if math.isfinite(v)]
    return float(np.percentile(vals, 75.0)) if vals else math.nan


def _resolve_topic(name: str, node_name: str, namespace: str = "") -> str:
    """Fully qualified name of topic ``name`` as seen by node ``node_name`` in ``namespace``."""
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    if name.startswith("~"):
        return f"{ns}/{node_name}{name[1:]}"
    return name if name.startswith("/") else f"{ns}/{name}"


class Progress:
    """Progress output: one status line rewritten in place on a terminal, plain lines else."""

    def __init__(self, stream: IO[str], t0: float) -> None:
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._t0 = t0
        self._pending = False
        self._last = 0.0
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            if self._pending:
                self._stream.write("\r\033[K")
                self._pending = False
            self._stream.write(f"[{time.monotonic() - self._t0:6.1f} s] {text}\n")
            self._stream.flush()

    def status(self, text: str) -> None:
        """Transient status (terminal only, at most 10 updates/s)."""
        if not self._tty:
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        with self._lock:
            self._stream.write(f"\r\033[K[{now - self._t0:6.1f} s]   {text}")
            self._stream.flush()
            self._pending = True



# ----------------------------------------------------------------------------- the client
CommandFn = Callable[[float, NDArray[np.float64]], Optional[NDArray[np.float64]]]
DoneFn = Callable[[float], bool]


class DemoClient:
    """The scenario's client node and the steps (see the module docstring).

    Created after ``rclpy.init()``; :attr:`node` is spun by the caller (main thread) while
    :meth:`run_scenario` runs in a worker thread: it publishes commands and polls futures, and
    every wait ticks the recorder, so the data has no gaps.
    """

    def __init__(self, robot: RobotModel, world: Sequence[WorldObject], params: dict[str, Any],
                 settings: DemoSettings, progress: Progress, stop: threading.Event,
                 bringup: Optional[BringupProcess] = None, t0: Optional[float] = None,
                 namespace: str = "") -> None:
        from rcl_interfaces.srv import GetParameters  # type: ignore[import-untyped,unused-ignore]
        from rclpy.action import ActionClient
        from rclpy.node import Node
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from robot_collision_interfaces.action import PlanMotion
        from robot_collision_interfaces.msg import ClearanceTable, FilterStatus
        from robot_collision_interfaces.srv import SetProtection

        from ..conversions import JointStateMapper
        from ..filter_settings import PARAMETERS as FILTER_PARAMETERS

        self.robot = robot
        self.world = list(world)
        self.settings = settings
        self.progress = progress
        self.stop_event = stop
        self.bringup = bringup
        self.checker = CollisionChecker(robot)
        self.n = robot.num_joints
        self._tool = robot.link_index(END_EFFECTOR)
        self._tcp = np.array([*TCP_OFFSET, 1.0])
        self._vmax = np.where(np.isfinite(robot.velocity_limits), robot.velocity_limits, 1.0)

        def section(name: str) -> dict[str, Any]:
            return dict((params.get(name) or {}).get("ros__parameters") or {})

        fparams = section("velocity_filter")

        def fparam(name: str) -> Any:
            value = fparams.get(name)
            return FILTER_PARAMETERS[name][0] if value in (None, "", []) else value

        joints = [str(j) for j in (fparam("joints") or [])] or list(robot.joint_names)
        self.filter_joints = joints
        self._cmd_idx = np.array([robot.joint_index(j) for j in joints], dtype=np.int64)
        ns = namespace

        def resolve(name: str, node: str = "velocity_filter") -> str:
            return _resolve_topic(name, node, ns)

        self.topics = {
            "command": resolve(str(fparam("command_topic"))),
            "output": resolve(str(fparam("output_topic"))),
            "joint_states": resolve(str(fparam("joint_states_topic"))),
            "status": resolve("~/status"),
            "clearance": resolve("~/clearance", "collision_checker"),
            "plan": resolve("~/plan_motion", "planner"),
            "set_protection": resolve("~/set_protection"),
            "get_parameters": resolve("~/get_parameters"),
            "camera": resolve("~/points", "mock_camera"),
        }
        cam = section("mock_camera").get("camera_pose") or list(CAMERA_POSE)
        self._camera_pose = pose_from_position_quat(cam[:3], cam[3:])
        self._cloud_msg: Any = None
        # filter distances: defaults until the node tells us (GetParameters)
        self.safety_env = float(fparam("safety_distance_env"))
        self.safety_self = float(fparam("safety_distance_self"))
        self.cloud_point_radius = float(fparam("cloud_point_radius"))

        self._JointState = JointState
        self._Float64MultiArray = Float64MultiArray
        self._PlanMotion = PlanMotion
        self._SetProtection = SetProtection
        self._GetParameters = GetParameters
        self._mapper = JointStateMapper(robot.joint_names)

        self.node = Node("demo_client", namespace=ns or None)
        latest = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
        self._cmd_pub = self.node.create_publisher(
            Float64MultiArray, self.topics["command"],
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(JointState, self.topics["joint_states"],
                                      self._on_joint_state, latest)
        self.node.create_subscription(Float64MultiArray, self.topics["output"],
                                      self._on_output, latest)
        self.node.create_subscription(FilterStatus, self.topics["status"], self._on_status, latest)
        self.node.create_subscription(ClearanceTable, self.topics["clearance"],
                                      self._on_clearance, latest)
        from sensor_msgs.msg import PointCloud2

        self.node.create_subscription(PointCloud2, self.topics["camera"], self._on_cloud,
                                      QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self._plan_client = ActionClient(self.node, PlanMotion, self.topics["plan"])
        self._protection_client = self.node.create_client(
            SetProtection, self.topics["set_protection"])
        self._param_client = self.node.create_client(
            GetParameters, self.topics["get_parameters"])

        # newest inputs (written by the executor thread, read by the scenario thread)
        self._q: Optional[NDArray[np.float64]] = None
        self._qd = np.zeros(self.n)
        self._q_time = -math.inf
        self._js_count = 0
        self._filtered = np.zeros(self.n)
        self._out_count = 0
        self._status: Any = None
        self._status_count = 0
        self._checker_min = math.nan
        self._clearance_count = 0
        self._seq = 0

        self.t0 = time.monotonic() if t0 is None else t0
        self.samples: list[dict[str, Any]] = []
        self.steps: list[StepResult] = []
        self.ready_time = math.nan
        self._step_key = ""
        self._phase = ""
        self._watch = ""  # world object whose closest robot body is followed (step 2)
        self.last_plan_wall_time = math.nan
        self._planned_once = False  # the first plan may wait for the planner's kernels
        # rclpy's ActionClient is not thread-safe: a goal sent from this (scenario) thread while
        # the executor thread spins can have its response taken before the request is
        # registered ("Ignoring unexpected goal response"); action calls therefore run in the
        # executor thread, woken by a guard condition.
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], _CallResult]] = \
            queue.SimpleQueue()
        self._wake = self.node.create_guard_condition(self._run_calls)

    # ------------------------------------------------------------------ callbacks
    def _on_joint_state(self, msg: Any) -> None:
        try:
            q = self._mapper.from_msg(msg)
            qd = np.zeros(self.n)
            if len(msg.velocity) == len(msg.name):
                qd = self._mapper.positions(msg.name, msg.velocity)
        except Exception:
            return
        self._q, self._qd, self._q_time = q, qd, time.monotonic()
        self._js_count += 1

    def _on_output(self, msg: Any) -> None:
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (len(self._cmd_idx),):
            return
        v = np.zeros(self.n)
        v[self._cmd_idx] = data
        self._filtered = v
        self._out_count += 1

    def _on_status(self, msg: Any) -> None:
        self._status = msg
        self._status_count += 1

    def _on_cloud(self, msg: Any) -> None:
        self._cloud_msg = msg

    def sensed_cloud(self) -> Optional[WorldObject]:
        """The newest mock-camera cloud in the base frame (None before the first)."""
        from ...geometry.point_cloud import PointCloud
        from ..point_clouds import pointcloud2_to_points

        msg = self._cloud_msg
        if msg is None:
            return None
        P = pointcloud2_to_points(msg, transform=self._camera_pose)
        return WorldObject(PointCloud(P), np.eye(4), "camera points")

    def sensed_point_count(self) -> int:
        msg = self._cloud_msg
        return int(msg.width * msg.height) if msg is not None else 0

    def _on_clearance(self, msg: Any) -> None:
        self._checker_min = float(msg.min_distance)
        self._clearance_count += 1

    def _run_calls(self) -> None:
        while True:
            try:
                fn, res = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                res.value = fn()
            except Exception as exc:
                res.error = exc
            res.done.set()

    def in_executor(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run ``fn()`` in the executor thread and return its value (the calling thread keeps
        recording while it waits)."""
        res = _CallResult()
        self._calls.put((fn, res))
        self._wake.trigger()
        if not self.wait_for(self._phase or "idle", res.done.is_set, timeout):
            raise RuntimeError(f"the executor did not run a call within {timeout:g} s")
        if res.error is not None:
            raise res.error
        return res.value

    # ------------------------------------------------------------------ basics
    def now(self) -> float:
        """Seconds since the client started."""
        return time.monotonic() - self.t0

    def check_alive(self) -> None:
        if self.stop_event.is_set():
            raise DemoAborted("stopped")
        if self.bringup is not None and not self.bringup.running:
            raise DemoAborted(f"the bring-up process exited (code {self.bringup.returncode}); "
                              f"see {self.bringup.log_path}")

    @property
    def q(self) -> NDArray[np.float64]:
        if self._q is None:
            raise DemoAborted("no joint state received")
        return self._q.copy()

    def tcp_position(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        pos: NDArray[np.float64] = (self.robot.link_poses(q)[self._tool] @ self._tcp)[:3]
        return pos

    def tcp_jacobian(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """(3, n) Jacobian of the tool centre point (base frame, m/rad)."""
        T = self.robot.link_poses(q)
        p = np.ascontiguousarray((T[self._tool] @ self._tcp)[:3])
        J = np.zeros((3, self.n))
        k = self.robot.kin
        point_jacobian_into(T, self._tool, p, k.parent, k.jtype, k.axis, k.qidx, k.scale, 1.0, J)
        return J

    def clearance(self, q: NDArray[np.float64]) -> dict[str, Any]:
        """Independent clearance at ``q``: smallest world and self pair (m) with names and
        witness points (core checker, same collision model as the nodes)."""
        tab = self.checker.clearance(q, self.world)
        out: dict[str, Any] = {}
        for kind, key in ((ENV_KIND, "env"), (SELF_KIND, "self")):
            mask = tab.kinds == kind
            if not mask.any():
                out[key] = (math.inf, "", None)
                continue
            d = np.where(mask, tab.distances, np.inf)
            i = int(np.argmin(d))
            pair = f"{tab.robot_bodies[i]}={tab.other_bodies[i]}"
            out[key] = (float(d[i]), pair, np.stack([tab.witness_robot[i], tab.witness_other[i]]))
        return out

    def pair_row(self, q: NDArray[np.float64], other: str) -> tuple[float, NDArray[np.float64],
                                                                    str]:
        """(distance (m), distance Jacobian (n,), robot body) of the robot body closest to the
        world object ``other``."""
        tab = self.checker.clearance(q, self.world)
        rows = [i for i, o in enumerate(tab.other_bodies) if o == other]
        if not rows:
            raise RuntimeError(f"no clearance row with {other!r}")
        i = min(rows, key=lambda r: tab.distances[r])
        return float(tab.distances[i]), tab.jacobians[i].copy(), tab.robot_bodies[i]

    def pair_clearance(self, q: NDArray[np.float64], other: str) -> tuple[float, Any, str]:
        """(distance, witness (2, 3) robot→other, robot body) of the robot body closest to the
        world object ``other``."""
        tab = self.checker.clearance(q, self.world)
        rows = [i for i, o in enumerate(tab.other_bodies) if o == other]
        if not rows:
            raise RuntimeError(f"no clearance row with {other!r}")
        i = min(rows, key=lambda r: tab.distances[r])
        return (float(tab.distances[i]), np.stack([tab.witness_robot[i], tab.witness_other[i]]),
                tab.robot_bodies[i])

    def publish_command(self, v: NDArray[np.float64]) -> None:
        from std_msgs.msg import MultiArrayDimension

        msg = self._Float64MultiArray()
        self._seq += 1
        msg.layout.dim = [MultiArrayDimension(label=f"demo:{self._seq}",
                                              size=len(self._cmd_idx), stride=len(self._cmd_idx))]
        msg.data = [float(x) for x in v[self._cmd_idx]]
        self._cmd_pub.publish(msg)

    # ------------------------------------------------------------------ the control loop
    def run_phase(self, phase: str, max_time: float, command: Optional[CommandFn] = None,
                  done: Optional[DoneFn] = None, min_time: float = 0.0,
                  status: Optional[Callable[[float], str]] = None) -> float:
        """Tick at the control rate for at most ``max_time`` s (until ``done(t)`` after
        ``min_time``): each tick sends ``command(t, q)`` (None: nothing sent) and records a
        sample. Returns the phase duration."""
        self._phase = phase
        period = 1.0 / self.settings.control_rate
        start = time.monotonic()
        next_tick = start
        while True:
            self.check_alive()
            now = time.monotonic()
            t = now - start
            q = self.q
            v = command(t, q) if command is not None else None
            if v is not None:
                v = np.clip(v, -self._vmax, self._vmax)
                self.publish_command(v)
            self._record(q, v)
            if status is not None:
                self.progress.status(status(t))
            if t >= max_time or (done is not None and t >= min_time and done(t)):
                return t
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_tick = time.monotonic()  # late (loaded machine): do not try to catch up

    def hold(self, phase: str, seconds: float) -> None:
        """Command zero velocity (the filter passes it: the arm stops at once)."""
        zero = np.zeros(self.n)
        self.run_phase(phase, seconds, lambda t, q: zero)

    def come_to_rest(self, max_time: float = 15.0) -> None:
        """Command zero velocity until the arm has been still (live joint states with zero
        velocity) for 0.3 s."""
        zero = np.zeros(self.n)
        still = Held(self.samples, lambda s: bool(np.max(np.abs(s["qd"])) < 1e-9), 0.3)
        self.run_phase("stop", max_time, lambda t, q: zero, still)
        self.run_phase("idle", 0.1)

    def wait_for(self, phase: str, predicate: Callable[[], bool], timeout: float,
                 command: Optional[CommandFn] = None, what: str = "") -> bool:
        """Tick (recording, optionally commanding) until ``predicate()`` or ``timeout``."""
        self.run_phase(phase, timeout, command, done=lambda t: predicate(),
                       status=(lambda t: f"{what} ({t:.1f} s)") if what else None)
        return predicate()

    def _record(self, q: NDArray[np.float64], cmd: Optional[NDArray[np.float64]]) -> None:
        c = self.clearance(q)
        J = self.tcp_jacobian(q)
        filt = self._filtered.copy()
        st = self._status
        sample: dict[str, Any] = {
            "t": self.now(), "step": self._step_key, "phase": self._phase,
            "q": q, "qd": self._qd.copy(),
            "cmd": cmd.copy() if cmd is not None else np.full(self.n, math.nan),
            "filtered": filt,
            "tcp_speed_cmd": float(np.linalg.norm(J @ cmd)) if cmd is not None else math.nan,
            "tcp_speed_filtered": float(np.linalg.norm(J @ filt)),
            "tcp_speed": float(np.linalg.norm(J @ self._qd)),
            "env_clearance": c["env"][0], "env_pair": c["env"][1],
            "self_clearance": c["self"][0], "self_pair": c["self"][1],
            "filter_ok": bool(st.ok) if st is not None else False,
            "filter_fault": str(st.fault) if st is not None else "",
            "filter_scaling": float(st.scaling) if st is not None else math.nan,
            "filter_min_distance": float(st.min_distance) if st is not None else math.nan,
            "active_constraints": " ".join(st.active_constraints) if st is not None else "",
            "disabled_groups": " ".join(st.disabled_groups) if st is not None else "",
            "checker_min_distance": self._checker_min,
            "state_age": time.monotonic() - self._q_time,
            "watch_pair": "", "watch_distance": math.nan, "watch_rate": math.nan,
            "watch_rate_cmd": math.nan, "watch_rate_filtered": math.nan,
        }
        if self._watch:
            d, Jd, body = self.pair_row(q, self._watch)
            sample.update(watch_pair=f"{body}={self._watch}", watch_distance=d,
                          watch_rate=float(Jd @ self._qd), watch_rate_filtered=float(Jd @ filt),
                          watch_rate_cmd=float(Jd @ cmd) if cmd is not None else math.nan)
        self.samples.append(sample)

    def phase_samples(self, step: str, phase: Optional[str] = None,
                      after: float = 0.0) -> list[dict[str, Any]]:
        out = [s for s in self.samples if s["step"] == step and (phase is None or
                                                                  s["phase"] == phase)]
        if after > 0 and out:
            t0 = out[0]["t"]
            out = [s for s in out if s["t"] - t0 >= after]
        return out

    # ------------------------------------------------------------------ readiness
    def wait_ready(self) -> None:
        """Wait until every node answers: joint states, filter status, clearance tables,
        the planner's action server and the filter's protection service."""
        self._step_key, self._phase = "start", "waiting"
        deadline = time.monotonic() + self.settings.ready_timeout
        last_report = time.monotonic()
        self.progress.line("waiting for the nodes (mock_arm, velocity_filter, collision_checker, "
                           "planner) ...")
        while True:
            self.check_alive()
            missing = []
            if self._js_count < 5:
                missing.append(f"joint states on {self.topics['joint_states']} (mock_arm)")
            st = self._status
            if st is None or not (st.ok or str(st.fault).startswith("no command")):
                why = f": {st.fault}" if st is not None and st.fault else ""
                missing.append(f"velocity_filter ready{why}")
            if self._clearance_count < 1:
                missing.append(f"clearance tables on {self.topics['clearance']} "
                               "(collision_checker)")
            if not self._plan_client.server_is_ready():
                missing.append(f"action server {self.topics['plan']} (planner)")
            if not self._protection_client.service_is_ready():
                missing.append(f"service {self.topics['set_protection']}")
            if not missing:
                break
            now = time.monotonic()
            if now > deadline:
                raise DemoAborted("the system did not come up within "
                                  f"{self.settings.ready_timeout:g} s; missing: "
                                  + "; ".join(missing))
            if now - last_report > 10.0:
                last_report = now
                self.progress.line("  still waiting for: " + "; ".join(missing))
            self.progress.status("waiting for: " + "; ".join(missing))
            time.sleep(0.05)
        self.ready_time = self.now()
        self._read_filter_parameters()
        self.progress.line(
            f"system up after {self.ready_time:.1f} s; filter safety distances "
            f"{self.safety_env * 1e3:.0f} mm (world), {self.safety_self * 1e3:.0f} mm (self)")
        self.run_phase("idle", 0.3)

    def _read_filter_parameters(self) -> None:
        """The running filter's safety distances (the verdicts use them)."""
        if not self._param_client.wait_for_service(timeout_sec=5.0):
            self.progress.line("  (velocity_filter parameters not readable: using defaults)")
            return
        req = self._GetParameters.Request()
        req.names = ["safety_distance_env", "safety_distance_self", "cloud_point_radius"]
        fut = self._param_client.call_async(req)
        end = time.monotonic() + 10.0
        while not fut.done() and time.monotonic() < end:
            self.check_alive()
            time.sleep(0.01)
        if not fut.done() or fut.result() is None:
            return
        values = fut.result().values
        got = [v.double_value if v.type == 3 else math.nan for v in values]
        if len(got) == 3 and all(math.isfinite(v) for v in got):
            self.safety_env, self.safety_self, self.cloud_point_radius = got

    # ------------------------------------------------------------------ planning
    def plan(self, goal: Any, what: str) -> Any:
        """Send a PlanMotion goal and wait for its result (raises RuntimeError when the planner
        does not answer in time)."""
        start = time.monotonic()
        timeout = self.settings.plan_timeout
        if not self._planned_once:
            # the planner answers goals while it still loads (a first start: compiles) its
            # kernels, which the readiness check does not wait for: seen 167 s on a fresh
            # install beside a CI run, so the first plan may take up to ready_timeout more
            timeout += self.settings.ready_timeout
        handle = None
        for attempt in (1, 2):
            send = self.in_executor(lambda: self._plan_client.send_goal_async(goal))
            if self.wait_for("planning", send.done, 30.0, what=f"sending {what}"):
                handle = send.result()
                break
            self.progress.line(f"  no answer to the goal within 30 s (attempt {attempt})")
        if handle is None:
            raise RuntimeError("the planner did not answer the goal")
        if not handle.accepted:
            raise RuntimeError("the planner rejected the goal")
        res = self.in_executor(handle.get_result_async)
        if not self.wait_for("planning", res.done, timeout, what=f"planning {what}"):
            with contextlib.suppress(Exception):
                self.in_executor(handle.cancel_goal_async)
            raise RuntimeError(f"no planning result within {timeout:g} s")
        self.last_plan_wall_time = time.monotonic() - start
        self._planned_once = True
        return res.result().result

    def joint_goal(self, q: Union[Sequence[float], NDArray[np.float64]]) -> Any:
        goal = self._PlanMotion.Goal()
        goal.joint_names = list(self.robot.joint_names)
        goal.goal_positions = [float(v) for v in q]
        goal.time_limit = self.settings.plan_time_limit
        goal.velocity_scaling = self.settings.velocity_scaling
        return goal

    def code_name(self, code: int) -> str:
        for name in dir(self._PlanMotion.Result):
            if name.isupper() and getattr(self._PlanMotion.Result, name) == code:
                return name
        return str(code)

    def trajectory_arrays(self, traj: Any) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                    NDArray[np.float64]]:
        """(times (K,), positions (K, n), velocities (K, n)) in model joint order."""
        idx = [self.robot.joint_index(j) for j in traj.joint_names]
        K = len(traj.points)
        times = np.zeros(K)
        P = np.tile(self.q, (K, 1))
        V = np.zeros((K, self.n))
        for k, pt in enumerate(traj.points):
            times[k] = pt.time_from_start.sec + 1e-9 * pt.time_from_start.nanosec
            P[k, idx] = pt.positions
            if len(pt.velocities) == len(idx):
                V[k, idx] = pt.velocities
        return times, P, V

    def execute(self, traj: Any, label: str) -> dict[str, Any]:
        """Track a JointTrajectory through the filter and settle on its last point; returns
        metrics.

        The controller is ``q̇ = r q̇_ref(τ) + sat(Kp (q_ref(τ) − q))`` where the trajectory
        time τ advances at rate r ∈ [0, 1]: 1 while the arm follows, less as the tracking error
        grows from ``TRACK_ERROR_SLOW`` to ``TRACK_ERROR_STOP`` (the filter held it back, or the
        machine is too loaded to keep up), 0 while the joint state is stale. So the reference
        never runs away from the arm and the commands stay near the planned speeds.
        """
        times, P, V = self.trajectory_arrays(traj)
        if len(times) < 2:
            raise RuntimeError("the trajectory has fewer than 2 points")
        goal = P[-1]
        T = float(times[-1])
        kp = self.settings.kp

        def ref(t: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
            if t >= T:
                return goal, np.zeros(self.n)
            k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2))
            a = (t - times[k]) / max(times[k + 1] - times[k], 1e-9)
            return P[k] + a * (P[k + 1] - P[k]), V[k] + a * (V[k + 1] - V[k])

        clock = {"tau": 0.0, "last": math.nan, "track": 0.0, "slowed": 0.0, "moved": 0.0}

        def command(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
            dt = 0.0 if math.isnan(clock["last"]) else t - clock["last"]
            clock["last"] = t
            err = float(np.max(np.abs(ref(clock["tau"])[0] - q)))
            clock["track"] = max(clock["track"], err)
            if time.monotonic() - self._q_time > LIVE_STATE_AGE:
                rate = 0.0
            else:
                rate = float(np.clip((TRACK_ERROR_STOP - err)
                                     / (TRACK_ERROR_STOP - TRACK_ERROR_SLOW), 0.0, 1.0))
            if rate < 1.0 and clock["tau"] < T:
                clock["slowed"] += dt * (1.0 - rate)
            if rate > 0.0:
                clock["moved"] = t
            clock["tau"] = min(T, clock["tau"] + rate * dt)
            qr, vr = ref(clock["tau"])
            fb = np.clip(kp * (qr - q), -FEEDBACK_LIMIT, FEEDBACK_LIMIT)
            v: NDArray[np.float64] = rate * vr + fb
            return v

        tol = self.settings.settle_tolerance

        def done(t: float) -> bool:
            if clock["tau"] < T and t - clock["moved"] > STALL_TIMEOUT:
                return True  # the reference has not advanced for that long: give up
            return clock["tau"] >= T and float(np.max(np.abs(goal - self.q))) < tol

        def status(t: float) -> str:
            s = self.samples[-1]
            return (f"{label}: {100.0 * clock['tau'] / T:3.0f}% of {T:.1f} s, clearance "
                    f"{fmt_mm(s['env_clearance'])} (world) {fmt_mm(s['self_clearance'])} (self)")

        # bounded, but generous: on a starved machine the reference advances slowly
        max_time = max(20.0 * T, T + 60.0) + self.settings.settle_timeout
        duration = self.run_phase("execute", max_time, command, done, min_time=T, status=status)
        self.hold("stop", 0.15)
        q = self.q
        err = float(np.max(np.abs(goal - q)))
        tcp_err = float(np.linalg.norm(self.tcp_position(goal) - self.tcp_position(q)))
        return {"trajectory_duration_s": T, "execution_time_s": duration,
                "reference_slowed_s": clock["slowed"], "reached_end": clock["tau"] >= T,
                "final_joint_error_rad": err, "final_tool_error_m": tcp_err,
                "max_tracking_error_rad": clock["track"], "points": len(times)}

    def path_lengths(self, traj: Any) -> tuple[float, float]:
        """(joint-space length in rad, tool centre path length in m) of a trajectory."""
        _, P, _ = self.trajectory_arrays(traj)
        joint = float(np.sum(np.linalg.norm(np.diff(P, axis=0), axis=1)))
        tcp = np.array([self.tcp_position(p) for p in P])
        return joint, float(np.sum(np.linalg.norm(np.diff(tcp, axis=0), axis=1)))

    # ------------------------------------------------------------------ steps
