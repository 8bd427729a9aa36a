"""BiRRT planner: every path is re-checked independently (``is_valid_batch`` on a dense
resampling at 32 points per radian), plus reproducibility, shortening, errors, continuous joints,
goal regions, cancel, time limit and progress.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    ConfigurationError,
    GoalInCollisionError,
    GoalUnreachableError,
    NoPathFoundError,
    OutsideLimitsError,
    PlanningCancelledError,
    RobotModel,
    StartInCollisionError,
    WorldObject,
    default_robot_paths,
)
from robot_collision.geometry.transforms import make_pose
from robot_collision.planning import rrt as rrt_mod
from robot_collision.planning.ik import WorkspaceGoalRegion
from robot_collision.planning.rrt import BiRRT, PlanResult, ProgressInfo, RRTOptions, path_length

MBM = Path(__file__).resolve().parents[4] / "shared" / "benchmarks" / "panda_mbm"

# A planar arm: joint1 continuous, joint2 revolute, both about z; capsule links in z = 0.
PLANAR_URDF = """<?xml version="1.0"?>
<robot name="planar">
  <link name="base"/>
  <link name="link1">
    <collision><origin xyz="0.25 0 0" rpy="0 1.5707963 0"/>
      <geometry><capsule radius="0.05" length="0.5"/></geometry></collision>
  </link>
  <link name="link2">
    <collision><origin xyz="0.2 0 0" rpy="0 1.5707963 0"/>
      <geometry><capsule radius="0.05" length="0.4"/></geometry></collision>
  </link>
  <joint name="joint1" type="continuous">
    <parent link="base"/><child link="link1"/><axis xyz="0 0 1"/>
    <limit velocity="2.0" effort="1"/>
  </joint>
  <joint name="joint2" type="revolute">
    <parent link="link1"/><child link="link2"/><origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="2.5" velocity="2.0" effort="1"/>
  </joint>
</robot>
"""


def dense(path: np.ndarray, points_per_radian: float = 32.0) -> np.ndarray:
    """Independent resampling of a (k, n) path: ceil(32 * |edge|) + 1 points per edge."""
    out = [path[:1]]
    for a, b in itertools.pairwise(path):
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) * points_per_radian)))
        t = np.linspace(0.0, 1.0, steps + 1)[1:, None]
        out.append(a + (b - a) * t)
    return np.concatenate(out)


def assert_path_valid(checker: CollisionChecker, path: np.ndarray, world: list,
                      ignore_self: bool = False) -> None:
    assert path.ndim == 2 and path.shape[1] == checker.robot.num_joints
    Q = dense(path)
    ok = checker.is_valid_batch(Q, world, ignore_self=ignore_self)
    assert ok.all(), f"{int((~ok).sum())} of {len(Q)} densely re-checked configurations collide"
    assert checker.robot.within_limits(path, tol=1e-9) or checker.robot.is_continuous.any()


@pytest.fixture(scope="module")
def arm() -> RobotModel:
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf)


@pytest.fixture(scope="module")
def world() -> list[WorldObject]:
    eye = np.eye(3)
    return [
        WorldObject(Box(1.6, 1.6, 0.04), make_pose(eye, [0, 0, -0.03]), "floor"),
        WorldObject(Box(0.3, 0.8, 0.5), make_pose(eye, [0.65, 0.0, 0.25]), "crate"),
        WorldObject(Capsule(0.05, 0.8), make_pose(eye, [0.0, 0.6, 0.4]), "pole"),
        WorldObject(Box(0.5, 0.05, 0.5), make_pose(eye, [-0.4, -0.45, 0.6]), "panel"),
    ]


@pytest.fixture(scope="module")
def checker(arm: RobotModel) -> CollisionChecker:
    return CollisionChecker(arm)


@pytest.fixture(scope="module")
def pairs(arm: RobotModel, checker: CollisionChecker, world: list) -> list[tuple]:
    rng = np.random.default_rng(7)
    Q = np.array([arm.random_configuration(rng) for _ in range(200)])
    good = Q[checker.is_valid_batch(Q, world)]
    return [(good[2 * i], good[2 * i + 1]) for i in range(6)]


@pytest.fixture(scope="module")
def planar() -> RobotModel:
    return RobotModel.from_urdf(PLANAR_URDF)


def test_paths_valid_and_reproducible(checker, world, pairs) -> None:
    planner = BiRRT(checker, RRTOptions(seed=3), world)
    for start, goal in pairs:
        res = planner.plan(start, goal)
        assert isinstance(res, PlanResult) and res.success
        P = res.waypoints
        np.testing.assert_array_equal(P[0], start)
        np.testing.assert_array_equal(P[-1], goal)
        assert_path_valid(checker, P, world)
        s = res.stats
        assert s.exit_reason == "success" and s.seed == 3
        assert s.start_tree_size >= 1 and s.goal_tree_size >= 1 and s.planning_time > 0
        again = planner.plan(start, goal)
        np.testing.assert_array_equal(again.waypoints, P)
        assert again.stats.iterations == s.iterations


def test_chunk_boundaries_and_rollbacks_do_not_change_the_result(checker, world, pairs,
                                                                  monkeypatch) -> None:
    """Yield after every iteration and interrupt iterations (rolled back, redone): same path."""
    start, goal = pairs[1]
    ref = BiRRT(checker, RRTOptions(seed=11), world).plan(start, goal)
    monkeypatch.setattr(rrt_mod, "_SOFT_CHUNK_NS", 0)
    monkeypatch.setattr(rrt_mod, "_HARD_CHUNK_NS", 2_000)
    res = BiRRT(checker, RRTOptions(seed=11), world).plan(start, goal)
    np.testing.assert_array_equal(res.waypoints, ref.waypoints)
    assert res.stats.iterations == ref.stats.iterations
    assert res.stats.collision_checks == ref.stats.collision_checks


def _small_trees(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Start every run with room for 8 nodes per tree (growth then happens many times)."""
    orig = BiRRT._run_parameters

    def small(self, region, ee):  # type: ignore[no-untyped-def]
        max_add, _, fpar, ipar = orig(self, region, ee)
        return max_add, 8, fpar, ipar

    monkeypatch.setattr(BiRRT, "_run_parameters", small)


