"""Compiled collision kernels: boolean validity (single, batch, motion) and pair distances.

Inputs are the flat tuples of :mod:`robot_collision.scene` and :mod:`robot_collision.kinematics`:
``kin`` = KinematicArrays, ``rs`` = RobotArrays, ``ws`` = WorldArrays, ``pr`` = PairArrays.
Link poses ``T`` are (L, 4, 4) and shape poses ``SP`` (S, 4, 4), base frame, metres.
A pair collides when its signed distance minus its padding is negative.
Link-level bounding spheres cull pairs before any shape-pair distance is computed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .distance import shape_distance
from .kinematics import fk_into
from .shapes import BOX, CAPSULE, SPHERE

__all__ = [
    "shape_poses_for_link",
    "config_valid",
    "config_valid_batch",
    "evaluate_pairs",
    "motion_valid",
]


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
def _link_shape_poses(l, T, link_start, kind, local, SP, ready):  # type: ignore[no-untyped-def]
    """Compute the base-frame poses of link ``l``'s shapes into ``SP`` once per configuration
    (spheres get their centre and an identity rotation)."""
    if ready[l]:
        return
    ready[l] = True
    for s in range(link_start[l], link_start[l + 1]):
        if kind[s] == SPHERE:
            for a in range(3):
                SP[s, a, 3] = (
                    T[l, a, 0] * local[s, 0, 3]
                    + T[l, a, 1] * local[s, 1, 3]
                    + T[l, a, 2] * local[s, 2, 3]
                    + T[l, a, 3]
                )
                for b in range(3):
                    SP[s, a, b] = 1.0 if a == b else 0.0
        else:
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


@njit(cache=True, fastmath=True, boundscheck=False)
def shape_poses_for_link(l, T, rs, SP, ready):  # type: ignore[no-untyped-def]
    """Compute the base-frame poses (S, 4, 4) of link ``l``'s shapes into ``SP`` (once)."""
    _link_shape_poses(l, T, rs.link_start, rs.kind, rs.local, SP, ready)


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
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


@njit(cache=True, fastmath=True, boundscheck=False)
def _general_overlap(ks, ps, SP, vs0, vs1, vsrc, s, ko, po, P, vo0, vo1, vosrc, o, pad, buf):  # type: ignore[no-untyped-def]
    """Overlap of shape ``s`` with shape ``o`` through the GJK/EPA kernel (off the fast path)."""
    d = shape_distance(ks[s], ps[s], SP[s], vsrc[vs0[s] : vs0[s] + vs1[s]], ko[o], po[o], P[o],
                       vosrc[vo0[o] : vo0[o] + vo1[o]], buf[0], buf[1], buf[2])
    return d < pad


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
def _fast_hit(ks, ps, SP, s, ko, po, P, o, pad):  # type: ignore[no-untyped-def]
    """1 / 0 when a sphere is involved and the closed form decides, else -1."""
    if ks[s] == SPHERE:
        return _sphere_hits(SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3], ps[s, 0] + pad, ko[o], po, P, o)
    if ko[o] == SPHERE:
        return _sphere_hits(P[o, 0, 3], P[o, 1, 3], P[o, 2, 3], po[o, 0] + pad, ks[s], ps, SP, s)
    return -1


@njit(cache=True, fastmath=True, boundscheck=False)
def _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):  # type: ignore[no-untyped-def]
    """Validity of the configuration whose link poses are already in ``T`` (L, 4, 4).

    ``SP`` (S, 4, 4), ``ready`` (L,) bool and ``buf`` (L + 3, 3) are scratch buffers."""
    # unpack once: attribute access on tuples inside loops costs reference counting
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    bcen, brad = rs.bound_center, rs.bound_radius
    wkind, wparams, wpose = ws.kind, ws.params, ws.pose
    wvstart, wvcount, wverts = ws.vstart, ws.vcount, ws.verts
    wbcen, wbrad = ws.bound_center, ws.bound_radius
    world_pad, self_a, self_b, self_pad = pr.world_pad, pr.self_a, pr.self_b, pr.self_pad
    L = link_start.shape[0] - 1
    for l in range(L):
        ready[l] = False
    cen = buf[3:]  # link bounding-sphere centres, base frame
    for l in range(L):
        for a in range(3):
            cen[l, a] = (T[l, a, 0] * bcen[l, 0] + T[l, a, 1] * bcen[l, 1]
                         + T[l, a, 2] * bcen[l, 2] + T[l, a, 3])
    # environment
    W = wkind.shape[0]
    for l in range(L):
        rl = brad[l]
        if rl < 0.0:
            continue
        for o in range(W):
            pad = world_pad[l, o]
            dx = cen[l, 0] - wbcen[o, 0]
            dy = cen[l, 1] - wbcen[o, 1]
            dz = cen[l, 2] - wbcen[o, 2]
            rr = rl + wbrad[o] + pad
            if dx * dx + dy * dy + dz * dz >= rr * rr:
                continue
            _link_shape_poses(l, T, link_start, kind, local, SP, ready)
            for s in range(link_start[l], link_start[l + 1]):
                h = _fast_hit(kind, params, SP, s, wkind, wparams, wpose, o, pad)
                if h == 1 or (h < 0 and _general_overlap(kind, params, SP, vstart, vcount, verts, s,
                                                         wkind, wparams, wpose, wvstart, wvcount,
                                                         wverts, o, pad, buf)):
                    return False
    if not check_self:
        return True
    for k in range(self_a.shape[0]):
        a = self_a[k]
        b = self_b[k]
        pad = self_pad[k]
        dx = cen[a, 0] - cen[b, 0]
        dy = cen[a, 1] - cen[b, 1]
        dz = cen[a, 2] - cen[b, 2]
        rr = brad[a] + brad[b] + pad
        if dx * dx + dy * dy + dz * dz >= rr * rr:
            continue
        _link_shape_poses(a, T, link_start, kind, local, SP, ready)
        _link_shape_poses(b, T, link_start, kind, local, SP, ready)
        for s in range(link_start[a], link_start[a + 1]):
            for t in range(link_start[b], link_start[b + 1]):
                h = _fast_hit(kind, params, SP, s, kind, params, SP, t, pad)
                if h == 1 or (h < 0 and _general_overlap(kind, params, SP, vstart, vcount, verts, s,
                                                         kind, params, SP, vstart, vcount, verts, t,
                                                         pad, buf)):
                    return False
    return True


