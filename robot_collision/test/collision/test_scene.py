"""Link bounding spheres of :func:`robot_collision.collision.scene.robot_arrays`: each encloses
every point of its link's shapes (brute force over hull vertices and sampled surfaces), and a
mesh far from its origin gets the sphere about its geometry (closed form), not about its origin."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import Box, Capsule, Mesh, RobotModel, Sphere
from robot_collision.collision.scene import robot_arrays
from robot_collision.geometry.transforms import make_pose


def _surface_points(shape: object, rng: np.random.Generator) -> np.ndarray:
    """Points (k, 3) of the shape, local frame: hull vertices, or sampled surface points of
    the analytic shapes (closed forms)."""
    if isinstance(shape, Mesh):
        return np.asarray(shape.vertices())
    u = rng.normal(size=(2000, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    if isinstance(shape, Sphere):
        return shape.radius * u
    if isinstance(shape, Capsule):
        z = rng.uniform(-0.5, 0.5, size=(2000, 1)) * shape.length
        return shape.radius * u + np.hstack([np.zeros((2000, 2)), z])
    if isinstance(shape, Box):
        h = 0.5 * np.array([shape.x, shape.y, shape.z])
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return corners * h
    raise AssertionError(type(shape))


def _assert_encloses(robot: RobotModel) -> None:
    rs = robot_arrays(robot)
    rng = np.random.default_rng(7)
    for li, name in enumerate(robot.link_names):
        shapes = robot.collision_geometry(name)
        if not shapes:
            assert rs.bound_radius[li] < 0.0
            continue
        for shape, pose in shapes:
            pts = _surface_points(shape, rng) @ pose[:3, :3].T + pose[:3, 3]
            d = np.linalg.norm(pts - rs.bound_center[li], axis=1)
            assert d.max() <= rs.bound_radius[li] + 1e-12, name


@pytest.mark.mbm
def test_mesh_panda_link_bounds_enclose_hulls_and_are_tight() -> None:
    import mbm

    robot = RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")
    _assert_encloses(robot)
    rs = robot_arrays(robot)
    for li, name in enumerate(robot.link_names):
        shapes = robot.collision_geometry(name)
        if len(shapes) != 1:
            continue
        shape, pose = shapes[0]
        v = np.asarray(shape.vertices()) @ pose[:3, :3].T + pose[:3, 3]
        # no larger than the sphere about the link origin through the farthest vertex, nor than
        # the sphere about the hull's bounding-box centre (brute force over the vertices)
        c = 0.5 * (v.min(axis=0) + v.max(axis=0))
        about_box = np.linalg.norm(v - c, axis=1).max()
        about_origin = np.linalg.norm(v - pose[:3, 3], axis=1).max()
        assert rs.bound_radius[li] <= min(about_box, about_origin) + 1e-12, name


def test_offset_mesh_gets_the_sphere_about_its_geometry() -> None:
    # a cube of side 0.2 m centred 1 m from its origin: the origin sphere has radius
    # |(1.1, 0.1, 0.1)| = 1.109, the one about the centre sqrt(3) * 0.1
    cube = np.array([[x, y, z] for x in (0.9, 1.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)])
    robot = RobotModel.from_urdf(
        '<robot name="r"><link name="base"/><link name="arm"/>'
        '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        "</robot>"
    )
    robot.add_collision("arm", Mesh(cube), make_pose(np.eye(3), (0.0, 0.0, 0.5)))
    robot.add_collision("base", Sphere(0.1))
    robot.add_collision("base", Capsule(0.05, 0.4), make_pose(np.eye(3), (0.3, 0.0, 0.0)))
    robot.add_collision("base", Mesh(cube))
    _assert_encloses(robot)
    rs = robot_arrays(robot)
    arm = robot.link_names.index("arm")
    np.testing.assert_allclose(rs.bound_center[arm], [1.0, 0.0, 0.5], atol=1e-12)
    assert rs.bound_radius[arm] == pytest.approx(np.sqrt(3) * 0.1, abs=1e-12)
