"""Guarantees of the collision-avoiding velocity filter (robot_collision.control.velocity_filter).

Simulation only (no ROS): q ← q + q̇ dt at dt = 2 ms. Distances are checked after every tick with
an independent exhaustive evaluation (``CollisionChecker.check(..., exhaustive=True).signed`` on
a checker the filter does not use), never with the filter's own clearance table.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

from robot_collision import (
    Box,
    CollisionChecker,
    ConfigurationError,
    RobotModel,
    Sphere,
    UnknownNameError,
    WorldObject,
    default_robot_paths,
)
from robot_collision.control.velocity_filter import FilterOptions, FilterResult, VelocityFilter

ROOT = Path(__file__).resolve().parents[3]  # repository root
sys.path.insert(0, str(ROOT / "benchmarks"))
import mbm  # noqa: E402

DT = 0.002
TOL = 1e-3  # the guarantee: ϕ ≥ d_s − 1 mm
OPTS = FilterOptions()


def _pose(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def arm() -> RobotModel:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf if srdf.is_file() else None)
    # groups from the SRDF when it has them; otherwise the same split defined here
    if "arm" not in robot.groups:
        robot.add_group("arm", robot.joint_names)
    if "shoulder" not in robot.groups:
        robot.add_group("shoulder", ["joint1", "joint2"])
    if "forearm" not in robot.groups:
        robot.add_group("forearm", ["joint3", "joint4"])
    if "wrist" not in robot.groups:
        robot.add_group("wrist", ["joint5", "joint6", "joint7"])
    return robot


@pytest.fixture(scope="module")
def arm_world() -> list[WorldObject]:
    return [
        WorldObject(Box(0.1, 1.0, 1.0), _pose(0.55, 0.0, 0.75), "wall"),
        WorldObject(Sphere(0.1), _pose(0.0, 0.5, 1.0), "ball"),
        WorldObject(Box(0.4, 0.4, 0.05), _pose(-0.45, -0.3, 0.6), "shelf"),
    ]


@pytest.fixture(scope="module")
def panda() -> tuple[RobotModel, list[WorldObject], np.ndarray]:
    if not mbm.available():
        pytest.skip("MotionBenchMaker data missing (../shared/benchmarks/panda_mbm)")
    prob = mbm.load_problems()["problems"]["cage"][0]
    return mbm.panda(), mbm.world_of(prob, "cage"), np.array(prob["start"], dtype=float)


# ---------------------------------------------------------------------- helpers
def _closest_row(checker: CollisionChecker, q: np.ndarray, world: list[WorldObject],
                 kind: int) -> np.ndarray | None:
    """Jacobian of the closest movable pair of ``kind`` (0 self, 1 world)."""
    tab = checker.clearance(q, world, np.inf)
    ok = (tab.kinds == kind) & (np.abs(tab.jacobians).max(axis=1) > 1e-6)
    if not ok.any():
        return None
    k = np.flatnonzero(ok)[np.argmin(tab.distances[ok])]
    return tab.jacobians[k]


def _towards(J: np.ndarray, vmax: np.ndarray) -> np.ndarray:
    """−J scaled so the fastest joint runs at its velocity limit: straight into the pair."""
    return -J / np.max(np.abs(J) / vmax)


def _adversarial(robot: RobotModel, world: list[WorldObject], q0: np.ndarray, ticks: int,
                 seed: int, filt: VelocityFilter | None = None, lag: int = 0,
                 bound_lag: bool = True, fail: bool = True) -> dict[str, Any]:
    """Drive the filter with random commands and commands straight into obstacles and into
    self-collision; check every tick against an independent exhaustive evaluation.

    ``lag``: the filter sees the configuration of ``lag`` ticks ago (a late joint state with an
    honest stamp), the robot's TRUE configuration is judged; ``bound_lag``: tell the filter how
    far each joint can have moved since (the largest output speed since × the age)."""
    rng = np.random.default_rng(seed)
    if filt is None:
        filt = VelocityFilter(CollisionChecker(robot), world=world)
    judge = CollisionChecker(robot)  # independent of the filter's checker and its caches
    adversary = CollisionChecker(robot)
    vmax = np.where(np.isfinite(robot.velocity_limits), robot.velocity_limits, 2.0)
    o = filt.options
    q = q0.copy()
    s0 = judge.check(q, world, exhaustive=True).signed
    m1 = len(judge.row_names)
    is_self = np.zeros(s0.shape, dtype=bool)
    is_self[:, :m1] = True
    ds = np.where(is_self, o.safety_distance_self, o.safety_distance_env)
    floor = np.minimum(s0, ds) - TOL  # pairs starting inside d_s may not get any closer
    low_self = low_env = np.inf
    worst = np.inf
    faults: dict[str, int] = {}
    modes = ["env", "random", "self", "fold", "env+random", "self"]
    mode, left, cmd, seg = "random", 0, np.zeros_like(q), 0
    fold = np.zeros_like(q)
    towards: np.ndarray | None = None
    past_q = [q.copy()] * (lag + 1)  # past_q[0]: what the filter sees
    past_v = [np.zeros_like(q)] * (lag + 1)  # outputs in force over the lag
    violations = 0
    for t in range(ticks):
        if left == 0:
            mode = modes[seg % len(modes)]
            seg += 1
            left = int(rng.integers(100, 500))
            cmd = rng.uniform(-vmax, vmax)
            fold = rng.choice([-1.0, 1.0], size=q.shape) * vmax * rng.uniform(0.3, 1.0, q.shape)
            towards = None
        left -= 1
        if mode == "random":
            c = cmd
        elif mode == "fold":  # fold every joint one way: links swing into each other
            c = fold
        else:
            if towards is None or t % 5 == 0:
                J = _closest_row(adversary, q, world, 0 if mode == "self" else 1)
                towards = _towards(J, vmax) if J is not None else cmd
            c = towards + (0.5 * cmd if mode == "env+random" else 0.0)
        seen = past_q[0]
        motion = None
        if lag and bound_lag:
            motion = np.abs(np.array(past_v)).max(axis=0) * lag * DT
        res = filt.filter(seen, c, DT, stamp_age=lag * DT, motion_bound=motion)
        if not res.ok:
            faults[res.fault.split(":")[0]] = faults.get(res.fault.split(":")[0], 0) + 1
            assert not res.velocity.any()
        q = q + res.velocity * DT
        past_q = [*past_q[1:], q.copy()]
        past_v = [*past_v[1:], res.velocity.copy()]
        inside = np.all(q >= robot.lower - 1e-9) and np.all(q <= robot.upper + 1e-9)
        if not inside and not fail:
            violations += 1
            q = np.clip(q, robot.lower, robot.upper)
        assert inside or not fail, (t, q)
        s = judge.check(q, world, exhaustive=True).signed
        bad = s < floor
        if bad.any() and not fail:
            violations += 1
        elif bad.any():
            i, j = np.argwhere(bad)[0]
            pytest.fail(f"tick {t} ({mode}): {judge.row_names[i]} - "
                        f"{judge.column_names(world)[j]} at {s[i, j]:.5f} m < {floor[i, j]:.5f} m")
        worst = min(worst, float((s - np.minimum(s0, ds)).min()))
        sf = np.where(s0 >= ds, s, np.inf)  # pairs that started outside d_s
        low_self = min(low_self, float(sf[is_self].min()))
        low_env = min(low_env, float(sf[~is_self].min()))
    return {"low_self": low_self, "low_env": low_env, "worst": worst, "faults": faults, "q": q,
            "violations": violations}


# ---------------------------------------------------------------------- adversarial loops
def test_adversarial_default_arm(arm: RobotModel, arm_world: list[WorldObject]) -> None:
    q0 = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 0.1, 0.0])
    out = _adversarial(arm, arm_world, q0, 10_000, seed=1)
    # the adversary really did push pairs onto their safety distance (the test is not vacuous)
    assert out["low_env"] < OPTS.safety_distance_env + 0.005, out
    assert out["low_self"] < OPTS.safety_distance_self + 0.005, out
    assert not out["faults"], out["faults"]


@pytest.mark.parametrize("lag", [25, 62])  # 100 / 250 ms at DT
def test_adversarial_late_states_cost_speed_not_clearance(
        arm: RobotModel, arm_world: list[WorldObject], lag: int) -> None:
    """Joint states that arrive 100 / 250 ms late (honest stamps): judged at the TRUE
    configuration, no pair gets inside its safety distance; without the motion bound the same
    loop does (the test is not vacuous)."""
    q0 = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 0.1, 0.0])
    opts = FilterOptions(state_timeout=1.0)
    blind = _adversarial(arm, arm_world, q0, 3000, seed=1, lag=lag, bound_lag=False,
                         fail=False, filt=VelocityFilter(CollisionChecker(arm), opts, arm_world))
    assert blind["violations"] > 0, blind
    out = _adversarial(arm, arm_world, q0, 3000, seed=1, lag=lag,
                       filt=VelocityFilter(CollisionChecker(arm), opts, arm_world))
    assert out["violations"] == 0 and not out["faults"], out
    # it was pushed close (at 250 ms the full-speed adversary keeps a wide berth: speed lost)
    assert min(out["low_env"], out["low_self"]) < OPTS.safety_distance_env + 0.02, out


def test_adversarial_panda_cage(panda: tuple[RobotModel, list[WorldObject], np.ndarray]) -> None:
    robot, world, q0 = panda
    out = _adversarial(robot, world, q0, 10_000, seed=2)
    assert out["low_env"] < OPTS.safety_distance_env + 0.005, out
    assert out["low_self"] < OPTS.safety_distance_self + 0.005, out
    assert not out["faults"], out["faults"]


# ---------------------------------------------------------------------- resting on the boundary
def _hold_against(robot: RobotModel, world: list[WorldObject], q0: np.ndarray,
                  target: np.ndarray, filt: VelocityFilter, ticks: int = 1500,
                  gain: float = 10.0) -> tuple[np.ndarray, int]:
    """Joint P-control (``gain`` 1/s, clipped to the velocity limits) towards a ``target``
    the filter cannot reach, at 500 Hz; every 10th tick checked by an independent exhaustive
    evaluation. Returns the outputs (ticks, n) and the first tick a pair changed the command."""
    judge = CollisionChecker(robot)
    vmax = np.asarray(robot.velocity_limits)
    o = filt.options
    s0 = judge.check(q0, world, exhaustive=True).signed
    m1 = len(judge.row_names)
    ds = np.full(s0.shape, o.safety_distance_env)
    ds[:, :m1] = o.safety_distance_self
    floor = np.minimum(s0, ds) - TOL
    q = q0.copy()
    outs = np.empty((ticks, q.shape[0]))
    contact = -1
    for t in range(ticks):
        res = filt.filter(q, np.clip(gain * (target - q), -vmax, vmax), DT)
        assert res.ok, res.fault
        if contact < 0 and any("=" in a for a in res.active_constraints):
            contact = t
        outs[t] = res.velocity
        q = q + res.velocity * DT
        if t % 10 == 9 or t == ticks - 1:
            s = judge.check(q, world, exhaustive=True).signed
            assert np.all(s >= floor), (t, float((s - floor).min()))
    assert contact >= 0, "the target was reachable: no pair ever constrained the command"
    return outs, contact


def _assert_settles(outs: np.ndarray, contact: int) -> None:
    """At rest against the boundary the output settles: once the speed fell below 0.01 rad/s
    it is at most 1e-3 rad/s within 0.5 s (250 ticks) and no joint alternates in sign."""
    speed = np.linalg.norm(outs, axis=1)
    slow = np.flatnonzero(speed[contact:] < 0.01)
    assert slow.shape[0], f"never came to rest: speed {speed[-3:]} rad/s, outputs\n{outs[-4:]}"
    rest = contact + int(slow[0])
    assert rest + 250 < outs.shape[0], "came to rest too late to judge"
    assert speed[rest + 250:].max() <= 1e-3, speed[rest + 250:].max()
    after = np.where(np.abs(outs[rest:]) > 1e-6, np.sign(outs[rest:]), 0.0)
    flips = after[1:] * after[:-1] < 0
    alternating = flips[1:] & flips[:-1]
    assert not alternating.any(), np.argwhere(alternating)[:5]


def test_rest_against_wall_without_chatter(arm: RobotModel, arm_world: list[WorldObject]) -> None:
    """The tool is driven into the wall (unreachable target): its two fingers are equally
    close to the wall, so the closest witness switches between them; the output must settle
    instead of flipping sign every tick (it was ±0.1 rad/s on joints 1, 3, 5, 7 forever, and
    the tool settled 2.4 mm inside the safety distance)."""
    q0 = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 0.1, 0.0])
    target = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.0])
    filt = VelocityFilter(CollisionChecker(arm), world=arm_world)
    outs, contact = _hold_against(arm, arm_world, q0, target, filt)
    _assert_settles(outs, contact)


def test_rest_against_cage_without_chatter(
        panda: tuple[RobotModel, list[WorldObject], np.ndarray]) -> None:
    """The Panda's link6 spheres pressed against the cage's side (the output alternated with
    ±0.02-0.15 rad/s on six joints)."""
    robot, world, q0 = panda
    target = np.array([0.035, 0.566, -1.068, -1.01, -0.565, 1.341, 1.768])
    filt = VelocityFilter(CollisionChecker(robot), world=world)
    outs, contact = _hold_against(robot, world, q0, target, filt)
    _assert_settles(outs, contact)


def _camera_box_cloud(box: WorldObject, rng: np.random.Generator, noise: float) -> WorldObject:
    """The demo's camera view of ``box`` (160 x 120 pixels, from above at 40 degrees), thinned
    to 1 cm, as balls of 1 cm around the points: an irregular sampling of the faces."""
    from robot_collision.geometry.point_cloud import PointCloud
    from robot_collision.geometry.transforms import pose_from_position_quat
    from robot_collision.tools.depth_camera import DepthCamera, render_points

    cam = pose_from_position_quat([1.2, 0.3, 1.5], [-0.6363, -0.71091, 0.22319, 0.19977])
    P = render_points(DepthCamera(160, 120, 1.2217, 0.1, 4.0, noise), cam, [box], rng)
    P = P @ cam[:3, :3].T + cam[:3, 3]
    return WorldObject(PointCloud.downsampled(P, 0.01, 0.01), np.eye(4), "camera")


def test_refreshed_cloud_keeps_the_witnesses(arm: RobotModel) -> None:
    """The tool pushed down at a box known from a camera's cloud, which is measured again
    every 20 ticks (a new object each time, as a node gets it). The same points measured
    again must change nothing: with ``keep_witnesses`` the outputs are bit-identical to those
    against a cloud that never changes; forgetting the witnesses at every refresh (what
    ``set_world`` did) changed them (the tool jerked along the points for a few ticks). Every
    tick the tool stays clear of the true box and of the points (independent checker)."""
    from robot_collision.geometry.transforms import pose_from_position_quat

    dt = 0.01  # the demo's control period
    box = WorldObject(Box(0.2, 0.2, 0.4), pose_from_position_quat([0.0, 0.5, 0.2], [0, 0, 0, 1]),
                      "box")
    judge = CollisionChecker(arm)
    q0 = np.array([1.5708, 0.0, 0.0, 1.5, 0.0, 0.94, 0.0])  # the tool 19 cm above the box

    def push(q: np.ndarray) -> np.ndarray:
        """0.2 m/s straight down at the true box (along its distance gradient)."""
        tab = judge.clearance(q, [box])
        i = int(np.argmin(np.where(np.array(tab.other_bodies) == "box", tab.distances, np.inf)))
        v = -0.2 * tab.jacobians[i] / float(tab.jacobians[i] @ tab.jacobians[i])
        return v / max(1.0, float(np.linalg.norm(v)))

    def run(refresh: str) -> np.ndarray:
        rng = np.random.default_rng(0)
        first = _camera_box_cloud(box, rng, 0.0)
        filt = VelocityFilter(CollisionChecker(arm), world=[first])
        q = q0.copy()
        outs = np.empty((300, q.shape[0]))
        for t in range(outs.shape[0]):
            if refresh != "never" and t and t % 20 == 0:
                filt.set_world([_camera_box_cloud(box, rng, 0.0)],
                               keep_witnesses=refresh == "keep")
            res = filt.filter(q, push(q), dt)
            assert res.ok, res.fault
            outs[t] = res.velocity
            q = q + res.velocity * dt
            if refresh == "keep":
                d_box = judge.check(q, [box], exhaustive=True).signed.min()
                d_pts = judge.check(q, [first], exhaustive=True).signed.min()
                assert min(d_box, d_pts) >= OPTS.safety_distance_env - TOL, (t, d_box, d_pts)
        return outs

    static = run("never")
    assert np.array_equal(run("keep"), static)
    assert not np.array_equal(run("forget"), static)  # the refresh matters to this push


# ---------------------------------------------------------------------- acceleration limits
ACC = 10.0  # rad/s², every joint


def _accel_checked(filt: VelocityFilter, stats: dict[str, Any]) -> VelocityFilter:
    """``filt`` whose filter() also checks that every output not reported as relaxed changes
    by at most ACC dt per joint from the previous one (counting the relaxed ones)."""
    inner = filt.filter
    prev = np.zeros(filt.robot.num_joints)
    stats.update(ticks=0, relaxed=0, worst=0.0)

    def checked(q: Any, cmd: Any, dt: float, **kw: Any) -> FilterResult:
        nonlocal prev
        res = inner(q, cmd, dt, **kw)
        stats["ticks"] += 1
        if not res.ok:
            prev = np.zeros_like(prev)
            return res
        step = float(np.abs(res.velocity - prev).max()) / (ACC * dt)
        if "acceleration:relaxed" in res.active_constraints:
            stats["relaxed"] += 1
        else:
            stats["worst"] = max(stats["worst"], step)
            assert step <= 1.0 + 1e-9, (stats["ticks"], step, res.active_constraints)
        prev = res.velocity.copy()
        return res

    filt.filter = checked  # type: ignore[method-assign]
    return filt


def test_adversarial_with_acceleration_limits(arm: RobotModel,
                                              arm_world: list[WorldObject]) -> None:
    """The adversary of the loops above against a filter with acceleration limits: still 0
    margin violations, and the output changes by at most a dt per tick except on the few
    ticks where braking and clearance could not both hold (reported, the clearance wins)."""
    stats: dict[str, Any] = {}
    filt = _accel_checked(VelocityFilter(CollisionChecker(arm), FilterOptions(
        acceleration_limits=(ACC,)), world=arm_world), stats)
    q0 = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 0.1, 0.0])
    out = _adversarial(arm, arm_world, q0, 10_000, seed=1, filt=filt)
    assert not out["faults"], out["faults"]
    assert out["low_env"] < OPTS.safety_distance_env + 0.005, out
    assert stats["worst"] > 0.999  # the limit was reached, so it was exercised
    assert stats["relaxed"] <= 0.01 * stats["ticks"], stats


def test_adversarial_with_acceleration_limits_panda(
        panda: tuple[RobotModel, list[WorldObject], np.ndarray]) -> None:
    robot, world, q0 = panda
    stats: dict[str, Any] = {}
    filt = _accel_checked(VelocityFilter(CollisionChecker(robot), FilterOptions(
        acceleration_limits=(ACC,)), world=world), stats)
    out = _adversarial(robot, world, q0, 10_000, seed=4, filt=filt)
    assert not out["faults"], out["faults"]
    assert out["low_env"] < OPTS.safety_distance_env + 0.005, out
    assert stats["relaxed"] <= 0.01 * stats["ticks"], stats


def test_joint_braked_at_acceleration_limit(arm: RobotModel) -> None:
    """A joint running at its velocity limit towards its position limit brakes at exactly the
    acceleration limit and stops at the limit: it starts braking when the room left is the
    closed-form braking distance v²/(2a) (to a tick's travel), not earlier, and never passes
    it."""
    filt = VelocityFilter(CollisionChecker(arm), FilterOptions(
        acceleration_limits=(ACC,), joint_limit_margin=0.0), world=[])
    v = float(arm.velocity_limits[3])
    q = np.zeros(7)
    q[3] = arm.upper[3] - 1.0
    cmd = np.zeros(7)
    cmd[3] = v
    prev = cmd.copy()
    speeds = []
    rooms = []
    for _ in range(2000):
        res = filt.filter(q, cmd, DT, previous=prev)
        assert res.ok, res.fault
        assert abs(res.velocity[3] - prev[3]) <= ACC * DT + 1e-12
        prev = res.velocity
        rooms.append(arm.upper[3] - q[3])
        speeds.append(res.velocity[3])
        q = q + res.velocity * DT
        assert q[3] <= arm.upper[3] + 1e-12
    speeds_a = np.array(speeds)
    braking = int(np.flatnonzero(speeds_a < v)[0])
    closed_form = v * v / (2 * ACC)
    # (the discrete braking distance is v²/(2a) + v dt/2; braking shows one tick later)
    assert abs(rooms[braking] - closed_form) <= v * DT, (rooms[braking], closed_form)
    assert arm.upper[3] - q[3] < 1e-3 and abs(speeds_a[-1]) < 1e-9  # stopped at the limit
    assert np.all(np.diff(speeds_a[braking:]) >= -ACC * DT - 1e-12)


def test_huge_acceleration_limits_change_nothing(arm: RobotModel,
                                                 arm_world: list[WorldObject]) -> None:
    """With acceleration limits far above anything reachable in a tick the output equals the
    filter without them (the formulation reduces to (1)-(2))."""
    plain = VelocityFilter(CollisionChecker(arm), world=arm_world)
    fast = VelocityFilter(CollisionChecker(arm), FilterOptions(acceleration_limits=(1e9,)),
                          world=arm_world)
    rng = np.random.default_rng(7)
    for _ in range(100):
        q = np.clip(NEAR_WALL + rng.normal(0, 0.25, 7), arm.lower, arm.upper)
        cmd = rng.uniform(-1.0, 1.0, 7) * arm.velocity_limits
        a = plain.filter(q, cmd, DT)
        b = fast.filter(q, cmd, DT, previous=a.velocity)  # the same velocity as before
        plain.reset()
        fast.reset()
        assert a.ok == b.ok and np.allclose(a.velocity, b.velocity, atol=1e-7), (a, b)


def test_state_far_outside_limits_is_a_fault(arm: RobotModel) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=[])
    q = np.zeros(7)
    q[2] = arm.upper[2] + OPTS.state_limit_tolerance * 0.5  # a little outside: back in only
    res = filt.filter(q, np.full(7, 0.1), DT)
    assert res.ok and res.velocity[2] == 0.0
    q[2] = arm.upper[2] + OPTS.state_limit_tolerance * 1.5
    res = filt.filter(q, np.full(7, 0.1), DT)
    assert not res.ok and res.fault.startswith("state out of limits") and "joint3" in res.fault
    assert not res.velocity.any()
    bad_prev: list[Any] = [np.zeros(6), np.r_[np.zeros(6), np.nan], "x"]
    for prev in bad_prev:
        res = filt.filter(np.zeros(7), np.full(7, 0.1), DT, previous=prev)
        assert not res.ok and not res.velocity.any(), prev


# ---------------------------------------------------------------------- exactness
NEAR_WALL = np.array([0.0, 0.2, 0.0, 0.4, 0.0, 0.3, 0.0])  # tool 11 mm from the wall (< d_s)
APPROACH = np.array([0.0, 0.15, 0.0, 0.35, 0.0, 0.3, 0.0])  # tool between d_s and d_i of the wall


def _rows(filt: VelocityFilter, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The QP rows (J over every joint, lower bounds b) rebuilt from the public clearance table."""
    o = filt.options
    tab = filt.checker.clearance(q, filt.world, np.inf)
    selfk = tab.kinds == 0
    di = np.where(selfk, o.influence_distance_self, o.influence_distance_env)
    ds = np.where(selfk, o.safety_distance_self, o.safety_distance_env) + o.discrete_margin
    sel = (tab.distances < di) & (np.abs(tab.jacobians).max(axis=1) > 1e-9)
    b = np.minimum(o.gain * (ds - tab.distances) / (di - ds), o.recovery_speed)
    names = [n for n, s in zip(tab.pair_names(), sel) if s]
    return tab.jacobians[sel], b[sel], names


def _reference_qp(cmd: np.ndarray, J: np.ndarray, b: np.ndarray, lo: np.ndarray,
                  hi: np.ndarray) -> Any:
    """min |x − cmd|² s.t. J x ≥ b, lo ≤ x ≤ hi with SciPy's SLSQP (an independent solver)."""
    from scipy.optimize import minimize

    return minimize(
        lambda x: np.sum((x - cmd) ** 2), np.zeros(len(cmd)), jac=lambda x: 2 * (x - cmd),
        bounds=list(zip(lo, hi)), method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: J @ x - b, "jac": lambda x: J}],
        options={"ftol": 1e-12, "maxiter": 500},
    )


