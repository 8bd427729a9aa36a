"""Boolean validity of 8 configurations per kernel pass (structure of arrays, SIMD lanes).

The scalar kernels of :mod:`robot_collision.collision.kernels` check one configuration at a
time. Here every quantity of the check -- joint values, frame poses, sphere centres, distances --
is an :data:`~robot_collision.simd.f64x8` holding it for 8 configurations (lanes), so forward
kinematics, sphere poses and sphere tests run as vector instructions. A lane mask ``alive``
(int64, bit k = lane k) records which configurations are still collision-free; a block stops as
soon as no lane is left (per-block early exit). Culling is the scalar kernel's, per block: a
link's spheres are posed and tested only when its bounding sphere is near an object's enclosing
box (world) or the other link's bounding sphere (self) in some live lane.

Supported scenes (:func:`block_scene` returns None otherwise and callers use the scalar kernels):
robot geometry made only of spheres, world objects that are spheres, capsules, boxes, cylinders
or point clouds (not meshes), joint axes of unit length, and sphere radius plus padding positive
for every box, cylinder or cloud it is tested against (the scalar kernel hands boxes and
cylinders in that case to GJK/EPA). Point clouds are culled per block like the other objects,
then queried lane by lane through their index (:mod:`robot_collision.geometry.cloud_index`),
whose data are copied into the block scene.

Layout: :func:`block_scene` flattens a scene into ``(BF float64, BI int64)``; ``BI`` starts with
the header below, all poses are rigid 3x4 row-major blocks. Frames are the robot's moving joint
frames with fixed links merged into them and each joint axis turned onto the frame's z axis, so
that frame ``f`` = frame ``fpar[f]`` @ ``C[f]`` @ (rotation about / translation along z by
``fscale[f] * q[fq[f]] + foff[f]``); frame 0 is the base. Sphere and link-bound centres are
stored in their frame's coordinates. Scratch (``W`` float64, ``RI`` int64) comes from
:func:`block_workspace`; the 8 configurations of a block go into ``W[j * 8 + k]`` (joint j,
lane k) before :func:`block_valid` is called.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic
from numpy.typing import NDArray

from ..geometry.cloud_index import cloud_sphere_exact, cloud_sphere_maybe
from ..geometry.point_cloud import POINT_CLOUD
from ..geometry.shapes import BOX, CAPSULE, CYLINDER, SPHERE
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or
from ..model.kinematics import FIXED, PRISMATIC, REVOLUTE, KinematicArrays, sincos_kernels
from ..simd import LANES, load, select, splat, store, vabs, vfloor, vmax, vsqrt
from .scene import PairArrays, RobotArrays, WorldArrays

__all__ = [
    "LANES",
    "BlockRobot",
    "BlockScene",
    "block_robot",
    "block_scene",
    "block_valid",
    "block_valid_from",
    "block_workspace",
    "batch_valid_blocked",
    "batch_valid_blocked_parallel",
    "edge_pass",
    "edge_valid_blocked",
    "single_valid_blocked",
]

K = LANES
# fast-math without "no NaNs / no infinities" (NaN lanes must compare false, and the finiteness
# test of the configurations must survive) and without "reassoc" (the planner's seeded runs are
# reproducible bit for bit; see planning.ik.FASTMATH)
FM = {"contract", "arcp", "nsz", "afn"}
_OPTS = dict(cache=True, fastmath=FM, boundscheck=False, error_model="numpy")

# ---- BI header: counts, then offsets (into BI for int sections, into BF for float sections)
H_N, H_NF, H_S, H_L, H_W, H_P, H_NL = 0, 1, 2, 3, 4, 5, 6
# int sections (H_CI: the point-cloud indexes' int arrays, WorldArrays.cloud_i; H_OCLOUD: per
# object the offsets of its cloud index in the cloud sections, -1 for other kinds)
(H_FPAR, H_FQ, H_FTYPE, H_SFRAME, H_LFRAME, H_LSTART, H_ORDER, H_OKIND, H_PA, H_PB, H_OCLOUD,
 H_CI) = range(7, 19)
# float sections (H_CF: the point-cloud indexes' float arrays, WorldArrays.cloud_f)
(H_C, H_FSCALE, H_FOFF, H_SCEN, H_SRAD, H_LCEN, H_LRAD, H_OBJ, H_WPAD, H_PPAD, H_IOTA,
 H_CF) = range(19, 31)
_HEADER = 31
# object record (float64 x OBJ_REC): centre (3), rotation R row-major (9), params (3), then the
# enclosing box: centre (3), half extents (3) (its rotation is R), then the distance from the base
# origin to the enclosing box and the radius of the box's circumscribed sphere (culling), then 1
# when R only turns about z (then box tests skip the z coupling), else 0
OBJ_REC = 24
# joint values of a lane beyond which the sine/cosine of a joint is computed per lane with
# np.sin / np.cos (the vector version's argument reduction is accurate to ~4e-13 up to 1e4)
_SINCOS_MAX = 1.0e4


class BlockScene(NamedTuple):
    """A scene flattened for the blocked kernels (see the module docstring)."""

    BF: NDArray[np.float64]
    BI: NDArray[np.int64]


def _z_to(axis: NDArray[np.float64]) -> NDArray[np.float64]:
    """A rotation (3, 3) taking the z axis onto the unit vector ``axis``."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, axis))
    v = np.cross(z, axis)
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = v / s
    Kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * Kx + (1.0 - c) * (Kx @ Kx)


