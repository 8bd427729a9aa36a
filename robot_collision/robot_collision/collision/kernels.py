"""Compiled collision kernels: boolean validity (single, batch, motion) and pair distances.

Inputs are the flat tuples of :mod:`robot_collision.collision.scene` and
:mod:`robot_collision.model.kinematics`:
``kin`` = KinematicArrays, ``rs`` = RobotArrays, ``ws`` = WorldArrays, ``pr`` = PairArrays.
Link poses ``T`` are (L, 4, 4) and shape poses ``SP`` (S, 4, 4), base frame, metres.
A pair collides when its signed distance minus its padding is negative.
Link-level bounding spheres cull pairs before any shape-pair distance is computed.
The packed entry points (``packed_*``) take the scene as the two flat arrays of
:mod:`.scene_packing`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..geometry.cloud_index import cloud_ball_free, cloud_distance
from ..geometry.distance import bound_center, shape_distance, shape_overlap
from ..geometry.point_cloud import POINT_CLOUD
from ..geometry.shapes import BOX, CAPSULE, MESH, SPHERE
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or
from ..jitcall import nothrow as _nothrow
from ..model.kinematics import FIXED, fk_into
from .cloud_kernels import cloud_link_hits
from .pair_tables import TABLE_TOL
from .scene_packing import pack_scene as pack_scene
from .scene_packing import unpack_scene as unpack_scene
from .scene_packing import unpack_scene_borrowed

__all__ = [
    "all_shape_poses",
    "config_valid",
    "config_valid_batch",
    "evaluate_pairs",
    "motion_valid",
]


@njit(cache=True, fastmath=True, boundscheck=False)
def _sphere_hits(cx, cy, cz, r, ko, po, P, o):  # type: ignore[no-untyped-def]
    """Boolean sphere (centre c, radius r incl. padding) vs sphere/capsule/box ``o`` posed by
    ``P[o]``; returns 1 (overlap), 0 (clear) or -1 (other kind: use the general kernel)."""
    dx = cx - P[o, 0, 3]
    dy = cy - P[o, 1, 3]
    dz = cz - P[o, 2, 3]
    if ko == SPHERE:
        rr = r + po[o, 0]
        return 1 if dx * dx + dy * dy + dz * dz < rr * rr else 0
    if ko == CAPSULE:
        h = po[o, 1]
        t = dx * P[o, 0, 2] + dy * P[o, 1, 2] + dz * P[o, 2, 2]
        if t > h:
            t = h
        elif t < -h:
            t = -h
        ex = dx - t * P[o, 0, 2]
        ey = dy - t * P[o, 1, 2]
        ez = dz - t * P[o, 2, 2]
        rr = r + po[o, 0]
        return 1 if ex * ex + ey * ey + ez * ez < rr * rr else 0
    if ko == BOX:
        if r <= 0.0:
            return -1
        d2 = 0.0
        for a in range(3):
            loc = dx * P[o, 0, a] + dy * P[o, 1, a] + dz * P[o, 2, a]
            e = abs(loc) - po[o, a]
            if e > 0.0:
                d2 += e * e
        return 1 if d2 < r * r else 0
    return -1


# The cover and table helpers below are inlined into _valid_at (``inline_call_or``): each has a
# single exit, calls helpers holding arrays only through ``inline_call_or`` and uses every array
# at its end, so that no reference counting is left in the validity kernel (see jitcall).


@njit(cache=True, fastmath=True, boundscheck=False)
def _cover_world(kind, SP, s, cidx, cov, ko, po, P, o, pad):  # type: ignore[no-untyped-def]
    """Verdict of the sphere cover of robot shape ``s`` (posed by ``SP[s]``) against world
    object ``o`` (sphere, capsule or box) with padding ``pad``: 0 = certainly clear (no outer
    sphere within ``pad``), 1 = certainly colliding (an inner sphere within ``pad``), -1 =
    inconclusive or not applicable (run the exact narrow phase). A sphere shape's single cover
    sphere sits at its origin (its pose holds only the centre)."""
    res = -1
    n_out = cidx[s, 1]
    if not (n_out == 0 or ko > BOX or (ko == CAPSULE and kind[s] == CAPSULE)):
        sph = kind[s] == SPHERE
        near = 0
        bad = False
        for c in range(cidx[s, 0], cidx[s, 0] + n_out):
            r = cov[c, 3] + pad
            if r <= 0.0:
                bad = True
                break
            x, y, z = SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3]
            if not sph:
                a, b, d = cov[c, 0], cov[c, 1], cov[c, 2]
                x += SP[s, 0, 0] * a + SP[s, 0, 1] * b + SP[s, 0, 2] * d
                y += SP[s, 1, 0] * a + SP[s, 1, 1] * b + SP[s, 1, 2] * d
                z += SP[s, 2, 0] * a + SP[s, 2, 1] * b + SP[s, 2, 2] * d
            h = _inline_call_or(_sphere_hits, -1, x, y, z, r, ko, po, P, o)
            if h < 0:
                bad = True
                break
            if h == 1:  # not certainly clear: the inner spheres decide, or the narrow phase
                near = 1
                break
        if not bad:
            if near == 0:
                res = 0
            else:
                for c in range(cidx[s, 2], cidx[s, 2] + cidx[s, 3]):
                    r = cov[c, 3] + pad
                    if r <= 0.0:
                        continue
                    x, y, z = SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3]
                    if not sph:
                        a, b, d = cov[c, 0], cov[c, 1], cov[c, 2]
                        x += SP[s, 0, 0] * a + SP[s, 0, 1] * b + SP[s, 0, 2] * d
                        y += SP[s, 1, 0] * a + SP[s, 1, 1] * b + SP[s, 1, 2] * d
                        z += SP[s, 2, 0] * a + SP[s, 2, 1] * b + SP[s, 2, 2] * d
                    if _inline_call_or(_sphere_hits, -1, x, y, z, r, ko, po, P, o) == 1:
                        res = 1
                        break
    held = kind.shape[0] + SP.shape[0] + cidx.shape[0] + cov.shape[0] + po.shape[0] + P.shape[0]
    return res if held >= 0 else -1


@njit(cache=True, fastmath=True, boundscheck=False)
def _cover_self(kind, params, SP, s, t, cidx, cov, pad):  # type: ignore[no-untyped-def]
    """:func:`_cover_world` for two robot shapes ``s`` and ``t``: 0 when no outer sphere of
    one comes within ``pad`` of an outer sphere of the other, 1 when two inner spheres do, -1
    otherwise. Each outer sphere of ``s`` is first tested against the bounding sphere of ``t``
    (``params[t, 3]`` about :func:`bound_center`), so that far spheres cost one test."""
    res = -1
    if not (cidx[s, 1] == 0 or cidx[t, 1] == 0 or (kind[s] <= CAPSULE and kind[t] <= CAPSULE)):
        sph_s = kind[s] == SPHERE
        sph_t = kind[t] == SPHERE
        # bound_center(kind[t], params[t], SP[t]) without the row views: a mesh's box centre
        # params[t, :3] posed, else the shape's origin
        bx, by, bz = SP[t, 0, 3], SP[t, 1, 3], SP[t, 2, 3]
        if kind[t] == MESH:
            a, b, d = params[t, 0], params[t, 1], params[t, 2]
            bx += SP[t, 0, 0] * a + SP[t, 0, 1] * b + SP[t, 0, 2] * d
            by += SP[t, 1, 0] * a + SP[t, 1, 1] * b + SP[t, 1, 2] * d
            bz += SP[t, 2, 0] * a + SP[t, 2, 1] * b + SP[t, 2, 2] * d
        rt = params[t, 3] + pad
        near = 0
        bad = False
        for c in range(cidx[s, 0], cidx[s, 0] + cidx[s, 1]):
            x, y, z = SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3]
            if not sph_s:
                a, b, d = cov[c, 0], cov[c, 1], cov[c, 2]
                x += SP[s, 0, 0] * a + SP[s, 0, 1] * b + SP[s, 0, 2] * d
                y += SP[s, 1, 0] * a + SP[s, 1, 1] * b + SP[s, 1, 2] * d
                z += SP[s, 2, 0] * a + SP[s, 2, 1] * b + SP[s, 2, 2] * d
            rb = cov[c, 3] + rt
            if rb <= 0.0:
                bad = True
                break
            dx = x - bx
            dy = y - by
            dz = z - bz
            if dx * dx + dy * dy + dz * dz >= rb * rb:
                continue
            for e in range(cidx[t, 0], cidx[t, 0] + cidx[t, 1]):
                u, v, w = SP[t, 0, 3], SP[t, 1, 3], SP[t, 2, 3]
                if not sph_t:
                    a, b, d = cov[e, 0], cov[e, 1], cov[e, 2]
                    u += SP[t, 0, 0] * a + SP[t, 0, 1] * b + SP[t, 0, 2] * d
                    v += SP[t, 1, 0] * a + SP[t, 1, 1] * b + SP[t, 1, 2] * d
                    w += SP[t, 2, 0] * a + SP[t, 2, 1] * b + SP[t, 2, 2] * d
                rr = cov[c, 3] + cov[e, 3] + pad
                if rr <= 0.0:
                    bad = True
                    break
                dx = x - u
                dy = y - v
                dz = z - w
                near += dx * dx + dy * dy + dz * dz < rr * rr
            if near or bad:
                break
        if not bad:
            if near == 0:
                res = 0
            else:
                for c in range(cidx[s, 2], cidx[s, 2] + cidx[s, 3]):
                    x, y, z = SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3]
                    if not sph_s:
                        a, b, d = cov[c, 0], cov[c, 1], cov[c, 2]
                        x += SP[s, 0, 0] * a + SP[s, 0, 1] * b + SP[s, 0, 2] * d
                        y += SP[s, 1, 0] * a + SP[s, 1, 1] * b + SP[s, 1, 2] * d
                        z += SP[s, 2, 0] * a + SP[s, 2, 1] * b + SP[s, 2, 2] * d
                    for e in range(cidx[t, 2], cidx[t, 2] + cidx[t, 3]):
                        u, v, w = SP[t, 0, 3], SP[t, 1, 3], SP[t, 2, 3]
                        if not sph_t:
                            a, b, d = cov[e, 0], cov[e, 1], cov[e, 2]
                            u += SP[t, 0, 0] * a + SP[t, 0, 1] * b + SP[t, 0, 2] * d
                            v += SP[t, 1, 0] * a + SP[t, 1, 1] * b + SP[t, 1, 2] * d
                            w += SP[t, 2, 0] * a + SP[t, 2, 1] * b + SP[t, 2, 2] * d
                        rr = cov[c, 3] + cov[e, 3] + pad
                        if rr <= 0.0:
                            continue
                        dx = x - u
                        dy = y - v
                        dz = z - w
                        if dx * dx + dy * dy + dz * dz < rr * rr:
                            res = 1
                            break
                    if res == 1:
                        break
    held = kind.shape[0] + params.shape[0] + SP.shape[0] + cidx.shape[0] + cov.shape[0]
    return res if held >= 0 else -1


@njit(cache=True, fastmath=True, boundscheck=False)
def _joint_angle(T, p, c, tf, k, base):  # type: ignore[no-untyped-def]
    """Angle (rad, in [-pi, pi]) of the revolute joint between links ``p`` (parent) and ``c``
    from their poses: ``Rot = O^T R_p^T R_c`` with ``O`` the joint origin's rotation
    (``tf[k, base:base + 9]``, row-major) and unit axis ``u`` (``tf[k, base + 9:base + 12]``)."""
    m00 = T[p, 0, 0] * T[c, 0, 0] + T[p, 1, 0] * T[c, 1, 0] + T[p, 2, 0] * T[c, 2, 0]
    m01 = T[p, 0, 0] * T[c, 0, 1] + T[p, 1, 0] * T[c, 1, 1] + T[p, 2, 0] * T[c, 2, 1]
    m02 = T[p, 0, 0] * T[c, 0, 2] + T[p, 1, 0] * T[c, 1, 2] + T[p, 2, 0] * T[c, 2, 2]
    m10 = T[p, 0, 1] * T[c, 0, 0] + T[p, 1, 1] * T[c, 1, 0] + T[p, 2, 1] * T[c, 2, 0]
    m11 = T[p, 0, 1] * T[c, 0, 1] + T[p, 1, 1] * T[c, 1, 1] + T[p, 2, 1] * T[c, 2, 1]
    m12 = T[p, 0, 1] * T[c, 0, 2] + T[p, 1, 1] * T[c, 1, 2] + T[p, 2, 1] * T[c, 2, 2]
    m20 = T[p, 0, 2] * T[c, 0, 0] + T[p, 1, 2] * T[c, 1, 0] + T[p, 2, 2] * T[c, 2, 0]
    m21 = T[p, 0, 2] * T[c, 0, 1] + T[p, 1, 2] * T[c, 1, 1] + T[p, 2, 2] * T[c, 2, 1]
    m22 = T[p, 0, 2] * T[c, 0, 2] + T[p, 1, 2] * T[c, 1, 2] + T[p, 2, 2] * T[c, 2, 2]
    o = base
    # Rot[i, j] = sum_r O[r, i] M[r, j]
    r00 = tf[k, o + 0] * m00 + tf[k, o + 3] * m10 + tf[k, o + 6] * m20
    r11 = tf[k, o + 1] * m01 + tf[k, o + 4] * m11 + tf[k, o + 7] * m21
    r22 = tf[k, o + 2] * m02 + tf[k, o + 5] * m12 + tf[k, o + 8] * m22
    r01 = tf[k, o + 0] * m01 + tf[k, o + 3] * m11 + tf[k, o + 6] * m21
    r10 = tf[k, o + 1] * m00 + tf[k, o + 4] * m10 + tf[k, o + 7] * m20
    r02 = tf[k, o + 0] * m02 + tf[k, o + 3] * m12 + tf[k, o + 6] * m22
    r20 = tf[k, o + 2] * m00 + tf[k, o + 5] * m10 + tf[k, o + 8] * m20
    r12 = tf[k, o + 1] * m02 + tf[k, o + 4] * m12 + tf[k, o + 7] * m22
    r21 = tf[k, o + 2] * m01 + tf[k, o + 5] * m11 + tf[k, o + 8] * m21
    s = 0.5 * (tf[k, o + 9] * (r21 - r12) + tf[k, o + 10] * (r02 - r20)
               + tf[k, o + 11] * (r10 - r01))
    return np.arctan2(s, 0.5 * (r00 + r11 + r22 - 1.0))


@njit(cache=True, fastmath=True, boundscheck=False)
def _table_cell(theta, N):  # type: ignore[no-untyped-def]
    i = int((theta + np.pi) * (N / (2.0 * np.pi)))
    if i < 0:
        i = 0
    elif i >= N:
        i = N - 1
    return i


@njit(cache=True, fastmath=True, boundscheck=False)
def _table_verdict(k, a1, a2, ti, tf, data, pad):  # type: ignore[no-untyped-def]
    """Verdict of self pair ``k``'s joint-space table (:mod:`.pair_tables`) at joint angles
    ``a1``, ``a2`` (rad, :func:`_joint_angle`; ``a2`` unused by a one-joint table): 0 =
    certainly clear, 1 = certainly colliding, -1 = no table or inconclusive."""
    res = -1
    off = ti[k, 0]
    if off >= 0 and abs(a1) <= 4.0 and abs(a2) <= 4.0:
        N1 = ti[k, 1]
        N2 = ti[k, 2]
        i1 = _table_cell(a1, N1)
        i2 = _table_cell(a2, N2) if ti[k, 6] >= 0 else 0
        d = data[off + i1 * N2 + i2]
        slack = tf[k, 24] + TABLE_TOL
        if d - slack >= pad:
            res = 0
        elif d + slack < pad:
            res = 1
    held = ti.shape[0] + tf.shape[0] + data.shape[0]
    return res if held >= 0 else -1


@njit(cache=True, fastmath=True, boundscheck=False)
def _box_gap2(x, y, z, box, o):  # type: ignore[no-untyped-def]
    """Squared distance (m²) from point (x, y, z) to the enclosing box of world object ``o``
    (``WorldArrays.box`` columns), zero inside."""
    dx = x - box[9, o]
    dy = y - box[10, o]
    dz = z - box[11, o]
    ex = max(abs(dx * box[0, o] + dy * box[3, o] + dz * box[6, o]) - box[12, o], 0.0)
    ey = max(abs(dx * box[1, o] + dy * box[4, o] + dz * box[7, o]) - box[13, o], 0.0)
    ez = max(abs(dx * box[2, o] + dy * box[5, o] + dz * box[8, o]) - box[14, o], 0.0)
    return ex * ex + ey * ey + ez * ez


@njit(cache=True, fastmath=True, boundscheck=False)
def _box_signed(x, y, z, box, o):  # type: ignore[no-untyped-def]
    """Signed distance (m) from point (x, y, z) to the enclosing box of world object ``o``:
    negative inside (minus the depth). A lower bound of the point's signed distance to the
    object itself (the object lies in the box, so a point is no deeper in it than in the box)."""
    dx = x - box[9, o]
    dy = y - box[10, o]
    dz = z - box[11, o]
    ex = abs(dx * box[0, o] + dy * box[3, o] + dz * box[6, o]) - box[12, o]
    ey = abs(dx * box[1, o] + dy * box[4, o] + dz * box[7, o]) - box[13, o]
    ez = abs(dx * box[2, o] + dy * box[5, o] + dz * box[8, o]) - box[14, o]
    ox = max(ex, 0.0)
    oy = max(ey, 0.0)
    oz = max(ez, 0.0)
    return np.sqrt(ox * ox + oy * oy + oz * oz) + min(max(ex, max(ey, ez)), 0.0)


@njit(cache=True, fastmath=True, boundscheck=False)
def _full_sphere_pose(kinds, P, i):  # type: ignore[no-untyped-def]
    """Complete a sphere pose (centre-only on the fast path) with an identity rotation."""
    if kinds[i] == SPHERE:
        for a in range(3):
            for b in range(3):
                P[i, a, b] = 1.0 if a == b else 0.0
            P[i, 3, a] = 0.0
        P[i, 3, 3] = 1.0


@njit(cache=True, fastmath=True, boundscheck=False)
def _general_overlap(ks, ps, SP, vs0, vs1, vsrc, s, ko, po, P, vo0, vo1, vosrc, o, pad, buf):  # type: ignore[no-untyped-def]
    """Overlap of shape ``s`` with shape ``o`` through the boolean GJK kernel (off the fast
    path), after a test of their bounding spheres (``params[:, 3]``, see ``bound_center``:
    decomposed meshes bring many parts per link, most of them far from each other)."""
    ax, ay, az = _nothrow(bound_center, ks[s], ps[s], SP[s])
    bx, by, bz = _nothrow(bound_center, ko[o], po[o], P[o])
    dx = ax - bx
    dy = ay - by
    dz = az - bz
    rr = ps[s, 3] + po[o, 3] + pad
    if rr <= 0.0 or dx * dx + dy * dy + dz * dz >= rr * rr:
        return False
    _nothrow(_full_sphere_pose, ks, SP, s)
    _nothrow(_full_sphere_pose, ko, P, o)
    return shape_overlap(
        ks[s],
        ps[s],
        SP[s],
        vsrc[vs0[s] : vs0[s] + vs1[s]],
        ko[o],
        po[o],
        P[o],
        vosrc[vo0[o] : vo0[o] + vo1[o]],
        pad,
        buf[0],
        buf[1],
        buf[2],
    )


@njit(cache=True, fastmath=True, boundscheck=False)
def link_shape_poses(l, T, link_start, kind, local, SP):  # type: ignore[no-untyped-def]
    """Base-frame poses of link ``l``'s shapes into ``SP`` (S, 4, 4); spheres: centre only.
    Returns True (a value for ``call_or``)."""
    # The link pose in scalars: stores into SP might alias T as far as the compiler knows, so
    # reading T inside the loop reloads all 12 entries per shape (measured on the Panda's
    # 35 wrist spheres: 178 -> 150 ns per configuration).
    t00, t01, t02, t03 = T[l, 0, 0], T[l, 0, 1], T[l, 0, 2], T[l, 0, 3]
    t10, t11, t12, t13 = T[l, 1, 0], T[l, 1, 1], T[l, 1, 2], T[l, 1, 3]
    t20, t21, t22, t23 = T[l, 2, 0], T[l, 2, 1], T[l, 2, 2], T[l, 2, 3]
    for s in range(link_start[l], link_start[l + 1]):
        if kind[s] == SPHERE:
            x, y, z = local[s, 0, 3], local[s, 1, 3], local[s, 2, 3]
            SP[s, 0, 3] = t00 * x + t01 * y + t02 * z + t03
            SP[s, 1, 3] = t10 * x + t11 * y + t12 * z + t13
            SP[s, 2, 3] = t20 * x + t21 * y + t22 * z + t23
            continue
        for a in range(3):
            for b in range(4):
                acc = (
                    T[l, a, 0] * local[s, 0, b]
                    + T[l, a, 1] * local[s, 1, b]
                    + T[l, a, 2] * local[s, 2, b]
                )
                if b == 3:
                    acc += T[l, a, 3]
                SP[s, a, b] = acc
        SP[s, 3, 0] = 0.0
        SP[s, 3, 1] = 0.0
        SP[s, 3, 2] = 0.0
        SP[s, 3, 3] = 1.0
    return True


@njit(cache=True, fastmath=True, boundscheck=False)
def all_shape_poses(T, link_start, kind, local, SP):  # type: ignore[no-untyped-def]
    """Base-frame poses of every robot shape into ``SP`` (S, 4, 4); spheres: centre only."""
    for l in range(link_start.shape[0] - 1):
        _nothrow(link_shape_poses, l, T, link_start, kind, local, SP)


@njit(cache=True, fastmath=True, boundscheck=False)
def _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):  # type: ignore[no-untyped-def]
    """Validity of the configuration whose link poses are already in ``T`` (L, 4, 4).

    ``SP`` (S, 4, 4), ``ready`` (L,) bool and ``buf`` (L + 3, 3) are scratch buffers.
    Performance notes (see :mod:`robot_collision.jitcall`): every branch is dispatched here,
    calling only leaf helpers, through ``inline_call_or`` / ``call_or`` (inlined by LLVM, resp.
    the rare GJK/EPA fallback not; a failed helper counts as a collision);
    the function has a single exit and releases all its arrays there. Together these let
    numba drop the ~50 reference-count operations a call otherwise pays (~230 ns, a quarter
    of a collision-free check of the 59-sphere Panda). This function is called once per
    configuration by the checker, the planner and IK.
    """
    # unpack once: attribute access on tuples inside loops costs reference counting
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    bcen, brad = rs.bound_center, rs.bound_radius
    cidx, cov = rs.cover_index, rs.cover
    wkind, wparams, wpose = ws.kind, ws.params, ws.pose
    wvstart, wvcount, wverts = ws.vstart, ws.vcount, ws.verts
    wbox = ws.box
    wcloud, wcf, wci = ws.cloud, ws.cloud_f, ws.cloud_i
    world_pad, self_a, self_b, self_pad = pr.world_pad, pr.self_a, pr.self_b, pr.self_pad
    tab_i, tab_f, tab_d = pr.tab_i, pr.tab_f, pr.tab_data
    wskip = pr.world_skip
    L = link_start.shape[0] - 1
    for l in range(L):
        ready[l] = False  # shape poses are computed per link on first use
    cen = buf[3:]  # link bounding-sphere centres, base frame
    for l in range(L):
        for a in range(3):
            cen[l, a] = (
                T[l, a, 0] * bcen[l, 0]
                + T[l, a, 1] * bcen[l, 1]
                + T[l, a, 2] * bcen[l, 2]
                + T[l, a, 3]
            )
    # environment. Single exit: every test sets ``ok`` and breaks out, so that the function
    # returns from one block (numba's reference-count pruning removes the per-call increfs of
    # the ~25 arrays held here only then; early ``return``s from the loops cost ~230 ns a call).
    ok = True
    W = wkind.shape[0]
    for l in range(L):
        rl = brad[l]
        if rl < 0.0:
            continue
        x, y, z = cen[l, 0], cen[l, 1], cen[l, 2]
        # the link's bounding sphere against every object's enclosing box, branch-free so that
        # it vectorises over objects: most links are near none. Pairs in ``world_skip`` (a
        # link fixed to the base, found free when the scene was built) are never near.
        near = 0
        for o in range(W):
            rr = rl + world_pad[l, o]
            near += (_inline_call_or(_box_gap2, 0.0, x, y, z, wbox, o) < rr * rr) & (
                wskip[l, o] == 0)
        if near == 0:
            continue
        for o in range(W):
            pad = world_pad[l, o]
            rr = rl + pad
            if wskip[l, o] != 0 or _inline_call_or(_box_gap2, 0.0, x, y, z, wbox, o) >= rr * rr:
                continue
            if wkind[o] == POINT_CLOUD:
                # the link's bounding sphere in constant time, then its shapes (cloud_kernels)
                if _inline_call_or(
                    cloud_ball_free, False, wcf, wci, wcloud[o, 0], wcloud[o, 1], wpose, o,
                    x, y, z, rr,
                ):
                    continue
                if not ready[l]:
                    ok = ok and _inline_call_or(
                        link_shape_poses, False, l, T, link_start, kind, local, SP
                    )
                    ready[l] = True
                if _call_or(
                    cloud_link_hits, True, SP, l, link_start, kind, params, vstart, vcount,
                    verts, wcf, wci, wcloud[o, 0], wcloud[o, 1], wpose, o, pad,
                ):
                    ok = False
                    break
                continue
            # tighter for spheres and capsules: the bounding sphere against the object itself
            if (
                wkind[o] != BOX
                and _inline_call_or(_sphere_hits, 1, x, y, z, rl + pad, wkind[o], wparams, wpose, o)
                == 0
            ):
                continue
            if not ready[l]:
                ok = ok and _inline_call_or(
                    link_shape_poses, False, l, T, link_start, kind, local, SP
                )
                ready[l] = True
            for s in range(link_start[l], link_start[l + 1]):
                if kind[s] == SPHERE:
                    h = _inline_call_or(
                        _sphere_hits,
                        1,
                        SP[s, 0, 3],
                        SP[s, 1, 3],
                        SP[s, 2, 3],
                        params[s, 0] + pad,
                        wkind[o],
                        wparams,
                        wpose,
                        o,
                    )
                elif wkind[o] == SPHERE:
                    h = _inline_call_or(
                        _sphere_hits,
                        1,
                        wpose[o, 0, 3],
                        wpose[o, 1, 3],
                        wpose[o, 2, 3],
                        wparams[o, 0] + pad,
                        kind[s],
                        params,
                        SP,
                        s,
                    )
                else:
                    h = _inline_call_or(
                        _cover_world, -1, kind, SP, s, cidx, cov, wkind[o], wparams, wpose, o,
                        pad,
                    )
                if h == 1 or (
                    h < 0
                    and _call_or(
                        _general_overlap,
                        True,
                        kind,
                        params,
                        SP,
                        vstart,
                        vcount,
                        verts,
                        s,
                        wkind,
                        wparams,
                        wpose,
                        wvstart,
                        wvcount,
                        wverts,
                        o,
                        pad,
                        buf,
                    )
                ):
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            break
    if ok and check_self:
        # the last two joint angles read for the tables: (parent link, child link, angle)
        jp0 = jc0 = jp1 = jc1 = -1
        ja0 = ja1 = 0.0
        for k in range(self_a.shape[0]):
            a = self_a[k]
            b = self_b[k]
            pad = self_pad[k]
            dx = cen[a, 0] - cen[b, 0]
            dy = cen[a, 1] - cen[b, 1]
            dz = cen[a, 2] - cen[b, 2]
            rb = brad[b]
            rr = brad[a] + rb + pad
            if dx * dx + dy * dy + dz * dz >= rr * rr:
                continue
            v = -1
            if tab_i[k, 0] >= 0:
                # the table's joint angles, each read from the link poses once per
                # configuration (the Panda's four wrist tables share two joints: 8 -> 2 arctan2)
                a1 = 0.0
                a2 = 0.0
                for j in range(2):
                    p = tab_i[k, 3 + 2 * j]
                    c = tab_i[k, 4 + 2 * j]
                    if c < 0:
                        break  # (a one-joint table)
                    if p == jp0 and c == jc0:
                        ang = ja0
                    elif p == jp1 and c == jc1:
                        ang = ja1
                    else:
                        # (a failed call gives 1e9: not an angle, so no verdict)
                        ang = _inline_call_or(_joint_angle, 1e9, T, p, c, tab_f, k, 12 * j)
                        jp1, jc1, ja1 = jp0, jc0, ja0
                        jp0, jc0, ja0 = p, c, ang
                    if j == 0:
                        a1 = ang
                    else:
                        a2 = ang
                v = _inline_call_or(_table_verdict, -1, k, a1, a2, tab_i, tab_f, tab_d, pad)
            if v == 0:
                continue
            if v == 1:
                ok = False
                break
            if not ready[a]:
                ok = ok and _inline_call_or(
                    link_shape_poses, False, a, T, link_start, kind, local, SP
                )
                ready[a] = True
            if not ready[b]:
                ok = ok and _inline_call_or(
                    link_shape_poses, False, b, T, link_start, kind, local, SP
                )
                ready[b] = True
            for s in range(link_start[a], link_start[a + 1]):
                if kind[s] == SPHERE:
                    # cull s against b's bounding sphere first
                    ex = SP[s, 0, 3] - cen[b, 0]
                    ey = SP[s, 1, 3] - cen[b, 1]
                    ez = SP[s, 2, 3] - cen[b, 2]
                    rs_ = params[s, 0] + rb + pad
                    if ex * ex + ey * ey + ez * ez >= rs_ * rs_:
                        continue
                for t in range(link_start[b], link_start[b + 1]):
                    if kind[s] == SPHERE:
                        h = _inline_call_or(
                            _sphere_hits,
                            1,
                            SP[s, 0, 3],
                            SP[s, 1, 3],
                            SP[s, 2, 3],
                            params[s, 0] + pad,
                            kind[t],
                            params,
                            SP,
                            t,
                        )
                    elif kind[t] == SPHERE:
                        h = _inline_call_or(
                            _sphere_hits,
                            1,
                            SP[t, 0, 3],
                            SP[t, 1, 3],
                            SP[t, 2, 3],
                            params[t, 0] + pad,
                            kind[s],
                            params,
                            SP,
                            s,
                        )
                    else:
                        h = -1
                    if h < 0:
                        h = _inline_call_or(_cover_self, -1, kind, params, SP, s, t, cidx, cov,
                                            pad)
                    if h == 1 or (
                        h < 0
                        and _call_or(
                            _general_overlap,
                            True,
                            kind,
                            params,
                            SP,
                            vstart,
                            vcount,
                            verts,
                            s,
                            kind,
                            params,
                            SP,
                            vstart,
                            vcount,
                            verts,
                            t,
                            pad,
                            buf,
                        )
                    ):
                        ok = False
                        break
                if not ok:
                    break
            if not ok:
                break
    # Final use of every array held here, so that all of them are released in this one block
    # (otherwise numba frees each after its last use, in different blocks, and the pruning
    # fails). Reading shapes costs nothing.
    held = (
        T.shape[0] + SP.shape[0] + ready.shape[0] + buf.shape[0] + cen.shape[0]
        + link_start.shape[0] + kind.shape[0] + params.shape[0] + local.shape[0]
        + vstart.shape[0] + vcount.shape[0] + verts.shape[0] + bcen.shape[0] + brad.shape[0]
        + cidx.shape[0] + cov.shape[0] + tab_i.shape[0] + tab_f.shape[0] + tab_d.shape[0]
        + wkind.shape[0] + wparams.shape[0] + wpose.shape[0] + wvstart.shape[0]
        + wvcount.shape[0] + wverts.shape[0] + wbox.shape[0]
        + wcloud.shape[0] + wcf.shape[0] + wci.shape[0]
        + world_pad.shape[0] + self_a.shape[0] + self_b.shape[0] + self_pad.shape[0]
        + wskip.shape[0]
    )
    return ok and held >= 0


@njit(cache=True, fastmath=True, boundscheck=False)
def config_valid(q, kin, rs, ws, pr, check_self):  # type: ignore[no-untyped-def]
    """True when configuration ``q`` (n,) is collision-free (self pairs only if ``check_self``)."""
    L = rs.link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    _nothrow(
        fk_into, q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T
    )
    return _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf)


@njit(cache=True, parallel=True, fastmath=True, boundscheck=False)
def config_valid_batch(Q, kin, rs, ws, pr, check_self, out):  # type: ignore[no-untyped-def]
    """``out[k]`` = validity of ``Q[k]`` for a batch (N, n); work split in chunks over threads."""
    N = Q.shape[0]
    L = rs.link_start.shape[0] - 1
    S = rs.kind.shape[0]
    nchunks = min(N, 64)
    for c in prange(nchunks):
        T = np.empty((L, 4, 4))
        SP = np.empty((S, 4, 4))
        ready = np.zeros(L, dtype=np.bool_)
        buf = np.empty((L + 3, 3))
        lo = c * N // nchunks
        hi = (c + 1) * N // nchunks
        for k in range(lo, hi):
            _nothrow(fk_into,
                Q[k],
                kin.parent,
                kin.jtype,
                kin.origin,
                kin.axis,
                kin.qidx,
                kin.scale,
                kin.offset,
                T,
            )
            out[k] = _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf)


@njit(cache=True, fastmath=True, boundscheck=False)
def motion_valid(q0, q1, steps, kin, rs, ws, pr, check_self, T, SP, ready, buf):  # type: ignore[no-untyped-def]
    """Validity of the straight joint-space segment q0 -> q1 sampled at ``steps`` + 1 points
    (both ends included), visited coarse-to-fine (bisection order) with early exit."""
    n = q0.shape[0]
    q = np.empty(n)
    # endpoints first, then midpoints of ever finer subdivisions
    for k in (steps, 0):
        for j in range(n):
            q[j] = q0[j] + (q1[j] - q0[j]) * (k / steps) if steps > 0 else q0[j]
        _nothrow(
            fk_into, q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale,
            kin.offset, T,
        )
        if not _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf):
            return False
    stride = 1
    while stride < steps:
        stride *= 2
    while stride > 1:
        half = stride // 2
        k = half
        while k < steps:
            if (k // half) % 2 == 1:
                t = k / steps
                for j in range(n):
                    q[j] = q0[j] + (q1[j] - q0[j]) * t
                _nothrow(fk_into,
                    q,
                    kin.parent,
                    kin.jtype,
                    kin.origin,
                    kin.axis,
                    kin.qidx,
                    kin.scale,
                    kin.offset,
                    T,
                )
                if not _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf):
                    return False
            k += half
        stride = half
    return True


@njit(cache=True, fastmath=False, boundscheck=False)
def _pair_distance(ks, ps, SP, vs0, vs1, vsrc, s, ko, po, P, vo0, vo1, vosrc, o, wa, wb, n):  # type: ignore[no-untyped-def]
    """General signed distance of shape ``s`` to shape ``o`` (GJK/EPA kernel)."""
    _full_sphere_pose(ks, SP, s)
    _full_sphere_pose(ko, P, o)
    return shape_distance(
        ks[s],
        ps[s],
        SP[s],
        vsrc[vs0[s] : vs0[s] + vs1[s]],
        ko[o],
        po[o],
        P[o],
        vosrc[vo0[o] : vo0[o] + vo1[o]],
        wa,
        wb,
        n,
    )


@njit(cache=True, fastmath=False, boundscheck=False)
def _sphere_exact(cx, cy, cz, r, ko, po, P, o, wa, wb, n):  # type: ignore[no-untyped-def]
    """Signed distance of sphere (c, r) = A to sphere/capsule/box ``o`` = B posed by ``P[o]``,
    with witness points and the A->B normal (same conventions as ``shape_distance``).
    Returns NaN for other kinds (caller falls back to the general kernel)."""
    dx = P[o, 0, 3] - cx
    dy = P[o, 1, 3] - cy
    dz = P[o, 2, 3] - cz
    if ko == SPHERE or ko == CAPSULE:  # noqa: SIM109 - numba-friendly
        rb = po[o, 0]
        if ko == CAPSULE:
            h = po[o, 1]
            t = -(dx * P[o, 0, 2] + dy * P[o, 1, 2] + dz * P[o, 2, 2])
            if t > h:
                t = h
            elif t < -h:
                t = -h
            dx += t * P[o, 0, 2]
            dy += t * P[o, 1, 2]
            dz += t * P[o, 2, 2]
        dist = np.sqrt(dx * dx + dy * dy + dz * dz)
        if dist > 1e-12:
            n[0] = dx / dist
            n[1] = dy / dist
            n[2] = dz / dist
        else:
            n[0] = 0.0
            n[1] = 0.0
            n[2] = 1.0
        for a in range(3):
            wa[a] = (cx, cy, cz)[a] + r * n[a]
        wb[0] = cx + dx - rb * n[0]
        wb[1] = cy + dy - rb * n[1]
        wb[2] = cz + dz - rb * n[2]
        return dist - r - rb
    if ko == BOX:
        # sphere centre in the box frame
        lx = -(dx * P[o, 0, 0] + dy * P[o, 1, 0] + dz * P[o, 2, 0])
        ly = -(dx * P[o, 0, 1] + dy * P[o, 1, 1] + dz * P[o, 2, 1])
        lz = -(dx * P[o, 0, 2] + dy * P[o, 1, 2] + dz * P[o, 2, 2])
        hx = po[o, 0]
        hy = po[o, 1]
        hz = po[o, 2]
        inside = abs(lx) <= hx and abs(ly) <= hy and abs(lz) <= hz
        if not inside:
            yx = min(max(lx, -hx), hx)
            yy = min(max(ly, -hy), hy)
            yz = min(max(lz, -hz), hz)
            vx = lx - yx
            vy = ly - yy
            vz = lz - yz
            core = np.sqrt(vx * vx + vy * vy + vz * vz)
            # local normal from the box towards the sphere, A->B normal is its opposite
            ux = vx / core
            uy = vy / core
            uz = vz / core
            d = core - r
        else:
            gx = hx - abs(lx)
            gy = hy - abs(ly)
            gz = hz - abs(lz)
            yx, yy, yz = lx, ly, lz
            ux = 0.0
            uy = 0.0
            uz = 0.0
            if gx <= gy and gx <= gz:
                ux = 1.0 if lx >= 0 else -1.0
                yx = ux * hx
                depth = gx
            elif gy <= gz:
                uy = 1.0 if ly >= 0 else -1.0
                yy = uy * hy
                depth = gy
            else:
                uz = 1.0 if lz >= 0 else -1.0
                yz = uz * hz
                depth = gz
            d = -depth - r
        for a in range(3):
            wb[a] = P[o, a, 0] * yx + P[o, a, 1] * yy + P[o, a, 2] * yz + P[o, a, 3]
            n[a] = -(P[o, a, 0] * ux + P[o, a, 1] * uy + P[o, a, 2] * uz)
        wa[0] = cx + r * n[0]
        wa[1] = cy + r * n[1]
        wa[2] = cz + r * n[2]
        return d
    return np.nan


@njit(cache=True, fastmath=False, boundscheck=False)
def evaluate_pairs(  # type: ignore[no-untyped-def]
    T, rs, ws, pr, exhaustive, do_self, do_world, cutoff, D, WA, WB, NN, E, world_links
):
    """Signed (padded) distance of every evaluated link pair, link-indexed.

    Outputs (L links, W world objects, columns = L links then W objects): ``D`` (L, L + W)
    minimum over shape pairs of distance - padding (+inf initialised), ``WA``/``WB`` (L, L+W, 3)
    witness points on the row link / column body, ``NN`` (L, L+W, 3) unit normal from row to
    column, ``E`` evaluated flags. Self pairs fill
    ``[a, b]`` with a < b only. Without ``exhaustive`` it stops after the first colliding pair.
    Pairs whose padded distance is at least ``cutoff`` (m) may be left at +inf or at a value
    above ``cutoff`` (pruned by bounding spheres of links and shapes, enclosing boxes of world
    objects); every pair below ``cutoff`` is exact. Within a pair, shape pairs whose lower
    bound (bounding spheres, enclosing boxes) cannot beat the best distance found so far are
    skipped, the nearest pair of bounding spheres first (branch and bound). World pairs are
    evaluated for the links ``l`` with ``world_links[l]`` (L,) only. Returns True when a
    collision was found.
    """
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    bcen, brad = rs.bound_center, rs.bound_radius
    wbox = ws.box
    wcloud, wcf, wci = ws.cloud, ws.cloud_f, ws.cloud_i
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    wkind, wparams, wpose = ws.kind, ws.params, ws.pose
    wvstart, wvcount, wverts = ws.vstart, ws.vcount, ws.verts
    world_pad, self_a, self_b, self_pad = pr.world_pad, pr.self_a, pr.self_b, pr.self_pad
    L = link_start.shape[0] - 1
    S = kind.shape[0]
    SP = np.empty((S, 4, 4))
    all_shape_poses(T, link_start, kind, local, SP)
    cen = np.empty((L, 3))
    for l in range(L):
        for c in range(3):
            cen[l, c] = (
                T[l, c, 0] * bcen[l, 0]
                + T[l, c, 1] * bcen[l, 1]
                + T[l, c, 2] * bcen[l, 2]
                + T[l, c, 3]
            )
    # every shape's bounding sphere (centre scen, radius params[:, 3]): lower bounds that let
    # the branch and bound below skip shape pairs that cannot beat the pair's best distance
    scen = np.empty((S, 3))
    for s in range(S):
        if kind[s] == MESH:
            for c in range(3):
                scen[s, c] = (
                    SP[s, c, 0] * params[s, 0]
                    + SP[s, c, 1] * params[s, 1]
                    + SP[s, c, 2] * params[s, 2]
                    + SP[s, c, 3]
                )
        else:
            for c in range(3):
                scen[s, c] = SP[s, c, 3]
    wa = np.empty(3)
    wb = np.empty(3)
    n = np.empty(3)
    hit = False
    if do_self:
        for k in range(self_a.shape[0]):
            a = self_a[k]
            b = self_b[k]
            pad = self_pad[k]
            E[a, b] = True
            dx = cen[a, 0] - cen[b, 0]
            dy = cen[a, 1] - cen[b, 1]
            dz = cen[a, 2] - cen[b, 2]
            if np.sqrt(dx * dx + dy * dy + dz * dz) - brad[a] - brad[b] - pad >= cutoff:
                continue
            # branch and bound over the shape pairs: the pair whose bounding spheres are
            # nearest first, then every pair whose lower bound (bounding spheres, less 1 nm for
            # round-off) is below the best distance so far
            s0 = link_start[a]
            t0 = link_start[b]
            nt = link_start[b + 1] - t0
            npairs = (link_start[a + 1] - s0) * nt
            if npairs == 0:
                continue
            first = 0
            if npairs > 1:
                best = np.inf
                for k in range(npairs):
                    s = s0 + k // nt
                    t = t0 + k % nt
                    dx = scen[s, 0] - scen[t, 0]
                    dy = scen[s, 1] - scen[t, 1]
                    dz = scen[s, 2] - scen[t, 2]
                    lb = np.sqrt(dx * dx + dy * dy + dz * dz) - params[s, 3] - params[t, 3]
                    if lb < best:
                        best = lb
                        first = k
            for kk in range(-1, npairs):
                if kk == first:
                    continue
                k = first if kk < 0 else kk
                s = s0 + k // nt
                t = t0 + k % nt
                dx = scen[s, 0] - scen[t, 0]
                dy = scen[s, 1] - scen[t, 1]
                dz = scen[s, 2] - scen[t, 2]
                lb = (np.sqrt(dx * dx + dy * dy + dz * dz) - params[s, 3] - params[t, 3]
                      - pad - 1e-9)
                if lb >= D[a, b] or lb >= cutoff:
                    continue
                d = np.nan
                if kind[s] == SPHERE:
                    d = _sphere_exact(
                        SP[s, 0, 3],
                        SP[s, 1, 3],
                        SP[s, 2, 3],
                        params[s, 0],
                        kind[t],
                        params,
                        SP,
                        t,
                        wa,
                        wb,
                        n,
                    )
                elif kind[t] == SPHERE:
                    d = _sphere_exact(
                        SP[t, 0, 3],
                        SP[t, 1, 3],
                        SP[t, 2, 3],
                        params[t, 0],
                        kind[s],
                        params,
                        SP,
                        s,
                        wb,
                        wa,
                        n,
                    )
                    n[0] = -n[0]
                    n[1] = -n[1]
                    n[2] = -n[2]
                if np.isnan(d):
                    d = _pair_distance(
                        kind,
                        params,
                        SP,
                        vstart,
                        vcount,
                        verts,
                        s,
                        kind,
                        params,
                        SP,
                        vstart,
                        vcount,
                        verts,
                        t,
                        wa,
                        wb,
                        n,
                    )
                d -= pad
                if d < D[a, b]:
                    D[a, b] = d
                    for c in range(3):
                        WA[a, b, c] = wa[c]
                        WB[a, b, c] = wb[c]
                        NN[a, b, c] = n[c]
            if D[a, b] < 0.0:
                hit = True
                if not exhaustive:
                    return True
    if do_world:
        W = wkind.shape[0]
        for l in range(L):
            if link_start[l] == link_start[l + 1] or not world_links[l]:
                continue
            for o in range(W):
                pad = world_pad[l, o]
                j = L + o
                E[l, j] = True
                # lower bounds from the signed distance to the object's enclosing box (far
                # tighter than its bounding sphere for walls and plates; exact for boxes), less
                # 1 nm for the rounding of the fastmath helper; -inf (no pruning) if it failed
                lb = _inline_call_or(
                    _box_signed, -np.inf, cen[l, 0], cen[l, 1], cen[l, 2], wbox, o
                )
                if lb - brad[l] - pad - 1e-9 >= cutoff:
                    continue
                for s in range(link_start[l], link_start[l + 1]):
                    lb = _inline_call_or(
                        _box_signed, -np.inf, scen[s, 0], scen[s, 1], scen[s, 2], wbox, o
                    )
                    lb = lb - params[s, 3] - pad - 1e-9
                    if lb >= D[l, j] or lb >= cutoff:
                        continue
                    d = np.nan
                    if wkind[o] == POINT_CLOUD:
                        # nearest point below the best so far (within the cutoff), else +inf
                        _full_sphere_pose(kind, SP, s)
                        d = cloud_distance(
                            kind[s],
                            params[s],
                            SP[s],
                            verts[vstart[s] : vstart[s] + vcount[s]],
                            wcf,
                            wci,
                            wcloud[o, 0],
                            wcloud[o, 1],
                            wpose[o],
                            min(D[l, j], cutoff) + pad,
                            wa,
                            wb,
                            n,
                        )
                    elif kind[s] == SPHERE:
                        d = _sphere_exact(
                            SP[s, 0, 3],
                            SP[s, 1, 3],
                            SP[s, 2, 3],
                            params[s, 0],
                            wkind[o],
                            wparams,
                            wpose,
                            o,
                            wa,
                            wb,
                            n,
                        )
                    elif wkind[o] == SPHERE:
                        d = _sphere_exact(
                            wpose[o, 0, 3],
                            wpose[o, 1, 3],
                            wpose[o, 2, 3],
                            wparams[o, 0],
                            kind[s],
                            params,
                            SP,
                            s,
                            wb,
                            wa,
                            n,
                        )
                        n[0] = -n[0]
                        n[1] = -n[1]
                        n[2] = -n[2]
                    if np.isnan(d):
                        d = _pair_distance(
                            kind,
                            params,
                            SP,
                            vstart,
                            vcount,
                            verts,
                            s,
                            wkind,
                            wparams,
                            wpose,
                            wvstart,
                            wvcount,
                            wverts,
                            o,
                            wa,
                            wb,
                            n,
                        )
                    d -= pad
                    if d < D[l, j]:
                        D[l, j] = d
                        for c in range(3):
                            WA[l, j, c] = wa[c]
                            WB[l, j, c] = wb[c]
                            NN[l, j, c] = n[c]
                if D[l, j] < 0.0:
                    hit = True
                    if not exhaustive:
                        return True
    return hit


# ------------------------------------------------------------------------------------------
# Packed entry points: the scene as two flat arrays (:mod:`.scene_packing`).
# ------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=False, boundscheck=False)
def all_finite(q):  # type: ignore[no-untyped-def]
    """True when every entry of ``q`` (n,) is finite. Compiled without fastmath, under which
    LLVM may assume that no value is NaN or infinite and fold ``np.isfinite`` to True; the
    explicit ``fastmath=False`` matters: numba compiles a callee first reached from a fastmath
    function with the caller's fastmath flags unless the callee sets them itself."""
    ok = True
    for j in range(q.shape[0]):
        ok = ok and np.isfinite(q[j])
    return ok


