"""CollisionChecker: MATLAB checkCollision semantics and distances against independent oracles."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    ConfigurationError,
    Cylinder,
    Mesh,
    RobotModel,
    Sphere,
    UnknownNameError,
    WorldObject,
)
from robot_collision.collision.scene_packing import unpack_scene
from robot_collision.geometry.distance import distance as pair_distance
from robot_collision.geometry.shapes import BOX, CAPSULE, SPHERE
from robot_collision.geometry.transforms import make_pose, rot_x, rot_z

from ..conftest import URDF_DIR


# ----------------------------------------------------------------------------- oracles
def _point_obb_signed(p: np.ndarray, pose: np.ndarray, half: np.ndarray) -> float:
    """Signed distance of a point to a box (numpy, closed form)."""
    local = pose[:3, :3].T @ (p - pose[:3, 3])
    excess = np.abs(local) - half
    if np.all(excess <= 0):
        return float(np.max(excess))
    return float(np.linalg.norm(np.maximum(excess, 0.0)))


def _point_segment(p: np.ndarray, pose: np.ndarray, h: float) -> float:
    axis = pose[:3, 2]
    t = np.clip(np.dot(p - pose[:3, 3], axis), -h, h)
    return float(np.linalg.norm(p - pose[:3, 3] - t * axis))


def _sphere_robot_oracle(robot: RobotModel, q: np.ndarray, world: list[WorldObject]) -> dict:
    """Link-pair minimum signed distances of a sphere-only robot, by brute force in numpy."""
    T = robot.link_transforms(q)
    spheres = {
        name: [((T[name] @ pose)[:3, 3], s.radius) for s, pose in robot.collision_geometry(name)]
        for name in robot.link_names
    }
    out: dict = {}
    names = robot.link_names
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if spheres[a] and spheres[b]:
                out[frozenset((a, b))] = min(
                    np.linalg.norm(ca - cb) - ra - rb
                    for ca, ra in spheres[a]
                    for cb, rb in spheres[b]
                )
        for obj in world:
            if not spheres[a]:
                continue
            vals = []
            for c, r in spheres[a]:
                k = obj.shape.kind
                if k == BOX:
                    vals.append(_point_obb_signed(c, obj.pose, obj.shape.params()[:3]) - r)
                elif k == CAPSULE:
                    vals.append(
                        _point_segment(c, obj.pose, obj.shape.params()[1]) - r - obj.shape.radius
                    )
                elif k == SPHERE:
                    vals.append(np.linalg.norm(c - obj.pose[:3, 3]) - r - obj.shape.radius)
            out[(a, obj.name)] = min(vals)
    return out


# ----------------------------------------------------------------------------- MATLAB examples
def test_two_link_parent_equals_adjacent(rng: np.random.Generator) -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf")
    cp = CollisionChecker(robot, skip="parent")
    ca = CollisionChecker(robot, skip="adjacent")
    for _ in range(20):
        q = robot.random_configuration(rng)
        rp = cp.check(q, exhaustive=True)
        ra = ca.check(q, exhaustive=True)
        np.testing.assert_array_equal(rp.separation, ra.separation)
        assert rp.is_self_colliding == ra.is_self_colliding


def test_two_arms_on_one_base() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "two_arms.urdf")
    assert robot.body_names == ["arm1", "arm2"]
    q = robot.home_configuration()
    rp = CollisionChecker(robot, skip="parent").check(q, exhaustive=True)
    assert not rp.is_self_colliding
    ra = CollisionChecker(robot, skip="adjacent").check(q, exhaustive=True)
    assert ra.is_self_colliding
    assert ra.colliding_pairs == [("arm2", "base")]
    # rows: arm1, arm2, base; the (arm2, base) entry is NaN, the skipped (arm1, base) is Inf
    assert np.isnan(ra.separation[1, 2]) and np.isnan(ra.separation[2, 1])
    assert np.isinf(ra.separation[0, 2]) and np.isinf(ra.separation[0, 1])
    assert np.all(np.isinf(np.diag(ra.separation)))


def test_extra_pair_skip_list() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "extra_pair.urdf")
    q = robot.home_configuration()
    res = CollisionChecker(robot).check(q, exhaustive=True)
    assert res.colliding_pairs == [("link1", "link3")]
    adjacent = [("base", "link1"), ("link1", "link2"), ("link2", "link3"), ("link3", "link4")]
    assert CollisionChecker(robot, skip=adjacent).check(q).is_self_colliding
    res2 = CollisionChecker(robot, skip=[*adjacent, ("link1", "link3")]).check(q, exhaustive=True)
    assert not res2.is_self_colliding
    # the pair list skips exactly those pairs: (base, link2) is evaluated
    i, j = res2.row_names.index("base"), res2.column_names.index("link2")
    assert np.isfinite(res2.separation[i, j])


def test_exhaustive_on_off_differ_only_in_inf(rng: np.random.Generator) -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "extra_pair.urdf")
    checker = CollisionChecker(robot)
    world = [WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [0.3, 0.0, 0.3]), "crate")]
    seen_difference = False
    for _ in range(30):
        q = robot.random_configuration(rng)
        full = checker.check(q, world, exhaustive=True)
        first = checker.check(q, world, exhaustive=False)
        assert full.in_collision == first.in_collision
        same = (full.separation == first.separation) | (
            np.isnan(full.separation) & np.isnan(first.separation)
        )
        # wherever they differ the first-hit result is Inf (not evaluated)
        assert np.all(np.isinf(first.separation[~same]))
        seen_difference |= bool((~same).any())
        if first.in_collision:
            assert len(first.colliding_pairs) == 1
    assert seen_difference


# ----------------------------------------------------------------------------- oracles
@pytest.mark.mbm
def test_panda_distances_match_numpy_oracle(
    panda: RobotModel, cage_world: list, rng: np.random.Generator
) -> None:
    checker = CollisionChecker(panda, skip=[], use_srdf=False)
    extra = [
        WorldObject(
            Capsule(0.05, 0.4), make_pose(rot_x(0.4) @ rot_z(0.3), [0.4, 0.2, 0.5]), "pole"
        ),
        WorldObject(Sphere(0.1), make_pose(np.eye(3), [0.3, -0.3, 0.6]), "ball"),
    ]
    world = cage_world + extra
    for _ in range(15):
        q = panda.random_configuration(rng)
        res = checker.check(q, world, exhaustive=True)
        oracle = _sphere_robot_oracle(panda, q, world)
        for key, expected in oracle.items():
            if isinstance(key, frozenset):
                a, b = sorted(key)
            else:
                a, b = key
            i = res.row_names.index(a)
            j = res.column_names.index(b)
            assert res.signed[i, j] == pytest.approx(expected, abs=1e-9)
            if expected < 0:
                assert np.isnan(res.separation[i, j])
            else:
                assert res.separation[i, j] == pytest.approx(expected, abs=1e-9)
                # witness points are `expected` apart
                w = res.witness[i, j]
                assert np.linalg.norm(w[0] - w[1]) == pytest.approx(expected, abs=1e-9)


def test_default_robot_matches_pairwise_kernel(
    default_robot: RobotModel, rng: np.random.Generator
) -> None:
    """Mixed primitives: link-pair minima equal the minimum of per-shape `distance` calls."""
    checker = CollisionChecker(default_robot)
    world = [
        WorldObject(Box(0.2, 0.3, 0.4), make_pose(rot_z(0.3), [0.5, 0.1, 0.3]), "box"),
        WorldObject(Sphere(0.08), make_pose(np.eye(3), [0.0, 0.5, 0.6]), "ball"),
    ]
    for _ in range(8):
        q = default_robot.random_configuration(rng)
        res = checker.check(q, world, exhaustive=True)
        T = default_robot.link_transforms(q)
        for i, a in enumerate(res.row_names):
            for j, b in enumerate(res.column_names):
                if not np.isfinite(res.signed[i, j]):
                    continue
                sa = [(s, T[a] @ p) for s, p in default_robot.collision_geometry(a)]
                if j < len(res.row_names):
                    sb = [(s, T[b] @ p) for s, p in default_robot.collision_geometry(b)]
                else:
                    obj = world[j - len(res.row_names)]
                    sb = [(obj.shape, obj.pose)]
                expected = min(pair_distance(x, px, y, py)[0] for x, px in sa for y, py in sb)
                assert res.signed[i, j] == pytest.approx(expected, abs=1e-7)


def test_validity_culling_is_conservative_for_every_object_kind(
    default_robot: RobotModel, rng: np.random.Generator
) -> None:
    """The boolean kernels cull by link bounding spheres against enclosing boxes of the
    objects; with objects of every kind placed around the arm (many configurations near
    contact), they must agree with the exhaustive distances (checked against per-shape
    ``distance`` in test_default_robot_matches_pairwise_kernel)."""
    from robot_collision.geometry.transforms import rot_y

    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.06
    shapes = [Box(0.3, 0.1, 0.2), Sphere(0.07), Capsule(0.05, 0.3), Cylinder(0.06, 0.25),
              Mesh(cube * [1.0, 2.0, 0.5])]
    agree = collide = 0
    for trial in range(6):
        world = [
            WorldObject(shape, make_pose(rot_z(rng.uniform(-3, 3)) @ rot_y(rng.uniform(-3, 3)),
                                         rng.uniform([-0.6, -0.6, 0.0], [0.6, 0.6, 1.0])),
                        f"o{k}")
            for k, shape in enumerate(shapes)
        ]
        checker = CollisionChecker(default_robot, padding=[0.0, 0.03][trial % 2])
        Q = np.array([default_robot.random_configuration(rng) for _ in range(60)])
        batch = checker.is_valid_batch(Q, world)
        for q, ok in zip(Q, batch):
            res = checker.check(q, world, exhaustive=True)
            expected = not res.in_collision
            assert ok == expected
            assert checker.is_valid(q, world) == expected
            assert checker.is_valid(q, world, ignore_self=True) == (
                not res.is_world_colliding
            )
            agree += 1
            collide += res.is_world_colliding
    assert 0 < collide < agree  # both outcomes exercised


@pytest.mark.mbm
def test_batch_and_single_agree_with_check(
    panda: RobotModel, cage_world: list, rng: np.random.Generator
) -> None:
    checker = CollisionChecker(panda)
    Q = np.array([panda.random_configuration(rng) for _ in range(300)])
    batch = checker.is_valid_batch(Q, cage_world)
    for q, ok in zip(Q, batch):
        res = checker.check(q, cage_world, exhaustive=True)
        assert ok == (not res.in_collision)
        assert checker.is_valid(q, cage_world) == ok
    assert 0 < batch.sum() < len(batch)


@pytest.mark.mbm
def test_motion_valid_agrees_with_dense_batch(
    panda: RobotModel, cage_world: list, rng: np.random.Generator
) -> None:
    checker = CollisionChecker(panda)
    for _ in range(20):
        a, b = panda.random_configuration(rng), panda.random_configuration(rng)
        b = a + 0.3 * (b - a)
        steps = int(np.ceil(np.linalg.norm(b - a) * 32))
        dense = np.linspace(a, b, steps + 1)
        expected = bool(checker.is_valid_batch(dense, cage_world).all())
        assert checker.is_motion_valid(a, b, cage_world, resolution=1 / 32) == expected


def test_ignore_self_and_padding() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "extra_pair.urdf")
    q = robot.home_configuration()
    near = WorldObject(Sphere(0.05), make_pose(np.eye(3), [0.2, 0.0, -0.15]), "ball")
    checker = CollisionChecker(robot)
    res = checker.check(q, [near], ignore_self=True, exhaustive=True)
    assert not res.is_self_colliding
    assert np.all(np.isinf(res.separation[:, : len(res.row_names)]))
    d0 = res.signed[res.row_names.index("link1"), res.column_names.index("ball")]
    assert d0 > 0
    padded = CollisionChecker(robot, padding=0.01).check(
        q, [near], ignore_self=True, exhaustive=True
    )
    assert padded.signed[res.row_names.index("link1"), -1] == pytest.approx(d0 - 0.01)
    per_pair = CollisionChecker(robot, padding={("link1", "ball"): d0 + 0.001})
    r2 = per_pair.check(q, [near], ignore_self=True, exhaustive=True)
    assert r2.is_world_colliding and r2.colliding_pairs == [("link1", "ball")]


def test_bad_input() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf")
    checker = CollisionChecker(robot)
    with pytest.raises(ConfigurationError):
        checker.check([0.0])
    with pytest.raises(ConfigurationError):
        checker.is_valid([np.inf, 0.0])
    with pytest.raises(ConfigurationError):
        checker.is_valid_batch(np.zeros((4, 3)))
    with pytest.raises(UnknownNameError):
        CollisionChecker(robot, skip=[("link1", "ghost")])
    with pytest.raises(ConfigurationError):
        CollisionChecker(robot, skip="neighbours")  # type: ignore[arg-type]
    dup = [WorldObject(Sphere(0.1), name="x"), WorldObject(Sphere(0.1), name="x")]
    with pytest.raises(ConfigurationError, match="unique"):
        checker.check([0.0, 0.0], dup)



def test_is_valid_accepts_any_array_like_and_follows_world_and_geometry_changes() -> None:
    """``is_valid``'s fast path (cached scene, float64 (n,) array) and its fallbacks give the
    answers of ``check``, for every input form and after the world or the geometry changed."""
    robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf")
    checker = CollisionChecker(robot)
    q = np.array([0.3, -0.2])
    on_link1 = [0.25 * np.cos(0.3), 0.25 * np.sin(0.3), 0.0]
    ball = WorldObject(Sphere(0.05), make_pose(np.eye(3), on_link1), "ball")
    far = WorldObject(Sphere(0.05), make_pose(np.eye(3), [5.0, 0.0, 0.0]), "far")
    forms = (q, list(q), tuple(q), q.astype(np.float32), np.array([q[0], 9.0, q[1]])[::2],
             q.reshape(1, 2)[0], q.astype(">f8"))
    for world, colliding in (([], False), ([ball], True), ([far], False), ((), False),
                             ([far, ball], True), ([], False)):
        assert checker.check(q, world).in_collision == colliding
        for form in forms:
            assert checker.is_valid(form, world) == (not colliding)
    for bad in (np.zeros(3), np.zeros((1, 2)), [0.0], "ab"):
        with pytest.raises(ConfigurationError):
            checker.is_valid(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="non-finite"):
        checker.is_valid(np.array([np.nan, 0.0]))
    # geometry changes are seen by the next call: a 1 m sphere on link2 reaches the base
    assert checker.is_valid(q)
    robot.add_collision("link2", Sphere(1.0), np.eye(4))
    assert not checker.is_valid(q)
    assert checker.check(q).in_collision


@pytest.mark.parametrize(("floor_top", "padding"), [(-0.01, 0.0), (0.005, 0.0), (-0.01, 0.02)])
def test_base_pairs_fixed_verdict(default_robot: RobotModel, rng: np.random.Generator,
                                  floor_top: float, padding: float) -> None:
    """The base never moves, so its pairs with the world are decided once per scene (and
    skipped when free): validity still equals the exhaustive distances' verdict, and a base
    that touches the floor (per-shape ``distance`` oracle) makes every configuration invalid."""
    floor = WorldObject(Box(1.6, 1.6, 0.04), make_pose(np.eye(3), [0, 0, floor_top - 0.02]),
                        "floor")
    world = [floor, WorldObject(Box(0.3, 0.8, 0.5), make_pose(np.eye(3), [0.65, 0, 0.25]),
                                "crate")]
    checker = CollisionChecker(default_robot, padding=padding)
    base = default_robot.link_names[0]
    base_gap = min(pair_distance(s, p, floor.shape, floor.pose)[0]
                   for s, p in default_robot.collision_geometry(base)) - padding
    Q = np.array([default_robot.random_configuration(rng) for _ in range(300)])
    valid = checker.is_valid_batch(Q, world)
    expected = np.array([not checker.check(q, world, exhaustive=True).in_collision for q in Q])
    np.testing.assert_array_equal(valid, expected)
    assert [checker.is_valid(q, world) for q in Q[:40]] == list(expected[:40])
    sc = checker._prepare(world)
    skip = sc.pr.world_skip
    np.testing.assert_array_equal(unpack_scene(sc.F, sc.I)[3].world_skip, skip)  # as packed
    if base_gap > 1e-9:
        assert 0.05 < valid.mean() < 0.95
        assert skip[0].all() and not skip[1:].any()  # base_link only (the others move)
    else:
        assert base_gap < -1e-9  # (not a grazing contact)
        assert not valid.any() and not skip.any()