class BlockRobot(NamedTuple):
    """The robot part of a block scene (frames, spheres, link bounds; see the module
    docstring), independent of the world: computed once per robot geometry."""

    n: int
    fpar: NDArray[np.int64]
    fq: NDArray[np.int64]
    ftype: NDArray[np.int64]
    C: NDArray[np.float64]  # (nf, 12)
    fscale: NDArray[np.float64]
    foff: NDArray[np.float64]
    frame_of: NDArray[np.int64]  # (L,) frame of each link
    sframe: NDArray[np.int64]  # (S,)
    scen: NDArray[np.float64]  # (S, 3) frame coordinates
    srad: NDArray[np.float64]
    lcen: NDArray[np.float64]  # (L, 3) frame coordinates
    lrad: NDArray[np.float64]
    order: NDArray[np.int64]  # links with spheres, distal first


def block_robot(kin: KinematicArrays, rs: RobotArrays) -> Optional[BlockRobot]:
    """The robot part of :func:`block_scene`, or None when the robot is not supported."""
    S = len(rs.kind)
    if S == 0 or np.any(rs.kind != SPHERE):
        return None
    parent, jtype, origin, axis = (np.asarray(a) for a in (kin.parent, kin.jtype, kin.origin,
                                                           kin.axis))
    L = len(parent)
    n = int(kin.qidx.max()) + 1 if L > 1 and kin.qidx.max() >= 0 else 0
    # frames: fixed links merged into their moving ancestor, axes turned onto z
    frame_of = np.zeros(L, dtype=np.int64)
    X = np.zeros((L, 4, 4))
    X[0] = np.eye(4)
    fpar, fq, ftype, C, fscale, foff = [0], [0], [FIXED], [np.eye(4)[:3]], [0.0], [0.0]
    for i in range(1, L):
        p = int(parent[i])
        g = int(frame_of[p])
        if jtype[i] == FIXED:
            frame_of[i] = g
            X[i] = X[p] @ origin[i]
            continue
        u = np.asarray(axis[i], dtype=float)
        if abs(np.linalg.norm(u) - 1.0) > 1e-12 or jtype[i] not in (REVOLUTE, PRISMATIC):
            return None
        M = np.eye(4)
        M[:3, :3] = _z_to(u)
        fpar.append(g)
        fq.append(int(kin.qidx[i]))
        ftype.append(int(jtype[i]))
        C.append((X[p] @ origin[i] @ M)[:3])
        fscale.append(float(kin.scale[i]))
        foff.append(float(kin.offset[i]))
        frame_of[i] = len(fpar) - 1
        X[i] = M.T
    # spheres (robot shapes are sorted by link) and link bounds, in frame coordinates
    Xs = X[rs.link]
    scen = np.einsum("sij,sj->si", Xs[:, :3, :3], rs.local[:, :3, 3]) + Xs[:, :3, 3]
    lcen = np.einsum("lij,lj->li", X[:, :3, :3], rs.bound_center) + X[:, :3, 3]
    has = np.diff(rs.link_start) > 0
    return BlockRobot(
        n, np.asarray(fpar, dtype=np.int64), np.asarray(fq, dtype=np.int64),
        np.asarray(ftype, dtype=np.int64), np.asarray(C).reshape(len(fpar), 12),
        np.asarray(fscale), np.asarray(foff), frame_of, frame_of[rs.link], scen,
        np.asarray(rs.params[:, 0], dtype=float), lcen,
        np.asarray(rs.bound_radius, dtype=float), np.flatnonzero(has)[::-1].copy(),
    )


# world object kinds the block kernels take, and those tested against the spheres' radius plus
# padding (lookup tables: np.isin cost ~30 us per scene)
_SUPPORTED = np.zeros(POINT_CLOUD + 1, dtype=bool)
_SUPPORTED[[SPHERE, CAPSULE, BOX, CYLINDER, POINT_CLOUD]] = True
_NARROW = np.zeros(POINT_CLOUD + 1, dtype=bool)
_NARROW[[BOX, CYLINDER, POINT_CLOUD]] = True


