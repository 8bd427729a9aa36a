"""``make demo`` / ``robot_collision_demo``: the whole system on the default arm, scripted.

What it does
------------
1. Starts the bring-up (:mod:`robot_collision.ros.bringup`: ``mock_arm``, ``collision_checker``,
   ``velocity_filter``, ``planner`` in one process, one ``MultiThreadedExecutor``) as a child
   process with ``config/robot_collision.yaml`` and the demo world ``config/demo_world.yaml``,
   exactly as it would run next to a real arm, with the simulated arm in place of the hardware.
   Its log goes to ``<output>/bringup.log``.
2. Runs a scripted scenario in this process as a separate client node (:class:`DemoClient`),
   talking to the nodes only over their topics, services and action:

   1. plans with ``/planner/plan_motion`` to a joint goal behind the post (the straight joint
      motion would hit it) and executes the trajectory by streaming joint velocities through the
      velocity filter (a tracking controller, ``q̇ = q̇_ref(t) + Kp (q_ref(t) − q)``);
   2. "teleop": pushes the tool straight at the post at a constant Cartesian speed; the filter
      stops the arm at the safety distance. Then pulls back: full speed at once;
   3. moves home (planner again), then folds the wrist into the forearm (``joint6`` towards its
      limit, the link5-link7 pair) with protection on (stops at the self safety distance), off
      for the ``wrist`` group (the pair closes further, into contact) and on again (the filter
      pushes the pair back out), then unfolds;
   4. asks for a goal in collision and for an unreachable goal region: the planner answers
      ``GOAL_IN_COLLISION`` (naming the pair) and ``GOAL_UNREACHABLE``; nothing moves.

   Every verdict uses an independent clearance computation in this process (the core
   :class:`~robot_collision.collision.checker.CollisionChecker` on every received joint state), not
   the
   nodes' own reports.
3. Prints a summary table (one line per step: result, smallest clearance, time) and writes
   ``<output>/``: ``demo.png`` (clearance over time with the safety distances, commanded vs
   filtered tool speed, the collision geometry at the closest approaches), ``demo_data.csv``
   (one row per control tick), ``summary.json`` and ``demo_params.yaml`` (the parameter file the
   bring-up ran with).

Exit code 0 only when every step behaved as expected; 1 when a step did not; 2 when the system
did not come up or the run timed out; 130 on Ctrl-C. ``--fast`` shortens holds and motions (the
test suite runs it: ``test/test_demo.py``).

Run::

    make demo                                   # or: .venv/bin/robot_collision_demo
    make demo DEMO_ARGS="--fast --no-figure"
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import json
import math
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Optional, Union

import numpy as np
from numpy.typing import NDArray

from .. import default_robot_paths
from ..collision.checker import CollisionChecker
from ..collision.clearance import PairKind
from ..geometry.shapes import WorldObject
from ..model.kinematics import point_jacobian_into
from ..model.robot_model import RobotModel

__all__ = [
    "DemoSettings",
    "StepResult",
    "DemoAborted",
    "BringupProcess",
    "DemoClient",
    "write_demo_params",
    "write_figure",
    "format_summary",
    "main",
]

# ----------------------------------------------------------------------------- the scenario
GOAL_BEHIND_POST = (-1.0, 0.7, 0.0, 1.8, 0.0, math.pi - 2.5, 0.0)
"""Step 1 joint goal (rad, model order): the tool low beside the arm, behind the post as seen
from home; the straight joint motion from home would hit the post with link7."""
TCP_OFFSET = (0.0, 0.0, 0.10)
"""Tool centre point in the ``tool`` link frame (m): between the fingertips."""
END_EFFECTOR = "tool"
TELEOP_OBSTACLE = "post"
"""World object the step 2 teleop burst pushes the tool at."""
FOLD_JOINT = "joint6"
FOLD_GROUP = "wrist"
"""Step 3 folds ``FOLD_JOINT`` towards its lower limit (link5-link7 collide near -2.09 rad) and
switches protection of ``FOLD_GROUP`` off and on."""
GOAL_IN_COLLISION = (0.55, 0.5, 0.0, 1.7, 0.0, 0.94, 0.0)
"""Step 4a joint goal: the SRDF state ``ready`` turned towards the crate: the tool is inside it."""
UNREACHABLE_REGION = ((1.55, 1.65), (-0.05, 0.05), (0.45, 0.55))
"""Step 4b goal region of the tool (x, y, z bounds in m, base frame, any orientation): 1.6 m
out, far beyond the arm's ~1.03 m reach."""

# ----------------------------------------------------------------------------- verdicts
CLEARANCE_TOLERANCE = 0.001
"""A pair may end up this much (m) below its safety distance (the filter's stated guarantee)."""
FINAL_ERROR_TOLERANCE = 0.01
"""Largest joint error (rad) left at the end of an executed trajectory."""
STOPPED_FRACTION = 0.1
"""Step 2: "stopped" = measured tool speed below this fraction of the commanded speed."""
STOP_DISTANCE_BAND = 0.01
"""Step 2/3: the stop must come within this much (m) above the safety distance (the filter
stopped the motion, not something else)."""
FULL_SPEED_FRACTION = 0.9
"""Step 2: moving away must reach this fraction of the commanded speed."""
STILL_TOLERANCE = 1e-4
"""Step 4: largest joint motion (rad) that still counts as "nothing moved"."""
TRACK_ERROR_SLOW = 0.15
TRACK_ERROR_STOP = 0.5
"""Tracking errors (rad, largest joint) where the executed trajectory's time starts to slow
down, and where it stops advancing (see :meth:`DemoClient.execute`)."""
FEEDBACK_LIMIT = 0.6
"""Largest feedback velocity (rad/s per joint) of the tracking controller."""
STALL_TIMEOUT = 20.0
"""An execution whose reference has not advanced for this long (s) is given up."""

_ENV = int(PairKind.ENVIRONMENT)
_SELF = int(PairKind.SELF)


