"""MoveIt interoperability: the nodes' optional ``moveit_msgs`` interfaces.

``moveit_msgs`` is not a hard dependency (it is not on PyPI; a ROS install with MoveIt has it).
When it can be imported, the nodes also

- take world objects from ``collision_object`` (``moveit_msgs/CollisionObject``: ADD, REMOVE,
  APPEND, MOVE; REMOVE with an empty id removes every object) and from ``planning_scene``
  (``moveit_msgs/PlanningScene``: the ``world.collision_objects`` of a diff are applied in
  order; a full scene, ``is_diff`` false, replaces every object that came from messages, the
  world file's objects stay; ``world.octomap``, a binary OcTree, becomes the object
  ``octomap``: its occupied leaves as balls circumscribing them, see
  :func:`~robot_collision.ros.world.octomap_update`) -- the collision checker, the velocity
  filter and the planner;
- publish the planned trajectory on ``/display_planned_path``
  (``moveit_msgs/DisplayTrajectory``, RViz's MoveIt ``Trajectory`` display) -- the planner.

Both topic names are relative (``/collision_object`` and ``/planning_scene`` in the root
namespace: the topics MoveIt's ``move_group`` listens on, so one message updates MoveIt and these
nodes alike). Objects must be in the robot base frame or have an empty ``frame_id`` (no tf here).
A message that cannot be applied is logged with the reason and changes nothing.

:data:`WORLD_INTERFACES` and :data:`DISPLAY_INTERFACES` list these interfaces for the generated
node reference (:mod:`robot_collision.ros.reference`), which documents them the same way
whether or not ``moveit_msgs`` is installed where it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from ..errors import RobotCollisionError
from .intake import CheckedSubscription, MessageLimits, MessageRejectedError
from .world import WorldModel

__all__ = [
    "COLLISION_OBJECT_TOPIC",
    "DISPLAY_INTERFACES",
    "DISPLAY_TOPIC",
    "PLANNING_SCENE_TOPIC",
    "WORLD_INTERFACES",
    "display_trajectory_types",
    "moveit_available",
    "subscribe_world",
]

COLLISION_OBJECT_TOPIC = "collision_object"
PLANNING_SCENE_TOPIC = "planning_scene"
DISPLAY_TOPIC = "/display_planned_path"

WORLD_INTERFACES: tuple[tuple[str, str, str], ...] = (
    ("subscribes", COLLISION_OBJECT_TOPIC, "moveit_msgs/msg/CollisionObject"),
    ("subscribes", PLANNING_SCENE_TOPIC, "moveit_msgs/msg/PlanningScene"),
)
"""(kind, topic relative to the node's namespace, type) of the world topics."""

DISPLAY_INTERFACES: tuple[tuple[str, str, str], ...] = (
    ("publishes", DISPLAY_TOPIC, "moveit_msgs/msg/DisplayTrajectory"),
)
"""(kind, topic, type) of the planner's trajectory display."""


def moveit_available() -> bool:
    """True when ``moveit_msgs`` (its Python messages) can be imported."""
    try:
        import moveit_msgs.msg  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def display_trajectory_types() -> Optional[tuple[Any, Any]]:
    """(DisplayTrajectory, RobotTrajectory) message classes, or None without moveit_msgs."""
    try:
        from moveit_msgs.msg import (  # type: ignore[import-not-found,unused-ignore]
            DisplayTrajectory,
            RobotTrajectory,
        )
    except ImportError:
        return None
    return DisplayTrajectory, RobotTrajectory


def subscribe_world(
    node: Any,
    world: WorldModel,
    qos: Any,
    limits: Callable[[], MessageLimits],
    callback_group: Any = None,
    on_change: Optional[Callable[[], None]] = None,
) -> list[Any]:
    """Subscribe ``node`` to the MoveIt world topics (see the module docstring), applying each
    message to ``world``; returns the subscriptions (none without ``moveit_msgs``).

    Messages arrive serialized and are size-checked with ``limits()`` (the node's message caps
    at that moment) before they are deserialized (:mod:`robot_collision.ros.intake`).
    ``on_change`` is called after a message changed the world. Errors are logged (throttled),
    never raised: a bad message must not stop the node.
    """
    try:
        from moveit_msgs.msg import (  # type: ignore[import-not-found,unused-ignore]
            CollisionObject,
            PlanningScene,
        )
    except ImportError:
        return []
    log = node.get_logger()

    def handler(apply: Callable[[Any], str], what: str) -> Callable[[Any], None]:
        def callback(msg: Any) -> None:
            try:
                done = apply(msg)
            except RobotCollisionError as exc:
                log.error(f"{what} rejected: {exc}", throttle_duration_sec=1.0)
                return
            except Exception as exc:
                log.error(f"{what} rejected: {type(exc).__name__}: {exc}",
                          throttle_duration_sec=1.0)
                return
            log.info(f"world ({what}): {done}")
            if on_change is not None:
                on_change()

        return callback

    def reject(what: str) -> Callable[[MessageRejectedError], None]:
        def on_reject(exc: MessageRejectedError) -> None:
            log.error(f"{what} rejected: {exc}", throttle_duration_sec=1.0)

        return on_reject

    subs: list[Any] = []
    for msg_type, topic, apply in ((CollisionObject, COLLISION_OBJECT_TOPIC,
                                    world.apply_collision_object),
                                   (PlanningScene, PLANNING_SCENE_TOPIC,
                                    world.apply_planning_scene)):
        subs.append(CheckedSubscription(
            node, msg_type, topic, handler(apply, topic), qos, limits, reject(topic),
            msg_type.__name__, callback_group=callback_group))
    return subs