def block_scene(
    kin: KinematicArrays, rs: RobotArrays, ws: WorldArrays, pr: PairArrays,
    robot: Optional[BlockRobot] = None,
) -> Optional[BlockScene]:
    """Flatten a scene for the blocked kernels, or None when it is not supported (see the
    module docstring): callers then use the scalar kernels. ``robot``: :func:`block_robot`
    of ``kin, rs`` if already computed."""
    if robot is None:
        robot = block_robot(kin, rs)
        if robot is None:
            return None
    W = len(ws.kind)
    kinds = np.asarray(ws.kind)
    if W and (kinds.min() < 0 or kinds.max() >= len(_SUPPORTED) or not _SUPPORTED[kinds].all()):
        return None
    S = len(rs.kind)
    L = len(rs.link_start) - 1
    srad = robot.srad
    # world objects, one record each
    R = np.asarray(ws.pose[:, :3, :3])
    box = np.asarray(ws.box)
    Rf = R.reshape(W, 9)
    if not (np.abs(box[0:9].T - Rf) <= 1e-8 + 1e-5 * np.abs(Rf)).all():  # (np.allclose)
        return None
    if W:
        narrow = _NARROW[kinds]
        if np.any((srad[:, None] + np.asarray(pr.world_pad)[rs.link][:, narrow]) <= 0.0):
            return None  # (negative radii; the scalar kernel hands these to GJK/EPA)
    obj = np.zeros((W, OBJ_REC))
    obj[:, 0:3] = ws.pose[:, :3, 3]
    obj[:, 3:12] = Rf
    obj[:, 12:15] = ws.params[:, :3]
    obj[:, 15:18] = box[9:12].T
    obj[:, 18:21] = box[12:15].T
    excess = np.maximum(np.abs(np.einsum("wji,wj->wi", R, -box[9:12].T)) - box[12:15].T, 0.0)
    obj[:, 21] = np.sqrt(np.sum(excess * excess, axis=1))
    obj[:, 22] = np.linalg.norm(box[12:15].T, axis=1)
    obj[:, 23] = ((R[:, 2, 2] == 1.0) & (R[:, 0, 2] == 0.0) & (R[:, 1, 2] == 0.0)
                  & (R[:, 2, 0] == 0.0) & (R[:, 2, 1] == 0.0))
    wpad = np.ascontiguousarray(pr.world_pad, dtype=float).reshape(L * W)
    P = len(pr.self_a)
    nf = len(robot.fpar)
    ints = [
        robot.fpar, robot.fq, robot.ftype, robot.sframe, robot.frame_of,
        np.asarray(rs.link_start), robot.order, np.asarray(ws.kind), np.asarray(pr.self_a),
        np.asarray(pr.self_b), np.asarray(ws.cloud).reshape(W * 2), np.asarray(ws.cloud_i),
    ]
    floats = [
        robot.C.reshape(nf * 12), robot.fscale, robot.foff, robot.scen.reshape(S * 3), srad,
        robot.lcen.reshape(L * 3), robot.lrad, obj.reshape(W * OBJ_REC), wpad,
        np.asarray(pr.self_pad, dtype=float), np.arange(K, dtype=float), np.asarray(ws.cloud_f),
    ]
    head = np.zeros(_HEADER, dtype=np.int64)
    head[[H_N, H_NF, H_S, H_L, H_W, H_P, H_NL]] = robot.n, nf, S, L, W, P, len(robot.order)
    off = _HEADER
    for k, a in enumerate(ints):
        head[H_FPAR + k] = off
        off += len(a)
    off = 0
    for k, a in enumerate(floats):
        head[H_C + k] = off
        off += len(a)
    BI = np.concatenate([head] + [np.asarray(a, dtype=np.int64).ravel() for a in ints])
    BF = np.concatenate([np.asarray(a, dtype=float).ravel() for a in floats])
    return BlockScene(np.ascontiguousarray(BF), np.ascontiguousarray(BI))


@njit(inline="always", cache=True)
def _offsets(n, nf, S, L):  # type: ignore[no-untyped-def]
    """Offsets in ``W`` of the frame poses, sphere centres, link-bound centres, sine/cosine
    scratch, and ``W``'s size (joint values of the block come first, at 0)."""
    o_fr = n * K
    o_sc = o_fr + nf * 12 * K
    o_lc = o_sc + S * 3 * K
    o_sin = o_lc + L * 3 * K
    return o_fr, o_sc, o_lc, o_sin, o_sin + 2 * K


