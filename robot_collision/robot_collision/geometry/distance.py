"""Signed distance between two posed convex collision shapes (numba kernels).

Units, frames, arrays
---------------------
All lengths are metres. Each shape is given in the kernel encoding of :mod:`.shapes`:

- ``kind``: ``int`` (``SPHERE=0``, ``CAPSULE=1``, ``BOX=2``, ``CYLINDER=3``, ``MESH=4``);
- ``params``: ``(4,)`` float64 (sphere ``[r]``, capsule/cylinder ``[r, half_length]``, box
  ``[hx, hy, hz]``, mesh ``[cx, cy, cz]`` its bounding-box centre; a capsule's segment and a
  cylinder's axis run along local z; entry 3: bounding radius, see :func:`bound_center`);
- ``T``: ``(4, 4)`` float64 pose of the shape's local frame in a common frame (homogeneous,
  orthonormal right-handed rotation);
- ``verts``: ``(k, 3)`` float64 hull vertices in the local frame (``(0, 3)`` for analytic shapes),
  or a support block (:mod:`.hull`).

Results are expressed in the common frame: ``wa`` / ``wb`` are ``(3,)`` witness points on the
surfaces of A / B and ``n`` is the ``(3,)`` unit normal pointing from A towards B. The signed
distance ``d`` satisfies ``d = dot(n, wb - wa)`` and ``|wa - wb| = |d|``; ``n`` is the gradient of
``d`` with respect to a rigid translation of B (``d(t) ~ d + dot(n, t)``).

- ``d > 0``: separation distance; ``wa`` / ``wb`` are the closest points.
- ``d < 0``: penetration depth as the minimum translation distance; moving B by ``-d * n``
  separates the shapes. ``wa`` is the deepest point of A inside B (on A's surface), ``wb`` the
  matching point on B's surface.
- ``d = 0``: touching. Where the normal is undefined (e.g. concentric spheres) a consistent unit
  vector is chosen (perpendicular to the segments for capsules, else ``+z``); never NaN.

Algorithms
----------
Closed forms (no allocation): sphere-sphere, sphere-capsule, capsule-capsule (segment-segment
closest points) and sphere-box (point against oriented box; inside a box the penetration goes
to the nearest face). Every other pair uses GJK on the shapes' support functions with the
"core + radius" trick (sphere = point core inflated by ``r``, capsule = segment core inflated by
``r``; ``d = d(cores) - ra - rb``, exact also in penetration). When the cores touch or overlap
(core distance below ``CONTACT_TOL``), EPA (expanding polytope algorithm) gives the penetration
depth, normal and witness points. Cylinder support is exact (cap disc and rim); mesh support is
the maximum over the hull vertices: a scan for small hulls, else a climb along the hull's edges
from the previous answer of the same GJK/EPA call (see :mod:`.hull`). If EPA runs out of
vertices before converging -- a curved closest set, e.g. a sphere on the axis of a cylinder,
equidistant from its whole side -- the depth is finished by minimising ``h_A(u) + h_B(-u)``
over the normal ``u`` directly.

Cost (one call from a numba loop, 2.x GHz x86, random poses): sphere-sphere ~6 ns, sphere-box
and sphere-capsule ~15 ns, capsule-capsule ~25 ns; GJK box-box / capsule-box / box-mesh
~0.3 us separated and ~1-2 us penetrating (EPA); pairs with a cylinder ~1 us separated and
~5-7 us penetrating. ``shape_distance`` is inlined into jitted callers (see "Calling
convention" below for why).

Tolerances (measured against the oracles of ``test/test_distance.py``)
-----------------------------------------------------------------------
- Closed forms: round-off (~1e-15 m at metre scale). Nearly parallel segments
  (``sin(angle) < 1e-8``) use the parallel rule: error below ``1e-8 * length``.
- GJK (separated): stops when the duality gap ``|v| - dot(v, w) / |v|`` is below
  ``max(GJK_ABS_TOL, GJK_REL_TOL * |v|)`` (or when round-off stops all progress). Distances,
  normals (``h_A(n) + h_B(-n) = -d``) and witnesses are exact to ~1e-15 m on polytopes and to
  ~3e-10 m with cylinders.
- EPA (penetration): stops when the support point lies within
  ``max(EPA_ABS_TOL, EPA_REL_TOL * depth)`` of the closest face: ~1e-15 m on polytopes, ~3e-10 m
  with cylinders. In the fallback above (degenerate, symmetric configurations with a cylinder)
  the depth is within ~1e-6 m and the witness points within ~1e-6 m of the surfaces.
- Near contact the normal is ill-conditioned (the distance hardly depends on it) while ``d``
  stays accurate: with a cylinder, GJK round-off leaves normal errors up to ~6e-6 rad at
  ``d = 1e-3`` m, ~4e-3 rad at 1e-6 m and ~1e-2 rad at 1e-9 m; polytope vertex/edge contacts
  carry ~``1e-16 m / d`` rad (face contacts are exact).
- Iterations are capped (``GJK_MAX_ITERATIONS``; EPA vertex budget ``EPA_MAX_VERTICES``, larger
  for meshes) so every call terminates; no input produces NaN.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..jitcall import nothrow as _nothrow
from .hull import START_CELLS, START_GRID, SUPPORT_BLOCK_MARK
from .shapes import BOX, CAPSULE, CYLINDER, MESH, SPHERE, Shape

__all__ = [
    "CONTACT_TOL",
    "EPA_ABS_TOL",
    "EPA_MAX_MESH_VERTICES",
    "EPA_MAX_VERTICES",
    "EPA_REL_TOL",
    "GJK_ABS_TOL",
    "GJK_MAX_ITERATIONS",
    "GJK_REL_TOL",
    "distance",
    "point_box",
    "point_segment",
    "segment_segment",
    "shape_distance",
    "shape_overlap",
    "bound_center",
    "mesh_vertex_count",
]

GJK_MAX_ITERATIONS = 128
"""Maximum GJK iterations (measured: at most 7 for polytopes, 39 with a cylinder)."""
GJK_ABS_TOL = 1e-12
"""Absolute GJK duality-gap tolerance (m)."""
GJK_REL_TOL = 1e-10
"""GJK duality-gap tolerance relative to the current distance."""
CONTACT_TOL = 1e-10
"""Core distance (m) below which the cores count as touching/overlapping and EPA runs."""
EPA_MAX_VERTICES = 128
"""Vertex budget of the EPA polytope; with meshes it grows to ``2 * (k_a + k_b) + 32`` (at most
``EPA_MAX_MESH_VERTICES``) so that finely tessellated hulls still converge."""
EPA_MAX_MESH_VERTICES = 1024
"""Upper limit of the EPA vertex budget for meshes."""
EPA_ABS_TOL = 1e-11
"""Absolute EPA convergence tolerance (m)."""
EPA_REL_TOL = 1e-9
"""EPA convergence tolerance relative to the penetration depth."""

_EPA_VISIBLE_EPS = 1e-13
_EXPAND_EPS = 1e-9
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


@njit(cache=True)
def _sphere_box(  # type: ignore[no-untyped-def]
    cx, cy, cz, r, r00, r01, r02, r10, r11, r12, r20, r21, r22, tx, ty, tz, hx, hy, hz
):
    """Sphere (centre ``c``, radius ``r``) against the box ``[-h, h]`` posed by rotation ``R``
    (row-major ``rij``) and translation ``t``."""
    px = cx - tx
    py = cy - ty
    pz = cz - tz
    lx = r00 * px + r10 * py + r20 * pz
    ly = r01 * px + r11 * py + r21 * pz
    lz = r02 * px + r12 * py + r22 * pz
    d, qx, qy, qz, mx, my, mz = _point_box_local(lx, ly, lz, hx, hy, hz)
    # normal from the sphere towards the box = minus the box's outward normal
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


# --------------------------------------------------------------------------------------------
# Support functions of the cores
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _flat(V, f):  # type: ignore[no-untyped-def]
    """Entry ``f`` of the (R, 3) array ``V`` read as a flat array (support blocks)."""
    r = f // 3
    return V[r, f - 3 * r]


@njit(cache=True)
def mesh_vertex_count(V):  # type: ignore[no-untyped-def]
    """Number of hull vertices in a mesh's kernel vertex data ``V``: its rows, or the ``k`` of
    a support block (whose first ``k`` rows are the vertices; see :mod:`.hull`)."""
    m = V.shape[0]
    if m > 0 and V[m - 1, 0] == SUPPORT_BLOCK_MARK:
        return int(V[m - 1, 1])
    return m


@njit(cache=True)
def _mesh_support(V, lx, ly, lz, hint):  # type: ignore[no-untyped-def]
    """Hull vertex of ``V`` farthest along ``l`` (local frame) and its index.

    ``V`` is a plain ``(k, 3)`` vertex array (scanned) or a support block (see
    :mod:`.hull`), climbed along hull edges from the vertex stored for the cube-map cell of
    ``l`` or from vertex ``hint`` (the previous answer; -1: none) if that one is better: on a
    convex polytope a vertex with no better neighbour is a global maximum."""
    m = V.shape[0]
    if m == 0:
        return 0.0, 0.0, 0.0, -1
    if V[m - 1, 0] == SUPPORT_BLOCK_MARK:
        k = int(V[m - 1, 1])
        base = 3 * k
        # start: the vertex stored for the direction's cube-map cell (see hull.start_directions)
        ax = abs(lx)
        ay = abs(ly)
        az = abs(lz)
        if ax >= ay and ax >= az:
            f, u, v, den = (0 if lx >= 0.0 else 1), ly, lz, ax
        elif ay >= az:
            f, u, v, den = (2 if ly >= 0.0 else 3), lx, lz, ay
        else:
            f, u, v, den = (4 if lz >= 0.0 else 5), lx, ly, az
        if den > 0.0:
            i = min(max(int((u / den + 1.0) * (0.5 * START_GRID)), 0), START_GRID - 1)
            j = min(max(int((v / den + 1.0) * (0.5 * START_GRID)), 0), START_GRID - 1)
        else:
            i = 0
            j = 0
        bi = int(_flat(V, base + (f * START_GRID + i) * START_GRID + j))
        best = V[bi, 0] * lx + V[bi, 1] * ly + V[bi, 2] * lz
        if 0 <= hint < k:  # the previous answer, when it is better
            dh = V[hint, 0] * lx + V[hint, 1] * ly + V[hint, 2] * lz
            if dh > best:
                best = dh
                bi = hint
        for _ in range(k):  # each step strictly improves: at most k steps
            nb = bi
            f1 = int(_flat(V, base + START_CELLS + 1 + bi))
            for f in range(int(_flat(V, base + START_CELLS + bi)), f1):
                j = int(_flat(V, f))
                dd = V[j, 0] * lx + V[j, 1] * ly + V[j, 2] * lz
                if dd > best:
                    best = dd
                    nb = j
            if nb == bi:
                break
            bi = nb
        return V[bi, 0], V[bi, 1], V[bi, 2], bi
    best = V[0, 0] * lx + V[0, 1] * ly + V[0, 2] * lz
    bi = 0
    for i in range(1, m):
        dd = V[i, 0] * lx + V[i, 1] * ly + V[i, 2] * lz
        if dd > best:
            best = dd
            bi = i
    return V[bi, 0], V[bi, 1], V[bi, 2], bi


@njit(cache=True)
def _support(kind, P, V, dx, dy, dz, hint):  # type: ignore[no-untyped-def]
    """Support point (common frame) in direction ``d`` of the core of a posed shape packed as
    ``P = (p0, p1, p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz)`` (params and
    the top three rows of its pose); ``V``: hull vertex data (meshes only). Returns the point
    and, for meshes, the vertex index (a ``hint`` for the next call in a nearby direction;
    -1 for other shapes)."""
    p0, p1, p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz = P
    lx = r00 * dx + r10 * dy + r20 * dz
    ly = r01 * dx + r11 * dy + r21 * dz
    lz = r02 * dx + r12 * dy + r22 * dz
    idx = -1
    if kind == MESH:
        sx, sy, sz, idx = _nothrow(_mesh_support, V, lx, ly, lz, hint)
    elif kind == BOX:
        sx = p0 if lx >= 0.0 else -p0
        sy = p1 if ly >= 0.0 else -p1
        sz = p2 if lz >= 0.0 else -p2
    elif kind == CAPSULE:
        sx, sy, sz = 0.0, 0.0, (p1 if lz >= 0.0 else -p1)
    elif kind == CYLINDER:
        sz = p1 if lz >= 0.0 else -p1
        s = math.sqrt(lx * lx + ly * ly)
        if s > 0.0:
            sx = p0 * lx / s
            sy = p0 * ly / s
        else:  # axial direction: centre of the cap
            sx, sy = 0.0, 0.0
    else:  # SPHERE
        sx, sy, sz = 0.0, 0.0, 0.0
    return (
        r00 * sx + r01 * sy + r02 * sz + tx,
        r10 * sx + r11 * sy + r12 * sz + ty,
        r20 * sx + r21 * sy + r22 * sz + tz,
        idx,
    )


# --------------------------------------------------------------------------------------------
# GJK
# --------------------------------------------------------------------------------------------
# Simplex scratch S (9, 10): rows 0-3 the simplex, rows 4-7 a backup; columns 0:3 Minkowski
# point w = a - b, 3:6 support point a of A, 6:9 support point b of B, 9 barycentric weight.
# Row 8: S[8, 0] / S[8, 1] the last mesh support vertex of A / B (-1: none), the starting point
# of the next support search (see _mesh_support).


@njit(cache=True)
def _seg_t(ax, ay, az, bx, by, bz):  # type: ignore[no-untyped-def]
    """Parameter of the point of segment [a, b] closest to the origin."""
    ex = bx - ax
    ey = by - ay
    ez = bz - az
    e2 = ex * ex + ey * ey + ez * ez
    if e2 <= 0.0:
        return 0.0
    return _clamp01(-(ax * ex + ay * ey + az * ez) / e2)


@njit(cache=True)
def _tri_lambdas(ax, ay, az, bx, by, bz, cx, cy, cz):  # type: ignore[no-untyped-def]
    """Barycentric weights of the point of triangle abc closest to the origin.

    The projection of the origin onto the plane is used when it falls inside (weights from
    sub-triangle areas); otherwise, and whenever an edge is at least as close, the best edge.
    Curved shapes make GJK build slivers with nearly coincident vertices: this formulation never
    returns a point farther than the best edge, so GJK keeps making progress on them."""
    t = _seg_t(ax, ay, az, bx, by, bz)
    px = ax + t * (bx - ax)
    py = ay + t * (by - ay)
    pz = az + t * (bz - az)
    best = px * px + py * py + pz * pz
    la, lb, lc = 1.0 - t, t, 0.0
    t = _seg_t(ax, ay, az, cx, cy, cz)
    px = ax + t * (cx - ax)
    py = ay + t * (cy - ay)
    pz = az + t * (cz - az)
    dd = px * px + py * py + pz * pz
    if dd < best:
        best = dd
        la, lb, lc = 1.0 - t, 0.0, t
    t = _seg_t(bx, by, bz, cx, cy, cz)
    px = bx + t * (cx - bx)
    py = by + t * (cy - by)
    pz = bz + t * (cz - bz)
    dd = px * px + py * py + pz * pz
    if dd < best:
        best = dd
        la, lb, lc = 0.0, 1.0 - t, t
    abx = bx - ax
    aby = by - ay
    abz = bz - az
    acx = cx - ax
    acy = cy - ay
    acz = cz - az
    nx = aby * acz - abz * acy
    ny = abz * acx - abx * acz
    nz = abx * acy - aby * acx
    n2 = nx * nx + ny * ny + nz * nz
    if n2 > 0.0:
        s = (nx * ax + ny * ay + nz * az) / n2
        px = s * nx
        py = s * ny
        pz = s * nz
        # twice the signed areas of the sub-triangles p-b-c, p-c-a, p-a-b along n
        ux = by - py
        uy = bz - pz
        ux0 = bx - px
        vx0 = cx - px
        vx = cy - py
        vy = cz - pz
        u = nx * (ux * vy - uy * vx) + ny * (uy * vx0 - ux0 * vy) + nz * (ux0 * vx - ux * vx0)
        wx0 = ax - px
        wx = ay - py
        wy = az - pz
        v = nx * (vx * wy - vy * wx) + ny * (vy * wx0 - vx0 * wy) + nz * (vx0 * wx - vx * wx0)
        w = nx * (wx * uy - wy * ux) + ny * (wy * ux0 - wx0 * uy) + nz * (wx0 * ux - wx * ux0)
        if u >= 0.0 and v >= 0.0 and w >= 0.0:
            dd = s * s * n2
            tot = u + v + w
            if dd < best and tot > 0.0:
                return u / tot, v / tot, w / tot
    return la, lb, lc


@njit(cache=True)
def _face_others(l):  # type: ignore[no-untyped-def]
    """The three tetrahedron vertex indices other than ``l``, increasing."""
    if l == 0:
        return 1, 2, 3
    if l == 1:
        return 0, 2, 3
    if l == 2:
        return 0, 1, 3
    return 0, 1, 2


@njit(cache=True)
def _tetra_lambdas(S):  # type: ignore[no-untyped-def]
    """Weights of the point of tetrahedron ``S[0:4]`` closest to the origin into ``S[:, 9]``.
    Returns True (weights untouched) when the origin is strictly inside.

    Every face is evaluated (not only those facing the origin): on the slivers that curved
    shapes produce, the side tests are unreliable, while the minimum over all faces is not."""
    e1x = S[1, 0] - S[0, 0]
    e1y = S[1, 1] - S[0, 1]
    e1z = S[1, 2] - S[0, 2]
    e2x = S[2, 0] - S[0, 0]
    e2y = S[2, 1] - S[0, 1]
    e2z = S[2, 2] - S[0, 2]
    e3x = S[3, 0] - S[0, 0]
    e3y = S[3, 1] - S[0, 1]
    e3z = S[3, 2] - S[0, 2]
    vol = e1x * (e2y * e3z - e2z * e3y) + e1y * (e2z * e3x - e2x * e3z) + e1z * (
        e2x * e3y - e2y * e3x
    )
    l1 = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
    l2 = math.sqrt(e2x * e2x + e2y * e2y + e2z * e2z)
    l3 = math.sqrt(e3x * e3x + e3y * e3y + e3z * e3z)
    # A flatter tetrahedron is never reported as containing the origin: the origin is then
    # within ~1e-10 * size of a face, i.e. the shapes touch and the distance goes below
    # CONTACT_TOL anyway.
    inside = abs(vol) > 1e-10 * l1 * l2 * l3
    best = np.inf
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    b3 = 0.0
    for l in range(4):
        i, j, k = _nothrow(_face_others, l)
        if inside:
            ux = S[j, 0] - S[i, 0]
            uy = S[j, 1] - S[i, 1]
            uz = S[j, 2] - S[i, 2]
            vx = S[k, 0] - S[i, 0]
            vy = S[k, 1] - S[i, 1]
            vz = S[k, 2] - S[i, 2]
            nx = uy * vz - uz * vy
            ny = uz * vx - ux * vz
            nz = ux * vy - uy * vx
            so = -(nx * S[i, 0] + ny * S[i, 1] + nz * S[i, 2])
            sl = nx * (S[l, 0] - S[i, 0]) + ny * (S[l, 1] - S[i, 1]) + nz * (S[l, 2] - S[i, 2])
            inside = so * sl > 0.0  # origin on the same side of the face as the 4th vertex
        li, lj, lk = _nothrow(
            _tri_lambdas,
            S[i, 0], S[i, 1], S[i, 2], S[j, 0], S[j, 1], S[j, 2], S[k, 0], S[k, 1], S[k, 2],
        )
        px = li * S[i, 0] + lj * S[j, 0] + lk * S[k, 0]
        py = li * S[i, 1] + lj * S[j, 1] + lk * S[k, 1]
        pz = li * S[i, 2] + lj * S[j, 2] + lk * S[k, 2]
        dd = px * px + py * py + pz * pz
        if dd < best:
            best = dd
            if l == 0:
                b0, b1, b2, b3 = 0.0, li, lj, lk
            elif l == 1:
                b0, b1, b2, b3 = li, 0.0, lj, lk
            elif l == 2:
                b0, b1, b2, b3 = li, lj, 0.0, lk
            else:
                b0, b1, b2, b3 = li, lj, lk, 0.0
    if inside:
        return True
    S[0, 9] = b0
    S[1, 9] = b1
    S[2, 9] = b2
    S[3, 9] = b3
    return False


@njit(cache=True)
def _compact(S, ns):  # type: ignore[no-untyped-def]
    """Drop simplex vertices of zero weight; returns the new size and the closest point."""
    m = 0
    for i in range(ns):
        if S[i, 9] > 0.0:
            if m != i:
                for c in range(10):
                    S[m, c] = S[i, c]
            m += 1
    if m == 0:
        S[0, 9] = 1.0
        m = 1
    vx = 0.0
    vy = 0.0
    vz = 0.0
    for i in range(m):
        lam = S[i, 9]
        vx += lam * S[i, 0]
        vy += lam * S[i, 1]
        vz += lam * S[i, 2]
    return m, vx, vy, vz


@njit(cache=True)
def _add_point(S, i, ka, PA, va, kb, PB, vb, dx, dy, dz, H):  # type: ignore[no-untyped-def]
    """Row ``i`` of ``S`` := support point of A - B in direction ``d`` (with its parts).
    ``H[8, 0:2]`` holds the support hints of A and B (the GJK scratch layout), updated."""
    ax, ay, az, ha = _nothrow(_support, ka, PA, va, dx, dy, dz, int(H[8, 0]))
    bx, by, bz, hb = _nothrow(_support, kb, PB, vb, -dx, -dy, -dz, int(H[8, 1]))
    H[8, 0] = ha
    H[8, 1] = hb
    S[i, 0] = ax - bx
    S[i, 1] = ay - by
    S[i, 2] = az - bz
    S[i, 3] = ax
    S[i, 4] = ay
    S[i, 5] = az
    S[i, 6] = bx
    S[i, 7] = by
    S[i, 8] = bz
    # keep va and vb alive up to here so that all three arrays are released in one block: the
    # refcount pruning then removes their increfs/decrefs (see "Calling convention")
    return va.shape[0] + vb.shape[0] + H.shape[0]


@njit(cache=True)
def _gjk(ka, PA, va, kb, PB, vb, S, margin):  # type: ignore[no-untyped-def]
    """GJK distance between the cores. Returns ``(overlap, ns)``; the simplex and its weights
    are left in ``S[:ns]``. ``overlap`` is True when the core distance is below ``CONTACT_TOL``
    (origin inside or on the simplex): EPA must take over.

    With ``margin > 0`` (m) it only decides whether the core distance is below ``margin``: it
    returns ``overlap`` True as soon as the simplex comes within ``margin`` of the origin (an
    upper bound of the distance) and False as soon as a support plane certifies a distance of
    at least ``margin`` (a lower bound); the simplex is then not the closest one."""
    # initial direction: between the shapes' centres (a mesh's params hold its centre)
    vx = PB[6] - PA[6]
    vy = PB[10] - PA[10]
    vz = PB[14] - PA[14]
    if kb == MESH:
        vx += PB[3] * PB[0] + PB[4] * PB[1] + PB[5] * PB[2]
        vy += PB[7] * PB[0] + PB[8] * PB[1] + PB[9] * PB[2]
        vz += PB[11] * PB[0] + PB[12] * PB[1] + PB[13] * PB[2]
    if ka == MESH:
        vx -= PA[3] * PA[0] + PA[4] * PA[1] + PA[5] * PA[2]
        vy -= PA[7] * PA[0] + PA[8] * PA[1] + PA[9] * PA[2]
        vz -= PA[11] * PA[0] + PA[12] * PA[1] + PA[13] * PA[2]
    if vx * vx + vy * vy + vz * vz < 1e-24:
        vx, vy, vz = 1.0, 0.0, 0.0
    _nothrow(_add_point, S, 0, ka, PA, va, kb, PB, vb, vx, vy, vz, S)
    S[0, 9] = 1.0
    ns = 1
    vx = S[0, 0]
    vy = S[0, 1]
    vz = S[0, 2]
    lim = max(CONTACT_TOL, margin)
    for _ in range(GJK_MAX_ITERATIONS):
        dist2 = vx * vx + vy * vy + vz * vz
        if dist2 <= lim * lim:
            return True, ns
        _nothrow(_add_point, S, ns, ka, PA, va, kb, PB, vb, -vx, -vy, -vz, S)
        wx = S[ns, 0]
        wy = S[ns, 1]
        wz = S[ns, 2]
        dist = math.sqrt(dist2)
        vw = vx * wx + vy * wy + vz * wz
        if margin > 0.0 and vw >= margin * dist:
            return False, ns  # the plane through w normal to v separates by >= margin
        gap = dist2 - vw
        if gap <= dist * max(GJK_ABS_TOL, GJK_REL_TOL * dist):
            break  # v is within tolerance of the closest point
        dup = False
        for i in range(ns):
            if S[i, 0] == wx and S[i, 1] == wy and S[i, 2] == wz:
                dup = True
        if dup:
            break
        for i in range(ns):  # back up the current simplex (rows 4-7)
            for c in range(10):
                S[4 + i, c] = S[i, c]
        ns_old = ns
        ns += 1
        if ns == 2:
            t = _nothrow(_seg_t, S[0, 0], S[0, 1], S[0, 2], S[1, 0], S[1, 1], S[1, 2])
            S[0, 9] = 1.0 - t
            S[1, 9] = t
        elif ns == 3:
            la, lb, lc = _nothrow(
                _tri_lambdas,
                S[0, 0], S[0, 1], S[0, 2], S[1, 0], S[1, 1], S[1, 2], S[2, 0], S[2, 1], S[2, 2],
            )
            S[0, 9] = la
            S[1, 9] = lb
            S[2, 9] = lc
        elif _nothrow(_tetra_lambdas, S):
            return True, 4
        ns, nvx, nvy, nvz = _nothrow(_compact, S, ns)
        if nvx * nvx + nvy * nvy + nvz * nvz >= dist2:
            # no progress (round-off): keep the previous simplex, whose point is the closer
            for i in range(ns_old):
                for c in range(10):
                    S[i, c] = S[4 + i, c]
            ns = ns_old
            break
        vx = nvx
        vy = nvy
        vz = nvz
    if vx * vx + vy * vy + vz * vz <= lim * lim:
        return True, ns
    return False, ns


# --------------------------------------------------------------------------------------------
# EPA
# --------------------------------------------------------------------------------------------
# Vertex table V (vertex budget, 9): w, a, b as in the GJK scratch. Faces F (m, 3): vertex
# indices, counter-clockwise seen from outside. FN (m, 4): outward unit normal and plane offset
# (distance of the plane from the origin, positive when the origin is inside).


@njit(cache=True)
def _expand_simplex(V, nv, ka, PA, va, kb, PB, vb, H):  # type: ignore[no-untyped-def]
    """Grow the GJK simplex (origin on or inside it) into a non-degenerate tetrahedron.
    Returns the number of vertices reached (4 on success). ``H``: support hints (GJK scratch)."""
    for _ in range(12):
        if nv == 4:
            e1x = V[1, 0] - V[0, 0]
            e1y = V[1, 1] - V[0, 1]
            e1z = V[1, 2] - V[0, 2]
            e2x = V[2, 0] - V[0, 0]
            e2y = V[2, 1] - V[0, 1]
            e2z = V[2, 2] - V[0, 2]
            mx = e1y * e2z - e1z * e2y
            my = e1z * e2x - e1x * e2z
            mz = e1x * e2y - e1y * e2x
            mm = math.sqrt(mx * mx + my * my + mz * mz)
            h = 0.0
            if mm > 0.0:
                h = (
                    abs(
                        mx * (V[3, 0] - V[0, 0])
                        + my * (V[3, 1] - V[0, 1])
                        + mz * (V[3, 2] - V[0, 2])
                    )
                    / mm
                )
            if h > _EXPAND_EPS:
                return 4
            nv = 3
        elif nv == 3:
            e1x = V[1, 0] - V[0, 0]
            e1y = V[1, 1] - V[0, 1]
            e1z = V[1, 2] - V[0, 2]
            e2x = V[2, 0] - V[0, 0]
            e2y = V[2, 1] - V[0, 1]
            e2z = V[2, 2] - V[0, 2]
            mx = e1y * e2z - e1z * e2y
            my = e1z * e2x - e1x * e2z
            mz = e1x * e2y - e1y * e2x
            mm = math.sqrt(mx * mx + my * my + mz * mz)
            if mm <= _EXPAND_EPS * _EXPAND_EPS:
                nv = 2
                continue
            mx /= mm
            my /= mm
            mz /= mm
            found = False
            for sgn in (1.0, -1.0):
                _nothrow(
                    _add_point, V, 3, ka, PA, va, kb, PB, vb,
                    sgn * mx, sgn * my, sgn * mz, H,
                )
                h = sgn * (
                    mx * (V[3, 0] - V[0, 0]) + my * (V[3, 1] - V[0, 1]) + mz * (V[3, 2] - V[0, 2])
                )
                if h > _EXPAND_EPS:
                    found = True
                    break
            return 4 if found else 3
        elif nv == 2:
            ux = V[1, 0] - V[0, 0]
            uy = V[1, 1] - V[0, 1]
            uz = V[1, 2] - V[0, 2]
            ul = math.sqrt(ux * ux + uy * uy + uz * uz)
            if ul <= _EXPAND_EPS:
                nv = 1
                continue
            ux /= ul
            uy /= ul
            uz /= ul
            e1x, e1y, e1z = _nothrow(_any_perpendicular, ux, uy, uz)
            e2x = uy * e1z - uz * e1y
            e2y = uz * e1x - ux * e1z
            e2z = ux * e1y - uy * e1x
            found = False
            for k in range(6):
                c = math.cos(k * math.pi / 3.0)
                s = math.sin(k * math.pi / 3.0)
                _nothrow(
                    _add_point, V, 2, ka, PA, va, kb, PB, vb,
                    c * e1x + s * e2x, c * e1y + s * e2y, c * e1z + s * e2z, H,
                )
                rx = V[2, 0] - V[0, 0]
                ry = V[2, 1] - V[0, 1]
                rz = V[2, 2] - V[0, 2]
                cx = ry * uz - rz * uy
                cy = rz * ux - rx * uz
                cz = rx * uy - ry * ux
                if cx * cx + cy * cy + cz * cz > _EXPAND_EPS * _EXPAND_EPS:
                    found = True
                    break
            if not found:
                return 2
            nv = 3
        else:
            found = False
            for k in range(6):
                sgn = 1.0 if k < 3 else -1.0
                dx = sgn if k % 3 == 0 else 0.0
                dy = sgn if k % 3 == 1 else 0.0
                dz = sgn if k % 3 == 2 else 0.0
                _nothrow(_add_point, V, 1, ka, PA, va, kb, PB, vb, dx, dy, dz, H)
                rx = V[1, 0] - V[0, 0]
                ry = V[1, 1] - V[0, 1]
                rz = V[1, 2] - V[0, 2]
                if rx * rx + ry * ry + rz * rz > _EXPAND_EPS * _EXPAND_EPS:
                    found = True
                    break
            if not found:
                return 1
            nv = 2
    return nv


@njit(cache=True)
def _make_face(V, F, FN, f, i, j, k, cx, cy, cz):  # type: ignore[no-untyped-def]
    """Store face (i, j, k) in slot ``f``, wound so that its normal points away from the
    interior point ``c``."""
    ux = V[j, 0] - V[i, 0]
    uy = V[j, 1] - V[i, 1]
    uz = V[j, 2] - V[i, 2]
    vx = V[k, 0] - V[i, 0]
    vy = V[k, 1] - V[i, 1]
    vz = V[k, 2] - V[i, 2]
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    if nx * (cx - V[i, 0]) + ny * (cy - V[i, 1]) + nz * (cz - V[i, 2]) > 0.0:
        nx = -nx
        ny = -ny
        nz = -nz
        j, k = k, j
    F[f, 0] = i
    F[f, 1] = j
    F[f, 2] = k
    ln = math.sqrt(nx * nx + ny * ny + nz * nz)
    if ln > 0.0:
        nx /= ln
        ny /= ln
        nz /= ln
        FN[f, 0] = nx
        FN[f, 1] = ny
        FN[f, 2] = nz
        FN[f, 3] = nx * V[i, 0] + ny * V[i, 1] + nz * V[i, 2]
    else:  # zero-area sliver: never selected, never visible
        FN[f, 0] = 0.0
        FN[f, 1] = 0.0
        FN[f, 2] = 0.0
        FN[f, 3] = np.inf


@njit(cache=True)
def _refine_depth(ka, PA, va, kb, PB, vb, f0, nx, ny, nz):  # type: ignore[no-untyped-def]
    """Local minimum of ``h_D(u) = h_A(u) + h_B(-u)`` over unit ``u`` near ``n``, where
    ``f0 = h_D(n)``: a pattern search in the tangent plane of ``n`` (16 directions, shrinking
    steps, restarted once with turned directions). ``min h_D`` is the penetration depth; every
    value found is an upper bound of it."""
    e1x, e1y, e1z = _nothrow(_any_perpendicular, nx, ny, nz)
    e2x = ny * e1z - nz * e1y
    e2y = nz * e1x - nx * e1z
    e2z = nx * e1y - ny * e1x
    s = 0.0
    t = 0.0
    fbest = f0
    ha = -1
    hb = -1
    for rnd in range(2):
        step = 0.05 if rnd == 0 else 1e-3
        turn = 0.0 if rnd == 0 else math.pi / 16.0
        for _ in range(500):
            bs = s
            bt = t
            for k in range(16):
                ang = turn + 0.125 * math.pi * k
                cs = s + step * math.cos(ang)
                ct = t + step * math.sin(ang)
                ux = nx + cs * e1x + ct * e2x
                uy = ny + cs * e1y + ct * e2y
                uz = nz + cs * e1z + ct * e2z
                ul = math.sqrt(ux * ux + uy * uy + uz * uz)
                ux /= ul
                uy /= ul
                uz /= ul
                ax, ay, az, ha = _nothrow(_support, ka, PA, va, ux, uy, uz, ha)
                bx, by, bz, hb = _nothrow(_support, kb, PB, vb, -ux, -uy, -uz, hb)
                fv = ux * (ax - bx) + uy * (ay - by) + uz * (az - bz)
                if fv < fbest:
                    fbest = fv
                    bs = cs
                    bt = ct
            if bs != s or bt != t:
                s = bs
                t = bt
            else:
                step *= 0.25
                if step < 1e-11:
                    break
    ux = nx + s * e1x + t * e2x
    uy = ny + s * e1y + t * e2y
    uz = nz + s * e1z + t * e2z
    ul = math.sqrt(ux * ux + uy * uy + uz * uz)
    return fbest, ux / ul, uy / ul, uz / ul


@njit(cache=True)
def _epa(ka, PA, va, kb, PB, vb, S, ns):  # type: ignore[no-untyped-def]
    """Penetration of the cores, starting from the GJK simplex ``S[:ns]`` (origin on/inside).
    Returns ``(depth, nx, ny, nz, ax, ay, az, bx, by, bz)``: depth of the origin inside the
    Minkowski difference A - B (slightly negative if just outside), its outward normal ``n`` (the
    direction to move B) and core witness points with ``a - b = depth * n``."""
    vcap = EPA_MAX_VERTICES
    if ka == MESH or kb == MESH:
        vcap = max(vcap, min(EPA_MAX_MESH_VERTICES, 2 * (va.shape[0] + vb.shape[0]) + 32))
    fcap = 2 * vcap + 16  # a closed triangulated polytope has 2 V - 4 faces
    V = np.empty((vcap, 9))
    for i in range(ns):
        for c in range(9):
            V[i, c] = S[i, c]
    nv = _nothrow(_expand_simplex, V, ns, ka, PA, va, kb, PB, vb, S)
    if nv < 4:
        # flat Minkowski difference (impossible for the pairs routed here): report contact at
        # the simplex's mean point of A
        lam = 1.0 / ns
        ax = 0.0
        ay = 0.0
        az = 0.0
        for i in range(ns):
            ax += lam * S[i, 3]
            ay += lam * S[i, 4]
            az += lam * S[i, 5]
        return 0.0, 0.0, 0.0, 1.0, ax, ay, az, ax, ay, az
    cx = 0.25 * (V[0, 0] + V[1, 0] + V[2, 0] + V[3, 0])
    cy = 0.25 * (V[0, 1] + V[1, 1] + V[2, 1] + V[3, 1])
    cz = 0.25 * (V[0, 2] + V[1, 2] + V[2, 2] + V[3, 2])
    F = np.empty((fcap, 3), np.int64)
    FN = np.empty((fcap, 4))
    E = np.empty((3 * fcap, 2), np.int64)
    for l in range(4):
        i, j, k = _nothrow(_face_others, l)
        _nothrow(_make_face, V, F, FN, l, i, j, k, cx, cy, cz)
    nf = 4
    bi = 0
    bj = 1
    bk = 2
    bnx = 0.0
    bny = 0.0
    bnz = 1.0
    bd = 0.0
    converged = False
    ub = np.inf  # best upper bound of the depth: min over the queried normals of h_D
    unx = 0.0
    uny = 0.0
    unz = 1.0
    for _ in range(vcap):
        f = 0
        for q in range(1, nf):
            if FN[q, 3] < FN[f, 3]:
                f = q
        bi = F[f, 0]
        bj = F[f, 1]
        bk = F[f, 2]
        bnx = FN[f, 0]
        bny = FN[f, 1]
        bnz = FN[f, 2]
        bd = FN[f, 3]
        if nv >= vcap or not math.isfinite(bd):
            break
        _nothrow(_add_point, V, nv, ka, PA, va, kb, PB, vb, bnx, bny, bnz, S)
        wx = V[nv, 0]
        wy = V[nv, 1]
        wz = V[nv, 2]
        hw = bnx * wx + bny * wy + bnz * wz
        if hw < ub:
            ub = hw
            unx = bnx
            uny = bny
            unz = bnz
        if hw - bd <= max(EPA_ABS_TOL, EPA_REL_TOL * abs(bd)):
            converged = True
            break  # the closest face lies on the boundary (within tolerance)
        nv += 1
        # remove every face that sees w; the unmatched edges of the removed faces form the horizon
        ne = 0
        q = 0
        while q < nf:
            if FN[q, 0] * wx + FN[q, 1] * wy + FN[q, 2] * wz - FN[q, 3] > _EPA_VISIBLE_EPS:
                for e in range(3):
                    p0 = F[q, e]
                    p1 = F[q, (e + 1) % 3]
                    hit = -1
                    for g in range(ne):
                        if E[g, 0] == p1 and E[g, 1] == p0:
                            hit = g
                            break
                    if hit >= 0:
                        ne -= 1
                        E[hit, 0] = E[ne, 0]
                        E[hit, 1] = E[ne, 1]
                    else:
                        E[ne, 0] = p0
                        E[ne, 1] = p1
                        ne += 1
                nf -= 1
                for c in range(3):
                    F[q, c] = F[nf, c]
                for c in range(4):
                    FN[q, c] = FN[nf, c]
            else:
                q += 1
        if ne == 0 or nf + ne > fcap:
            break  # cannot grow any further: keep the last closest face
        for g in range(ne):
            _nothrow(_make_face, V, F, FN, nf, E[g, 0], E[g, 1], nv - 1, cx, cy, cz)
            nf += 1
    if not converged and math.isfinite(ub):
        # Out of vertices before converging: a curved closest set (e.g. the side of a cylinder
        # equidistant from the origin), which a polytope resolves only slowly. Minimise h_D
        # directly from the best normal so far; the witnesses are where the ray along the final
        # normal leaves the polytope, moved along it onto the two supporting planes.
        # h_D may have several local minima (e.g. a cap and the side of a cylinder): start from
        # the best queried normal and from the normal of the closest face (lower-bound region)
        depth, ux, uy, uz = _nothrow(_refine_depth, ka, PA, va, kb, PB, vb, ub, unx, uny, unz)
        if math.isfinite(bd):
            ax, ay, az, _ = _nothrow(_support, ka, PA, va, bnx, bny, bnz, int(S[8, 0]))
            bx, by, bz, _ = _nothrow(_support, kb, PB, vb, -bnx, -bny, -bnz, int(S[8, 1]))
            f1 = bnx * (ax - bx) + bny * (ay - by) + bnz * (az - bz)
            d2, vx, vy, vz = _nothrow(_refine_depth, ka, PA, va, kb, PB, vb, f1, bnx, bny, bnz)
            if d2 < depth:
                depth, ux, uy, uz = d2, vx, vy, vz
        tb = np.inf
        fq = -1
        for q in range(nf):
            c = FN[q, 0] * ux + FN[q, 1] * uy + FN[q, 2] * uz
            if c > 1e-12 and math.isfinite(FN[q, 3]) and FN[q, 3] < tb * c:
                tb = FN[q, 3] / c
                fq = q
        if fq >= 0:
            i = F[fq, 0]
            j = F[fq, 1]
            k = F[fq, 2]
            xx = tb * ux
            xy = tb * uy
            xz = tb * uz
            li, lj, lk = _nothrow(
                _tri_lambdas,
                V[i, 0] - xx, V[i, 1] - xy, V[i, 2] - xz, V[j, 0] - xx, V[j, 1] - xy,
                V[j, 2] - xz, V[k, 0] - xx, V[k, 1] - xy, V[k, 2] - xz,
            )
            ax = li * V[i, 3] + lj * V[j, 3] + lk * V[k, 3]
            ay = li * V[i, 4] + lj * V[j, 4] + lk * V[k, 4]
            az = li * V[i, 5] + lj * V[j, 5] + lk * V[k, 5]
            bx = li * V[i, 6] + lj * V[j, 6] + lk * V[k, 6]
            by = li * V[i, 7] + lj * V[j, 7] + lk * V[k, 7]
            bz = li * V[i, 8] + lj * V[j, 8] + lk * V[k, 8]
            # move each point along u onto its shape's supporting plane (exact support values)
            sx, sy, sz, _ = _nothrow(_support, ka, PA, va, ux, uy, uz, int(S[8, 0]))
            ha = ux * (sx - ax) + uy * (sy - ay) + uz * (sz - az)
            sx, sy, sz, _ = _nothrow(_support, kb, PB, vb, -ux, -uy, -uz, int(S[8, 1]))
            hb = ux * (bx - sx) + uy * (by - sy) + uz * (bz - sz)
            ax += ha * ux
            ay += ha * uy
            az += ha * uz
            bx -= hb * ux
            by -= hb * uy
            bz -= hb * uz
            # a - b = depth * u up to a small tangential residual (the ray point's barycentric
            # weights); remove it from the shape(s) not reduced to a point core
            rx = ax - bx - depth * ux
            ry = ay - by - depth * uy
            rz = az - bz - depth * uz
            wa_share = 0.5
            if ka == SPHERE or (ka == CAPSULE and PA[1] == 0.0):
                wa_share = 0.0
            elif kb == SPHERE or (kb == CAPSULE and PB[1] == 0.0):
                wa_share = 1.0
            ax -= wa_share * rx
            ay -= wa_share * ry
            az -= wa_share * rz
            bx += (1.0 - wa_share) * rx
            by += (1.0 - wa_share) * ry
            bz += (1.0 - wa_share) * rz
            return depth, ux, uy, uz, ax, ay, az, bx, by, bz
    if not math.isfinite(bd):
        bd = 0.0
    # Witnesses: the origin's projection onto the closest plane may lie in a coplanar neighbour
    # of the selected face (flat sides of boxes and meshes are split into several triangles),
    # so take, among the faces coplanar with it, the one whose triangle is nearest the origin.
    li = 1.0
    lj = 0.0
    lk = 0.0
    best = np.inf
    dlim = bd + 1e-6
    cnx = bnx
    cny = bny
    cnz = bnz
    for q in range(nf):
        if FN[q, 3] <= dlim and FN[q, 0] * cnx + FN[q, 1] * cny + FN[q, 2] * cnz > 1.0 - 1e-9:
            i = F[q, 0]
            j = F[q, 1]
            k = F[q, 2]
            ui, uj, uk = _nothrow(
                _tri_lambdas,
                V[i, 0], V[i, 1], V[i, 2], V[j, 0], V[j, 1], V[j, 2], V[k, 0], V[k, 1], V[k, 2],
            )
            px = ui * V[i, 0] + uj * V[j, 0] + uk * V[k, 0]
            py = ui * V[i, 1] + uj * V[j, 1] + uk * V[k, 1]
            pz = ui * V[i, 2] + uj * V[j, 2] + uk * V[k, 2]
            dd = px * px + py * py + pz * pz
            if dd < best:
                best = dd
                bi, bj, bk = i, j, k
                li, lj, lk = ui, uj, uk
                bnx = FN[q, 0]
                bny = FN[q, 1]
                bnz = FN[q, 2]
                bd = FN[q, 3]
    ax = li * V[bi, 3] + lj * V[bj, 3] + lk * V[bk, 3]
    ay = li * V[bi, 4] + lj * V[bj, 4] + lk * V[bk, 4]
    az = li * V[bi, 5] + lj * V[bj, 5] + lk * V[bk, 5]
    bx = li * V[bi, 6] + lj * V[bj, 6] + lk * V[bk, 6]
    by = li * V[bi, 7] + lj * V[bj, 7] + lk * V[bk, 7]
    bz = li * V[bi, 8] + lj * V[bj, 8] + lk * V[bk, 8]
    return bd, bnx, bny, bnz, ax, ay, az, bx, by, bz


@njit(cache=True)
def _gjk_epa(ka, pa, Ta, va, kb, pb, Tb, vb):  # type: ignore[no-untyped-def]
    """General pair by GJK (+ EPA on core contact); returns the 10-tuple result."""
    PA = (
        pa[0], pa[1], pa[2], Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[0, 3],
        Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[1, 3], Ta[2, 0], Ta[2, 1], Ta[2, 2], Ta[2, 3],
    )
    PB = (
        pb[0], pb[1], pb[2], Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[0, 3],
        Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[1, 3], Tb[2, 0], Tb[2, 1], Tb[2, 2], Tb[2, 3],
    )
    ra = pa[0] if ka in (SPHERE, CAPSULE) else 0.0
    rb = pb[0] if kb in (SPHERE, CAPSULE) else 0.0
    S = np.empty((9, 10))
    S[8, 0] = -1.0
    S[8, 1] = -1.0
    overlap, ns = _nothrow(_gjk, ka, PA, va, kb, PB, vb, S, 0.0)
    if overlap:
        depth, nx, ny, nz, ax, ay, az, bx, by, bz = _nothrow(
            _epa, ka, PA, va, kb, PB, vb, S, ns
        )
        dcore = -depth
    else:
        ax = 0.0
        ay = 0.0
        az = 0.0
        bx = 0.0
        by = 0.0
        bz = 0.0
        for i in range(ns):
            lam = S[i, 9]
            ax += lam * S[i, 3]
            ay += lam * S[i, 4]
            az += lam * S[i, 5]
            bx += lam * S[i, 6]
            by += lam * S[i, 7]
            bz += lam * S[i, 8]
        dx = bx - ax
        dy = by - ay
        dz = bz - az
        dcore = math.sqrt(dx * dx + dy * dy + dz * dz)  # >= CONTACT_TOL > 0
        nx = dx / dcore
        ny = dy / dcore
        nz = dz / dcore
    return (
        dcore - ra - rb,
        ax + ra * nx, ay + ra * ny, az + ra * nz,
        bx - rb * nx, by - rb * ny, bz - rb * nz,
        nx, ny, nz,
    )


@njit(cache=True)
def _gjk_within(ka, pa, Ta, va, kb, pb, Tb, vb, pad):  # type: ignore[no-untyped-def]
    """True when the signed distance of the pair is below ``pad`` (m), by GJK with early exits
    and no EPA (see ``_gjk``'s ``margin``); the full computation when ``pad`` plus the radii is
    negative (a penetration depth must be compared). Cores closer than ``CONTACT_TOL`` count as
    overlapping, as in :func:`shape_distance`."""
    ra = pa[0] if ka in (SPHERE, CAPSULE) else 0.0
    rb = pb[0] if kb in (SPHERE, CAPSULE) else 0.0
    margin = pad + ra + rb
    if margin < 0.0:
        r = _nothrow(_gjk_epa, ka, pa, Ta, va, kb, pb, Tb, vb)
        return r[0] < pad
    margin = max(margin, CONTACT_TOL)
    PA = (
        pa[0], pa[1], pa[2], Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[0, 3],
        Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[1, 3], Ta[2, 0], Ta[2, 1], Ta[2, 2], Ta[2, 3],
    )
    PB = (
        pb[0], pb[1], pb[2], Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[0, 3],
        Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[1, 3], Tb[2, 0], Tb[2, 1], Tb[2, 2], Tb[2, 3],
    )
    S = np.empty((9, 10))
    S[8, 0] = -1.0
    S[8, 1] = -1.0
    overlap, _ = _nothrow(_gjk, ka, PA, va, kb, PB, vb, S, margin)
    return overlap


# --------------------------------------------------------------------------------------------
# Dispatcher
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def shape_distance(ka, pa, Ta, va, kb, pb, Tb, vb, wa, wb, n):  # type: ignore[no-untyped-def]
    """Signed distance (m) between shape A (``ka, pa, Ta, va``) and shape B (``kb, pb, Tb, vb``).

    See the module docstring for the encoding. Writes the witness point on A into ``wa``, the one
    on B into ``wb`` and the unit normal from A towards B into ``n`` (all ``(3,)``, common
    frame); returns the signed distance (positive separated, negative penetrating). Inlined into
    jitted callers (``inline="always"``).
    """
    # A flat if/elif chain: nesting these tests defeats numba's refcount pruning (see
    # "Calling convention") and costs ~100 ns per call.
    swap = False
    if ka == SPHERE and kb == SPHERE:
        r = _nothrow(
            _sphere_sphere, Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0], Tb[0, 3], Tb[1, 3], Tb[2, 3],
            pb[0],
        )
    elif ka == SPHERE and kb == CAPSULE:
        h = pb[1]
        r = _nothrow(
            _sphere_capsule, Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0], Tb[0, 3], Tb[1, 3], Tb[2, 3],
            h * Tb[0, 2], h * Tb[1, 2], h * Tb[2, 2], pb[0],
        )
    elif ka == CAPSULE and kb == SPHERE:
        swap = True
        h = pa[1]
        r = _nothrow(
            _sphere_capsule, Tb[0, 3], Tb[1, 3], Tb[2, 3], pb[0], Ta[0, 3], Ta[1, 3], Ta[2, 3],
            h * Ta[0, 2], h * Ta[1, 2], h * Ta[2, 2], pa[0],
        )
    elif ka == CAPSULE and kb == CAPSULE:
        ha = pa[1]
        hb = pb[1]
        r = _nothrow(
            _capsule_capsule, Ta[0, 3], Ta[1, 3], Ta[2, 3],
            ha * Ta[0, 2], ha * Ta[1, 2], ha * Ta[2, 2], pa[0],
            Tb[0, 3], Tb[1, 3], Tb[2, 3], hb * Tb[0, 2], hb * Tb[1, 2], hb * Tb[2, 2], pb[0],
        )
    elif ka == SPHERE and kb == BOX:
        r = _nothrow(
            _sphere_box, Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0],
            Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[2, 0], Tb[2, 1],
            Tb[2, 2], Tb[0, 3], Tb[1, 3], Tb[2, 3], pb[0], pb[1], pb[2],
        )
    elif ka == BOX and kb == SPHERE:
        swap = True
        r = _nothrow(
            _sphere_box, Tb[0, 3], Tb[1, 3], Tb[2, 3], pb[0],
            Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[2, 0], Ta[2, 1],
            Ta[2, 2], Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0], pa[1], pa[2],
        )
    else:
        r = _nothrow(_gjk_epa, ka, pa, Ta, va, kb, pb, Tb, vb)
    if swap:  # computed as (B, A): exchange the witnesses and flip the normal
        wa[0] = r[4]
        wa[1] = r[5]
        wa[2] = r[6]
        wb[0] = r[1]
        wb[1] = r[2]
        wb[2] = r[3]
        n[0] = -r[7]
        n[1] = -r[8]
        n[2] = -r[9]
    else:
        wa[0] = r[1]
        wa[1] = r[2]
        wa[2] = r[3]
        wb[0] = r[4]
        wb[1] = r[5]
        wb[2] = r[6]
        n[0] = r[7]
        n[1] = r[8]
        n[2] = r[9]
    return r[0]


@njit(cache=True)
def bound_center(kind, p, T):  # type: ignore[no-untyped-def]
    """Centre (common frame) of the bounding sphere of radius ``p[3]`` of a shape posed by
    ``T``: a mesh's bounding-box centre ``p[0:3]``, else the shape's origin (only the
    translation of ``T`` is read for non-meshes: spheres may carry a centre-only pose)."""
    if kind == MESH:
        return (
            T[0, 0] * p[0] + T[0, 1] * p[1] + T[0, 2] * p[2] + T[0, 3],
            T[1, 0] * p[0] + T[1, 1] * p[1] + T[1, 2] * p[2] + T[1, 3],
            T[2, 0] * p[0] + T[2, 1] * p[1] + T[2, 2] * p[2] + T[2, 3],
        )
    return T[0, 3], T[1, 3], T[2, 3]


@njit(cache=True, inline="always")
def shape_overlap(ka, pa, Ta, va, kb, pb, Tb, vb, pad, wa, wb, n):  # type: ignore[no-untyped-def]
    """True when the signed distance of A and B (encoded as for :func:`shape_distance`) is
    below ``pad`` (m): the boolean question of validity checks. Closed-form pairs are computed
    exactly; GJK pairs stop as soon as the answer is certain and never run EPA (penetration
    depth is not needed). Agrees with ``shape_distance(...) < pad`` except within the GJK
    tolerance of the boundary. ``wa``, ``wb``, ``n`` (3,) are scratch."""
    if (ka <= CAPSULE and kb <= CAPSULE) or (ka == SPHERE and kb == BOX) or (
        ka == BOX and kb == SPHERE
    ):
        hit = shape_distance(ka, pa, Ta, va, kb, pb, Tb, vb, wa, wb, n) < pad
    else:
        hit = _nothrow(_gjk_within, ka, pa, Ta, va, kb, pb, Tb, vb, pad)
    return hit


# --------------------------------------------------------------------------------------------
# Python convenience wrapper
# --------------------------------------------------------------------------------------------


def _pose(name: str, pose: ArrayLike) -> NDArray[np.float64]:
    T = np.ascontiguousarray(pose, dtype=np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ShapeError(f"{name} must be a finite (4, 4) homogeneous transform, got {T.shape}")
    return T


def distance(
    shape_a: Shape, pose_a: ArrayLike, shape_b: Shape, pose_b: ArrayLike
) -> tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Signed distance between ``shape_a`` at ``pose_a`` and ``shape_b`` at ``pose_b``.

    Poses are ``(4, 4)`` homogeneous transforms in a common frame. Returns ``(d, wa, wb, n)``:
    signed distance in metres (negative = penetration depth), witness points on A and B and the
    unit normal from A towards B (``(3,)`` each, common frame).
    """
    for name, shape in (("shape_a", shape_a), ("shape_b", shape_b)):
        if not isinstance(shape, Shape) or shape.kind not in (SPHERE, CAPSULE, BOX, CYLINDER, MESH):
            raise ShapeError(f"{name} must be a Sphere, Capsule, Box, Cylinder or Mesh")
    wa = np.empty(3)
    wb = np.empty(3)
    n = np.empty(3)
    d = shape_distance(
        int(shape_a.kind),
        np.ascontiguousarray(shape_a.params(), dtype=np.float64),
        _pose("pose_a", pose_a),
        np.ascontiguousarray(shape_a.kernel_vertices(), dtype=np.float64).reshape(-1, 3),
        int(shape_b.kind),
        np.ascontiguousarray(shape_b.params(), dtype=np.float64),
        _pose("pose_b", pose_b),
        np.ascontiguousarray(shape_b.kernel_vertices(), dtype=np.float64).reshape(-1, 3),
        wa,
        wb,
        n,
    )
    return float(d), wa, wb, n
