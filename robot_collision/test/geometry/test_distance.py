"""Signed distance kernels (robot_collision.geometry.distance) against independent oracles.

Oracles (none of them calls the code under test):

- closed forms written from the definitions: sphere-sphere, point-segment by a bounded scalar
  minimisation, segment-segment by enumerating the candidates of a convex QP on [0, 1]^2,
  point-box by the box SDF, axis-aligned box-box by per-axis overlaps;
- the duality ``sd(A, B) = max over unit u of g(u)`` with ``g(u) = -h_A(u) - h_B(-u)`` (``h`` =
  support function, written here in vectorised NumPy), valid for separated *and* penetrating
  convex shapes. ``g(n) == d`` shows the reported normal attains ``d``; a sampled and locally
  refined maximum of ``g`` (a lower bound of the true ``sd``) must not exceed ``d``;
- each shape's implicit surface (SDF; for meshes the max of scipy's hull plane equations) for
  witness points and sign consistency;
- geometric inclusions: a Box as a Mesh of its 8 corners is the same set; a polygonal prism
  inscribed in a Cylinder is within its sagitta.

Tolerances: 1e-9 m for pairs of spheres, capsules, boxes and meshes; 1e-8 m when a cylinder is
involved (GJK/EPA on a curved surface); the direction search of the ``g`` oracle resolves
``sd`` to well below 1e-9 m for the sizes used (0.02-0.6 m).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from numpy.typing import NDArray
from scipy.optimize import minimize, minimize_scalar
from scipy.spatial import ConvexHull

from robot_collision.errors import ShapeError
from robot_collision.geometry.distance import (
    distance,
    point_box,
    point_segment,
    segment_segment,
    shape_distance,
)
from robot_collision.geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere

Arr = NDArray[np.float64]

# --------------------------------------------------------------------------------------------
# Helpers (oracles)
# --------------------------------------------------------------------------------------------


def rot_from_quat(q: Arr) -> Arr:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def pose(R: Arr | None = None, t: Any = (0.0, 0.0, 0.0)) -> Arr:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    T[:3, 3] = t
    return T


def rot_axis(axis: int, angle: float) -> Arr:
    c, s = np.cos(angle), np.sin(angle)
    i, j = [k for k in range(3) if k != axis]
    R = np.eye(3)
    R[i, i] = c
    R[i, j] = -s
    R[j, i] = s
    R[j, j] = c
    return R


def _h_local(shape: Shape, U: Arr) -> Arr:
    """Support function values of the shape in its own frame for the rows of U."""
    if isinstance(shape, Sphere):
        return np.full(len(U), shape.radius) * np.linalg.norm(U, axis=1)
    if isinstance(shape, Capsule):
        return 0.5 * shape.length * np.abs(U[:, 2]) + shape.radius * np.linalg.norm(U, axis=1)
    if isinstance(shape, Box):
        return 0.5 * np.abs(U) @ np.array([shape.x, shape.y, shape.z])
    if isinstance(shape, Cylinder):
        return shape.radius * np.hypot(U[:, 0], U[:, 1]) + 0.5 * shape.length * np.abs(U[:, 2])
    return np.max(U @ shape.vertices().T, axis=1)


def support_value(shape: Shape, T: Arr, U: Arr) -> Arr:
    U = np.atleast_2d(U)
    return U @ T[:3, 3] + _h_local(shape, U @ T[:3, :3])


def g_dual(A: Shape, TA: Arr, B: Shape, TB: Arr, U: Arr) -> Arr:
    """g(u) = -h_A(u) - h_B(-u); the signed distance is its maximum over unit u."""
    U = np.atleast_2d(U)
    return -support_value(A, TA, U) - support_value(B, TB, -U)


def _fibonacci_sphere(m: int) -> Arr:
    i = np.arange(m) + 0.5
    phi = np.arccos(1.0 - 2.0 * i / m)
    th = np.pi * (1.0 + 5.0**0.5) * i
    return np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=1)


_DIRS = _fibonacci_sphere(2000)
_GRID = np.linspace(-1.0, 1.0, 15)
_G1, _G2 = (x.ravel() for x in np.meshgrid(_GRID, _GRID))


def sd_lower_bound(A: Shape, TA: Arr, B: Shape, TB: Arr) -> float:
    """max of g over 2000 directions, refined by shrinking direction grids around the three
    best ones. Every value is g at some unit vector, so the result never exceeds the true sd."""
    vals = g_dual(A, TA, B, TB, _DIRS)
    best = float(vals.max())
    for k in np.argsort(vals)[-3:]:
        u = _DIRS[k]
        val = float(vals[k])
        rad = 0.1
        for _ in range(16):
            a = np.eye(3)[np.argmin(np.abs(u))]
            e1 = np.cross(u, a)
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(u, e1)
            U = u + rad * (_G1[:, None] * e1 + _G2[:, None] * e2)
            U /= np.linalg.norm(U, axis=1, keepdims=True)
            gv = g_dual(A, TA, B, TB, U)
            j = int(np.argmax(gv))
            if gv[j] > val:
                u, val = U[j], float(gv[j])
            rad *= 0.35
        best = max(best, val)
    return best


def sdf(shape: Shape, T: Arr, X: Arr) -> Arr:
    """Signed distance of points to the shape's surface (meshes: max of hull plane offsets, exact
    sign and zero set, a lower bound of the distance outside)."""
    X = np.atleast_2d(X)
    L = (X - T[:3, 3]) @ T[:3, :3]
    if isinstance(shape, Sphere):
        return np.linalg.norm(L, axis=1) - shape.radius
    if isinstance(shape, Capsule):
        z = np.clip(L[:, 2], -0.5 * shape.length, 0.5 * shape.length)
        return np.linalg.norm(L - np.outer(z, [0.0, 0.0, 1.0]), axis=1) - shape.radius
    if isinstance(shape, Box):
        q = np.abs(L) - 0.5 * np.array([shape.x, shape.y, shape.z])
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    if isinstance(shape, Cylinder):
        q = np.stack(
            [np.hypot(L[:, 0], L[:, 1]) - shape.radius, np.abs(L[:, 2]) - 0.5 * shape.length],
            axis=1,
        )
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    eq = _hull_equations(shape.vertices())
    return np.max(L @ eq[:, :3].T + eq[:, 3], axis=1)


_HULLS: dict[bytes, Arr] = {}


def _hull_equations(vertices: Arr) -> Arr:
    key = vertices.tobytes()
    if key not in _HULLS:
        _HULLS[key] = ConvexHull(vertices).equations
    return _HULLS[key]


class _Found(Exception):
    pass


def shares_interior_point(A: Shape, TA: Arr, B: Shape, TB: Arr, starts: list[Arr]) -> bool:
    """Whether some x has max(sdf_A(x), sdf_B(x)) < 0, searched by Nelder-Mead (the function
    is convex) from several starts, stopping at the first such point."""

    def f(x: Arr) -> float:
        v = max(float(sdf(A, TA, x)[0]), float(sdf(B, TB, x)[0]))
        if v < 0.0:
            raise _Found
        return v

    opts = {"xatol": 1e-9, "fatol": 1e-12, "maxiter": 1000}
    for x0 in starts:
        try:
            minimize(f, x0, method="Nelder-Mead", options=opts)
        except _Found:
            return True
    return False


def interior_samples(shape: Shape, T: Arr, rng: np.random.Generator, m: int = 200) -> Arr:
    """Random points strictly inside the shape (rejection sampling in a bounding cube)."""
    r = shape.bounding_radius()
    P = rng.uniform(-r, r, size=(8 * m, 3)) @ T[:3, :3].T + T[:3, 3]
    return P[sdf(shape, T, P) < -1e-6][:m]


def seg_seg_oracle(p0: Arr, p1: Arr, q0: Arr, q1: Arr) -> float:
    """Distance between segments: the convex QP over (s, t) in [0, 1]^2 is minimised at the
    interior stationary point or on the boundary (an endpoint against the other segment)."""

    def pt_seg(p: Arr, a: Arr, b: Arr) -> float:
        ab = b - a
        den = float(ab @ ab)
        t = 0.0 if den == 0.0 else float(np.clip((p - a) @ ab / den, 0.0, 1.0))
        return float(np.linalg.norm(p - (a + t * ab)))

    cands = [pt_seg(p0, q0, q1), pt_seg(p1, q0, q1), pt_seg(q0, p0, p1), pt_seg(q1, p0, p1)]
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    M = np.array([[d1 @ d1, -(d1 @ d2)], [-(d1 @ d2), d2 @ d2]])
    if np.linalg.cond(M) < 1e10:
        s, t = np.linalg.solve(M, [-(d1 @ r), d2 @ r])
        if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
            cands.append(float(np.linalg.norm(p0 + s * d1 - q0 - t * d2)))
    return min(cands)


def capsule_ends(T: Arr, length: float) -> tuple[Arr, Arr]:
    return T[:3, 3] - 0.5 * length * T[:3, 2], T[:3, 3] + 0.5 * length * T[:3, 2]


def box_mesh(x: float, y: float, z: float) -> Mesh:
    return Mesh(
        np.array([[sx * x, sy * y, sz * z] for sx in (-0.5, 0.5) for sy in (-0.5, 0.5)
                  for sz in (-0.5, 0.5)])
    )


def prism_mesh(radius: float, length: float, sides: int) -> Mesh:
    a = 2.0 * np.pi * np.arange(sides) / sides
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    top = np.hstack([ring, np.full((sides, 1), 0.5 * length)])
    bottom = np.hstack([ring, np.full((sides, 1), -0.5 * length)])
    return Mesh(np.vstack([top, bottom]))


def random_shape(kind: int, rng: np.random.Generator) -> Shape:
    if kind == 0:
        return Sphere(rng.uniform(0.02, 0.3))
    if kind == 1:
        return Capsule(rng.uniform(0.02, 0.2), rng.choice([0.0, rng.uniform(0.01, 0.6)]))
    if kind == 2:
        return Box(*rng.uniform(0.03, 0.6, 3))
    if kind == 3:
        return Cylinder(rng.uniform(0.02, 0.3), rng.uniform(0.03, 0.6))
    pts = rng.normal(size=(int(rng.integers(5, 30)), 3)) * rng.uniform(0.05, 0.3, 3)
    return Mesh(pts)


NAMES = ["sphere", "capsule", "box", "cylinder", "mesh"]


def tol_for(A: Shape, B: Shape) -> float:
    return 1e-8 if isinstance(A, Cylinder) or isinstance(B, Cylinder) else 1e-9


def check_result(
    A: Shape, TA: Arr, B: Shape, TB: Arr, rng: np.random.Generator, tol: float
) -> float:
    """All properties of one query, against the oracles above. Returns d."""
    d, wa, wb, n = distance(A, TA, B, TB)
    assert np.all(np.isfinite([d, *wa, *wb, *n]))
    assert abs(np.linalg.norm(n) - 1.0) < 1e-12
    # conventions
    assert abs(d - n @ (wb - wa)) < tol
    assert abs(abs(d) - np.linalg.norm(wb - wa)) < tol
    # witnesses on the surfaces
    assert abs(sdf(A, TA, wa)[0]) < tol
    assert abs(sdf(B, TB, wb)[0]) < tol
    # the normal attains d, and no direction does better (duality)
    assert abs(g_dual(A, TA, B, TB, n)[0] - d) < tol
    assert sd_lower_bound(A, TA, B, TB) <= d + tol
    # sign consistency: d < 0 iff the shapes share interior points
    if d < -1e-4:
        starts = [wa, wb, 0.5 * (wa + wb), TA[:3, 3], TB[:3, 3]]
        assert shares_interior_point(A, TA, B, TB, starts)
    inside_b = sdf(B, TB, interior_samples(A, TA, rng))
    if inside_b.size and inside_b.min() < -tol:
        assert d < 0.0
    # gradient w.r.t. translating B: sd(t) is convex with subgradient n at 0
    eps = 1e-5
    t = rng.normal(size=3)
    t /= np.linalg.norm(t)
    TBp, TBm = TB.copy(), TB.copy()
    TBp[:3, 3] += eps * t
    TBm[:3, 3] -= eps * t
    dp = distance(A, TA, B, TBp)[0]
    dm = distance(A, TA, B, TBm)[0]
    assert dp >= d + eps * (n @ t) - 2 * tol
    assert dm >= d - eps * (n @ t) - 2 * tol
    slope = (dp - dm) / (2 * eps)
    if d > 10 * eps:  # separated: sd is C1, curvature at most 1/d
        assert abs(slope - n @ t) < eps / d + 4 * tol / eps
    elif dp + dm - 2 * d < 1e-3 * eps:  # locally linear along t (no kink crossed)
        assert abs(slope - n @ t) < 2e-3 + 4 * tol / eps
    return d


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ca", "ra", "cb", "rb", "expected"),
    [
        ((0, 0, 0), 0.1, (1, 0, 0), 0.2, 0.7),
        ((0.3, -0.2, 0.1), 0.5, (0.3, 0.4, 0.1), 0.5, -0.4),
        ((1, 2, 3), 0.1, tuple(np.array([1, 2, 3]) + 0.3 / 3**0.5), 0.2, 0.0),  # touching
    ],
)
def test_sphere_sphere(ca: Any, ra: float, cb: Any, rb: float, expected: float) -> None:
    d, wa, wb, n = distance(Sphere(ra), pose(t=ca), Sphere(rb), pose(t=cb))
    assert d == pytest.approx(expected, abs=1e-12)
    u = (np.array(cb) - np.array(ca)) / np.linalg.norm(np.array(cb) - np.array(ca))
    assert np.allclose(n, u, atol=1e-12)
    assert np.allclose(wa, np.array(ca) + ra * u, atol=1e-12)
    assert np.allclose(wb, np.array(cb) - rb * u, atol=1e-12)


def test_concentric_spheres_have_a_unit_normal() -> None:
    d, wa, wb, n = distance(Sphere(0.3), pose(t=(1, 1, 1)), Sphere(0.2), pose(t=(1, 1, 1)))
    assert d == pytest.approx(-0.5, abs=1e-15)
    assert np.all(np.isfinite(n)) and np.linalg.norm(n) == pytest.approx(1.0)
    assert d == pytest.approx(n @ (wb - wa), abs=1e-15)


@pytest.mark.parametrize(
    ("centre", "seg_pose"),
    [
        ((0.0, 0.5, 0.0), pose()),  # beside the segment
        ((0.1, 0.2, 0.9), pose()),  # beyond the upper cap
        ((0.3, -0.2, -1.5), pose(rot_axis(0, 0.4))),  # beyond the lower cap, tilted
        ((0.0, 0.0, 0.1), pose()),  # on the axis: coincident cores
        ((0.05, -0.02, 0.01), pose(rot_axis(1, 1.1), (0.02, 0, 0))),  # deep inside
    ],
)
@pytest.mark.parametrize("swap", [False, True])
def test_sphere_capsule(centre: Any, seg_pose: Arr, swap: bool) -> None:
    rs, rc, length = 0.15, 0.1, 1.2
    p = np.array(centre, dtype=float)
    a, b = capsule_ends(seg_pose, length)
    def dist2(s: float) -> float:
        return float(np.sum((p - (a + s * (b - a))) ** 2))

    res = minimize_scalar(dist2, bounds=(0, 1), method="bounded", options={"xatol": 1e-12})
    # (the bounded search never lands exactly on the ends)
    ref = np.sqrt(min(res.fun, dist2(0.0), dist2(1.0))) - rs - rc
    S, C = Sphere(rs), Capsule(rc, length)
    if swap:
        d, wa, wb, n = distance(C, seg_pose, S, pose(t=p))
    else:
        d, wa, wb, n = distance(S, pose(t=p), C, seg_pose)
    assert d == pytest.approx(ref, abs=1e-9)
    assert d == pytest.approx(n @ (wb - wa), abs=1e-12)
    assert abs(np.linalg.norm(wb - wa) - abs(d)) < 1e-12


SEGMENT_CASES = {
    "parallel offset": ((0, 0, -0.5), (0, 0, 0.5), (0.3, 0, -0.2), (0.3, 0, 0.9)),
    "collinear overlapping": ((0, 0, -0.5), (0, 0, 0.5), (0, 0, 0.2), (0, 0, 0.9)),
    "collinear disjoint": ((0, 0, -0.5), (0, 0, 0.5), (0, 0, 0.8), (0, 0, 1.9)),
    "antiparallel": ((0, 0, -0.5), (0, 0, 0.5), (0.2, 0.1, 0.3), (0.2, 0.1, -0.9)),
    "crossing": ((-0.5, 0, 0), (0.5, 0, 0), (0, -0.5, 0), (0, 0.5, 0)),
    "skew": ((-0.5, 0, 0), (0.5, 0, 0), (0.1, -0.5, 0.2), (0.1, 0.5, 0.25)),
    "T end on middle": ((-0.5, 0, 0), (0.5, 0, 0), (0.1, 0.3, 0), (0.1, 0.9, 0)),
    "endpoints nearest": ((0, 0, 0), (1, 0, 0), (1.2, 0.3, 0), (2.0, 1.3, 0.4)),
    "nearly parallel": ((0, 0, -0.5), (0, 0, 0.5), (0.1, 0, -0.5), (0.1 + 1e-9, 0, 0.5)),
    "point vs segment": ((0.2, 0.3, 0.1), (0.2, 0.3, 0.1), (0, 0, -1), (0, 0, 1)),
    "point vs point": ((0.2, 0.3, 0.1), (0.2, 0.3, 0.1), (0.5, 0, 0), (0.5, 0, 0)),
}


@pytest.mark.parametrize("case", list(SEGMENT_CASES))
def test_segment_segment(case: str) -> None:
    p0, p1, q0, q1 = (np.array(x, dtype=float) for x in SEGMENT_CASES[case])
    out_p, out_q = np.empty(3), np.empty(3)
    dist = segment_segment(p0, p1, q0, q1, out_p, out_q)
    assert dist == pytest.approx(seg_seg_oracle(p0, p1, q0, q1), abs=1e-12)
    assert dist == pytest.approx(np.linalg.norm(out_q - out_p), abs=1e-15)
    # the outputs lie on their segments
    for x, a, b in ((out_p, p0, p1), (out_q, q0, q1)):
        assert np.linalg.norm(np.cross(x - a, b - a)) < 1e-12
        assert (x - a) @ (b - x) >= -1e-15


def _capsule_from_ends(a: Arr, b: Arr, r: float) -> tuple[Capsule, Arr]:
    axis = b - a
    length = float(np.linalg.norm(axis))
    z = axis / length if length > 0 else np.array([0.0, 0.0, 1.0])
    x = np.cross(z, [1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    return Capsule(r, length), pose(np.column_stack([x, np.cross(z, x), z]), 0.5 * (a + b))


@pytest.mark.parametrize("case", list(SEGMENT_CASES))
def test_capsule_capsule_cases(case: str) -> None:
    p0, p1, q0, q1 = (np.array(x, dtype=float) for x in SEGMENT_CASES[case])
    A, TA = _capsule_from_ends(p0, p1, 0.05)
    B, TB = _capsule_from_ends(q0, q1, 0.08)
    d, wa, wb, n = distance(A, TA, B, TB)
    assert d == pytest.approx(seg_seg_oracle(p0, p1, q0, q1) - 0.13, abs=1e-9)
    assert d == pytest.approx(n @ (wb - wa), abs=1e-12)
    assert abs(np.linalg.norm(wb - wa) - abs(d)) < 1e-12
    assert abs(sdf(A, TA, wa)[0]) < 1e-12 and abs(sdf(B, TB, wb)[0]) < 1e-12
    if case == "crossing":  # coincident cores: normal perpendicular to both axes
        assert abs(n[2]) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    la=st.sampled_from([0.0, 1e-9, 0.3, 1.0]),
    lb=st.sampled_from([0.0, 0.5, 1.0]),
    layout=st.sampled_from(["random", "parallel", "coplanar", "collinear"]),
)
def test_capsule_capsule_random(seed: int, la: float, lb: float, layout: str) -> None:
    rng = np.random.default_rng(seed)
    c = rng.uniform(-0.3, 0.3, 3)
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    v = rng.normal(size=3)
    if layout == "parallel":
        v = u.copy()
    elif layout == "collinear":
        v, c = u.copy(), u * rng.uniform(-1, 1)
    elif layout == "coplanar":
        v, c[2] = np.array([v[0], v[1], 0.0]), 0.0
        u[2] = 0.0
        u /= np.linalg.norm(u)
    v /= np.linalg.norm(v)
    p0, p1 = -0.5 * la * u, 0.5 * la * u
    q0, q1 = c - 0.5 * lb * v, c + 0.5 * lb * v
    ra, rb = rng.uniform(0.01, 0.2, 2)
    A, TA = _capsule_from_ends(p0, p1, ra)
    B, TB = _capsule_from_ends(q0, q1, rb)
    d, wa, wb, n = distance(A, TA, B, TB)
    # nearly parallel segments may be off by length * 1e-8 (module docstring)
    assert d == pytest.approx(seg_seg_oracle(p0, p1, q0, q1) - ra - rb, abs=2e-8)
    assert d == pytest.approx(n @ (wb - wa), abs=1e-12)
    assert abs(sdf(A, TA, wa)[0]) < 1e-12 and abs(sdf(B, TB, wb)[0]) < 1e-12


BOX = Box(0.4, 0.6, 1.0)  # half extents 0.2, 0.3, 0.5


@pytest.mark.parametrize(
    ("centre", "expected_core"),
    [
        ((0.0, 0.0, 0.0), -0.2),  # centre: nearest face is x
        ((0.15, 0.1, -0.2), -0.05),  # inside, nearest face +x
        ((0.0, -0.25, 0.3), -0.05),  # inside, nearest face -y
        ((0.0, 0.0, 0.9), 0.4),  # outside a face
        ((0.5, 0.7, 0.0), 0.5),  # outside an edge: hypot(0.3, 0.4)
        ((-0.5, -0.7, 0.5 + 1.2), (0.09 + 0.16 + 1.44) ** 0.5),  # outside a corner
        ((0.2, 0.0, 0.0), 0.0),  # on a face
        ((0.2, 0.3, 0.5), 0.0),  # on a corner
    ],
)
@pytest.mark.parametrize("swap", [False, True])
def test_sphere_box(centre: Any, expected_core: float, swap: bool) -> None:
    R = rot_from_quat(np.array([0.9, 0.1, -0.3, 0.2]))
    T = pose(R, (0.3, -0.1, 0.7))
    c = T[:3, :3] @ np.array(centre, dtype=float) + T[:3, 3]
    r = 0.07
    if swap:
        d, wa, wb, n = distance(BOX, T, Sphere(r), pose(t=c))
    else:
        d, wa, wb, n = distance(Sphere(r), pose(t=c), BOX, T)
    assert d == pytest.approx(expected_core - r, abs=1e-12)
    assert sdf(BOX, T, c)[0] == pytest.approx(expected_core, abs=1e-12)  # oracle agrees
    assert d == pytest.approx(n @ (wb - wa), abs=1e-12)
    assert abs(np.linalg.norm(wb - wa) - abs(d)) < 1e-12
    box_w = wb if not swap else wa
    assert abs(sdf(BOX, T, box_w)[0]) < 1e-12


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.1, 0.3, 1.0]))
def test_point_box_random(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    half = rng.uniform(0.05, 0.5, 3)
    T = pose(rot_from_quat(rng.normal(size=4)), rng.uniform(-1, 1, 3))
    p = T[:3, 3] + rng.uniform(-scale, scale, 3)
    out = np.empty(3)
    d = point_box(p, T, np.append(half, 0.0), out)
    B = Box(*(2 * half))
    assert d == pytest.approx(sdf(B, T, p)[0], abs=1e-12)
    assert abs(sdf(B, T, out)[0]) < 1e-12
    assert abs(np.linalg.norm(p - out) - abs(d)) < 1e-12


def test_point_segment() -> None:
    out = np.empty(3)
    a, b = np.array([0.0, 0, 0]), np.array([1.0, 0, 0])
    assert point_segment(np.array([0.5, 0.2, 0]), a, b, out) == pytest.approx(0.2)
    assert np.allclose(out, [0.5, 0, 0])
    assert point_segment(np.array([2.0, 0, 0]), a, b, out) == pytest.approx(1.0)
    assert np.allclose(out, b)
    assert point_segment(np.array([0.0, 3, 4]), a, a, out) == pytest.approx(5.0)


# --------------------------------------------------------------------------------------------
# Every pair against the support-function duality (hypothesis)
# --------------------------------------------------------------------------------------------


def random_pose(rng: np.random.Generator, mode: str, spread: float) -> Arr:
    if mode == "identity":
        R = np.eye(3)
    elif mode == "axis":
        R = rot_axis(int(rng.integers(3)), float(rng.choice([0.0, np.pi / 2, np.pi])))
    else:
        R = rot_from_quat(rng.normal(size=4))
    return pose(R, rng.uniform(-spread, spread, 3))


PAIRS = [(a, b) for a in range(5) for b in range(5)]


@pytest.mark.parametrize(("ka", "kb"), PAIRS, ids=[f"{NAMES[a]}-{NAMES[b]}" for a, b in PAIRS])
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    spread=st.sampled_from([0.0, 0.05, 0.2, 0.6]),
    mode=st.sampled_from(["random", "random", "axis", "identity"]),
)
def test_pair_against_duality(ka: int, kb: int, seed: int, spread: float, mode: str) -> None:
    rng = np.random.default_rng(seed)
    A, B = random_shape(ka, rng), random_shape(kb, rng)
    TA = random_pose(rng, mode, 0.05)
    TB = random_pose(rng, mode, spread)
    check_result(A, TA, B, TB, rng, tol_for(A, B))


def test_pairs_cover_both_signs() -> None:
    """The generator above produces separated and penetrating cases for every pair."""
    for ka, kb in PAIRS:
        rng = np.random.default_rng(ka * 5 + kb)
        signs = set()
        for spread in (0.05, 0.6) * 10:
            A, B = random_shape(ka, rng), random_shape(kb, rng)
            TA = random_pose(rng, "random", 0.05)
            d = distance(A, TA, B, random_pose(rng, "random", spread))[0]
            signs.add(d > 0)
        assert signs == {True, False}, (NAMES[ka], NAMES[kb])


# --------------------------------------------------------------------------------------------
# Analytic equivalences and special configurations
# --------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0.1, 0.4, 1.0]))
def test_box_equals_mesh_of_its_corners(seed: int, spread: float) -> None:
    rng = np.random.default_rng(seed)
    dims = rng.uniform(0.05, 0.8, 3)
    other = random_shape(int(rng.integers(5)), rng)
    TA = random_pose(rng, "random", 0.1)
    TB = random_pose(rng, "random", spread)
    d_box = distance(Box(*dims), TA, other, TB)[0]
    d_mesh = distance(box_mesh(*dims), TA, other, TB)[0]
    assert d_box == pytest.approx(d_mesh, abs=tol_for(other, other))
    d_box = distance(other, TB, Box(*dims), TA)[0]
    d_mesh = distance(other, TB, box_mesh(*dims), TA)[0]
    assert d_box == pytest.approx(d_mesh, abs=tol_for(other, other))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0.1, 0.3, 0.8]))
def test_cylinder_against_inscribed_prism(seed: int, spread: float) -> None:
    rng = np.random.default_rng(seed)
    r, length, sides = rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.6), 96
    sagitta = r * (1.0 - np.cos(np.pi / sides))
    other = random_shape(int(rng.choice([0, 1, 2, 4])), rng)
    TA = random_pose(rng, "random", 0.05)
    TB = random_pose(rng, "random", spread)
    d_cyl = distance(Cylinder(r, length), TA, other, TB)[0]
    d_prism = distance(prism_mesh(r, length, sides), TA, other, TB)[0]
    # prism inside cylinder inside (prism + ball(sagitta))
    assert d_cyl - 1e-8 <= d_prism <= d_cyl + sagitta + 1e-8


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    offset=st.sampled_from(["random", "zero", "axis"]),
)
def test_axis_aligned_boxes(seed: int, offset: str) -> None:
    rng = np.random.default_rng(seed)
    ha, hb = rng.uniform(0.05, 0.5, 3), rng.uniform(0.05, 0.5, 3)
    delta = rng.uniform(-0.8, 0.8, 3)
    if offset == "zero":
        delta[:] = 0.0
    elif offset == "axis":
        delta[[i for i in range(3) if i != rng.integers(3)]] = 0.0
    ca = rng.uniform(-1, 1, 3)
    excess = np.abs(delta) - (ha + hb)
    if np.all(excess < 0):
        expected = float(np.max(excess))  # penetration: the smallest per-axis overlap
    else:
        expected = float(np.linalg.norm(np.maximum(excess, 0.0)))
    d, wa, wb, n = distance(Box(*(2 * ha)), pose(t=ca), Box(*(2 * hb)), pose(t=ca + delta))
    assert d == pytest.approx(expected, abs=1e-10)
    assert d == pytest.approx(n @ (wb - wa), abs=1e-10)


IDENTICAL = [
    (Sphere(0.2), -0.4),
    (Capsule(0.1, 0.5), -0.2),
    (Capsule(0.1, 0.0), -0.2),
    (Box(0.3, 0.5, 0.8), -0.3),
    (Cylinder(0.1, 0.5), -0.2),
    (Cylinder(0.4, 0.3), -0.3),
    (box_mesh(0.3, 0.5, 0.8), -0.3),
]


@pytest.mark.parametrize(("shape", "expected"), IDENTICAL)
def test_identical_shapes_at_the_same_pose(shape: Shape, expected: float) -> None:
    """A - A is A scaled by 2 about the origin: the depth is the shape's minimal width."""
    for T in (pose(), pose(rot_from_quat(np.array([0.3, -0.5, 0.2, 0.7])), (0.2, -1, 3))):
        d, wa, wb, n = distance(shape, T, shape, T)
        assert d == pytest.approx(expected, abs=1e-9)
        assert d == pytest.approx(n @ (wb - wa), abs=1e-9)
        assert abs(sdf(shape, T, wa)[0]) < 1e-9 and abs(sdf(shape, T, wb)[0]) < 1e-9