def block_workspace(BI: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scratch ``(W, RI)`` for :func:`block_valid` on scene ``BI``."""
    size = _offsets.py_func(int(BI[H_N]), int(BI[H_NF]), int(BI[H_S]), int(BI[H_L]))[-1]
    return np.zeros(size), np.zeros(int(BI[H_L]), dtype=np.int64)


# ------------------------------------------------------------------------------------------
# vector helpers (scalars and f64x8 only: inlined without reference counting)
# ------------------------------------------------------------------------------------------
@njit(inline="always", **_OPTS)
def _sincos(x):  # type: ignore[no-untyped-def]
    """(sin x, cos x) lane-wise, |error| < 4e-16 for |x| < 10 and < 4e-13 for |x| < 1e4.
    Argument reduction by pi/2 in three parts (Cody-Waite), then the minimax polynomials of
    fdlibm's __kernel_sin / __kernel_cos on [-pi/4, pi/4] (``model.kinematics.sincos_kernels``,
    shared with the scalar forward kinematics)."""
    n = vfloor(x * 0.6366197723675814 + 0.5)
    r = x - n * 1.5707963267341256
    r = r - n * 6.077100506506192e-11
    r = r - n * 2.0222662487959506e-21
    ps, pc = sincos_kernels(r)
    quad = n - 4.0 * vfloor(n * 0.25)  # 0, 1, 2, 3
    odd = (quad == 1.0) | (quad == 3.0)
    s = select(odd, pc, ps)
    c = select(odd, ps, pc)
    s = select(quad >= 2.0, -s, s)
    c = select((quad == 1.0) | (quad == 2.0), -c, c)
    return s, c


@njit(inline="always", **_OPTS)
def _box_gap2(x, y, z, cx, cy, cz, r00, r01, r02, r10, r11, r12, r20, r21, r22, hx, hy, hz):  # type: ignore[no-untyped-def]
    """Squared distance of the points (x, y, z) to the box (centre c, rotation R, half
    extents h), zero inside."""
    dx = x - cx
    dy = y - cy
    dz = z - cz
    ex = vmax(vabs(dx * r00 + dy * r10 + dz * r20) - hx, 0.0)
    ey = vmax(vabs(dx * r01 + dy * r11 + dz * r21) - hy, 0.0)
    ez = vmax(vabs(dx * r02 + dy * r12 + dz * r22) - hz, 0.0)
    return ex * ex + ey * ey + ez * ez


@njit(inline="always", **_OPTS)
def _box_gap2_z(x, y, z, cx, cy, cz, r00, r01, r10, r11, hx, hy, hz):  # type: ignore[no-untyped-def]
    """:func:`_box_gap2` for a box turned about z only (R[2] = R[:, 2] = e_z)."""
    dx = x - cx
    dy = y - cy
    ex = vmax(vabs(dx * r00 + dy * r10) - hx, 0.0)
    ey = vmax(vabs(dx * r01 + dy * r11) - hy, 0.0)
    ez = vmax(vabs(z - cz) - hz, 0.0)
    return ex * ex + ey * ey + ez * ez


# ------------------------------------------------------------------------------------------
# the block kernel
# ------------------------------------------------------------------------------------------
@njit(**_OPTS)
def _fk(BF, BI, W):  # type: ignore[no-untyped-def]
    """Frame poses of the 8 configurations in ``W`` into ``W``'s frame section. Returns True
    (a value for ``call_or``)."""
    nf = BI[H_NF]
    o_fr, _, _, o_sin, _ = _offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])
    o_fpar, o_fq, o_ftype = BI[H_FPAR], BI[H_FQ], BI[H_FTYPE]
    o_c, o_fs, o_fo = BI[H_C], BI[H_FSCALE], BI[H_FOFF]
    zero = splat(0.0)
    one = splat(1.0)
    for e in range(12):
        store(W, o_fr + e * K, zero)
    store(W, o_fr, one)
    store(W, o_fr + 5 * K, one)
    store(W, o_fr + 10 * K, one)
    for f in range(1, nf):
        p = o_fr + BI[o_fpar + f] * 12 * K
        o = o_fr + f * 12 * K
        v = load(W, BI[o_fq + f] * K) * BF[o_fs + f] + BF[o_fo + f]
        revolute = BI[o_ftype + f] == REVOLUTE
        if revolute:
            if (vabs(v) > _SINCOS_MAX) != 0:
                for k in range(K):
                    W[o_sin + k] = np.sin(W[BI[o_fq + f] * K + k] * BF[o_fs + f] + BF[o_fo + f])
                    W[o_sin + K + k] = np.cos(
                        W[BI[o_fq + f] * K + k] * BF[o_fs + f] + BF[o_fo + f])
                s = load(W, o_sin)
                c = load(W, o_sin + K)
            else:
                s, c = _sincos(v)
        else:
            s = zero
            c = one
        b = o_c + 12 * f
        c00, c01, c02, c03 = BF[b], BF[b + 1], BF[b + 2], BF[b + 3]
        c10, c11, c12, c13 = BF[b + 4], BF[b + 5], BF[b + 6], BF[b + 7]
        c20, c21, c22, c23 = BF[b + 8], BF[b + 9], BF[b + 10], BF[b + 11]
        for r in range(3):
            f0 = load(W, p + (4 * r) * K)
            f1 = load(W, p + (4 * r + 1) * K)
            f2 = load(W, p + (4 * r + 2) * K)
            f3 = load(W, p + (4 * r + 3) * K)
            a0 = f0 * c00 + f1 * c10 + f2 * c20
            a1 = f0 * c01 + f1 * c11 + f2 * c21
            a2 = f0 * c02 + f1 * c12 + f2 * c22
            a3 = f0 * c03 + f1 * c13 + f2 * c23 + f3
            if revolute:
                store(W, o + (4 * r) * K, c * a0 + s * a1)
                store(W, o + (4 * r + 1) * K, c * a1 - s * a0)
                store(W, o + (4 * r + 3) * K, a3)
            else:
                store(W, o + (4 * r) * K, a0)
                store(W, o + (4 * r + 1) * K, a1)
                store(W, o + (4 * r + 3) * K, a3 + v * a2)
            store(W, o + (4 * r + 2) * K, a2)
    return True


@njit(**_OPTS)
def _point_in_frame(BF, W, fr, cx, cy, cz, out):  # type: ignore[no-untyped-def]
    """Store frame pose @ (cx, cy, cz) (3 vectors) at ``W[out:out + 24]``; ``fr`` = offset of
    the frame's pose in ``W``. Returns True."""
    for r in range(3):
        store(W, out + r * K,
              load(W, fr + (4 * r) * K) * cx + load(W, fr + (4 * r + 1) * K) * cy
              + load(W, fr + (4 * r + 2) * K) * cz + load(W, fr + (4 * r + 3) * K))
    return True


