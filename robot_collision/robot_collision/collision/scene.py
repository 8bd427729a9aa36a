"""Flat, compiled-kernel-ready arrays for the robot's shapes, the world and the checked pairs.

:class:`RobotArrays` holds every robot collision shape sorted by link (tree order, base = 0),
:class:`WorldArrays` every world object (one shape each, pose in the base frame), and
:class:`PairArrays` the link pairs a :class:`~robot_collision.collision.checker.CollisionChecker`
evaluates
with their shape-pair lists and paddings. Nothing here runs per configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import ShapeError
from ..geometry.point_cloud import PointCloud
from ..geometry.shapes import MESH, Shape, WorldObject
from ..geometry.sphere_cover import sphere_cover
from ..model.robot_model import RobotModel
from .array_copy import concatenate

__all__ = ["RobotArrays", "WorldArrays", "PairArrays", "robot_arrays", "world_arrays"]


class RobotArrays(NamedTuple):
    """S robot shapes sorted by link; ``link_start[l]:link_start[l+1]`` are link l's shapes."""

    link: NDArray[np.int64]  # (S,) link index
    kind: NDArray[np.int64]  # (S,)
    params: NDArray[np.float64]  # (S, 4)
    local: NDArray[np.float64]  # (S, 4, 4) pose in the link frame
    vstart: NDArray[np.int64]  # (S,)
    vcount: NDArray[np.int64]  # (S,)
    verts: NDArray[np.float64]  # (V, 3) hull vertices, shape-local (Shape.kernel_vertices)
    link_start: NDArray[np.int64]  # (L + 1,)
    bound_center: NDArray[np.float64]  # (L, 3) link frame
    bound_radius: NDArray[np.float64]  # (L,) -1 when the link has no shapes
    # sphere covers (geometry.sphere_cover), shape-local: per shape (outer start, outer count,
    # inner start, inner count) into ``cover`` rows (x, y, z, r)
    cover_index: NDArray[np.int64]  # (S, 4)
    cover: NDArray[np.float64]  # (C, 4)


class WorldArrays(NamedTuple):
    """W world objects, one shape each (base frame)."""

    kind: NDArray[np.int64]
    params: NDArray[np.float64]
    pose: NDArray[np.float64]  # (W, 4, 4)
    vstart: NDArray[np.int64]
    vcount: NDArray[np.int64]
    verts: NDArray[np.float64]
    # (16, W) enclosing oriented boxes, one column per object (structure of arrays, so that a
    # loop over objects vectorises): rows 0-8 rotation R (row-major), 9-11 centre, 12-14 half
    # extents (base frame, m); exact for boxes, see Shape.local_box
    box: NDArray[np.float64]
    # point clouds (kind POINT_CLOUD): (W, 2) offsets of object o's index in cloud_f / cloud_i
    # (-1 for other kinds), and the indexes of every cloud of the world one after the other
    # (see geometry.cloud_index)
    cloud: NDArray[np.int64]
    cloud_f: NDArray[np.float64]
    cloud_i: NDArray[np.int64]


class PairArrays(NamedTuple):
    """Evaluated self link pairs (a < b, in MATLAB evaluation order) and paddings (m)."""

    self_a: NDArray[np.int64]  # (K,) link index
    self_b: NDArray[np.int64]  # (K,)
    self_pad: NDArray[np.float64]  # (K,)
    world_pad: NDArray[np.float64]  # (L, W) padding of (link, world object)
    # joint-space distance tables of the self pairs (collision.pair_tables.PairTables)
    tab_i: NDArray[np.int64]  # (K, 8)
    tab_f: NDArray[np.float64]  # (K, 28)
    tab_data: NDArray[np.float64]  # (D,)
    # (L, W) 1 where the boolean validity kernels skip (link, world object): the link is fixed
    # to the base (its pose never depends on q) and the pair was found free when the scene was
    # built, so its verdict is the same for every configuration; distances ignore it
    world_skip: NDArray[np.int64]


def _bound(
    shapes: Sequence[tuple[Shape, NDArray[np.float64]]],
) -> tuple[NDArray[np.float64], float]:
    """Centre (link frame, m) and radius (m) of a sphere enclosing a link's shapes: the
    smaller of two, one from the shapes' spheres about their origins, one from their tight
    spheres (``Shape.bounding_sphere``: a mesh's about its bounding-box centre; a mesh's origin
    is often far from its geometry, e.g. the Panda's link meshes sit at their joint: their
    origin spheres are 5-45 % larger). Links without meshes take the first (both agree)."""
    if not shapes:
        return np.zeros(3), -1.0
    about_origins = _enclosing(
        np.array([p[:3, 3] for _, p in shapes]), np.array([s.bounding_radius() for s, _ in shapes])
    )
    if not any(s.kind == MESH for s, _ in shapes):
        return about_origins
    tight = [(p[:3, :3] @ c + p[:3, 3], r) for (c, r), (_, p) in
             zip((s.bounding_sphere() for s, _ in shapes), shapes)]
    about_centres = _enclosing(np.array([c for c, _ in tight]), np.array([r for _, r in tight]))
    return min(about_origins, about_centres, key=lambda cr: cr[1])


def _enclosing(
    centres: NDArray[np.float64], radii: NDArray[np.float64]
) -> tuple[NDArray[np.float64], float]:
    """A sphere (centre, radius; m) holding the spheres ``centres`` (k, 3) / ``radii`` (k,):
    centred on their centres' bounding box."""
    c = 0.5 * (centres.min(axis=0) + centres.max(axis=0))
    return c, float(np.max(np.linalg.norm(centres - c, axis=1) + radii))


