"""Sensed obstacles for the nodes: ``sensor_msgs/PointCloud2`` topics as world objects.

Each node with point-cloud support (checker, velocity filter, planner) keeps one
:class:`SensedClouds`, fed by :class:`CloudSubscriptions` from a worker thread of its own (the
node's executor never runs cloud work: no tick is queued behind a cloud; the worker holds the
interpreter's lock for its Python and numpy steps only, taking, sorting, merging, transforming
and indexing run without it, see ``benchmarks/bench_cloud_delivery.py``). For every message on
a topic of ``point_cloud_topics`` it

1. refuses a cloud stamped more than ``cloud_max_future`` s ahead of the node's clock (it could
   not be aged: a camera that dies after it would be trusted for as long as the stamp is ahead);
2. converts the message (:func:`pointcloud2_to_grid`): fields ``x``, ``y``, ``z`` of type
   FLOAT32 or FLOAT64, either byte order, organised clouds kept as their pixel grid (NaN where
   a pixel has no return) and decimated to at most ``cloud_max_pixels`` (every k-th row and
   column) before anything else is done with them; a cloud with more than ``cloud_max_points``
   points, missing or mistyped fields, offsets outside the point or data shorter than declared
   is rejected with a :class:`CloudError` saying what is wrong, as is one declaring
   ``is_dense`` with NaN/inf points;
3. refuses a cloud with fewer than ``cloud_min_points`` valid points (all-NaN, empty: a blinded
   or faulty sensor, not free space) and marks its topic as without a current cloud until a
   good one arrives (the filter's ``cloud_timeout_action`` applies at once);
4. gives each sample the ball that covers its share of the surface (organised clouds: the
   sensor-model radius of :mod:`robot_collision.geometry.sensed_surface`, from the measured
   spacing of neighbouring pixels, at least ``cloud_point_radius``; patches whose samples are
   farther apart than ``cloud_resolution`` allows, as on faces seen at a grazing angle, get
   points in between so that no ball is much larger than 1.5 ``cloud_resolution``; unorganised
   clouds: ``cloud_point_radius``);
5. places it in the robot base frame: identity for an empty ``frame_id`` or the base / output
   frame; else tf2 at the cloud's stamp, waiting up to ``cloud_tf_timeout`` s (dynamic /tf);
   else the static pose given for the topic in ``camera_poses`` (``"topic=x y z qx qy qz
   qw"``, m and unit quaternion); else the cloud is rejected;
6. removes the samples on the robot (within ``cloud_padding`` of its geometry at the joint
   state nearest the cloud's stamp; a cloud that arrives before any joint state is rejected);
7. adds the space hidden behind each remaining sample along its camera ray, to
   ``cloud_occlusion_depth`` m (the sensor origin is the cloud frame's origin; clouds given in
   the base frame have none and get no occlusion); with ``cloud_unseen_range`` > 0 ("unseen
   is occupied", opt-in) up to that range from the sensor instead, and with
   ``cloud_unseen_min_range`` > 0 the pixels without a return too, from that range on;
   with ``cloud_persistence`` > 0 (opt-in) the samples are also fused into the topic's voxel
   map (:mod:`robot_collision.geometry.occupancy_map`) and the voxels seen before this cloud,
   not carved by its rays and not older than ``cloud_persistence``, stay as
   ``topic#persisted``;
8. merges the balls per ``cloud_resolution`` voxel (each merged ball contains the ones it
   replaces), groups them by radius class and keeps them, indexed
   (:class:`~robot_collision.geometry.point_cloud.PointCloud`), as the topic's world objects
   (``topic#r<radius>mm``), replacing the topic's previous cloud.

:meth:`SensedClouds.objects` returns the clouds not older than ``cloud_max_age`` (by stamp
against the node's clock; 0 = never too old); :meth:`SensedClouds.missing` names the topics
without such a cloud or whose newest message was refused as a faulty sensor, and
:meth:`SensedClouds.problems` says why (the velocity filter then stops or ignores them, see its
``cloud_timeout_action``).

What the safety distance then guarantees (the filter keeps it from the balls): against every
surface the camera sampled, if it is planar between neighbouring samples (no thin features
between pixels), and against anything hidden within ``cloud_occlusion_depth`` behind a seen
surface, minus the depth noise the radii do not include (give ``cloud_point_radius`` >= about 3
noise standard deviations). Not guaranteed: objects no sensor sees (outside the field of view,
farther than ``cloud_occlusion_depth`` behind a seen surface, thinner than a pixel), and
anything that moved since the cloud's stamp (up to ``cloud_max_age``).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, cast

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..collision.self_filter import robot_filter_mask
from ..errors import ConfigurationError, RobotCollisionError
from ..geometry.occupancy_map import FusedOccupancy, FusionOptions
from ..geometry.point_cloud import PointCloud
from ..geometry.sensed_surface import (
    grid_surface,
    merge_balls,
    no_return_samples,
    occlusion_balls,
    pixel_angle,
    radius_classes,
    unseen_balls,
)
from ..geometry.shapes import WorldObject
from ..geometry.transforms import pose_from_position_quat
from ..model.robot_model import RobotModel
from .intake import MessageLimits, MessageRejectedError

__all__ = [
    "CLOUD_PARAMETERS",
    "CloudSubscriptions",
    "pointcloud2_to_grid",
    "pointcloud2_to_valid_grid",
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
        "Smallest radius (m) of the ball around each cloud point; organised clouds (height > 1) "
        "get at least the sensor-model radius that covers the surface between neighbouring "
        "pixels (see robot_collision.geometry.sensed_surface), unorganised ones exactly this.",
        ">= 0",
    ),
    "cloud_occlusion_depth": (
        0.1,
        "The space behind each measured point along its camera ray is an obstacle up to this "
        "depth (m; 0 = none). Needs the sensor origin: tf2 or camera_poses (clouds in the base "
        "frame have none and get no occlusion).",
        ">= 0",
    ),
    "cloud_unseen_range": (
        0.0,
        "Opt-in 'unseen is occupied' (m; 0 = off): inside the camera's frustum, everything "
        "farther along a pixel's ray than its measured point, up to this range from the sensor, "
        "is an obstacle (the occlusion depth becomes max(cloud_occlusion_depth, this - range)). "
        "Pixels with no return stay free (see cloud_unseen_min_range); needs the sensor "
        "origin as cloud_occlusion_depth does.",
        ">= 0",
    ),
    "cloud_unseen_min_range": (
        0.0,
        "With cloud_unseen_range: pixels with no return (dropouts, nothing within range) are "
        "obstacles too, from this range (m) from the sensor to cloud_unseen_range (0 = they "
        "stay free). Their rays come from a pinhole model fitted to the cloud's valid pixels "
        "(organised clouds in an optical frame, z forward; others get none).",
        ">= 0",
    ),
    "cloud_persistence": (
        0.0,
        "Seen surfaces persist (s; 0 = off): each topic's samples are fused into a voxel map "
        "(voxel side cloud_resolution, 0.01 m when 0) in the base frame; a voxel stays an "
        "obstacle this long after it was last seen unless a newer ray of the topic passes "
        "through it (robot_collision.geometry.occupancy_map). Its balls reach half the voxel "
        "diagonal plus 1.5 voxel sides (the sample spacing the surface model allows).",
        ">= 0",
    ),
    "cloud_max_incidence": (
        1.4,
        "Neighbouring pixels farther apart than a surface seen at this incidence angle (rad from "
        "the surface normal) are a depth edge, not one surface.",
        "[0, 1.55]",
    ),
    "cloud_min_points": (
        10,
        "A cloud with fewer valid (finite) points than this is a faulty sensor (blinded, "
        "all-NaN, empty), not free space: it is refused and its topic counts as without a "
        "current cloud (the filter's cloud_timeout_action applies).",
        ">= 0",
    ),
    "cloud_max_future": (
        0.1,
        "A cloud stamped more than this (s) ahead of the node's clock is refused.",
        ">= 0",
    ),
    "cloud_max_pixels": (
        30_000,
        "Organised clouds with more points are decimated (every k-th row and column) to at most "
        "this many before any other work; the sensor-model radius covers the wider spacing.",
        "> 0",
    ),
    "cloud_tf_timeout": (
        0.2,
        "How long (s) a cloud waits for tf2 to have its frame at its stamp (dynamic /tf).",
        ">= 0",
    ),
}


LIVE_GRID_CELLS = 1 << 17
"""Most grid cells of a live cloud's index (fewer than a static cloud's: built for every
message; the grid's lower bound is coarser, the hierarchy answers the rest exactly)."""

