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


def test_readme_launch_arguments_are_up_to_date() -> None:
    """The README's launch-argument table is the launch file's (read with ast; where launch is
    installed, also checked against the launch description itself)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    block = reference.launch_arguments_markdown()
    assert reference._splice(readme, block, reference.LAUNCH_BEGIN, reference.LAUNCH_END) \
        == readme, "README.md is stale: run `python -m robot_collision.ros.reference --write`"
    names = [n for n, _, _ in reference.launch_arguments()]
    assert {"use_mock_hardware", "use_robot_state_publisher"} <= set(names)
