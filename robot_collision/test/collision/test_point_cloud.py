"""Point clouds as world objects in every checker query, the filter and the planner.

Oracle: a cloud of K points with ball radius r is the same obstacle as K ``Sphere(r)`` world
objects, which the checker handles with its (separately tested) primitive kernels: validity
must agree, and the cloud's column / clearance row must equal the minimum over the spheres'
columns / rows (distances within 1e-9 m). For radius 0 (no sphere world possible), the oracle
is the brute-force minimum over every point of ``shape_distance``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from robot_collision import (
    BiRRT,
    CollisionChecker,
    Mesh,
    OccupancyMap,
    PointCloud,
    RobotModel,
    Sphere,
    VelocityFilter,
    WorldObject,
    make_pose,
)
from robot_collision.geometry.transforms import rot_x, rot_z


def _cloud_near_arm(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points in a slab in front of the default arm's reach."""
    return rng.uniform([0.15, -0.5, 0.0], [0.6, 0.5, 0.9], (n, 3))


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    """The default arm (spheres, capsules, boxes, cylinders) with a mesh added to the tool, so
    that every robot shape kind meets the cloud."""
    from robot_collision import default_robot_paths

    urdf, srdf = default_robot_paths()
    r = RobotModel.from_urdf(urdf, srdf=srdf)
    hull = np.array([[0, 0, 0], [0.06, 0, 0], [0, 0.05, 0], [0.02, 0.02, 0.07]]) - 0.02
    r.add_collision("tool", Mesh(hull), make_pose(np.eye(3), [0.0, 0.0, 0.03]))
    return r


@pytest.fixture(scope="module")
def scene() -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(5)
    P = _cloud_near_arm(rng, 120)
    pose = make_pose(rot_z(0.4) @ rot_x(0.2), [0.05, -0.02, 0.03])
    return P, pose, 0.02


def _worlds(
    scene: tuple[np.ndarray, np.ndarray, float],
) -> tuple[list[WorldObject], list[WorldObject]]:
    P, pose, r = scene
    cloud = [WorldObject(PointCloud(P, r), pose, "cloud")]
    Pw = P @ pose[:3, :3].T + pose[:3, 3]
    spheres = [WorldObject(Sphere(r), make_pose(np.eye(3), p), f"s{i}") for i, p in enumerate(Pw)]
    return cloud, spheres


