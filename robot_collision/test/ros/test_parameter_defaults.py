"""A node's settings dataclass holds the same defaults as its parameter table: a node started
without parameters (table defaults, declared) and a settings object built in code (dataclass
defaults, e.g. by a test or an embedding application) must behave alike."""

from __future__ import annotations

import importlib
from dataclasses import fields
from typing import Any

import pytest

pytest.importorskip("rclpy")

NODES = [("checker_node", "CheckerSettings"), ("filter_settings", "FilterNodeSettings"),
         ("planner_settings", "PlannerSettings"), ("mock_camera", "MockCameraSettings")]


@pytest.mark.parametrize(("module", "cls"), NODES)
def test_settings_defaults_are_the_parameter_defaults(module: str, cls: str) -> None:
    mod: Any = importlib.import_module(f"robot_collision.ros.{module}")
    settings_type = getattr(mod, cls)
    table = {name: entry[0] for name, entry in mod.PARAMETERS.items()}
    from_table, errors = mod.settings_from_values(table, strict=False)
    assert errors == []
    names = [f.name for f in fields(settings_type)]
    # every setting is a parameter, except the filter's options, derived from the others
    assert sorted(set(names) - set(table)) == ([] if cls != "FilterNodeSettings" else ["options"])
    default = settings_type()
    assert [(n, getattr(default, n)) for n in names] == [(n, getattr(from_table, n)) for n in names]


def test_filter_settings_built_in_code_are_validated() -> None:
    """``FilterNodeSettings`` built in code derives its filter options at construction, so
    inconsistent values fail there with a typed error, as they do from parameters; consistent
    ones carry their own values into the options (not ``FilterOptions``' defaults)."""
    from robot_collision.errors import ConfigurationError
    from robot_collision.ros.filter_settings import FilterNodeSettings

    with pytest.raises(ConfigurationError, match="influence_distance_env"):
        FilterNodeSettings(influence_distance_env=0.05, safety_distance_env=0.1)
    s = FilterNodeSettings(max_state_age=0.3, influence_distance_env=0.4, weights=(1.0, 2.0))
    assert s.options.state_timeout == 0.3
    assert s.options.influence_distance_env == 0.4
    assert s.options.weights == (1.0, 2.0)
