"""Goals of the ``planner`` node: the action's error codes, validation of a ``PlanMotion`` goal
into a :class:`PlanRequest`, and the mapping of core errors to error codes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import NDArray

from robot_collision_interfaces.action import PlanMotion

from ..errors import (
    ConfigurationError,
    GoalInCollisionError,
    GoalUnreachableError,
    NoPathFoundError,
    OutsideLimitsError,
    PlanningCancelledError,
    RobotCollisionError,
    StartInCollisionError,
    UnknownNameError,
)
from ..model.robot_model import RobotModel
from ..planning.ik import WorkspaceGoalRegion
from ..planning.rrt import RRTOptions
from .conversions import ConversionError, JointStateMapper, pose_to_matrix
from .planner_settings import MAX_TIME_LIMIT, PlannerSettings

__all__ = [
    "ErrorCode",
    "GoalError",
    "PlanRequest",
    "default_end_effector",
    "error_code_for",
    "parse_goal",
    "rrt_options",
]


class ErrorCode:
    """The ``PlanMotion`` result's ``error_code`` values (mirrors the action's constants)."""

    SUCCESS = int(PlanMotion.Result.SUCCESS)
    START_IN_COLLISION = int(PlanMotion.Result.START_IN_COLLISION)
    GOAL_IN_COLLISION = int(PlanMotion.Result.GOAL_IN_COLLISION)
    OUTSIDE_LIMITS = int(PlanMotion.Result.OUTSIDE_LIMITS)
    GOAL_UNREACHABLE = int(PlanMotion.Result.GOAL_UNREACHABLE)
    NO_PATH = int(PlanMotion.Result.NO_PATH)
    CANCELLED = int(PlanMotion.Result.CANCELLED)
    INVALID_GOAL = int(PlanMotion.Result.INVALID_GOAL)
    PREEMPTED = int(PlanMotion.Result.PREEMPTED)
    INTERNAL_ERROR = int(PlanMotion.Result.INTERNAL_ERROR)

    @classmethod
    def name(cls, code: int) -> str:
        for key, value in vars(cls).items():
            if key.isupper() and value == code:
                return key
        return str(code)


class GoalError(Exception):
    """A goal cannot be served (``code`` is an :class:`ErrorCode`)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def error_code_for(exc: BaseException) -> tuple[int, str]:
    """(error code, message) of an exception raised while serving a goal."""
    if isinstance(exc, GoalError):
        return exc.code, str(exc)
    if isinstance(exc, OutsideLimitsError):
        return ErrorCode.OUTSIDE_LIMITS, str(exc)
    if isinstance(exc, StartInCollisionError):
        return ErrorCode.START_IN_COLLISION, str(exc)
    if isinstance(exc, GoalInCollisionError):
        return ErrorCode.GOAL_IN_COLLISION, str(exc)
    if isinstance(exc, GoalUnreachableError):
        return ErrorCode.GOAL_UNREACHABLE, str(exc)
    if isinstance(exc, NoPathFoundError):
        return ErrorCode.NO_PATH, str(exc)
    if isinstance(exc, PlanningCancelledError):
        return ErrorCode.CANCELLED, str(exc)
    if isinstance(exc, (ConfigurationError, ConversionError, UnknownNameError)):
        return ErrorCode.INVALID_GOAL, f"invalid goal: {exc}"
    if isinstance(exc, RobotCollisionError):
        return ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"
    return ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class PlanRequest:
    """A validated goal: everything the planner needs except (maybe) the start state."""

    goal: Union[NDArray[np.float64], WorkspaceGoalRegion]
    start: Optional[NDArray[np.float64]]  # None = latest joint state
    options: RRTOptions
    time_limit: float
    shorten: bool
    shorten_iterations: int
    velocity_scaling: float
    acceleration_scaling: float
    end_effector: str  # link of the end-effector marker line


def _override(value: float, default: float, name: str, upper: Optional[float] = None) -> float:
    """A goal's option field: 0 = ``default``; otherwise finite and > 0 (and <= ``upper``)."""
    v = float(value)
    if not math.isfinite(v):
        raise ConfigurationError(f"{name} must be finite (0 = default), got {v}")
    if v < 0:
        raise ConfigurationError(f"{name} must be >= 0 (0 = default), got {v}")
    if v == 0:
        return default
    if upper is not None and v > upper:
        raise ConfigurationError(f"{name} must be in (0, {upper}] (0 = default), got {v}")
    return v


def _validation_distance(value: float, settings: PlannerSettings) -> float:
    """A goal may check edges more finely than the ``validation_distance`` parameter, never
    more coarsely (the parameter is the operator's safety resolution)."""
    v = _override(value, settings.validation_distance, "validation_distance")
    if v > settings.validation_distance:
        raise ConfigurationError(
            f"validation_distance {v:g} is coarser than the node's validation_distance "
            f"parameter ({settings.validation_distance:g} rad); goals may only check more "
            "finely (0 = the parameter)")
    return v