def test_mesh_inside_mesh_is_penetration() -> None:
    rng = np.random.default_rng(7)
    outer = box_mesh(1.0, 1.2, 1.4)  # contains the ball of radius 0.5 about its centre
    inner = Mesh(rng.normal(size=(20, 3)) * 0.05)
    R_in = float(np.max(np.linalg.norm(inner.vertices(), axis=1)))
    for k in range(10):
        T_out = random_pose(rng, "random", 0.5)
        T_in = T_out.copy()
        T_in[:3, :3] = rot_from_quat(rng.normal(size=4))
        T_in[:3, 3] += rng.uniform(-0.1, 0.1, 3)
        shift = float(np.linalg.norm(T_in[:3, 3] - T_out[:3, 3]))
        for A, TA, B, TB in ((inner, T_in, outer, T_out), (outer, T_out, inner, T_in)):
            d = check_result(A, TA, B, TB, rng, 1e-9)
            assert d <= -(0.5 - R_in - shift)
            assert d >= -(0.7 + R_in + shift), k


def test_touching_configurations() -> None:
    T = pose()
    # face-to-face boxes, sphere on a box corner, cylinder standing on a box
    cases = [
        (Box(1, 1, 1), T, Box(1, 1, 1), pose(t=(1.0, 0.3, -0.2))),
        (Box(1, 1, 1), T, Sphere(0.2), pose(t=0.5 + 0.2 / 3**0.5 * np.ones(3))),
        (Box(1, 1, 1), T, Cylinder(0.2, 0.4), pose(t=(0.1, 0.2, 0.7))),
        (Box(1, 1, 1), T, box_mesh(0.4, 0.4, 0.4), pose(rot_axis(2, 0.3), (0, 0, 0.7))),
        (Capsule(0.1, 0.6), T, Box(1, 1, 1), pose(t=(0.6, 0, 0.1))),
    ]
    rng = np.random.default_rng(3)
    for A, TA, B, TB in cases:
        d = check_result(A, TA, B, TB, rng, 1e-8)
        assert abs(d) < 1e-8
        d = check_result(B, TB, A, TA, rng, 1e-8)
        assert abs(d) < 1e-8