@njit(**_OPTS)
def _pose_link_spheres(BF, BI, W, RI, l):  # type: ignore[no-untyped-def]
    """Centres of link ``l``'s spheres (once per block: ``RI[l]`` marks them done). Returns
    True."""
    if RI[l] == 0:
        RI[l] = 1
        o_fr, o_sc, _, _, _ = _offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])
        o_ls, o_scen = BI[H_LSTART], BI[H_SCEN]
        # the link's frame pose in registers: the stores below might alias it as far as the
        # compiler knows, which would reload it for every sphere
        fr = o_fr + BI[BI[H_LFRAME] + l] * 12 * K
        t00, t01, t02, t03 = load(W, fr), load(W, fr + K), load(W, fr + 2 * K), load(W, fr + 3 * K)
        t10, t11, t12, t13 = (load(W, fr + 4 * K), load(W, fr + 5 * K), load(W, fr + 6 * K),
                              load(W, fr + 7 * K))
        t20, t21, t22, t23 = (load(W, fr + 8 * K), load(W, fr + 9 * K), load(W, fr + 10 * K),
                              load(W, fr + 11 * K))
        for s in range(BI[o_ls + l], BI[o_ls + l + 1]):
            c = o_scen + 3 * s
            x, y, z = BF[c], BF[c + 1], BF[c + 2]
            out = o_sc + s * 3 * K
            store(W, out, t00 * x + t01 * y + t02 * z + t03)
            store(W, out + K, t10 * x + t11 * y + t12 * z + t13)
            store(W, out + 2 * K, t20 * x + t21 * y + t22 * z + t23)
    held = BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0]
    return held >= 0


@njit(**_OPTS)
def _cloud_lane_hits(BF, BI, W, l, k, ob, oc, pad):  # type: ignore[no-untyped-def]
    """Whether link ``l``'s spheres (posed) in lane ``k`` come closer than ``pad`` (m) to the
    point cloud whose object record starts at ``BF[ob]`` and whose index offsets are
    ``BI[oc:oc + 2]`` (see :mod:`robot_collision.geometry.cloud_index`): the link's bounding
    sphere in constant time first, then each sphere (constant time, else a walk of the index)."""
    fo = BI[H_CF] + BI[oc]
    io = BI[H_CI] + BI[oc + 1]
    t0, t1, t2 = BF[ob], BF[ob + 1], BF[ob + 2]
    r00, r01, r02 = BF[ob + 3], BF[ob + 4], BF[ob + 5]
    r10, r11, r12 = BF[ob + 6], BF[ob + 7], BF[ob + 8]
    r20, r21, r22 = BF[ob + 9], BF[ob + 10], BF[ob + 11]
    _, o_sc, o_lc, _, _ = _offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])
    c = o_lc + l * 3 * K + k
    dx = W[c] - t0
    dy = W[c + K] - t1
    dz = W[c + 2 * K] - t2
    hit = _inline_call_or(cloud_sphere_maybe, -1, BF, BI, fo, io, r00 * dx + r10 * dy + r20 * dz,
                          r01 * dx + r11 * dy + r21 * dz, r02 * dx + r12 * dy + r22 * dz,
                          BF[BI[H_LRAD] + l] + pad) != 0
    if hit:
        hit = False
        for s in range(BI[BI[H_LSTART] + l], BI[BI[H_LSTART] + l + 1]):
            c = o_sc + s * 3 * K + k
            dx = W[c] - t0
            dy = W[c + K] - t1
            dz = W[c + 2 * K] - t2
            x = r00 * dx + r10 * dy + r20 * dz
            y = r01 * dx + r11 * dy + r21 * dz
            z = r02 * dx + r12 * dy + r22 * dz
            r = BF[BI[H_SRAD] + s] + pad
            m = _inline_call_or(cloud_sphere_maybe, -1, BF, BI, fo, io, x, y, z, r)
            if m == 1 or (m < 0 and _call_or(cloud_sphere_exact, True, BF, BI, fo, io, x, y, z,
                                             r)):
                hit = True
                break
    held = BF.shape[0] + BI.shape[0] + W.shape[0]
    return hit and held >= 0


@njit(**_OPTS)
def _sphere_object_hits(BF, W, sc, rad, o_obj, kind, alive):  # type: ignore[no-untyped-def]
    """Lanes (of ``alive``) where the spheres at ``W[sc:sc + 24]`` (radius ``rad`` incl.
    padding) overlap the object whose record starts at ``BF[o_obj]``."""
    x = load(W, sc) - BF[o_obj]
    y = load(W, sc + K) - BF[o_obj + 1]
    z = load(W, sc + 2 * K) - BF[o_obj + 2]
    hit = 0
    if kind == SPHERE:
        rr = rad + BF[o_obj + 12]
        if rr > 0.0:
            hit = (x * x + y * y + z * z) < rr * rr
    elif kind == CAPSULE:
        ax, ay, az = BF[o_obj + 5], BF[o_obj + 8], BF[o_obj + 11]  # R[:, 2]
        h = BF[o_obj + 13]
        t = x * ax + y * ay + z * az
        t = select(t > h, h, select(t < -h, -h, t))
        ex = x - t * ax
        ey = y - t * ay
        ez = z - t * az
        rr = rad + BF[o_obj + 12]
        if rr > 0.0:
            hit = (ex * ex + ey * ey + ez * ez) < rr * rr
    elif kind == CYLINDER:  # radius, half length along local z (rad > 0, see block_scene)
        lx = x * BF[o_obj + 3] + y * BF[o_obj + 6] + z * BF[o_obj + 9]
        ly = x * BF[o_obj + 4] + y * BF[o_obj + 7] + z * BF[o_obj + 10]
        lz = x * BF[o_obj + 5] + y * BF[o_obj + 8] + z * BF[o_obj + 11]
        er = vmax(vsqrt(lx * lx + ly * ly) - BF[o_obj + 12], 0.0)
        ez = vmax(vabs(lz) - BF[o_obj + 13], 0.0)
        hit = (er * er + ez * ez) < rad * rad
    elif BF[o_obj + 23] != 0.0:  # BOX turned about z only (rad > 0, checked by block_scene)
        d2 = _box_gap2_z(x, y, z, 0.0, 0.0, 0.0, BF[o_obj + 3], BF[o_obj + 4], BF[o_obj + 6],
                         BF[o_obj + 7], BF[o_obj + 12], BF[o_obj + 13], BF[o_obj + 14])
        hit = d2 < rad * rad
    else:  # BOX (rad > 0, checked by block_scene)
        d2 = _box_gap2(x, y, z, 0.0, 0.0, 0.0, BF[o_obj + 3], BF[o_obj + 4], BF[o_obj + 5],
                       BF[o_obj + 6], BF[o_obj + 7], BF[o_obj + 8], BF[o_obj + 9],
                       BF[o_obj + 10], BF[o_obj + 11], BF[o_obj + 12], BF[o_obj + 13],
                       BF[o_obj + 14])
        hit = d2 < rad * rad
    return hit & alive


