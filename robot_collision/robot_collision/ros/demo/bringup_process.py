"""The system under demonstration: the bring-up (all nodes) as a child process and its
parameter file."""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, Optional

# ----------------------------------------------------------------------------- bring-up
CAMERA_WORLD = "package://robot_collision/config/demo_camera_world.yaml"
"""Objects only the demo's mock camera knows (step 5)."""
CAMERA_TOPIC = "mock_camera/points"
"""The camera's cloud topic, relative (resolved in the demo's namespace)."""
CAMERA_POSE = (1.2, 0.3, 1.5, -0.6363, -0.71091, 0.22319, 0.19977)
"""The demo camera's pose: 1.5 m up in front of the arm, looking down at (0.3, 0.2, 0.2), so
that it sees the box's top at 40 degrees (a grazing view samples a face sparsely)."""
CLOUD_POINT_RADIUS = 0.01
"""Smallest ball radius (m) around the demo's sensed points (``cloud_point_radius``): covers the
camera's depth noise (2 mm standard deviation) with room; where the pixels are farther apart
the nodes give larger balls (robot_collision.geometry.sensed_surface)."""

def write_demo_params(
    path: Path, source: Optional[Path] = None
) -> tuple[dict[str, Any], list[str]]:
    """Write the bring-up parameter file of the demo to ``path``: the package's
    ``config/robot_collision.yaml`` (or ``source``) with every node of the bring-up enabled and,
    where a node that takes a world has none, the collision checker's ``world_file``.

    Returns (the parameter data, notes on what was changed).
    """
    import yaml

    from ..bringup import NODE_REGISTRY, default_params_file, load_params_file

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
    # step 5: a box only the mock camera knows; the other nodes take its clouds
    camera = data.setdefault("mock_camera", {}).setdefault("ros__parameters", {})
    if not str(camera.get("world_file") or "").strip():
        camera["world_file"] = CAMERA_WORLD
        notes.append(f"mock_camera.world_file: {CAMERA_WORLD!r} (objects only the camera sees)")
    # the demo's camera pose, whatever the source file says: the camera renders from it and
    # the other nodes place its clouds with it (camera_poses below)
    if [float(v) for v in camera.get("camera_pose") or []] != list(CAMERA_POSE):
        camera["camera_pose"] = list(CAMERA_POSE)
        notes.append(f"mock_camera.camera_pose: the demo's {list(CAMERA_POSE)}")
    pose = " ".join(str(float(v)) for v in camera["camera_pose"])
    for name in ("collision_checker", "velocity_filter", "planner"):
        section = data.setdefault(name, {}).setdefault("ros__parameters", {})
        if not section.get("point_cloud_topics"):
            section["point_cloud_topics"] = [CAMERA_TOPIC]
            section["camera_poses"] = [f"{CAMERA_TOPIC}={pose}"]
            section["cloud_max_age"] = 2.0
            section["cloud_point_radius"] = CLOUD_POINT_RADIUS
            notes.append(f"{name}: point cloud topic {CAMERA_TOPIC!r}")
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
