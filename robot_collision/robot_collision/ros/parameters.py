"""Parameter tables of the nodes: declaration, reading, validation and the world file.

Each node describes its parameters in a ``PARAMETERS`` table (``name: (default, description,
constraints)``) and validates values with its own ``settings_from_values(values, strict)``,
which returns a frozen settings dataclass and the texts of the invalid values. The helpers here
are the part the nodes share: declare the table (dynamically typed, so that a mistyped value in
a parameter file is reported by the node instead of aborting it), read the values in force, and
bring a node up with the valid values and its world file.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from ..errors import ConfigurationError, RobotCollisionError
from .world import WorldModel

__all__ = [
    "apply_parameter_values",
    "declare_parameter_table",
    "parameter_values",
    "start_up_settings",
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
            changes[name] = validate_one(name, value)
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
    path = getattr(settings, "world_file", "")
    if path:
        try:
            ids = world.use_file(path)
            log.info(f"world file {path!r}: {len(ids)} objects {ids}")
        except RobotCollisionError as exc:
            log.error(f"world_file not loaded: {exc}")
            settings = replace(settings, world_file="")  # type: ignore[type-var]
    return settings