@intrinsic
def _cttz(typingctx, m):  # type: ignore[no-untyped-def]
    """Index of the lowest set bit of the int64 ``m`` (64 for 0)."""
    if not isinstance(m, types.Integer):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        v = context.cast(builder, args[0], sig.args[0], types.int64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)]),
            "llvm.cttz.i64")
        return builder.call(fn, [v, ir.Constant(ir.IntType(1), 0)])

    return types.int64(m), codegen


@njit(**_OPTS)
def _link_object(BF, BI, W, RI, l, o, lx, ly, lz, alive, start, any_hit):  # type: ignore[no-untyped-def]
    """Link ``l`` (bounding-sphere centre ``lx, ly, lz``) against world object ``o``, whose
    circumscribed sphere it meets in some lane of ``alive``: the enclosing-box test, then its
    spheres. Returns the lanes of ``alive`` still free (0 after a collision with ``any_hit``,
    or if a helper failed)."""
    _, o_sc, _, _, _ = _offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])
    Wn = BI[H_W]
    ob = BI[H_OBJ] + o * OBJ_REC
    pad = BF[BI[H_WPAD] + l * Wn + o]
    rr = BF[BI[H_LRAD] + l] + pad
    ok = True
    if rr > 0.0:
        if BF[ob + 23] != 0.0:
            gap2 = _box_gap2_z(lx, ly, lz, BF[ob + 15], BF[ob + 16], BF[ob + 17],
                               BF[ob + 3], BF[ob + 4], BF[ob + 6], BF[ob + 7],
                               BF[ob + 18], BF[ob + 19], BF[ob + 20])
        else:
            gap2 = _box_gap2(lx, ly, lz, BF[ob + 15], BF[ob + 16], BF[ob + 17],
                             BF[ob + 3], BF[ob + 4], BF[ob + 5], BF[ob + 6], BF[ob + 7],
                             BF[ob + 8], BF[ob + 9], BF[ob + 10], BF[ob + 11],
                             BF[ob + 18], BF[ob + 19], BF[ob + 20])
        cand = alive & (gap2 < rr * rr)
        if cand != 0:
            ok = _inline_call_or(_pose_link_spheres, False, BF, BI, W, RI, l)
            kind = BI[BI[H_OKIND] + o]
            if kind == POINT_CLOUD:
                # lane by lane through the cloud's index (a failed query counts as a hit)
                for k in range(K):
                    if (cand >> k) & 1 and _call_or(_cloud_lane_hits, True, BF, BI, W, l, k,
                                                    ob, BI[H_OCLOUD] + 2 * o, pad):
                        alive &= ~(1 << k)
                        if any_hit:
                            break
            else:
                o_srad, o_ls = BI[H_SRAD], BI[H_LSTART]
                for s in range(BI[o_ls + l], BI[o_ls + l + 1]):
                    alive &= ~_inline_call_or(_sphere_object_hits, -1, BF, W,
                                              o_sc + s * 3 * K, BF[o_srad + s] + pad, ob, kind,
                                              alive)
                    if alive == 0 or (any_hit and alive != start):
                        break
    if not ok or (any_hit and alive != start):
        alive = 0
    held = BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0]
    return alive if held >= 0 else 0


@njit(**_OPTS)
def block_valid(BF, BI, W, RI, alive, check_self, any_hit):  # type: ignore[no-untyped-def]
    """Validity of the 8 configurations in ``W`` (see the module docstring): the lanes of
    ``alive`` (bit mask) that are collision-free. Lanes outside ``alive`` are ignored (padding,
    or already known to collide); a lane whose joint values are not all finite is in
    collision. With ``any_hit`` the block stops at the first collision in any lane and returns
    0 (for edges, where one collision decides)."""
    return _block_valid(BF, BI, W, RI, alive, check_self, any_hit, 0, RI, False)


@njit(**_OPTS)
def block_valid_from(BF, BI, W, RI, alive, check_self, first, dead):  # type: ignore[no-untyped-def]
    """:func:`block_valid` (without ``any_hit``) from test position ``first`` on, recording
    where each lane failed: ``dead[k]`` (k < 8) = the position of the test that found lane k in
    collision (0 for a non-finite lane), for the lanes of ``alive`` not returned.

    Positions: ``i`` < ``BI[H_NL]`` is the i-th link of the world loop (every object against
    it), ``BI[H_NL] + k`` self pair k. A lane free at positions below ``first`` is not tested
    there (for sub-intervals of a certified interval, whose earlier tests passed with a larger
    padding)."""
    return _block_valid(BF, BI, W, RI, alive, check_self, False, first, dead, True)


