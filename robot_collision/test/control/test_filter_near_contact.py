"""The filter near contact: a command that moves a pair inside its safety distance straight away
is never refused (NAOqi: "find an alternate way of satisfying the command"), whatever the
joints can give; pairs that can never reach their safety distance are held where they are.

Oracle: the clearance table's own rows rebuilt independently (every row inside the influence
distance) and the sign of J·v; the random near-contact configurations come from rejection
sampling over the joint ranges."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from robot_collision import Box, CollisionChecker, RobotModel, WorldObject, default_robot_paths
from robot_collision.collision.pair_ranges import self_pair_ranges, unsatisfiable_pairs
from robot_collision.control.velocity_filter import FilterOptions, VelocityFilter
from robot_collision.errors import ConfigurationError

DT = 0.004


def _pose(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


@pytest.fixture(scope="module")
def arm() -> RobotModel:
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf=srdf if srdf.is_file() else None)


def _escape(J: np.ndarray, vmax: np.ndarray) -> np.ndarray | None:
    """A velocity that moves every row of ``J`` apart as fast as possible within ``vmax``
    (max t s.t. J v ≥ t, |v| ≤ vmax; SciPy's LP, an independent solver); None when every
    velocity brings one of them closer (a pinched configuration: nothing to let through)."""
    n = J.shape[1]
    c = np.zeros(n + 1)
    c[-1] = -1.0
    A = np.hstack([-J, np.ones((J.shape[0], 1))])
    lp = linprog(c, A_ub=A, b_ub=np.zeros(J.shape[0]),
                 bounds=[(-v, v) for v in vmax] + [(None, 1.0)], method="highs")
    if lp.status != 0 or lp.x[-1] < 1e-6:
        return None
    return np.asarray(lp.x[:n])


def _near_contact(filt: VelocityFilter, world: list[WorldObject], count: int, seed: int,
                  vmax: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], int]:
    """(q, rows inside the internal safety distance, an escape from all of them), ``count`` of
    them by rejection sampling of the joint ranges; and how many pinched ones were skipped."""
    robot = filt.robot
    o = filt.options
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(robot.lower), robot.lower, -np.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, np.pi)
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pinched = 0
    for _ in range(200 * count):
        q = lo + (hi - lo) * rng.random(lo.shape[0])
        tab = filt.checker.clearance(q, world, np.inf)
        ds = np.where(tab.kinds == 0, o.safety_distance_self,
                      o.safety_distance_env) + o.discrete_margin
        inside = (tab.distances < ds) & (np.linalg.norm(tab.jacobians, axis=1) > 1e-3)
        near = inside & (tab.distances > -0.005)
        if not near.any():
            continue
        J = tab.jacobians[inside]
        away = _escape(J, vmax)
        if away is None:
            pinched += 1
            continue
        out.append((q, J, away))
        if len(out) == count:
            break
    return out, pinched


def test_escape_commands_are_never_zeroed(arm: RobotModel) -> None:
    world = [WorldObject(Box(0.1, 1.0, 1.0), _pose(0.45, 0.0, 0.6), "wall"),
             WorldObject(Box(1.0, 1.0, 0.1), _pose(0.0, 0.0, -0.1), "floor")]
    filt = VelocityFilter(CollisionChecker(arm), FilterOptions(velocity_scale=0.05), world)
    vmax = arm.velocity_limits * 0.05
    cases, _ = _near_contact(filt, world, 400, seed=3, vmax=vmax)
    assert len(cases) == 400
    zeroed = []
    for q, J, away in cases:
        filt.reset()
        res = filt.filter(q, away, DT)
        assert res.ok, res.fault
        if not res.velocity.any() or np.any(J @ res.velocity < -1e-9):
            zeroed.append(q)
    assert not zeroed, f"{len(zeroed)} of {len(cases)} escape commands refused"


def test_two_links_inside_margin_that_cannot_part_still_move(arm: RobotModel) -> None:
    """Pairs held at their floor: a pair ~10 mm apart everywhere (< safety_distance_self)
    never freezes the arm; it is reported by name."""
    checker = CollisionChecker(arm)
    ranges = self_pair_ranges(checker, samples=64)
    assert ranges and all(r.min_distance <= r.max_distance for r in ranges)
    # the margin that the closest-everywhere pair cannot keep
    worst = min(ranges, key=lambda r: r.max_distance)
    margin = worst.max_distance + 0.005
    stuck = unsatisfiable_pairs(checker, margin, samples=64)
    assert (worst.link_a, worst.link_b) in [(r.link_a, r.link_b) for r in stuck]
    opts = FilterOptions(safety_distance_self=margin, influence_distance_self=margin + 0.06)
    filt = VelocityFilter(checker, opts, [])
    filt.set_hold_pairs([(r.link_a, r.link_b) for r in stuck])
    rng = np.random.default_rng(0)
    moved = 0
    for _ in range(50):
        q = np.clip(rng.normal(0, 0.5, 7), arm.lower, arm.upper)
        cmd = rng.uniform(-0.3, 0.3, 7)
        res = filt.filter(q, cmd, DT)
        assert res.ok, res.fault
        moved += bool(res.velocity.any())
    assert moved >= 45


def test_negative_safety_distances_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="safety_distance_env must be >= 0"):
        FilterOptions(safety_distance_env=-0.1)
    with pytest.raises(ConfigurationError, match="safety_distance_self must be >= 0"):
        FilterOptions(safety_distance_self=-0.001)


def test_bad_motion_bounds_are_faults(arm: RobotModel) -> None:
    filt = VelocityFilter(CollisionChecker(arm), world=[])
    q = arm.home_configuration()
    for bad in (np.full(3, 0.1), np.full(7, np.nan), np.full(7, -0.1)):
        res = filt.filter(q, np.full(7, 0.1), DT, motion_bound=bad)
        assert not res.ok and not res.velocity.any()
    assert filt.filter(q, np.full(7, 0.1), DT, motion_bound=np.zeros(7)).ok
