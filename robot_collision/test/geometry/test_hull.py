"""Hull adjacency and the hill-climbing support of large hulls vs a brute-force scan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

from robot_collision import Mesh, MeshError
from robot_collision.geometry.distance import distance
from robot_collision.geometry.gjk import _mesh_support
from robot_collision.geometry.hull import (
    SUPPORT_BLOCK_MIN_VERTICES,
    convex_hull,
    support_block,
)


def _cloud(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "sphere":  # every point on the hull
        p = rng.normal(size=(n, 3))
        return p / np.linalg.norm(p, axis=1, keepdims=True) * rng.uniform(0.05, 0.5)
    if kind == "prism":  # large coplanar caps (ties along the axis)
        a = 2 * np.pi * np.arange(n // 2) / (n // 2)
        ring = np.stack([np.cos(a), np.sin(a)], axis=1) * 0.2
        return np.vstack([np.c_[ring, np.full(len(a), 0.1)], np.c_[ring, np.full(len(a), -0.1)]])
    if kind == "grid":  # box faces sampled on a grid: many coplanar points
        g = np.linspace(-0.1, 0.1, 7)
        X, Y, Z = np.meshgrid(g, g, g)
        p = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
        return p[np.max(np.abs(p), axis=1) > 0.099]
    return rng.uniform(-0.3, 0.3, size=(n, 3))  # cube of random points


@pytest.mark.parametrize("kind", ["sphere", "prism", "grid", "cube"])
def test_hull_neighbours_are_the_hull_edges(kind: str) -> None:
    pts = _cloud(np.random.default_rng(1), kind, 300)
    verts, nbrs = convex_hull(pts, "test")
    ref = ConvexHull(pts)
    assert len(verts) == len(ref.vertices)
    for i, nb in enumerate(nbrs):
        assert len(nb) >= 3 and i not in nb
        for j in nb:
            assert i in nbrs[j]  # symmetric


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["sphere", "prism", "grid", "cube"]),
    n=st.sampled_from([40, 200, 1500]),
)
def test_climbing_support_equals_scan(seed: int, kind: str, n: int) -> None:
    rng = np.random.default_rng(seed)
    verts, nbrs = convex_hull(_cloud(rng, kind, n), "test")
    block = support_block(verts, nbrs)
    k = len(verts)
    assert (block.shape[0] > k) == (k > SUPPORT_BLOCK_MIN_VERTICES)
    for _ in range(50):
        d = rng.normal(size=3)
        if rng.random() < 0.3:  # nearly along an axis: ties over flat faces
            d[rng.integers(3)] *= 1e-9
        hint = int(rng.integers(-1, k))
        x, y, z, i = _mesh_support(block, d[0], d[1], d[2], hint)
        best = np.max(verts @ d)
        assert 0 <= i < k and np.array_equal(verts[i], [x, y, z])
        assert verts[i] @ d >= best - 1e-15 * max(1.0, abs(best))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0.05, 0.2, 0.6]))
def test_distance_same_with_block_and_plain_vertices(seed: int, spread: float) -> None:
    """A mesh whose kernel data is a support block gives the distances of the plain scan."""
    rng = np.random.default_rng(seed)
    a = Mesh(_cloud(rng, "sphere", 400))
    b = Mesh(_cloud(rng, "cube", 300))
    assert a.kernel_vertices().shape[0] > len(a.vertices())

    class Plain(Mesh):
        def kernel_vertices(self) -> np.ndarray:
            return self.hull

    pa, pb = Plain(a.hull), Plain(b.hull)
    for _ in range(5):
        Ta, Tb = np.eye(4), np.eye(4)
        Q, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        Tb[:3, :3] = Q * np.sign(np.linalg.det(Q))
        Tb[:3, 3] = rng.normal(size=3) * spread
        d_block = distance(a, Ta, b, Tb)[0]
        d_plain = distance(pa, Ta, pb, Tb)[0]
        assert d_block == pytest.approx(d_plain, abs=1e-9)


def test_absurd_coordinates_rejected() -> None:
    with pytest.raises(MeshError, match="units"):
        Mesh(np.array([[0, 0, 0], [1e10, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float))


def test_extreme_vertices_in_chunks_equal_the_full_product() -> None:
    """The chunked cold-start search (bounded memory) picks the same vertex as the (C, k)
    product it replaces, first index on ties (duplicated rows across chunk borders)."""
    from robot_collision.geometry.hull import _extreme_vertices, start_directions

    rng = np.random.default_rng(1)
    V = rng.normal(size=(5000, 3))
    V[4000:] = V[:1000]  # ties across chunks
    D = start_directions()
    expected = np.argmax(D @ V.T, axis=1)
    for chunk in (1, 7, 1000, 4096, 10_000):
        np.testing.assert_array_equal(_extreme_vertices(D, V, chunk), expected)