@njit(inline="always", **_OPTS)
def _block_valid(BF, BI, W, RI, alive, check_self, any_hit, first, dead, record):  # type: ignore[no-untyped-def]
    """:func:`block_valid` / :func:`block_valid_from` (``record``: a compile-time constant)."""
    n, L, Wn, P, nl = BI[H_N], BI[H_L], BI[H_W], BI[H_P], BI[H_NL]
    o_fr, o_sc, o_lc, _, _ = _offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])
    start = alive
    if record:
        for k in range(K):
            dead[k] = 0
    for j in range(n):
        alive &= vabs(load(W, j * K)) <= 1.7976931348623157e308
    if any_hit and alive != start:
        alive = 0
    ok = alive != 0
    if ok:
        ok = _inline_call_or(_fk, False, BF, BI, W)
    if not ok:
        alive = 0
    # link bounding-sphere centres; shape centres are computed per link on first use
    o_lf, o_lcen, o_lrad, o_ls = BI[H_LFRAME], BI[H_LCEN], BI[H_LRAD], BI[H_LSTART]
    if alive != 0:
        for l in range(L):
            RI[l] = 0
            if BF[o_lrad + l] >= 0.0:
                c = o_lcen + 3 * l
                ok = ok and _inline_call_or(_point_in_frame, False, BF, W,
                                            o_fr + BI[o_lf + l] * 12 * K, BF[c], BF[c + 1],
                                            BF[c + 2], o_lc + l * 3 * K)
        if not ok:
            alive = 0
    # world
    o_order, o_obj, o_wpad, o_srad = BI[H_ORDER], BI[H_OBJ], BI[H_WPAD], BI[H_SRAD]
    if Wn > 0 and alive != 0:
        for i in range(min(first, nl), nl):
            l = BI[o_order + i]
            before = alive
            lx = load(W, o_lc + l * 3 * K)
            ly = load(W, o_lc + l * 3 * K + K)
            lz = load(W, o_lc + l * 3 * K + 2 * K)
            rl = BF[o_lrad + l]
            # objects whose circumscribed sphere the link's bounding sphere meets in some lane,
            # 64 at a time, in a loop without branches (most links are near few objects); then
            # the box test and the spheres for those only
            for o64 in range(0, Wn, 64):
                cand = 0
                for o in range(o64, min(o64 + 64, Wn)):
                    ob = o_obj + o * OBJ_REC
                    ex = lx - BF[ob + 15]
                    ey = ly - BF[ob + 16]
                    ez = lz - BF[ob + 17]
                    rb = rl + BF[o_wpad + l * Wn + o] + BF[ob + 22]
                    cand |= ((alive & ((ex * ex + ey * ey + ez * ez) < rb * rb)) != 0) << (o - o64)
                while cand != 0 and alive != 0:
                    o = o64 + _cttz(cand)
                    cand &= cand - 1
                    alive = _inline_call_or(_link_object, 0, BF, BI, W, RI, l, o, lx, ly, lz, alive,
                                            start, any_hit)
                if alive == 0:
                    break
            if record:
                _record(dead, before & ~alive, i)
            if alive == 0:
                break
    # self
    if check_self and alive != 0:
        o_pa, o_pb, o_ppad = BI[H_PA], BI[H_PB], BI[H_PPAD]
        for k in range(max(first - nl, 0), P):
            before = alive
            a = BI[o_pa + k]
            b = BI[o_pb + k]
            pad = BF[o_ppad + k]
            ra = BF[o_lrad + a]
            rb = BF[o_lrad + b]
            rr = ra + rb + pad
            if rr <= 0.0:
                continue
            la = o_lc + a * 3 * K
            lb = o_lc + b * 3 * K
            bx = load(W, lb)
            by = load(W, lb + K)
            bz = load(W, lb + 2 * K)
            dx = load(W, la) - bx
            dy = load(W, la + K) - by
            dz = load(W, la + 2 * K) - bz
            near = alive & ((dx * dx + dy * dy + dz * dz) < rr * rr)
            if near == 0:
                continue
            ok = ok and _inline_call_or(_pose_link_spheres, False, BF, BI, W, RI, a)
            ok = ok and _inline_call_or(_pose_link_spheres, False, BF, BI, W, RI, b)
            for s in range(BI[o_ls + a], BI[o_ls + a + 1]):
                sc = o_sc + s * 3 * K
                sx = load(W, sc)
                sy = load(W, sc + K)
                sz = load(W, sc + 2 * K)
                rs = BF[o_srad + s] + pad
                # cull sphere s against b's bounding sphere first
                ex = sx - bx
                ey = sy - by
                ez = sz - bz
                rsb = rs + rb
                if rsb <= 0.0 or (near & ((ex * ex + ey * ey + ez * ez) < rsb * rsb)) == 0:
                    continue
                for t in range(BI[o_ls + b], BI[o_ls + b + 1]):
                    tc = o_sc + t * 3 * K
                    ex = sx - load(W, tc)
                    ey = sy - load(W, tc + K)
                    ez = sz - load(W, tc + 2 * K)
                    rst = rs + BF[o_srad + t]
                    if rst > 0.0:
                        alive &= ~((ex * ex + ey * ey + ez * ez) < rst * rst)
                if alive == 0 or (any_hit and alive != start):
                    break
            if not ok or (any_hit and alive != start):
                alive = 0
            if record:
                _record(dead, before & ~alive, nl + k)
            if alive == 0:
                break
    # final use of every array here, so that all are released in one block (see
    # robot_collision.jitcall: lets numba's reference-count pruning remove them)
    held = BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0] + dead.shape[0]
    return alive if held >= 0 else 0


