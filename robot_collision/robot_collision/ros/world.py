"""A thread-safe registry of world (environment) objects, shared by the ROS nodes.

:class:`WorldModel` keeps named objects, each a frame pose in the robot base frame plus one or
more shapes placed relative to it. Objects are added, appended to, moved and removed by id (from
messages through :meth:`WorldModel.apply`, or directly), and loaded from a YAML world file.
:meth:`WorldModel.objects` returns the core :class:`~robot_collision.geometry.shapes.WorldObject`
list to
hand to the checker; it is rebuilt only when the world changes (``version`` counts changes), so
consecutive calls return the very same objects and the checker's per-world cache stays valid.

World file (YAML)::

    frame_id: base_link        # optional; objects are always in the robot base frame
    objects:
      - id: table                          # unique, non-empty
        type: box                          # box | sphere | cylinder | capsule | mesh
        dimensions: [0.8, 1.2, 0.05]       # box: [x, y, z] full side lengths (m)
        position: [0.75, 0.0, -0.025]      # m, default [0, 0, 0]
        orientation_rpy: [0.0, 0.0, 0.0]   # rad (URDF roll-pitch-yaw), or:
        # orientation_quat_xyzw: [0, 0, 0, 1]
      - {id: ball, type: sphere, dimensions: [0.1], position: [0.5, 0.3, 0.4]}
      - {id: post, type: cylinder, dimensions: [0.05, 0.8]}   # [radius, length] along local z
      - {id: bar, type: capsule, dimensions: [0.03, 0.5]}     # segment length; caps beyond it
      - id: wedge
        type: mesh                         # convex hull of the vertices, or of a file's:
        vertices: [[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]]
        # file: meshes/wedge.stl           # STL/OBJ/PLY/DAE, relative to the world file
        scale: 1.0

Instead of ``dimensions`` an object may give named sizes: ``size: [x, y, z]`` (box),
``radius`` (sphere, cylinder, capsule) and ``length`` (cylinder, capsule). The top level may also
be the bare list of objects. File paths may be absolute, relative to the world file, or
``package://<package>/<path>`` (see :func:`resolve_resource_path`).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, MeshError, RobotCollisionError, UnknownNameError
from ..geometry.octomap import occupied_leaves
from ..geometry.point_cloud import OccupancyMap
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject
from ..geometry.transforms import pose_from_position_quat, pose_from_xyz_rpy
from ..load_limits import LoadLimits, limits_or_default
from .conversions import (
    ADD,
    APPEND,
    MOVE,
    REMOVE,
    WorldUpdate,
    collision_object_to_update,
    planning_scene_to_updates,
    pose_to_matrix,
    world_update_from_msg,
)

__all__ = [
    "OCTOMAP_ID",
    "octomap_update",
    "WORLD_PARAMETERS",
    "WORLD_TOPICS",
    "WorldConfigError",
    "WorldExtentError",
    "WorldTopics",
    "validate_world_parameter",
    "world_qos",
    "WorldMeshError",
    "WorldEntry",
    "WorldModel",
    "load_world_file",
    "parse_world_config",
    "resolve_resource_path",
]

_OBJECT_KEYS = {
    "id", "type", "dimensions", "size", "radius", "length", "vertices", "file", "scale",
    "position", "orientation_rpy", "orientation_quat_xyzw",
}


class WorldConfigError(ConfigurationError):
    """A world file or world update is invalid (the message names the object and the field)."""


class WorldExtentError(WorldConfigError):
    """A world object reaches farther from the robot base than ``max_object_extent`` (an
    absurd size or position, e.g. a 1e300 m box: it would make every distance meaningless)."""


WORLD_TOPICS = ("collision_checker/world_objects", "velocity_filter/world_objects",
                "planner/world_objects")
"""Default ``world_topics``: the ``~/world_objects`` topics of the three nodes, so that an
update published on any of them reaches every node (one world, one set of topics)."""

MAX_OBJECT_EXTENT = 100.0

WORLD_QUEUE_DEPTH = 1000
"""History depth of the world-object subscriptions (reliable, KEEP_LAST): a burst of this many
updates is kept whole even when the node is busy (each update is small). The publisher's own
history must keep them too until they are acknowledged (reliable, depth >= the burst, or
KEEP_ALL)."""

# name: (default, description, constraints) -- merged into each node's PARAMETERS
WORLD_PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "world_topics": (
        list(WORLD_TOPICS),
        "robot_collision_interfaces/WorldObject topics listened to besides ~/world_objects "
        "(read at start-up). The default is the same for the checker, the filter and the "
        "planner (every node's ~/world_objects), so an update on any of them reaches all.",
        "topic names",
    ),
    "max_object_extent": (
        MAX_OBJECT_EXTENT,
        "World objects (from files and messages) must lie within this distance (m) of the "
        "robot base: a shape reaching farther is refused with an error (read at start-up).",
        "> 0",
    ),
}


def validate_world_parameter(name: str, value: Any) -> Any:
    """Validated value of one of :data:`WORLD_PARAMETERS` (raises ConfigurationError)."""
    if name == "world_topics":
        if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
            return ()
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise ConfigurationError(f"world_topics must be a list of topic names, got {value!r}")
        return tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    if name == "max_object_extent":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(float(value)) and float(value) > 0):
            raise ConfigurationError(f"max_object_extent must be a finite number > 0 m, got "
                                     f"{value!r}")
        return float(value)
    raise ConfigurationError(f"unknown parameter {name!r}")


def world_qos() -> Any:
    """QoS of world-object subscriptions: reliable, KEEP_LAST :data:`WORLD_QUEUE_DEPTH`
    (volatile: compatible with any publisher durability)."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=WORLD_QUEUE_DEPTH, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE)