LIVE_GRID_PER_POINT = 2
"""A live radius class of n balls gets a grid of at most ``LIVE_GRID_PER_POINT * n`` cells (at
least ``LIVE_GRID_MIN``): the grid's build time grows with its cells, and a 1 M-point cloud has
5-8 classes of 0.05-35 k balls (the grid of every class at ``LIVE_GRID_CELLS`` was 9 of its 15
ms of index building)."""

LIVE_GRID_MIN = 1 << 12


def live_grid_cells(n: int) -> int:
    """Grid cells of the index of a live radius class of ``n`` balls."""
    return int(min(LIVE_GRID_CELLS, max(LIVE_GRID_MIN, LIVE_GRID_PER_POINT * n)))


SHADOW_MERGE = 1.0
"""The occlusion balls are merged per voxel of this many ``cloud_resolution`` (2 made the demo
camera's shadow balls up to 46 mm: they reached out of the box's edges into the arm's path)."""


UNSEEN_MERGE = 2.0
"""The "unseen is occupied" balls (``cloud_unseen_range``) are placed along the rays in steps of
and merged per voxel of this many ``cloud_resolution`` (1: 222 k balls and 435 ms of the worker
per 200 x 150 cloud of 60 small boxes; 2: 98 k, ~300 ms; 3: 53 k, ~250 ms, but the arm kept
farther from the hidden face in sensing_truth's hidden_unseen: 106 mm vs 91 mm with 1, 98 mm
with 2; shared 2-core machine at load ~5; the balls reach at most half a voxel diagonal
farther)."""


HOLLOW_SHELL = True
"""The occlusion shell is hollow: rays of samples inside a surface get only their back ball
(:func:`~robot_collision.geometry.sensed_surface.occlusion_balls`, ``back_only``); the filled
shell was ~3 x the balls, most of a 1 M-point cloud's worker time and scene size."""


class CloudError(RobotCollisionError, ValueError):
    """A point cloud message cannot be used (bad fields, sizes, values or frame)."""


@dataclass(frozen=True)
class CloudSettings:
    """Validated cloud parameters (see :data:`CLOUD_PARAMETERS`); the settings of the nodes
    that take clouds extend it."""

    point_cloud_topics: tuple[str, ...] = ()
    camera_poses: tuple[tuple[str, tuple[float, ...]], ...] = ()
    cloud_resolution: float = 0.01
    cloud_padding: float = 0.015
    cloud_max_age: float = 1.0
    cloud_max_points: int = 2_000_000
    cloud_point_radius: float = 0.0
    cloud_occlusion_depth: float = 0.1
    cloud_unseen_range: float = 0.0
    cloud_unseen_min_range: float = 0.0
    cloud_persistence: float = 0.0
    cloud_max_incidence: float = 1.4
    cloud_min_points: int = 10
    cloud_max_future: float = 0.1
    cloud_max_pixels: int = 30_000
    cloud_tf_timeout: float = 0.2


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
    if name in ("cloud_max_points", "cloud_max_pixels", "cloud_min_points"):
        low = 0 if name == "cloud_min_points" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigurationError(f"{name} must be an integer >= {low}, got {value!r}")
        return int(value)
    if name == "cloud_max_incidence":
        v = _number(value, name)
        if v > 1.55:
            raise ConfigurationError(f"cloud_max_incidence must be in [0, 1.55] rad, got {value!r}")
        return v
    if name in ("cloud_resolution", "cloud_padding", "cloud_max_age", "cloud_point_radius",
                "cloud_occlusion_depth", "cloud_max_future", "cloud_tf_timeout",
                "cloud_unseen_range", "cloud_unseen_min_range", "cloud_persistence"):
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


@njit(cache=True, nogil=True, boundscheck=False)
def _rigid(P, T, out):  # type: ignore[no-untyped-def]
    for i in range(P.shape[0]):
        x, y, z = P[i, 0], P[i, 1], P[i, 2]
        for a in range(3):
            out[i, a] = T[a, 0] * x + T[a, 1] * y + T[a, 2] * z + T[a, 3]


@njit(cache=True, nogil=True, boundscheck=False)
def _gather_f32(F, k, step4, o4, G):  # type: ignore[no-untyped-def]
    """``G[i, j, c] = F[i * k, j * k * step4 + o4[c]]``: the x, y, z of every ``k``-th row and
    column of an organised float32 cloud ``F`` (height, row_step / 4), without the
    interpreter's lock (numpy's three strided gathers held it ~1.2 ms per 1 M-point cloud)."""
    for i in range(G.shape[0]):
        r = i * k
        for j in range(G.shape[1]):
            base = j * k * step4
            for c in range(3):
                G[i, j, c] = F[r, base + o4[c]]


@njit(cache=True, nogil=True, boundscheck=False)
def _finite_points(G, valid):  # type: ignore[no-untyped-def]
    """``valid[i, j]`` = x, y, z of ``G[i, j]`` all finite; returns how many are (a compiled
    loop without the lock: numpy's ``isfinite(G).all(-1)`` took ~0.5 ms on 30 k pixels)."""
    n = 0
    for i in range(G.shape[0]):
        for j in range(G.shape[1]):
            ok = (math.isfinite(G[i, j, 0]) and math.isfinite(G[i, j, 1])
                  and math.isfinite(G[i, j, 2]))
            valid[i, j] = ok
            n += ok
    return n