def test_extreme_scales_stay_finite() -> None:
    rng = np.random.default_rng(11)
    for scale, spread in ((1e-3, 1e-3), (10.0, 20.0), (0.1, 1e3)):
        for ka, kb in PAIRS:
            A = random_shape(ka, rng)
            B = random_shape(kb, rng)
            A, B = _scaled(A, scale), _scaled(B, scale)
            TA = random_pose(rng, "random", 0.0)
            TB = random_pose(rng, "random", spread)
            d, wa, wb, n = distance(A, TA, B, TB)
            assert np.all(np.isfinite([d, *wa, *wb, *n]))
            assert np.linalg.norm(n) == pytest.approx(1.0)
            assert d == pytest.approx(n @ (wb - wa), abs=1e-9 * max(scale, spread))
            lb = sd_lower_bound(A, TA, B, TB)
            assert lb <= d + 1e-8 * max(scale, spread)
            assert abs(g_dual(A, TA, B, TB, n)[0] - d) <= 1e-8 * max(scale, spread)


def _scaled(shape: Shape, s: float) -> Shape:
    if isinstance(shape, Sphere):
        return Sphere(shape.radius * s)
    if isinstance(shape, Capsule):
        return Capsule(shape.radius * s, shape.length * s)
    if isinstance(shape, Box):
        return Box(shape.x * s, shape.y * s, shape.z * s)
    if isinstance(shape, Cylinder):
        return Cylinder(shape.radius * s, shape.length * s)
    return Mesh(shape.vertices() * s)