class WorldTopics:
    """A node's world-object inputs and its world report.

    Subscribes ``~/world_objects`` and every topic of ``topics`` (the same topic once, by its
    resolved name) with :func:`world_qos`, size-checked before deserializing
    (:class:`~robot_collision.ros.intake.CheckedSubscription`), and publishes
    ``~/world_version`` (``std_msgs/String``, reliable, transient local: a late subscriber gets
    the current one) after every change: ``"digest=<16 hex> objects=<n> version=<k>"``, the
    digest being :meth:`WorldModel.digest` (equal in every node holding the same world)."""

    def __init__(self, node: Any, world: WorldModel, topics: Sequence[str], callback: Any,
                 limits: Any, on_reject: Any, callback_group: Any = None) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg

        from .intake import CheckedSubscription

        self._node = node
        self._world = world
        self.subscriptions: list[Any] = []
        seen: set[str] = set()
        for topic in ["~/world_objects", *topics]:
            try:
                name = node.resolve_topic_name(topic)
            except Exception:
                name = topic
            if name in seen:
                continue
            seen.add(name)
            try:
                self.subscriptions.append(CheckedSubscription(
                    node, WorldObjectMsg, topic, callback, world_qos(), limits, on_reject,
                    "WorldObject", callback_group=callback_group))
            except Exception as exc:  # an invalid topic name must not stop the node
                node.get_logger().error(f"cannot subscribe world topic {topic!r}: {exc}")
        self._pub = node.create_publisher(
            String, "~/world_version",
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._published = -1
        self._lock = threading.Lock()  # guards _pending only
        self._publish_lock = threading.Lock()
        self._pending: Optional[threading.Timer] = None
        world.add_listener(self._on_change)
        self.report()

    REPORT_DELAY = 0.05
    """s from a change to its report (a burst of updates is reported once)."""

    def _on_change(self) -> None:
        with self._lock:
            if self._pending is not None:
                return
            self._pending = threading.Timer(self.REPORT_DELAY, self._report_pending)
            self._pending.daemon = True
            self._pending.start()

    def _report_pending(self) -> None:
        with self._lock:
            self._pending = None
        with contextlib.suppress(Exception):  # the node is shutting down
            self.report()

    def close(self) -> None:
        self._world.remove_listener(self._on_change)
        with self._lock:
            if self._pending is not None:
                self._pending.cancel()
                self._pending = None

    @property
    def topic_names(self) -> list[str]:
        return [s.topic_name for s in self.subscriptions]

    def report(self) -> str:
        """Publish the world's version if it changed since the last report; returns it."""
        from std_msgs.msg import String

        # the world's lock is taken (digest) without holding this object's locks: a change
        # notifies _on_change with the world's lock held (lock order: world, then ours)
        version = self._world.version
        text = (f"digest={self._world.digest()} objects={len(self._world)} "
                f"version={version}")
        with self._publish_lock:
            if version != self._published:
                self._published = version
                self._pub.publish(String(data=text))
        return text


class WorldMeshError(WorldConfigError, MeshError):
    """A world file's mesh is missing, unreadable, over a cap or unusable: both a
    :class:`WorldConfigError` and a :class:`~robot_collision.errors.MeshError`."""


def resolve_resource_path(
    path: Union[str, os.PathLike[str]], base_dir: Optional[Path] = None
) -> Path:
    """Resolve ``package://pkg/rel``, ``file://``, absolute or relative paths to a file path.

    ``package://robot_collision/...`` resolves to this package's own files (source tree or
    installed share folder); other packages through the ament index. Relative paths are tried
    against ``base_dir``, then the working directory, then this package's files.
    """
    text = os.fspath(path)
    if text.startswith("package://"):
        pkg, _, rel = text[len("package://"):].partition("/")
        if pkg == "robot_collision":
            from .. import data_path

            return data_path(*Path(rel).parts)
        try:
            from ament_index_python.packages import (  # type: ignore[import-not-found,unused-ignore]
                get_package_share_directory,
            )

            return Path(get_package_share_directory(pkg)) / rel
        except Exception as exc:
            raise WorldConfigError(
                f"cannot resolve {text!r}: package {pkg!r} not found in the ament index ({exc})"
            ) from None
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    p = Path(text).expanduser()
    if p.is_absolute():
        return p
    candidates = ([base_dir / p] if base_dir is not None else []) + [Path.cwd() / p]
    for cand in candidates:
        if cand.exists():
            return cand
    from .. import data_path

    packaged = data_path(*p.parts)
    return packaged if packaged.exists() else candidates[0]


@dataclass(frozen=True)
class WorldEntry:
    """One named object: ``pose`` (4, 4) in the base frame and shapes relative to it."""

    object_id: str
    pose: NDArray[np.float64]
    shapes: tuple[tuple[Shape, NDArray[np.float64]], ...]

    def world_objects(self) -> list[WorldObject]:
        multi = len(self.shapes) > 1
        return [
            WorldObject(s, self.pose @ local, f"{self.object_id}#{k}" if multi else self.object_id)
            for k, (s, local) in enumerate(self.shapes)
        ]


def _as_pose(pose: Optional[ArrayLike], what: str) -> NDArray[np.float64]:
    T = np.eye(4) if pose is None else np.array(pose, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise WorldConfigError(f"{what} must be a finite (4, 4) homogeneous transform")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise WorldConfigError(f"{what} rotation must be orthonormal and right-handed")
    return T


class WorldModel:
    """Thread-safe registry of named world objects (see the module docstring).

    ``frame_ids``: frame names accepted in message headers besides the empty string (normally
    the robot base frame); updates in any other frame are refused, as there is no tf here.
    ``limits``: caps of world files and of the world's size (``LoadLimits.max_world_objects``
    shapes altogether: a change that would exceed it raises :class:`WorldConfigError` and
    changes nothing); defaults when None.
    """

    def __init__(self, frame_ids: Iterable[str] = (), limits: Optional[LoadLimits] = None) -> None:
        self.limits = limits_or_default(limits)
        self._lock = threading.RLock()
        self._entries: dict[str, WorldEntry] = {}
        self._version = 0
        self._cache_version = -1
        self._cache: tuple[WorldObject, ...] = ()
        self._frames: frozenset[str] = frozenset(f for f in frame_ids if f)
        self._file_ids: list[str] = []  # objects added by the world file (use_file)
        self.max_extent = MAX_OBJECT_EXTENT
        """Every shape must lie within this distance (m) of the base origin
        (:class:`WorldExtentError` otherwise)."""
        self._digest: tuple[int, str] = (-1, "")
        self._listeners: list[Any] = []

    # ------------------------------------------------------------------ queries
    @property
    def version(self) -> int:
        """Incremented by every change."""
        return self._version

    @property
    def frame_ids(self) -> frozenset[str]:
        return self._frames

    def set_frame_ids(self, frame_ids: Iterable[str]) -> None:
        """Replace the accepted header frames (the empty frame is always accepted)."""
        self._frames = frozenset(f for f in frame_ids if f)

    def ids(self) -> list[str]:
        """Object ids in insertion order."""
        with self._lock:
            return list(self._entries)

    def get(self, object_id: str) -> WorldEntry:
        with self._lock:
            try:
                return self._entries[object_id]
            except KeyError:
                raise UnknownNameError(
                    f"no world object {object_id!r}; objects: {', '.join(self._entries) or 'none'}"
                ) from None

    def __contains__(self, object_id: object) -> bool:
        with self._lock:
            return object_id in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def snapshot(self) -> tuple[int, tuple[WorldObject, ...]]:
        """(version, core world objects) taken atomically."""
        with self._lock:
            if self._cache_version != self._version:
                objs: list[WorldObject] = []
                for e in self._entries.values():
                    objs.extend(e.world_objects())
                self._cache = tuple(objs)
                self._cache_version = self._version
            return self._version, self._cache

    def objects(self) -> tuple[WorldObject, ...]:
        """Core world objects (the same tuple until the world changes)."""
        return self.snapshot()[1]

    def digest(self) -> str:
        """16 hex digits identifying the world's content (ids, poses, shapes; not the order of
        changes): two models holding the same objects have the same digest."""
        import hashlib

        with self._lock:
            if self._digest[0] == self._version:
                return self._digest[1]
            h = hashlib.sha256()
            for oid in sorted(self._entries):
                e = self._entries[oid]
                h.update(oid.encode() + b"\0")
                h.update(np.ascontiguousarray(e.pose, dtype=np.float64).tobytes())
                for shape, local in e.shapes:
                    h.update(type(shape).__name__.encode())
                    h.update(np.ascontiguousarray(shape.params(), dtype=np.float64).tobytes())
                    if isinstance(shape, Mesh):
                        h.update(np.ascontiguousarray(shape.vertices(),
                                                      dtype=np.float64).tobytes())
                    h.update(np.ascontiguousarray(local, dtype=np.float64).tobytes())
            self._digest = (self._version, h.hexdigest()[:16])
            return self._digest[1]

    def _check_extent(self, entry: WorldEntry) -> None:
        """Refuse an entry whose shapes reach farther than ``max_extent`` from the base."""
        for k, (shape, local) in enumerate(entry.shapes):
            T = entry.pose @ local
            try:
                r = float(shape.bounding_radius())
            except (OverflowError, FloatingPointError, ValueError):  # 1e300 squared
                r = math.inf
            reach = float(np.linalg.norm(T[:3, 3])) + r
            if not (math.isfinite(reach) and reach <= self.max_extent):
                raise WorldExtentError(
                    f"world object {entry.object_id!r} shape {k} ({type(shape).__name__}) "
                    f"reaches {reach:.4g} m from the robot base, more than max_object_extent "
                    f"{self.max_extent:g} m: check its size, units and position (or raise "
                    "max_object_extent)")

    # ------------------------------------------------------------------ changes
    def add_listener(self, fn: Any) -> None:
        """Call ``fn()`` after every change (from the changing thread, world lock held: keep it
        short)."""
        with self._lock:
            self._listeners = [*self._listeners, fn]

    def remove_listener(self, fn: Any) -> None:
        with self._lock:
            self._listeners = [f for f in self._listeners if f is not fn]

    def _changed(self) -> None:
        self._version += 1
        for fn in self._listeners:
            fn()

    @staticmethod
    def _check_id(object_id: str) -> str:
        if not isinstance(object_id, str) or not object_id.strip():
            raise WorldConfigError(f"world object id must be a non-empty string, got {object_id!r}")
        return object_id

    @staticmethod
    def _shape_list(
        shapes: Union[Shape, WorldObject, Sequence[Any]], what: str
    ) -> tuple[tuple[Shape, NDArray[np.float64]], ...]:
        if isinstance(shapes, (Shape, WorldObject)):
            shapes = [shapes]
        out: list[tuple[Shape, NDArray[np.float64]]] = []
        for k, item in enumerate(shapes):
            if isinstance(item, Shape):
                out.append((item, np.eye(4)))
            elif isinstance(item, WorldObject):
                out.append((item.shape, item.pose))
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Shape):
                out.append((item[0], _as_pose(item[1], f"{what} shape {k} pose")))
            else:
                raise WorldConfigError(
                    f"{what}: shape {k} must be a Shape, a WorldObject or (Shape, pose), "
                    f"got {type(item).__name__}"
                )
        if not out:
            raise WorldConfigError(f"{what} has no shapes")
        return tuple(out)

    def add(
        self,
        object_id: str,
        shapes: Union[Shape, WorldObject, Sequence[Any]],
        pose: Optional[ArrayLike] = None,
    ) -> None:
        """Add (or replace) ``object_id``: shapes relative to ``pose`` (identity by default).

        ``shapes`` is a :class:`Shape`, a core :class:`WorldObject` (its pose is then relative
        to ``pose``), or a list of those or of ``(Shape, (4, 4) pose)`` tuples.
        """
        self._check_id(object_id)
        what = f"world object {object_id!r}"
        entry = WorldEntry(
            object_id, _as_pose(pose, f"{what} pose"), self._shape_list(shapes, what)
        )
        self._check_extent(entry)
        with self._lock:
            self._check_size(object_id, entry)
            self._entries[object_id] = entry
            self._changed()

    def add_object(self, obj: WorldObject) -> None:
        """Add (or replace) a core world object under its own name."""
        self.add(obj.name, [(obj.shape, np.eye(4))], obj.pose)

    def append(
        self,
        object_id: str,
        shapes: Union[Shape, WorldObject, Sequence[Any]],
        pose: Optional[ArrayLike] = None,
    ) -> None:
        """Add shapes (relative to the object's frame) to ``object_id``; creates it if absent
        (at ``pose``, identity by default)."""
        self._check_id(object_id)
        what = f"world object {object_id!r}"
        extra = self._shape_list(shapes, what)
        with self._lock:
            old = self._entries.get(object_id)
            if old is None:
                entry = WorldEntry(object_id, _as_pose(pose, what), extra)
            else:
                entry = WorldEntry(object_id, old.pose, old.shapes + extra)
            self._check_extent(entry)
            self._check_size(object_id, entry)
            self._entries[object_id] = entry
            self._changed()

    def move(self, object_id: str, pose: ArrayLike) -> None:
        """Set the pose of an existing object (its shapes keep their relative poses)."""
        T = _as_pose(pose, f"world object {object_id!r} pose")
        with self._lock:
            old = self.get(object_id)
            entry = WorldEntry(object_id, T, old.shapes)
            self._check_extent(entry)
            self._entries[object_id] = entry
            self._changed()

    def remove(self, object_id: str) -> bool:
        """Remove ``object_id``; False when there was no such object."""
        with self._lock:
            if self._entries.pop(object_id, None) is None:
                return False
            self._changed()
            return True

    def clear(self) -> None:
        with self._lock:
            if self._entries:
                self._entries.clear()
                self._changed()

    def replace_all(self, entries: Mapping[str, tuple[Any, Optional[ArrayLike]]]) -> None:
        """Atomically replace the whole world by ``{id: (shapes, pose)}``."""
        new: dict[str, WorldEntry] = {}
        for object_id, (shapes, pose) in entries.items():
            self._check_id(object_id)
            what = f"world object {object_id!r}"
            new[object_id] = WorldEntry(
                object_id, _as_pose(pose, f"{what} pose"), self._shape_list(shapes, what)
            )
        self._check_total(sum(len(e.shapes) for e in new.values()), "the new world")
        for e in new.values():
            self._check_extent(e)
        with self._lock:
            self._entries = new
            self._changed()

    # ------------------------------------------------------------------ messages
    def apply(self, update: WorldUpdate) -> str:
        """Apply a :class:`WorldUpdate`; returns a one-line description of what changed.

        Raises :class:`WorldConfigError` (frame not accepted, MOVE of an unknown object, bad
        pose) and leaves the world unchanged on error.
        """
        if update.frame_id and update.frame_id.lstrip("/") not in self._frames:
            accepted = ", ".join(sorted(self._frames)) or "the robot base frame"
            raise WorldConfigError(
                f"world object {update.object_id!r} is in frame {update.frame_id!r}; only "
                f"{accepted} (or an empty frame_id) is accepted, as no tf transform is applied"
            )
        oid = update.object_id
        if update.operation == REMOVE:
            if not oid:
                n = len(self)
                self.clear()
                return f"removed all {n} world objects"
            return f"removed {oid!r}" if self.remove(oid) else f"{oid!r} was not in the world"
        if update.operation == MOVE:
            if update.pose is None:
                raise WorldConfigError(f"MOVE of {oid!r} needs a pose")
            try:
                self.move(oid, update.pose)
            except UnknownNameError as exc:
                raise WorldConfigError(f"cannot MOVE: {exc}") from None
            return f"moved {oid!r}"
        if update.operation == ADD:
            self.add(oid, list(update.shapes), update.pose)
            return f"added {oid!r} ({len(update.shapes)} shape(s))"
        if update.operation == APPEND:
            self.append(oid, list(update.shapes), update.pose)
            return f"appended {len(update.shapes)} shape(s) to {oid!r}"
        raise WorldConfigError(f"unknown world update operation {update.operation!r}")

    def apply_msg(self, msg: Any) -> str:
        """Apply a ``robot_collision_interfaces/WorldObject`` message."""
        return self.apply(world_update_from_msg(msg))

    def apply_collision_object(self, msg: Any) -> str:
        """Apply a ``moveit_msgs/CollisionObject`` (or an object with the same fields)."""
        return self.apply(collision_object_to_update(msg))

    def apply_all(self, updates: Sequence[WorldUpdate], replace: bool = False) -> str:
        """Apply ``updates`` in order, all or nothing; returns what changed in one line.

        ``replace``: first remove every object that did not come from the world file (a full
        MoveIt planning scene replaces the world; the world file's objects are this node's
        fixed configuration and stay). On any error (see :meth:`apply`) the world is left as
        it was and the error is raised.
        """
        with self._lock:
            saved = (dict(self._entries), self._version)
            try:
                done: list[str] = []
                if replace:
                    keep = set(self._file_ids)
                    dropped = [oid for oid in self._entries if oid not in keep]
                    for oid in dropped:
                        del self._entries[oid]
                    if dropped:
                        self._changed()
                    done.append(f"cleared {len(dropped)} message object(s)")
                done += [self.apply(u) for u in updates]
            except BaseException:
                # nothing read the world meanwhile (the lock is held): restoring the entries
                # and the version restores the state, including the object cache's validity
                self._entries, self._version = saved
                raise
        return "; ".join(done) if done else "no change"

    def apply_planning_scene(self, msg: Any) -> str:
        """Apply the world objects of a ``moveit_msgs/PlanningScene``: a diff (``is_diff``)
        applies each collision object's operation; a full scene replaces the objects that came
        from messages (see :meth:`apply_all`). ``world.octomap`` with data becomes the object
        :data:`OCTOMAP_ID` (see :func:`octomap_update`). All or nothing: an octomap that cannot
        be read (:class:`~robot_collision.geometry.octomap.OctomapError`) refuses the message."""
        is_diff, updates = planning_scene_to_updates(msg)
        octomap = octomap_update(msg)
        if octomap is not None:
            updates.append(octomap)
        what = self.apply_all(updates, replace=not is_diff)
        return f"{'diff' if is_diff else 'full scene'}: {what}"

    # ------------------------------------------------------------------ files
    def use_file(self, path: Union[str, os.PathLike[str]]) -> list[str]:
        """Make ``path`` the world file: its objects replace the objects the previous world file
        added (and objects with the same ids); an empty path only removes them. Returns the ids
        loaded. All-or-nothing: a file that cannot be loaded changes nothing (and raises)."""
        loaded = load_world_file(path, self.limits) if str(path) else []
        for e in loaded:
            self._check_extent(e)
        with self._lock:
            entries = dict(self._entries)
            for oid in self._file_ids:
                entries.pop(oid, None)
            for e in loaded:
                entries[e.object_id] = e
            self._check_total(sum(len(e.shapes) for e in entries.values()), f"world file {path}")
            self._entries = entries
            self._file_ids = [e.object_id for e in loaded]
            self._changed()
            return list(self._file_ids)

    # ------------------------------------------------------------------ size cap
    def _check_total(self, shapes: int, what: str) -> None:
        if shapes > self.limits.max_world_objects:
            raise WorldConfigError(
                self.limits.exceeded("max_world_objects", f"{what}: the world's object count",
                                     shapes)
            )

    def _check_size(self, object_id: str, entry: WorldEntry) -> None:
        """Refuse ``entry`` (replacing ``object_id``) if the world would exceed the cap
        (caller holds the lock)."""
        old = self._entries.get(object_id)
        total = sum(len(e.shapes) for e in self._entries.values())
        total += len(entry.shapes) - (len(old.shapes) if old is not None else 0)
        self._check_total(total, f"world object {object_id!r}")


# --------------------------------------------------------------------------- octomaps
OCTOMAP_ID = "octomap"
"""World object id of a planning scene's ``world.octomap``."""


def octomap_update(scene: Any) -> Optional[WorldUpdate]:
    """The world update of a ``moveit_msgs/PlanningScene``'s ``world.octomap``
    (``octomap_msgs/OctomapWithPose``, read duck-typed), None when it carries no data (a
    diff's octomap unchanged; a full scene's removed with the other message objects).

    Its occupied leaves become :data:`OCTOMAP_ID`: one
    :class:`~robot_collision.geometry.point_cloud.OccupancyMap` per leaf size (each leaf's
    ball circumscribes the cube: conservative), placed at ``origin`` in ``header.frame_id``; a
    map without occupied leaves removes the object. Raises
    :class:`~robot_collision.geometry.octomap.OctomapError` for maps that are not binary
    OcTrees or are malformed, :class:`~.conversions.ConversionError` for a bad origin."""
    world = getattr(scene, "world", None)
    wrapped = getattr(world, "octomap", None)
    octo = getattr(wrapped, "octomap", None)
    data = getattr(octo, "data", None)
    if octo is None or data is None or len(data) == 0:
        return None
    centres, sides = occupied_leaves(octo)
    if len(centres) == 0:
        return WorldUpdate(REMOVE, OCTOMAP_ID)
    shapes: list[tuple[Shape, NDArray[np.float64]]] = [
        (OccupancyMap(centres[sides == side], float(side)), np.eye(4))
        for side in np.unique(sides)]
    header = getattr(wrapped, "header", None)
    frame = str(getattr(header, "frame_id", "") or "")
    origin = getattr(wrapped, "origin", None)
    pose = None if origin is None else pose_to_matrix(origin, "octomap origin")
    return WorldUpdate(ADD, OCTOMAP_ID, shapes, pose, frame)


# --------------------------------------------------------------------------- world files
def _numbers(value: Any, count: Optional[int], what: str) -> list[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise WorldConfigError(f"{what} must be a list of numbers, got {value!r}")
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError):
        raise WorldConfigError(f"{what} must be a list of numbers, got {value!r}") from None
    if count is not None and len(out) != count:
        raise WorldConfigError(f"{what} must have {count} numbers, got {len(out)}: {value!r}")
    if not all(math.isfinite(v) for v in out):
        raise WorldConfigError(f"{what} must be finite, got {value!r}")
    return out


def _object_shape(
    spec: Mapping[str, Any], what: str, base_dir: Optional[Path], limits: LoadLimits
) -> Shape:
    kind = str(spec.get("type", "")).strip().lower()
    dims = spec.get("dimensions")

    def sizes(names: Sequence[str], fallback_keys: Sequence[str]) -> list[float]:
        if dims is not None:
            return _numbers(dims, len(names), f"{what} dimensions [{', '.join(names)}]")
        vals = []
        for key in fallback_keys:
            if key not in spec:
                raise WorldConfigError(
                    f"{what} ({kind}) needs dimensions [{', '.join(names)}] or "
                    f"{' and '.join(fallback_keys)}"
                )
            vals.extend(_numbers(spec[key], None, f"{what} {key}"))
        if len(vals) != len(names):
            raise WorldConfigError(f"{what} ({kind}) needs {len(names)} sizes ({', '.join(names)})")
        return vals

    if kind == "box":
        return Box(*sizes(["x", "y", "z"], ["size"]))
    if kind == "sphere":
        return Sphere(*sizes(["radius"], ["radius"]))
    if kind == "cylinder":
        r, length = sizes(["radius", "length"], ["radius", "length"])
        return Cylinder(r, length)
    if kind == "capsule":
        r, length = sizes(["radius", "length"], ["radius", "length"])
        return Capsule(r, length)
    if kind == "mesh":
        scale = spec.get("scale", 1.0)
        scale_v: Union[float, list[float]] = (
            _numbers(scale, None, f"{what} scale") if isinstance(scale, (list, tuple))
            else _numbers(scale, 1, f"{what} scale")[0]
        )
        if ("vertices" in spec) == ("file" in spec):
            raise WorldConfigError(f"{what} (mesh) needs exactly one of 'vertices' or 'file'")
        if "vertices" in spec:
            verts = spec["vertices"]
            if not isinstance(verts, (list, tuple)):
                raise WorldConfigError(f"{what} vertices must be a list of [x, y, z]")
            if len(verts) > limits.max_mesh_vertices:
                raise MeshError(
                    limits.exceeded("max_mesh_vertices", f"{what} vertex count", len(verts))
                )
            pts = [_numbers(v, 3, f"{what} vertices[{k}]") for k, v in enumerate(verts)]
            return Mesh(np.asarray(pts, dtype=float).reshape(-1, 3), scale_v, limits=limits)
        return Mesh(resolve_resource_path(str(spec["file"]), base_dir), scale_v, limits=limits)
    raise WorldConfigError(
        f"{what} has type {spec.get('type')!r}; use box, sphere, cylinder, capsule or mesh"
    )


def _object_pose(spec: Mapping[str, Any], what: str) -> NDArray[np.float64]:
    xyz = _numbers(spec.get("position", [0.0, 0.0, 0.0]), 3, f"{what} position")
    if "orientation_rpy" in spec and "orientation_quat_xyzw" in spec:
        raise WorldConfigError(f"{what} gives both orientation_rpy and orientation_quat_xyzw")
    if "orientation_quat_xyzw" in spec:
        quat = _numbers(spec["orientation_quat_xyzw"], 4, f"{what} orientation_quat_xyzw")
        if math.sqrt(sum(v * v for v in quat)) < 1e-9:
            raise WorldConfigError(f"{what} orientation_quat_xyzw is zero; use [0, 0, 0, 1]")
        return pose_from_position_quat(xyz, quat)
    rpy = _numbers(spec.get("orientation_rpy", [0.0, 0.0, 0.0]), 3, f"{what} orientation_rpy")
    return pose_from_xyz_rpy(xyz, rpy)


def parse_world_config(
    data: Any,
    base_dir: Optional[Path] = None,
    source: str = "world",
    limits: Optional[LoadLimits] = None,
) -> list[WorldEntry]:
    """World entries of a parsed world file (see the module docstring for the schema);
    ``limits`` caps the object count and the meshes (defaults when None)."""
    lim = limits_or_default(limits)
    if data is None:
        return []
    if isinstance(data, Mapping):
        unknown = set(data) - {"objects", "frame_id"}
        if unknown:
            raise WorldConfigError(
                f"{source}: unknown top-level keys {sorted(unknown)}; expected 'objects' "
                "(and optionally 'frame_id')"
            )
        items = data.get("objects") or []
    else:
        items = data
    if not isinstance(items, list):
        raise WorldConfigError(f"{source}: 'objects' must be a list of objects")
    if len(items) > lim.max_world_objects:
        raise WorldConfigError(
            lim.exceeded("max_world_objects", f"{source}: the object count", len(items))
        )
    entries: list[WorldEntry] = []
    seen: set[str] = set()
    for k, spec in enumerate(items):
        if not isinstance(spec, Mapping):
            raise WorldConfigError(f"{source}: objects[{k}] must be a mapping, got {spec!r}")
        oid = spec.get("id")
        what = f"{source}: objects[{k}] ({oid!r})"
        if not isinstance(oid, str) or not oid.strip():
            raise WorldConfigError(f"{what} needs a non-empty string 'id'")
        if oid in seen:
            raise WorldConfigError(f"{what}: id {oid!r} is used twice")
        seen.add(oid)
        unknown = set(spec) - _OBJECT_KEYS
        if unknown:
            raise WorldConfigError(f"{what} has unknown keys {sorted(unknown)}")
        try:
            shape = _object_shape(spec, what, base_dir, lim)
        except WorldConfigError:
            raise
        except MeshError as exc:  # also a MeshError: the reason may name a mesh cap to raise
            raise WorldMeshError(f"{what}: {exc}") from None
        except RobotCollisionError as exc:
            raise WorldConfigError(f"{what}: {exc}") from None
        entries.append(WorldEntry(oid, _object_pose(spec, what), ((shape, np.eye(4)),)))
    return entries


def _load_yaml(data: bytes, source: str, limits: LoadLimits) -> Any:
    """The YAML document ``data``, refused (before it is composed) when it nests deeper than
    ``limits.max_world_depth`` or when its aliases expand it beyond ``limits.max_world_bytes``
    nodes. PyYAML composes recursively: a deep document would raise RecursionError (the pure
    Python loader) or crash the process (libyaml's loader), so depth is checked on the event
    stream, which is parsed iteratively and abandoned at the first event too deep."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = nodes = 0
    starts: list[tuple[Optional[str], int]] = []
    anchors: dict[str, int] = {}
    try:
        for ev in yaml.parse(data, Loader=loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > limits.max_world_depth:
                    raise WorldConfigError(
                        limits.exceeded("max_world_depth", f"{source}: YAML nesting", depth)
                    )
                nodes += 1
                starts.append((ev.anchor, nodes))
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                anchor, start = starts.pop()
                if anchor is not None:
                    anchors[anchor] = nodes - start + 1
            elif isinstance(ev, yaml.ScalarEvent):
                nodes += 1
                if ev.anchor is not None:
                    anchors[ev.anchor] = 1
            elif isinstance(ev, yaml.AliasEvent):
                nodes += anchors.get(ev.anchor, 1)
            if nodes > limits.max_world_bytes:
                raise WorldConfigError(
                    f"{source}: YAML aliases expand the document to over "
                    f"{limits.max_world_bytes:,} nodes (LoadLimits.max_world_bytes); write the "
                    "objects out instead of repeating aliases"
                )
        return yaml.load(data, Loader=loader)  # a safe loader (CSafeLoader or SafeLoader)
    except yaml.YAMLError as exc:
        raise WorldConfigError(f"world file {source} is not valid YAML: {exc}") from None


def load_world_file(
    path: Union[str, os.PathLike[str]], limits: Optional[LoadLimits] = None
) -> list[WorldEntry]:
    """Read and validate a world file (path or ``package://`` URI). ``limits`` caps its size,
    nesting, object count and meshes (defaults when None)."""
    lim = limits_or_default(limits)
    p = resolve_resource_path(path)
    try:
        st = p.stat()
    except OSError:
        raise WorldConfigError(
            f"world file {str(path)!r} does not exist (resolved to {str(p)!r})"
        ) from None
    if not p.is_file():
        raise WorldConfigError(f"world file {str(p)!r} is not a regular file")
    if st.st_size > lim.max_world_bytes:
        raise WorldConfigError(
            lim.exceeded("max_world_bytes", f"world file {str(p)!r}", st.st_size, "bytes")
        )
    try:
        with open(p, "rb") as fh:
            data = fh.read(lim.max_world_bytes + 1)
    except OSError as exc:
        raise WorldConfigError(f"cannot read world file {str(p)!r}: {exc}") from None
    if len(data) > lim.max_world_bytes:
        raise WorldConfigError(
            lim.exceeded("max_world_bytes", f"world file {str(p)!r}", len(data), "bytes")
        )
    return parse_world_config(_load_yaml(data, repr(str(p)), lim), p.parent, str(p), lim)