def test_tree_growth_does_not_change_the_result(checker, world, pairs, monkeypatch) -> None:
    """Trees outgrowing their storage are copied into larger arrays (nodes, their joint-major
    copy for the nearest-neighbour scan, parents, radii) between chunks: same path."""
    refs = [BiRRT(checker, RRTOptions(seed=5), world).plan(s, g) for s, g in pairs[:3]]
    _small_trees(monkeypatch)
    for (start, goal), ref in zip(pairs[:3], refs):
        res = BiRRT(checker, RRTOptions(seed=5), world).plan(start, goal)
        np.testing.assert_array_equal(res.waypoints, ref.waypoints)
        assert res.stats.iterations == ref.stats.iterations


def test_edge_check_grid_is_robust_to_rounding(checker, world, pairs) -> None:
    """Full-length extensions stay clear of a ceil() boundary: an edge of exactly 32 steps
    of 1/32 rad would be re-checked at 32 or 33 configurations depending on rounding."""
    planner = BiRRT(checker, RRTOptions(seed=9, max_connection_distance=1.0), world)
    for start, goal in pairs:
        P = planner.plan(start, goal).waypoints
        lengths = np.linalg.norm(np.diff(P, axis=0), axis=1)
        full = lengths[np.abs(lengths - 1.0) < 1e-6]  # clamped extensions
        assert np.all(full < 1.0) and np.all(np.ceil(full * 32) == 32)
        steps = lengths * 32
        assert np.all(np.abs(steps - np.round(steps)) > 1e-12)


def test_connect_heuristic_and_no_dynamic_domain(checker, world, pairs) -> None:
    for opts in (RRTOptions(seed=1, enable_connect_heuristic=True),
                 RRTOptions(seed=1, dynamic_domain=False, balance_trees=False,
                            max_connection_distance=0.3)):
        planner = BiRRT(checker, opts, world)
        for start, goal in pairs[:3]:
            assert_path_valid(checker, planner.plan(start, goal).waypoints, world)


def test_shorten_never_lengthens_and_keeps_validity(checker, world, pairs) -> None:
    planner = BiRRT(checker, RRTOptions(seed=5, max_connection_distance=0.4), world)
    for start, goal in pairs:
        P = planner.plan(start, goal).waypoints
        S = planner.shorten(P, iterations=60, rng=np.random.default_rng(0))
        assert path_length(S) <= path_length(P) + 1e-9
        np.testing.assert_allclose(S[0], P[0], atol=1e-12)
        np.testing.assert_allclose(S[-1], P[-1], atol=1e-12)
        assert_path_valid(checker, S, world)
        np.testing.assert_array_equal(S, planner.shorten(P, iterations=60,
                                                         rng=np.random.default_rng(0)))
        assert planner.path_length(S) == pytest.approx(path_length(S))
    # a detour through a free configuration gets shorter
    start, goal = pairs[0]
    assert np.array_equal(planner.shorten(np.array([start, goal]), 10), np.array([start, goal]))


