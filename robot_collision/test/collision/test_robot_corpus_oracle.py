"""Real robots (example-robot-data) against pinocchio + coal as an independent oracle.

pinocchio parses the URDF itself (its FK, assimp for the meshes); coal computes distances on the
convex hull (qhull) of assimp's mesh vertices, i.e. the same geometry as ours (MATLAB semantics:
meshes are their convex hulls) reached by a second code path. At random configurations within
the joint limits, on every link pair the checker evaluates: collision / no collision agree on
every pair, and separations agree within 1e-6 m (measured: <= 3e-10 m).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import robot_corpus as rc

from robot_collision import CollisionChecker, URDFError

pytestmark = pytest.mark.skipif(
    not rc.oracle_available(), reason="example-robot-data, pinocchio or coal not installed"
)

CONFIGS = 150
SEPARATION_TOL = 1e-6  # m


def _load(name: str) -> Any:
    cr = rc.ROBOTS[name]
    try:
        return cr, cr.load()
    except URDFError as exc:
        if "velocity limit must be positive" in str(exc):
            pytest.xfail(f'velocity="0" not accepted yet (issue 13 item 2): {exc}')
        raise


@pytest.mark.parametrize("name", list(rc.ROBOTS))
def test_collisions_and_distances_agree_with_coal(name: str) -> None:
    cr, robot = _load(name)
    checker = CollisionChecker(robot)
    oracle = rc.PinOracle(robot, checker, cr.urdf_path())
    assert oracle.pairs, "no link pair to compare"
    rng = np.random.default_rng(7)
    idx = {(a, b): (robot.link_index(a), robot.link_index(b)) for a, b in oracle.pairs}
    worst = 0.0
    colliding_configs = 0
    colliding_pairs = 0
    for _ in range(CONFIGS):
        q = robot.random_configuration(rng)
        ours = checker.pair_distances(q).D
        theirs = oracle.pair_distances(q)
        for pair, d_ref in theirs.items():
            i, j = idx[pair]
            d = ours[min(i, j), max(i, j)]
            assert (d < 0) == (d_ref < 0), f"{name} {pair} at q={q.tolist()}: {d} vs coal {d_ref}"
            colliding_pairs += d_ref < 0
            if d_ref > 0:
                worst = max(worst, abs(d - d_ref))
        valid = checker.is_valid(q)
        assert valid == (not oracle.in_collision(q)), f"{name}: is_valid disagrees at {q.tolist()}"
        colliding_configs += not valid
    assert worst < SEPARATION_TOL, f"{name}: separation differs by {worst} m"
    # the sample must exercise both answers (else the agreement says little); without an SRDF
    # (TIAGo) some pair collides everywhere, so only pairs can be asked for both
    assert 0 < colliding_pairs < CONFIGS * len(oracle.pairs)
    if cr.srdf:
        assert 0 < colliding_configs < CONFIGS
