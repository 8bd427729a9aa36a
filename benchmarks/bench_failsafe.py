"""Fail-safe latency of the ``velocity_filter`` node: joint states stop (or turn NaN) → zeros.

The node under test runs in a process of its own, as deployed: ``process`` = the
``velocity_filter`` console script alone, ``process_rt`` = the same started with
``chrt -f 20`` (every thread SCHED_FIFO; where this process may, else as ``process``),
``bringup`` =
``robot_collision_bringup`` with the
collision checker, the filter and the planner in one process (the package's parameter file:
the filter at 100 Hz, ``state_timeout`` 0.1 s). This process plays the robot: a paced thread
publishes joint states (default arm at home) and a small command (0.1 rad/s on joint1) at
100 Hz each, and a receiver records every output with its DDS receive stamp.

Trials, each after the outputs were non-zero again for a random 50-150 ms:

- ``stale``: the joint states stop; latency = last joint state ``publish()`` returned → first
  output of exact zeros received. The node's target: ``state_timeout`` + 2 ticks (0.12 s).
  ``stale_sent``: the same to the zero output's DDS source stamp (the node's ``publish()``),
  without the delivery to this process (itself competing for the CPU).
- ``nan``: one joint state with a NaN position, then none; latency = the NaN state published →
  first zero output. Target: the next tick (a rejected state stops the arm at once; waiting for
  the timeout would drive on the last good state for 0.1 s).

Every condition runs without and with two busy-loop processes (``while True: pass``, the
machine's 2 cores shared with the node). ``late_nonzero`` counts violations: outputs that are
not zeros sent more than ``state_timeout`` + 1 tick after the last joint state (after the NaN
state: more than 1 tick after it), until the joint states resume (the tick allows for the
delivery of the last state: the node ages a state from its DDS arrival);
``late_nonzero_max_ms`` is the latest such output after the deadline (ms, 0 = none).

Keys per condition ``<mode>_<idle|load>``: ``stale_ms_p50`` / ``_p99`` / ``_max``,
``nan_ms_p50`` / ``_p99`` / ``_max``, ``trials``, ``missed`` (no zero within 2 s),
``late_nonzero``, ``stale_target_met`` (p99 ≤ timeout + 2 ticks), plus ``loadavg_1min``
and ``cpus``. ``--quick``: the ``process`` mode only, 12 + 6 trials per load.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

__all__ = ["run", "measure"]

RATE_HZ = 100.0  # the filter's tick (also in the package's parameter file)
STATE_TIMEOUT = 0.1  # s
PUBLISH_HZ = 100.0  # joint states and commands from the "robot"
TARGET_S = STATE_TIMEOUT + 2.0 / RATE_HZ
LATE_S = 1.0 / RATE_HZ  # delivery allowance of the last state before late_nonzero counts
COMMAND = 0.1  # rad/s on joint1: far from everything, passes the filter unchanged
RT_PRIORITY = 20  # SCHED_FIFO priority of the node's process in the process_rt mode


def _ros_environment() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", os.path.join(tempfile.gettempdir(),
                                                      "robot_collision_roslog"))
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)) * 1e3, 1) if values else math.nan


def _node_command(mode: str, ns: str) -> list[str]:
    from robot_collision import default_robot_paths

    urdf, srdf = default_robot_paths()
    if mode in ("process", "process_rt"):
        # process_rt: the whole process at a real-time priority (every thread, so the thread
        # holding the interpreter is never behind the CPU hogs), where permitted
        rt = ["chrt", "-f", str(RT_PRIORITY)] if mode == "process_rt" and _can_rt() else []
        return [*rt, sys.executable, "-m", "robot_collision.ros.filter_node", "--ros-args",
                "-r", f"__ns:={ns}", "-p", f"urdf_path:={urdf}", "-p", f"srdf_path:={srdf}",
                "-p", f"rate:={RATE_HZ}", "-p", f"state_timeout:={STATE_TIMEOUT}",
                "-p", "command_timeout:=0.5", "--log-level", "error"]
    return [sys.executable, "-m", "robot_collision.ros.bringup", "--namespace", ns,
            "--nodes", "collision_checker", "velocity_filter", "planner",
            "--ros-args", "--log-level", "error"]


def _can_rt() -> bool:
    """Whether this process may start a SCHED_FIFO process (``chrt`` exists, rtprio allowed)."""
    import shutil

    if shutil.which("chrt") is None:
        return False
    try:
        return subprocess.run(["chrt", "-f", str(RT_PRIORITY), "true"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class _BusyLoops:
    """``count`` processes spinning a core each (``while True: pass``) while in the block."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> _BusyLoops:
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        return self

    def __exit__(self, *exc: Any) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait(timeout=10)


