"""robot_filter: sensed points on the robot itself are removed.

Oracle: for every point, the minimum over the robot's shapes of the pair kernel
``shape_distance`` (shape vs a zero-radius ball at the point), compared with the padding.
"""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import CollisionChecker, Mesh, PointCloud, RobotModel, WorldObject, make_pose
from robot_collision.collision.self_filter import robot_filter, robot_filter_mask
from robot_collision.errors import ConfigurationError, ShapeError
from robot_collision.geometry.distance import shape_distance
from robot_collision.geometry.shapes import SPHERE


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    from robot_collision import default_robot_paths

    urdf, srdf = default_robot_paths()
    r = RobotModel.from_urdf(urdf, srdf=srdf)
    hull = np.array([[0, 0, 0], [0.06, 0, 0], [0, 0.05, 0], [0.02, 0.02, 0.07]]) - 0.02
    r.add_collision("tool", Mesh(hull), make_pose(np.eye(3), [0.0, 0.0, 0.03]))
    return r


def _min_distance(robot: RobotModel, q: np.ndarray, P: np.ndarray) -> np.ndarray:
    T = robot.link_poses(q)
    out = np.full(len(P), np.inf)
    wa, wb, n = np.empty(3), np.empty(3), np.empty(3)
    for body in robot.link_names:
        li = robot.link_index(body)
        for shape, local in robot.collision_geometry(body):
            pose = T[li] @ local
            verts = np.ascontiguousarray(shape.vertices()).reshape(-1, 3)
            for i, p in enumerate(P):
                d = shape_distance(int(shape.kind), shape.params(), pose, verts, SPHERE,
                                   np.zeros(4), make_pose(np.eye(3), p), np.zeros((0, 3)),
                                   wa, wb, n)
                out[i] = min(out[i], d)
    return out


@pytest.mark.parametrize("padding", [0.0, 0.02])
def test_filter_matches_brute_force(robot: RobotModel, padding: float) -> None:
    rng = np.random.default_rng(0)
    for seed in range(3):
        q = robot.random_configuration(np.random.default_rng(seed))
        T = robot.link_poses(q)
        # points around every link origin (many on or inside the geometry) and far away
        P = np.concatenate([T[1:, :3, 3][rng.integers(0, len(T) - 1, 1500)]
                            + rng.normal(0, 0.06, (1500, 3)), rng.uniform(-1, 1, (300, 3))])
        d = _min_distance(robot, q, P)
        clear = np.abs(d - padding) > 1e-9
        keep = robot_filter_mask(robot, P, q, padding)
        np.testing.assert_array_equal(keep[clear], (d >= padding)[clear])
        assert 0.1 < keep.mean() < 0.95
        np.testing.assert_array_equal(robot_filter(robot, P, q, padding), P[keep])


def test_filtered_cloud_leaves_the_robot_collision_free(robot: RobotModel) -> None:
    """Points sampled on and around the arm make it collide; after filtering with a padding
    they do not, while a box of points elsewhere stays."""
    rng = np.random.default_rng(1)
    q = robot.named_configuration("ready")
    T = robot.link_poses(q)
    on_arm = T[1:, :3, 3][rng.integers(0, len(T) - 1, 4000)] + rng.normal(0, 0.05, (4000, 3))
    obstacle = rng.uniform([0.5, 0.3, 0.0], [0.7, 0.5, 0.2], (2000, 3))
    P = np.concatenate([on_arm, obstacle])
    checker = CollisionChecker(robot)
    assert not checker.is_valid(q, [WorldObject(PointCloud(P), np.eye(4), "raw")])
    kept = robot_filter(robot, P, q, padding=0.02)
    assert checker.is_valid(q, [WorldObject(PointCloud(kept), np.eye(4), "filtered")])
    assert len(kept) >= len(obstacle)
    np.testing.assert_array_equal(robot_filter_mask(robot, obstacle, q, 0.02), True)


def test_bad_input(robot: RobotModel) -> None:
    q = robot.home_configuration()
    with pytest.raises(ShapeError, match="non-finite"):
        robot_filter(robot, np.array([[0.0, np.nan, 0.0]]), q)
    with pytest.raises(ConfigurationError):
        robot_filter(robot, np.zeros((2, 3)), q[:3])
    with pytest.raises(ConfigurationError, match="padding"):
        robot_filter(robot, np.zeros((2, 3)), q, -0.1)
    assert robot_filter(robot, np.zeros((0, 3)), q).shape == (0, 3)