def rigid_transform(P: NDArray[np.float64], T: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P`` (N, 3) mapped by the rigid ``T`` (4, 4), without the interpreter's lock and without
    BLAS: numpy's ``P @ R.T`` on 100 k points starts OpenBLAS's worker threads, which then spin
    for a while on the other core (~30 ms of CPU per 1 M-point cloud, taken from the tick)."""
    out = np.empty((len(P), 3))
    _rigid(np.ascontiguousarray(P, dtype=np.float64),
           np.ascontiguousarray(T, dtype=np.float64), out)
    return out


class _CloudLayout(NamedTuple):
    """The checked layout of a ``sensor_msgs/PointCloud2``: its size, steps (bytes), the byte
    offset and numpy dtype of x, y, z, and its data as a byte buffer of at least
    ``row * height`` bytes (``None`` for a cloud without points)."""

    width: int
    height: int
    step: int
    row: int
    dtypes: list[tuple[int, str]]
    buf: Any

    def f32_words(self) -> Optional[tuple[int, int, int]]:
        """The x, y, z offsets in float32 words when the data can be read as native float32
        words (little-endian FLOAT32 fields, 4-byte aligned, on a little-endian machine: what
        cameras send), else ``None``."""
        if (sys.byteorder != "little" or self.step % 4 or self.row % 4
                or any(dt != "<f4" or off % 4 for off, dt in self.dtypes)):
            return None
        x, y, z = (off // 4 for off, _ in self.dtypes)
        return x, y, z


def _cloud_layout(msg: Any, max_points: int) -> _CloudLayout:
    """Checks a ``PointCloud2``'s size, x/y/z fields, steps and data length (raises
    :class:`CloudError` saying which is wrong); the checks :func:`pointcloud2_to_points` and
    :func:`pointcloud2_to_valid_grid` share."""
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
        dtypes.append((int(f.offset), f"{endian}f{size}"))
    if n == 0:
        return _CloudLayout(width, height, step, row, dtypes, None)
    if row < width * step:
        raise CloudError(f"cloud row_step {row} is shorter than width x point_step "
                         f"({width} x {step})")
    data = msg.data
    if isinstance(data, (bytes, bytearray)):
        buf: Any = data
    else:
        try:  # rclpy's array.array('B'), a memoryview: read in place, not copied
            buf = memoryview(data).cast("B")
        except TypeError:  # a list of ints
            buf = bytes(data)
    if len(buf) < row * height:
        raise CloudError(f"cloud data has {len(buf)} bytes, fewer than row_step x height "
                         f"({row} x {height})")
    return _CloudLayout(width, height, step, row, dtypes, buf)


def pointcloud2_to_points(
    msg: Any, max_points: int = 2_000_000, transform: Optional[NDArray[np.float64]] = None
) -> NDArray[np.float64]:
    """``(N, 3)`` float64 x, y, z of a ``sensor_msgs/PointCloud2`` (frame of the message, or
    mapped by the rigid ``transform`` (4, 4) when given).

    Raises :class:`CloudError` for a cloud that is too large, lacks FLOAT32/FLOAT64 ``x``,
    ``y``, ``z`` fields, declares fields outside its point step or data shorter than
    ``row_step * height``, or (``is_dense`` true) holds non-finite points; non-finite points of
    a cloud that declares ``is_dense`` false are dropped."""
    lay = _cloud_layout(msg, max_points)
    if lay.buf is None:
        return np.zeros((0, 3))
    width, height, step, row, dtypes, buf = lay
    n = width * height
    T = np.eye(4) if transform is None else np.ascontiguousarray(transform, dtype=np.float64)
    words = lay.f32_words()
    if words is not None:
        # the common layout: one compiled pass that decodes, checks and transforms without
        # copying the fields
        W = np.frombuffer(buf, dtype=np.float32, count=row * height // 4).reshape(height, -1)
        W = W[:, : width * step // 4].reshape(n, step // 4)
        out = np.empty((n, 3))
        k, bad = _decode_f32(W, words[0], words[1], words[2], T, not msg.is_dense, out)
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


def pointcloud2_to_grid(
    msg: Any, max_points: int = 2_000_000, max_pixels: int = 0
) -> tuple[NDArray[np.float64], int]:
    """``(G, k)``: the x, y, z of a ``sensor_msgs/PointCloud2`` as an (h, w, 3) float64 grid in
    the message's frame (NaN where a point is not finite), every ``k``-th row and column of an
    organised cloud so that ``h * w <= max_pixels`` (0 = all; ``k`` = 1 for unorganised clouds,
    which are (1, n, 3)). Decimated before any conversion: a 1 M-point cloud costs the pixels
    kept. Same checks and errors as :func:`pointcloud2_to_points`; a cloud declaring
    ``is_dense`` with non-finite points is rejected."""
    G, k, _, _ = pointcloud2_to_valid_grid(msg, max_points, max_pixels)
    return G, k


def pointcloud2_to_valid_grid(
    msg: Any, max_points: int = 2_000_000, max_pixels: int = 0
) -> tuple[NDArray[np.float64], int, NDArray[np.bool_], int]:
    """``(G, k, valid, count)``: :func:`pointcloud2_to_grid` with its valid-pixel mask
    ``valid`` (h, w) (x, y, z all finite) and their number, computed once for both the
    ``is_dense`` check and the caller."""
    lay = _cloud_layout(msg, max_points)
    if lay.buf is None:
        return np.zeros((1, 0, 3)), 1, np.zeros((1, 0), np.bool_), 0
    width, height, step, row, dtypes, buf = lay
    n = width * height
    k = 1
    if height > 1 and max_pixels > 0 and n > max_pixels:
        k = math.ceil(math.sqrt(n / max_pixels))
        while ((height + k - 1) // k) * ((width + k - 1) // k) > max_pixels:
            k += 1
    h, w = (height + k - 1) // k, (width + k - 1) // k
    G = np.empty((h, w, 3))
    words = lay.f32_words()
    if words is not None:
        # the usual camera layout: one compiled gather (see _gather_f32)
        F = np.frombuffer(buf, dtype=np.float32, count=row * height // 4).reshape(height, -1)
        _gather_f32(F, k, step // 4, np.array(words, np.int64), G)
    else:
        raw = np.frombuffer(buf, dtype=np.uint8, count=row * height).reshape(height, row)
        raw = raw[::k, : width * step].reshape(-1, width, step)[:, ::k]
        for col, (off, dt) in enumerate(dtypes):
            size = int(dt[-1])
            G[:, :, col] = np.ascontiguousarray(raw[:, :, off : off + size]).view(dt)[..., 0]
    valid = np.empty(G.shape[:2], np.bool_)
    count = int(_finite_points(G, valid))
    if msg.is_dense and count < G.shape[0] * G.shape[1]:
        raise CloudError(f"cloud declares is_dense but {G.shape[0] * G.shape[1] - count} of its "
                         "points have NaN/inf coordinates")
    if height <= 1:
        G = G.reshape(1, -1, 3)
        valid = valid.reshape(1, -1)
    return G, k, valid, count


def pointcloud2_view(raw: bytes | memoryview, limits: MessageLimits) -> Any:
    """A ``sensor_msgs/PointCloud2`` read from its serialized bytes without deserializing
    them: the header, sizes and fields as attributes (as on the message), ``data`` a memoryview
    of ``raw`` (no copy). rclpy's deserialization copies the point bytes into a Python array
    holding the interpreter's lock (~14 ms for 12 MB: the filter's tick waited for it).
    Checked first with :func:`~robot_collision.ros.intake.check_serialized` (caps, well-formed
    CDR); raises :class:`MessageRejectedError`."""
    import struct
    from types import SimpleNamespace

    from sensor_msgs.msg import PointCloud2

    from .intake import _ENCAPSULATIONS, check_serialized

    # (check_serialized reads any buffer: lengths, slices and struct.unpack_from)
    check_serialized(cast(bytes, raw), PointCloud2, limits, "PointCloud2")
    little, _ = _ENCAPSULATIONS[bytes(raw[:2])]
    e = "<" if little else ">"
    buf = memoryview(raw)
    o = 4  # after the encapsulation header; alignment is relative to it

    def u32() -> int:
        nonlocal o
        o += (-(o - 4)) % 4
        (v,) = struct.unpack_from(e + "I", buf, o)
        o += 4
        return int(v)

    def string() -> str:
        nonlocal o
        n = u32()
        text = bytes(buf[o: o + max(0, n - 1)]).decode("utf-8", "replace")
        o += n
        return text

    def u8() -> int:
        nonlocal o
        o += 1
        return int(buf[o - 1])

    try:
        sec = u32()
        sec = sec - (1 << 32) if sec >= 1 << 31 else sec
        stamp = SimpleNamespace(sec=sec, nanosec=u32())
        header = SimpleNamespace(stamp=stamp, frame_id=string())
        height, width = u32(), u32()
        fields = []
        for _ in range(u32()):
            name = string()
            offset = u32()
            datatype = u8()
            fields.append(SimpleNamespace(name=name, offset=offset, datatype=datatype,
                                          count=u32()))
        is_bigendian = bool(u8())
        point_step, row_step = u32(), u32()
        n = u32()
        data = buf[o: o + n]
        o += n
        is_dense = bool(u8())
    except (struct.error, IndexError) as exc:
        raise MessageRejectedError(f"malformed PointCloud2: {exc}") from None
    if len(data) != n:
        raise MessageRejectedError("malformed PointCloud2: data shorter than its length")
    return SimpleNamespace(header=header, height=height, width=width, fields=fields,
                           is_bigendian=is_bigendian, point_step=point_step, row_step=row_step,
                           data=data, is_dense=is_dense)


def points_to_pointcloud2(points: NDArray[np.float64], frame_id: str, stamp: Any = None) -> Any:
    """A ``sensor_msgs/PointCloud2`` of FLOAT32 x, y, z: unorganised and dense for (N, 3)
    points, organised (height x width, ``is_dense`` false when a point is NaN: no return) for
    an (H, W, 3) grid."""
    from sensor_msgs.msg import PointCloud2, PointField

    A = np.asarray(points)
    height = A.shape[0] if A.ndim == 3 else 1
    P = np.ascontiguousarray(A, dtype="<f4").reshape(-1, 3)
    msg = PointCloud2()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    msg.height = height
    msg.width = len(P) // height if height else 0
    msg.fields = [PointField(name=a, offset=4 * i, datatype=_FLOAT32, count=1)
                  for i, a in enumerate("xyz")]
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * msg.width
    msg.is_dense = bool(np.isfinite(P).all())
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
    objects: tuple[WorldObject, ...]  # one per radius class (see sensed_surface)
    raw_points: int


@dataclass(frozen=True)
class CloudInput:
    """What :meth:`SensedClouds.reduce` needs of one accepted message (small: the grid is
    decimated to ``cloud_max_pixels``), picklable for a worker process."""

    topic: str
    G: NDArray[np.float64]  # (h, w, 3) the message frame's x, y, z (m), NaN = no return
    valid: NDArray[np.bool_]  # (h, w) finite pixels of G
    raw: int  # valid pixels
    T: Optional[NDArray[np.float64]]  # (4, 4) message frame in the base frame; None = base
    q: NDArray[np.float64]  # (n,) joint positions (rad / m) at the stamp, for the self-filter
    stamp: float  # s, the message's stamp (node clock)


TransformLookup = Callable[..., Optional[NDArray[np.float64]]]


class SensedClouds:
    """The newest cloud of every topic, as world objects in the robot base frame (see the
    module docstring). Thread-safe: ``on_message`` may run in another thread than ``objects``.

    ``lookup(frame_id, stamp, timeout)`` returns the (4, 4) pose of ``frame_id`` in the base
    frame from tf2 (or None), waiting up to ``timeout`` s for it; ``base_frames`` are the frame
    ids taken as the base frame itself."""

    def __init__(self, settings: CloudSettings, lookup: Optional[TransformLookup] = None) -> None:
        self._settings = settings
        self._lookup = lookup
        self._robot: Optional[RobotModel] = None
        self._base_frames: frozenset[str] = frozenset({""})
        self._clouds: dict[str, _Cloud] = {}
        self._faults: dict[str, str] = {}
        self._fused: dict[str, FusedOccupancy] = {}  # cloud_persistence > 0
        self._lock = threading.Lock()
        self.joints = JointHistory()
        self.stats = {"received": 0, "accepted": 0, "rejected": 0, "faulty": 0}
        self.last_error = ""
        # called (in the thread of on_message) with what objects() will return once a new
        # cloud is in, BEFORE it is: the filter node builds its checker's scene for it there,
        # so its tick never sees a cloud whose scene is not built (packing ~100 k balls took
        # the tick 60-80 ms); an exception in it only leaves the building to the caller
        self.prepare: Optional[Callable[[list[WorldObject]], object]] = None
        # runs :meth:`reduce` of each accepted cloud when set (e.g. in a worker process:
        # :class:`~robot_collision.ros.cloud_process.CloudProcess`); same result and errors
        self.reducer: Optional[Callable[[CloudInput], tuple[tuple[WorldObject, ...], int]]] = None

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
            for topic in list(self._faults):
                if topic not in settings.point_cloud_topics:
                    del self._faults[topic]
            for topic in list(self._fused):  # (another voxel side or persistence: a new map)
                if topic not in settings.point_cloud_topics:
                    del self._fused[topic]

    def set_robot(self, robot: RobotModel, base_frames: Mapping[str, None] | set[str]) -> None:
        """The robot whose points are removed, and the frame ids that mean its base frame."""
        with self._lock:
            if robot is not self._robot:
                self.joints.clear()
                self._clouds.clear()
                self._fused.clear()
            self._robot = robot
            self._base_frames = frozenset({"", *base_frames})

    def model(self) -> tuple[Optional[RobotModel], frozenset[str]]:
        """The robot whose points are removed and the frame ids taken as its base frame."""
        with self._lock:
            return self._robot, self._base_frames

    def _pose(self, topic: str, frame_id: str, stamp: float) -> Optional[NDArray[np.float64]]:
        """The frame's pose in the base frame; None for the base frame itself (no sensor
        origin known)."""
        if frame_id in self._base_frames:
            return None
        if self._lookup is not None:
            try:
                T = self._lookup(frame_id, stamp, self._settings.cloud_tf_timeout)
            except TypeError:  # a lookup without a timeout argument
                T = self._lookup(frame_id, stamp)
            if T is not None:
                return T
        for name, vals in self._settings.camera_poses:
            if name == topic:
                return pose_from_position_quat(vals[:3], vals[3:])
        why = ("tf2 has none within cloud_tf_timeout; " if self._lookup is not None
               else "tf2 is not available; ")
        raise CloudError(
            f"no transform from the cloud's frame {frame_id!r} to the base frame: {why}"
            f"give camera_poses '{topic}=x y z qx qy qz qw' or publish the frame on /tf")

    def on_message(self, topic: str, msg: Any, stamp: float, now: Optional[float] = None) -> str:
        """Process one message of ``topic`` stamped ``stamp`` (s; ``now``: the node clock, for
        the future-stamp check); returns a summary or raises :class:`CloudError` (the topic's
        previous cloud then stays; a faulty-sensor cloud also marks the topic as without a
        current cloud until a good one arrives)."""
        self.stats["received"] += 1
        try:
            text = self._process(topic, msg, stamp, now)
        except RobotCollisionError as exc:
            self.stats["rejected"] += 1
            self.last_error = f"{topic}: {exc}"
            if isinstance(exc, CloudError):
                raise
            raise CloudError(str(exc)) from exc
        self.stats["accepted"] += 1
        return text

    def _fault(self, topic: str, text: str) -> CloudError:
        with self._lock:
            if topic in self._settings.point_cloud_topics:
                self._faults[topic] = text
        self.stats["faulty"] += 1
        return CloudError(text)

    def _process(self, topic: str, msg: Any, stamp: float, now: Optional[float]) -> str:
        t0 = time.perf_counter()
        inp = self.cloud_input(topic, msg, stamp, now)
        objects, n = (self.reducer or self.reduce)(inp)
        self._adopt(inp, objects, now)
        return (f"{topic}: {inp.raw} valid points -> {n} balls in {len(objects)} radius classes "
                f"in {1e3 * (time.perf_counter() - t0):.1f} ms")

    def cloud_input(self, topic: str, msg: Any, stamp: float, now: Optional[float]) -> CloudInput:
        """The checks of a message and what :meth:`reduce` needs of it (decimated grid, sensor
        pose, joint positions at the stamp); raises :class:`CloudError` (a faulty sensor's cloud
        also marks the topic)."""
        s = self._settings
        if topic not in s.point_cloud_topics:
            raise CloudError(f"topic {topic!r} is not in point_cloud_topics")
        robot = self._robot
        if robot is None:
            raise CloudError("no robot model loaded yet")
        if now is not None and stamp > now + s.cloud_max_future:
            raise self._fault(
                topic, f"cloud stamped {stamp - now:.3f} s ahead of the node's clock (more than "
                f"cloud_max_future {s.cloud_max_future:g} s): the stamp is wrong, the cloud "
                "cannot be aged; fix the sensor's clock")
        T = self._pose(topic, str(msg.header.frame_id), stamp)
        G, _, valid, raw = pointcloud2_to_valid_grid(msg, s.cloud_max_points, s.cloud_max_pixels)
        if raw < max(1, s.cloud_min_points):
            raise self._fault(
                topic, f"cloud has {raw} valid points of {int(msg.width) * int(msg.height)} "
                f"(fewer than cloud_min_points {s.cloud_min_points}): a blinded or faulty "
                "sensor, not free space")
        q = self.joints.nearest(stamp)
        if q is None:
            raise CloudError("no joint state received yet: the cloud cannot be self-filtered")
        return CloudInput(topic, G, valid, raw, T, q, stamp)

    def reduce(self, inp: CloudInput) -> tuple[tuple[WorldObject, ...], int]:
        """The obstacle of one cloud (module docstring): ``(objects, balls)``, one object per
        radius class (plus the topic's persisted voxels), their indexes built. The per-point
        work; ``reducer`` (when set) runs it elsewhere, e.g. in a process of its own
        (:mod:`robot_collision.ros.cloud_process`)."""
        s = self._settings
        robot = self._robot
        if robot is None:
            raise CloudError("no robot model loaded yet")
        topic, G, valid, raw, T, q, stamp = (inp.topic, inp.G, inp.valid, inp.raw, inp.T, inp.q,
                                              inp.stamp)
        # shadow radius of each sample: the cone between its ray and the neighbouring rays
        # (half the diagonal of the pixel footprint; to the next ray on a silhouette)
        if G.shape[0] > 1 and G.shape[1] > 1:
            # balls up to 1.5 x cloud_resolution before merging: a camera's usual spacing at
            # range needs no points added (only faces seen at grazing angles do)
            target = 1.5 * s.cloud_resolution if s.cloud_resolution > 0 else math.inf
            inner: Optional[NDArray[np.bool_]] = np.zeros(G.shape[:2], dtype=bool)
            Rg, Pe, Re = grid_surface(G, s.cloud_max_incidence, target, s.cloud_point_radius,
                                      inner)
            P, R = np.concatenate([G[valid], Pe]), np.concatenate([Rg[valid], Re])
            alpha = pixel_angle(G)
            ray = np.linalg.norm(G[valid], axis=1) * (alpha if math.isfinite(alpha) else 0.0)
            # silhouette samples (radius >= range x pixel angle) reach to the next ray
            Rsh = np.maximum(np.maximum(s.cloud_point_radius, ray * math.sqrt(0.5)),
                             np.minimum(Rg[valid], ray))
        else:
            P, R = G[valid], np.full(raw, s.cloud_point_radius)
            Rsh = R.copy()
            inner = None
        Tb = np.eye(4) if T is None else T
        Pb = rigid_transform(P, Tb)
        # the samples on the robot (within cloud_padding of it) are removed, by the sample's
        # own position: a ball of an obstacle's sample that reaches the robot stays (the arm is
        # that close to the obstacle); the occlusion balls are not self-filtered (the arm
        # pressing into the space behind a seen surface must not carve it away)
        keep = robot_filter_mask(robot, Pb, q, s.cloud_padding)
        shadowed = keep[:raw]
        P, R, Pb = P[keep], R[keep], Pb[keep]
        C, Rc = Pb, R
        unseen = s.cloud_unseen_range
        if T is not None and (s.cloud_occlusion_depth > 0.0 or unseen > 0.0) and shadowed.any():
            # behind the samples (not the points added between them: their rays lie within
            # the samples' shadow radius)
            back = None
            if inner is not None and HOLLOW_SHELL:
                # a hollow shell: rays inside a surface get only their back ball; samples next
                # to a self-filtered one fill theirs (the shell's side there)
                gone = np.zeros(G.shape[:2], dtype=bool)
                gone[valid] = ~shadowed
                if gone.any():
                    near = gone.copy()
                    near[1:] |= gone[:-1]
                    near[:-1] |= gone[1:]
                    near[:, 1:] |= near[:, :-1].copy()
                    near[:, :-1] |= near[:, 1:].copy()
                    inner &= ~near
                back = inner[valid][shadowed]
            Gs = G[valid][shadowed]
            step = max(s.cloud_resolution, 0.005)
            S, Rs = occlusion_balls(Gs, Rsh[shadowed], s.cloud_occlusion_depth, step, back)
            Sb = rigid_transform(S, Tb)
            if s.cloud_resolution > 0:
                # the shell behind the surfaces is a volume: merged on its own lattice
                # (SHADOW_MERGE x cloud_resolution)
                Sb, Rs = merge_balls(Sb, Rs, SHADOW_MERGE * s.cloud_resolution)
                C, Rc = merge_balls(C, Rc, s.cloud_resolution)
            C = np.concatenate([C, Sb])
            Rc = np.concatenate([Rc, Rs])
            if unseen > 0.0:
                # "unseen is occupied": on to the range limit, in steps of and merged on a
                # coarser lattice (UNSEEN_MERGE x cloud_resolution)
                U, Ru = unseen_balls(Gs, Rsh[shadowed], s.cloud_occlusion_depth, unseen,
                                     UNSEEN_MERGE * step, back)
                Ub = rigid_transform(U, Tb)
                if s.cloud_resolution > 0:
                    Ub, Ru = merge_balls(Ub, Ru, UNSEEN_MERGE * s.cloud_resolution)
                C = np.concatenate([C, Ub])
                Rc = np.concatenate([Rc, Ru])
        if T is not None and unseen > s.cloud_unseen_min_range > 0.0 and G.shape[0] > 1:
            # pixels with no return: from cloud_unseen_min_range on to the range limit
            Pv, Rv, iv = no_return_samples(G, s.cloud_unseen_min_range)
            if len(Pv):
                step = UNSEEN_MERGE * max(s.cloud_resolution, 0.005)
                V, Rvv = unseen_balls(Pv, Rv, 0.0, unseen, step, iv if HOLLOW_SHELL else None)
                V = rigid_transform(np.concatenate([Pv, V]), Tb)
                Rvv = np.concatenate([Rv, Rvv])
                if s.cloud_resolution > 0:
                    V, Rvv = merge_balls(V, Rvv, UNSEEN_MERGE * s.cloud_resolution)
                C = np.concatenate([C, V])
                Rc = np.concatenate([Rc, Rvv])
        elif s.cloud_resolution > 0 and len(C):
            C, Rc = merge_balls(C, Rc, s.cloud_resolution)
        objects = []
        n = 0
        for _k, radius, centres in radius_classes(C, Rc):
            n += len(centres)
            cloud = PointCloud(centres, radius, None, grid_cells=live_grid_cells(len(centres)))
            cloud.index  # noqa: B018 - built here, off the control tick
            objects.append(WorldObject(cloud, np.eye(4), f"{topic}#r{1e3 * radius:.1f}mm"))
        if s.cloud_persistence > 0.0:
            objects += self._persisted(topic, Pb, stamp, T, robot, q)
        return tuple(objects), n

    def _adopt(self, inp: CloudInput, objects: tuple[WorldObject, ...],
               now: Optional[float]) -> None:
        topic, stamp, raw = inp.topic, inp.stamp, inp.raw
        s = self._settings
        new = _Cloud(stamp, objects, raw)
        if self.prepare is not None:
            with self._lock:
                current = dict(self._clouds)
            current[topic] = new
            age, t = s.cloud_max_age, stamp if now is None else now
            with contextlib.suppress(Exception):
                self.prepare([o for name in s.point_cloud_topics if name in current
                              and (age <= 0 or t - current[name].stamp <= age)
                              for o in current[name].objects])
        with self._lock:
            if topic in self._settings.point_cloud_topics:
                self._clouds[topic] = new
                self._faults.pop(topic, None)

    def _persisted(self, topic: str, Pb: NDArray[np.float64], stamp: float,
                   T: Optional[NDArray[np.float64]], robot: RobotModel,
                   q: NDArray[np.float64]) -> list[WorldObject]:
        """``cloud_persistence``: fuse this cloud's samples (base frame, self-filtered) into
        the topic's voxel map; the voxels seen before it and not carved since, off the robot,
        as one object ``topic#persisted``."""
        s = self._settings
        side = s.cloud_resolution if s.cloud_resolution > 0 else 0.01
        opts = FusionOptions(resolution=side, persistence=s.cloud_persistence)
        fused = self._fused.get(topic)
        if fused is None or fused.options != opts:
            fused = self._fused[topic] = FusedOccupancy(opts)
        fused.insert(Pb, stamp, None if T is None else T[:3, 3])
        old, _ = fused.voxels(stamp, seen_before=stamp)
        if len(old):
            old = old[robot_filter_mask(robot, old, q, s.cloud_padding)]
        if not len(old):
            return []
        cloud = PointCloud(old, (0.5 * math.sqrt(3.0) + 1.5) * side, None,
                           grid_cells=LIVE_GRID_CELLS)
        cloud.index  # noqa: B018 - built here, off the control tick
        return [WorldObject(cloud, np.eye(4), f"{topic}#persisted")]

    def _fresh(self, now: float) -> dict[str, _Cloud]:
        age = self._settings.cloud_max_age
        with self._lock:
            return {t: c for t, c in self._clouds.items() if age <= 0 or now - c.stamp <= age}

    def objects(self, now: float) -> list[WorldObject]:
        """World objects of the topics' current clouds (``now``: the node clock, s); a topic's
        cloud is one object per radius class, named ``topic#r<radius>mm``."""
        fresh = self._fresh(now)
        return [o for t in self._settings.point_cloud_topics if t in fresh
                for o in fresh[t].objects]

    def missing(self, now: float) -> list[str]:
        """Topics of ``point_cloud_topics`` without a current cloud (none yet, too old, or the
        newest message was a faulty-sensor cloud)."""
        fresh = self._fresh(now)
        with self._lock:
            faults = set(self._faults)
        return [t for t in self._settings.point_cloud_topics if t not in fresh or t in faults]

    def problems(self, now: float) -> dict[str, str]:
        """Why each topic of :meth:`missing` has no current cloud."""
        fresh = self._fresh(now)
        with self._lock:
            faults = dict(self._faults)
        out = {}
        for t in self._settings.point_cloud_topics:
            if t in faults:
                out[t] = faults[t]
            elif t not in fresh:
                out[t] = (f"no cloud newer than cloud_max_age {self._settings.cloud_max_age:g} s"
                          if t in self._clouds else "no cloud received yet")
        return out


def tf2_lookup(node: Any, base_frame: Callable[[], str]) -> Optional[TransformLookup]:
    """A tf2 transform lookup for ``node`` when ``tf2_ros`` is importable, else None."""
    try:
        import tf2_ros  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer, node)  # kept alive by the closure

    def lookup(frame_id: str, stamp: float, timeout: float = 0.0
               ) -> Optional[NDArray[np.float64]]:
        from rclpy.duration import Duration
        from rclpy.time import Time

        try:
            # the cloud is processed off the executor (CloudSubscriptions' worker thread), so
            # waiting for a dynamic frame (/tf at 50 Hz lags the camera) blocks nothing else
            tf = buffer.lookup_transform(base_frame(), frame_id, Time(seconds=stamp),
                                         timeout=Duration(seconds=timeout))
        except Exception:
            return None
        t, r = tf.transform.translation, tf.transform.rotation
        _ = listener
        return pose_from_position_quat([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])

    return lookup