@dataclass(frozen=True)
class DemoSettings:
    """Timing of the scenario (s, Hz, rad/s, m/s); :meth:`for_mode` gives the two presets."""

    fast: bool = False
    control_rate: float = 100.0
    kp: float = 4.0
    velocity_scaling: float = 0.5
    plan_time_limit: float = 10.0
    plan_timeout: float = 60.0
    settle_timeout: float = 3.0
    settle_tolerance: float = 0.004
    teleop_speed: float = 0.2
    stop_hold: float = 0.8
    away_time: float = 1.0
    fold_speed: float = 1.5
    fold_max_time: float = 20.0
    off_time: float = 1.0
    recover_time: float = 1.0
    unfold_max_time: float = 15.0
    ready_timeout: float = 180.0
    total_timeout: float = 420.0

    @classmethod
    def for_mode(cls, fast: bool) -> DemoSettings:
        """Normal or fast (for tests: shorter holds and waits)."""
        if not fast:
            return cls()
        return cls(fast=True, settle_timeout=2.5, stop_hold=0.5,
                   away_time=0.6, off_time=0.5, recover_time=0.8,
                   ready_timeout=150.0, total_timeout=280.0)


@dataclass
class StepResult:
    """Outcome of one scenario step (or sub-step), one line of the summary table."""

    key: str
    title: str
    passed: bool = False
    result: str = ""
    min_clearance: Optional[float] = None  # m; the quantity the step is judged on
    clearance_kind: str = ""  # "env" | "self" | ""
    duration: float = 0.0
    details: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    t_start: float = 0.0
    t_end: float = 0.0

    def fail(self, message: str) -> None:
        self.failures.append(message)
        self.passed = False


class DemoAborted(Exception):
    """The run was interrupted (Ctrl-C, overall timeout, bring-up died): stop everything."""


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


def _live(sample: dict[str, Any]) -> bool:
    return bool(sample["state_age"] <= LIVE_STATE_AGE and sample["filter_ok"])


class _Held:
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
        if _live(s):
            if self._condition(s):
                if math.isfinite(self._last_t):
                    self._held += t - self._last_t
            else:
                self._held = 0.0
            self._last_t = t
        else:
            self._last_t = math.nan
        return self._held >= self._window


def _fmt_mm(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 1e3:.1f} mm"


def _median(values: Sequence[float]) -> float:
    vals = [v for v in values if math.isfinite(v)]
    return float(np.median(vals)) if vals else math.nan


def _resolve_topic(name: str, node_name: str, namespace: str = "") -> str:
    """Fully qualified name of topic ``name`` as seen by node ``node_name`` in ``namespace``."""
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    if name.startswith("~"):
        return f"{ns}/{node_name}{name[1:]}"
    return name if name.startswith("/") else f"{ns}/{name}"


class _Progress:
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


# ----------------------------------------------------------------------------- bring-up
def write_demo_params(
    path: Path, source: Optional[Path] = None
) -> tuple[dict[str, Any], list[str]]:
    """Write the bring-up parameter file of the demo to ``path``: the package's
    ``config/robot_collision.yaml`` (or ``source``) with every node of the bring-up enabled and,
    where a node that takes a world has none, the collision checker's ``world_file``.

    Returns (the parameter data, notes on what was changed).
    """
    import yaml

    from .bringup import NODE_REGISTRY, default_params_file, load_params_file

    src = source or default_params_file()
    data = copy.deepcopy(load_params_file(src))
    notes: list[str] = []
    bringup = data.setdefault("bringup", {}).setdefault("ros__parameters", {})
    listed = list(bringup.get("nodes") or [])
    missing = [n for n in NODE_REGISTRY if n not in listed]
    if missing:
        bringup["nodes"] = listed + missing
        notes.append(f"bringup.nodes: added {missing}")
    checker = (data.get("collision_checker") or {}).get("ros__parameters") or {}
    world_file = str(checker.get("world_file") or "package://robot_collision/config/"
                     "demo_world.yaml")
    for name in ("collision_checker", "velocity_filter", "planner"):
        section = data.setdefault(name, {}).setdefault("ros__parameters", {})
        if not str(section.get("world_file") or "").strip():
            section["world_file"] = world_file
            notes.append(f"{name}.world_file: none in {src.name}, using {world_file!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# Written by robot_collision.ros.demo from {src}\n")
        for note in notes:
            f.write(f"# demo override: {note}\n")
        yaml.safe_dump(data, f, sort_keys=False)
    return data, notes


