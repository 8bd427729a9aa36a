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
from typing import TYPE_CHECKING

from ._compat import check_versions as _check_versions

_check_versions()  # missing or unusable numpy / numba / scipy / lxml: ImportError with the fix

from .errors import (  # noqa: E402
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

if TYPE_CHECKING:  # imported lazily at run time (see __getattr__ below)
    from .collision.checker import CheckResult, CollisionChecker
    from .control.velocity_filter import FilterOptions, VelocityFilter
    from .geometry.point_cloud import OccupancyMap, PointCloud
    from .geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject
    from .geometry.transforms import make_pose
    from .model.robot_model import JointInfo, RobotModel
    from .planning.ik import WorkspaceGoalRegion
    from .planning.rrt import BiRRT, RRTOptions

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
    "PointCloud",
    "OccupancyMap",
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
    "BiRRT",
    "RRTOptions",
    "WorkspaceGoalRegion",
    "VelocityFilter",
    "FilterOptions",
    "make_pose",
    "data_path",
    "default_robot_paths",
]

# Everything but the errors is imported on first use: `import robot_collision` (and so every
# console script, whose stop handlers must be in place before numpy, numba and the kernels load:
# robot_collision.ros.entry) costs next to nothing, and a script that only checks collisions
# does not load the planner (and toppra) or the filter's QP solver.
_LAZY = {
    "CheckResult": "robot_collision.collision.checker",
    "CollisionChecker": "robot_collision.collision.checker",
    "Shape": "robot_collision.geometry.shapes",
    "Sphere": "robot_collision.geometry.shapes",
    "Capsule": "robot_collision.geometry.shapes",
    "Box": "robot_collision.geometry.shapes",
    "Cylinder": "robot_collision.geometry.shapes",
    "Mesh": "robot_collision.geometry.shapes",
    "WorldObject": "robot_collision.geometry.shapes",
    "PointCloud": "robot_collision.geometry.point_cloud",
    "OccupancyMap": "robot_collision.geometry.point_cloud",
    "RobotModel": "robot_collision.model.robot_model",
    "JointInfo": "robot_collision.model.robot_model",
    "BiRRT": "robot_collision.planning.rrt",
    "RRTOptions": "robot_collision.planning.rrt",
    "WorkspaceGoalRegion": "robot_collision.planning.ik",
    "VelocityFilter": "robot_collision.control.velocity_filter",
    "FilterOptions": "robot_collision.control.velocity_filter",
    "make_pose": "robot_collision.geometry.transforms",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robot_collision' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

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