class _Allocator(ctypes.Structure):  # rcutils_allocator_t
    _fields_ = [("allocate", ctypes.c_void_p), ("deallocate", ctypes.c_void_p),
                ("reallocate", ctypes.c_void_p), ("zero_allocate", ctypes.c_void_p),
                ("state", ctypes.c_void_p)]


class _Uint8Array(ctypes.Structure):  # rcutils_uint8_array_t = rcl_serialized_message_t
    _fields_ = [("buffer", ctypes.c_void_p), ("buffer_length", ctypes.c_size_t),
                ("buffer_capacity", ctypes.c_size_t), ("allocator", _Allocator)]


_RCL_RET_SUBSCRIPTION_TAKE_FAILED = 401
_RCL_LIBS: list[Any] = []  # [(rcl, rcutils)] once loaded, [None] when not available


def _rcl_libs() -> Any:
    """(librcl, librcutils) as ctypes libraries (the ones rclpy loaded), or None."""
    if not _RCL_LIBS:
        libs = None
        try:
            paths: dict[str, str] = {}
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    path = line.rstrip().rpartition(" ")[2]
                    name = os.path.basename(path)
                    for lib in ("librcl", "librcutils"):
                        if name == f"{lib}.so" or name.startswith(f"{lib}.so."):
                            paths.setdefault(lib, path)
            rcl = ctypes.CDLL(paths.get("librcl", "librcl.so"))
            rcutils = ctypes.CDLL(paths.get("librcutils", "librcutils.so"))
            rcl.rcl_take_serialized_message.argtypes = [
                ctypes.c_void_p, ctypes.POINTER(_Uint8Array), ctypes.c_void_p, ctypes.c_void_p]
            rcl.rcl_take_serialized_message.restype = ctypes.c_int
            rcutils.rcutils_get_default_allocator.restype = _Allocator
            rcutils.rcutils_uint8_array_init.argtypes = [
                ctypes.POINTER(_Uint8Array), ctypes.c_size_t, ctypes.POINTER(_Allocator)]
            rcutils.rcutils_uint8_array_init.restype = ctypes.c_int
            rcutils.rcutils_uint8_array_fini.argtypes = [ctypes.POINTER(_Uint8Array)]
            rcutils.rcutils_uint8_array_fini.restype = ctypes.c_int
            rcutils.rcutils_reset_error.restype = None
            libs = (rcl, rcutils)
        except (OSError, AttributeError):
            libs = None
        _RCL_LIBS.append(libs)
    return _RCL_LIBS[0]