class BringupProcess:
    """``python -m robot_collision.ros.bringup`` as a child process (own session, so a Ctrl-C
    in the terminal reaches only the demo, which then stops the child in order)."""

    def __init__(self, params_file: Path, log_path: Path,
                 max_duration: Optional[float] = None, namespace: str = "") -> None:
        self.params_file = params_file
        self.namespace = namespace
        self.log_path = log_path
        self.max_duration = max_duration
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self._log: Optional[IO[bytes]] = None

    def start(self) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the folder holding the package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - open for the child's lifetime
        cmd = [sys.executable, "-m", "robot_collision.ros.bringup",
               "--params-file", str(self.params_file)]
        if self.namespace:
            cmd += ["--namespace", self.namespace]
        if self.max_duration is not None:
            # a safety net: the child stops by itself even if this process is killed
            cmd += ["--duration", f"{self.max_duration:g}"]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> Optional[int]:
        return None if self.proc is None else self.proc.poll()

    def stop(self, timeout: float = 15.0) -> Optional[int]:
        """SIGINT (clean shutdown), then SIGTERM, then SIGKILL; returns the exit code."""
        proc = self.proc
        if proc is None:
            return None
        try:
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 5.0),
                              (signal.SIGKILL, 5.0)):
                if proc.poll() is not None:
                    break
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(wait)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None
        return proc.poll()

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


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
                 settings: DemoSettings, progress: _Progress, stop: threading.Event,
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

        from .conversions import JointStateMapper
        from .filter_node import PARAMETERS as FILTER_PARAMETERS

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
        }
        # filter distances: defaults until the node tells us (GetParameters)
        self.safety_env = float(fparam("safety_distance_env"))
        self.safety_self = float(fparam("safety_distance_self"))

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
        for kind, key in ((_ENV, "env"), (_SELF, "self")):
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
        still = _Held(self.samples, lambda s: bool(np.max(np.abs(s["qd"])) < 1e-9), 0.3)
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
        req.names = ["safety_distance_env", "safety_distance_self"]
        fut = self._param_client.call_async(req)
        end = time.monotonic() + 10.0
        while not fut.done() and time.monotonic() < end:
            self.check_alive()
            time.sleep(0.01)
        if not fut.done() or fut.result() is None:
            return
        values = fut.result().values
        got = [v.double_value if v.type == 3 else math.nan for v in values]
        if len(got) == 2 and all(math.isfinite(v) for v in got):
            self.safety_env, self.safety_self = got

    # ------------------------------------------------------------------ planning
    def plan(self, goal: Any, what: str) -> Any:
        """Send a PlanMotion goal and wait for its result (raises RuntimeError when the planner
        does not answer in time)."""
        start = time.monotonic()
        timeout = self.settings.plan_timeout
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
                    f"{_fmt_mm(s['env_clearance'])} (world) {_fmt_mm(s['self_clearance'])} (self)")

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
    def _begin(self, key: str, title: str) -> StepResult:
        self._step_key = key
        step = StepResult(key, title, t_start=self.now())
        self.steps.append(step)
        self.progress.line(f"step {key}: {title}")
        return step

    def _end(self, step: StepResult) -> None:
        step.t_end = self.now()
        step.duration = step.t_end - step.t_start
        step.passed = not step.failures
        mark = "ok" if step.passed else "FAILED: " + "; ".join(step.failures)
        self.progress.line(f"  -> {step.result}  {step.details}  [{mark}]")

    def _min_over(self, samples: list[dict[str, Any]], key: str) -> float:
        vals = [s[key] for s in samples if math.isfinite(s[key])]
        return min(vals) if vals else math.inf

    def step_plan_and_execute(self) -> None:
        step = self._begin("1", "plan around the post and execute through the filter")
        step.clearance_kind = "env"
        q0 = self.q
        result = self.plan(self.joint_goal(GOAL_BEHIND_POST), "to the goal behind the post")
        code = int(result.error_code)
        step.metrics.update(error_code=self.code_name(code), message=str(result.message),
                            planning_time_s=float(result.planning_time),
                            iterations=int(result.iterations))
        if code != self._PlanMotion.Result.SUCCESS:
            step.result = self.code_name(code)
            step.fail(f"planning failed: {result.message}")
            self._end(step)
            return
        straight_ok = self.checker.is_motion_valid(q0, np.array(GOAL_BEHIND_POST), self.world)
        joint_len, tcp_len = self.path_lengths(result.trajectory)
        waited = self.last_plan_wall_time - float(result.planning_time)
        step.metrics.update(path_length_rad=joint_len, tool_path_length_m=tcp_len,
                            straight_line_collision_free=bool(straight_ok),
                            request_to_result_s=self.last_plan_wall_time)
        note = f" (after {waited:.1f} s waiting for the planner's start-up)" if waited > 1 else ""
        self.progress.line(
            f"  planned in {result.planning_time:.2f} s{note}, {result.iterations} iterations: "
            f"{joint_len:.2f} rad, tool path {tcp_len:.2f} m; executing ...")
        m = self.execute(result.trajectory, "executing")
        step.metrics.update(m)
        samples = self.phase_samples("1", "execute")
        dmin = self._min_over(samples, "env_clearance")
        smin = self._min_over(samples, "self_clearance")
        step.min_clearance = dmin
        step.metrics.update(min_env_clearance_m=dmin, min_self_clearance_m=smin)
        step.result = "SUCCESS, executed"
        step.details = (f"plan {result.planning_time:.2f} s, path {joint_len:.2f} rad / "
                        f"{tcp_len:.2f} m, ran {m['execution_time_s']:.1f} s, final error "
                        f"{m['final_joint_error_rad'] * 1e3:.1f} mrad")
        if dmin < self.safety_env - CLEARANCE_TOLERANCE:
            step.fail(f"came {dmin * 1e3:.1f} mm from the world (safety distance "
                      f"{self.safety_env * 1e3:.0f} mm)")
        if smin < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"self clearance {smin * 1e3:.1f} mm < {self.safety_self * 1e3:.0f} mm")
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"final joint error {m['final_joint_error_rad']:.4f} rad > "
                      f"{FINAL_ERROR_TOLERANCE} rad")
        self._end(step)

    def step_teleop(self) -> None:
        step = self._begin("2", f"teleop: push the tool at the {TELEOP_OBSTACLE}, then pull back")
        step.clearance_kind = "env"
        d0, _, body = self.pair_clearance(self.q, TELEOP_OBSTACLE)
        speed = self.settings.teleop_speed
        step.metrics.update(closing_speed_m_s=speed, start_distance_m=d0, body=body)
        self.progress.line(f"  {body} is {d0 * 1e3:.0f} mm from the {TELEOP_OBSTACLE}: pushing "
                           f"straight at it, closing at {speed:.2f} m/s")
        self._watch = TELEOP_OBSTACLE

        def straight_at(sign: float) -> CommandFn:
            """Joint velocity along the distance gradient of the robot body closest to the
            obstacle: the most direct way into it (sign -1) or away from it (+1), at a closing
            (opening) speed of ``speed``."""
            def command(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
                _, J, _ = self.pair_row(q, TELEOP_OBSTACLE)
                v: NDArray[np.float64] = sign * speed * J / max(float(J @ J), 1e-12)
                norm = float(np.linalg.norm(v))
                return v if norm <= 1.0 else v / norm  # at most 1 rad/s

            return command

        hold = self.settings.stop_hold
        slow = STOPPED_FRACTION * speed
        near = self.safety_env + STOP_DISTANCE_BAND
        stopped = _Held(self.samples, lambda s: bool(
            -s["watch_rate"] < slow and s["tcp_speed"] < slow and s["watch_distance"] < near),
            hold)

        def status(t: float) -> str:
            s = self.samples[-1]
            return (f"pushing: {s['watch_pair']} {_fmt_mm(s['watch_distance'])}, closing at "
                    f"{-s['watch_rate']:.3f} m/s (commanded {speed:.2f})")

        reach = max(0.0, d0 - self.safety_env) / speed
        push_time = self.run_phase("push", 4.0 * reach + hold + 15.0, straight_at(-1.0), stopped,
                                   min_time=0.3, status=status)
        push = self.phase_samples("2", "push")
        tail = [s for s in push if s["t"] >= push[-1]["t"] - hold and _live(s)] or push[-1:]
        end_dist, _, end_body = self.pair_clearance(self.q, TELEOP_OBSTACLE)
        hold_closing = _median([-s["watch_rate"] for s in tail])
        hold_cmd = _median([-s["watch_rate_cmd"] for s in tail])
        hold_tool = _median([s["tcp_speed"] for s in tail])
        hold_scaling = _median([s["filter_scaling"] for s in tail])
        active = sorted({c for s in tail for c in s["active_constraints"].split() if c})
        self.progress.line(f"  stopped {end_dist * 1e3:.1f} mm from the {TELEOP_OBSTACLE} "
                           f"({end_body}) while commanded to close at {hold_cmd:.2f} m/s; "
                           "pulling back")

        moving = _Held(self.samples, lambda s: True, self.settings.away_time)
        self.run_phase("away", self.settings.away_time + 10.0, straight_at(1.0), moving,
                       status=lambda t: f"pulling back: opening at "
                       f"{self.samples[-1]['watch_rate']:.3f} m/s")
        self.hold("stop", 0.15)
        self._watch = ""
        away = [s for s in self.phase_samples("2", "away", after=0.1) if _live(s)]
        away_rate = _median([s["watch_rate"] for s in away])
        away_scaling = _median([s["filter_scaling"] for s in away])
        after, _, _ = self.pair_clearance(self.q, TELEOP_OBSTACLE)
        dmin = self._min_over(self.phase_samples("2"), "env_clearance")
        step.min_clearance = dmin
        step.metrics.update(
            push_time_s=push_time, stop_distance_m=end_dist, stop_body=end_body,
            min_env_clearance_m=dmin, pushing_commanded_closing_speed_m_s=hold_cmd,
            pushing_closing_speed_m_s=hold_closing, pushing_tool_speed_m_s=hold_tool,
            pushing_filter_scaling=hold_scaling, active_constraints_while_pushing=active,
            away_opening_speed_m_s=away_rate, away_speed_fraction=away_rate / speed,
            away_filter_scaling=away_scaling, distance_after_away_m=after)
        step.result = "stopped, then full speed away"
        step.details = (f"stopped {end_dist * 1e3:.1f} mm from the {TELEOP_OBSTACLE} "
                        f"(tool {hold_tool * 1e3:.1f} mm/s while pushing at "
                        f"{speed * 1e3:.0f}); away at {100 * away_rate / speed:.0f}% speed")
        if dmin < self.safety_env - CLEARANCE_TOLERANCE:
            step.fail(f"came {dmin * 1e3:.1f} mm from the world, below the safety distance "
                      f"{self.safety_env * 1e3:.0f} mm")
        if not (hold_closing <= slow and hold_tool <= slow):
            step.fail(f"did not stop: closing at {hold_closing:.3f} m/s, tool at "
                      f"{hold_tool:.3f} m/s while pushing")
        if end_dist > self.safety_env + STOP_DISTANCE_BAND:
            step.fail(f"stopped {end_dist * 1e3:.1f} mm from the {TELEOP_OBSTACLE}, not at the "
                      f"safety distance {self.safety_env * 1e3:.0f} mm")
        if not away_rate >= FULL_SPEED_FRACTION * speed:
            step.fail(f"moving away at {away_rate:.3f} m/s, below "
                      f"{FULL_SPEED_FRACTION:.0%} of the commanded {speed:.2f} m/s")
        if not after > end_dist:
            step.fail("pulling back did not increase the distance")
        self._end(step)

    def set_protection(self, group: str, enabled: bool, command: Optional[CommandFn]) -> str:
        req = self._SetProtection.Request()
        req.group = group
        req.enabled = enabled
        fut = self._protection_client.call_async(req)
        if not self.wait_for("protection", fut.done, 30.0, command):
            raise RuntimeError("set_protection did not answer within 30 s")
        res = fut.result()
        if res is None or not res.success:
            raise RuntimeError(f"set_protection({group!r}, {enabled}) failed: "
                               f"{getattr(res, 'message', 'no response')}")
        return str(res.message)

    def move_home(self, step: StepResult) -> bool:
        home = self.robot.home_configuration()
        self.progress.line("  moving home with the planner first")
        result = self.plan(self.joint_goal(home), "home")
        if int(result.error_code) != self._PlanMotion.Result.SUCCESS:
            step.fail(f"planning home failed: {self.code_name(int(result.error_code))}: "
                      f"{result.message}")
            return False
        m = self.execute(result.trajectory, "moving home")
        step.metrics["move_home"] = m
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"did not reach home (error {m['final_joint_error_rad']:.3f} rad)")
            return False
        return True

    def step_self_collision(self) -> None:
        step = self._begin("3a", "self-collision: fold the wrist, protection on")
        step.clearance_kind = "self"
        if not self.move_home(step):
            step.result = "not home"
            self._end(step)
            return
        self._step_key = "3a"
        j = self.robot.joint_index(FOLD_JOINT)
        fold = np.zeros(self.n)
        fold[j] = -self.settings.fold_speed

        def fold_cmd(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
            return fold

        lower = float(self.robot.lower[j])
        band = self.safety_self + STOP_DISTANCE_BAND

        def still(window: float, where: Callable[[dict[str, Any]], bool]) -> DoneFn:
            return _Held(self.samples, lambda s: bool(abs(s["qd"][j]) < 0.05 and where(s)),
                         window)

        def status(t: float) -> str:
            s = self.samples[-1]
            return (f"{FOLD_JOINT} {s['q'][j]:+.2f} rad, {s['self_pair']} "
                    f"{_fmt_mm(s['self_clearance'])}")

        self.progress.line(f"  folding {FOLD_JOINT} at {-self.settings.fold_speed:+.1f} rad/s "
                           "into the forearm")
        self.run_phase("fold", self.settings.fold_max_time, fold_cmd,
                       still(0.4, lambda s: bool(s["self_clearance"] < band)), min_time=0.5,
                       status=status)
        on = self.phase_samples("3a", "fold")
        on_min = self._min_over(on, "self_clearance")
        on_end = on[-1]["self_clearance"]
        step.min_clearance = on_min
        step.metrics.update(min_self_clearance_m=on_min, stop_self_clearance_m=on_end,
                            pair=on[-1]["self_pair"], fold_joint_position=float(on[-1]["q"][j]))
        step.result = "stopped"
        step.details = (f"{on[-1]['self_pair']} stopped at {on_end * 1e3:.1f} mm, "
                        f"{FOLD_JOINT} {on[-1]['q'][j]:+.2f} rad")
        if on_min < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"self clearance {on_min * 1e3:.1f} mm below the safety distance "
                      f"{self.safety_self * 1e3:.0f} mm")
        if on_end > self.safety_self + STOP_DISTANCE_BAND:
            step.fail(f"stopped at {on_end * 1e3:.1f} mm, not at the safety distance")
        self._end(step)

        step = self._begin("3b", f"  protection off for the '{FOLD_GROUP}' group")
        step.clearance_kind = "self"
        msg = self.set_protection(FOLD_GROUP, False, fold_cmd)
        self.progress.line(f"  {msg}")
        self.run_phase("fold", self.settings.off_time + 10.0, fold_cmd,
                       still(0.3, lambda s: bool(s["q"][j] < lower + 0.01)),
                       min_time=self.settings.off_time, status=status)
        off = self.phase_samples("3b")
        off_min = self._min_over(off, "self_clearance")
        disabled = any(FOLD_GROUP in s["disabled_groups"].split() for s in off)
        step.min_clearance = off_min
        step.metrics.update(min_self_clearance_m=off_min, status_reports_disabled=disabled,
                            fold_joint_position=float(off[-1]["q"][j]),
                            closer_than_protected_by_m=on_min - off_min)
        step.result = "in contact" if off_min <= 0 else "closer"
        step.details = (f"{off[-1]['self_pair']} reached {off_min * 1e3:.1f} mm "
                        f"({(on_min - off_min) * 1e3:.0f} mm closer than protected)")
        if not off_min < min(self.safety_self - CLEARANCE_TOLERANCE, on_min - 0.005):
            step.fail(f"unprotected, the pair came only to {off_min * 1e3:.1f} mm (protected: "
                      f"{on_min * 1e3:.1f} mm): no visible difference")
        if not disabled:
            step.fail(f"the filter status never listed '{FOLD_GROUP}' as disabled")
        self._end(step)

        step = self._begin("3c", "  protection on again")
        step.clearance_kind = "self"
        msg = self.set_protection(FOLD_GROUP, True, fold_cmd)
        self.progress.line(f"  {msg}; still commanding the fold")
        out_again = _Held(self.samples, lambda s: bool(
            s["self_clearance"] >= self.safety_self - CLEARANCE_TOLERANCE
            and abs(s["qd"][j]) < 0.05), 0.3)
        self.run_phase("recover", self.settings.recover_time + 10.0, fold_cmd, out_again,
                       min_time=self.settings.recover_time, status=status)
        rec = self.phase_samples("3c", "recover")
        tail = [s for s in rec if s["t"] >= rec[-1]["t"] - 0.2 and _live(s)] or rec[-1:]
        recovered = _median([s["self_clearance"] for s in tail])
        self.progress.line(f"  pushed back out to {recovered * 1e3:.1f} mm; unfolding")
        home = self.robot.home_configuration()

        def unfold(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
            v: NDArray[np.float64] = np.clip(3.0 * (home - q), -1.0, 1.0)
            return v

        self.run_phase("unfold", self.settings.unfold_max_time, unfold,
                       lambda t: float(np.max(np.abs(home - self.q))) < 0.01, status=status)
        self.hold("stop", 0.15)
        end_disabled = self.samples[-1]["disabled_groups"].split()
        step.min_clearance = recovered
        step.metrics.update(recovered_self_clearance_m=recovered,
                            disabled_groups_at_end=end_disabled,
                            home_error_rad=float(np.max(np.abs(home - self.q))))
        step.result = "pushed back out"
        step.details = (f"the filter separated the pair to {recovered * 1e3:.1f} mm against the "
                        "folding command, then unfolded")
        if recovered < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"protection on again: the pair stayed at {recovered * 1e3:.1f} mm, below "
                      f"the safety distance {self.safety_self * 1e3:.0f} mm")
        if end_disabled:
            step.fail(f"groups still disabled at the end: {end_disabled}")
        self._end(step)

    def step_errors(self) -> None:
        step = self._begin("4a", "goal in collision")
        self.come_to_rest()
        before = self.q
        q_goal = np.array(GOAL_IN_COLLISION)
        pairs = self.checker.check(q_goal, self.world, exhaustive=True).colliding_pairs
        step.metrics["colliding_pairs_core"] = [f"{a}={b}" for a, b in pairs]
        result = self.plan(self.joint_goal(q_goal), "to a goal inside the crate")
        self.run_phase("idle", 0.2)
        code = self.code_name(int(result.error_code))
        message = str(result.message)
        step.result = code
        step.metrics.update(error_code=code, message=message,
                            trajectory_points=len(result.trajectory.points))
        step.details = f"\"{message[:90]}{'...' if len(message) > 90 else ''}\""
        if code != "GOAL_IN_COLLISION":
            step.fail(f"expected GOAL_IN_COLLISION, got {code}: {message}")
        if not any(a in message and b in message for a, b in pairs):
            step.fail(f"the message names none of the colliding pairs "
                      f"{step.metrics['colliding_pairs_core']}")
        if len(result.trajectory.points):
            step.fail("a failed plan came with a trajectory")
        self._check_still(step, before)
        self._end(step)

        step = self._begin("4b", "unreachable goal region")
        before = self.q
        goal = self._PlanMotion.Goal()
        goal.use_goal_region = True
        goal.end_effector = END_EFFECTOR
        goal.reference_pose.orientation.w = 1.0
        goal.end_effector_offset_pose.orientation.w = 1.0
        bounds = [v for row in UNREACHABLE_REGION for v in row] + [-math.pi, math.pi] * 3
        goal.goal_region_bounds = bounds
        goal.time_limit = self.settings.plan_time_limit
        result = self.plan(goal, "to a region 1.6 m away")
        self.run_phase("idle", 0.2)
        code = self.code_name(int(result.error_code))
        message = str(result.message)
        step.result = code
        step.metrics.update(error_code=code, message=message)
        step.details = f"\"{message[:90]}{'...' if len(message) > 90 else ''}\""
        if code != "GOAL_UNREACHABLE":
            step.fail(f"expected GOAL_UNREACHABLE, got {code}: {message}")
        self._check_still(step, before)
        self._end(step)

    def _check_still(self, step: StepResult, before: NDArray[np.float64]) -> None:
        moved = float(np.max(np.abs(self.q - before)))
        step.metrics["joint_motion_rad"] = moved
        if moved > STILL_TOLERANCE:
            step.fail(f"the arm moved by {moved:.5f} rad")

    def run_scenario(self) -> None:
        """Readiness, then every step (a failing step does not stop the later ones)."""
        self.wait_ready()
        for step_fn in (self.step_plan_and_execute, self.step_teleop, self.step_self_collision,
                        self.step_errors):
            try:
                step_fn()
            except DemoAborted as exc:
                if self.steps and not self.steps[-1].t_end:
                    step = self.steps[-1]
                    step.result = step.result or "aborted"
                    step.fail(f"aborted: {exc}")
                    self._end(step)
                raise
            except Exception as exc:
                step = self.steps[-1] if self.steps else self._begin("?", step_fn.__name__)
                step.fail(f"{type(exc).__name__}: {exc}")
                if not step.result:
                    step.result = "error"
                self._end(step)
                with contextlib.suppress(DemoAborted):
                    self.hold("stop", 0.2)
        self._step_key = "end"