@njit(cache=True, fastmath=True, boundscheck=False)
def packed_valid(q, F, I, check_self):  # type: ignore[no-untyped-def]
    """:func:`config_valid` on a packed scene: 1 valid, 0 in collision, -1 non-finite ``q``."""
    if not _call_or(all_finite, False, q):
        return -1
    # config_valid's body, with the scene unpacked inline: passing the ~30 arrays of the scene
    # through two calls (unpack_scene, config_valid) cost ~0.3 us of a ~0.5 us check
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = rs.link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    _nothrow(
        fk_into, q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T
    )
    return 1 if _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf) else 0


@njit(cache=True, fastmath=True, boundscheck=False)
def packed_valid_serial(Q, F, I, check_self, out):  # type: ignore[no-untyped-def]
    """Batch validity in the calling thread (small batches: no thread start-up cost)."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = rs.link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    for k in range(Q.shape[0]):
        _nothrow(fk_into,
            Q[k], kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T
        )
        out[k] = _nothrow(_valid_at, T, rs, ws, pr, SP, ready, check_self, buf)


@njit(cache=True, fastmath=True, boundscheck=False)
def packed_valid_batch(Q, F, I, check_self, out):  # type: ignore[no-untyped-def]
    """:func:`config_valid_batch` on a packed scene."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    config_valid_batch(Q, kin, rs, ws, pr, check_self, out)