def test_interpolate(checker, world, pairs) -> None:
    planner = BiRRT(checker, RRTOptions(validation_distance=0.05), world)
    assert planner.warmup() >= 0.0
    start, goal = pairs[0]
    P = np.array([start, 0.5 * (start + goal), goal])
    D = planner.interpolate(P)
    assert np.max(np.linalg.norm(np.diff(D, axis=0), axis=1)) <= 0.05 + 1e-12
    for w in P:
        assert np.min(np.linalg.norm(D - w, axis=1)) < 1e-12
    D3 = planner.interpolate(P, num=3)
    assert len(D3) == 2 * 4 + 1
    np.testing.assert_allclose(D3[4], P[1])
    with pytest.raises(ConfigurationError):
        planner.interpolate(P[:, :3])


def test_input_errors(arm, checker, world, pairs) -> None:
    planner = BiRRT(checker, RRTOptions(seed=0), world)
    start, goal = pairs[0]
    with pytest.raises(ConfigurationError, match="7 values"):
        planner.plan(start[:5], goal)
    with pytest.raises(ConfigurationError, match="non-finite"):
        planner.plan(np.r_[start[:6], np.nan], goal)
    bad = goal.copy()
    bad[1] = arm.upper[1] + 0.2
    with pytest.raises(OutsideLimitsError, match="joint2"):
        planner.plan(start, bad)
    with pytest.raises(ConfigurationError):
        RRTOptions(max_connection_distance=0)
    with pytest.raises(ConfigurationError):
        RRTOptions(workspace_goal_region_bias=2.0)
    with pytest.raises(ConfigurationError, match=r"\[0, 1\)"):
        RRTOptions(workspace_goal_region_bias=1.0)  # documented [0, 1): accepted before
    with pytest.raises(ConfigurationError):
        planner.plan(start, goal, time_limit=-1.0)
    # tiny resolutions: the edge-check count overflowed (1e-300: an edge got one check) and a
    # tiny connection distance allocated a tree of 1e300 nodes (ValueError)
    with pytest.raises(ConfigurationError, match="validation_distance"):
        RRTOptions(validation_distance=1e-300)
    with pytest.raises(ConfigurationError, match=r"max_connection_distance.*too small"):
        BiRRT(checker, RRTOptions(max_connection_distance=1e-300), world).plan(start, goal)


def test_every_edge_respects_max_connection_distance_without_the_heuristic(
        arm, checker) -> None:
    """Free space, start and goal far apart: the first start-goal attempt used to be one
    straight edge (1.9 rad with the setting at 0.1) although the heuristic was off."""
    start = arm.home_configuration()
    goal = np.clip(start + 0.7, arm.lower, arm.upper)
    for mcd in (0.1, 0.35):
        res = BiRRT(checker, RRTOptions(max_connection_distance=mcd, seed=1)).plan(start, goal)
        edges = np.linalg.norm(np.diff(res.waypoints, axis=0), axis=1)
        assert np.linalg.norm(goal - start) > 5 * mcd
        assert edges.max() <= mcd + 1e-9, edges.max()
        assert np.allclose(res.waypoints[0], start) and np.allclose(res.waypoints[-1], goal)
        assert_path_valid(checker, res.waypoints, [])
    # with the heuristic the direct edge may be long (MATLAB manipulatorRRT)
    res = BiRRT(checker, RRTOptions(max_connection_distance=0.1, enable_connect_heuristic=True,
                                    seed=1)).plan(start, goal)
    assert len(res.waypoints) == 2


def test_skip_option_with_a_checker_is_honoured_or_refused(arm) -> None:
    parent = CollisionChecker(arm)  # skip="parent"
    BiRRT(parent, RRTOptions(skip="parent"))  # the same rule: fine
    with pytest.raises(ConfigurationError, match="skip"):
        BiRRT(parent, RRTOptions(skip="adjacent"))  # was silently ignored
    pairs = [(arm.body_names[0], arm.body_names[2])]
    listed = CollisionChecker(arm, skip=pairs)
    BiRRT(listed, RRTOptions(skip=[(p[1], p[0]) for p in pairs]))  # same pairs, either order
    built = BiRRT(arm, RRTOptions(skip="adjacent"))  # from a robot: the option is used
    assert built.checker.skip == "adjacent"
    assert BiRRT(arm).checker.skip == "parent"