# ----------------------------------------------------------------------------- outputs
_CSV_SCALARS = ("tcp_speed_cmd", "tcp_speed_filtered", "tcp_speed", "env_clearance", "env_pair",
                "self_clearance", "self_pair", "filter_ok", "filter_fault", "filter_scaling",
                "filter_min_distance", "active_constraints", "disabled_groups",
                "checker_min_distance", "state_age", "watch_pair", "watch_distance",
                "watch_rate_cmd", "watch_rate_filtered", "watch_rate")


def write_csv(path: Path, samples: Sequence[dict[str, Any]], joint_names: Sequence[str]) -> None:
    """One row per control tick: time (s), step, phase, joint positions / measured velocities /
    commanded / filtered velocities (rad, rad/s), tool speeds (m/s), clearances (m), filter
    status."""
    header = ["t", "step", "phase"]
    for prefix in ("q", "qd", "cmd", "filtered"):
        header += [f"{prefix}_{j}" for j in joint_names]
    header += list(_CSV_SCALARS)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in samples:
            row: list[Any] = [f"{s['t']:.4f}", s["step"], s["phase"]]
            for key in ("q", "qd", "cmd", "filtered"):
                row += [f"{v:.6g}" for v in s[key]]
            for key in _CSV_SCALARS:
                v = s[key]
                row.append(f"{v:.6g}" if isinstance(v, float) else v)
            w.writerow(row)