class _Robot:
    """The benchmark's side of the wire: joint states + commands out, outputs in."""

    def __init__(self, ns: str) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rclpy.subscription import Subscription
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from robot_collision import RobotModel, default_robot_paths

        urdf, srdf = default_robot_paths()
        robot = RobotModel.from_urdf(urdf, srdf=srdf)
        self.names = list(robot.joint_names)
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node("failsafe_bench", context=self.ctx, namespace=ns)
        self.exec = SingleThreadedExecutor(context=self.ctx)
        self.exec.add_node(self.node)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.js_pub = self.node.create_publisher(JointState, "joint_states", qos)
        self.cmd_pub = self.node.create_publisher(
            Float64MultiArray, "velocity_filter/command", qos)
        self.lock = threading.Lock()
        # (DDS receive stamp, DDS source stamp = the node's publish, ns; all zeros)
        self.outputs: list[tuple[int, int, bool]] = []
        with_info = hasattr(Subscription, "CallbackType")  # rclpy passes MessageInfo (Iron+)
        cb: Any = (lambda m, i: self._on_output(m, i)) if with_info else self._on_output
        self.node.create_subscription(
            Float64MultiArray, "forward_velocity_controller/commands", cb, qos)
        self.state_mode = "on"  # "on" | "off" | "nan" (one NaN state, then off)
        self.last_state_ns = 0
        self.nan_ns = 0
        self.rounds = 0  # publisher rounds completed
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._spin, daemon=True),
                        threading.Thread(target=self._publish, daemon=True)]
        for t in self.threads:
            t.start()
        self._JointState = JointState
        self._Float64MultiArray = Float64MultiArray

    def _on_output(self, msg: Any, info: Optional[dict[str, Any]] = None) -> None:
        t = time.time_ns()
        if info and info.get("received_timestamp"):
            t = int(info["received_timestamp"])  # DDS delivery, before this executor
        src = int(info.get("source_timestamp") or t) if info else t
        zero = all(v == 0.0 for v in msg.data)
        with self.lock:
            self.outputs.append((t, src, zero))

    def _spin(self) -> None:
        with contextlib.suppress(Exception):
            self.exec.spin()

    def _publish(self) -> None:
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        period = 1.0 / PUBLISH_HZ
        cmd = Float64MultiArray()
        cmd.data = [COMMAND] + [0.0] * (len(self.names) - 1)
        good = [0.0] * len(self.names)
        bad = [math.nan] + [0.0] * (len(self.names) - 1)
        t0 = time.perf_counter()
        k = 0
        while not self.stop.is_set():
            time.sleep(max(0.0, t0 + k * period - time.perf_counter()))
            k += 1
            with self.lock:
                mode = self.state_mode
                if mode == "nan":
                    self.state_mode = "off"
            if mode != "off":
                js = JointState()
                js.header.stamp = self.node.get_clock().now().to_msg()
                js.name = self.names
                js.position = good if mode == "on" else bad
                self.js_pub.publish(js)
                with self.lock:
                    if mode == "on":
                        self.last_state_ns = time.time_ns()
                    else:
                        self.nan_ns = time.time_ns()
            self.cmd_pub.publish(cmd)
            with self.lock:
                self.rounds += 1

    def set_states(self, mode: str) -> None:
        """Switch the joint states; returns once the publisher thread acted on it (a round
        that read the old mode has finished: the times of the last states are final)."""
        with self.lock:
            self.state_mode = mode
            start = self.rounds
        while not self.stop.is_set():
            with self.lock:
                if self.rounds >= start + 2:
                    return
            time.sleep(0.001)

    def first_output_after(self, t_ns: int, zero: bool, timeout: float
                           ) -> Optional[tuple[int, int]]:
        """(receive, source) stamps of the first output received after ``t_ns`` that is (not)
        all zeros."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [(t, src) for t, src, z in self.outputs[-1000:] if t > t_ns and z == zero]
            if found:
                return min(found)
            time.sleep(0.002)
        return None

    def nonzero_sent_after(self, t_ns: int) -> list[int]:
        """Source stamps of the outputs that are not all zeros, sent after ``t_ns``."""
        with self.lock:
            return [src for _t, src, z in self.outputs if src > t_ns and not z]

    def close(self) -> None:
        import rclpy

        self.stop.set()
        self.threads[1].join(timeout=5.0)  # the publisher, before its context goes
        rclpy.try_shutdown(context=self.ctx)
        self.threads[0].join(timeout=5.0)
        with contextlib.suppress(Exception):
            self.exec.shutdown()
        with contextlib.suppress(Exception):
            self.node.destroy_node()


def _trials(robot: _Robot, n_stale: int, n_nan: int, rng: random.Random) -> dict[str, Any]:
    stale: list[float] = []
    stale_sent: list[float] = []
    nan: list[float] = []
    missed = 0
    late_nonzero = 0
    late_ms = 0.0
    for k in range(n_stale + n_nan):
        kind = "stale" if k < n_stale else "nan"
        robot.set_states("on")
        if robot.first_output_after(time.time_ns(), zero=False, timeout=5.0) is None:
            missed += 1
            continue
        time.sleep(rng.uniform(0.05, 0.15))
        robot.set_states("off" if kind == "stale" else "nan")
        with robot.lock:
            t0 = robot.last_state_ns if kind == "stale" else robot.nan_ns
        got = robot.first_output_after(t0, zero=True, timeout=2.0)
        if got is None:
            missed += 1
            continue
        t_zero, t_sent = got
        (stale if kind == "stale" else nan).append((t_zero - t0) * 1e-9)
        if kind == "stale":
            stale_sent.append((t_sent - t0) * 1e-9)
        time.sleep(0.1)  # zeros must hold while no (valid) state comes
        # nothing but zeros may leave the node once the last valid state it can have
        # received is older than the timeout (5 ms for its delivery)
        deadline = t0 + int((STATE_TIMEOUT if kind == "stale" else 0.0) * 1e9)
        late = robot.nonzero_sent_after(deadline)
        late_nonzero += sum(1 for t in late if t > deadline + int(LATE_S * 1e9))
        late_ms = max([late_ms] + [(t - deadline) * 1e-6 for t in late])
    return {
        "stale_ms_p50": _pct(stale, 50), "stale_ms_p99": _pct(stale, 99),
        "stale_ms_max": _pct(stale, 100),
        "stale_sent_ms_p50": _pct(stale_sent, 50), "stale_sent_ms_p99": _pct(stale_sent, 99),
        "stale_sent_ms_max": _pct(stale_sent, 100),
        "nan_ms_p50": _pct(nan, 50), "nan_ms_p99": _pct(nan, 99), "nan_ms_max": _pct(nan, 100),
        "trials": len(stale) + len(nan), "missed": missed,
        "late_nonzero": late_nonzero, "late_nonzero_max_ms": round(late_ms, 1),
        "stale_target_met": bool(stale) and _pct(stale, 99) <= TARGET_S * 1e3,
    }


def measure(modes: tuple[str, ...] = ("process", "process_rt", "bringup"), n_stale: int = 100,
            n_nan: int = 40, loads: tuple[int, ...] = (0, 2)) -> dict[str, Any]:
    """Run the trials for every mode and number of busy loops; see the module docstring."""
    _ros_environment()
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        return {"failsafe_skipped": f"ROS 2 not importable: {exc}"}
    out: dict[str, Any] = {"target_ms": round(TARGET_S * 1e3, 1), "rate_hz": RATE_HZ,
                           "state_timeout_s": STATE_TIMEOUT}
    rng = random.Random(0)
    for mode in modes:
        ns = f"/failsafe_{uuid.uuid4().hex[:8]}"
        proc = subprocess.Popen(_node_command(mode, ns), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        robot = _Robot(ns)
        try:
            ready = robot.first_output_after(0, zero=False, timeout=120.0)
            if ready is None:
                err = b""
                if proc.poll() is not None and proc.stderr is not None:
                    err = proc.stderr.read()[-2000:]
                out[f"{mode}_error"] = f"no output from the node: {err.decode(errors='replace')}"
                continue
            time.sleep(1.0)
            for busy in loads:
                with _BusyLoops(busy):
                    time.sleep(0.5)
                    res = _trials(robot, n_stale, n_nan, rng)
                for key, value in res.items():
                    out[f"{mode}_{'load' if busy else 'idle'}_{key}"] = value
        finally:
            robot.close()
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    out["loadavg_1min"] = round(os.getloadavg()[0], 2)
    out["cpus"] = os.cpu_count()
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point of ``benchmarks/run.py failsafe``."""
    if quick:
        return measure(("process",), n_stale=12, n_nan=6)
    return measure()


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv)))