def robot_arrays(robot: RobotModel) -> RobotArrays:
    """Flatten ``robot``'s collision geometry for the kernels."""
    link: list[int] = []
    kind: list[int] = []
    params: list[NDArray[np.float64]] = []
    local: list[NDArray[np.float64]] = []
    vstart: list[int] = []
    vcount: list[int] = []
    verts: list[NDArray[np.float64]] = []
    L = len(robot.link_names)
    link_start = np.zeros(L + 1, dtype=np.int64)
    bc = np.zeros((L, 3))
    br = np.full(L, -1.0)
    nv = 0
    cover_index: list[tuple[int, int, int, int]] = []
    cover: list[NDArray[np.float64]] = []
    nc = 0
    for li, name in enumerate(robot.link_names):
        shapes = robot.collision_geometry(name)
        link_start[li] = len(kind)
        for shape, pose in shapes:
            v = shape.kernel_vertices()
            try:
                cov = sphere_cover(shape)
            except ShapeError:  # no cover (e.g. a flat mesh): the exact narrow phase only
                cover_index.append((nc, 0, nc, 0))
            else:
                no, ni = len(cov.outer), len(cov.inner)
                cover_index.append((nc, no, nc + no, ni))
                cover += [cov.outer, cov.inner]
                nc += no + ni
            link.append(li)
            kind.append(shape.kind)
            params.append(shape.params())
            local.append(pose)
            vstart.append(nv)
            vcount.append(len(v))
            verts.append(v)
            nv += len(v)
        bc[li], br[li] = _bound(shapes)
    link_start[L] = len(kind)
    S = len(kind)
    return RobotArrays(
        np.asarray(link, dtype=np.int64).reshape(S),
        np.asarray(kind, dtype=np.int64).reshape(S),
        np.asarray(params, dtype=float).reshape(S, 4),
        np.ascontiguousarray(np.asarray(local, dtype=float).reshape(S, 4, 4)),
        np.asarray(vstart, dtype=np.int64).reshape(S),
        np.asarray(vcount, dtype=np.int64).reshape(S),
        np.ascontiguousarray(np.concatenate(verts) if verts else np.zeros((0, 3))).reshape(-1, 3),
        link_start,
        bc,
        br,
        np.asarray(cover_index, dtype=np.int64).reshape(S, 4),
        np.ascontiguousarray(np.concatenate(cover) if cover else np.zeros((0, 4))).reshape(-1, 4),
    )


def world_arrays(world: Sequence[WorldObject]) -> WorldArrays:
    """Flatten world objects for the kernels."""
    # (one pass collecting Python lists, then one array per field: a scene of 8 objects in
    # ~25 us instead of ~60 with the per-object array assignments)
    W = len(world)
    kinds: list[int] = []
    prm: list[NDArray[np.float64]] = []
    poses: list[NDArray[np.float64]] = []
    centres: list[NDArray[np.float64]] = []
    halves: list[NDArray[np.float64]] = []
    counts: list[int] = []
    cloud = np.full((W, 2), -1, dtype=np.int64)
    cloud_f: list[NDArray[np.float64]] = []
    cloud_i: list[NDArray[np.int64]] = []
    nf = ni = 0
    verts = []
    for i, obj in enumerate(world):
        if not isinstance(obj, WorldObject):
            from ..errors import ShapeError

            raise ShapeError(f"world entries must be WorldObject, got {type(obj).__name__}")
        shape = obj.shape
        v = shape.kernel_vertices()
        kinds.append(shape.kind)
        prm.append(shape.params())
        poses.append(obj.pose)
        counts.append(len(v))
        verts.append(v)
        centre, half = shape.local_box()
        centres.append(centre)
        halves.append(half)
        if isinstance(shape, PointCloud):
            index = shape.index
            cloud[i] = (nf, ni)
            cloud_f.append(index.F)
            cloud_i.append(index.I)
            nf += len(index.F)
            ni += len(index.I)
    kind = np.array(kinds, dtype=np.int64)
    params = np.array(prm, dtype=float).reshape(W, 4)
    pose = np.array(poses, dtype=float).reshape(W, 4, 4)
    vcount = np.array(counts, dtype=np.int64)
    vstart = np.cumsum(vcount) - vcount
    box = np.zeros((16, W))
    R = pose[:, :3, :3]
    box[0:9] = R.reshape(W, 9).T
    box[9:12] = (np.matmul(R, np.array(centres, dtype=float).reshape(W, 3, 1))[:, :, 0]
                 + pose[:, :3, 3]).T
    box[12:15] = np.array(halves, dtype=float).reshape(W, 3).T
    allv = np.ascontiguousarray(np.concatenate(verts)) if verts else np.zeros((0, 3))
    # (a single cloud's buffers are used as they are: pack_scene copies them once anyway;
    # several are MB, copied without the interpreter's lock: see array_copy)
    cf = cloud_f[0] if len(cloud_f) == 1 else concatenate(cloud_f, np.float64)
    ci = cloud_i[0] if len(cloud_i) == 1 else concatenate(cloud_i, np.int64)
    return WorldArrays(
        kind, params, pose, vstart, vcount, allv.reshape(-1, 3), box, cloud, cf, ci
    )