def _closest(samples: Sequence[dict[str, Any]], key: str,
             steps: Sequence[str]) -> Optional[dict[str, Any]]:
    cand = [s for s in samples if s["step"] in steps and math.isfinite(s[key])]
    return min(cand, key=lambda s: s[key]) if cand else None


def _pair_witness(checker: CollisionChecker, q: NDArray[np.float64],
                  world: Sequence[WorldObject], pair: str) -> Optional[NDArray[np.float64]]:
    """Witness points (2, 3) of the clearance row ``"robot=other"`` at ``q``."""
    tab = checker.clearance(q, world)
    for i, name in enumerate(tab.pair_names()):
        if name == pair:
            return np.stack([tab.witness_robot[i], tab.witness_other[i]])
    return None


def _cube_limits(ax: Any, centre: Sequence[float], half: float, zoom: float = 1.0) -> None:
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0), zoom=zoom)


def write_figure(path: Path, samples: Sequence[dict[str, Any]], steps: Sequence[StepResult],
                 robot: RobotModel, world: Sequence[WorldObject], safety_env: float,
                 safety_self: float) -> None:
    """The demo figure: clearance over time (safety distances dashed, step spans shaded),
    commanded vs filtered tool speed, and the collision geometry at the closest approach to the
    world and (protection on) to itself, with the closest pair highlighted and its witness line.

    ``samples`` need ``t``, ``step``, ``q``, ``cmd``, ``env_clearance``, ``env_pair``,
    ``self_clearance``, ``self_pair``, ``tcp_speed_cmd``, ``tcp_speed_filtered``, ``tcp_speed``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..tools.plotting import plot_collision_scene

    fig = Figure(figsize=(15.0, 8.4), dpi=100)
    FigureCanvasAgg(fig)
    ax_c = fig.add_axes((0.055, 0.555, 0.555, 0.335))
    ax_v = fig.add_axes((0.055, 0.075, 0.555, 0.39), sharex=ax_c)
    t = np.array([s["t"] for s in samples])
    env = np.array([s["env_clearance"] for s in samples]) * 1e3
    slf = np.array([s["self_clearance"] for s in samples]) * 1e3
    vc = np.array([s["tcp_speed_cmd"] for s in samples])
    vf = np.array([s["tcp_speed_filtered"] for s in samples])
    vm = np.array([s["tcp_speed"] for s in samples])
    sending = np.isfinite(vc)

    # step spans
    colors = {"1": "#e8f1fb", "2": "#fdf0e1", "3": "#eaf6ea", "4": "#f3ecf8"}
    labels = {"1": "1  plan + execute", "2": "2  teleop", "3": "3  home, self-collision",
              "4": "4  bad goals"}
    spans: dict[str, list[float]] = {}
    for st in steps:
        k = st.key[:1]
        if k in colors:
            lo, hi = spans.get(k, [st.t_start, st.t_end])
            spans[k] = [min(lo, st.t_start), max(hi, st.t_end)]
    for k, (lo, hi) in spans.items():
        for ax in (ax_c, ax_v):
            ax.axvspan(lo, hi, color=colors[k], zorder=0, lw=0)
        ax_c.text(0.5 * (lo + hi), 1.015, labels[k], transform=ax_c.get_xaxis_transform(),
                  ha="center", va="bottom", fontsize=9, color="#333333")
    # sub-steps of step 3: fold with protection, wrist protection off, on again
    marks = []
    fold = [s["t"] for s in samples if s["step"] == "3a" and s["phase"] == "fold"]
    if fold:
        marks.append((fold[0], "fold,\nprotected", 0.97))
    marks += [(st.t_start, text, y) for st in steps for key, text, y in (
        ("3b", "wrist\nunprotected", 0.80), ("3c", "protected\nagain", 0.97)) if st.key == key]
    for x, text, y in marks:
        for ax in (ax_c, ax_v):
            ax.axvline(x, color="#8a8a8a", lw=0.8, ls=":", zorder=1)
        ax_v.text(x, y, " " + text.replace("\n", "\n "), fontsize=7.5, va="top",
                  transform=ax_v.get_xaxis_transform(), color="#555555")

    ymax = 170.0
    ax_c.plot(t, np.clip(env, -50, ymax + 50), color="#1f77b4", lw=1.7,
              label="robot–world, closest pair")
    ax_c.plot(t, np.clip(slf, -50, ymax + 50), color="#9467bd", lw=1.7,
              label="robot–robot, closest pair")
    ax_c.axhline(safety_env * 1e3, color="#1f77b4", ls="--", lw=1.1,
                 label=f"safety distance, world ({safety_env * 1e3:.0f} mm)")
    ax_c.axhline(safety_self * 1e3, color="#9467bd", ls="--", lw=1.1,
                 label=f"safety distance, self ({safety_self * 1e3:.0f} mm)")
    ax_c.axhline(0.0, color="#d62728", lw=0.9, alpha=0.7)
    lowest = float(np.nanmin(np.r_[env, slf, 0.0]))
    ax_c.set_ylim(min(-15.0, lowest - 14.0), ymax)
    ax_c.set_ylabel("clearance [mm]")
    ax_c.legend(loc="upper right", fontsize=8, framealpha=0.92, ncol=2)
    ax_c.grid(alpha=0.3)
    fig.text(0.055, 0.925, "Clearance of every joint state (independent check) and the "
             "filter's safety distances", fontsize=11)

    ce = _closest(samples, "env_clearance", ("1", "2"))
    cs = _closest(samples, "self_clearance", ("3a",))
    co = _closest(samples, "self_clearance", ("3b",))
    for c, key, color, text in ((ce, "env_clearance", "#1f77b4", "stopped at"),
                                (cs, "self_clearance", "#9467bd", "stopped at"),
                                (co, "self_clearance", "#d62728", "unprotected:")):
        if c is None:
            continue
        y = c[key] * 1e3
        ax_c.plot([c["t"]], [y], "o", ms=6, mfc="white", mec=color, mew=1.8, zorder=5)
        ax_c.annotate(f"{text} {y:.1f} mm", (c["t"], y), xytext=(7, 4 if c is ce else -12),
                      textcoords="offset points", fontsize=8, color=color)

    ax_v.plot(t, np.where(sending, vc, np.nan), color="#7f7f7f", lw=2.6, alpha=0.5,
              label="commanded (into the filter)")
    ax_v.plot(t, vm, color="#2ca02c", lw=0.9, alpha=0.9, zorder=2,
              label="measured (joint states)")
    ax_v.plot(t, np.where(sending, vf, np.nan), color="#ff7f0e", lw=1.2, ls=(0, (4, 2)),
              zorder=3, label="filtered (out to the arm)")
    ax_v.set_ylabel("tool centre speed [m/s]")
    ax_v.set_xlabel("time since start [s]")
    ax_v.legend(loc="upper left", fontsize=8, framealpha=0.92)
    ax_v.grid(alpha=0.3)
    fig.text(0.055, 0.478, "Tool speed: what the client commanded vs what the filter let "
             "through", fontsize=11)
    top = float(np.nanmax(np.r_[vc[sending], vm, 0.1]))
    ax_v.set_ylim(0.0, top * 1.12)
    if len(t):
        ax_v.set_xlim(max(0.0, float(t[0]) - 0.3), float(t[-1]) + 0.3)

    checker = CollisionChecker(robot)
    panels = (
        (ce, "env", "Closest approach to the world", (0.625, 0.485, 0.375, 0.45),
         (0.22, -0.3, 0.32), 0.52, (26.0, -62.0)),
        (cs, "self", "Wrist folded into the forearm, protection on",
         (0.625, 0.0, 0.375, 0.45), (0.06, 0.0, 1.08), 0.24, (10.0, -72.0)),
    )
    for c, key, title, rect, centre, half, view in panels:
        ax3: Any = fig.add_axes(rect, projection="3d")
        if c is None:
            ax3.set_axis_off()
            continue
        pair_name = str(c[f"{key}_pair"])
        witness = _pair_witness(checker, c["q"], world, pair_name)
        plot_collision_scene(robot, c["q"], world, highlight=pair_name.split("="),
                             witness=witness, ax=ax3)
        _cube_limits(ax3, centre, half, zoom=1.15)
        ax3.view_init(elev=view[0], azim=view[1])
        ax3.set_title(f"{title}\n{pair_name.replace('=', ' – ')}: "
                      f"{c[f'{key}_clearance'] * 1e3:.1f} mm at t = {c['t']:.1f} s",
                      fontsize=10, pad=0)
        for axis in (ax3.xaxis, ax3.yaxis, ax3.zaxis):
            axis.set_ticklabels([])
            axis.label.set_text("")
    passed = sum(s.passed for s in steps)
    fig.text(0.055, 0.965, f"robot_collision demo, default arm + demo world: {passed}/"
             f"{len(steps)} steps as expected", fontsize=13, weight="bold")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=fig.dpi)


def format_summary(steps: Sequence[StepResult]) -> str:
    """The summary table (one line per step)."""
    rows = [("step", "", "result", "min clearance", "time", "")]
    for s in steps:
        kind = f" ({s.clearance_kind})" if s.clearance_kind and s.min_clearance is not None \
            and math.isfinite(s.min_clearance) else ""
        rows.append((s.key, s.title.strip(), ("PASS " if s.passed else "FAIL ") + s.result,
                     _fmt_mm(s.min_clearance) + kind, f"{s.duration:5.1f} s",
                     s.details if s.passed else "; ".join(s.failures)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(5)) + "  " + r[5])
        if k == 0:
            lines.append("-" * (sum(widths) + 2 * 5 + 10))
    return "\n".join(line.rstrip() for line in lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


# ----------------------------------------------------------------------------- main
def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="robot_collision_demo",
        description="Bring the robot_collision nodes up on the default arm (simulated) and run "
        "a scripted scenario against them; writes a figure and the recorded data.")
    p.add_argument("--fast", action="store_true",
                   help="shorter holds and full-speed plans (for tests and CI)")
    p.add_argument("--output", default="demo_output", metavar="DIR",
                   help="output folder (default: demo_output/)")
    p.add_argument("--no-figure", action="store_true", help="do not draw demo.png")
    p.add_argument("--namespace", default="", metavar="NS",
                   help="run every node in this namespace (isolates concurrent runs on one "
                   "machine; default: the root namespace, as on a real arm)")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="overall time limit in seconds (default: 420, --fast: 280)")
    return p.parse_args(list(argv) if argv is not None else None)


def _load_world(params: dict[str, Any]) -> list[WorldObject]:
    from .world import WorldModel

    section = (params.get("collision_checker") or {}).get("ros__parameters") or {}
    world_file = str(section.get("world_file") or "")
    model = WorldModel()
    model.use_file(world_file)
    return list(model.objects())


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script ``robot_collision_demo`` (see the module docstring)."""
    args = _parse_args(argv)
    settings = DemoSettings.for_mode(args.fast)
    total_timeout = float(args.timeout) if args.timeout else settings.total_timeout
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    progress = _Progress(sys.stdout, t0)

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if not os.environ.get("ROS_DOMAIN_ID"):
        os.environ["ROS_DOMAIN_ID"] = str(random.randint(1, 101))
    mode = "fast" if settings.fast else "normal"
    where = f", namespace /{args.namespace.strip('/')}" if args.namespace.strip("/") else ""
    progress.line(f"robot_collision demo ({mode} mode, ROS_DOMAIN_ID="
                  f"{os.environ['ROS_DOMAIN_ID']}{where}); output in {out}/")

    params_file = out / "demo_params.yaml"
    params, notes = write_demo_params(params_file)
    for note in notes:
        progress.line(f"note: {note}")
    bringup = BringupProcess(params_file, out / "bringup.log", total_timeout + 60.0,
                             args.namespace)
    bringup.start()
    progress.line(f"started the bring-up (pid {bringup.proc.pid if bringup.proc else '?'}): "
                  f"{', '.join(params['bringup']['ros__parameters']['nodes'])}; log in "
                  f"{bringup.log_path}")

    code = 2
    client: Optional[DemoClient] = None
    abort_reason = ""
    try:
        urdf, srdf = default_robot_paths()
        robot = RobotModel.from_urdf(urdf, srdf=srdf)
        world = _load_world(params)
        # compile / load the kernels the client uses before the clock starts mattering
        CollisionChecker(robot).clearance(robot.home_configuration(), world)
        code, client, abort_reason = _run_client(robot, world, params, settings, progress,
                                                 bringup, t0, t0 + total_timeout, args.namespace)
    except KeyboardInterrupt:
        code, abort_reason = 130, "interrupted"
    finally:
        rc = bringup.stop()
        progress.line(f"bring-up stopped (exit code {rc})")
    if abort_reason:
        progress.line(f"ABORTED: {abort_reason}")
        if code == 2 and bringup.returncode not in (0, None, -2):
            tail = bringup.tail()
            if tail:
                print(f"--- last lines of {bringup.log_path} ---\n{tail}")

    steps = client.steps if client is not None else []
    samples = client.samples if client is not None else []
    expected = ["1", "2", "3a", "3b", "3c", "4a", "4b"]
    all_passed = not abort_reason and [s.key for s in steps] == expected \
        and all(s.passed for s in steps)
    if code == 0 and not all_passed:
        code = 1
    files: dict[str, str] = {"params": str(params_file), "bringup_log": str(bringup.log_path)}
    if samples and client is not None:
        write_csv(out / "demo_data.csv", samples, robot.joint_names)
        files["data"] = str(out / "demo_data.csv")
        if not args.no_figure:
            progress.line("drawing the figure ...")
            try:
                write_figure(out / "demo.png", samples, steps, robot, world, client.safety_env,
                             client.safety_self)
                files["figure"] = str(out / "demo.png")
            except Exception as exc:
                progress.line(f"figure not written: {type(exc).__name__}: {exc}")
                code = code or 1
    duration = time.monotonic() - t0
    summary = {
        "passed": code == 0, "exit_code": code, "mode": mode, "duration_s": duration,
        "ready_s": client.ready_time if client is not None else None,
        "abort_reason": abort_reason or None,
        "ros_domain_id": int(os.environ["ROS_DOMAIN_ID"]),
        "safety_distance_env_m": client.safety_env if client is not None else None,
        "safety_distance_self_m": client.safety_self if client is not None else None,
        "settings": asdict(settings), "params_notes": notes,
        "steps": [asdict(s) for s in steps], "samples": len(samples), "files": files,
    }
    with open(out / "summary.json", "w", encoding="utf-8") as f:
        json.dump(_jsonable(summary), f, indent=2)
    print()
    print(format_summary(steps) if steps else "(no step ran)")
    print()
    verdict = "every step behaved as expected" if code == 0 else (
        "SOME STEPS DID NOT BEHAVE AS EXPECTED" if code == 1 else "THE DEMO DID NOT COMPLETE")
    print(f"{verdict} ({duration:.0f} s). Figure, data and summary in {out}/")
    return code