class SerializedTaker:
    """Takes the serialized messages waiting in an rclpy subscription (one that no executor
    runs, e.g. :class:`~robot_collision.ros.intake.OnDemandSubscription`'s) with rcl's
    ``rcl_take_serialized_message`` through ctypes: the RMW copies each message into one
    buffer kept for every take (no new 12 MB allocation a cloud, no page faults) and the
    interpreter's lock is released while it does (rclpy's ``take_message`` holds it while it
    copies a 1 M-point cloud twice, into rcl's buffer and into a Python ``bytes``: ~10 ms in
    which the node's executor could not run). ``available()`` is False where rcl cannot be
    loaded this way; use rclpy's take there."""

    INITIAL_CAPACITY = 1 << 20

    def __init__(self, subscription: Any) -> None:
        libs = _rcl_libs()
        if libs is None:
            raise OSError("rcl is not loadable with ctypes")
        self._rcl, self._rcutils = libs
        self._sub = subscription
        self._msg = _Uint8Array()
        self._alloc = self._rcutils.rcutils_get_default_allocator()
        if self._rcutils.rcutils_uint8_array_init(ctypes.byref(self._msg),
                                                  self.INITIAL_CAPACITY,
                                                  ctypes.byref(self._alloc)) != 0:
            self._rcutils.rcutils_reset_error()
            raise OSError("rcutils_uint8_array_init failed")
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        return _rcl_libs() is not None

    def take(self) -> tuple[Optional[memoryview], int]:
        """``(newest, n)``: the newest of the ``n`` messages waiting (the older ones are
        dropped), a view of the serialized bytes that stays valid until the next ``take`` or
        ``close``; ``(None, 0)`` when none was waiting."""
        n = 0
        with self._lock:
            if self._msg.buffer is None:
                return None, 0
            with self._sub.handle:
                ptr = self._sub.handle.pointer
                while True:
                    ret = self._rcl.rcl_take_serialized_message(ptr, ctypes.byref(self._msg),
                                                               None, None)
                    if ret == _RCL_RET_SUBSCRIPTION_TAKE_FAILED:
                        break
                    if ret != 0:
                        self._rcutils.rcutils_reset_error()
                        raise RuntimeError(f"rcl_take_serialized_message returned {ret}")
                    n += 1
            if n == 0 or not self._msg.buffer:
                return None, n
            data = (ctypes.c_uint8 * self._msg.buffer_length).from_address(self._msg.buffer)
            return memoryview(data).cast("B"), n

    def close(self) -> None:
        """Free the buffer (views of it are invalid from then on)."""
        with self._lock:
            if self._msg.buffer is not None:
                self._rcutils.rcutils_uint8_array_fini(ctypes.byref(self._msg))
                self._msg.buffer = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def node_now(node: Any) -> float:
    """The node clock's time (s)."""
    return float(node.get_clock().now().nanoseconds) * 1e-9


