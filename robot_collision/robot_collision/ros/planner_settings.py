"""Parameters of the ``planner`` node: the table (defaults, descriptions, constraints), the
validated :class:`PlannerSettings` and the validation of each value."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import ConfigurationError
from ..planning.rrt import MIN_VALIDATION_DISTANCE, RRTOptions
from ..planning.trajectory import DEFAULT_ACCELERATION_LIMIT
from .intake import LIMIT_PARAMETERS, validate_limit_parameter
from .point_clouds import CLOUD_PARAMETERS, CloudSettings, validate_cloud_parameter
from .wiring import COLLISION_KEYS, apply_parameter_values, validate_collision_parameter
from .world import WORLD_PARAMETERS, WORLD_TOPICS, validate_world_parameter

__all__ = ["PARAMETERS", "READ_ONLY", "MAX_TIME_LIMIT", "PlannerSettings", "settings_from_values"]

_DEFAULT_OPTIONS = RRTOptions()

# name: (default, description, constraints)
PARAMETERS: dict[str, tuple[Any, str, str]] = {
    # ---- planner (defaults from RRTOptions)
    "max_connection_distance": (
        float(_DEFAULT_OPTIONS.max_connection_distance),
        "Longest tree extension, joint-space L2 (rad or m); a goal's nonzero value overrides it.",
        "> 0",
    ),
    "validation_distance": (
        float(_DEFAULT_OPTIONS.validation_distance),
        "Edge collision-checking resolution, joint-space L2 (rad or m); 1/32 = 32 checks per "
        "radian. With edge_validation 'certified' only the resolution of the quick pre-check "
        "(the edges returned are certified over their whole length). A goal's nonzero value "
        "overrides it.",
        ">= 1e-06",
    ),
    "edge_validation": (
        _DEFAULT_OPTIONS.edge_validation,
        "'certified': every edge and trajectory piece returned is proven collision-free over "
        "its whole length (conservative advancement); 'discrete': checked at samples "
        "validation_distance apart only (contact between samples possible).",
        "certified | discrete",
    ),
    "min_clearance": (
        float(_DEFAULT_OPTIONS.min_clearance),
        "With edge_validation 'certified': every checked pair keeps at least this padded "
        "distance (m) along every edge, on top of padding.",
        ">= 0",
    ),
    "max_iterations": (
        int(_DEFAULT_OPTIONS.max_iterations),
        "Planner iterations before NO_PATH; a goal's nonzero value overrides it.",
        ">= 1",
    ),
    "enable_connect_heuristic": (
        bool(_DEFAULT_OPTIONS.enable_connect_heuristic),
        "Connect the trees with one straight edge of any length instead of greedy steps.",
        "",
    ),
    "workspace_goal_region_bias": (
        float(_DEFAULT_OPTIONS.workspace_goal_region_bias),
        "Probability of sampling a new goal configuration of a goal region on each start-tree "
        "turn.",
        "[0, 1)",
    ),
    "goal_ik_attempts": (
        int(_DEFAULT_OPTIONS.goal_ik_attempts),
        "IK restarts before GOAL_UNREACHABLE when looking for the first configuration of a "
        "goal region.",
        ">= 1",
    ),
    "max_goal_samples": (
        int(_DEFAULT_OPTIONS.max_goal_samples),
        "Most goal configurations kept for a goal region.",
        ">= 1",
    ),
    "ignore_self_collision": (
        bool(_DEFAULT_OPTIONS.ignore_self_collision),
        "Plan against the world only (robot-robot pairs not checked).",
        "",
    ),
    "seed": (
        -1,
        "Random seed of the planner (same seed and request = same path); -1 = fresh entropy.",
        ">= -1",
    ),
    "default_time_limit": (
        5.0,
        "Planning time limit in seconds for goals whose time_limit is 0.",
        "> 0",
    ),
    "shorten": (
        True,
        "Shorten every path (random shortcutting); goals with shorten=true are shortened "
        "anyway.",
        "",
    ),
    "shorten_iterations": (100, "Shortcut attempts when shortening.", ">= 0"),
    # ---- timing
    "velocity_scaling": (
        1.0,
        "Fraction of the URDF joint velocity limits used for goals whose velocity_scaling is 0.",
        "(0, 1]",
    ),
    "acceleration_scaling": (
        1.0,
        "Fraction of acceleration_limit used for goals whose acceleration_scaling is 0.",
        "(0, 1]",
    ),
    "acceleration_limit": (
        float(DEFAULT_ACCELERATION_LIMIT),
        "Joint acceleration limit in rad/s^2 (m/s^2 for prismatic joints), for every joint "
        "(URDF has no acceleration limits).",
        "> 0",
    ),
    "trajectory_method": (
        "toppra",
        "Time parameterization: 'toppra' (time-optimal spline through the waypoints, checked "
        "for collisions and refined) or 'linear' (straight segments, stop at each waypoint).",
        "toppra | linear",
    ),
    # ---- collision model (same meaning as the collision checker's)
    "skip_rule": (
        "parent",
        "Self pairs never checked: 'parent', 'adjacent' or 'none'; the SRDF's disabled pairs "
        "and skip_pairs are added.",
        "parent | adjacent | none",
    ),
    "skip_pairs": ([], "Extra self pairs never checked, each 'linkA=linkB'.", ""),
    "use_srdf": (True, "Skip the SRDF's disable_collisions pairs.", ""),
    "padding": (0.0, "Safety margin (m) subtracted from every pair's distance.", "finite"),
    "pair_padding": (
        [],
        "Per-pair padding overriding 'padding', each 'bodyA=bodyB:metres'.",
        "each 'a=b:value'",
    ),
    "world_file": (
        "",
        "World objects YAML (path or package://pkg/path; empty = none); see "
        "robot_collision.ros.world.",
        "",
    ),
    **WORLD_PARAMETERS,
    # ---- goals, outputs
    "end_effector": (
        "tool",
        "End-effector link of goal regions whose end_effector is empty, and of the path "
        "marker; empty or unknown = the last link of the model.",
        "",
    ),
    "frame_id": (
        "",
        "Frame of the trajectory header and the markers (empty = the robot base link).",
        "",
    ),
    "stamp_trajectory": (
        False,
        "Stamp the result trajectory with the planning time; false leaves the stamp 0, which "
        "trajectory controllers read as 'start on receipt'.",
        "",
    ),
    "joint_state_timeout": (
        1.0,
        "Seconds a goal without use_start waits for a current joint state (every model joint "
        "fresher than start_state_max_age) before INVALID_GOAL naming the missing or stale "
        "joints.",
        ">= 0",
    ),
    "start_state_max_age": (
        0.5,
        "A start state from joint_states whose oldest joint arrived, or was measured (header "
        "stamp), longer ago than this (s) is stale: the goal waits for a fresh one (at most "
        "joint_state_timeout), then fails with INVALID_GOAL naming the stale joint. Joints are "
        "merged from every publisher.",
        "> 0",
    ),
    "start_limit_tolerance": (
        0.001,
        "A start state from joint_states at most this far (rad or m) outside the joint limits "
        "is clipped into them (encoder noise at a limit); farther is OUTSIDE_LIMITS.",
        ">= 0",
    ),
    "feedback_rate": (10.0, "Maximum feedback rate while planning (Hz).", "> 0"),
    "warm_up": (
        True,
        "After the robot loads, plan once in the background so that the compiled planner "
        "kernels are loaded (or compiled) before the first goal; goals wait for it.",
        "",
    ),
    "ghost_poses": (
        4,
        "Robot poses drawn along the planned path on ~/planned_path (start and goal included; "
        "0 = only the end-effector line).",
        ">= 0",
    ),
    **CLOUD_PARAMETERS,
    # ---- incoming messages
    **LIMIT_PARAMETERS,
}

MAX_TIME_LIMIT = 86400.0
"""Largest accepted goal ``time_limit`` (s)."""

READ_ONLY = ("world_topics", "max_object_extent")


# --------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class PlannerSettings(CloudSettings):
    """Validated parameter values of the node (see :data:`PARAMETERS`)."""

    max_connection_distance: float = float(_DEFAULT_OPTIONS.max_connection_distance)
    validation_distance: float = float(_DEFAULT_OPTIONS.validation_distance)
    edge_validation: str = _DEFAULT_OPTIONS.edge_validation
    min_clearance: float = float(_DEFAULT_OPTIONS.min_clearance)
    max_iterations: int = int(_DEFAULT_OPTIONS.max_iterations)
    enable_connect_heuristic: bool = bool(_DEFAULT_OPTIONS.enable_connect_heuristic)
    workspace_goal_region_bias: float = float(_DEFAULT_OPTIONS.workspace_goal_region_bias)
    goal_ik_attempts: int = int(_DEFAULT_OPTIONS.goal_ik_attempts)
    max_goal_samples: int = int(_DEFAULT_OPTIONS.max_goal_samples)
    ignore_self_collision: bool = bool(_DEFAULT_OPTIONS.ignore_self_collision)
    seed: int = -1
    default_time_limit: float = 5.0
    shorten: bool = True
    shorten_iterations: int = 100
    velocity_scaling: float = 1.0
    acceleration_scaling: float = 1.0
    acceleration_limit: float = float(DEFAULT_ACCELERATION_LIMIT)
    trajectory_method: str = "toppra"
    skip_rule: str = "parent"
    skip_pairs: tuple[tuple[str, str], ...] = ()
    use_srdf: bool = True
    padding: float = 0.0
    pair_padding: tuple[tuple[str, str, float], ...] = ()
    world_file: str = ""
    world_topics: tuple[str, ...] = WORLD_TOPICS
    max_object_extent: float = 100.0
    end_effector: str = "tool"
    frame_id: str = ""
    stamp_trajectory: bool = False
    joint_state_timeout: float = 1.0
    start_state_max_age: float = 0.5
    start_limit_tolerance: float = 0.001
    feedback_rate: float = 10.0
    warm_up: bool = True
    ghost_poses: int = 4
    max_message_bytes: int = LIMIT_PARAMETERS["max_message_bytes"][0]
    max_message_entries: int = LIMIT_PARAMETERS["max_message_entries"][0]
    max_mesh_vertices: int = LIMIT_PARAMETERS["max_mesh_vertices"][0]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigurationError(f"{name} must be finite, got {value!r}")
    return v


def _integer(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ConfigurationError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def _validate_one(name: str, value: Any) -> Any:
    """Validated value of one planner parameter (raises ConfigurationError with the reason)."""
    if name in ("max_connection_distance", "validation_distance", "default_time_limit",
                "acceleration_limit", "feedback_rate"):
        v = _number(value, name)
        if v <= 0:
            raise ConfigurationError(f"{name} must be > 0, got {value!r}")
        if name == "validation_distance" and v < MIN_VALIDATION_DISTANCE:
            raise ConfigurationError(
                f"{name} must be >= {MIN_VALIDATION_DISTANCE:g}, got {value!r}")
        return v
    if name in ("velocity_scaling", "acceleration_scaling"):
        v = _number(value, name)
        if not 0.0 < v <= 1.0:
            raise ConfigurationError(f"{name} must be in (0, 1], got {value!r}")
        return v
    if name == "workspace_goal_region_bias":
        v = _number(value, name)
        if not 0.0 <= v < 1.0:
            raise ConfigurationError(f"{name} must be in [0, 1), got {value!r}")
        return v
    if name == "edge_validation":
        if value not in ("certified", "discrete"):
            raise ConfigurationError(
                f"edge_validation must be 'certified' or 'discrete', got {value!r}")
        return value
    if name == "min_clearance":
        v = _number(value, name)
        if v < 0:
            raise ConfigurationError(f"{name} must be >= 0 m, got {value!r}")
        return v
    if name == "start_state_max_age":
        v = _number(value, name)
        if not v > 0:
            raise ConfigurationError(f"{name} must be > 0 s, got {value!r}")
        return v
    if name in ("joint_state_timeout", "start_limit_tolerance"):
        v = _number(value, name)
        if v < 0:
            raise ConfigurationError(f"{name} must be >= 0, got {value!r}")
        return v
    if name in ("max_iterations", "goal_ik_attempts", "max_goal_samples"):
        return _integer(value, name, 1)
    if name in ("shorten_iterations", "ghost_poses"):
        return _integer(value, name, 0)
    if name == "seed":
        return _integer(value, name, -1)
    if name in ("enable_connect_heuristic", "ignore_self_collision", "shorten",
                "stamp_trajectory", "warm_up"):
        if not isinstance(value, bool):
            raise ConfigurationError(f"{name} must be true or false, got {value!r}")
        return value
    if name == "trajectory_method":
        method = str(value).strip().lower()
        if method not in ("toppra", "linear"):
            raise ConfigurationError(
                f"trajectory_method must be 'toppra' or 'linear', got {value!r}")
        return method
    if name in ("world_file", "end_effector", "frame_id"):
        return str(value).strip()
    if name in WORLD_PARAMETERS:
        return validate_world_parameter(name, value)
    if name in COLLISION_KEYS:
        return validate_collision_parameter(name, value)
    if name in CLOUD_PARAMETERS:
        return validate_cloud_parameter(name, value)
    if name in LIMIT_PARAMETERS:
        return validate_limit_parameter(name, value)
    raise ConfigurationError(f"unknown parameter {name!r}")


def settings_from_values(
    values: dict[str, Any], base: Optional[PlannerSettings] = None, strict: bool = True
) -> tuple[PlannerSettings, list[str]]:
    """Settings from parameter values (missing names keep ``base``'s, default: defaults).

    ``strict``: raise :class:`ConfigurationError` on the first invalid value; otherwise keep the
    base value for it and return the error texts as the second element.
    """
    settings = base or PlannerSettings()
    return apply_parameter_values(settings, values, PARAMETERS, _validate_one, strict)