@njit(cache=True, fastmath=False, boundscheck=False)
def packed_pairs_into(  # type: ignore[no-untyped-def]
    q, F, I, exhaustive, do_self, cutoff, moving_only, T, D, WA, WB, NN, E
):
    """FK + :func:`evaluate_pairs` on a packed scene into the caller's arrays (L links, C = L
    + W columns): ``T`` (L, 4, 4), ``D`` (L, C), ``WA``/``WB``/``NN`` (L, C, 3), ``E`` (L, C).
    Returns 1 when a collision was found, 0 when none, -1 (nothing written) when an array has
    another shape (checked here: the same checks in Python cost ~1.3 us, half of what reusing
    the arrays saves; dtypes and layouts are part of numba's signature). Only ``D`` (+inf) and
    ``E`` (False) are reset: ``evaluate_pairs`` writes ``WA``, ``WB``, ``NN`` together with
    every finite ``D`` (filling all (L, C) entries was the bulk of a call on robots with many
    frames: anymal_c, 78 links, ~0.6 MB, ~15 us). With ``moving_only`` the world pairs of
    links fixed to the base (the base and the links attached to it by fixed joints only: their
    distances do not depend on ``q``) are not evaluated."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = rs.link_start.shape[0] - 1
    C = L + ws.kind.shape[0]
    w = (L, C, 3)
    if (T.shape != (L, 4, 4) or D.shape != (L, C) or E.shape != (L, C) or WA.shape != w
            or WB.shape != w or NN.shape != w):
        return -1
    world_links = np.ones(L, dtype=np.bool_)
    if moving_only:
        static = np.zeros(L, dtype=np.bool_)
        for l in range(L):  # parents come before their children
            p = kin.parent[l]
            static[l] = p < 0 or (kin.jtype[l] == FIXED and static[p])
            world_links[l] = not static[l]
    fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T)
    D[:] = np.inf
    E[:] = False
    hit = evaluate_pairs(
        T, rs, ws, pr, exhaustive, do_self, True, cutoff, D, WA, WB, NN, E, world_links
    )
    return 1 if hit else 0


@njit(cache=True, fastmath=False, boundscheck=False)
def packed_pairs(q, F, I, exhaustive, do_self, cutoff, moving_only):  # type: ignore[no-untyped-def]
    """:func:`packed_pairs_into` into new arrays; returns ``(T, D, WA, WB, NN, E, hit)``."""
    _kin, rs, ws, _pr = unpack_scene_borrowed(F, I)
    L = rs.link_start.shape[0] - 1
    C = L + ws.kind.shape[0]
    T = np.empty((L, 4, 4))
    D = np.empty((L, C))
    WA = np.empty((L, C, 3))
    WB = np.empty((L, C, 3))
    NN = np.empty((L, C, 3))
    E = np.empty((L, C), dtype=np.bool_)
    hit = packed_pairs_into(
        q, F, I, exhaustive, do_self, cutoff, moving_only, T, D, WA, WB, NN, E
    )
    return T, D, WA, WB, NN, E, hit > 0


@njit(cache=True, fastmath=False, boundscheck=False)
def matlab_matrices(D, WA, WB, E, L):  # type: ignore[no-untyped-def]
    """Link-indexed pair results -> MATLAB layout (rows: bodies then base; columns: bodies,
    base, world objects). Returns ``(separation, signed, witness, colliding)``."""
    m = L - 1
    W = D.shape[1] - L
    R = m + 1
    C = m + 1 + W
    signed = np.full((R, C), np.inf)
    sep = np.full((R, C), np.inf)
    wit = np.full((R, C, 2, 3), np.inf)
    coll = np.zeros((R, C), dtype=np.bool_)
    for a in range(L):
        ia = a - 1 if a > 0 else m
        for j in range(D.shape[1]):
            if not E[a, j] or not np.isfinite(D[a, j]):
                continue
            d = D[a, j]
            c = d < 0.0
            if j < L:
                jb = j - 1 if j > 0 else m
                signed[ia, jb] = d
                signed[jb, ia] = d
                sep[ia, jb] = np.nan if c else d
                sep[jb, ia] = sep[ia, jb]
                coll[ia, jb] = c
                coll[jb, ia] = c
                for k in range(3):
                    wit[ia, jb, 0, k] = np.nan if c else WA[a, j, k]
                    wit[ia, jb, 1, k] = np.nan if c else WB[a, j, k]
                    wit[jb, ia, 0, k] = np.nan if c else WB[a, j, k]
                    wit[jb, ia, 1, k] = np.nan if c else WA[a, j, k]
            else:
                jb = m + 1 + (j - L)
                signed[ia, jb] = d
                sep[ia, jb] = np.nan if c else d
                coll[ia, jb] = c
                for k in range(3):
                    wit[ia, jb, 0, k] = np.nan if c else WA[a, j, k]
                    wit[ia, jb, 1, k] = np.nan if c else WB[a, j, k]
    return sep, signed, wit, coll