def test_far_from_everything_is_identity(arm: RobotModel) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=[])
    rng = np.random.default_rng(0)
    q = np.zeros(7)
    for _ in range(50):
        cmd = rng.uniform(-1.0, 1.0, 7)
        res = filt.filter(q, cmd, DT)
        assert res.ok and res.fault == ""
        np.testing.assert_allclose(res.velocity, cmd, rtol=0, atol=1e-9)
        assert np.array_equal(res.velocity, cmd)  # in fact bit-for-bit
        assert res.active_constraints == [] and res.scaling == pytest.approx(1.0)
    res = filt.filter(q, np.zeros(7), DT)
    assert res.ok and res.scaling == 1.0 and not res.velocity.any()


def test_moving_away_is_never_slowed(arm: RobotModel, arm_world: list[WorldObject]) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=arm_world)
    J, b, names = _rows(filt, APPROACH)
    assert len(J) >= 1 and np.all(b <= 0.0), names  # inside d_i, outside d_s
    # increase every monitored distance at 5 cm/s, within the velocity limits
    cmd = np.linalg.pinv(J) @ np.full(len(J), 0.05)
    cmd *= min(1.0, 0.9 / np.max(np.abs(cmd) / arm.velocity_limits))
    assert np.all(J @ cmd > 0)
    res = filt.filter(APPROACH, cmd, DT)
    assert res.ok and res.num_constraints == len(J)
    np.testing.assert_allclose(res.velocity, cmd, rtol=0, atol=1e-9)
    assert res.active_constraints == []
    # the same command reversed drives into the wall and is changed
    res = filt.filter(APPROACH, -cmd * 50, DT)
    assert res.ok and not np.allclose(res.velocity, -cmd * 50)
    assert any("=wall" in a for a in res.active_constraints), res.active_constraints


