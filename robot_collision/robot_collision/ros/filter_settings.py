"""Parameters of the ``velocity_filter`` node (:mod:`.filter_node`): the table (defaults,
descriptions, constraints), the validated :class:`FilterNodeSettings` (with the
:class:`~robot_collision.control.velocity_filter.FilterOptions` built from them) and the
validation of each value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from ..control.velocity_filter import FilterOptions
from ..errors import ConfigurationError
from .intake import LIMIT_PARAMETERS, validate_limit_parameter
from .point_clouds import CLOUD_PARAMETERS, CloudSettings, validate_cloud_parameter
from .wiring import apply_parameter_values, parse_pair, string_entries
from .world import WORLD_PARAMETERS, WORLD_TOPICS, validate_world_parameter

__all__ = [
    "PARAMETERS",
    "READ_ONLY",
    "UNCOMMANDED_GROUP",
    "FilterNodeSettings",
    "parse_protection_group",
    "settings_from_values",
]

# internal protection group of the node: model joints not in `joints` (always off)
UNCOMMANDED_GROUP = "__uncommanded__"
_MIN_RATE = 1.0 / FilterOptions().max_dt  # the filter refuses ticks longer than max_dt
_OPTS = FilterOptions()
_UNDERIVED = FilterOptions()  # marks FilterNodeSettings.options as not given

# name: (default, description, constraints)
PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "joints": (
        [],
        "Joint names in the order of the command and output arrays (the forward_command_"
        "controller's 'joints'); empty = every joint of the robot model, in model order. Model "
        "joints not listed are held still. Read at start-up.",
        "names of model joints, no duplicates",
    ),
    "command_topic": ("~/command", "Input command topic (Float64MultiArray). Read at start-up.",
                      "topic name"),
    "output_topic": (
        "forward_velocity_controller/commands",
        "Output topic: the velocity controller's commands topic. Read at start-up.",
        "topic name",
    ),
    "joint_states_topic": ("joint_states", "Joint state topic. Read at start-up.", "topic name"),
    "rate": (
        250.0,
        "Control tick in Hz: at least one output and one status per tick; dt = 1/rate.",
        f">= {_MIN_RATE:g}",
    ),
    "realtime_priority": (
        0,
        "SCHED_FIFO priority (1-99) of the node's control threads: the executor thread that "
        "filters commands and runs the ticks, and the fail-safe watchdog; 0 = normal "
        "scheduling. Needs real-time permission (rtprio in /etc/security/limits.conf, or "
        "CAP_SYS_NICE; refused: a warning, normal priority). Applied to the executor thread "
        "only when the node has a SingleThreadedExecutor of its own (the velocity_filter "
        "executable; bringup's 'isolated'). Keep it below ros2_control's update loop (50).",
        "0-99",
    ),
    "filter_on_command": (
        True,
        "Filter and publish each command as it arrives (lowest latency); false = only on ticks.",
        "",
    ),
    "state_timeout": (
        0.1,
        "Every model joint must have arrived on the joint-state topic within this (s; joints "
        "are merged from every publisher, each joint's newest message counts), else the state "
        "is stale: zeros are published (a dead or stalled publisher).",
        "> 0",
    ),
    "max_state_age": (
        0.5,
        "A joint state measured longer ago than this (s, by its header stamp on the node's "
        "clock, use_sim_time included) is stale: zeros. Younger late states are used with the "
        "motion possible since their stamp (the commands in force over the age) subtracted "
        "from every distance: a late state costs speed, never clearance.",
        "> 0",
    ),
    "stamp_tolerance": (
        0.05,
        "A joint state stamped more than this (s) ahead of the node's clock is refused (a wrong "
        "clock is not a fresh state); within it, it counts as measured on arrival.",
        ">= 0",
    ),
    "allow_layout_change": (
        False,
        "The output layout (joint list and size) is fixed when the first robot model loads; "
        "a later robot description that lacks one of those joints is refused (zeros, a fault "
        "naming it). True: a new description may change the layout (only with a controller "
        "that accepts it).",
        "",
    ),
    "single_command_source": (
        False,
        "Refuse commands (zeros, fault naming the publishers) while more than one node "
        "publishes on command_topic; false: only warn. rclpy does not tell which publisher "
        "sent a message, so commands of the first cannot be told from the others'.",
        "",
    ),
    "skip_pairs": (
        [],
        "Extra self pairs never checked, each 'linkA=linkB' (as the planner's and checker's).",
        "'linkA=linkB', model links",
    ),
    "hold_unreachable_pairs": (
        True,
        "Self pairs closer than safety_distance_self + discrete_margin in every sampled "
        "configuration of the joint ranges (measured at load, logged by name) are held where "
        "they are (never asked to separate, never allowed closer); false: they are constrained "
        "like any pair (and may refuse every command).",
        "",
    ),
    "command_timeout": (
        0.2,
        "A command older than this (s) is dropped and zeros are published (deadman); 0 = a "
        "command stays in force until the next one.",
        ">= 0",
    ),
    "padding": (0.0, "Margin subtracted from every pair's distance (m).", "finite, >= 0"),
    "influence_distance_self": (
        _OPTS.influence_distance_self,
        "Self pairs closer than this (m) are constrained.", "> safety_distance_self + margin"),
    "safety_distance_self": (
        _OPTS.safety_distance_self, "Self pairs never get closer than this (m).", ">= 0"),
    "influence_distance_env": (
        _OPTS.influence_distance_env,
        "Robot-world pairs closer than this (m) are constrained.",
        "> safety_distance_env + margin"),
    "safety_distance_env": (
        _OPTS.safety_distance_env, "Robot-world pairs never get closer than this (m).", ">= 0"),
    "gain": (_OPTS.gain, "Approach speed allowed at the influence distance (m/s).", "> 0"),
    "recovery_speed": (
        _OPTS.recovery_speed,
        "Largest separation speed demanded from a pair inside its safety distance (m/s).", ">= 0"),
    "discrete_margin": (
        _OPTS.discrete_margin,
        "Added to both safety distances inside the filter for discrete-time effects (m).", ">= 0"),
    "joint_limit_margin": (
        _OPTS.joint_limit_margin,
        "Width of the slow-down zone near each position limit (rad or m).", ">= 0"),
    "joint_limit_gain": (
        _OPTS.joint_limit_gain, "Slow-down gain in the joint-limit zone (1 = continuous).", "> 0"),
    "velocity_scale": (
        _OPTS.velocity_scale, "Fraction of the URDF velocity limits used as bounds.", "(0, 1]"),
    "acceleration_limits": (
        [],
        "Joint acceleration limits (rad/s^2, m/s^2; URDF has none): one value for every joint "
        "or one per model joint in model order; empty = none. The output then changes by at "
        "most a/rate per tick and pairs are approached no faster than they can still stop.",
        "positive, 1 or one per model joint",
    ),
    "braking_fraction": (
        _OPTS.braking_fraction,
        "With acceleration_limits: share of a pair's full braking deceleration its stopping "
        "distance is computed with.", "(0, 1]"),
    "state_limit_tolerance": (
        _OPTS.state_limit_tolerance,
        "A joint state farther than this (rad or m) outside a position limit is refused: "
        "zeros (a wrong mapping or model, not the robot).", "> 0"),
    "weights": (
        [],
        "Per-joint weights of the filter's cost, one per model joint in model order; empty = 1.",
        "positive, one per model joint",
    ),
    "protection_groups": (
        [],
        "Extra protection groups for ~/set_protection, each 'name: joint_a, joint_b' (replaces "
        "an SRDF group of the same name).",
        "'name: joints', model joints",
    ),
    "world_file": (
        "",
        "World objects YAML (path or package://pkg/path; empty = none); see "
        "robot_collision.ros.world.",
        "",
    ),
    **WORLD_PARAMETERS,
    **CLOUD_PARAMETERS,
    "cloud_timeout_action": (
        "stop",
        "While a topic of point_cloud_topics has no current cloud (none yet, or older than "
        "cloud_max_age) the scene is unknown: 'stop' publishes zeros (fault 'stale cloud'), "
        "'ignore' filters against the rest of the world.",
        "stop | ignore",
    ),
    **LIMIT_PARAMETERS,
}

READ_ONLY = ("joints", "command_topic", "output_topic", "joint_states_topic", "world_topics",
             "max_object_extent")
_OPTION_NAMES = (
    "influence_distance_self", "safety_distance_self", "influence_distance_env",
    "safety_distance_env", "gain", "recovery_speed", "discrete_margin", "joint_limit_margin",
    "joint_limit_gain", "velocity_scale", "braking_fraction", "state_limit_tolerance",
)


# --------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class FilterNodeSettings(CloudSettings):
    """Validated parameter values of the node (defaults as in :data:`PARAMETERS`)."""

    joints: tuple[str, ...] = ()
    command_topic: str = "~/command"
    output_topic: str = "forward_velocity_controller/commands"
    joint_states_topic: str = "joint_states"
    rate: float = 250.0
    realtime_priority: int = 0
    filter_on_command: bool = True
    state_timeout: float = 0.1
    max_state_age: float = 0.5
    stamp_tolerance: float = 0.05
    allow_layout_change: bool = False
    single_command_source: bool = False
    skip_pairs: tuple[tuple[str, str], ...] = ()
    hold_unreachable_pairs: bool = True
    command_timeout: float = 0.2
    padding: float = 0.0
    influence_distance_self: float = _OPTS.influence_distance_self
    safety_distance_self: float = _OPTS.safety_distance_self
    influence_distance_env: float = _OPTS.influence_distance_env
    safety_distance_env: float = _OPTS.safety_distance_env
    gain: float = _OPTS.gain
    recovery_speed: float = _OPTS.recovery_speed
    discrete_margin: float = _OPTS.discrete_margin
    joint_limit_margin: float = _OPTS.joint_limit_margin
    joint_limit_gain: float = _OPTS.joint_limit_gain
    velocity_scale: float = _OPTS.velocity_scale
    acceleration_limits: tuple[float, ...] = ()
    braking_fraction: float = _OPTS.braking_fraction
    state_limit_tolerance: float = _OPTS.state_limit_tolerance
    weights: tuple[float, ...] = ()
    protection_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    world_file: str = ""
    world_topics: tuple[str, ...] = WORLD_TOPICS
    max_object_extent: float = 100.0
    cloud_timeout_action: str = "stop"
    max_message_bytes: int = LIMIT_PARAMETERS["max_message_bytes"][0]
    max_message_entries: int = LIMIT_PARAMETERS["max_message_entries"][0]
    max_mesh_vertices: int = LIMIT_PARAMETERS["max_mesh_vertices"][0]
    # the filter's options, derived from the fields above (built in ``__post_init__`` when not
    # given; ``replace`` carries the old ones over, so code that changes fields calls
    # :func:`_with_options`, as :func:`settings_from_values` does)
    options: FilterOptions = field(default=_UNDERIVED, compare=False)

    def __post_init__(self) -> None:
        if self.options is _UNDERIVED:
            object.__setattr__(self, "options", _derived_options(self))

    @property
    def period(self) -> float:
        """Tick length in seconds."""
        return 1.0 / self.rate


def parse_protection_group(text: str) -> tuple[str, tuple[str, ...]]:
    """``"wrist: joint5, joint6"`` → ``("wrist", ("joint5", "joint6"))``."""
    name, sep, rest = str(text).partition(":")
    name = name.strip()
    joints = tuple(j.strip() for j in rest.split(",") if j.strip())
    if not sep or not name or not joints:
        raise ConfigurationError(
            f"protection_groups entry {text!r} must be 'name: joint_a, joint_b, ...'")
    if name == UNCOMMANDED_GROUP:
        raise ConfigurationError(f"protection group name {name!r} is reserved")
    if len(set(joints)) != len(joints):
        raise ConfigurationError(f"protection_groups entry {text!r} names a joint twice")
    return name, joints


def _float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigurationError(f"{name} must be finite, got {value!r}")
    return v


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigurationError(f"{name} must be a list of strings, got {value!r}")
    if not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{name} must be a list of strings, got {value!r}")
    return tuple(str(v).strip() for v in value)


def _validate_one(name: str, value: Any) -> Any:
    """Validated value of one parameter (raises ConfigurationError with the reason)."""
    if name == "joints":
        joints = _strings(value, name)
        if any(not j for j in joints):
            raise ConfigurationError("joints must not contain empty names")
        if len(set(joints)) != len(joints):
            raise ConfigurationError(f"joints names a joint twice: {list(joints)}")
        return joints
    if name in ("command_topic", "output_topic", "joint_states_topic"):
        text = str(value).strip()
        if not text:
            raise ConfigurationError(f"{name} must not be empty")
        return text
    if name == "rate":
        v = _float(value, name)
        if v < _MIN_RATE:
            raise ConfigurationError(f"rate must be >= {_MIN_RATE:g} Hz, got {value!r}")
        return v
    if name == "realtime_priority":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
            raise ConfigurationError(
                f"realtime_priority must be an integer 0-99 (0 = normal scheduling), got "
                f"{value!r}")
        return value
    if name in ("filter_on_command", "allow_layout_change", "single_command_source",
                "hold_unreachable_pairs"):
        if not isinstance(value, bool):
            raise ConfigurationError(f"{name} must be true or false, got {value!r}")
        return value
    if name in ("command_timeout", "stamp_tolerance"):
        v = _float(value, name)
        if v < 0:
            raise ConfigurationError(f"{name} must be >= 0 s, got {value!r}")
        return v
    if name in ("state_timeout", "max_state_age"):
        v = _float(value, name)
        if not v > 0:
            raise ConfigurationError(f"{name} must be > 0 s, got {value!r}")
        return v
    if name in ("safety_distance_self", "safety_distance_env"):
        v = _float(value, name)
        if v < 0:
            raise ConfigurationError(
                f"{name} must be >= 0 m, got {value!r} (a negative safety distance allows "
                "penetration; switch a group's protection off to let it touch)")
        return v
    if name == "skip_pairs":
        return tuple(parse_pair(v, "skip_pairs entry") for v in string_entries(value, name))
    if name == "padding":
        v = _float(value, name)
        if v < 0:
            raise ConfigurationError(f"padding must be >= 0 m, got {value!r}")
        return v
    if name in _OPTION_NAMES:
        return _float(value, name)
    if name in ("weights", "acceleration_limits"):
        if value is None:
            return ()
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigurationError(f"{name} must be a list of numbers, got {value!r}")
        return tuple(_float(v, f"{name} entry") for v in value)
    if name == "protection_groups":
        groups = tuple(parse_protection_group(v) for v in _strings(value, name))
        names = [g for g, _ in groups]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"protection_groups defines a group twice: {names}")
        return groups
    if name == "world_file":
        return str(value).strip()
    if name in WORLD_PARAMETERS:
        return validate_world_parameter(name, value)
    if name in CLOUD_PARAMETERS:
        return validate_cloud_parameter(name, value)
    if name == "cloud_timeout_action":
        if value not in ("stop", "ignore"):
            raise ConfigurationError(
                f"cloud_timeout_action must be 'stop' or 'ignore', got {value!r}")
        return value
    if name in LIMIT_PARAMETERS:
        return validate_limit_parameter(name, value)
    raise ConfigurationError(f"unknown parameter {name!r}")


def _derived_options(settings: FilterNodeSettings) -> FilterOptions:
    """The filter options that ``settings``' fields give (raises ConfigurationError when
    inconsistent)."""
    return FilterOptions(
        **{n: getattr(settings, n) for n in _OPTION_NAMES},
        state_timeout=settings.max_state_age,
        weights=settings.weights or None,
        acceleration_limits=settings.acceleration_limits or None,
    )


def _with_options(settings: FilterNodeSettings) -> FilterNodeSettings:
    """``settings`` with ``options`` rebuilt (raises ConfigurationError when inconsistent)."""
    return replace(settings, options=_derived_options(settings))


def settings_from_values(
    values: dict[str, Any], base: Optional[FilterNodeSettings] = None, strict: bool = True
) -> tuple[FilterNodeSettings, list[str]]:
    """Settings from parameter values (missing names keep ``base``'s, default: defaults).

    ``strict``: raise :class:`ConfigurationError` on the first invalid value (or inconsistent
    filter options); otherwise keep the base value for it and return the error texts.
    """
    settings = base or FilterNodeSettings()
    new, errors = apply_parameter_values(settings, values, PARAMETERS, _validate_one, strict)
    try:
        return _with_options(new), errors
    except ConfigurationError as exc:
        if strict:
            raise
        names = [n for n in values
                 if n in _OPTION_NAMES or n in ("weights", "acceleration_limits",
                                                "max_state_age")]
        errors.append(f"{exc}; using the previous values of {names}")
        return _with_options(replace(new, **{n: getattr(settings, n) for n in names})), errors