def stamp_seconds(stamp: Any, node: Any) -> float:
    """A message stamp in seconds; the node clock's time for a zero stamp."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return node_now(node)
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


class _CloudReader:
    """One topic's cloud reader: an :class:`~robot_collision.ros.intake.OnDemandSubscription`
    taken with :class:`SerializedTaker` where rcl is loadable with ctypes, else with rclpy."""

    def __init__(self, node: Any, topic: str, qos: Any, rcl_take: bool = True) -> None:
        from sensor_msgs.msg import PointCloud2

        from .intake import OnDemandSubscription

        self._reader = OnDemandSubscription(node, PointCloud2, topic, qos)
        self.subscription = self._reader.subscription
        self._taker: Optional[SerializedTaker] = None
        if rcl_take:
            with contextlib.suppress(OSError):
                self._taker = SerializedTaker(self.subscription)

    @property
    def through_rcl(self) -> bool:
        return self._taker is not None

    def take(self) -> tuple[Optional[bytes | memoryview], int]:
        """``(newest, n)``: the newest of the ``n`` serialized clouds waiting (valid until the
        next take), ``(None, 0)`` without one."""
        if self._taker is not None:
            try:
                return self._taker.take()
            except (AttributeError, OSError, RuntimeError, TypeError, ValueError):
                # an rclpy or rcl that differs from the one this was written against (no
                # handle.pointer, another error code): rclpy's take from now on
                taker, self._taker = self._taker, None
                with contextlib.suppress(Exception):
                    taker.close()
        samples = self._reader.take()
        return (samples[-1][0] if samples else None), len(samples)


class CloudSubscriptions:
    """A node's subscriptions to its ``point_cloud_topics``, feeding ``clouds`` from a worker
    thread of their own: the node's executor never runs a cloud callback, so no control tick is
    queued behind a cloud. Bad clouds are logged (throttled) and never raise.

    Each topic is read with an :class:`~robot_collision.ros.intake.OnDemandSubscription`
    outside the executor's wait set, KEEP_LAST ``DEPTH`` = 1 when best-effort (a sensor's
    older cloud is of no use once a newer one is there), ``DEPTH_RELIABLE`` = 2 when reliable
    (the next cloud is reassembled in the history while the newest waits for the worker); the
    worker polls every ``POLL_PERIOD`` s, at once again after a cloud, and processes the newest
    sample of each topic (older ones count as ``superseded``). A reliable 1 M-point cloud at
    10 Hz is lost only when the worker is slower than the publisher: a bare reader of this kind
    took 100 of 100 when it spent up to 90 ms per cloud, 99 taken / 78 used at 120 ms, 78 / 48
    at 200 ms (the history overflows while it works; Fast DDS's default transport repairs the
    fragments in time). So the share of clouds used is the worker's wall time per cloud against
    the publisher's period. Samples are taken with rcl through ctypes (:class:`SerializedTaker`:
    into one reused buffer, without the interpreter's lock; rclpy's take where that cannot
    load), size-checked with ``limits()`` before they are read
    (:mod:`robot_collision.ros.intake`; the point bytes count against ``max_message_bytes``)
    and read in place (:func:`pointcloud2_view`: not deserialized).
    The per-point work runs in compiled kernels without the interpreter's lock (the surface,
    occlusion, voxel-key, sort, merge, transform, self-filter and index kernels); the worker
    holds the lock for its Python glue and a few whole-array numpy steps (masks, gathers,
    concatenation: ~5 ms of a 1 M-point cloud's ~30 ms of CPU) and no BLAS call starts
    OpenBLAS's spinning threads.

    Reliability follows the topic's publishers (checked every ``QOS_CHECK_PERIOD`` s): RELIABLE
    when every publisher is reliable (large clouds arrive whole, lost fragments are sent
    again), BEST_EFFORT as soon as one is best-effort (a reliable reader would not match it;
    whole large clouds then arrive only when the publisher's transport holds a whole cloud,
    e.g. Fast DDS's shared-memory segment, see ``benchmarks/bench_cloud_delivery.py``).
    ``before`` runs before each cloud is processed (a node that reads joint states on demand
    takes them there, for the self-filter)."""

    POLL_PERIOD = 0.01
    DEPTH = 1
    DEPTH_RELIABLE = 2
    RCL_TAKE = True
    QOS_CHECK_PERIOD = 1.0
    SWITCH_INTERVAL = 0.001

    def __init__(self, node: Any, clouds: SensedClouds,
                 limits: Callable[[], MessageLimits], callback_group: Any = None,
                 before: Optional[Callable[[], object]] = None,
                 start_paused: bool = False,
                 reducer: Optional[Callable[[SensedClouds], Any]] = None) -> None:
        self._node = node
        # ``reducer(clouds)``: where the per-point work runs (``clouds.reducer``), made when
        # the worker starts and closed with it; the filter node's is a child process
        # (robot_collision.ros.cloud_process), so that its tick never waits for the
        # interpreter's lock behind a cloud
        self._make_reducer = reducer
        self._reducer: Any = None
        # the worker takes no cloud until resume(): a node resumes it once its kernels are
        # loaded or compiled (a cloud processed while a first start compiled the node's kernels
        # in another thread was never handed over: the filter waited for a cloud forever)
        self._ready = threading.Event()
        if not start_paused:
            self._ready.set()
        self._clouds = clouds
        self._limits = limits
        self._before = before
        self._subs: dict[str, tuple[Any, bool]] = {}  # topic: (reader, reliable)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._next_qos_check = 0.0
        self.stats = {"taken": 0, "superseded": 0, "processed": 0}
        # worker time, summed over the polls that took a cloud: taking it (copying the
        # serialized bytes out of the reader), processing it (wall and the worker's CPU)
        self.timing = {"take_s": 0.0, "process_s": 0.0, "process_cpu_s": 0.0}
        self._thread: Optional[threading.Thread] = None

    @property
    def topics(self) -> list[str]:
        with self._lock:
            return list(self._subs)

    def reliability(self, topic: str) -> Optional[str]:
        """'reliable' or 'best_effort' (the topic's reader now), None if not subscribed."""
        with self._lock:
            sub = self._subs.get(topic)
        return None if sub is None else ("reliable" if sub[1] else "best_effort")

    def _publishers_reliable(self, topic: str) -> Optional[bool]:
        """True when the topic has publishers and all are reliable, False when one is
        best-effort, None without publishers."""
        from rclpy.qos import ReliabilityPolicy

        try:
            infos = self._node.get_publishers_info_by_topic(
                self._node.resolve_topic_name(topic) if hasattr(self._node, "resolve_topic_name")
                else topic)
        except Exception:
            return None
        if not infos:
            return None
        return all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)

    def _reader(self, topic: str, reliable: bool) -> _CloudReader:
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        qos = QoSProfile(depth=self.DEPTH_RELIABLE if reliable else self.DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE if reliable
                         else ReliabilityPolicy.BEST_EFFORT)
        return _CloudReader(self._node, topic, qos, self.RCL_TAKE)

    def sync(self) -> None:
        """Subscribe to the topics of the clouds' settings, unsubscribe from the others; start
        the worker."""
        wanted = self._clouds.settings.point_cloud_topics
        with self._lock:
            for topic in list(self._subs):
                if topic not in wanted:
                    self._node.destroy_subscription(self._subs.pop(topic)[0].subscription)
            for topic in wanted:
                if topic not in self._subs:
                    reliable = bool(self._publishers_reliable(topic))
                    self._subs[topic] = (self._reader(topic, reliable), reliable)
        if wanted and self._thread is None:
            # the executor's thread waits for the interpreter while the worker runs Python:
            # at most SWITCH_INTERVAL between the worker's bytecodes (default 5 ms)
            if sys.getswitchinterval() > self.SWITCH_INTERVAL:
                sys.setswitchinterval(self.SWITCH_INTERVAL)
            self._thread = threading.Thread(
                target=self._run, daemon=True, name=f"{self._node.get_name()}_clouds")
            self._thread.start()
            with contextlib.suppress(Exception):
                self._node.context.on_shutdown(self.close)

    def close(self) -> None:
        """Stop the worker (the node's destruction removes the readers); also called when the
        node's context shuts down, so that no worker is still in a take or a kernel when the
        process exits."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        if self._reducer is not None and hasattr(self._reducer, "close"):
            self._reducer.close()

    def _node_gone(self) -> bool:
        try:
            with self._node.handle:
                return False
        except Exception:
            return True

    def _check_qos(self) -> None:
        with self._lock:
            current = dict(self._subs)
        for topic, (reader, reliable) in current.items():
            want = self._publishers_reliable(topic)
            if want is None or want == reliable:
                continue
            with self._lock:
                if topic not in self._subs or self._subs[topic][0] is not reader:
                    continue
                self._node.destroy_subscription(reader.subscription)
                self._subs[topic] = (self._reader(topic, want), want)
            self._node.get_logger().info(
                f"point cloud topic {topic}: reading {'reliable' if want else 'best-effort'} "
                "(as its publishers)")

    def resume(self) -> None:
        """Start taking clouds (see ``start_paused``)."""
        self._ready.set()

    def _run(self) -> None:
        busy = False
        while not self._stop.wait(0.0 if busy else self.POLL_PERIOD):
            busy = False
            if not self._ready.is_set():
                continue
            if self._make_reducer is not None:
                # made once the node's own kernels are loaded (resume()): a child compiling
                # its kernels beside the node's start-up warm-up slowed both
                make, self._make_reducer = self._make_reducer, None
                try:
                    self._reducer = self._clouds.reducer = make(self._clouds)
                except Exception as exc:  # e.g. no process can be started: work here
                    self._node.get_logger().error(
                        f"point cloud worker process not started ({type(exc).__name__}: {exc});"
                        " clouds are processed in the node's worker thread")
            try:
                now = time.monotonic()
                if now >= self._next_qos_check:
                    self._next_qos_check = now + self.QOS_CHECK_PERIOD
                    self._check_qos()
                w0 = time.perf_counter()
                with self._lock:
                    taken = []
                    for topic, (reader, _) in self._subs.items():
                        raw, n = reader.take()
                        if raw is not None:
                            # the reader stays referenced while its bytes are read (a view of
                            # its buffer when taken through rcl)
                            taken.append((topic, raw, reader))
                        self.stats["taken"] += n
                        self.stats["superseded"] += max(0, n - 1)
                if taken:
                    w1, c1 = time.perf_counter(), time.thread_time()
                    self.timing["take_s"] += w1 - w0
                    for topic, raw, _reader in taken:
                        self._on_raw(topic, raw)
                    del taken, raw, _reader
                    self.timing["process_s"] += time.perf_counter() - w1
                    self.timing["process_cpu_s"] += time.thread_time() - c1
                    # a cloud that arrived meanwhile is taken at once (the next poll's wait
                    # would only age it)
                    busy = True
            except Exception as exc:  # a destroyed reader at shutdown, an RMW error
                if self._stop.is_set() or not self._node.context.ok() or self._node_gone():
                    return
                try:
                    self._node.get_logger().error(
                        f"point cloud worker: {type(exc).__name__}: {exc}",
                        throttle_duration_sec=2.0)
                except Exception:
                    return

    def _on_raw(self, topic: str, raw: bytes | memoryview) -> None:
        try:
            msg = pointcloud2_view(raw, self._limits())
        except MessageRejectedError as exc:
            self._on_rejected(topic, exc)
            return
        self._on_cloud(topic, msg)

    def _on_rejected(self, topic: str, exc: MessageRejectedError) -> None:
        self._clouds.stats["rejected"] += 1
        self._node.get_logger().error(f"point cloud rejected: {topic}: {exc}",
                                      throttle_duration_sec=2.0)

    def _on_cloud(self, topic: str, msg: Any) -> None:
        log = self._node.get_logger()
        try:
            if self._before is not None:
                self._before()
            text = self._clouds.on_message(topic, msg, stamp_seconds(msg.header.stamp, self._node),
                                           node_now(self._node))
            self.stats["processed"] += 1
            log.debug(text)
        except CloudError as exc:
            log.error(f"point cloud rejected: {topic}: {exc}", throttle_duration_sec=2.0)
        except Exception as exc:
            log.error(f"point cloud processing failed: {topic}: {type(exc).__name__}: {exc}",
                      throttle_duration_sec=2.0)
