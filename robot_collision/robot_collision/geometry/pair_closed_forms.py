"""Closed-form signed distances of sphere, capsule, box and sphere-cylinder pairs, and the small
point / segment / box kernels (compiled). Conventions (units m, frames, witness points,
normals, the 10-tuple results) as in :mod:`robot_collision.geometry.distance`, which
dispatches to them."""

from __future__ import annotations

import math

from numba import njit

from ..jitcall import nothrow as _nothrow

__all__ = ["point_box", "point_segment", "segment_segment"]

_COINCIDENT = 1e-12
_PARALLEL = 1e-16


# --------------------------------------------------------------------------------------------
# Calling convention: calls made from a function holding arrays go through ``_nothrow``
# (see :mod:`robot_collision.jitcall` for why).
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Scalar geometry (closed forms). Results are 10-tuples
# (d, wax, way, waz, wbx, wby, wbz, nx, ny, nz).
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _clamp01(x):  # type: ignore[no-untyped-def]
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@njit(cache=True)
def _any_perpendicular(ux, uy, uz):  # type: ignore[no-untyped-def]
    """Unit vector perpendicular to the non-zero vector ``u``."""
    ax = abs(ux)
    ay = abs(uy)
    az = abs(uz)
    # u crossed with the coordinate axis least aligned with it
    if ax <= ay and ax <= az:
        px, py, pz = 0.0, uz, -uy
    elif ay <= az:
        px, py, pz = -uz, 0.0, ux
    else:
        px, py, pz = uy, -ux, 0.0
    s = math.sqrt(px * px + py * py + pz * pz)
    return px / s, py / s, pz / s


@njit(cache=True)
def _fallback_normal(ux, uy, uz, vx, vy, vz, dx, dy, dz):  # type: ignore[no-untyped-def]
    """Normal for coincident cores: perpendicular to both segment directions ``u`` (A) and
    ``v`` (B) if they are not parallel, else to the non-zero one, else ``+z``; turned to agree
    with the centre offset ``d`` (A to B) unless perpendicular to it."""
    cx = uy * vz - uz * vy
    cy = uz * vx - ux * vz
    cz = ux * vy - uy * vx
    c2 = cx * cx + cy * cy + cz * cz
    u2 = ux * ux + uy * uy + uz * uz
    v2 = vx * vx + vy * vy + vz * vz
    if c2 > 1e-24 * u2 * v2 and c2 > 0.0:
        s = math.sqrt(c2)
        nx, ny, nz = cx / s, cy / s, cz / s
    elif u2 > 0.0:
        nx, ny, nz = _any_perpendicular(ux, uy, uz)
    elif v2 > 0.0:
        nx, ny, nz = _any_perpendicular(vx, vy, vz)
    else:
        nx, ny, nz = 0.0, 0.0, 1.0
    if nx * dx + ny * dy + nz * dz < 0.0:
        return -nx, -ny, -nz
    return nx, ny, nz


@njit(cache=True)
def _seg_seg(  # type: ignore[no-untyped-def]
    p0x, p0y, p0z, p1x, p1y, p1z, q0x, q0y, q0z, q1x, q1y, q1z
):
    """Parameters ``(s, t)`` in [0, 1] of the closest points ``p0 + s (p1 - p0)`` and
    ``q0 + t (q1 - q0)`` of two segments (either may have zero length)."""
    d1x = p1x - p0x
    d1y = p1y - p0y
    d1z = p1z - p0z
    d2x = q1x - q0x
    d2y = q1y - q0y
    d2z = q1z - q0z
    rx = p0x - q0x
    ry = p0y - q0y
    rz = p0z - q0z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= 0.0 and e <= 0.0:
        return 0.0, 0.0
    if a <= 0.0:
        return 0.0, _clamp01(f / e)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= 0.0:
        return _clamp01(-c / a), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    # m = d1 x d2: |m|^2 = a e - b^2 and b f - c e = m . (d2 x r), both free of cancellation
    mx = d1y * d2z - d1z * d2y
    my = d1z * d2x - d1x * d2z
    mz = d1x * d2y - d1y * d2x
    m2 = mx * mx + my * my + mz * mz
    if m2 > _PARALLEL * a * e:
        kx = d2y * rz - d2z * ry
        ky = d2z * rx - d2x * rz
        kz = d2x * ry - d2y * rx
        s = _clamp01((mx * kx + my * ky + mz * kz) / m2)
    else:
        s = 0.0  # parallel: any s is optimal before the clamping below
    t = (b * s + f) / e
    if t < 0.0:
        return _clamp01(-c / a), 0.0
    if t > 1.0:
        return _clamp01((b - c) / a), 1.0
    return s, t


