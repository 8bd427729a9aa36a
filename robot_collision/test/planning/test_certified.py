"""Certified edges (issue 23): conservative advancement proves a straight joint-space motion free
over the whole segment. Property: an edge certified free (with ``min_clearance`` c) is free, with
c to spare, at 10^4 configurations along it, by an exact oracle (``is_valid_batch`` of a checker
padded by c: closed forms for spheres, capsules and boxes, GJK for meshes). Also: the grazing
edges that the discrete check accepts are refused, and the planner, the shortcutter and
``is_motion_valid`` use certified edges by default.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    ConfigurationError,
    RobotModel,
    Sphere,
    WorldObject,
    default_robot_paths,
)
from robot_collision.collision.certified import (
    edge_certified,
    edges_certified_packed,
    first_uncertified,
    first_uncertified_blocked,
    motion_bounds_packed,
    motion_certified_packed,
    swept_certified_packed,
    swept_path_certified_packed,
)
from robot_collision.geometry.transforms import pose_from_xyz_rpy
from robot_collision.planning.rrt import BiRRT, RRTOptions

ORACLE_SAMPLES = 10_000

# a 4-joint arm with every joint kind: continuous, prismatic, revolute, and a mimic joint
MIXED_URDF = """<?xml version="1.0"?>
<robot name="mixed">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="l1"><collision><origin xyz="0 0 0.2"/>
      <geometry><capsule radius="0.05" length="0.3"/></geometry></collision></link>
  <link name="l2"><collision><origin xyz="0.15 0 0"/>
      <geometry><box size="0.3 0.06 0.06"/></geometry></collision></link>
  <link name="l3"><collision><origin xyz="0.1 0 0"/>
      <geometry><cylinder radius="0.03" length="0.2"/></geometry></collision>
      <collision><origin xyz="0.22 0 0"/><geometry><sphere radius="0.04"/></geometry></collision>
  </link>
  <link name="l4"><collision><origin xyz="0.05 0 0"/>
      <geometry><sphere radius="0.03"/></geometry></collision></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.05"/><axis xyz="0 0 1"/><limit velocity="1" effort="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.35"/><axis xyz="1 0 0"/>
    <limit lower="-0.2" upper="0.3" velocity="1" effort="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" velocity="1" effort="1"/></joint>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.25 0 0"/><axis xyz="0 0 1"/><mimic joint="j3" multiplier="-1.5"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
