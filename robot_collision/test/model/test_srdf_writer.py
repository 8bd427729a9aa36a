"""Writing and merging generated disable_collisions entries."""

from __future__ import annotations

import pytest

from robot_collision import SRDFError
from robot_collision.model.srdf_writer import srdf_with_disabled_pairs
from robot_collision.model.urdf import parse_srdf
from robot_collision.safe_xml import parse_xml

EXISTING = """<?xml version="1.0"?>
<robot name="arm">
  <group name="arm"><chain base_link="a" tip_link="c"/></group>
  <disable_collisions link1="a" link2="b" reason="Adjacent"/>
  <disable_collisions link1="c" link2="a" reason="User"/>
  <group_state name="home" group="arm"><joint name="j1" value="0.5"/></group_state>
</robot>
"""


def test_new_srdf() -> None:
    text, added = srdf_with_disabled_pairs(
        "arm", [("a", "b", "Adjacent"), ("b", "c", "Never"), ("c", "b", "Never")], comment="gen"
    )
    assert added == 2  # (c, b) repeats (b, c)
    root = parse_xml(text, "SRDF", SRDFError)
    assert root.get("name") == "arm"
    rows = [(e.get("link1"), e.get("link2"), e.get("reason")) for e in root]
    assert rows == [("a", "b", "Adjacent"), ("b", "c", "Never")]
    assert parse_srdf(text, ["a", "b", "c"]).disabled_pairs == [("a", "b"), ("b", "c")]


def test_merge_keeps_everything_and_adds_missing_pairs() -> None:
    text, added = srdf_with_disabled_pairs(
        "ignored",
        [("b", "a", "Adjacent"), ("a", "c", "Never"), ("b", "c", "Default")],
        existing=EXISTING,
        comment="generated",
    )
    assert added == 1  # only (b, c) is new
    desc = parse_srdf(text, ["a", "b", "c"])
    assert desc.disabled_pairs == [("a", "b"), ("c", "a"), ("b", "c")]
    assert desc.group_chains["arm"] == [("a", "c")]
    assert desc.group_states["arm"]["home"] == {"j1": 0.5}
    root = parse_xml(text, "SRDF", SRDFError)
    assert root.get("name") == "arm"
    assert [e.get("reason") for e in root.findall("disable_collisions")] == [
        "Adjacent", "User", "Default",
    ]


def test_merge_rejects_what_is_not_an_srdf() -> None:
    with pytest.raises(SRDFError):
        srdf_with_disabled_pairs("x", [], existing="<robot><unclosed></robot>")
    with pytest.raises(SRDFError):
        srdf_with_disabled_pairs("x", [], existing="<notarobot/>")
