"""Time parameterization: limits checked by finite differences of the returned positions
(independent of the returned velocities), waypoints passed exactly, rest at both ends."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import (
    Box,
    CollisionChecker,
    ConfigurationError,
    RobotModel,
    WorldObject,
    default_robot_paths,
)
from robot_collision.geometry.transforms import make_pose
from robot_collision.planning.rrt import BiRRT, RRTOptions
from robot_collision.planning.trajectory import DEFAULT_ACCELERATION_LIMIT, time_parameterize


@pytest.fixture(scope="module")
def arm() -> RobotModel:
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf)


@pytest.fixture(scope="module")
def path(arm) -> np.ndarray:
    return np.array([
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.5, 0.3, -0.2, 1.0, 0.0, 0.5, 0.0],
        [0.9, 0.1, -0.4, 1.2, 0.3, 0.5, 1.0],
        [0.9, 0.1, -0.4, 1.2, 0.3, 0.5, 1.0],  # repeated waypoint
        [-0.5, 0.6, 0.2, 0.4, -0.3, 1.5, 0.0],
    ])


def check_limits(traj, vmax: np.ndarray, amax: np.ndarray, tol: float = 1e-9) -> None:
    t, P = traj.times, traj.positions
    assert np.all(np.diff(t) > 0)
    h = np.diff(t)[:, None]
    v = np.diff(P, axis=0) / h
    a = 2.0 * (v[1:] - v[:-1]) / (h[1:] + h[:-1])
    assert np.all(np.abs(v) <= vmax * (1 + tol)), np.max(np.abs(v) / vmax)
    assert np.all(np.abs(a) <= amax * (1 + tol)), np.max(np.abs(a) / amax)
    assert np.all(np.abs(traj.velocities) <= vmax * (1 + tol))
    assert np.all(np.abs(traj.accelerations) <= amax * (1 + tol))


@pytest.mark.parametrize("method", ["toppra", "linear"])
def test_limits_waypoints_and_rest(arm, path, method) -> None:
    traj = time_parameterize(path, arm, velocity_scaling=0.5, acceleration_limits=1.5,
                             method=method, sample_period=0.02)
    assert traj.method == method
    vmax = arm.velocity_limits * 0.5
    check_limits(traj, vmax, np.full(7, 1.5))
    assert len(traj.waypoint_indices) == len(path)
    np.testing.assert_allclose(traj.positions[traj.waypoint_indices], path, atol=1e-12)
    assert traj.times[0] == 0.0 and traj.duration == traj.times[-1]
    np.testing.assert_allclose(traj.velocities[[0, -1]], 0.0, atol=1e-9)
    assert traj.joint_names == arm.joint_names
    # the velocity limit is nearly used somewhere (not trivially slow)
    h = np.diff(traj.times)[:, None]
    v = np.diff(traj.positions, axis=0) / h
    assert np.max(np.abs(v) / vmax) > 0.5


def test_linear_follows_segments_exactly(arm, path) -> None:
    traj = time_parameterize(path, arm, method="linear", sample_period=0.01,
                             acceleration_limits=np.linspace(1.0, 3.0, 7))
    check_limits(traj, arm.velocity_limits, np.linspace(1.0, 3.0, 7))
    w = traj.waypoint_indices
    for i in range(len(path) - 1):
        seg = traj.positions[w[i] : w[i + 1] + 1]
        d = path[i + 1] - path[i]
        if np.linalg.norm(d) == 0:
            continue
        s = (seg - path[i]) @ d / (d @ d)
        np.testing.assert_allclose(seg, path[i] + s[:, None] * d, atol=1e-12)  # on the line
        assert np.all(np.diff(s) >= -1e-12)
        np.testing.assert_allclose(traj.velocities[w[i]], 0.0, atol=1e-12)  # stops


def test_default_acceleration_and_single_point(arm) -> None:
    q = np.zeros(7)
    traj = time_parameterize([q, q + 0.2], arm)
    check_limits(traj, arm.velocity_limits, np.full(7, DEFAULT_ACCELERATION_LIMIT))
    one = time_parameterize([q], arm)
    assert len(one) == 1 and one.duration == 0.0
    with pytest.raises(ConfigurationError):
        time_parameterize([q, q + 1], arm, acceleration_limits=-1.0)
    with pytest.raises(ConfigurationError):
        time_parameterize([q, q + 1], arm, velocity_scaling=0.0)
    with pytest.raises(ConfigurationError):
        time_parameterize(np.zeros((3, 5)), arm)


def test_spline_is_collision_checked_and_refined(arm) -> None:
    """A planned path around an obstacle: the timed motion, densely sampled, is collision-free."""
    checker = CollisionChecker(arm)
    world = [WorldObject(Box(0.3, 0.3, 0.6), make_pose(np.eye(3), [0.5, 0.0, 0.5]), "box")]
    start = np.array([-0.8, 0.9, 0.0, 0.9, 0.0, 0.5, 0.0])
    goal = np.array([0.8, 0.9, 0.0, 0.9, 0.0, 0.5, 0.0])
    planner = BiRRT(checker, RRTOptions(seed=0), world)
    P = planner.shorten(planner.plan(start, goal).waypoints, 50)
    traj = time_parameterize(P, arm, checker=checker, world=world, sample_period=0.01)
    check_limits(traj, arm.velocity_limits, np.full(7, DEFAULT_ACCELERATION_LIMIT))
    np.testing.assert_allclose(traj.positions[traj.waypoint_indices], P, atol=1e-12)
    assert checker.is_valid_batch(traj.positions, world).all()


@pytest.mark.parametrize("field", ["velocity_scaling", "acceleration_scaling"])
@pytest.mark.parametrize("value", [1e-300, 1e-9, 1e-4])
def test_tiny_scalings_are_refused_before_sampling(arm, path, field, value) -> None:
    """A scaling of 1e-9 allocated 144 GiB (MemoryError), 1e-300 raised ValueError: the lower
    bound of the duration is checked first (here >= 100,000 samples of 10 ms)."""
    kw = {"acceleration_scaling": value} if field == "acceleration_scaling" else {}
    vs = value if field == "velocity_scaling" else 1.0
    if field == "acceleration_scaling" and value > 1e-6:
        time_parameterize(path, arm, vs, **kw)  # 1e-4: ~100 s, within the cap
        return
    with pytest.raises(ConfigurationError, match=r"last at least.*max_samples"):
        time_parameterize(path, arm, vs, **kw)
