"""Sphere covers: every point of a shape lies in the union of its outer spheres, every inner
sphere lies in the shape. Oracles: scipy's Delaunay/half-space tests of the hull, closed-form
membership for capsules and cylinders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull, Delaunay

from robot_collision import Box, Capsule, Cylinder, ShapeError, Sphere
from robot_collision.geometry.sphere_cover import hull_cover, sphere_cover


def _in_union(P: np.ndarray, spheres: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(P[:, None, :] - spheres[None, :, :3], axis=2)
    return (d <= spheres[None, :, 3]).any(axis=1)


def _hull_samples(V: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random points in the hull of V, its vertices and points on its faces."""
    lo, hi = V.min(axis=0), V.max(axis=0)
    P = rng.uniform(lo, hi, (n, 3))
    P = P[Delaunay(V).find_simplex(P) >= 0]
    hull = ConvexHull(V)
    tri = V[hull.simplices]
    w = rng.dirichlet(np.ones(3), size=len(tri))
    faces = np.einsum("tk,tkj->tj", w, tri)
    return np.concatenate([P, V, faces])


def _inner_inside_hull(V: np.ndarray, inner: np.ndarray) -> bool:
    eq = ConvexHull(V).equations
    return bool(np.all(inner[:, :3] @ eq[:, :3].T + eq[None, :, 3] + inner[:, 3:4] <= 1e-12))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 60),
       scale=st.tuples(st.floats(0.01, 0.5), st.floats(0.01, 0.5), st.floats(0.01, 0.5)),
       cells=st.integers(1, 40))
def test_hull_cover_contains_the_hull(seed: int, n: int, scale: tuple[float, float, float],
                                      cells: int) -> None:
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n, 3)) * np.asarray(scale)
    try:
        ConvexHull(V)
    except Exception:  # degenerate sample
        return
    cov = hull_cover(V, cells)
    assert _in_union(_hull_samples(V, rng, 4000), cov.outer).all()
    assert _inner_inside_hull(V, cov.inner)


@pytest.mark.mbm
def test_panda_mesh_covers() -> None:
    import mbm

    from robot_collision import RobotModel

    robot = RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf")
    rng = np.random.default_rng(3)
    for name in robot.link_names:
        for shape, _ in robot.collision_geometry(name):
            cov = sphere_cover(shape)
            V = shape.vertices()
            assert _in_union(_hull_samples(V, rng, 20000), cov.outer).all(), name
            assert len(cov.inner) > 0 and _inner_inside_hull(V, cov.inner), name
            # tighter than the shape's bounding sphere
            assert cov.outer[:, 3].max() < 0.8 * shape.params()[3]


@settings(max_examples=40, deadline=None)
@given(r=st.floats(0.005, 0.3), length=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1))
def test_capsule_cover(r: float, length: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cov = sphere_cover(Capsule(r, length))
    # points in the capsule: a point on the segment plus an offset of length <= r
    t = rng.uniform(-length / 2, length / 2, 3000)
    u = rng.normal(size=(3000, 3))
    u *= (r * rng.uniform(0, 1, 3000) ** (1 / 3) / np.linalg.norm(u, axis=1))[:, None]
    P = np.c_[np.zeros(3000), np.zeros(3000), t] + u
    assert _in_union(P, cov.outer).all()
    # inner spheres: centres on the segment, radius <= r
    assert np.all(np.abs(cov.inner[:, :2]) == 0) and np.all(np.abs(cov.inner[:, 2]) <= length / 2)
    assert np.all(cov.inner[:, 3] <= r)


@settings(max_examples=30, deadline=None)
@given(r=st.floats(0.005, 0.3), length=st.floats(0.005, 1.0), seed=st.integers(0, 2**31 - 1))
def test_cylinder_cover(r: float, length: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cov = sphere_cover(Cylinder(r, length))
    n = 4000
    a = rng.uniform(0, 2 * np.pi, n)
    rad = r * np.sqrt(rng.uniform(0, 1, n))
    rad[: n // 4] = r  # on the side
    P = np.c_[rad * np.cos(a), rad * np.sin(a), rng.uniform(-length / 2, length / 2, n)]
    P[n // 4 : n // 2, 2] = np.sign(P[n // 4 : n // 2, 2]) * length / 2  # on the caps
    assert _in_union(P, cov.outer).all()
    inner = cov.inner
    assert np.all(np.hypot(inner[:, 0], inner[:, 1]) + inner[:, 3] <= r + 1e-12)
    assert np.all(np.abs(inner[:, 2]) + inner[:, 3] <= length / 2 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(x=st.floats(0.005, 1.0), y=st.floats(0.005, 1.0), z=st.floats(0.005, 1.0),
       seed=st.integers(0, 2**31 - 1))
def test_box_cover(x: float, y: float, z: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cov = sphere_cover(Box(x, y, z))
    h = np.array([x, y, z]) / 2
    P = rng.uniform(-h, h, (4000, 3))
    P[:1000, 0] = np.sign(P[:1000, 0]) * h[0]
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
    assert _in_union(np.concatenate([P, corners]), cov.outer).all()
    assert np.all(np.abs(cov.inner[:, :3]) + cov.inner[:, 3:4] <= h + 1e-12)


def test_sphere_cover_is_the_sphere() -> None:
    cov = sphere_cover(Sphere(0.2))
    assert cov.outer.shape == (1, 4) and cov.outer[0, 3] >= 0.2 >= cov.inner[0, 3]


def test_flat_vertices_have_no_cover() -> None:
    with pytest.raises(ShapeError, match="spans no volume"):
        hull_cover(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]))
    with pytest.raises(ShapeError, match="at least 4"):
        hull_cover(np.zeros((3, 3)))