@njit(cache=True)
def _point_box_local(px, py, pz, hx, hy, hz):  # type: ignore[no-untyped-def]
    """Point ``p`` against the box ``[-h, h]`` (box frame): signed distance (negative inside),
    closest surface point ``q`` and the box's outward unit normal at ``q``."""
    qx = min(max(px, -hx), hx)
    qy = min(max(py, -hy), hy)
    qz = min(max(pz, -hz), hz)
    dx = px - qx
    dy = py - qy
    dz = pz - qz
    d2 = dx * dx + dy * dy + dz * dz
    if d2 > _COINCIDENT * _COINCIDENT:
        d = math.sqrt(d2)
        return d, qx, qy, qz, dx / d, dy / d, dz / d
    # inside or on the surface: leave through the nearest face
    ex = hx - abs(px)
    ey = hy - abs(py)
    ez = hz - abs(pz)
    if ex <= ey and ex <= ez:
        s = 1.0 if px >= 0.0 else -1.0
        return -ex, s * hx, py, pz, s, 0.0, 0.0
    if ey <= ez:
        s = 1.0 if py >= 0.0 else -1.0
        return -ey, px, s * hy, pz, 0.0, s, 0.0
    s = 1.0 if pz >= 0.0 else -1.0
    return -ez, px, py, s * hz, 0.0, 0.0, s


@njit(cache=True)
def _point_cylinder_local(px, py, pz, rad, h):  # type: ignore[no-untyped-def]
    """Point ``p`` against the solid cylinder of radius ``rad`` about z, ``|z| <= h`` (cylinder
    frame): signed distance (negative inside), closest surface point ``q`` and the cylinder's
    outward unit normal at ``q``."""
    rho = math.sqrt(px * px + py * py)
    k = rad / rho if rho > rad else 1.0
    qx = px * k
    qy = py * k
    qz = min(max(pz, -h), h)
    dx = px - qx
    dy = py - qy
    dz = pz - qz
    d2 = dx * dx + dy * dy + dz * dz
    if d2 > _COINCIDENT * _COINCIDENT:
        d = math.sqrt(d2)
        return d, qx, qy, qz, dx / d, dy / d, dz / d
    # inside or on the surface: leave through the side or the nearer cap, whichever is closer
    es = rad - rho
    ec = h - abs(pz)
    if es <= ec:
        ux, uy = (px / rho, py / rho) if rho > _COINCIDENT else (1.0, 0.0)
        return -es, rad * ux, rad * uy, pz, ux, uy, 0.0
    s = 1.0 if pz >= 0.0 else -1.0
    return -ec, px, py, s * h, 0.0, 0.0, s


@njit(cache=True)
def _round_pair(  # type: ignore[no-untyped-def]
    ax, ay, az, bx, by, bz, ra, rb, ux, uy, uz, vx, vy, vz, cx, cy, cz
):
    """Result for cores with closest points ``a`` (on A) and ``b`` (on B) inflated by ``ra`` /
    ``rb``. ``u`` / ``v``: segment directions (zero for points) and ``c``: centre offset, used
    for the normal when the cores meet."""
    dx = bx - ax
    dy = by - ay
    dz = bz - az
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dist > _COINCIDENT:
        nx = dx / dist
        ny = dy / dist
        nz = dz / dist
    else:
        nx, ny, nz = _fallback_normal(ux, uy, uz, vx, vy, vz, cx, cy, cz)
        dist = 0.0
    return (
        dist - ra - rb,
        ax + ra * nx, ay + ra * ny, az + ra * nz,
        bx - rb * nx, by - rb * ny, bz - rb * nz,
        nx, ny, nz,
    )


