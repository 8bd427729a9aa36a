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
    "sincos",
    "sincos_kernels",
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


@njit(inline="always")
def sincos_kernels(r):  # type: ignore[no-untyped-def]
    """fdlibm's __kernel_sin / __kernel_cos minimax polynomials: ``(sin r, cos r)`` for
    ``r`` in [-pi/4, pi/4], a float or a lane vector (``robot_collision.simd``; the blocked
    kernels' lane-wise sine and cosine use them too). Inlined with the caller's flags."""
    z = r * r
    ps = r + r * z * (
        -1.66666666666666324348e-01
        + z * (8.33333333332248946124e-03
               + z * (-1.98412698298579493134e-04
                      + z * (2.75573137070700676789e-06
                             + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10))))
    )
    pc = 1.0 - 0.5 * z + z * z * (
        4.16666666666666019037e-02
        + z * (-1.38888888888741095749e-03
               + z * (2.48015872894767294178e-05
                      + z * (-2.75573143513906633035e-07
                             + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11))))
    )
    return ps, pc


@njit(cache=True, fastmath={"contract", "nsz", "arcp", "afn"}, error_model="numpy")
def sincos(x):  # type: ignore[no-untyped-def]
    """``(sin x, cos x)`` of a scalar angle (rad), within 4.5e-16 of libm's for |x| <= 1e4
    (libm's own beyond, and for non-finite x). Written here because libm's sin and cos cost
    ~23 ns per angle, a third of the Panda's forward kinematics; this costs a few ns.
    Argument reduction by pi/2 in three parts (Cody-Waite), then :func:`sincos_kernels` on
    [-pi/4, pi/4] (as the blocked kernels' lane-wise ``_sincos``). No ``reassoc`` flag: it
    would merge the reduction's parts."""
    if not abs(x) <= 1e4:
        return np.sin(x), np.cos(x)
    n = np.floor(x * 0.6366197723675814 + 0.5)
    r = x - n * 1.5707963267341256
    r = r - n * 6.077100506506192e-11
    r = r - n * 2.0222662487959506e-21
    ps, pc = sincos_kernels(r)
    quad = int(n) & 3
    if quad & 1:
        s, c = pc, ps
    else:
        s, c = ps, pc
    if quad >= 2:
        s = -s
    if quad == 1 or quad == 2:
        c = -c
    return s, c


