"""Compiled forward kinematics and point Jacobians of a rigid-body tree.

The tree is stored as flat arrays (see :class:`KinematicArrays`), links in tree order with the
root (base) at index 0 and every parent before its children. Each link ``i > 0`` hangs from
``parent[i]`` through a joint whose frame is ``origin[i]`` (4, 4) in the parent link frame and
whose motion is a rotation (revolute/continuous) or translation (prismatic) about/along the unit
``axis[i]`` (joint frame) by ``scale[i] * q[qidx[i]] + offset[i]`` (``qidx = -1`` for fixed
joints; mimic joints point at the joint they follow). All poses are in the base frame, metres.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

__all__ = [
    "FIXED",
    "REVOLUTE",
    "PRISMATIC",
    "KinematicArrays",
    "fk_into",
    "forward_kinematics",
    "forward_kinematics_batch",
    "point_jacobian_into",
]

FIXED = 0
REVOLUTE = 1
PRISMATIC = 2


class KinematicArrays(NamedTuple):
    """Flat tree description for the compiled kernels (L links, root at 0)."""

    parent: NDArray[np.int64]  # (L,), -1 for the root
    jtype: NDArray[np.int64]  # (L,), FIXED / REVOLUTE / PRISMATIC
    origin: NDArray[np.float64]  # (L, 4, 4)
    axis: NDArray[np.float64]  # (L, 3)
    qidx: NDArray[np.int64]  # (L,), configuration index or -1
    scale: NDArray[np.float64]  # (L,)
    offset: NDArray[np.float64]  # (L,)


@njit(cache=True, fastmath=True, boundscheck=False)
def fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, out):  # type: ignore[no-untyped-def]
    """Write every link pose (L, 4, 4) for configuration ``q`` (n,) into ``out``."""
    L = parent.shape[0]
    for a in range(4):
        for b in range(4):
            out[0, a, b] = 1.0 if a == b else 0.0
    M = np.empty((4, 4))
    for i in range(1, L):
        p = parent[i]
        # M = origin[i] @ motion
        for a in range(4):
            for b in range(4):
                M[a, b] = origin[i, a, b]
        t = jtype[i]
        if t != FIXED:
            v = scale[i] * q[qidx[i]] + offset[i]
            ux, uy, uz = axis[i, 0], axis[i, 1], axis[i, 2]
            if t == REVOLUTE:
                c = np.cos(v)
                s = np.sin(v)
                C = 1.0 - c
                r00 = c + ux * ux * C
                r01 = ux * uy * C - uz * s
                r02 = ux * uz * C + uy * s
                r10 = uy * ux * C + uz * s
                r11 = c + uy * uy * C
                r12 = uy * uz * C - ux * s
                r20 = uz * ux * C - uy * s
                r21 = uz * uy * C + ux * s
                r22 = c + uz * uz * C
                for a in range(3):
                    o0 = origin[i, a, 0]
                    o1 = origin[i, a, 1]
                    o2 = origin[i, a, 2]
                    M[a, 0] = o0 * r00 + o1 * r10 + o2 * r20
                    M[a, 1] = o0 * r01 + o1 * r11 + o2 * r21
                    M[a, 2] = o0 * r02 + o1 * r12 + o2 * r22
            else:
                for a in range(3):
                    M[a, 3] += v * (origin[i, a, 0] * ux + origin[i, a, 1] * uy + origin[i, a, 2] * uz)
        for a in range(3):
            for b in range(4):
                acc = out[p, a, 0] * M[0, b] + out[p, a, 1] * M[1, b] + out[p, a, 2] * M[2, b]
                if b == 3:
                    acc += out[p, a, 3]
                out[i, a, b] = acc
        out[i, 3, 0] = 0.0
        out[i, 3, 1] = 0.0
        out[i, 3, 2] = 0.0
        out[i, 3, 3] = 1.0


@njit(cache=True)
def forward_kinematics(q, parent, jtype, origin, axis, qidx, scale, offset):  # type: ignore[no-untyped-def]
    out = np.empty((parent.shape[0], 4, 4))
    fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, out)
    return out


@njit(cache=True, parallel=True)
def forward_kinematics_batch(Q, parent, jtype, origin, axis, qidx, scale, offset):  # type: ignore[no-untyped-def]
    """Link poses for a batch ``Q`` (N, n) -> (N, L, 4, 4)."""
    N = Q.shape[0]
    out = np.empty((N, parent.shape[0], 4, 4))
    for k in prange(N):
        fk_into(Q[k], parent, jtype, origin, axis, qidx, scale, offset, out[k])
    return out


@njit(cache=True, fastmath=True, boundscheck=False)
def point_jacobian_into(T, link, point, parent, jtype, axis, qidx, scale, sign, out):  # type: ignore[no-untyped-def]
    """Add ``sign * d(point)/dq`` (3, n) into ``out`` for a point rigidly attached to ``link``.

    ``T`` (L, 4, 4) link poses from :func:`fk_into`; ``point`` (3,) in the base frame.
    """
    i = link
    while i > 0:
        t = jtype[i]
        if t != FIXED:
            col = qidx[i]
            k = sign * scale[i]
            # joint axis in the base frame (the joint motion leaves it unchanged)
            wx = T[i, 0, 0] * axis[i, 0] + T[i, 0, 1] * axis[i, 1] + T[i, 0, 2] * axis[i, 2]
            wy = T[i, 1, 0] * axis[i, 0] + T[i, 1, 1] * axis[i, 1] + T[i, 1, 2] * axis[i, 2]
            wz = T[i, 2, 0] * axis[i, 0] + T[i, 2, 1] * axis[i, 1] + T[i, 2, 2] * axis[i, 2]
            if t == REVOLUTE:
                rx = point[0] - T[i, 0, 3]
                ry = point[1] - T[i, 1, 3]
                rz = point[2] - T[i, 2, 3]
                out[0, col] += k * (wy * rz - wz * ry)
                out[1, col] += k * (wz * rx - wx * rz)
                out[2, col] += k * (wx * ry - wy * rx)
            else:
                out[0, col] += k * wx
                out[1, col] += k * wy
                out[2, col] += k * wz
        i = parent[i]
