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
closest points), sphere-box (point against oriented box; inside a box the penetration goes to
the nearest face) and sphere-cylinder (likewise: inside, through the side or the nearer cap;
EPA's answer deep inside a cylinder was off by up to ~2e-8 m). Every other pair uses GJK on the
shapes' support functions with the "core + radius" trick (sphere = point core inflated by ``r``,
capsule = segment core inflated by ``r``; ``d = d(cores) - ra - rb``, exact also in
penetration). When the cores touch or overlap
(core distance below ``CONTACT_TOL``), EPA (expanding polytope algorithm) gives the penetration
depth, normal and witness points. Cylinder support is exact (cap disc and rim); mesh support is
the maximum over the hull vertices: a scan for small hulls, else a climb along the hull's edges
from the previous answer of the same GJK/EPA call (see :mod:`.hull`). GJK converges only linearly
on a cylinder's curved rim and side; when its simplex shows the other shape's feature to be one
point (a box or hull vertex) or a box face, it tries the closed-form closest pair of that feature
and the cylinder and keeps it if closer (the duality-gap test still decides when to stop):
go1's box-cylinder pairs take 3.7 GJK iterations instead of 9.9, and these contacts come out
exact to round-off. If EPA runs out of
vertices before converging -- a curved closest set, e.g. a capsule on the axis of a cylinder,
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

Modules: this one holds the dispatcher (:func:`shape_distance`, :func:`shape_overlap`) and the
Python wrapper :func:`distance`; the closed forms are in :mod:`.pair_closed_forms`, the support
functions and GJK in :mod:`.gjk`, EPA in :mod:`.epa` (their public names are re-exported here).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..jitcall import nothrow as _nothrow
from .epa import (
    EPA_ABS_TOL,
    EPA_MAX_MESH_VERTICES,
    EPA_MAX_VERTICES,
    EPA_REL_TOL,
    _gjk_epa,
    _gjk_within,
)
from .gjk import CONTACT_TOL, GJK_ABS_TOL, GJK_MAX_ITERATIONS, GJK_REL_TOL, mesh_vertex_count
from .pair_closed_forms import (
    _capsule_capsule,
    _sphere_box,
    _sphere_capsule,
    _sphere_cylinder,
    _sphere_sphere,
    point_box,
    point_segment,
    segment_segment,
)
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


# --------------------------------------------------------------------------------------------
# Calling convention: calls made from a function holding arrays go through ``_nothrow``
# (see :mod:`robot_collision.jitcall` for why).
# --------------------------------------------------------------------------------------------


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
    elif ka == SPHERE and kb == CYLINDER:
        r = _nothrow(
            _sphere_cylinder, Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0],
            Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[2, 0], Tb[2, 1],
            Tb[2, 2], Tb[0, 3], Tb[1, 3], Tb[2, 3], pb[0], pb[1],
        )
    elif ka == CYLINDER and kb == SPHERE:
        swap = True
        r = _nothrow(
            _sphere_cylinder, Tb[0, 3], Tb[1, 3], Tb[2, 3], pb[0],
            Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[2, 0], Ta[2, 1],
            Ta[2, 2], Ta[0, 3], Ta[1, 3], Ta[2, 3], pa[0], pa[1],
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
    # closed forms: sphere and capsule pairs, a sphere with a box or a cylinder (BOX, CYLINDER
    # = 2, 3)
    if (ka <= CAPSULE and kb <= CAPSULE) or (ka == SPHERE and BOX <= kb <= CYLINDER) or (
        kb == SPHERE and BOX <= ka <= CYLINDER
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