</robot>
"""


# the same arm made of spheres only: the blocked (8-lane) kernels take it
SPHERE_URDF = MIXED_URDF
for _old, _new in (
        ('<box size="0.2 0.2 0.1"/>', '<sphere radius="0.1"/>'),
        ('<origin xyz="0 0 0.2"/>\n      <geometry><capsule radius="0.05" length="0.3"/>',
         '<origin xyz="0 0 0.2"/>\n      <geometry><sphere radius="0.06"/>'),
        ('<box size="0.3 0.06 0.06"/>', '<sphere radius="0.05"/>'),
        ('<cylinder radius="0.03" length="0.2"/>', '<sphere radius="0.04"/>')):
    assert _old in SPHERE_URDF
    SPHERE_URDF = SPHERE_URDF.replace(_old, _new)


@pytest.fixture(scope="module")
def sphere_robot(tmp_path_factory: pytest.TempPathFactory) -> RobotModel:
    p = Path(tmp_path_factory.mktemp("spheres")) / "spheres.urdf"
    p.write_text(SPHERE_URDF)
    return RobotModel.from_urdf(p)


@pytest.fixture(scope="module")
def mixed_robot(tmp_path_factory: pytest.TempPathFactory) -> RobotModel:
    p = Path(tmp_path_factory.mktemp("mixed")) / "mixed.urdf"
    p.write_text(MIXED_URDF)
    return RobotModel.from_urdf(p)


def _mixed_world(rng: np.random.Generator) -> list[WorldObject]:
    out = []
    for k in range(4):
        c = rng.uniform([-0.6, -0.6, 0.1], [0.6, 0.6, 0.8])
        shape = (Box(*rng.uniform(0.02, 0.3, 3)), Sphere(float(rng.uniform(0.02, 0.1))),
                 Capsule(float(rng.uniform(0.01, 0.05)), float(rng.uniform(0.05, 0.4))))[k % 3]
        out.append(WorldObject(shape, pose_from_xyz_rpy(list(c), list(rng.uniform(-3, 3, 3))),
                               f"o{k}"))
    return out


def _at(xyz: object) -> np.ndarray:
    return pose_from_xyz_rpy(list(np.asarray(xyz, dtype=float)), [0.0, 0.0, 0.0])


def _dense(a: np.ndarray, b: np.ndarray, m: int = ORACLE_SAMPLES) -> np.ndarray:
    return a + (b - a) * np.linspace(0.0, 1.0, m)[:, None]


def _near_contact_edge(robot: RobotModel, checker: CollisionChecker, world: list,
                       rng: np.random.Generator, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """An edge starting within a few cm of contact (or from a random configuration)."""
    for _ in range(200):
        a = robot.random_configuration(rng)
        if 0.0 <= checker.min_distance(a, world) < 0.03:
            break
    b = np.clip(a + rng.normal(size=a.shape) * scale, robot.lower, robot.upper)
    return a, b


def _check_property(robot: RobotModel, world: list, seed: int, clearance: float,
                    scale: float) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    checker = CollisionChecker(robot)
    oracle = CollisionChecker(robot, padding=clearance) if clearance > 0 else checker
    F, I = checker.packed(world)
    certified = 0
    for _ in range(6):
        a, b = _near_contact_edge(robot, checker, world, rng, scale)
        code, evals = motion_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, True,
                                              clearance)
        assert code in (0, 1) and evals >= 1
        if code == 1:
            certified += 1
            ok = oracle.is_valid_batch(_dense(a, b), world)
            assert ok.all(), (f"certified edge collides at t = "
                              f"{np.flatnonzero(~ok)[0] / (ORACLE_SAMPLES - 1):.5f}: {a} -> {b}")
    return certified, 6


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), clearance=st.sampled_from([0.0, 0.0, 0.005, 0.02]),
       scale=st.sampled_from([0.05, 0.2, 0.5]))
def test_certified_edges_of_the_default_arm_are_free_at_1e4_samples(
        default_robot: RobotModel, seed: int, clearance: float, scale: float) -> None:
    rng = np.random.default_rng(seed)
    post = rng.uniform([0.2, -0.4, 0.4], [0.6, 0.4, 0.6])
    ball = rng.uniform([-0.5, -0.5, 0.3], [0.5, 0.5, 0.9])
    world = [WorldObject(Box(0.05, 0.05, 1.0), _at(post), "post"),
             WorldObject(Sphere(0.08), _at(ball), "ball")]
    _check_property(default_robot, world, seed, clearance, scale)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), clearance=st.sampled_from([0.0, 0.01]),
       scale=st.sampled_from([0.1, 0.5, 1.5]))
def test_certified_edges_with_prismatic_continuous_and_mimic_joints(
        mixed_robot: RobotModel, seed: int, clearance: float, scale: float) -> None:
    world = _mixed_world(np.random.default_rng(seed))
    _check_property(mixed_robot, world, seed, clearance, scale)


@pytest.mark.mbm
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.05, 0.2, 0.6]))
def test_certified_edges_of_the_panda_in_the_cage_are_free_at_1e4_samples(
        panda: RobotModel, cage_world: list, seed: int, scale: float) -> None:
    _check_property(panda, cage_world, seed, 0.0, scale)


def _plates_between_samples(robot: RobotModel, checker: CollisionChecker,
                            rng: np.random.Generator, spread: float, resolution: float,
                            tries: int) -> Iterator[tuple[np.ndarray, np.ndarray, list]]:
    """``(a, b, plate)``: random motions (``spread`` rad per joint) and a plate 2 mm thick
    through the middle of the tool's sweep that the motion crosses (dense oracle) between two
    configurations of a discrete check every ``resolution``, which accepts it."""
    for _ in range(tries):
        a = robot.random_configuration(rng)
        b = np.clip(a + rng.normal(size=a.shape) * spread, robot.lower, robot.upper)
        if not (checker.is_valid(a) and checker.is_valid(b)):
            continue
        T = robot.link_poses(0.5 * (a + b))
        tip = T[robot.link_index(robot.link_names[-1])][:3, 3]
        plate = [WorldObject(Box(0.3, 0.3, 0.002), _at(tip), "plate")]
        if (checker.is_valid_batch(_dense(a, b), plate).all()
                or not checker.is_motion_valid(a, b, plate, resolution=resolution,
                                               mode="discrete")):
            continue
        yield a, b, plate


def test_a_grazing_edge_accepted_by_the_discrete_check_is_refused(
        default_robot: RobotModel) -> None:
    """A thin plate crossed between two samples of a coarse discrete check."""
    checker = CollisionChecker(default_robot)
    found = 0
    for a, b, plate in _plates_between_samples(default_robot, checker, np.random.default_rng(3),
                                               0.6, 0.5, 400):
        found += 1
        assert not checker.is_motion_valid(a, b, plate, resolution=0.5)  # certified (default)
        if found >= 3:
            break
    assert found >= 1


def test_a_path_through_a_plate_between_coarse_samples_is_refused_and_replanned(
        default_robot: RobotModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lazy certified run grows its trees with checks every 2 x validation_distance: a
    straight start-goal motion through a thin plate between those samples is found first,
    refused by the path certification, and the plan returned (a later run) is free at 10^4
    configurations per edge (dense oracle)."""
    import robot_collision.planning.rrt as rrt_module

    checker = CollisionChecker(default_robot)
    vd = 0.5
    refused: list[int] = []
    certify = rrt_module.first_uncertified_blocked

    def recording(*args: object) -> tuple[int, int]:
        bad, evals = certify(*args)
        if bad >= 0:
            refused.append(bad)
        return bad, evals

    monkeypatch.setattr(rrt_module, "first_uncertified_blocked", recording)
    planned = 0
    for a, b, plate in _plates_between_samples(default_robot, checker, np.random.default_rng(5),
                                               0.3, 2 * vd, 2000):
        before = len(refused)
        res = BiRRT(checker, RRTOptions(seed=1, validation_distance=vd), plate).plan(
            a, b, time_limit=20.0)
        for p, q in itertools.pairwise(res.waypoints):
            assert checker.is_valid_batch(_dense(p, q), plate).all()
        planned += len(refused) > before
        if planned >= 2:
            break
    assert planned >= 1