def test_feasible_commands_pass_and_outputs_are_feasible_and_optimal(
    arm: RobotModel, arm_world: list[WorldObject]
) -> None:
    """Random states near the obstacles: a command satisfying every constraint is returned
    unchanged (to 1e-9); any output satisfies the rows and the box, and is the QP minimiser."""
    filt = VelocityFilter(CollisionChecker(arm), world=arm_world)
    rng = np.random.default_rng(5)
    passed = solved = 0
    for trial in range(300):
        q = np.clip(NEAR_WALL + rng.normal(0, 0.25, 7), arm.lower, arm.upper)
        J, b, _ = _rows(filt, q)
        lo, hi = filt.joint_bounds(q, DT)
        cmd = rng.uniform(-1.0, 1.0, 7) * arm.velocity_limits
        if len(J) and np.any(J @ cmd < b):
            cmd = -cmd
        res = filt.filter(q, cmd, DT)
        assert res.ok, res.fault  # never a deadlock: the separation demands give way
        v = res.velocity
        assert np.all(v >= lo - 1e-12) and np.all(v <= hi + 1e-12)
        if "recovery:relaxed" in res.active_constraints:
            # the pairs inside d_s could not separate at recovery_speed: none comes closer
            assert np.all(J @ v >= np.minimum(b, 0.0) - 1e-6), (J @ v - b)
            continue
        assert np.all(J @ v >= b - 1e-6), (J @ v - b)
        if np.all(J @ cmd >= b) and np.all((cmd >= lo) & (cmd <= hi)):
            np.testing.assert_allclose(v, cmd, rtol=0, atol=1e-9)
            passed += len(J) > 0
        elif len(J) and trial % 10 == 0:  # optimality against an independent solver
            ref = _reference_qp(cmd, J, b, lo, hi)
            assert ref.success
            assert np.sum((v - cmd) ** 2) <= np.sum((ref.x - cmd) ** 2) + 1e-7
            solved += 1
    assert passed >= 20 and solved >= 5, (passed, solved)