@njit(cache=True, fastmath=True, boundscheck=False)
def fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, out):  # type: ignore[no-untyped-def]
    """Write every link pose (L, 4, 4) for configuration ``q`` (n,) into ``out``.

    out[i] = out[parent[i]] @ origin[i] @ motion_i, computed with scalars (no allocation).
    """
    L = parent.shape[0]
    for a in range(4):
        for b in range(4):
            out[0, a, b] = 1.0 if a == b else 0.0
    for i in range(1, L):
        p = parent[i]
        # A = out[p] @ origin[i]  (rigid: only the top 3 rows are computed)
        a00 = (
            out[p, 0, 0] * origin[i, 0, 0]
            + out[p, 0, 1] * origin[i, 1, 0]
            + out[p, 0, 2] * origin[i, 2, 0]
        )
        a01 = (
            out[p, 0, 0] * origin[i, 0, 1]
            + out[p, 0, 1] * origin[i, 1, 1]
            + out[p, 0, 2] * origin[i, 2, 1]
        )
        a02 = (
            out[p, 0, 0] * origin[i, 0, 2]
            + out[p, 0, 1] * origin[i, 1, 2]
            + out[p, 0, 2] * origin[i, 2, 2]
        )
        a03 = (
            out[p, 0, 0] * origin[i, 0, 3]
            + out[p, 0, 1] * origin[i, 1, 3]
            + out[p, 0, 2] * origin[i, 2, 3]
            + out[p, 0, 3]
        )
        a10 = (
            out[p, 1, 0] * origin[i, 0, 0]
            + out[p, 1, 1] * origin[i, 1, 0]
            + out[p, 1, 2] * origin[i, 2, 0]
        )
        a11 = (
            out[p, 1, 0] * origin[i, 0, 1]
            + out[p, 1, 1] * origin[i, 1, 1]
            + out[p, 1, 2] * origin[i, 2, 1]
        )
        a12 = (
            out[p, 1, 0] * origin[i, 0, 2]
            + out[p, 1, 1] * origin[i, 1, 2]
            + out[p, 1, 2] * origin[i, 2, 2]
        )
        a13 = (
            out[p, 1, 0] * origin[i, 0, 3]
            + out[p, 1, 1] * origin[i, 1, 3]
            + out[p, 1, 2] * origin[i, 2, 3]
            + out[p, 1, 3]
        )
        a20 = (
            out[p, 2, 0] * origin[i, 0, 0]
            + out[p, 2, 1] * origin[i, 1, 0]
            + out[p, 2, 2] * origin[i, 2, 0]
        )
        a21 = (
            out[p, 2, 0] * origin[i, 0, 1]
            + out[p, 2, 1] * origin[i, 1, 1]
            + out[p, 2, 2] * origin[i, 2, 1]
        )
        a22 = (
            out[p, 2, 0] * origin[i, 0, 2]
            + out[p, 2, 1] * origin[i, 1, 2]
            + out[p, 2, 2] * origin[i, 2, 2]
        )
        a23 = (
            out[p, 2, 0] * origin[i, 0, 3]
            + out[p, 2, 1] * origin[i, 1, 3]
            + out[p, 2, 2] * origin[i, 2, 3]
            + out[p, 2, 3]
        )
        t = jtype[i]
        ux, uy, uz = axis[i, 0], axis[i, 1], axis[i, 2]
        s = 0.0
        c = 1.0
        if t == REVOLUTE:
            s, c = sincos(scale[i] * q[qidx[i]] + offset[i])
        # the usual URDF axis, +-z: A @ Rz(+-v) mixes two columns (12 products instead of 36)
        if t == REVOLUTE and ux == 0.0 and uy == 0.0 and (uz == 1.0 or uz == -1.0):
            s *= uz
            out[i, 0, 0] = a00 * c + a01 * s
            out[i, 0, 1] = a01 * c - a00 * s
            out[i, 0, 2] = a02
            out[i, 1, 0] = a10 * c + a11 * s
            out[i, 1, 1] = a11 * c - a10 * s
            out[i, 1, 2] = a12
            out[i, 2, 0] = a20 * c + a21 * s
            out[i, 2, 1] = a21 * c - a20 * s
            out[i, 2, 2] = a22
        elif t == REVOLUTE:
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
            out[i, 0, 0] = a00 * r00 + a01 * r10 + a02 * r20
            out[i, 0, 1] = a00 * r01 + a01 * r11 + a02 * r21
            out[i, 0, 2] = a00 * r02 + a01 * r12 + a02 * r22
            out[i, 1, 0] = a10 * r00 + a11 * r10 + a12 * r20
            out[i, 1, 1] = a10 * r01 + a11 * r11 + a12 * r21
            out[i, 1, 2] = a10 * r02 + a11 * r12 + a12 * r22
            out[i, 2, 0] = a20 * r00 + a21 * r10 + a22 * r20
            out[i, 2, 1] = a20 * r01 + a21 * r11 + a22 * r21
            out[i, 2, 2] = a20 * r02 + a21 * r12 + a22 * r22
        else:
            if t == PRISMATIC:
                v = scale[i] * q[qidx[i]] + offset[i]
                a03 += v * (a00 * ux + a01 * uy + a02 * uz)
                a13 += v * (a10 * ux + a11 * uy + a12 * uz)
                a23 += v * (a20 * ux + a21 * uy + a22 * uz)
            out[i, 0, 0] = a00
            out[i, 0, 1] = a01
            out[i, 0, 2] = a02
            out[i, 1, 0] = a10
            out[i, 1, 1] = a11
            out[i, 1, 2] = a12
            out[i, 2, 0] = a20
            out[i, 2, 1] = a21
            out[i, 2, 2] = a22
        out[i, 0, 3] = a03
        out[i, 1, 3] = a13
        out[i, 2, 3] = a23
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
