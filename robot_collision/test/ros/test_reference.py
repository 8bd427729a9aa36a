"""The README's node reference is what the nodes actually declare (single source: the code)."""

from __future__ import annotations

from robot_collision.ros import reference


def test_readme_node_reference_is_up_to_date() -> None:
    assert reference.main(["--check"]) == 0, (
        "README.md is stale: run `python -m robot_collision.ros.reference --write`"
    )