# ---------------------------------------------------------------------- faults
def test_bad_inputs_give_zero_with_fault(arm: RobotModel, arm_world: list[WorldObject]) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=arm_world)
    q, cmd = APPROACH, np.full(7, 0.1)
    cases: list[tuple[Any, Any, Any, float, str]] = [
        (q, np.r_[cmd[:6], np.nan], DT, 0.0, "non-finite command"),
        (q, np.r_[cmd[:6], np.inf], DT, 0.0, "non-finite command"),
        (np.r_[q[:6], np.nan], cmd, DT, 0.0, "non-finite state"),
        (q, cmd[:6], DT, 0.0, "wrong length"),
        (q[:5], cmd, DT, 0.0, "wrong length"),
        (q, np.ones((7, 1)), DT, 0.0, "wrong length"),
        ("abc", cmd, DT, 0.0, "wrong length"),
        (q, None, DT, 0.0, "wrong length"),
        (q, cmd, 0.0, 0.0, "bad dt"),
        (q, cmd, -DT, 0.0, "bad dt"),
        (q, cmd, np.nan, 0.0, "bad dt"),
        (q, cmd, 1.0, 0.0, "bad dt"),  # > max_dt
        (q, cmd, DT, 0.5, "stale state"),  # > state_timeout
        (q, cmd, DT, np.nan, "stale state"),
    ]
    for qq, cc, dt, age, fault in cases:
        res = filt.filter(qq, cc, dt, stamp_age=age)
        assert isinstance(res, FilterResult)
        assert not res.ok and res.fault.startswith(fault), (fault, res.fault)
        assert res.velocity.shape == (7,) and not res.velocity.any()
        assert res.active_constraints == []
    ok = filt.filter(q, cmd, DT, stamp_age=0.05)
    assert ok.ok


