"""Node wiring shared by the nodes: parameter tables, start-up settings, world file, checkers.

Each node describes its parameters in a ``PARAMETERS`` table (``name: (default, description,
constraints)``) and validates values with its own ``settings_from_values(values, strict)``,
which returns a frozen settings dataclass and the texts of the invalid values. The helpers here
are the part the nodes share: declare the table (dynamically typed, so that a mistyped value in
a parameter file is reported by the node instead of aborting it), read the values in force, and
bring a node up with the valid values and its world file.
"""

from __future__ import annotations

import array
import contextlib
import math
from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from typing import Any, Protocol, TypeVar, Union

from ..collision.checker import CollisionChecker, SkipRule
from ..errors import ConfigurationError, RobotCollisionError
from ..model.robot_model import RobotModel
from .world import WorldModel

__all__ = [
    "COLLISION_KEYS",
    "CollisionSettings",
    "apply_parameter_values",
    "declare_parameter_table",
    "finite_float",
    "NUMBER_LIST_PARAMETERS",
    "make_checker",
    "parameter_values",
    "parse_pair",
    "parse_pair_padding",
    "plain_value",
    "start_up_settings",
    "string_entries",
    "type_empty_list",
    "validate_collision_parameter",
]

SettingsT = TypeVar("SettingsT")
ParameterTable = Mapping[str, tuple[Any, str, str]]


def apply_parameter_values(
    settings: SettingsT,
    values: Mapping[str, Any],
    names: Container[str],
    validate_one: Callable[[str, Any], Any],
    strict: bool = True,
) -> tuple[SettingsT, list[str]]:
    """``settings`` (a dataclass) with the valid ``values`` of the parameters in ``names``
    applied (validated by ``validate_one(name, value)``); others are ignored.

    ``strict``: raise :class:`ConfigurationError` on the first invalid value; otherwise keep the
    current value for it and return the error texts as the second element.
    """
    errors: list[str] = []
    changes: dict[str, Any] = {}
    for name, value in values.items():
        if name not in names:
            continue
        try:
            changes[name] = validate_one(name, plain_value(value))
        except ConfigurationError as exc:
            if strict:
                raise
            errors.append(f"{exc}; using {getattr(settings, name)!r}")
    return replace(settings, **changes), errors  # type: ignore[type-var]


def declare_parameter_table(
    node: Any,
    table: ParameterTable,
    read_only: Container[str] = (),
) -> None:
    """Declare every ``name: (default, description, constraints)`` of ``table`` on ``node``,
    with dynamic typing (a mistyped value in a parameter file must not abort the node; values
    are validated by the node) and ``read_only`` for the names in ``read_only``."""
    from rcl_interfaces.msg import ParameterDescriptor  # type: ignore[import-untyped,unused-ignore]

    for name, (default, text, constraints) in table.items():
        node.declare_parameter(
            name,
            default,
            ParameterDescriptor(
                description=text,
                additional_constraints=constraints,
                dynamic_typing=True,
                read_only=name in read_only,
            ),
        )
        if isinstance(default, (list, tuple)) and len(default) == 0:
            type_empty_list(node, name)


NUMBER_LIST_PARAMETERS = frozenset({"acceleration_limits", "weights", "initial_positions"})
"""List parameters of numbers; every other list parameter holds strings."""


def type_empty_list(node: Any, name: str) -> None:
    """Give an empty list parameter its element type. rclpy types a value ``[]`` as a byte
    array: ``ros2 param describe`` then says "byte array", ``ros2 param set`` of a string list
    onto it needs the dynamic typing, and a dump/reuse round trip does not show what belongs
    there. A parameter file's non-empty value is left as it is."""
    from rclpy.parameter import Parameter  # type: ignore[import-untyped,unused-ignore]

    current = node.get_parameter(name)
    if current.type_ not in (Parameter.Type.BYTE_ARRAY, Parameter.Type.NOT_SET):
        return
    if current.value is not None and len(current.value) != 0:
        return
    kind = (Parameter.Type.DOUBLE_ARRAY if name in NUMBER_LIST_PARAMETERS
            else Parameter.Type.STRING_ARRAY)
    typed = Parameter(name, kind, [])
    with contextlib.suppress(Exception):  # a callback refusing it leaves the byte array
        result = node.set_parameters([typed])
        if not result[0].successful and getattr(node, "_parameters", None) is not None:
            # read-only parameters refuse every set: same value, only the type is given (rclpy
            # keeps the declared parameters in Node._parameters, Humble to Kilted)
            node._parameters[name] = typed
            descriptor = node._descriptors.get(name)
            if descriptor is not None and descriptor.dynamic_typing:
                descriptor.type = kind.value  # what `ros2 param describe` shows


def plain_value(value: Any) -> Any:
    """A parameter value as the validators expect it: rclpy hands double and integer arrays
    over as ``array.array`` (``ros2 param set /velocity_filter acceleration_limits '[5.0]'``),
    byte arrays as lists of ``bytes``; both become lists (an empty byte array: ``[]``)."""
    if isinstance(value, array.array):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)) and len(value) == 0:
        return []
    return value


def parameter_values(node: Any, table: ParameterTable) -> dict[str, Any]:
    """The value in force of every parameter of ``table`` (its default where unset)."""
    out: dict[str, Any] = {}
    for name, (default, _, _) in table.items():
        try:
            value = node.get_parameter(name).value
        except Exception:
            value = None
        out[name] = default if value is None else value
    return out