def test_is_motion_valid_modes_and_clearance(default_robot: RobotModel) -> None:
    checker = CollisionChecker(default_robot)
    world = [WorldObject(Box(0.1, 0.1, 1.0), _at([0.45, 0.0, 0.5]), "post")]
    a = np.zeros(default_robot.num_joints)
    b = a.copy()
    b[0] = 0.3
    assert checker.is_motion_valid(a, b, world) == checker.is_motion_valid(a, b, world,
                                                                        mode="certified")
    d = min(checker.min_distance(_dense(a, b, 200)[k], world) for k in range(200))
    if d > 0.01:
        assert checker.is_motion_valid(a, b, world, min_clearance=0.5 * d)
    assert not checker.is_motion_valid(a, b, world, min_clearance=d + 0.01)
    with pytest.raises(ConfigurationError):
        checker.is_motion_valid(a, b, world, mode="discrete", min_clearance=0.1)
    with pytest.raises(ConfigurationError):
        checker.is_motion_valid(a, b, world, mode="sampled")  # type: ignore[arg-type]


def test_rrt_options_validation() -> None:
    assert RRTOptions().edge_validation == "certified"
    with pytest.raises(ConfigurationError):
        RRTOptions(edge_validation="dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        RRTOptions(min_clearance=-1.0)
    with pytest.raises(ConfigurationError):
        RRTOptions(edge_validation="discrete", min_clearance=0.01)


@pytest.mark.mbm
def test_planner_and_shortcutter_paths_are_certified(panda: RobotModel) -> None:
    """Default (certified) planning and shortening on MBM problems: every edge free at 2000
    samples per radian; with min_clearance, free with that clearance (padded oracle)."""
    import mbm  # type: ignore[import-not-found]  # (benchmarks on sys.path, see conftest)

    problems = mbm.load_problems()["problems"]
    checker = CollisionChecker(panda)
    for clearance in (0.0, 0.005):
        oracle = CollisionChecker(panda, padding=clearance) if clearance else checker
        for name in ("bookshelf_small", "cage"):
            for p in problems[name][:3]:
                world = mbm.world_of(p, name)
                planner = BiRRT(checker, RRTOptions(seed=1, min_clearance=clearance), world)
                try:
                    res = planner.plan(p["start"], p["goals"][0], time_limit=5.0)
                except Exception:
                    continue  # the ends may be closer than the clearance
                for path in (res.waypoints, planner.shorten(res.waypoints, 30)):
                    for a, b in itertools.pairwise(path):
                        m = max(2, int(np.ceil(np.linalg.norm(b - a) * 2000)) + 1)
                        assert oracle.is_valid_batch(_dense(a, b, m), world).all()


def test_certified_and_discrete_planners_differ_only_in_edges(default_robot: RobotModel) -> None:
    world = [WorldObject(Box(0.1, 0.1, 1.0), _at([0.45, 0.0, 0.5]), "post")]
    q0 = np.zeros(default_robot.num_joints)
    q1 = q0.copy()
    q1[0] = 1.2
    for mode in ("certified", "discrete"):
        planner = BiRRT(default_robot, RRTOptions(seed=4, edge_validation=mode), world)
        res = planner.plan(q0, q1, time_limit=10.0)
        assert res.success
        checker = planner.checker
        for a, b in itertools.pairwise(res.waypoints):
            assert checker.is_motion_valid(a, b, world, mode="discrete")
            if mode == "certified":
                assert checker.is_motion_valid(a, b, world)


def test_edge_certified_is_importable_from_the_collision_layer() -> None:
    assert callable(edge_certified)
    assert default_robot_paths()[0].is_file()


def test_piece_tubes_bound_the_spline_deviation_from_its_chords() -> None:
    import scipy.interpolate

    from robot_collision.planning.trajectory import _piece_tubes

    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.005, 0.05, 30))
    pos = np.cumsum(rng.normal(size=(30, 3)) * 0.05, axis=0)
    vel = rng.normal(size=(30, 3))
    tubes = _piece_tubes(t, pos, vel)
    spl = scipy.interpolate.CubicHermiteSpline(t, pos, vel)
    for k in range(29):
        s = np.linspace(0.0, 1.0, 401)[:, None]
        q = spl(t[k] + s[:, 0] * (t[k + 1] - t[k]))
        dev = np.abs(q - (pos[k] + s * (pos[k + 1] - pos[k]))).max(axis=0)
        assert np.all(dev <= tubes[k])