def test_unreachable_separation_gives_way_and_never_zeroes_an_escape(
        arm: RobotModel, arm_world: list[WorldObject]) -> None:
    # inside the safety distance the wall row demands separation at up to recovery_speed, but
    # the joints may only move at 0.1 % of their limits: no velocity satisfies everything
    opts = FilterOptions(velocity_scale=1e-3)
    filt = VelocityFilter(CollisionChecker(arm), opts, world=arm_world)
    J, b, _ = _rows(filt, NEAR_WALL)
    lo, hi = filt.joint_bounds(NEAR_WALL, DT)
    lp = linprog(np.zeros(7), A_ub=-J, b_ub=-b, bounds=list(zip(lo, hi)), method="highs")
    assert lp.status == 2, "the constructed QP must really be infeasible"
    # the demand gives way (NAOqi: "an alternate way of satisfying the command"): at rest
    res = filt.filter(NEAR_WALL, np.zeros(7), DT)
    assert res.ok and "recovery:relaxed" in res.active_constraints, res
    assert not res.velocity.any()
    # a command straight away from the wall passes (clipped to the tiny box), never zeroed
    away = J.T @ np.ones(len(J))
    assert np.all(J @ away > 0)
    res = filt.filter(NEAR_WALL, away, DT)
    assert res.ok and res.velocity.any()
    assert np.all(J @ res.velocity >= -1e-12) and float(away @ res.velocity) > 0
    # one into the wall brings no pair inside d_s closer, the others no faster than the damper
    res = filt.filter(NEAR_WALL, -away, DT)
    assert res.ok and np.all(J @ res.velocity >= np.minimum(b, 0.0) - 1e-9)
    # with the full velocity limits the same state is recoverable: push out of the wall
    res = VelocityFilter(CollisionChecker(arm), world=arm_world).filter(NEAR_WALL, np.zeros(7), DT)
    assert res.ok and np.all(J @ res.velocity >= b - 1e-6) and res.velocity.any()
    assert "tool=wall" in res.active_constraints
    assert "recovery:relaxed" not in res.active_constraints