def test_start_and_goal_in_collision_name_the_pair(arm, checker, world, pairs) -> None:
    start, goal = pairs[0]
    home = arm.home_configuration()
    tool = arm.link_poses(home)[arm.link_index("tool")][:3, 3]
    blocker = WorldObject(Box(0.1, 0.1, 0.1), make_pose(np.eye(3), tool), "blocker")
    planner = BiRRT(checker, RRTOptions(seed=0), [*world, blocker])
    with pytest.raises(StartInCollisionError, match="blocker"):
        planner.plan(home, goal)
    with pytest.raises(GoalInCollisionError, match="blocker"):
        planner.plan(start, home)
    # self collision (link5 <-> link7 with the wrist folded) names the links; ignorable
    folded = np.array([-2.23, 0.715, 0.873, 0.483, -0.69, 2.083, 2.937])
    assert not checker.is_valid(folded)
    with pytest.raises(StartInCollisionError, match="link5 <-> link7"):
        BiRRT(checker, RRTOptions(seed=0)).plan(folded, home)
    res = BiRRT(arm, RRTOptions(seed=0, ignore_self_collision=True)).plan(folded, home)
    assert_path_valid(checker, res.waypoints, [], ignore_self=True)


def _walled(planar: RobotModel) -> list[WorldObject]:
    """Two blocks stop link1 from turning through +-90 deg: q1 = pi is unreachable from 0."""
    eye = np.eye(3)
    return [WorldObject(Box(0.1, 0.2, 0.2), make_pose(eye, [0.0, 0.3, 0.0]), "north"),
            WorldObject(Box(0.1, 0.2, 0.2), make_pose(eye, [0.0, -0.3, 0.0]), "south")]


def test_no_path_max_iterations_and_time_limit(planar) -> None:
    world = _walled(planar)
    planner = BiRRT(planar, RRTOptions(seed=0, max_iterations=300), world)
    with pytest.raises(NoPathFoundError, match="max_iterations=300") as err:
        planner.plan([0.0, 0.0], [np.pi, 0.0])
    assert err.value.stats.exit_reason == "max_iterations"  # type: ignore[attr-defined]
    assert err.value.stats.iterations == 300  # type: ignore[attr-defined]
    planner = BiRRT(planar, RRTOptions(seed=0, max_iterations=10**9), world)
    t0 = time.perf_counter()
    with pytest.raises(NoPathFoundError, match="time limit") as err:
        planner.plan([0.0, 0.0], [np.pi, 0.0], time_limit=0.15)
    elapsed = time.perf_counter() - t0
    assert err.value.stats.exit_reason == "time_limit"  # type: ignore[attr-defined]
    # the limit is checked every ms; 100 ms of slack for a preempted test process on a loaded
    # CI machine, where one scheduling delay can exceed 50 ms
    assert 0.15 <= elapsed < 0.15 + 0.1


def test_cancel_within_10_ms_and_progress(planar) -> None:
    world = _walled(planar)
    planner = BiRRT(planar, RRTOptions(seed=0, max_iterations=10**9), world)
    latencies = []
    reports: list[ProgressInfo] = []
    for _ in range(3):
        ev = threading.Event()
        set_at: list[float] = []

        def fire(ev: threading.Event = ev, set_at: list[float] = set_at) -> None:
            time.sleep(0.12)
            set_at.append(time.perf_counter())
            ev.set()

        th = threading.Thread(target=fire)
        th.start()
        with pytest.raises(PlanningCancelledError) as err:
            planner.plan([0.0, 0.0], [np.pi, 0.0], should_stop=ev, progress=reports.append)
        latencies.append(time.perf_counter() - set_at[0])
        th.join()
        assert err.value.stats.exit_reason == "cancelled"  # type: ignore[attr-defined]
    assert sorted(latencies)[1] < 0.010, latencies
    # progress every ~50 ms while planning (0.12 s runs)
    assert len(reports) >= 3
    assert all(r.elapsed > 0 and r.start_tree_size >= 1 for r in reports)
    # a callable hook, already true: stops at once
    t0 = time.perf_counter()
    with pytest.raises(PlanningCancelledError):
        planner.plan([0.0, 0.0], [np.pi, 0.0], should_stop=lambda: True)
    assert time.perf_counter() - t0 < 0.05


