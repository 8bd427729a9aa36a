"""IK (damped least squares) and workspace goal regions, checked against forward kinematics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision import (
    Box,
    CollisionChecker,
    ConfigurationError,
    RobotModel,
    UnknownNameError,
    WorldObject,
    default_robot_paths,
)
from robot_collision.geometry.transforms import euler_zyx_to_matrix, make_pose
from robot_collision.planning.ik import WorkspaceGoalRegion, pose_error, solve_ik


@pytest.fixture(scope="module")
def arm() -> RobotModel:
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf)


def test_solve_ik_reaches_fk_targets_within_limits(arm) -> None:
    rng = np.random.default_rng(0)
    tool = arm.link_index("tool")
    solved = 0
    for k in range(20):
        target = arm.link_poses(arm.random_configuration(rng))[tool]
        q = solve_ik(arm, target, "tool", rng=k)
        if q is None:
            continue
        solved += 1
        assert arm.within_limits(q)
        dp, dr = pose_error(arm.link_poses(q)[tool], target)
        assert dp < 1e-5 and dr < 1e-4
    assert solved >= 19


def test_solve_ik_seed_and_reproducibility(arm) -> None:
    q0 = np.array([0.3, 0.4, -0.2, 1.2, 0.1, 0.6, 0.2])
    target = arm.link_poses(q0)[arm.link_index("tool")]
    q = solve_ik(arm, target, "tool", q_seed=q0 + 0.05, rng=1)
    # converges near the seed (the arm is redundant: the null space may drift a little)
    assert q is not None and np.linalg.norm(q - q0) < 0.1 * np.linalg.norm(0.05 * np.ones(7))
    a = solve_ik(arm, target, "tool", rng=3)
    b = solve_ik(arm, target, "tool", rng=3)
    assert a is not None and b is not None and np.array_equal(a, b)


def test_solve_ik_collision_checked(arm) -> None:
    checker = CollisionChecker(arm)
    q0 = np.array([0.0, 0.6, 0.0, 1.2, 0.0, 0.9, 0.0])
    T = arm.link_poses(q0)
    target = T[arm.link_index("tool")]
    # a block on the elbow of q0: IK must find another arm posture (or none)
    elbow = T[arm.link_index("link4")][:3, 3]
    world = [WorldObject(Box(0.12, 0.12, 0.12), make_pose(np.eye(3), elbow), "block")]
    assert not checker.is_valid(q0, world)
    q = solve_ik(arm, target, "tool", checker=checker, world=world, max_attempts=60, rng=0)
    if q is not None:
        assert checker.is_valid(q, world)
        assert pose_error(arm.link_poses(q)[arm.link_index("tool")], target)[0] < 1e-5


def test_solve_ik_unreachable_and_errors(arm) -> None:
    assert solve_ik(arm, make_pose(np.eye(3), [3.0, 0.0, 0.0]), "tool", max_attempts=3,
                    rng=0) is None
    with pytest.raises(UnknownNameError, match="gripper"):
        solve_ik(arm, np.eye(4), "gripper")
    with pytest.raises(ConfigurationError, match="4, 4"):
        solve_ik(arm, np.eye(3), "tool")
    with pytest.raises(ConfigurationError, match="rotation"):
        solve_ik(arm, np.diag([1.0, 1.0, -1.0, 1.0]), "tool")


def test_region_sampling_and_contains() -> None:
    ref = make_pose(euler_zyx_to_matrix([0.3, 0.0, np.pi]), [0.4, 0.1, 0.3])
    off = make_pose(np.eye(3), [0.0, 0.0, 0.1])
    bounds = np.array([[-0.1, 0.1], [0.0, 0.0], [-0.05, 0.0], [-np.pi, np.pi], [0, 0],
                       [-0.2, 0.2]])
    region = WorkspaceGoalRegion("tool", ref, bounds, off)
    rng = np.random.default_rng(1)
    for _ in range(200):
        assert region.contains(region.sample_pose(rng))
    # just outside in x, and rotated about y (bounded to 0)
    c = region.region_coordinates(region.sample_pose(rng))
    xyz = c[:3].copy()
    xyz[0] = 0.11
    Tw = make_pose(euler_zyx_to_matrix(c[3:]), xyz)
    assert not region.contains(ref @ Tw @ off)
    Tw = make_pose(euler_zyx_to_matrix([c[3], 0.05, c[5]]), c[:3])
    assert not region.contains(ref @ Tw @ off)
    assert region.contains(ref @ Tw @ off, tol=0.06)


@settings(max_examples=40, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-1.5, 1.5), st.floats(-3.0, 3.0))
def test_region_angles_wrap(a: float, b: float, c: float) -> None:
    """Angle bounds are compared modulo 2 pi and both z-y-x solutions are accepted."""
    bounds = np.zeros((6, 2))
    bounds[3:] = [[a - 0.01, a + 0.01], [b - 0.01, b + 0.01], [c - 0.01, c + 0.01]]
    region = WorkspaceGoalRegion("tool", bounds=bounds)
    pose = make_pose(euler_zyx_to_matrix([a, b, c]), [0, 0, 0])
    assert region.contains(pose)
    shifted = bounds.copy()
    shifted[3] += 2 * np.pi
    assert WorkspaceGoalRegion("tool", bounds=shifted).contains(pose)


def test_region_validation() -> None:
    with pytest.raises(ConfigurationError, match="6, 2"):
        WorkspaceGoalRegion("tool", bounds=np.zeros((3, 2)))
    with pytest.raises(ConfigurationError, match="min <= max"):
        WorkspaceGoalRegion("tool", bounds=np.array([[1.0, 0.0]] + [[0.0, 0.0]] * 5))
    with pytest.raises(ConfigurationError, match="2\\*pi"):
        WorkspaceGoalRegion("tool", bounds=np.array([[0, 0]] * 3 + [[-4.0, 4.0]] + [[0, 0]] * 2))
    with pytest.raises(ConfigurationError, match="reference_pose"):
        WorkspaceGoalRegion("tool", reference_pose=np.ones((4, 4)))
