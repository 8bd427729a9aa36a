"""SRDF generation: per-pair collision counts against coal, reasons against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import robot_corpus as rc

from robot_collision import CollisionChecker, ConfigurationError, RobotModel
from robot_collision.collision.pair_counts import pair_collision_counts
from robot_collision.collision.scene import robot_arrays
from robot_collision.collision.srdf_generation import (
    SRDFGenerationOptions,
    generate_disabled_pairs,
)


@pytest.mark.skipif(not rc.oracle_available(), reason="example-robot-data, pinocchio or coal")
@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_pair_counts_match_coal(name: str) -> None:
    """The counting kernel counts exactly the configurations in which coal sees each pair
    collide (convex hulls, pinocchio FK)."""
    cr = rc.ROBOTS[name]
    robot = RobotModel.from_urdf(cr.urdf_path(), package_dirs=rc.package_dirs())  # no SRDF
    checker = CollisionChecker(robot, skip=[])  # every pair, adjacent ones included
    oracle = rc.PinOracle(robot, checker, cr.urdf_path())
    rng = np.random.default_rng(3)
    Q = np.array([robot.random_configuration(rng) for _ in range(300)])
    idx = [(robot.link_index(a), robot.link_index(b)) for a, b in oracle.pairs]
    pa = np.array([i for i, _ in idx])
    pb = np.array([j for _, j in idx])
    active = np.ones(len(idx), bool)
    active[1] = False  # inactive pairs are skipped
    counts = pair_collision_counts(Q, robot.kin, robot_arrays(robot), pa, pb, active)
    ref = np.zeros(len(idx), dtype=np.int64)
    for q in Q:
        col = oracle.pair_collisions(q)
        ref += np.array([col[p] for p in oracle.pairs])
    ref[1] = 0
    np.testing.assert_array_equal(counts, ref)
    assert ref.sum() > 0


def test_reasons_follow_their_definitions() -> None:
    robot = RobotModel.from_urdf(default_robot_urdf())  # the embedded arm, without its SRDF
    opts = SRDFGenerationOptions(samples=3000, seed=1, batch_size=700)
    calls: list[tuple[int, int]] = []
    res = generate_disabled_pairs(robot, opts, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 3000) and calls[-1] == (3000, 3000) and len(calls) == 6
    geom = [n for n in robot.link_names if robot.collision_geometry(n)]
    assert res.candidate_pairs == len(geom) * (len(geom) - 1) // 2
    reasons = {frozenset((p.link1, p.link2)): p.reason for p in res.disabled}
    assert len(reasons) == len(res.disabled)  # each pair once
    # Adjacent: exactly the parent/child pairs of links with geometry (all links have some)
    adjacent = {
        frozenset((n, robot.parent_of[n]))
        for n in geom
        if robot.parent_of[n] is not None and robot.parent_of[n] in geom
    }
    assert {k for k, r in reasons.items() if r == "Adjacent"} == adjacent
    # Default: the non-adjacent pairs colliding at home
    checker = CollisionChecker(robot, skip=[tuple(p) for p in adjacent])  # type: ignore[misc]
    home = checker.check(robot.home_configuration(), exhaustive=True)
    at_home = {frozenset(p) for p in home.colliding_pairs}
    assert {k for k, r in reasons.items() if r == "Default"} == at_home
    # Never / Always: from the same samples, recomputed with the checker's distances
    rng = np.random.default_rng(1)
    lo, hi = robot.sampling_bounds()
    Q = np.concatenate(
        [rng.uniform(lo, hi, size=(m, robot.num_joints)) for m in (700, 700, 700, 700, 200)]
    )
    hits: dict[frozenset[str], int] = {}
    for q in Q:
        for a, b in checker.check(q, exhaustive=True).colliding_pairs:
            hits[frozenset((a, b))] = hits.get(frozenset((a, b)), 0) + 1
    for k, r in reasons.items():
        if r == "Never":
            assert hits.get(k, 0) == 0, k
        if r == "Always":
            assert hits.get(k, 0) >= 0.95 * len(Q), k
    undecided = {
        frozenset((a, b))
        for i, a in enumerate(geom)
        for b in geom[i + 1 :]
        if frozenset((a, b)) not in reasons
    }
    for k in undecided:
        assert 0 < hits.get(k, 0) < 0.95 * len(Q), k
    assert any(r == "Never" for r in reasons.values()) and undecided


def default_robot_urdf() -> str:
    from robot_collision import default_robot_paths

    return str(default_robot_paths()[0])


def test_seeded_and_validated() -> None:
    robot = RobotModel.from_urdf(default_robot_urdf())
    opts = SRDFGenerationOptions(samples=500, seed=4)
    a = generate_disabled_pairs(robot, opts).disabled
    b = generate_disabled_pairs(robot, opts).disabled
    assert a == b
    for bad in ({"samples": 0}, {"always_fraction": 1.5}, {"batch_size": 0}):
        with pytest.raises(ConfigurationError):
            SRDFGenerationOptions(**bad)  # type: ignore[arg-type]