def test_continuous_joint_uses_shortest_difference(planar) -> None:
    checker = CollisionChecker(planar)
    planner = BiRRT(checker, RRTOptions(seed=2))
    start, goal = np.array([3.0, 0.3]), np.array([-3.0, 0.3])
    res = planner.plan(start, goal)
    P = res.waypoints
    # through +-pi: 2 pi - 6 = 0.283 rad, not 6 rad through 0
    assert path_length(P) == pytest.approx(2 * np.pi - 6.0, abs=1e-9)
    assert np.all(np.abs(np.diff(P[:, 0])) <= np.pi)
    assert np.isclose(np.mod(P[-1, 0] - goal[0] + np.pi, 2 * np.pi) - np.pi, 0.0, atol=1e-9)
    assert_path_valid(checker, P, [])
    # with the short way blocked, the long way round (through q1 = 0) is found
    wall = [WorldObject(Box(0.2, 0.1, 0.2), make_pose(np.eye(3), [-0.45, 0.0, 0.0]), "wall")]
    res = BiRRT(checker, RRTOptions(seed=2), wall).plan([2.6, 0.0], [-2.6, 0.0])
    P = res.waypoints
    assert path_length(P) > 4.0
    assert_path_valid(checker, P, wall)
    S = planner.shorten(np.array([[3.0, 0.0], [3.1, 0.0], [-3.1, 0.0], [-3.0, 0.0]]), 20, 0)
    assert path_length(S, planar.is_continuous) <= 2 * np.pi - 6.0 + 1e-9
    # sampling box of the unbounded joint is (-pi, pi] by default
    assert planner._sampling_bounds()[0][0] == -np.pi


def test_goal_region_plan_ends_inside(arm, checker, world, pairs) -> None:
    ref = make_pose(np.eye(3), [0.0, -0.5, 0.5])
    ref[:3, :3] = np.diag([1.0, -1.0, -1.0])  # tool pointing down
    bounds = np.array([[-0.05, 0.05], [-0.05, 0.05], [0.0, 0.1], [-np.pi, np.pi], [0, 0], [0, 0]])
    region = WorkspaceGoalRegion("tool", ref, bounds)
    planner = BiRRT(checker, RRTOptions(seed=4), world)
    start = pairs[0][0]
    for seed in (4, 5):
        planner.options = RRTOptions(seed=seed)
        res = planner.plan(start, region)
        P = res.waypoints
        assert_path_valid(checker, P, world)
        np.testing.assert_array_equal(P[-1], res.goal)
        pose = arm.link_poses(P[-1])[arm.link_index("tool")]
        assert region.contains(pose, tol=1e-3)
        assert res.stats.goal_samples >= 1


def test_goal_region_unreachable(checker, world, pairs) -> None:
    far = WorkspaceGoalRegion("tool", make_pose(np.eye(3), [3.0, 0.0, 0.5]))
    planner = BiRRT(checker, RRTOptions(seed=0, goal_ik_attempts=10), world)
    with pytest.raises(GoalUnreachableError, match="tool"):
        planner.plan(pairs[0][0], far)


@pytest.mark.skipif(not (MBM / "problems.json").is_file(), reason="needs ../shared panda_mbm")
def test_mbm_problems_sample() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import mbm  # type: ignore[import-not-found]

    robot = mbm.panda()
    checker = CollisionChecker(robot)
    problems = mbm.load_problems()["problems"]
    for name in ("bookshelf_small", "cage"):
        for p in problems[name][:2]:
            world = mbm.world_of(p, name)
            planner = BiRRT(checker, RRTOptions(seed=p["index"]), world)
            res = planner.plan(p["start"], p["goals"][0], time_limit=5.0)
            assert_path_valid(checker, res.waypoints, world)
            assert_path_valid(checker, planner.shorten(res.waypoints, 50), world)


@pytest.mark.skipif(not (MBM / "problems.json").is_file(), reason="needs ../shared panda_mbm")
def test_mbm_tree_growth_on_the_blocked_kernel(monkeypatch) -> None:
    """The Panda scene runs on the 8-configuration kernel: growth keeps the plan the same."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import mbm  # type: ignore[import-not-found]

    robot = mbm.panda()
    checker = CollisionChecker(robot)
    p = mbm.load_problems()["problems"]["cage"][1]
    world = mbm.world_of(p, "cage")
    assert checker._prepare(world).block is not None
    ref = BiRRT(checker, RRTOptions(seed=2), world).plan(p["start"], p["goals"][0])
    assert ref.stats.start_tree_size + ref.stats.goal_tree_size > 16
    _small_trees(monkeypatch)
    res = BiRRT(checker, RRTOptions(seed=2), world).plan(p["start"], p["goals"][0])
    np.testing.assert_array_equal(res.waypoints, ref.waypoints)
    assert_path_valid(checker, res.waypoints, world)
