"""The README's node reference is what the nodes actually declare (single source: the code)."""

from __future__ import annotations

from typing import Any

import pytest

from robot_collision.ros import reference


def test_readme_node_reference_is_up_to_date() -> None:
    assert reference.main(["--check"]) == 0, (
        "README.md is stale: run `python -m robot_collision.ros.reference --write`"
    )


def test_moveit_rows_are_declared_and_checked(monkeypatch: Any) -> None:
    """MoveIt interfaces come from each node's declaration (the same text with or without
    moveit_msgs); where moveit_msgs is installed the declaration must match the node."""
    from robot_collision.ros import moveit

    class Node:
        MOVEIT_INTERFACES = (("subscribes", "collision_object", "moveit_msgs/msg/CollisionObject"),
                             ("publishes", "~/shown", "moveit_msgs/msg/DisplayTrajectory"))

    declared = [("publishes", "/ns/n/shown", "moveit_msgs/msg/DisplayTrajectory"),
                ("subscribes", "/ns/collision_object", "moveit_msgs/msg/CollisionObject")]
    monkeypatch.setattr(moveit, "moveit_available", lambda: False)
    assert reference._moveit_rows(Node, "/ns", "n", [], []) == declared
    monkeypatch.setattr(moveit, "moveit_available", lambda: True)
    pubs = [("/ns/n/shown", ["moveit_msgs/msg/DisplayTrajectory"]), ("/x", ["std_msgs/msg/String"])]
    subs = [("/ns/collision_object", ["moveit_msgs/msg/CollisionObject"])]
    assert reference._moveit_rows(Node, "/ns", "n", pubs, subs) == declared
    with pytest.raises(RuntimeError, match="differs"):
        reference._moveit_rows(Node, "/ns", "n", pubs[1:], subs)