# ---------------------------------------------------------------------- joint limits
def test_joint_limits_never_exceeded(arm: RobotModel) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=[])
    q = np.zeros(7)
    q[3] = arm.upper[3] - 0.3
    cmd = np.zeros(7)
    cmd[3] = arm.velocity_limits[3]
    cmd[1] = -arm.velocity_limits[1]
    names: set[str] = set()
    for _ in range(1500):
        res = filt.filter(q, cmd, DT)
        assert res.ok
        names.update(res.active_constraints)
        q = q + res.velocity * DT
        assert np.all(q <= arm.upper) and np.all(q >= arm.lower)
    assert arm.upper[3] - q[3] < 1e-3 and q[1] - arm.lower[1] < 1e-3  # it does get there
    assert {"joint4:upper", "joint2:lower"} <= names, names
    # far from the limits only the velocity bound acts
    res = filt.filter(np.zeros(7), 3 * arm.velocity_limits, DT)
    assert np.allclose(res.velocity, arm.velocity_limits)
    assert "joint1:velocity" in res.active_constraints
    # outside a limit a joint may only move back in
    q = np.zeros(7)
    q[3] = arm.upper[3] + 0.05
    assert filt.filter(q, np.r_[0, 0, 0, 1.0, 0, 0, 0], DT).velocity[3] == 0.0
    assert filt.filter(q, np.r_[0, 0, 0, -1.0, 0, 0, 0], DT).velocity[3] == -1.0


