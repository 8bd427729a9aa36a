"""Loader for the MotionBenchMaker Panda problems in ``../shared/benchmarks/panda_mbm``.

Benchmark convention (see that folder's README): cylinders are capsules except in the ``box``
set, where they are boxes of half extents (r, r, length/2); obstacle poses are in the robot base
frame; orientation = Rz * Ry * Rx of ``orientation_euler_xyz`` (we use the quaternion).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from robot_collision import Box, Capsule, RobotModel, Sphere, WorldObject
from robot_collision.geometry.transforms import pose_from_position_quat

MBM_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks" / "panda_mbm"


def available() -> bool:
    return (MBM_DIR / "problems.json").is_file()


def load_problems() -> dict[str, Any]:
    with open(MBM_DIR / "problems.json", encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def panda(srdf: bool = True) -> RobotModel:
    """The 59-sphere Panda (with the SRDF's disabled pairs unless ``srdf=False``)."""
    return RobotModel.from_urdf(
        MBM_DIR / "panda_spherized.urdf", srdf=(MBM_DIR / "panda.srdf") if srdf else None
    )


def world_of(problem: dict[str, Any], set_name: str) -> list[WorldObject]:
    """World objects of one problem under the benchmark convention."""
    out: list[WorldObject] = []
    for b in problem.get("box", []):
        hx, hy, hz = b["half_extents"]
        pose = pose_from_position_quat(b["position"], b["orientation_quat_xyzw"])
        out.append(WorldObject(Box(2 * hx, 2 * hy, 2 * hz), pose, b["name"]))
    for c in problem.get("cylinder", []):
        pose = pose_from_position_quat(c["position"], c["orientation_quat_xyzw"])
        r, length = c["radius"], c["length"]
        shape = Box(2 * r, 2 * r, length) if set_name == "box" else Capsule(r, length)
        out.append(WorldObject(shape, pose, c["name"]))
    for s in problem.get("sphere", []):
        pose = pose_from_position_quat(s["position"], s["orientation_quat_xyzw"])
        out.append(WorldObject(Sphere(s["radius"]), pose, s["name"]))
    return out