def test_time_parameterize_certifies_the_spline(default_robot: RobotModel) -> None:
    import scipy.interpolate

    from robot_collision.planning.trajectory import time_parameterize

    world = [WorldObject(Box(0.1, 0.1, 1.0), _at([0.45, 0.0, 0.5]), "post")]
    q0 = np.zeros(default_robot.num_joints)
    q1 = q0.copy()
    q1[0] = 1.2
    planner = BiRRT(default_robot, RRTOptions(seed=4, min_clearance=0.01), world)
    path = planner.shorten(planner.plan(q0, q1, time_limit=10.0).waypoints, 20)
    checker = planner.checker
    tr = time_parameterize(path, default_robot, checker=checker, world=world, min_clearance=0.01)
    oracle = CollisionChecker(default_robot, padding=0.01)
    if tr.method == "toppra":
        spl = scipy.interpolate.CubicHermiteSpline(tr.times, tr.positions, tr.velocities)
        Q = spl(np.linspace(0.0, tr.times[-1], 20_000))
    else:
        Q = np.concatenate([_dense(a, b, 2000) for a, b in itertools.pairwise(path)])
    assert oracle.is_valid_batch(Q, world).all()
    with pytest.raises(ConfigurationError):
        time_parameterize(path, default_robot, checker=checker, world=world,
                          edge_validation="discrete", min_clearance=0.01)


def _ball_gap(checker: CollisionChecker, a: np.ndarray, b: np.ndarray, center: np.ndarray,
              radius: float) -> tuple[float, float]:
    """(smallest distance, its t) from the robot to a ball along a -> b: brute force, 400
    samples and then 400 more around the smallest (the distance to a ball is the distance to
    its centre less the radius, so a ball of radius ``radius + gap - delta`` is met by
    ``delta``)."""
    ball = [WorldObject(Sphere(radius), _at(center), "ball")]

    def gap(ts: np.ndarray) -> np.ndarray:
        return np.array([checker.min_distance(a + (b - a) * t, ball, ignore_self=True)
                         for t in ts])

    ts = np.linspace(0.0, 1.0, 400)
    g = gap(ts)
    k = int(np.argmin(g))
    fine = np.linspace(ts[max(k - 1, 0)], ts[min(k + 1, len(ts) - 1)], 400)
    gf = gap(fine)
    return float(gf.min()), float(fine[int(np.argmin(gf))])