# --------------------------------------------------------------------------------------------
# Use from compiled code and the Python wrapper
# --------------------------------------------------------------------------------------------


# not cached: numba checks a cached function against its own file only, and this one compiles
# the package's shape_distance into itself (the package's kernel_cache stamps cover only the
# package's folders). Cached, it kept an earlier compilation of shape_distance across package
# changes and differed from the package's own in the last bits.
@njit(cache=False)
def _in_njit(ka, pa, Ta, va, kb, pb, Tb, vb, out):  # type: ignore[no-untyped-def]
    wa = np.empty(3)
    wb = np.empty(3)
    n = np.empty(3)
    out[0] = shape_distance(ka, pa, Ta, va, kb, pb, Tb, vb, wa, wb, n)
    out[1:4] = wa
    out[4:7] = wb
    out[7:10] = n


def test_shape_distance_from_njit_code() -> None:
    rng = np.random.default_rng(5)
    shapes = [random_shape(k, rng) for k in range(5)]
    poses = [random_pose(rng, "random", 0.5) for _ in shapes]
    out = np.empty(10)
    for a, Ta in zip(shapes, poses):
        for b, Tb in zip(shapes, poses):
            _in_njit(
                a.kind, a.params(), Ta, a.vertices(), b.kind, b.params(), Tb, b.vertices(), out
            )
            d, wa, wb, n = distance(a, Ta, b, Tb)
            assert np.array_equal(out, np.concatenate([[d], wa, wb, n]))


def test_wrapper_rejects_bad_input() -> None:
    with pytest.raises(ShapeError):
        distance(Sphere(1.0), np.eye(3), Sphere(1.0), np.eye(4))
    with pytest.raises(ShapeError):
        distance(Sphere(1.0), np.full((4, 4), np.nan), Sphere(1.0), np.eye(4))
    with pytest.raises(ShapeError):
        distance("sphere", np.eye(4), Sphere(1.0), np.eye(4))  # type: ignore[arg-type]
