"""robot_collision: collision checking, clearance, avoidance and planning for robot arms.

The core (this package minus :mod:`robot_collision.ros`) is pure numpy/numba and never imports
rclpy. Typical use::

    from robot_collision import RobotModel, CollisionChecker, Box, WorldObject
    robot = RobotModel.from_urdf("arm.urdf")
    checker = CollisionChecker(robot)
    res = checker.check(robot.home_configuration(), world=[WorldObject(Box(0.2, 0.2, 0.2))])
"""

from __future__ import annotations

from pathlib import Path

from .checker import CheckResult, CollisionChecker
from .errors import (
    ConfigurationError,
    GoalInCollisionError,
    GoalUnreachableError,
    MeshError,
    ModelError,
    NoPathFoundError,
    OutsideLimitsError,
    PlanningCancelledError,
    PlanningError,
    RobotCollisionError,
    ShapeError,
    SRDFError,
    StartInCollisionError,
    UnknownNameError,
    URDFError,
)
from .model import JointInfo, RobotModel
from .shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject

__all__ = [
    "RobotModel",
    "JointInfo",
    "CollisionChecker",
    "CheckResult",
    "Shape",
    "Sphere",
    "Capsule",
    "Box",
    "Cylinder",
    "Mesh",
    "WorldObject",
    "RobotCollisionError",
    "ModelError",
    "URDFError",
    "SRDFError",
    "MeshError",
    "ShapeError",
    "UnknownNameError",
    "ConfigurationError",
    "PlanningError",
    "StartInCollisionError",
    "GoalInCollisionError",
    "OutsideLimitsError",
    "GoalUnreachableError",
    "NoPathFoundError",
    "PlanningCancelledError",
    "data_path",
    "default_robot_paths",
]

__version__ = "0.1.0"


def data_path(*parts: str) -> Path:
    """Path of a file shipped with the package (``urdf/``, ``config/``), source or installed."""
    here = Path(__file__).resolve().parent
    for root in (here.parent, here / "data"):
        cand = root.joinpath(*parts)
        if cand.exists():
            return cand
    try:
        from ament_index_python.packages import get_package_share_directory  # type: ignore[import-not-found,unused-ignore]

        return Path(get_package_share_directory("robot_collision")).joinpath(*parts)
    except Exception:
        return here.parent.joinpath(*parts)


def default_robot_paths() -> tuple[Path, Path]:
    """(URDF, SRDF) of the embedded default 7-DoF arm."""
    return data_path("urdf", "default_arm.urdf"), data_path("urdf", "default_arm.srdf")
