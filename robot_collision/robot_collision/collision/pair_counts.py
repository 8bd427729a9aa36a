"""Compiled per-pair collision counts over a batch of configurations (SRDF generation).

:func:`pair_collision_counts` answers, for K link pairs and N configurations, how many of the
configurations put each pair in collision (signed distance below zero, meshes as their convex
hulls or decomposition parts as loaded). Link bounding spheres cull far pairs; the rest are
decided shape pair by shape pair by :func:`~robot_collision.geometry.distance.shape_overlap`
(boolean GJK, exact closed forms). Threads split the batch; each writes its own row of counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from ..geometry.distance import bound_center, shape_overlap
from ..jitcall import nothrow as _nothrow
from ..model.kinematics import KinematicArrays, fk_into
from .scene import RobotArrays

__all__ = ["pair_collision_counts"]


@njit(cache=True, boundscheck=False)
def _link_poses(l, T, link_start, local, SP):  # type: ignore[no-untyped-def]
    """Full base-frame poses of link ``l``'s shapes into ``SP`` (S, 4, 4)."""
    for s in range(link_start[l], link_start[l + 1]):
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


@njit(cache=True, boundscheck=False)
def _links_collide(a, b, link_start, kind, params, SP, vstart, vcount, verts, buf):  # type: ignore[no-untyped-def]
    """Whether any shape of link ``a`` overlaps any shape of link ``b`` (poses in ``SP``)."""
    hit = False
    for s in range(link_start[a], link_start[a + 1]):
        for t in range(link_start[b], link_start[b + 1]):
            ax, ay, az = _nothrow(bound_center, kind[s], params[s], SP[s])
            bx, by, bz = _nothrow(bound_center, kind[t], params[t], SP[t])
            dx = ax - bx
            dy = ay - by
            dz = az - bz
            rr = params[s, 3] + params[t, 3]
            if dx * dx + dy * dy + dz * dz >= rr * rr:
                continue  # bounding spheres apart
            if shape_overlap(
                kind[s],
                params[s],
                SP[s],
                verts[vstart[s] : vstart[s] + vcount[s]],
                kind[t],
                params[t],
                SP[t],
                verts[vstart[t] : vstart[t] + vcount[t]],
                0.0,
                buf[0],
                buf[1],
                buf[2],
            ):
                hit = True
                break
        if hit:
            break
    return hit


@njit(cache=True, boundscheck=False)
def _count_range(Q, lo, hi, kin, rs, pa, pb, active, counts):  # type: ignore[no-untyped-def]
    """Add the collisions of configurations ``Q[lo:hi]`` to ``counts`` (K,)."""
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    bcen, brad = rs.bound_center, rs.bound_radius
    L = link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    cen = np.empty((L, 3))
    buf = np.empty((3, 3))
    for k in range(lo, hi):
        _nothrow(
            fk_into, Q[k], kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale,
            kin.offset, T,
        )
        for l in range(L):
            ready[l] = False
            for c in range(3):
                cen[l, c] = (
                    T[l, c, 0] * bcen[l, 0]
                    + T[l, c, 1] * bcen[l, 1]
                    + T[l, c, 2] * bcen[l, 2]
                    + T[l, c, 3]
                )
        for p in range(pa.shape[0]):
            if not active[p]:
                continue
            a = pa[p]
            b = pb[p]
            dx = cen[a, 0] - cen[b, 0]
            dy = cen[a, 1] - cen[b, 1]
            dz = cen[a, 2] - cen[b, 2]
            rr = brad[a] + brad[b]
            if dx * dx + dy * dy + dz * dz >= rr * rr:
                continue
            if not ready[a]:
                ready[a] = _nothrow(_link_poses, a, T, link_start, local, SP)
            if not ready[b]:
                ready[b] = _nothrow(_link_poses, b, T, link_start, local, SP)
            if _nothrow(
                _links_collide, a, b, link_start, kind, params, SP, vstart, vcount, verts, buf
            ):
                counts[p] += 1


@njit(cache=True, parallel=True, boundscheck=False)
def _count_batch(Q, kin, rs, pa, pb, active, out):  # type: ignore[no-untyped-def]
    """``out[c]`` (chunks, K) := collision counts of chunk ``c`` of ``Q`` (N, n)."""
    N = Q.shape[0]
    nchunks = out.shape[0]
    for c in prange(nchunks):
        _count_range(Q, c * N // nchunks, (c + 1) * N // nchunks, kin, rs, pa, pb, active, out[c])


def pair_collision_counts(
    Q: NDArray[np.float64],
    kin: KinematicArrays,
    rs: RobotArrays,
    pairs_a: NDArray[np.int64],
    pairs_b: NDArray[np.int64],
    active: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """For each link pair ``(pairs_a[p], pairs_b[p])`` (link indices, both with shapes), the
    number of configurations of ``Q`` (N, n) in which it collides (zero padding); pairs with
    ``active[p]`` False are skipped (count 0). Returns (K,) int64."""
    K = len(pairs_a)
    chunks = max(1, min(len(Q), 4 * 8))
    out = np.zeros((chunks, K), dtype=np.int64)
    if K and len(Q):
        _count_batch(
            np.ascontiguousarray(Q, dtype=np.float64),
            kin,
            rs,
            np.ascontiguousarray(pairs_a, dtype=np.int64),
            np.ascontiguousarray(pairs_b, dtype=np.int64),
            np.ascontiguousarray(active, dtype=np.bool_),
            out,
        )
    counts: NDArray[np.int64] = out.sum(axis=0)
    return counts