def test_continuous_joint_has_only_velocity_bounds() -> None:
    urdf = """<robot name="c"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="spin" type="continuous"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/><limit velocity="1.5" effort="1"/></joint>
      <joint name="slide" type="prismatic"><parent link="b"/><child link="c"/>
        <axis xyz="1 0 0"/><limit lower="-0.5" upper="0.5" effort="1"/></joint></robot>"""
    robot = RobotModel.from_urdf(urdf, warn=False)
    filt = VelocityFilter(CollisionChecker(robot))
    lo, hi = filt.joint_bounds(np.array([100.0, 0.49]), DT)
    assert lo[0] == -1.5 and hi[0] == 1.5  # continuous: velocity bounds only, at any angle
    # no velocity limit given: the finite default (LoadLimits.default_velocity_limit, 1 m/s)
    # bounds it, with the position room over the tick (and the limit damper near the limit)
    assert robot.velocity_limits[1] == 1.0
    assert 0.0 < hi[1] <= 1.0 and 0.49 + hi[1] * DT <= 0.5
    res = filt.filter([100.0, 0.49], [5.0, 100.0], DT)
    assert res.ok and res.velocity[0] == 1.5 and 0.49 + res.velocity[1] * DT <= 0.5


# ---------------------------------------------------------------------- protection groups
def test_group_protection(arm: RobotModel, arm_world: list[WorldObject]) -> None:
    checker = CollisionChecker(arm)
    # by default the groups are the robot's (SRDF or add_group), all protected
    assert VelocityFilter(checker).protection == {g: True for g in arm.groups}
    with pytest.raises(UnknownNameError):
        VelocityFilter(checker, groups={"g": ["joint1", "nope"]})
    groups = {"arm": arm.joint_names, "upper": ["joint1", "joint2", "joint3", "joint4"],
              "wrist": ["joint5", "joint6", "joint7"]}
    filt = VelocityFilter(checker, world=arm_world, groups=groups)
    with pytest.raises(UnknownNameError):
        filt.set_protection("no_such_group", False)
    filt.set_protection("wrist", False)
    assert filt.protection == {"arm": True, "upper": True, "wrist": False}
    assert filt.protected_joints == ["joint1", "joint2", "joint3", "joint4"]
    wrist = np.array([4, 5, 6])
    prot = np.array([0, 1, 2, 3])

    # one tick: the wrist passes unchanged even into the wall; the rest obeys the rows
    cmd = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 2.0, 0.0])  # tilts everything towards the wall
    J, b, _ = _rows(filt, NEAR_WALL)
    res = filt.filter(NEAR_WALL, cmd, DT)
    assert res.ok
    assert np.array_equal(res.velocity[wrist], cmd[wrist])
    assert np.all(J[:, prot] @ res.velocity[prot] >= b - 1e-6)

    # simulation: the unprotected wrist drives the tool into the wall, while the bodies that
    # only protected joints move (link1 .. link5) keep their safety distance
    judge = CollisionChecker(arm)
    q = APPROACH.copy()
    cmd = np.array([0.0, 0.6, 0.0, 0.6, 0.0, 1.5, 0.0])
    rows = judge.row_names
    cols = judge.column_names(arm_world)
    upstream = [rows.index(f"link{k}") for k in range(1, 6)]
    wall = cols.index("wall")
    tool_min = np.inf
    for _ in range(600):
        res = filt.filter(q, cmd, DT)
        assert res.ok, res.fault
        assert np.array_equal(res.velocity[wrist], np.clip(cmd[wrist], *[
            b_[wrist] for b_ in filt.joint_bounds(q, DT)]))
        q = q + res.velocity * DT
        s = judge.check(q, arm_world, exhaustive=True).signed
        assert s[upstream, wall].min() >= OPTS.safety_distance_env - TOL
        tool_min = min(tool_min, s[rows.index("tool"), wall])
    assert tool_min < OPTS.safety_distance_env - 0.01  # the wrist was not held back

    filt.set_protection("wrist", True)
    assert filt.protected_joints == arm.joint_names
    # disabling a group that holds every joint leaves nothing to protect: pure pass-through
    filt.set_protection("arm", False)
    res = filt.filter(NEAR_WALL, cmd, DT)
    assert res.ok and np.array_equal(res.velocity, cmd) and res.num_constraints == 0


