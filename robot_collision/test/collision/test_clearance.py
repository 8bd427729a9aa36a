"""Clearance table: rows, kinds, padding and Jacobians against central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import Box, CollisionChecker, RobotModel, Sphere, WorldObject
from robot_collision.collision.clearance import PairKind
from robot_collision.geometry.shapes import CYLINDER
from robot_collision.geometry.transforms import make_pose, rot_z

from ..conftest import URDF_DIR

H = 1e-6


def _phi(checker: CollisionChecker, q: np.ndarray, world: list, a: str, b: str) -> float:
    t = checker.clearance(q, world)
    for ra, rb, d in zip(t.robot_bodies, t.other_bodies, t.distances):
        if {ra, rb} == {a, b}:
            return float(d)
    raise AssertionError(f"pair {a}={b} missing")


def _check_fd(
    checker: CollisionChecker,
    q: np.ndarray,
    world: list,
    tol: float,
    skip_body: set[str] = frozenset(),
) -> int:  # type: ignore[assignment]
    table = checker.clearance(q, world)
    n = len(q)
    checked = 0
    for row in table.rows:
        if row.robot_body in skip_body or row.other_body in skip_body:
            continue
        fd = np.zeros(n)
        for j in range(n):
            dq = np.zeros(n)
            dq[j] = H
            fd[j] = (
                _phi(checker, q + dq, world, row.robot_body, row.other_body)
                - _phi(checker, q - dq, world, row.robot_body, row.other_body)
            ) / (2 * H)
        np.testing.assert_allclose(
            row.jacobian, fd, atol=tol, err_msg=f"{row.robot_body}={row.other_body}"
        )
        checked += 1
    return checked


@pytest.mark.mbm
def test_panda_jacobians_match_finite_differences(
    panda: RobotModel, cage_world: list, rng: np.random.Generator
) -> None:
    checker = CollisionChecker(panda)
    total = 0
    for _ in range(3):
        q = panda.random_configuration(rng)
        total += _check_fd(checker, q, cage_world, 1e-5)
    assert total > 50


def test_capsule_robot_jacobians(rng: np.random.Generator) -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "extra_pair.urdf")
    checker = CollisionChecker(robot, padding=0.01)
    world = [
        WorldObject(Box(0.2, 0.2, 0.2), make_pose(rot_z(0.4), [0.3, 0.3, 0.2]), "crate"),
        WorldObject(Sphere(0.1), make_pose(np.eye(3), [-0.3, 0.1, 0.3]), "ball"),
    ]
    total = 0
    for _ in range(5):
        total += _check_fd(checker, robot.random_configuration(rng), world, 1e-5)
    assert total > 20


def test_default_robot_jacobians(default_robot: RobotModel, rng: np.random.Generator) -> None:
    checker = CollisionChecker(default_robot)
    world = [WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [0.5, 0.0, 0.4]), "crate")]
    # bodies with cylinders go through GJK (distance noise ~1e-9 m): finite differences of
    # those rows need a coarser tolerance, checked separately below
    cyl = {
        b
        for b in default_robot.link_names
        if any(s.kind == CYLINDER for s, _ in default_robot.collision_geometry(b))
    }
    for _ in range(3):
        _check_fd(checker, default_robot.random_configuration(rng), world, 1e-5, cyl)


def test_self_rows_use_relative_jacobian() -> None:
    """A self pair whose bodies move together has a zero Jacobian column for shared joints."""
    robot = RobotModel.from_urdf(URDF_DIR / "extra_pair.urdf")
    checker = CollisionChecker(robot, skip=[("base", "link1")])
    q = np.array([0.3, 0.8, -0.4, 0.5])
    table = checker.clearance(q)
    row = next(r for r in table.rows if {r.robot_body, r.other_body} == {"link1", "link3"})
    assert row.kind == PairKind.SELF
    # joint1 rotates link1 and link3 rigidly together: the distance cannot change
    assert abs(row.jacobian[0]) < 1e-12
    # joint4 moves neither body
    assert row.jacobian[3] == 0.0


def test_rows_kinds_and_influence_distance(default_robot: RobotModel) -> None:
    checker = CollisionChecker(default_robot, padding=0.005)
    world = [WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [0.55, 0.0, 0.4]), "crate")]
    q = default_robot.home_configuration()
    full = checker.clearance(q, world)
    res = checker.check(q, world, exhaustive=True)
    n_evaluated = int(
        np.isfinite(res.signed).sum() - np.isfinite(res.signed[:, : len(res.row_names)]).sum() / 2
    )
    assert len(full) == n_evaluated
    for row in full.rows:
        assert (row.kind == PairKind.ENVIRONMENT) == (row.other_body == "crate")
        i = res.row_names.index(row.robot_body)
        j = res.column_names.index(row.other_body)
        assert row.distance == pytest.approx(res.signed[i, j], abs=1e-12)
        assert np.linalg.norm(row.normal) == pytest.approx(1.0)
        # ϕ = n·(p_O − p_R) − padding
        assert row.distance == pytest.approx(
            float(row.normal @ (row.witness_other - row.witness_robot)) - 0.005, abs=1e-9
        )
    near = checker.clearance(q, world, influence_distance=0.1)
    assert len(near) < len(full)
    assert np.all(near.distances < 0.1)
    assert near.jacobians.shape == (len(near), default_robot.num_joints)