def _run_client(robot: RobotModel, world: list[WorldObject], params: dict[str, Any],
                settings: DemoSettings, progress: _Progress, bringup: BringupProcess,
                t0: float, deadline: float,
                namespace: str = "") -> tuple[int, Optional[DemoClient], str]:
    """Start rclpy and the client node, run the scenario in a worker thread while this (main)
    thread spins; returns (exit code, client, abort reason)."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    rclpy.init(args=["robot_collision_demo"])
    stop = threading.Event()
    client: Optional[DemoClient] = None
    executor: Optional[SingleThreadedExecutor] = None
    worker: Optional[threading.Thread] = None
    failure: list[BaseException] = []
    abort_reason = ""
    code = 0
    try:
        client = DemoClient(robot, world, params, settings, progress, stop, bringup, t0,
                            namespace)
        executor = SingleThreadedExecutor()
        executor.add_node(client.node)

        def scenario() -> None:
            assert client is not None
            try:
                client.run_scenario()
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=scenario, name="demo-scenario", daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                executor.spin_once(timeout_sec=0.05)
                if time.monotonic() > deadline:
                    abort_reason = "overall time limit reached"
                    code = 2
                    break
                if not rclpy.ok():
                    abort_reason, code = "interrupted", 130
                    break
        except (KeyboardInterrupt, ExternalShutdownException):
            abort_reason, code = "interrupted", 130
        stop.set()
        if worker.is_alive():
            # let the scenario notice the stop while callbacks still run
            end = time.monotonic() + 10.0
            with contextlib.suppress(Exception):
                while worker.is_alive() and time.monotonic() < end and rclpy.ok():
                    executor.spin_once(timeout_sec=0.05)
        if failure and not abort_reason:
            exc = failure[0]
            code = 2
            abort_reason = str(exc) if isinstance(exc, DemoAborted) else \
                f"{type(exc).__name__}: {exc}"
    finally:
        rclpy.try_shutdown()
        if worker is not None:
            worker.join(10.0)
        if executor is not None:
            with contextlib.suppress(Exception):
                executor.shutdown(timeout_sec=5.0)
        if client is not None:
            with contextlib.suppress(Exception):
                client.node.destroy_node()
    return code, client, abort_reason


if __name__ == "__main__":
    raise SystemExit(main())
