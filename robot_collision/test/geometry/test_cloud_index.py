"""cloud_index: the point-cloud index and its queries against every shape kind.

Oracle: brute force over every point of the cloud -- scipy's cKDTree for sphere queries and,
for every other kind, the pair kernel ``shape_distance`` (itself checked against coal in
test_distance.py) between the shape and a ball at each point, minimised in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree

from robot_collision import Box, Capsule, Cylinder, Mesh, Shape, Sphere
from robot_collision.errors import ShapeError
from robot_collision.geometry.cloud_index import (
    I_CELLS,
    I_NODES,
    I_NX,
    I_NY,
    I_NZ,
    I_P,
    LEAF,
    CloudIndex,
    cloud_distance,
    cloud_shape_hits,
    cloud_sphere_exact,
    cloud_sphere_hits,
    cloud_sphere_maybe,
    rigid_inverse_mul,
    shape_aux,
    voxel_downsample,
)
from robot_collision.geometry.distance import shape_distance
from robot_collision.geometry.shapes import SPHERE
from robot_collision.geometry.transforms import make_pose, rot_x, rot_y, rot_z

SHAPES: list[Shape] = [
    Sphere(0.07),
    Capsule(0.04, 0.2),
    Box(0.3, 0.1, 0.16),
    Cylinder(0.06, 0.18),
    Mesh(np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.15, 0], [0.05, 0.04, 0.22]]) - 0.06),
]


def surface_cloud(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points on the faces of two boxes plus scattered points (m)."""
    parts = []
    for c, h in (([0.1, 0.0, 0.0], [0.2, 0.15, 0.1]), ([-0.3, 0.25, 0.2], [0.1, 0.1, 0.25])):
        u = rng.uniform(-1, 1, (n // 3, 3))
        ax = rng.integers(0, 3, n // 3)
        u[np.arange(n // 3), ax] = np.sign(u[np.arange(n // 3), ax])
        parts.append(np.asarray(c) + u * np.asarray(h))
    parts.append(rng.uniform(-0.5, 0.5, (n - 2 * (n // 3), 3)))
    return np.concatenate(parts)


def random_pose(rng: np.random.Generator, spread: float = 0.3) -> np.ndarray:
    a = rng.uniform(-np.pi, np.pi, 3)
    return make_pose(rot_z(a[0]) @ rot_y(a[1]) @ rot_x(a[2]), rng.uniform(-spread, spread, 3))


def brute_distance(shape: Shape, pose: np.ndarray, P_common: np.ndarray, r: float) -> np.ndarray:
    """Signed distance of ``shape`` to a ball of radius ``r`` at every point (common frame)."""
    out = np.empty(len(P_common))
    ball = np.array([r, 0.0, 0.0, 0.0])
    params = np.ascontiguousarray(shape.params())
    verts = np.ascontiguousarray(shape.vertices()).reshape(-1, 3)
    wa, wb, n = np.empty(3), np.empty(3), np.empty(3)
    for i, p in enumerate(P_common):
        Tp = make_pose(np.eye(3), p)
        out[i] = shape_distance(int(shape.kind), params, pose, verts, SPHERE, ball, Tp,
                                np.zeros((0, 3)), wa, wb, n)
    return out


def test_index_holds_every_point_once_in_morton_order() -> None:
    rng = np.random.default_rng(0)
    P = rng.uniform(-1, 1, (5000, 3))
    idx = CloudIndex(P, quantum=0.001)
    assert idx.num_points == len(P)
    np.testing.assert_array_equal(np.sort(idx.order), np.arange(len(P)))
    np.testing.assert_array_equal(idx.points, P[idx.order])
    # leaves' boxes contain their points; every parent box contains its children
    nodes = idx.F[int(idx.I[I_NODES]):].reshape(-1, 6)
    Pn = int(idx.I[I_P])
    for leaf in range(Pn):
        pts = idx.points[leaf * LEAF: (leaf + 1) * LEAF]
        box = nodes[Pn - 1 + leaf]
        if len(pts):
            np.testing.assert_array_equal(box[:3], pts.min(axis=0))
            np.testing.assert_array_equal(box[3:], pts.max(axis=0))
        else:
            assert box[0] > box[3]
    for i in range(Pn - 1):
        for c in (2 * i + 1, 2 * i + 2):
            if nodes[c, 0] <= nodes[c, 3]:
                assert np.all(nodes[i, :3] <= nodes[c, :3]) and np.all(nodes[i, 3:] >= nodes[c, 3:])


def test_grid_bound_never_exceeds_the_distance_to_the_nearest_point() -> None:
    """For random positions, h * sqrt(e2) of the cell <= the true distance (cKDTree)."""
    rng = np.random.default_rng(1)
    P = surface_cloud(rng, 6000)
    idx = CloudIndex(P, cell=0.02)
    nx, ny, nz = (int(idx.I[k]) for k in (I_NX, I_NY, I_NZ))
    words = idx.I[int(idx.I[I_CELLS]): int(idx.I[I_CELLS]) + nx * ny * nz]
    origin, h = idx.F[0:3], idx.cell_size
    X = rng.uniform(P.min(0) - 0.05, P.max(0) + 0.05, (20000, 3))
    c = np.floor((X - origin) / h).astype(int)
    inside = np.all((c >= 0) & (c < [nx, ny, nz]), axis=1)
    X, c = X[inside], c[inside]
    w = words[(c[:, 2] * ny + c[:, 1]) * nx + c[:, 0]]
    bound = h * np.sqrt((w >> 32).astype(float))
    true = cKDTree(P).query(X)[0]
    assert np.all(bound <= true + 1e-12)
    # and it is useful: far from the points it is within three cells of the truth
    far = true > 0.1
    assert np.all(true[far] - bound[far] < 3 * h * np.sqrt(3))


@pytest.mark.parametrize("radius", [0.0, 0.004])
@pytest.mark.parametrize("kind", ["surface", "uniform"])
def test_sphere_queries_match_brute_force(radius: float, kind: str) -> None:
    rng = np.random.default_rng(2)
    P = surface_cloud(rng, 9000) if kind == "surface" else rng.uniform(-0.5, 0.5, (9000, 3))
    idx = CloudIndex(P, radius)
    X = rng.uniform(P.min(0) - 0.1, P.max(0) + 0.1, (20000, 3))
    R = rng.uniform(0.0, 0.1, len(X))
    d = cKDTree(P).query(X)[0] - radius
    clear = np.abs(d - R) > 1e-12  # exact ties are rounding-dependent
    got = np.array([cloud_sphere_hits(idx.F, idx.I, 0, 0, x, y, z, r)
                    for (x, y, z), r in zip(X, R)])
    exact = np.array([cloud_sphere_exact(idx.F, idx.I, 0, 0, x, y, z, r)
                      for (x, y, z), r in zip(X, R)])
    maybe = np.array([cloud_sphere_maybe(idx.F, idx.I, 0, 0, x, y, z, r)
                      for (x, y, z), r in zip(X, R)])
    want = d < R
    np.testing.assert_array_equal(got[clear], want[clear])
    np.testing.assert_array_equal(exact[clear], want[clear])
    decided = (maybe >= 0) & clear
    np.testing.assert_array_equal(maybe[decided] == 1, want[decided])


def _local_pose(Tc: np.ndarray, T: np.ndarray) -> np.ndarray:
    out = np.empty((4, 4))
    rigid_inverse_mul(Tc, T, out)
    return out


def _aux(shape: Shape) -> np.ndarray:
    aux = np.empty(7)
    verts = np.ascontiguousarray(shape.vertices()).reshape(-1, 3)
    shape_aux(int(shape.kind), shape.params(), verts, aux)
    return aux


@pytest.mark.parametrize("k", range(len(SHAPES)))
@pytest.mark.parametrize("radius", [0.0, 0.01])
def test_distance_to_every_shape_kind_matches_brute_force(k: int, radius: float) -> None:
    shape = SHAPES[k]
    rng = np.random.default_rng(10 + k)
    P = surface_cloud(rng, 1500)
    idx = CloudIndex(P, radius)
    verts = np.ascontiguousarray(shape.vertices()).reshape(-1, 3)
    for trial in range(12):
        Tc = random_pose(rng, 0.1)  # the cloud's pose
        T = random_pose(rng, 0.4)  # the shape's pose, same common frame
        Pc = P @ Tc[:3, :3].T + Tc[:3, 3]
        ref = brute_distance(shape, T, Pc, radius)
        i = int(np.argmin(ref))
        wa, wb, n = np.empty(3), np.empty(3), np.empty(3)
        d = cloud_distance(int(shape.kind), shape.params(), T, verts, idx.F, idx.I, 0, 0, Tc,
                           np.inf, wa, wb, n)
        assert abs(d - ref[i]) < 1e-9, (trial, d, ref[i])
        # witness on the shape and on the nearest point's ball, normal from shape to point
        assert abs(np.linalg.norm(wa - wb) - abs(d)) < 1e-9
        assert abs(float(n @ (wb - wa)) - d) < 1e-9
        near = np.flatnonzero(ref < ref[i] + 1e-9)
        assert np.min(np.abs(np.linalg.norm(Pc[near] - wb, axis=1) - radius)) < 1e-9
        # a bound below the distance finds nothing; just above finds it
        assert cloud_distance(int(shape.kind), shape.params(), T, verts, idx.F, idx.I, 0, 0, Tc,
                              ref[i] - 1e-6, wa, wb, n) == np.inf
        assert abs(cloud_distance(int(shape.kind), shape.params(), T, verts, idx.F, idx.I, 0, 0,
                                  Tc, ref[i] + 1e-6, wa, wb, n) - ref[i]) < 1e-9
        # boolean query at a few thresholds around the distance
        Tl = _local_pose(Tc, T)
        for thr in (ref[i] - 0.01, ref[i] + 0.01, ref[i] + 0.05):
            got = cloud_shape_hits(idx.F, idx.I, 0, 0, int(shape.kind), shape.params(), Tl,
                                   verts, _aux(shape), thr + radius, np.empty((8, 4)))
            assert got == bool(ref[i] < thr)


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(0, len(SHAPES) - 1),
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 60),
    radius=st.sampled_from([0.0, 0.003, 0.05]),
    scale=st.sampled_from([0.02, 0.3, 2.0]),
)
def test_distance_property(k: int, seed: int, n: int, radius: float, scale: float) -> None:
    """Any small cloud (down to one point, clustered or spread), any pose: the nearest-point
    distance equals the brute-force minimum within 1e-9 m and the boolean query agrees."""
    shape = SHAPES[k]
    rng = np.random.default_rng(seed)
    P = rng.normal(0.0, scale, (n, 3))
    idx = CloudIndex(P, radius, cell=0.02)
    Tc = random_pose(rng, 0.2)
    T = random_pose(rng, 0.5)
    verts = np.ascontiguousarray(shape.vertices()).reshape(-1, 3)
    ref = brute_distance(shape, T, P @ Tc[:3, :3].T + Tc[:3, 3], radius).min()
    wa, wb, nn = np.empty(3), np.empty(3), np.empty(3)
    d = cloud_distance(int(shape.kind), shape.params(), T, verts, idx.F, idx.I, 0, 0, Tc,
                       np.inf, wa, wb, nn)
    assert abs(d - ref) < 1e-9
    if abs(ref) > 1e-9:
        hit = cloud_shape_hits(idx.F, idx.I, 0, 0, int(shape.kind), shape.params(),
                               _local_pose(Tc, T), verts, _aux(shape), radius, np.empty((8, 4)))
        assert hit == bool(ref < 0)
    # a finite bound (the grid's constant-time test, then the pruned search): +inf exactly
    # when nothing is closer than it, else the same distance
    for bound in (ref - 1e-6, ref + 1e-6, ref + 0.5 * scale, ref + 3 * scale):
        d = cloud_distance(int(shape.kind), shape.params(), T, verts, idx.F, idx.I, 0, 0, Tc,
                           bound, wa, wb, nn)
        if bound > ref:
            assert abs(d - ref) < 1e-9, (bound, d, ref)
        else:
            assert d == np.inf, (bound, d, ref)


def test_empty_cloud_is_no_obstacle() -> None:
    idx = CloudIndex(np.zeros((0, 3)), 0.01)
    assert idx.num_points == 0
    assert not cloud_sphere_hits(idx.F, idx.I, 0, 0, 0.0, 0.0, 0.0, 1.0)
    wa, wb, n = np.empty(3), np.empty(3), np.empty(3)
    assert cloud_distance(SPHERE, np.array([0.1, 0, 0, 0.0]), np.eye(4), np.zeros((0, 3)),
                          idx.F, idx.I, 0, 0, np.eye(4), np.inf, wa, wb, n) == np.inf


def test_voxel_downsample_matches_numpy_grouping() -> None:
    """Oracle: numpy's unique over floor(p / res) and per-voxel means."""
    rng = np.random.default_rng(3)
    P = rng.uniform(-0.3, 0.7, (20000, 3))
    res = 0.05
    got = voxel_downsample(P, res)
    keys = np.floor(P / res).astype(np.int64)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    want = np.zeros((inv.max() + 1, 3))
    np.add.at(want, inv, P)
    want /= np.bincount(inv)[:, None]
    assert len(got) == len(want)
    np.testing.assert_allclose(np.array(sorted(map(tuple, got))),
                               np.array(sorted(map(tuple, want))), atol=1e-12)
    # already in the index's order at that lattice: the index needs no sort
    idx = CloudIndex(got, quantum=res, cell=2 * res)
    np.testing.assert_array_equal(idx.order, np.arange(len(got)))


def test_bad_points_are_rejected_with_a_clear_error() -> None:
    with pytest.raises(ShapeError, match="non-finite"):
        CloudIndex(np.array([[0.0, 0.0, np.nan]]))
    with pytest.raises(ShapeError, match=r"\(N, 3\)"):
        CloudIndex(np.zeros((4, 2)))
    with pytest.raises(ShapeError, match="beyond"):
        CloudIndex(np.array([[5000.0, 0.0, 0.0]]))
    with pytest.raises(ShapeError, match="resolution"):
        voxel_downsample(np.zeros((3, 3)), 0.0)


@settings(max_examples=300, deadline=None)
@given(
    k=st.integers(0, len(SHAPES) - 1),
    seed=st.integers(0, 2**31 - 1),
    flat=st.sampled_from([None, 0, 1, 2]),
    size=st.sampled_from([0.005, 0.03, 0.3]),
    spread=st.sampled_from([0.05, 0.2, 0.5]),
)
def test_node_bound_never_exceeds_the_distance_of_a_point_in_the_box(
    k: int, seed: int, flat: int | None, size: float, spread: float
) -> None:
    """The hierarchy's box-to-shape lower bound (``_node_lb``: separating axis, enclosing ball,
    Lipschitz fallback) is at most the signed distance of every point sampled in the box
    (corners, faces, interior), boxes flat or not, near, far and through the shape."""
    from robot_collision.geometry.cloud_index import _node_lb

    shape = SHAPES[k]
    rng = np.random.default_rng(seed)
    T = random_pose(rng, 0.0)  # the shape's pose in the cloud frame
    T[:3, 3] = rng.uniform(-0.1, 0.1, 3)
    c = rng.uniform(-spread, spread, 3)
    h = rng.uniform(0.2, 1.0, 3) * size
    if flat is not None:
        h[flat] = 0.0
    F = np.concatenate([c - h, c + h])
    u = np.concatenate([rng.uniform(-1, 1, (200, 3)),
                        np.array(np.meshgrid(*[[-1, 0, 1]] * 3)).reshape(3, -1).T])
    P = c + u * h
    lb = _node_lb(F, 0, int(shape.kind), np.ascontiguousarray(shape.params()), T, _aux(shape))
    ref = brute_distance(shape, T, P, 0.0).min()
    assert lb <= ref + 1e-12, (lb, ref)