def _configs(robot: RobotModel, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([robot.random_configuration(rng) for _ in range(n)])


def test_validity_single_batch_and_motion_match_the_sphere_world(
    robot: RobotModel, scene: tuple[np.ndarray, np.ndarray, float]
) -> None:
    cloud, spheres = _worlds(scene)
    checker = CollisionChecker(robot, padding=0.01)
    Q = _configs(robot, 3000, 1)
    want = checker.is_valid_batch(Q, spheres)
    assert 0.1 < want.mean() < 0.9  # both outcomes well represented
    np.testing.assert_array_equal(checker.is_valid_batch(Q, cloud), want)  # threaded
    np.testing.assert_array_equal(checker.is_valid_batch(Q[:500], cloud), want[:500])  # serial
    for q, w in zip(Q[:200], want[:200]):
        assert checker.is_valid(q, cloud) == w
        assert checker.is_valid(q, cloud, ignore_self=True) == checker.is_valid(
            q, spheres, ignore_self=True)
    for a, b in itertools.pairwise(Q[:61]):
        assert checker.is_motion_valid(a, b, cloud) == checker.is_motion_valid(a, b, spheres)


def test_check_and_clearance_match_the_sphere_world(
    robot: RobotModel, scene: tuple[np.ndarray, np.ndarray, float]
) -> None:
    cloud, spheres = _worlds(scene)
    checker = CollisionChecker(robot, padding={("*", "*"): 0.005, ("link3", "cloud"): 0.02})
    oracle = CollisionChecker(robot, padding={("*", "*"): 0.005, **{
        ("link3", o.name): 0.02 for o in spheres}})
    m1 = len(checker.row_names)
    for q in _configs(robot, 25, 2):
        res = checker.check(q, cloud, exhaustive=True)
        ref = oracle.check(q, spheres, exhaustive=True)
        col = res.signed[:, m1]
        np.testing.assert_allclose(col, ref.signed[:, m1:].min(axis=1), atol=1e-9, rtol=0)
        assert res.is_world_colliding == ref.is_world_colliding
        assert res.is_self_colliding == ref.is_self_colliding
        np.testing.assert_array_equal(res.signed[:, :m1], ref.signed[:, :m1])
        sep = res.separation[:, m1]
        assert np.array_equal(np.isnan(sep), col < 0)
        # witnesses: on the cloud side, on the ball of the nearest point
        for i in np.flatnonzero(np.isfinite(col) & (col >= 0)):
            j = m1 + int(np.argmin(ref.signed[i, m1:]))
            np.testing.assert_allclose(res.witness[i, m1], ref.witness[i, j], atol=1e-9)
        # non-exhaustive check: same verdict
        fast = checker.check(q, cloud)
        assert fast.in_collision == ref.in_collision
        # clearance: one ENVIRONMENT row per link within the influence distance
        tab = checker.clearance(q, cloud, influence_distance=0.15)
        tref = oracle.clearance(q, spheres, influence_distance=0.15)
        env = {b: k for k, (b, o) in enumerate(zip(tab.robot_bodies, tab.other_bodies))
               if o == "cloud"}
        best: dict[str, int] = {}
        for k, (b, o) in enumerate(zip(tref.robot_bodies, tref.other_bodies)):
            if o.startswith("s") and (b not in best or tref.distances[k] < tref.distances[best[b]]):
                best[b] = k
        assert set(env) == set(best)
        for b, k in env.items():
            kr = best[b]
            assert abs(tab.distances[k] - tref.distances[kr]) < 1e-9
            np.testing.assert_allclose(tab.witness_robot[k], tref.witness_robot[kr], atol=1e-9)
            np.testing.assert_allclose(tab.witness_other[k], tref.witness_other[kr], atol=1e-9)
            np.testing.assert_allclose(tab.jacobians[k], tref.jacobians[kr], atol=1e-8)


def test_radius_zero_distances_match_brute_force(robot: RobotModel) -> None:
    """Exhaustive check with a bare-point cloud: each row's distance is the minimum over the
    link's shapes and every point (oracle: the pair kernel per point)."""
    from robot_collision.geometry.distance import shape_distance
    from robot_collision.geometry.shapes import SPHERE

    rng = np.random.default_rng(8)
    P = _cloud_near_arm(rng, 80)
    checker = CollisionChecker(robot)
    world = [WorldObject(PointCloud(P), np.eye(4), "pts")]
    m1 = len(checker.row_names)
    wa, wb, n = np.empty(3), np.empty(3), np.empty(3)
    for q in _configs(robot, 6, 3):
        col = checker.check(q, world, exhaustive=True).signed[:, m1]
        T = robot.link_poses(q)
        for i, body in enumerate(checker.row_names):
            li = robot.link_index(body)
            geo = robot.collision_geometry(body)
            if not geo:
                assert col[i] == np.inf
                continue
            ref = np.inf
            for shape, local in geo:
                pose = T[li] @ local
                for p in P:
                    ref = min(ref, shape_distance(
                        int(shape.kind), shape.params(), pose,
                        np.ascontiguousarray(shape.vertices()).reshape(-1, 3), SPHERE,
                        np.zeros(4), make_pose(np.eye(3), p), np.zeros((0, 3)), wa, wb, n))
            assert abs(col[i] - ref) < 1e-9, body


def test_empty_and_far_clouds_are_harmless(robot: RobotModel) -> None:
    checker = CollisionChecker(robot)
    q = robot.home_configuration()
    for cloud in (PointCloud(np.zeros((0, 3))), PointCloud(np.full((3, 3), 50.0), 0.1)):
        world = [WorldObject(cloud, np.eye(4), "c")]
        assert checker.is_valid(q, world)
        assert checker.check(q, world, exhaustive=True).signed[:, -1].min() > 1.0 or \
            cloud.num_points == 0
        assert len([b for b in checker.clearance(q, world, 0.3).other_bodies if b == "c"]) == 0


def test_occupancy_map_covers_its_voxels() -> None:
    """Every point of a voxel, corners included, lies in the map's ball; the ball reaches at
    most half a diagonal beyond the centre."""
    from robot_collision.geometry.cloud_index import cloud_sphere_hits

    v = 0.05
    c = np.array([0.4, 0.0, 0.5])
    occ = OccupancyMap(c[None, :], v)
    assert occ.radius == pytest.approx(v * np.sqrt(3) / 2)
    idx = occ.index
    rng = np.random.default_rng(4)
    for p in np.concatenate([c + rng.uniform(-v / 2, v / 2, (200, 3)),
                             c + v / 2 * np.array([[sx, sy, sz] for sx in (-1, 1)
                                                   for sy in (-1, 1) for sz in (-1, 1)])]):
        assert cloud_sphere_hits(idx.F, idx.I, 0, 0, *p, 1e-9)
    outside = c + np.array([occ.radius + 1e-6, 0, 0])
    assert not cloud_sphere_hits(idx.F, idx.I, 0, 0, *outside, 0.0)


def test_velocity_filter_keeps_away_from_a_cloud(robot: RobotModel) -> None:
    """Drive the tool straight at a wall of points: the filter stops it before the safety
    distance (the filter consumes the cloud's clearance rows like any other object's)."""
    ys, zs = np.meshgrid(np.arange(-0.3, 0.3, 0.01), np.arange(0.0, 0.8, 0.01))
    wall = np.stack([np.full(ys.size, 0.72), ys.ravel(), zs.ravel()], axis=1)
    world = [WorldObject(PointCloud(wall), np.eye(4), "wall")]
    checker = CollisionChecker(robot)
    filt = VelocityFilter(checker, world=world)
    q = robot.named_configuration("ready")
    dt = 0.002
    lowest = np.inf
    for _ in range(1500):
        tab = checker.clearance(q, world, np.inf)
        k = int(np.argmin(np.where(tab.kinds == 1, tab.distances, np.inf)))
        cmd = -tab.jacobians[k] * 5.0  # straight at the wall
        res = filt.filter(q, cmd, dt)
        assert res.ok, res.fault
        q = q + res.velocity * dt
        lowest = min(lowest, float(checker.check(q, world, exhaustive=True).signed[:, -1].min()))
    ds = filt.options.safety_distance_env
    assert lowest > ds - 1e-3
    assert lowest < ds + 0.02  # it did get there


def test_planner_plans_around_a_cloud(robot: RobotModel) -> None:
    """A wall of points between start and goal: the path is valid against the cloud (every
    edge re-checked at the planner's resolution) and against the sphere world it stands for."""
    # a radial wall at azimuth 0.6 rad, between the tool at the start (azimuth 0) and the goal
    rho, zs = np.meshgrid(np.arange(0.3, 0.75, 0.015), np.arange(0.0, 0.5, 0.015))
    wall = np.stack([rho.ravel() * np.cos(0.6), rho.ravel() * np.sin(0.6), zs.ravel()], axis=1)
    world = [WorldObject(PointCloud(wall, 0.008), np.eye(4), "wall")]
    checker = CollisionChecker(robot)
    start = robot.named_configuration("ready")
    goal = start.copy()
    goal[0] += 1.2
    assert checker.is_valid(start, world) and checker.is_valid(goal, world)
    assert not checker.is_motion_valid(start, goal, world)  # the wall is in the way
    path = BiRRT(checker, world=world).plan(start, goal).waypoints
    # every configuration the planner's edge checks visit (1/32 rad apart; the path is valid
    # there, not in between: see planning.rrt)
    dense = np.concatenate([a + (b - a) * (np.arange(n + 1) / n)[:, None]
                            for a, b in itertools.pairwise(path)
                            for n in [max(1, int(np.ceil(32.0 * np.linalg.norm(b - a))))]])
    assert checker.is_valid_batch(dense, world).all()
    spheres = [WorldObject(Sphere(0.008), make_pose(np.eye(3), p), f"s{i}")
               for i, p in enumerate(wall)]
    assert checker.is_valid_batch(dense, spheres).all()


def test_moving_only_leaves_out_exactly_the_world_pairs_of_links_fixed_to_the_base(
    robot: RobotModel,
) -> None:
    """``pair_distances(moving_only=True)`` (the velocity filter's query): the world columns of
    the links whose pose no joint changes are not evaluated; every other entry is the full
    evaluation's (itself checked against brute force above), bit for bit. The cloud wraps the
    base, so those columns are finite in the full evaluation."""
    from robot_collision import Box

    rng = np.random.default_rng(12)
    P = rng.uniform([-0.3, -0.3, -0.05], [0.3, 0.3, 0.4], (400, 3))
    world = [WorldObject(PointCloud(P, 0.01), np.eye(4), "around_base"),
             WorldObject(Box(0.3, 0.3, 0.02), make_pose(np.eye(3), [0.0, 0.0, -0.02]), "table")]
    checker = CollisionChecker(robot)
    kin = robot.kin
    static = np.zeros(len(robot.link_names), dtype=bool)
    for i, p in enumerate(np.asarray(kin.parent)):
        static[i] = p < 0 or (int(kin.jtype[i]) == 0 and static[p])
    assert static[0] and not static.all()
    L = len(robot.link_names)
    for q in _configs(robot, 5, 4):
        for cutoff in (np.inf, 0.05):
            full = checker.pair_distances(q, world, exhaustive=True, cutoff=cutoff)
            part = checker.pair_distances(q, world, exhaustive=True, cutoff=cutoff,
                                          moving_only=True)
            assert np.isfinite(full.D[static][:, L:]).any()
            assert (part.D[static][:, L:] == np.inf).all()
            assert not part.E[static][:, L:].any()
            keep = np.ones_like(full.D, dtype=bool)
            keep[np.ix_(static, np.arange(L, full.D.shape[1]))] = False
            assert np.array_equal(part.D[keep], full.D[keep])
            assert np.array_equal(part.E[keep], full.E[keep])
            fin = keep & np.isfinite(full.D)  # witnesses are defined where D is finite
            assert np.array_equal(part.WA[fin], full.WA[fin])
