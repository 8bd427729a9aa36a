"""Sensed obstacles for the nodes: ``sensor_msgs/PointCloud2`` topics as world objects.

Each node with point-cloud support (checker, velocity filter, planner) keeps one
:class:`SensedClouds`. For every message on a topic of ``point_cloud_topics`` it

1. converts the message (:func:`pointcloud2_to_points`): fields ``x``, ``y``, ``z`` of type
   FLOAT32 or FLOAT64, either byte order; a cloud with more than ``cloud_max_points`` points,
   missing or mistyped fields, offsets outside the point or data shorter than declared is
   rejected with a :class:`CloudError` saying what is wrong. Points with a NaN/inf coordinate
   are dropped when the message says it may have them (``is_dense`` false, as organised depth
   clouds do for pixels without depth) and reject the cloud otherwise;
2. transforms it into the robot base frame: identity for an empty ``frame_id`` or the base /
   output frame; else tf2 (when ``tf2_ros`` is importable and has the transform at the stamp);
   else the static pose given for the topic in ``camera_poses`` (``"topic=x y z qx qy qz
   qw"``, m and unit quaternion); else the cloud is rejected;
3. thins it to one point per ``cloud_resolution`` voxel (0 = keep all);
4. removes the points on the robot (:func:`~robot_collision.collision.self_filter.robot_filter`,
   padding ``cloud_padding``) at the joint state nearest the cloud's stamp (a cloud that
   arrives before any joint state is rejected: it cannot be self-filtered);
5. indexes it (:class:`~robot_collision.geometry.point_cloud.PointCloud`) and keeps it as the
   topic's world object (named after the topic), replacing the topic's previous cloud.

:meth:`SensedClouds.objects` returns the clouds not older than ``cloud_max_age`` (by stamp
against the node's clock; 0 = never too old); :meth:`SensedClouds.missing` names the topics
without such a cloud (the velocity filter then stops or ignores them, see its
``cloud_timeout_action``).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..collision.self_filter import robot_filter
from ..errors import ConfigurationError, RobotCollisionError
from ..geometry.cloud_index import voxel_downsample
from ..geometry.point_cloud import PointCloud
from ..geometry.shapes import WorldObject
from ..geometry.transforms import pose_from_position_quat
from ..model.robot_model import RobotModel
from .intake import CheckedSubscription, MessageLimits, MessageRejectedError

__all__ = [
    "CLOUD_PARAMETERS",
    "CloudError",
    "CloudSettings",
    "JointHistory",
    "SensedClouds",
    "pointcloud2_to_points",
    "points_to_pointcloud2",
    "validate_cloud_parameter",
]

# name: (default, description, constraints) -- merged into each node's PARAMETERS
CLOUD_PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "point_cloud_topics": (
        [],
        "sensor_msgs/PointCloud2 topics whose clouds are obstacles (empty = none); each topic's "
        "newest cloud replaces its previous one.",
        "topic names",
    ),
    "camera_poses": (
        [],
        "Static pose of a topic's cloud frame in the robot base frame, each 'topic=x y z qx qy "
        "qz qw' (m, unit quaternion); used when tf2 is not available or has no transform. Not "
        "needed for clouds in the base frame.",
        "each 'topic=x y z qx qy qz qw'",
    ),
    "cloud_resolution": (
        0.01,
        "Clouds are thinned to one point per voxel of this size (m); 0 = no thinning.",
        ">= 0",
    ),
    "cloud_padding": (
        0.015,
        "Points closer than this (m) to the robot, at the joint state nearest the cloud's "
        "stamp, are taken to be the robot itself and removed. Keep it below the safety "
        "distances: an obstacle's points closer than it to the arm are removed too.",
        ">= 0",
    ),
    "cloud_max_age": (
        1.0,
        "A cloud older than this (s, its stamp against the node's clock) no longer counts; "
        "0 = clouds never expire.",
        ">= 0",
    ),
    "cloud_max_points": (
        2_000_000,
        "Clouds with more points than this are rejected.",
        "> 0",
    ),
    "cloud_point_radius": (
        0.0,
        "Radius (m) of the ball around each cloud point (0 = the points themselves).",
        ">= 0",
    ),
}


LIVE_GRID_CELLS = 1 << 17
"""Grid cells of a live cloud's index (fewer than a static cloud's: built for every message,
~1 ms; the grid's lower bound is coarser, the hierarchy answers the rest exactly)."""


class CloudError(RobotCollisionError, ValueError):
    """A point cloud message cannot be used (bad fields, sizes, values or frame)."""