# ---------------------------------------------------------------------- options
def test_options_are_validated(arm: RobotModel) -> None:
    for bad in (
        {"influence_distance_self": 0.01},  # below the safety distance
        {"gain": 0.0},
        {"gain": float("nan")},
        {"velocity_scale": 1.5},
        {"max_dt": -1.0},
        {"joint_limit_margin": -0.1},
        {"weights": (1.0, -1.0)},
        {"acceleration_limits": (1.0, -1.0)},
        {"acceleration_limits": (float("nan"),)},
        {"acceleration_limits": ()},
        {"braking_fraction": 0.0},
        {"state_limit_tolerance": 0.0},
    ):
        with pytest.raises(ConfigurationError):
            FilterOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        VelocityFilter(CollisionChecker(arm), FilterOptions(weights=(1.0, 2.0)))
    with pytest.raises(ConfigurationError):
        VelocityFilter(CollisionChecker(arm), FilterOptions(acceleration_limits=(1.0, 2.0)))
    per_joint = VelocityFilter(CollisionChecker(arm), FilterOptions(
        acceleration_limits=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, float("inf"))))
    assert per_joint.acceleration_limits.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.inf]
    filt = VelocityFilter(CollisionChecker(arm), FilterOptions(weights=(1.0,) * 6 + (100.0,)))
    res = filt.filter(np.zeros(7), np.full(7, 0.1), DT)
    assert res.ok and np.array_equal(res.velocity, np.full(7, 0.1))