@njit(inline="always", **_OPTS)
def _record(dead, gone, pos):  # type: ignore[no-untyped-def]
    """``dead[k] = pos`` for the lanes k of bit mask ``gone``."""
    while gone != 0:
        dead[_cttz(gone)] = pos
        gone &= gone - 1


# ------------------------------------------------------------------------------------------
# drivers
# ------------------------------------------------------------------------------------------
@njit(**_OPTS)
def _batch_range(Q, lo, hi, BF, BI, check_self, out):  # type: ignore[no-untyped-def]
    """``out[i]`` = validity of ``Q[i]`` for lo <= i < hi, 8 configurations per pass."""
    n = BI[H_N]
    W = np.zeros(_offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])[4])
    RI = np.zeros(BI[H_L], dtype=np.int64)
    for i0 in range(lo, hi, K):
        m = min(K, hi - i0)
        for j in range(n):
            for k in range(K):
                W[j * K + k] = Q[i0 + min(k, m - 1), j]
        alive = _inline_call_or(block_valid, 0, BF, BI, W, RI, (1 << m) - 1, check_self, False)
        for k in range(m):
            out[i0 + k] = ((alive >> k) & 1) == 1
    return True


@njit(**_OPTS)
def single_valid_blocked(q, BF, BI, check_self):  # type: ignore[no-untyped-def]
    """One configuration ``q`` (n,) in lane 0 of a block: 1 valid, 0 in collision, -1 when
    ``q`` is not finite. (Faster than the scalar kernel although 8 lanes are computed.)"""
    n = q.shape[0]
    finite = True
    for j in range(n):
        finite = finite and np.isfinite(q[j])
    res = -1
    if finite:
        W = np.empty(_offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])[4])
        RI = np.zeros(BI[H_L], dtype=np.int64)
        for j in range(n):
            store(W, j * K, splat(q[j]))
        res = _inline_call_or(block_valid, 0, BF, BI, W, RI, 1, check_self, True)
    return res


@njit(**_OPTS)
def batch_valid_blocked(Q, BF, BI, check_self, out):  # type: ignore[no-untyped-def]
    """``out[i]`` = validity of ``Q[i]`` for a batch (N, n) in the calling thread."""
    _batch_range(Q, 0, Q.shape[0], BF, BI, check_self, out)


@njit(parallel=True, **_OPTS)
def batch_valid_blocked_parallel(Q, BF, BI, check_self, out):  # type: ignore[no-untyped-def]
    """:func:`batch_valid_blocked` split in chunks of whole blocks over threads."""
    N = Q.shape[0]
    nb = (N + K - 1) // K
    nchunks = min(nb, 64)
    for c in prange(nchunks):
        lo = (c * nb // nchunks) * K
        hi = min(((c + 1) * nb // nchunks) * K, N)
        _batch_range(Q, lo, hi, BF, BI, check_self, out)


@njit(**_OPTS)
def edge_pass(q0, d, steps, first, m, j, BF, BI, W, RI, check_self):  # type: ignore[no-untyped-def]
    """Pass ``j`` of ``m`` over the edge ``q0 + d * k / steps``, k = first..steps (``first`` 0
    or 1, m = ceil((steps - first + 1) / 8)): its lanes check k = steps - j - lane * m, so pass
    0 already samples the whole edge evenly and each further pass fills in between (VAMP's
    strided order). Returns the number of configurations checked, negated when one collides
    (the pass stops there)."""
    kk = (steps - j) - load(BF, BI[H_IOTA]) * m  # each lane's k
    want = kk >= first
    t = vmax(kk, first) * (1.0 / steps)
    for c in range(q0.shape[0]):
        store(W, c * K, t * d[c] + q0[c])
    got = _inline_call_or(block_valid, 0, BF, BI, W, RI, want, check_self, True)
    held = q0.shape[0] + d.shape[0] + BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0]
    checked = _popcount(want)
    return checked if got == want and held >= 0 else -checked


@njit(**_OPTS)
def edge_valid_blocked(q0, d, steps, first, BF, BI, W, RI, check_self):  # type: ignore[no-untyped-def]
    """Validity of ``q0 + d * k / steps`` for every k = first..steps (``first`` 0 or 1), 8
    at a time in strided order (:func:`edge_pass`), stopping at the first pass with a
    collision. Returns the number of configurations checked, negated when one collides."""
    m = (steps - first + K) // K
    checked = 0
    for j in range(m):
        c = _inline_call_or(edge_pass, -1, q0, d, steps, first, m, j, BF, BI, W, RI, check_self)
        if c < 0:
            checked = c - checked
            break
        checked += c
    return checked


@njit(inline="always", cache=True)
def _popcount(m):  # type: ignore[no-untyped-def]
    c = 0
    while m != 0:
        m &= m - 1
        c += 1
    return c