@dataclass(frozen=True)
class CloudSettings:
    """Validated cloud parameters (see :data:`CLOUD_PARAMETERS`)."""

    point_cloud_topics: tuple[str, ...] = ()
    camera_poses: tuple[tuple[str, tuple[float, ...]], ...] = ()
    cloud_resolution: float = 0.01
    cloud_padding: float = 0.015
    cloud_max_age: float = 1.0
    cloud_max_points: int = 2_000_000
    cloud_point_radius: float = 0.0


def _number(value: Any, name: str, minimum: float = 0.0, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < minimum or (strict and v == minimum):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise ConfigurationError(f"{name} must be finite and {bound}, got {value!r}")
    return v


def _strings(value: Any, name: str) -> list[str]:
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return []
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{name} must be a list of strings, got {value!r}")
    return [v.strip() for v in value if v.strip()]


def validate_cloud_parameter(name: str, value: Any) -> Any:
    """Validated value of one of :data:`CLOUD_PARAMETERS` (raises ConfigurationError)."""
    if name == "point_cloud_topics":
        topics = _strings(value, name)
        if len(set(topics)) != len(topics):
            raise ConfigurationError(f"point_cloud_topics lists a topic twice: {topics}")
        return tuple(topics)
    if name == "camera_poses":
        out = []
        for entry in _strings(value, name):
            topic, sep, rest = entry.partition("=")
            nums = rest.replace(",", " ").split()
            try:
                vals = tuple(float(v) for v in nums)
            except ValueError:
                vals = ()
            if not sep or not topic.strip() or len(vals) != 7 or not all(
                    map(math.isfinite, vals)):
                raise ConfigurationError(
                    f"camera_poses entry {entry!r} must be 'topic=x y z qx qy qz qw'")
            q = np.array(vals[3:])
            if abs(float(np.linalg.norm(q)) - 1.0) > 1e-3:
                raise ConfigurationError(
                    f"camera_poses entry {entry!r}: the quaternion must have unit length")
            out.append((topic.strip(), vals))
        return tuple(out)
    if name == "cloud_max_points":
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigurationError(f"cloud_max_points must be a positive integer, got {value!r}")
        return int(value)
    if name in ("cloud_resolution", "cloud_padding", "cloud_max_age", "cloud_point_radius"):
        return _number(value, name)
    raise ConfigurationError(f"unknown parameter {name!r}")


def cloud_settings(settings: Any) -> CloudSettings:
    """The :class:`CloudSettings` fields of a node's settings dataclass."""
    return CloudSettings(**{k: getattr(settings, k) for k in CLOUD_PARAMETERS})


# --------------------------------------------------------------------------- messages
_FLOAT32 = 7  # sensor_msgs/PointField datatypes
_FLOAT64 = 8


@njit(cache=True, boundscheck=False)
def _decode_f32(W, ix, iy, iz, T, drop_invalid, out):  # type: ignore[no-untyped-def]
    """x, y, z columns ``ix, iy, iz`` of the float32 records ``W`` (n, k), transformed by the
    rigid ``T`` (4, 4), into ``out`` (n, 3); non-finite points are skipped when
    ``drop_invalid``. Returns (points written, non-finite points seen)."""
    k = 0
    bad = 0
    for i in range(W.shape[0]):
        x = np.float64(W[i, ix])
        y = np.float64(W[i, iy])
        z = np.float64(W[i, iz])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            bad += 1
            if drop_invalid:
                continue
        for a in range(3):
            out[k, a] = T[a, 0] * x + T[a, 1] * y + T[a, 2] * z + T[a, 3]
        k += 1
    return k, bad


def pointcloud2_to_points(
    msg: Any, max_points: int = 2_000_000, transform: Optional[NDArray[np.float64]] = None
) -> NDArray[np.float64]:
    """``(N, 3)`` float64 x, y, z of a ``sensor_msgs/PointCloud2`` (frame of the message, or
    mapped by the rigid ``transform`` (4, 4) when given).

    Raises :class:`CloudError` for a cloud that is too large, lacks FLOAT32/FLOAT64 ``x``,
    ``y``, ``z`` fields, declares fields outside its point step or data shorter than
    ``row_step * height``, or (``is_dense`` true) holds non-finite points; non-finite points of
    a cloud that declares ``is_dense`` false are dropped."""
    width, height = int(msg.width), int(msg.height)
    n = width * height
    if n > max_points:
        raise CloudError(f"cloud has {n} points ({width} x {height}), more than "
                         f"cloud_max_points {max_points}")
    step, row = int(msg.point_step), int(msg.row_step)
    fields = {f.name: f for f in msg.fields}
    missing = [a for a in "xyz" if a not in fields]
    if missing:
        raise CloudError(f"cloud has no {', '.join(missing)} field(s) (fields: "
                         f"{sorted(fields)}); expected x, y, z of type FLOAT32 or FLOAT64")
    endian = ">" if msg.is_bigendian else "<"
    dtypes = []
    for a in "xyz":
        f = fields[a]
        if f.datatype not in (_FLOAT32, _FLOAT64) or int(getattr(f, "count", 1) or 1) != 1:
            raise CloudError(f"cloud field {a!r} has datatype {f.datatype} x {f.count}; "
                             "expected one FLOAT32 (7) or FLOAT64 (8)")
        size = 4 if f.datatype == _FLOAT32 else 8
        if f.offset < 0 or f.offset + size > step:
            raise CloudError(f"cloud field {a!r} at offset {f.offset} does not fit the point "
                             f"step {step}")
        dtypes.append((f.offset, f"{endian}f{size}"))
    if n == 0:
        return np.zeros((0, 3))
    if row < width * step:
        raise CloudError(f"cloud row_step {row} is shorter than width x point_step "
                         f"({width} x {step})")
    data = msg.data
    buf = data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data)
    if len(buf) < row * height:
        raise CloudError(f"cloud data has {len(buf)} bytes, fewer than row_step x height "
                         f"({row} x {height})")
    T = np.eye(4) if transform is None else np.ascontiguousarray(transform, dtype=np.float64)
    offs = [off for off, _ in dtypes]
    if (all(dt == "<f4" for _, dt in dtypes) and step % 4 == 0 and row % 4 == 0
            and all(o % 4 == 0 for o in offs)):
        # the common layout (little-endian float32, 4-byte aligned): one compiled pass that
        # decodes, checks and transforms without copying the fields
        W = np.frombuffer(buf, dtype="<f4", count=row * height // 4).reshape(height, row // 4)
        W = W[:, : width * step // 4].reshape(n, step // 4)
        out = np.empty((n, 3))
        k, bad = _decode_f32(W, offs[0] // 4, offs[1] // 4, offs[2] // 4, T,
                             not msg.is_dense, out)
        if bad and msg.is_dense:
            raise CloudError(f"cloud declares is_dense but {bad} of its points have NaN/inf "
                             "coordinates")
        return out[:k]
    raw = np.frombuffer(buf, dtype=np.uint8, count=row * height).reshape(height, row)
    raw = raw[:, : width * step].reshape(n, step)
    P = np.empty((n, 3))
    for col, (off, dt) in enumerate(dtypes):
        size = int(dt[-1])
        P[:, col] = np.ascontiguousarray(raw[:, off : off + size]).view(dt).ravel()
    finite = np.isfinite(P).all(axis=1)
    if not finite.all():
        if msg.is_dense:
            raise CloudError(f"cloud declares is_dense but {int((~finite).sum())} of its points "
                             "have NaN/inf coordinates")
        P = P[finite]
    if transform is not None:
        P = P @ T[:3, :3].T + T[:3, 3]
    return P


def points_to_pointcloud2(points: NDArray[np.float64], frame_id: str, stamp: Any = None) -> Any:
    """An unorganised, dense ``sensor_msgs/PointCloud2`` of FLOAT32 x, y, z."""
    from sensor_msgs.msg import PointCloud2, PointField

    P = np.ascontiguousarray(points, dtype="<f4").reshape(-1, 3)
    msg = PointCloud2()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    msg.height = 1
    msg.width = len(P)
    msg.fields = [PointField(name=a, offset=4 * i, datatype=_FLOAT32, count=1)
                  for i, a in enumerate("xyz")]
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * len(P)
    msg.is_dense = True
    msg.data = P.tobytes()
    return msg


# --------------------------------------------------------------------------- joint history
class JointHistory:
    """Recent joint states ``(time s, q)`` to self-filter a cloud at the nearest one."""

    def __init__(self, horizon: float = 5.0, maxlen: int = 2000) -> None:
        self._items: deque[tuple[float, NDArray[np.float64]]] = deque(maxlen=maxlen)
        self._horizon = horizon
        self._lock = threading.Lock()

    def add(self, t: float, q: NDArray[np.float64]) -> None:
        with self._lock:
            self._items.append((t, q))
            while self._items and self._items[-1][0] - self._items[0][0] > self._horizon:
                self._items.popleft()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def nearest(self, t: float) -> Optional[NDArray[np.float64]]:
        """The configuration whose time is nearest ``t`` (None if there is none)."""
        with self._lock:
            if not self._items:
                return None
            best = min(self._items, key=lambda item: abs(item[0] - t))
            return best[1]


# --------------------------------------------------------------------------- clouds
@dataclass(frozen=True)
class _Cloud:
    stamp: float  # s, the message's stamp (node clock)
    obj: WorldObject
    raw_points: int


TransformLookup = Callable[[str, float], Optional[NDArray[np.float64]]]


class SensedClouds:
    """The newest cloud of every topic, as world objects in the robot base frame (see the
    module docstring). Thread-safe: ``on_message`` may run in another thread than ``objects``.

    ``lookup(frame_id, stamp)`` returns the (4, 4) pose of ``frame_id`` in the base frame from
    tf2 (or None); ``base_frames`` are the frame ids taken as the base frame itself."""

    def __init__(self, settings: CloudSettings, lookup: Optional[TransformLookup] = None) -> None:
        self._settings = settings
        self._lookup = lookup
        self._robot: Optional[RobotModel] = None
        self._base_frames: frozenset[str] = frozenset({""})
        self._clouds: dict[str, _Cloud] = {}
        self._lock = threading.Lock()
        self.joints = JointHistory()
        self.stats = {"received": 0, "accepted": 0, "rejected": 0}
        self.last_error = ""

    @property
    def settings(self) -> CloudSettings:
        return self._settings

    def configure(self, settings: CloudSettings) -> None:
        """New parameters: clouds of topics no longer listed are dropped."""
        with self._lock:
            self._settings = settings
            for topic in list(self._clouds):
                if topic not in settings.point_cloud_topics:
                    del self._clouds[topic]

    def set_robot(self, robot: RobotModel, base_frames: Mapping[str, None] | set[str]) -> None:
        """The robot whose points are removed, and the frame ids that mean its base frame."""
        with self._lock:
            if robot is not self._robot:
                self.joints.clear()
                self._clouds.clear()
            self._robot = robot
            self._base_frames = frozenset({"", *base_frames})

    def _pose(self, topic: str, frame_id: str, stamp: float) -> NDArray[np.float64]:
        if frame_id in self._base_frames:
            return np.eye(4)
        if self._lookup is not None:
            T = self._lookup(frame_id, stamp)
            if T is not None:
                return T
        for name, vals in self._settings.camera_poses:
            if name == topic:
                return pose_from_position_quat(vals[:3], vals[3:])
        raise CloudError(
            f"no transform from the cloud's frame {frame_id!r} to the base frame: "
            f"{'tf2 has none; ' if self._lookup is not None else 'tf2 is not available; '}"
            f"give camera_poses '{topic}=x y z qx qy qz qw'")

    def on_message(self, topic: str, msg: Any, stamp: float) -> str:
        """Process one message of ``topic`` stamped ``stamp`` (s); returns a summary or raises
        :class:`CloudError` (the topic's previous cloud then stays)."""
        self.stats["received"] += 1
        try:
            text = self._process(topic, msg, stamp)
        except RobotCollisionError as exc:
            self.stats["rejected"] += 1
            self.last_error = f"{topic}: {exc}"
            if isinstance(exc, CloudError):
                raise
            raise CloudError(str(exc)) from exc
        self.stats["accepted"] += 1
        return text

    def _process(self, topic: str, msg: Any, stamp: float) -> str:
        s = self._settings
        if topic not in s.point_cloud_topics:
            raise CloudError(f"topic {topic!r} is not in point_cloud_topics")
        robot = self._robot
        if robot is None:
            raise CloudError("no robot model loaded yet")
        t0 = time.perf_counter()
        T = self._pose(topic, str(msg.header.frame_id), stamp)
        P = pointcloud2_to_points(msg, s.cloud_max_points, T)
        raw = len(P)
        if s.cloud_resolution > 0 and len(P):
            P = voxel_downsample(P, s.cloud_resolution)
        q = self.joints.nearest(stamp)
        if q is None:
            raise CloudError("no joint state received yet: the cloud cannot be self-filtered")
        if len(P):
            P = robot_filter(robot, P, q, s.cloud_padding)
        cloud = PointCloud(P, s.cloud_point_radius,
                           s.cloud_resolution if s.cloud_resolution > 0 else None,
                           grid_cells=LIVE_GRID_CELLS)
        cloud.index  # noqa: B018 - built here, in the cloud's callback, not in a control tick
        with self._lock:
            if topic in self._settings.point_cloud_topics:
                self._clouds[topic] = _Cloud(stamp, WorldObject(cloud, np.eye(4), topic), raw)
        return (f"{topic}: {raw} points -> {cloud.num_points} after thinning and self-filtering "
                f"in {1e3 * (time.perf_counter() - t0):.1f} ms")

    def _fresh(self, now: float) -> dict[str, _Cloud]:
        age = self._settings.cloud_max_age
        with self._lock:
            return {t: c for t, c in self._clouds.items() if age <= 0 or now - c.stamp <= age}

    def objects(self, now: float) -> list[WorldObject]:
        """World objects of the topics' current clouds (``now``: the node clock, s)."""
        fresh = self._fresh(now)
        return [fresh[t].obj for t in self._settings.point_cloud_topics if t in fresh]

    def missing(self, now: float) -> list[str]:
        """Topics of ``point_cloud_topics`` without a current cloud."""
        fresh = self._fresh(now)
        return [t for t in self._settings.point_cloud_topics if t not in fresh]


def tf2_lookup(node: Any, base_frame: Callable[[], str]) -> Optional[TransformLookup]:
    """A tf2 transform lookup for ``node`` when ``tf2_ros`` is importable, else None."""
    try:
        import tf2_ros  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer, node)  # kept alive by the closure

    def lookup(frame_id: str, stamp: float) -> Optional[NDArray[np.float64]]:
        from rclpy.time import Time

        try:
            tf = buffer.lookup_transform(base_frame(), frame_id, Time(seconds=stamp))
        except Exception:
            return None
        t, r = tf.transform.translation, tf.transform.rotation
        _ = listener
        return pose_from_position_quat([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])

    return lookup


def node_now(node: Any) -> float:
    """The node clock's time (s)."""
    return float(node.get_clock().now().nanoseconds) * 1e-9


def stamp_seconds(stamp: Any, node: Any) -> float:
    """A message stamp in seconds; the node clock's time for a zero stamp."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return node_now(node)
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


class CloudSubscriptions:
    """A node's subscriptions to its ``point_cloud_topics``, feeding ``clouds``; bad clouds are
    logged (throttled) and never raise out of the callback.

    Clouds arrive serialized and are size-checked with ``limits()`` (the node's message caps at
    that moment) before they are deserialized (:mod:`robot_collision.ros.intake`; the point
    bytes count against ``max_message_bytes``). ``before`` runs before each cloud is processed
    (a node that reads joint states on demand takes them there, for the self-filter)."""

    def __init__(self, node: Any, clouds: SensedClouds,
                 limits: Callable[[], MessageLimits], callback_group: Any = None,
                 before: Optional[Callable[[], object]] = None) -> None:
        self._node = node
        self._clouds = clouds
        self._group = callback_group
        self._limits = limits
        self._before = before
        self._subs: dict[str, CheckedSubscription] = {}

    @property
    def topics(self) -> list[str]:
        return list(self._subs)

    def sync(self) -> None:
        """Subscribe to the topics of the clouds' settings, unsubscribe from the others."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import PointCloud2

        wanted = self._clouds.settings.point_cloud_topics
        for topic in list(self._subs):
            if topic not in wanted:
                self._subs.pop(topic).destroy()
        qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.BEST_EFFORT)
        for topic in wanted:
            if topic not in self._subs:
                self._subs[topic] = CheckedSubscription(
                    self._node, PointCloud2, topic, functools.partial(self._on_cloud, topic),
                    qos, self._limits, functools.partial(self._on_rejected, topic),
                    "PointCloud2", callback_group=self._group)

    def _on_rejected(self, topic: str, exc: MessageRejectedError) -> None:
        self._clouds.stats["rejected"] += 1
        self._node.get_logger().error(f"point cloud rejected: {topic}: {exc}",
                                      throttle_duration_sec=2.0)

    def _on_cloud(self, topic: str, msg: Any) -> None:
        log = self._node.get_logger()
        try:
            if self._before is not None:
                self._before()
            text = self._clouds.on_message(topic, msg, stamp_seconds(msg.header.stamp, self._node))
            log.debug(text)
        except CloudError as exc:
            log.error(f"point cloud rejected: {topic}: {exc}", throttle_duration_sec=2.0)
        except Exception as exc:
            log.error(f"point cloud processing failed: {topic}: {type(exc).__name__}: {exc}",
                      throttle_duration_sec=2.0)
