"""load_limits.LoadLimits.from_strings: the nodes' 'name=value' overrides of the caps."""

from __future__ import annotations

import pytest

from robot_collision.errors import ConfigurationError
from robot_collision.load_limits import LoadLimits


def test_entries_override_only_the_named_caps() -> None:
    lim = LoadLimits.from_strings(["max_urdf_bytes=20000000", " max_links = 5000",
                                   "default_velocity_limit=0.5"])
    assert lim == LoadLimits(max_urdf_bytes=20_000_000, max_links=5000,
                             default_velocity_limit=0.5)
    assert LoadLimits.from_strings([]) == LoadLimits()


@pytest.mark.parametrize("entry, match", [
    ("max_urdf_bytes", "expected 'name=value'"),
    ("max_teeth=3", "expected 'name=value'"),
    ("max_links=1.5", "positive integer"),
    ("max_links=-3", "positive integer"),
    ("max_links=nan", "positive integer"),
    ("max_links=ten", "positive integer"),
    ("default_velocity_limit=inf", "positive number"),
])
def test_bad_entries_are_configuration_errors(entry: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        LoadLimits.from_strings([entry])