@njit(cache=True, fastmath=True, boundscheck=False)
def config_valid(q, kin, rs, ws, pr, check_self):  # type: ignore[no-untyped-def]
    """True when configuration ``q`` (n,) is collision-free (self pairs only if ``check_self``)."""
    L = rs.link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T)
    return _valid_at(T, rs, ws, pr, SP, ready, check_self, buf)


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
            fk_into(Q[k], kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale,
                    kin.offset, T)
            out[k] = _valid_at(T, rs, ws, pr, SP, ready, check_self, buf)


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
        fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T)
        if not _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
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
                fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale,
                        kin.offset, T)
                if not _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
                    return False
            k += half
        stride = half
    return True


@njit(cache=True, fastmath=False, boundscheck=False, inline="always")
def _record(D, WA, WB, NN, SA, SB, i, j, d, s, t, wa, wb, n):  # type: ignore[no-untyped-def]
    if d < D[i, j]:
        D[i, j] = d
        for a in range(3):
            WA[i, j, a] = wa[a]
            WB[i, j, a] = wb[a]
            NN[i, j, a] = n[a]
        SA[i, j] = s
        SB[i, j] = t


@njit(cache=True, fastmath=False, boundscheck=False)
def _pair_distance(ks, ps, SP, vs0, vs1, vsrc, s, ko, po, P, vo0, vo1, vosrc, o, wa, wb, n):  # type: ignore[no-untyped-def]
    return shape_distance(ks[s], ps[s], SP[s], vsrc[vs0[s] : vs0[s] + vs1[s]], ko[o], po[o], P[o],
                          vosrc[vo0[o] : vo0[o] + vo1[o]], wa, wb, n)


@njit(cache=True, fastmath=False, boundscheck=False)
def evaluate_pairs(T, rs, ws, pr, exhaustive, do_self, do_world, D, WA, WB, NN, SA, SB, E):  # type: ignore[no-untyped-def]
    """Signed (padded) distance of every evaluated link pair, link-indexed.

    Outputs (L links, W world objects, columns = L links then W objects): ``D`` (L, L + W)
    minimum over shape pairs of distance - padding (+inf initialised), ``WA``/``WB`` (L, L+W, 3)
    witness points on the row link / column body, ``NN`` (L, L+W, 3) unit normal from row to
    column, ``SA``/``SB`` indices of the closest shapes, ``E`` evaluated flags. Self pairs fill
    ``[a, b]`` with a < b only. Without ``exhaustive`` it stops after the first colliding pair.
    Returns True when a collision was found.
    """
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    wkind, wparams, wpose = ws.kind, ws.params, ws.pose
    wvstart, wvcount, wverts = ws.vstart, ws.vcount, ws.verts
    world_pad, self_a, self_b, self_pad = pr.world_pad, pr.self_a, pr.self_b, pr.self_pad
    L = link_start.shape[0] - 1
    S = kind.shape[0]
    SP = np.empty((S, 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
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
            _link_shape_poses(a, T, link_start, kind, local, SP, ready)
            _link_shape_poses(b, T, link_start, kind, local, SP, ready)
            for s in range(link_start[a], link_start[a + 1]):
                for t in range(link_start[b], link_start[b + 1]):
                    d = _pair_distance(kind, params, SP, vstart, vcount, verts, s, kind, params, SP,
                                       vstart, vcount, verts, t, wa, wb, n) - pad
                    _record(D, WA, WB, NN, SA, SB, a, b, d, s, t, wa, wb, n)
            if D[a, b] < 0.0:
                hit = True
                if not exhaustive:
                    return True
    if do_world:
        W = wkind.shape[0]
        for l in range(L):
            if link_start[l] == link_start[l + 1]:
                continue
            _link_shape_poses(l, T, link_start, kind, local, SP, ready)
            for o in range(W):
                pad = world_pad[l, o]
                E[l, L + o] = True
                for s in range(link_start[l], link_start[l + 1]):
                    d = _pair_distance(kind, params, SP, vstart, vcount, verts, s, wkind, wparams,
                                       wpose, wvstart, wvcount, wverts, o, wa, wb, n) - pad
                    _record(D, WA, WB, NN, SA, SB, l, L + o, d, s, -1 - o, wa, wb, n)
                if D[l, L + o] < 0.0:
                    hit = True
                    if not exhaustive:
                        return True
    return hit