def default_end_effector(robot: RobotModel, name: str) -> str:
    if name and name in robot.link_names and name != robot.base_name:
        return name
    return robot.link_names[-1]


def rrt_options(settings: PlannerSettings, **overrides: Any) -> RRTOptions:
    """:class:`RRTOptions` from the node's settings (and explicit overrides)."""
    values: dict[str, Any] = {
        "max_connection_distance": settings.max_connection_distance,
        "validation_distance": settings.validation_distance,
        "max_iterations": settings.max_iterations,
        "enable_connect_heuristic": settings.enable_connect_heuristic,
        "workspace_goal_region_bias": settings.workspace_goal_region_bias,
        "goal_ik_attempts": settings.goal_ik_attempts,
        "max_goal_samples": settings.max_goal_samples,
        "ignore_self_collision": settings.ignore_self_collision,
        "seed": None if settings.seed < 0 else settings.seed,
        "edge_validation": settings.edge_validation,
        "min_clearance": settings.min_clearance,
    }
    values.update(overrides)
    return RRTOptions(**values)


def parse_goal(
    goal: Any,
    robot: RobotModel,
    settings: PlannerSettings,
    mapper: Optional[JointStateMapper] = None,
) -> PlanRequest:
    """Validate a ``PlanMotion.Goal`` against ``robot``; raises :class:`ConfigurationError`,
    :class:`ConversionError` or :class:`UnknownNameError` (all ``INVALID_GOAL``) with the reason.

    Limits and collisions are left to the planner (their own error codes).
    """
    cap = settings.max_message_entries
    for field_name in ("joint_names", "goal_positions", "start_positions"):
        size = len(getattr(goal, field_name))
        if size > cap:
            raise ConfigurationError(
                f"{field_name} has {size:,} entries, above the node's max_message_entries "
                f"parameter ({cap:,})")
    mapper = mapper or JointStateMapper(robot.joint_names)
    names = list(goal.joint_names)
    if not names:
        names = list(robot.joint_names)  # empty joint_names = model order

    def config(values: Sequence[float], what: str) -> NDArray[np.float64]:
        vals = np.asarray(values, dtype=float).reshape(-1)
        if not list(goal.joint_names) and vals.shape[0] != robot.num_joints:
            raise ConversionError(
                f"{what} has {vals.shape[0]} values but joint_names is empty: give "
                f"{robot.num_joints} values in model order ({', '.join(robot.joint_names)}) or "
                "name the joints"
            )
        return mapper.positions(names, vals, allow_unknown=False, what=what)

    region: Optional[WorkspaceGoalRegion] = None
    q_goal: Optional[NDArray[np.float64]] = None
    if goal.use_goal_region:
        ee = str(goal.end_effector).strip() or default_end_effector(robot, settings.end_effector)
        if ee not in robot.link_names:
            raise UnknownNameError(
                f"unknown end_effector {ee!r}; links: {', '.join(robot.link_names)}"
            )
        if ee == robot.base_name:
            raise ConfigurationError(f"end_effector {ee!r} is the base; choose a moving link")
        bounds = np.asarray(goal.goal_region_bounds, dtype=float)
        if bounds.shape != (12,):
            raise ConfigurationError(
                f"goal_region_bounds must have 12 values, got {bounds.shape[0]}"
            )
        if not np.all(np.isfinite(bounds)):
            raise ConfigurationError("goal_region_bounds has non-finite values")
        region = WorkspaceGoalRegion(
            ee,
            pose_to_matrix(goal.reference_pose, "reference_pose"),
            bounds.reshape(6, 2),
            pose_to_matrix(goal.end_effector_offset_pose, "end_effector_offset_pose"),
        )
        marker_ee = ee
    else:
        q_goal = config(goal.goal_positions, "goal_positions")
        marker_ee = default_end_effector(robot, settings.end_effector)
    start = config(goal.start_positions, "start_positions") if goal.use_start else None

    max_iter = int(goal.max_iterations)
    if max_iter < 0:
        raise ConfigurationError(f"max_iterations must be >= 0 (0 = default), got {max_iter}")
    options = rrt_options(
        settings,
        max_connection_distance=_override(
            goal.max_connection_distance, settings.max_connection_distance,
            "max_connection_distance"),
        validation_distance=_validation_distance(goal.validation_distance, settings),
        max_iterations=max_iter or settings.max_iterations,
    )
    target: Union[NDArray[np.float64], WorkspaceGoalRegion]
    target = region if region is not None else q_goal  # type: ignore[assignment]
    return PlanRequest(
        goal=target,
        start=start,
        options=options,
        time_limit=_override(goal.time_limit, settings.default_time_limit, "time_limit",
                             MAX_TIME_LIMIT),
        shorten=bool(goal.shorten) or settings.shorten,
        shorten_iterations=settings.shorten_iterations,
        velocity_scaling=_override(
            goal.velocity_scaling, settings.velocity_scaling, "velocity_scaling", 1.0),
        acceleration_scaling=_override(
            goal.acceleration_scaling, settings.acceleration_scaling, "acceleration_scaling", 1.0),
        end_effector=marker_ee,
    )
