"""The robot_collision nodes as separate processes, for the ROS benchmarks (fuzz, soak).

Each node runs in its own process with the package's parameter file, as ``ros2 launch`` starts
them (``python -m robot_collision.ros.<module>``); :class:`NodeProcesses` starts them, reports
whether each is alive, its resident memory and CPU time (``psutil``), and stops them with
SIGINT (then SIGKILL). Logs go to one file per node. :class:`OutputCheck` judges the velocity
filter's outputs.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Optional

__all__ = ["NODE_MODULES", "NodeProcesses", "OutputCheck", "errors_logged", "frozen_heap",
           "ros_environment", "send_goal", "start_goal", "wait_goal"]

NODE_MODULES = {
    "collision_checker": "robot_collision.ros.checker_node",
    "velocity_filter": "robot_collision.ros.filter_node",
    "planner": "robot_collision.ros.planner_node",
    "mock_arm": "robot_collision.ros.mock_arm",
}


def ros_environment() -> None:
    """Discovery on this machine, logs in the temp folder, a random domain (unless set)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", os.path.join(tempfile.gettempdir(),
                                                      "robot_collision_roslog"))
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once, then keep the objects that exist now out of the garbage collector's scans
    (``gc.freeze``) until the block ends. This process times the nodes: in a long pytest session
    a full collection of its heap can stop it (and its relays, probes and executors) for a few
    hundred ms, which would be charged to the nodes."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _ros_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class NodeProcesses:
    """Start ``names`` (keys of :data:`NODE_MODULES`) as processes; ``overrides`` maps a node
    name to extra parameters (``-p name:=value``)."""

    def __init__(self, names: Iterable[str], overrides: Optional[Mapping[str, Mapping[str, Any]]]
                 = None, log_dir: Optional[str] = None, robot_from_parameters: bool = True
                 ) -> None:
        from robot_collision import data_path, default_robot_paths

        self.names = list(names)
        self.params_file = str(data_path("config", "robot_collision.yaml"))
        self.urdf, self.srdf = (str(p) for p in default_robot_paths())
        self.overrides = {k: dict(v) for k, v in (overrides or {}).items()}
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="rc_nodes_"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.robot_from_parameters = robot_from_parameters  # else the robot_description topic
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._ps: dict[str, Any] = {}

    def start(self) -> None:
        import psutil

        for name in self.names:
            robot = ({"urdf_path": self.urdf, "srdf_path": self.srdf}
                     if self.robot_from_parameters else {})
            params = {**robot, **self.overrides.get(name, {})}
            cmd = [sys.executable, "-m", NODE_MODULES[name], "--ros-args",
                   "--params-file", self.params_file]
            for key, value in params.items():
                cmd += ["-p", f"{key}:={_ros_value(value)}"]
            log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 (closed by the child)
            self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            self._ps[name] = psutil.Process(self.procs[name].pid)

    def alive(self, name: str) -> bool:
        return self.procs[name].poll() is None

    def rss_mb(self, name: str) -> float:
        """Resident memory in MB (nan when the process is gone)."""
        try:
            return float(self._ps[name].memory_info().rss) / 1e6
        except Exception:
            return float("nan")

    def uss_mb(self, name: str) -> float:
        """Unique (private) memory in MB: RSS without the pages shared with other processes,
        e.g. DDS shared-memory segments (nan when the process is gone)."""
        try:
            return float(self._ps[name].memory_full_info().uss) / 1e6
        except Exception:
            return float("nan")

    def cpu_seconds(self, name: str) -> float:
        """User + system CPU time so far (nan when the process is gone)."""
        try:
            t = self._ps[name].cpu_times()
            return float(t.user + t.system)
        except Exception:
            return float("nan")

    def log_text(self, name: str) -> str:
        try:
            return (self.log_dir / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def wait_for_log(self, name: str, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text(name):
                return True
            if not self.alive(name):
                return False
            time.sleep(0.2)
        return False

    def stop(self, timeout: float = 15.0) -> dict[str, Optional[int]]:
        """SIGINT every node, wait, SIGKILL what is left; returns the exit codes."""
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
            if p.poll() is None:
                p.kill()
                p.wait(5.0)
        return {n: p.returncode for n, p in self.procs.items()}


class OutputCheck:
    """Counts filter outputs (``Float64MultiArray``) that break the filter's promises: non-finite
    values, a joint over its velocity limit ``vmax`` (n,), or non-zero values in an output that
    carries a fault (empty layout). Thread-safe."""

    def __init__(self, vmax: Any) -> None:
        import threading

        import numpy as np

        self._np = np
        self.vmax = np.asarray(vmax, dtype=float)
        self.lock = threading.Lock()
        self.counts = {"checked": 0, "non_finite": 0, "over_limit": 0, "nonzero_on_fault": 0}

    def check(self, data: Any, has_layout: bool) -> None:
        np = self._np
        v = np.asarray(data, dtype=float)
        with self.lock:
            c = self.counts
            c["checked"] += 1
            if not np.all(np.isfinite(v)):
                c["non_finite"] += 1
            elif v.shape == self.vmax.shape and np.any(
                    np.abs(v) > self.vmax * (1 + 1e-9) + 1e-12):
                c["over_limit"] += 1
            if not has_layout and np.any(v != 0.0):
                c["nonzero_on_fault"] += 1

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)


def errors_logged(text: str) -> int:
    """Lines of a node log at ERROR or FATAL level."""
    return sum(1 for line in text.splitlines() if line.startswith(("[ERROR]", "[FATAL]")))


def start_goal(executor: Any, client: Any, goal: Any,
               accepted: Optional[list[float]] = None) -> Any:
    """Send ``goal`` with the ActionClient ``client`` without waiting: returns the executor task,
    whose result is ``(result message or None when rejected, time.monotonic() of the result's
    arrival)``; ``accepted`` (if given) gets the time.monotonic() of the goal response's arrival
    appended. Called from any thread while another thread spins ``executor``: the client's
    calls run as a task in the executor's thread, because rclpy's ActionClient (Jazzy wheels,
    Humble) files a request's sequence number only after sending it, and a spinning thread that
    takes the reply first drops it, so the future never completes (ros2/rclpy#1123; CI saw fast
    INVALID_GOAL results never arrive)."""

    async def run() -> Any:
        handle = await client.send_goal_async(goal)
        if accepted is not None:
            accepted.append(time.monotonic())
        if not handle.accepted:
            return None, time.monotonic()
        response = await handle.get_result_async()
        return response.result, time.monotonic()

    return executor.create_task(run)


def wait_goal(task: Any, timeout: float) -> tuple[Any, float]:
    """Wait up to ``timeout`` s for a :func:`start_goal` task: ``(result or None, arrival)``."""
    deadline = time.monotonic() + timeout
    while not task.done() and time.monotonic() < deadline:
        time.sleep(0.002)
    return task.result() if task.done() else (None, time.monotonic())


def send_goal(executor: Any, client: Any, goal: Any, timeout: float) -> Any:
    """Send ``goal`` (:func:`start_goal`) and return its result message (None when rejected or
    after ``timeout`` s)."""
    return wait_goal(start_goal(executor, client, goal), timeout)[0]