@njit(cache=True)
def _sphere_sphere(ax, ay, az, ra, bx, by, bz, rb):  # type: ignore[no-untyped-def]
    dx = bx - ax
    dy = by - ay
    dz = bz - az
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dist > _COINCIDENT:
        nx = dx / dist
        ny = dy / dist
        nz = dz / dist
    else:
        nx, ny, nz = 0.0, 0.0, 1.0
        dist = 0.0
    return (
        dist - ra - rb,
        ax + ra * nx, ay + ra * ny, az + ra * nz,
        bx - rb * nx, by - rb * ny, bz - rb * nz,
        nx, ny, nz,
    )


@njit(cache=True)
def _sphere_capsule(cx, cy, cz, ra, ox, oy, oz, ux, uy, uz, rb):  # type: ignore[no-untyped-def]
    """Sphere (centre ``c``) against capsule with segment ``o - u .. o + u``."""
    u2 = ux * ux + uy * uy + uz * uz
    t = 0.0
    if u2 > 0.0:
        t = ((cx - ox) * ux + (cy - oy) * uy + (cz - oz) * uz) / u2
        t = min(max(t, -1.0), 1.0)
    return _round_pair(
        cx, cy, cz, ox + t * ux, oy + t * uy, oz + t * uz, ra, rb,
        0.0, 0.0, 0.0, ux, uy, uz, ox - cx, oy - cy, oz - cz,
    )


@njit(cache=True)
def _capsule_capsule(  # type: ignore[no-untyped-def]
    oax, oay, oaz, ux, uy, uz, ra, obx, oby, obz, vx, vy, vz, rb
):
    """Capsules with segments ``oa - u .. oa + u`` and ``ob - v .. ob + v``."""
    s, t = _seg_seg(
        oax - ux, oay - uy, oaz - uz, oax + ux, oay + uy, oaz + uz,
        obx - vx, oby - vy, obz - vz, obx + vx, oby + vy, obz + vz,
    )
    s = 2.0 * s - 1.0
    t = 2.0 * t - 1.0
    return _round_pair(
        oax + s * ux, oay + s * uy, oaz + s * uz, obx + t * vx, oby + t * vy, obz + t * vz,
        ra, rb, ux, uy, uz, vx, vy, vz, obx - oax, oby - oay, obz - oaz,
    )


@njit(cache=True, inline="always")
def _sphere_posed(  # type: ignore[no-untyped-def]
    cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz, d, qx, qy, qz, mx,
    my, mz,
):
    """The 10-tuple of a sphere (centre ``c``, radius ``r``) against a convex solid posed by
    rotation ``R`` (row-major ``rij``) and translation ``t``, from the point query of the
    centre in the solid's frame: signed distance ``d``, closest surface point ``q`` and the
    solid's outward unit normal ``m`` there. The result is ``d - r``, exact inside and out."""
    # normal from the sphere towards the solid = minus the solid's outward normal
    nx = -(r00 * mx + r01 * my + r02 * mz)
    ny = -(r10 * mx + r11 * my + r12 * mz)
    nz = -(r20 * mx + r21 * my + r22 * mz)
    return (
        d - r,
        cx + r * nx, cy + r * ny, cz + r * nz,
        r00 * qx + r01 * qy + r02 * qz + tx,
        r10 * qx + r11 * qy + r12 * qz + ty,
        r20 * qx + r21 * qy + r22 * qz + tz,
        nx, ny, nz,
    )


@njit(cache=True, inline="always")
def _local(cx, cy, cz, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz):  # type: ignore[no-untyped-def]
    """Point ``c`` in the frame posed by rotation ``R`` (row-major ``rij``) and ``t``."""
    px = cx - tx
    py = cy - ty
    pz = cz - tz
    return (
        r00 * px + r10 * py + r20 * pz,
        r01 * px + r11 * py + r21 * pz,
        r02 * px + r12 * py + r22 * pz,
    )


