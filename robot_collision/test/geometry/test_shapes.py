"""Shape primitives: enclosing boxes against dense samples of each shape's surface."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import Box, Capsule, Cylinder, Mesh, Sphere
from robot_collision.geometry.shapes import Shape


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _surface(shape: Shape, rng: np.random.Generator, n: int = 4000) -> np.ndarray:
    """Points on the shape's surface (local frame), sampled from its definition."""
    if isinstance(shape, Sphere):
        return shape.radius * _unit(rng, n)
    if isinstance(shape, Capsule):
        t = rng.uniform(-0.5, 0.5, n) * shape.length
        return np.c_[np.zeros(n), np.zeros(n), t] + shape.radius * _unit(rng, n)
    if isinstance(shape, Cylinder):
        a = rng.uniform(0, 2 * np.pi, n)
        r = shape.radius * np.sqrt(rng.uniform(0, 1, n))
        r[: n // 2] = shape.radius  # side wall, then caps
        z = rng.uniform(-0.5, 0.5, n) * shape.length
        z[n // 2 :] = np.sign(z[n // 2 :]) * 0.5 * shape.length
        return np.c_[r * np.cos(a), r * np.sin(a), z]
    if isinstance(shape, Box):
        half = 0.5 * np.array([shape.x, shape.y, shape.z])
        return rng.uniform(-1, 1, (n, 3)) * half * (rng.integers(0, 2, (n, 3)) * 0 + 1)
    if isinstance(shape, Mesh):
        return shape.vertices()
    raise AssertionError(type(shape))


SHAPES = [
    Sphere(0.3),
    Capsule(0.1, 0.5),
    Capsule(0.2, 0.0),
    Cylinder(0.15, 0.4),
    Box(0.2, 0.5, 0.1),
    Mesh(np.array([[0.1, 0.2, 0.3], [0.5, 0.2, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.9]])),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: type(s).__name__)
def test_local_box_encloses_the_shape(shape: Shape) -> None:
    rng = np.random.default_rng(3)
    centre, half = shape.local_box()
    pts = _surface(shape, rng)
    assert np.all(np.abs(pts - centre) <= half + 1e-12)
    # and is tight: the samples reach each face to within a few percent of the extent
    reach = np.abs(pts - centre).max(axis=0)
    assert np.all(reach >= 0.9 * half)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: type(s).__name__)
def test_bounding_sphere_encloses_the_shape(shape: Shape) -> None:
    """``bounding_sphere`` holds every surface sample and is no larger than the sphere about
    the origin; for the mesh (far from its origin) it is the brute-force sphere about the
    samples' box centre, far smaller than that."""
    pts = _surface(shape, np.random.default_rng(4))
    centre, r = shape.bounding_sphere()
    assert np.all(np.linalg.norm(pts - centre, axis=1) <= r + 1e-12)
    assert r <= shape.bounding_radius() + 1e-12
    if isinstance(shape, Mesh):
        box_c = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
        np.testing.assert_allclose(centre, box_c, atol=1e-12)
        assert r == pytest.approx(np.linalg.norm(pts - box_c, axis=1).max(), abs=1e-12)
        assert r < 0.6 * shape.bounding_radius()


def test_box_local_box_is_exact() -> None:
    centre, half = Box(0.2, 0.5, 0.1).local_box()
    np.testing.assert_array_equal(centre, 0.0)
    np.testing.assert_allclose(half, [0.1, 0.25, 0.05])


def test_mesh_bounds_against_its_source_points() -> None:
    """A mesh's box, enclosing sphere and bounding radius (derived once, at construction)
    against numpy on the points it was made from: the hull's extremes are source points, and
    interior points change nothing. Callers that modify the returned arrays change nothing."""
    rng = np.random.default_rng(5)
    outer = _unit(rng, 300) * rng.uniform(0.05, 0.4, 3) + [0.3, -0.2, 0.7]
    inner = 0.5 * (outer - outer.mean(axis=0)) + outer.mean(axis=0)
    mesh = Mesh(np.vstack([outer, inner]))
    lo, hi = outer.min(axis=0), outer.max(axis=0)
    for _ in range(2):
        centre, half = mesh.local_box()
        np.testing.assert_allclose(centre, 0.5 * (lo + hi), atol=1e-12)
        np.testing.assert_allclose(half, 0.5 * (hi - lo), atol=1e-12)
        p = mesh.params()
        np.testing.assert_allclose(p[:3], 0.5 * (lo + hi), atol=1e-12)
        assert p[3] == pytest.approx(np.linalg.norm(outer - 0.5 * (lo + hi), axis=1).max(),
                                     abs=1e-12)
        assert mesh.bounding_radius() == pytest.approx(np.linalg.norm(outer, axis=1).max(),
                                                       abs=1e-12)
        centre += 1.0
        half *= 0.0
        p[:] = 0.0