def _free_edge_and_ball(robot: RobotModel, checker: CollisionChecker, rng: np.random.Generator,
                        scale: float, link: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random edge free of self-collision at 200 samples, and the centre of a ball 6-20 cm
    from link ``link`` somewhere along it."""
    for _ in range(50):
        a = robot.random_configuration(rng)
        b = np.clip(a + rng.normal(size=a.shape) * scale, robot.lower, robot.upper)
        if checker.is_valid_batch(_dense(a, b, 200), []).all():
            break
    poses = robot.link_poses(a + (b - a) * float(rng.uniform(0.1, 0.9)))
    u = rng.normal(size=3)
    return a, b, poses[link][:3, 3] + u / np.linalg.norm(u) * rng.uniform(0.06, 0.2)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.3, 1.0, 2.0]))
def test_an_obstacle_met_between_the_evaluations_is_never_certified(
        default_robot: RobotModel, seed: int, scale: float) -> None:
    """Advancement both ways evaluates a pair beyond its proven interval and reaches back: a
    ball near the arm, grown so that the brute-force closest approach of a long edge meets it
    by 0.1-1 mm (or misses it by 0.01-10 mm), at whatever t that happens. Met: never certified;
    certified: free at 1e4 samples (exact checker); missed by 1 cm: certified (the bounds are
    not so loose that a centimetre is not enough)."""
    rng = np.random.default_rng(seed)
    robot = default_robot
    checker = CollisionChecker(robot)
    ignore = CollisionChecker(robot)
    for _ in range(50):
        a = robot.random_configuration(rng)
        b = np.clip(a + rng.normal(size=a.shape) * scale, robot.lower, robot.upper)
        if ignore.is_valid_batch(_dense(a, b, 200), []).all():
            break
    tm = float(rng.uniform(0.2, 0.8))
    poses = robot.link_poses(a + (b - a) * tm)
    u = rng.normal(size=3)
    center = poses[-1][:3, 3] + u / np.linalg.norm(u) * rng.uniform(0.08, 0.2)
    gap, _ = _ball_gap(checker, a, b, center, 0.02)
    assume(gap > 0.0)  # (not with the ball's centre inside the arm)
    for delta in (1e-3, 1e-4, -1e-5, -1e-3, -1e-2):
        radius = 0.02 + gap + delta  # its distance at the closest approach found: -delta
        world = [WorldObject(Sphere(radius), _at(center), "ball")]
        F, I = checker.packed(world)
        code, _ = motion_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, False, 0.0)
        if delta > 0.0:
            assert code == 0, f"an edge meeting the ball by {delta} m certified: {a} -> {b}"
        elif code == 1:
            ok = checker.is_valid_batch(_dense(a, b), world)
            assert ok.all(), f"certified, collides at t = {np.flatnonzero(~ok)[0]}: {a} -> {b}"
        if delta == -1e-2:
            assert code == 1, f"an edge 1 cm from the ball not certified: {a} -> {b}"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.2, 0.6, 1.5]),
       link=st.sampled_from([-1, -2, -3]), clearance=st.sampled_from([0.0, 0.01]))
def test_the_velocity_field_bound_never_certifies_an_edge_meeting_a_ball(
        mixed_robot: RobotModel, seed: int, scale: float, link: int, clearance: float) -> None:
    """The world pairs' motion bound from the evaluated configuration (the velocity field of
    the link's bounding sphere, issue 23) on the arm with a continuous, a prismatic and a mimic
    joint, whose speeds add and cancel: a ball near one of the last links, grown so that the
    brute-force closest approach of the edge (to the whole arm) meets it, with ``clearance``,
    by 0.1-1 mm. Met: never certified; missed by 0.01 mm - 1 cm and certified: free, with
    ``clearance``, at 1e4 samples (exact checker)."""
    robot = mixed_robot
    checker = CollisionChecker(robot)
    a, b, center = _free_edge_and_ball(robot, checker, np.random.default_rng(seed), scale, link)
    gap, _ = _ball_gap(checker, a, b, center, 0.02)
    assume(gap > clearance)
    oracle = CollisionChecker(robot, padding=clearance) if clearance > 0 else checker
    for delta in (1e-3, 1e-4, -1e-5, -1e-3, -1e-2):
        radius = 0.02 + gap - clearance + delta  # distance at the closest approach: c - delta
        world = [WorldObject(Sphere(radius), _at(center), "ball")]
        F, I = checker.packed(world)
        code, _ = motion_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, False,
                                          clearance)
        if delta > 0.0:
            assert code == 0, f"an edge meeting the ball by {delta} m certified: {a} -> {b}"
        elif code == 1:
            ok = oracle.is_valid_batch(_dense(a, b), world, ignore_self=True)
            assert ok.all(), f"certified, collides at t = {np.flatnonzero(~ok)[0]}: {a} -> {b}"


@pytest.mark.parametrize("clearance", [0.0, 0.01])
def test_direct_paths_certified_as_one_segment(default_robot: RobotModel,
                                               clearance: float) -> None:
    """The planner certifies the straight start-goal motion first: a path found that way is
    that straight motion (nodes on the segment, the discrete planner's nodes) and is free with
    ``clearance`` to spare at 10^4 configurations (padded ``is_valid_batch`` oracle)."""
    world = [WorldObject(Box(0.1, 0.1, 1.0), _at([0.45, 0.0, 0.5]), "post"),
             WorldObject(Sphere(0.08), _at([-0.3, 0.3, 0.6]), "ball")]
    oracle = CollisionChecker(default_robot, padding=clearance)
    rng = np.random.default_rng(7)
    direct = other = 0
    while direct < 3 or other < 2:
        a, b = (default_robot.random_configuration(rng) for _ in range(2))
        if not oracle.is_valid_batch(np.array([a, b]), world).all():
            continue
        res = BiRRT(default_robot, RRTOptions(seed=1, min_clearance=clearance),
                    world).plan(a, b, time_limit=10.0)
        if res.stats.iterations > 0:
            other += 1
            continue
        direct += 1
        P = res.waypoints
        t = (P - a) @ (b - a) / ((b - a) @ (b - a))
        np.testing.assert_allclose(P, a + t[:, None] * (b - a), atol=1e-12)
        assert t[0] == 0.0 and t[-1] == pytest.approx(1.0, abs=1e-12) and np.all(np.diff(t) > 0)
        assert oracle.is_valid_batch(_dense(a, b), world).all()
        discrete = BiRRT(default_robot, RRTOptions(seed=1, edge_validation="discrete"),
                         world).plan(a, b, time_limit=10.0)
        np.testing.assert_array_equal(discrete.waypoints, P)


@pytest.mark.parametrize("name", ["default_robot", pytest.param("panda", marks=pytest.mark.mbm)])
def test_certified_edges_near_self_contact_are_free_at_1e4_samples(
        request: pytest.FixtureRequest, name: str) -> None:
    """Self pairs alone (no world): edges from within 3 cm of self-contact in random directions;
    every one certified is free, with the clearance to spare, at 10^4 configurations (exact
    oracle padded by the clearance)."""
    robot: RobotModel = request.getfixturevalue(name)
    checker = CollisionChecker(robot)
    F, I = checker.packed([])
    rng = np.random.default_rng(23)
    certified = 0
    for k in range(24):
        clearance = (0.0, 0.005)[k % 2]
        for _ in range(1000):
            a = robot.random_configuration(rng)
            if 0.0 <= checker.min_distance(a) < 0.03:
                break
        b = np.clip(a + rng.normal(size=a.shape) * (0.1, 0.4, 1.0)[k % 3], robot.lower,
                    robot.upper)
        code, _ = motion_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, True, clearance)
        assert code in (0, 1)
        if code == 1:
            certified += 1
            oracle = CollisionChecker(robot, padding=clearance) if clearance > 0 else checker
            ok = oracle.is_valid_batch(_dense(a, b))
            assert ok.all(), (f"certified edge collides at t = "
                              f"{np.flatnonzero(~ok)[0] / (ORACLE_SAMPLES - 1):.5f}: {a} -> {b}")
    assert certified >= 4  # (the property is exercised)


def _block(checker: CollisionChecker, world: list) -> tuple[np.ndarray, np.ndarray]:
    sc = checker._prepare(world)
    assert sc.block is not None, "the blocked kernels should take this robot and world"
    return sc.block.BF, sc.block.BI


def _stage_property(robot: RobotModel, world: list, seed: int, clearance: float, scale: float,
                    blocked: bool) -> int:
    """Edges from near contact: every one the inflated-sample stage alone certifies is free,
    with ``clearance`` to spare, at 10^4 configurations (exact oracle); returns how many."""
    rng = np.random.default_rng(seed)
    checker = CollisionChecker(robot)
    oracle = CollisionChecker(robot, padding=clearance) if clearance > 0 else checker
    F, I = checker.packed(world)
    BF, BI = _block(checker, world) if blocked else (np.zeros(0), np.zeros(0, dtype=np.int64))
    certified = 0
    for _ in range(6):
        a, b = _near_contact_edge(robot, checker, world, rng, scale)
        code = swept_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, BF, BI, True,
                                      clearance)
        assert code in (0, 1)
        if code == 1:
            certified += 1
            ok = oracle.is_valid_batch(_dense(a, b), world)
            assert ok.all(), (f"inflated samples certified an edge colliding at t = "
                              f"{np.flatnonzero(~ok)[0] / (ORACLE_SAMPLES - 1):.5f}: {a} -> {b}")
    return certified


def _motion_bound_property(robot: RobotModel, seed: int, scale: float) -> None:
    """``motion_bounds_packed`` against the motion itself: FK at 4000 configurations along random
    edges, 27 points of every link's bounding sphere (its centre, the ends of 26 directions);
    no point moves faster than its link's bound, and, expressed in the frame of a self pair's
    common ancestor, the two links' points together no faster than the pair's bound."""
    rng = np.random.default_rng(seed)
    checker = CollisionChecker(robot)
    F, I = checker.packed([])
    sc = checker._prepare([])
    rs, pr = sc.rs, sc.pr
    parent = np.asarray(robot.kin.parent)
    L = len(robot.link_names)
    dirs = np.array(list(itertools.product([-1.0, 0.0, 1.0], repeat=3)))
    dirs[13] = 0.0  # (the centre)
    dirs /= np.maximum(np.linalg.norm(dirs, axis=1), 1.0)[:, None]
    m = 4000
    lo = np.where(np.isfinite(robot.lower), robot.lower, -np.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, np.pi)
    for _ in range(4):
        a = robot.random_configuration(rng)
        b = np.clip(a + rng.normal(size=a.shape) * scale, lo, hi)
        Mp, Ep = motion_bounds_packed(a, b - a, np.zeros(a.shape[0]), F, I, True)
        assert np.all(Ep == 0.0) and np.all(Mp >= 0.0)
        T = robot.link_poses_batch(_dense(a, b, m))  # (m, L, 4, 4)
        pts = {}
        for l in range(L):
            if rs.bound_radius[l] >= 0.0:
                local = rs.bound_center[l] + rs.bound_radius[l] * dirs  # (27, 3), link frame
                pts[l] = local @ T[:, l, :3, :3].transpose(0, 2, 1) + T[:, l, None, :3, 3]
                speed = np.linalg.norm(np.diff(pts[l], axis=0), axis=2).max() * (m - 1)
                assert speed <= Mp[l] * (1 + 1e-9) + 1e-9, (l, speed, Mp[l])
        for k, (pa, pb) in enumerate(zip(pr.self_a, pr.self_b)):
            if pa not in pts or pb not in pts:
                continue
            x, y = int(pa), int(pb)
            while x != y:
                x, y = (int(parent[x]), y) if x > y else (x, int(parent[y]))
            R, t = T[:, x, :3, :3], T[:, x, :3, 3]
            rel = 0.0
            for q in (pa, pb):  # the links' points in the common ancestor's frame
                X = (pts[q] - t[:, None, :]) @ R  # (R^T of each point; matmul: einsum took 80 %)
                rel = rel + np.linalg.norm(np.diff(X, axis=0), axis=2).max(axis=1)
            speed = float(np.max(rel)) * (m - 1)
            assert speed <= Mp[L + k] * (1 + 1e-9) + 1e-9, (pa, pb, speed, Mp[L + k])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.05, 0.5, 2.0]))
def test_motion_bounds_hold_along_the_edge(mixed_robot: RobotModel, default_robot: RobotModel,
                                           seed: int, scale: float) -> None:
    """The motion bounds (from the middle of the edge, or the chain length) are never below
    the motion FK shows, with continuous, prismatic and mimic joints."""
    _motion_bound_property(mixed_robot, seed, scale)
    _motion_bound_property(default_robot, seed + 1, scale)


@pytest.mark.mbm
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.05, 0.5, 2.0]))
def test_motion_bounds_of_the_panda_hold_along_the_edge(panda: RobotModel, seed: int,
                                                         scale: float) -> None:
    _motion_bound_property(panda, seed, scale)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), clearance=st.sampled_from([0.0, 0.01]))
def test_inflated_samples_of_a_path_certify_only_free_edges(sphere_robot: RobotModel, seed: int,
                                                            clearance: float) -> None:
    """A path's edges through the blocked stage together (their intervals packed 8 per pass,
    each pass padded for the neediest): edges of very different lengths from near contact;
    every edge certified is free with the clearance at 10^4 configurations (exact oracle), and
    was certified alone too (a pass never pads an interval less than its own edge would); the
    same for the batch entry ``edges_certified_packed``."""
    rng = np.random.default_rng(seed)
    world = _mixed_world(rng)
    checker = CollisionChecker(sphere_robot)
    oracle = CollisionChecker(sphere_robot, padding=clearance) if clearance > 0 else checker
    F, I = checker.packed(world)
    BF, BI = _block(checker, world)
    edges = [_near_contact_edge(sphere_robot, checker, world, rng, s)
             for s in (0.02, 0.3, 1.5, 0.1, 0.8, 0.05)]
    Q0 = np.array([a for a, _ in edges])
    D = np.array([b - a for a, b in edges])
    done = np.zeros(len(edges), dtype=np.bool_)
    swept_path_certified_packed(Q0, D, np.zeros_like(D), F, I, BF, BI, True, clearance, done)
    for (a, b), ok_path in zip(edges, done):
        if ok_path:
            ok = oracle.is_valid_batch(_dense(a, b), world)
            assert ok.all(), (f"a path's inflated samples certified an edge colliding at t = "
                              f"{np.flatnonzero(~ok)[0] / (ORACLE_SAMPLES - 1):.5f}: {a} -> {b}")
            assert swept_certified_packed(a, b - a, np.zeros(a.shape[0]), F, I, BF, BI, True,
                                          clearance) == 1
    # the batch entry (the stage over all edges together, advancement for the rest)
    out = np.zeros(len(edges), dtype=np.int64)
    edges_certified_packed(Q0, D, F, I, BF, BI, True, clearance, out)
    assert np.all(out[done] == 1)
    for (a, b), code in zip(edges, out):
        assert code in (0, 1)
        if code == 1:
            assert oracle.is_valid_batch(_dense(a, b), world).all(), f"{a} -> {b}"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), clearance=st.sampled_from([0.0, 0.01]),
       scale=st.sampled_from([0.1, 0.5, 1.5]), blocked=st.booleans())
def test_inflated_samples_alone_certify_only_free_edges(
        sphere_robot: RobotModel, mixed_robot: RobotModel, seed: int, clearance: float,
        scale: float, blocked: bool) -> None:
    """The inflated-sample stage by itself (no conservative advancement behind it), on the
    blocked kernels (the sphere arm) and the scalar ones (the same arm with boxes, capsules and
    cylinders; and the sphere arm without a block scene), with continuous, prismatic and mimic
    joints."""
    world = _mixed_world(np.random.default_rng(seed))
    _stage_property(sphere_robot, world, seed, clearance, scale, blocked)
    _stage_property(mixed_robot, world, seed + 1, clearance, scale, False)


@pytest.mark.mbm
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.05, 0.2, 0.6]),
       clearance=st.sampled_from([0.0, 0.005]))
def test_inflated_samples_of_the_panda_in_the_cage_certify_only_free_edges(
        panda: RobotModel, cage_world: list, seed: int, scale: float, clearance: float) -> None:
    _stage_property(panda, cage_world, seed, clearance, scale, True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.2, 0.6, 1.5]),
       blocked=st.booleans())
def test_inflated_samples_never_certify_an_edge_meeting_a_ball(
        sphere_robot: RobotModel, seed: int, scale: float, blocked: bool) -> None:
    """A ball grown until the brute-force closest approach of the edge meets it by 0.1-1 mm:
    the stage never certifies the edge; missed by 1 cm: it does, alone or with conservative
    advancement behind it (``first_uncertified_blocked``)."""
    robot = sphere_robot
    checker = CollisionChecker(robot)
    a, b, center = _free_edge_and_ball(robot, checker, np.random.default_rng(seed), scale, -1)
    gap, _ = _ball_gap(checker, a, b, center, 0.02)
    assume(gap > 0.0)
    for delta in (1e-3, 1e-4, -1e-2):
        world = [WorldObject(Sphere(0.02 + gap + delta), _at(center), "ball")]
        F, I = checker.packed(world)
        BF, BI = _block(checker, world) if blocked else (np.zeros(0), np.zeros(0, np.int64))
        z = np.zeros(a.shape[0])
        code = swept_certified_packed(a, b - a, z, F, I, BF, BI, False, 0.0)
        bad, _ = first_uncertified_blocked(a[None], (b - a)[None], z[None], F, I, BF, BI, False,
                                           0.0)
        if delta > 0.0:
            assert code == 0 and bad == 0, f"an edge meeting the ball by {delta} m certified"
        else:
            assert bad == -1, f"an edge 1 cm from the ball not certified: {a} -> {b}"


@pytest.mark.mbm
def test_blocked_path_certification_agrees_with_advancement(panda: RobotModel) -> None:
    """On discrete-planner paths of the sphere Panda in the MotionBenchMaker cage, the blocked
    certification (inflated samples, then advancement) refuses exactly the paths that advancement
    alone refuses, or fewer only where the dense oracle finds them free."""
    import mbm

    problems = mbm.load_problems()["problems"]["cage"][:8]
    checker = CollisionChecker(panda)
    for k, p in enumerate(problems):
        world = mbm.world_of(p, "cage")
        path = BiRRT(checker, RRTOptions(seed=k, edge_validation="discrete"), world).plan(
            p["start"], p["goals"][0], time_limit=5.0).waypoints
        F, I = checker.packed(world)
        BF, BI = _block(checker, world)
        Q0 = np.ascontiguousarray(path[:-1])
        D = np.ascontiguousarray(np.diff(path, axis=0))
        Z = np.zeros_like(D)
        bad_blocked, _ = first_uncertified_blocked(Q0, D, Z, F, I, BF, BI, True, 0.0)
        bad_scalar = first_uncertified(Q0, D, Z, F, I, True, 0.0)
        if bad_blocked == -1:
            dense = np.concatenate([_dense(a, b, 2000) for a, b in itertools.pairwise(path)])
            assert checker.is_valid_batch(dense, world).all()
        else:
            assert bad_scalar >= 0