def start_up_settings(
    node: Any,
    table: ParameterTable,
    settings_from_values: Callable[..., tuple[SettingsT, list[str]]],
    world: WorldModel,
    read_only: Container[str] = (),
) -> SettingsT:
    """Declare ``table`` on ``node`` and return its settings: invalid values are logged and
    replaced by their defaults; the ``world_file`` setting's objects are loaded into ``world``
    (when it cannot be loaded, the error is logged and ``world_file`` is cleared)."""
    declare_parameter_table(node, table, read_only)
    settings, errors = settings_from_values(parameter_values(node, table), strict=False)
    log = node.get_logger()
    for err in errors:
        log.error(f"invalid parameter: {err}")
    world.max_extent = float(getattr(settings, "max_object_extent", world.max_extent))
    path = getattr(settings, "world_file", "")
    if path:
        try:
            ids = world.use_file(path)
            log.info(f"world file {path!r}: {len(ids)} objects {ids}")
        except RobotCollisionError as exc:
            log.error(f"world_file not loaded: {exc}")
            settings = replace(settings, world_file="")  # type: ignore[type-var]
    return settings


# --------------------------------------------------------------------------- values
def finite_float(value: Any, name: str) -> float:
    """``value`` as a finite float (raises :class:`ConfigurationError` naming ``name``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigurationError(f"{name} must be finite, got {value!r}")
    return v


def string_entries(value: Any, name: str) -> list[str]:
    """Non-blank entries of a string-array parameter."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return []
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{name} must be a list of strings, got {value!r}")
    return [v for v in value if v.strip()]


# --------------------------------------------------------------------------- collision settings
COLLISION_KEYS = ("skip_rule", "skip_pairs", "use_srdf", "padding", "pair_padding")
"""Parameters that configure a node's :class:`CollisionChecker` (checker and planner nodes)."""


class CollisionSettings(Protocol):
    """What :func:`make_checker` reads from a node's settings (validated values)."""

    @property
    def skip_rule(self) -> str: ...
    @property
    def skip_pairs(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def use_srdf(self) -> bool: ...
    @property
    def padding(self) -> float: ...
    @property
    def pair_padding(self) -> tuple[tuple[str, str, float], ...]: ...


def parse_pair(text: str, what: str = "pair") -> tuple[str, str]:
    """``'a=b'`` → ``('a', 'b')`` (whitespace stripped)."""
    a, sep, b = str(text).partition("=")
    a, b = a.strip(), b.strip()
    if not sep or not a or not b or "=" in b:
        raise ConfigurationError(f"{what} {text!r} must be 'nameA=nameB'")
    return a, b


def parse_pair_padding(text: str) -> tuple[str, str, float]:
    """``'a=b:0.05'`` → ``('a', 'b', 0.05)``."""
    pair, sep, value = str(text).rpartition(":")
    if not sep:
        raise ConfigurationError(f"pair_padding entry {text!r} must be 'bodyA=bodyB:metres'")
    a, b = parse_pair(pair, "pair_padding entry")
    try:
        v = float(value)
    except ValueError:
        raise ConfigurationError(
            f"pair_padding entry {text!r}: {value.strip()!r} is not a number of metres"
        ) from None
    if not math.isfinite(v):
        raise ConfigurationError(f"pair_padding entry {text!r} must have a finite value")
    return a, b, v


def validate_collision_parameter(name: str, value: Any) -> Any:
    """Validated value of one of :data:`COLLISION_KEYS` (raises ConfigurationError)."""
    if name == "skip_rule":
        rule = str(value).strip().lower()
        if rule not in ("parent", "adjacent", "none"):
            raise ConfigurationError(
                f"skip_rule must be 'parent', 'adjacent' or 'none', got {value!r}"
            )
        return rule
    if name == "skip_pairs":
        return tuple(parse_pair(v, "skip_pairs entry") for v in string_entries(value, name))
    if name == "pair_padding":
        return tuple(parse_pair_padding(v) for v in string_entries(value, name))
    if name == "padding":
        return finite_float(value, name)
    if name == "use_srdf":
        if not isinstance(value, bool):
            raise ConfigurationError(f"{name} must be true or false, got {value!r}")
        return value
    raise ConfigurationError(f"unknown collision parameter {name!r}")


def _rule_pairs(robot: RobotModel, rule: str) -> list[tuple[str, str]]:
    """The pairs the core skips for a named rule (so that extra pairs can be added)."""
    if rule == "parent":
        return [(b, p) for b in robot.body_names if (p := robot.parent_of[b]) is not None]
    if rule == "adjacent":
        chain = [robot.base_name, *robot.body_names]
        return [(chain[i], chain[i + 1]) for i in range(len(chain) - 1)]
    return []


def make_checker(robot: RobotModel, settings: CollisionSettings) -> CollisionChecker:
    """A :class:`CollisionChecker` configured by ``settings`` (raises on names unknown to the
    robot)."""
    skip: SkipRule
    if settings.skip_rule == "parent" and not settings.skip_pairs:
        skip = "parent"
    elif settings.skip_rule == "adjacent" and not settings.skip_pairs:
        skip = "adjacent"
    else:
        skip = _rule_pairs(robot, settings.skip_rule) + list(settings.skip_pairs)
    padding: Union[float, dict[tuple[str, str], float]] = settings.padding
    if settings.pair_padding:
        padding = {(a, b): v for a, b, v in settings.pair_padding}
        padding[("*", "*")] = settings.padding
    return CollisionChecker(robot, skip=skip, padding=padding, use_srdf=settings.use_srdf)