@njit(cache=True)
def _sphere_box(  # type: ignore[no-untyped-def]
    cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz, hx, hy, hz
):
    """Sphere (centre ``c``, radius ``r``) against the box ``[-h, h]`` posed by rotation ``R``
    (row-major ``rij``) and translation ``t``."""
    lx, ly, lz = _local(cx, cy, cz, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz)
    d, qx, qy, qz, mx, my, mz = _point_box_local(lx, ly, lz, hx, hy, hz)
    return _sphere_posed(cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty,
                         tz, d, qx, qy, qz, mx, my, mz)


@njit(cache=True)
def _sphere_cylinder(  # type: ignore[no-untyped-def]
    cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz, rad, h
):
    """Sphere (centre ``c``, radius ``r``) against the solid cylinder of radius ``rad`` and
    half length ``h`` about its z axis, posed by rotation ``R`` (row-major ``rij``) and
    translation ``t``."""
    lx, ly, lz = _local(cx, cy, cz, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz)
    d, qx, qy, qz, mx, my, mz = _point_cylinder_local(lx, ly, lz, rad, h)
    return _sphere_posed(cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty,
                         tz, d, qx, qy, qz, mx, my, mz)


# --------------------------------------------------------------------------------------------
# Public small kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def segment_segment(p0, p1, q0, q1, out_p, out_q):  # type: ignore[no-untyped-def]
    """Closest points between segments ``[p0, p1]`` and ``[q0, q1]`` (each ``(3,)``, metres).

    Writes the closest points into ``out_p`` (on the first) and ``out_q`` (on the second) and
    returns their distance. Robust for parallel and zero-length segments.
    """
    s, t = _nothrow(
        _seg_seg,
        p0[0], p0[1], p0[2], p1[0], p1[1], p1[2], q0[0], q0[1], q0[2], q1[0], q1[1], q1[2],
    )
    for i in range(3):
        out_p[i] = p0[i] + s * (p1[i] - p0[i])
        out_q[i] = q0[i] + t * (q1[i] - q0[i])
    dx = out_q[0] - out_p[0]
    dy = out_q[1] - out_p[1]
    dz = out_q[2] - out_p[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@njit(cache=True, inline="always")
def point_segment(p, q0, q1, out):  # type: ignore[no-untyped-def]
    """Closest point on segment ``[q0, q1]`` to ``p`` (all ``(3,)``): written to ``out``;
    returns the distance."""
    ux = q1[0] - q0[0]
    uy = q1[1] - q0[1]
    uz = q1[2] - q0[2]
    u2 = ux * ux + uy * uy + uz * uz
    t = 0.0
    if u2 > 0.0:
        t = ((p[0] - q0[0]) * ux + (p[1] - q0[1]) * uy + (p[2] - q0[2]) * uz) / u2
        t = min(max(t, 0.0), 1.0)
    out[0] = q0[0] + t * ux
    out[1] = q0[1] + t * uy
    out[2] = q0[2] + t * uz
    dx = p[0] - out[0]
    dy = p[1] - out[1]
    dz = p[2] - out[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@njit(cache=True, inline="always")
def point_box(p, T, half, out):  # type: ignore[no-untyped-def]
    """Signed distance from point ``p`` ``(3,)`` to the surface of the box with half extents
    ``half[:3]`` posed by ``T`` ``(4, 4)``: positive outside, negative inside (distance to the
    nearest face). The closest point on the box surface is written to ``out`` ``(3,)``."""
    rx = p[0] - T[0, 3]
    ry = p[1] - T[1, 3]
    rz = p[2] - T[2, 3]
    lx = T[0, 0] * rx + T[1, 0] * ry + T[2, 0] * rz
    ly = T[0, 1] * rx + T[1, 1] * ry + T[2, 1] * rz
    lz = T[0, 2] * rx + T[1, 2] * ry + T[2, 2] * rz
    d, qx, qy, qz, _, _, _ = _nothrow(_point_box_local, lx, ly, lz, half[0], half[1], half[2])
    for i in range(3):
        out[i] = T[i, 0] * qx + T[i, 1] * qy + T[i, 2] * qz + T[i, 3]
    return d


