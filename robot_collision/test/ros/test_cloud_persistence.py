"""Seen surfaces persist (cloud_persistence): the nodes' cloud pipeline (SensedClouds) keeps a
box's face after a plate hides it from the camera, drops it when newer rays pass through
where it was, and when it was last seen longer ago than cloud_persistence.

Oracle: the true box, its seen face sampled densely and tested point by point against the
persisted balls.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs.msg")

from scipy.spatial.transform import Rotation

from robot_collision import Box, RobotModel, WorldObject, default_robot_paths, make_pose
from robot_collision.ros import point_clouds as pc
from robot_collision.tools.depth_camera import DepthCamera, render_grid

TOPIC = "camera/points"
BOX = WorldObject(Box(0.2, 0.2, 0.2), make_pose(np.eye(3), [1.2, 0.0, 0.5]), "box")
PLATE = WorldObject(Box(0.01, 0.8, 0.8), make_pose(np.eye(3), [0.6, 0.0, 0.65]), "plate")
WALL = WorldObject(Box(0.01, 3.0, 3.0), make_pose(np.eye(3), [2.5, 0.0, 0.5]), "wall")


def _camera() -> np.ndarray:
    eye, target = np.array([0.0, 0.0, 0.8]), np.array([1.2, 0.0, 0.5])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, np.cross(z, x), z, eye
    return T


def _persisted(clouds: pc.SensedClouds, now: float) -> list[WorldObject]:
    return [o for o in clouds.objects(now) if o.name.endswith("#persisted")]


def _near_box(objs: list[WorldObject]) -> int:
    """Persisted ball centres within 5 cm of the box's volume."""
    n = 0
    for o in objs:
        d = np.abs(o.shape.points - BOX.pose[:3, 3]) - 0.1
        n += int((np.linalg.norm(np.maximum(d, 0.0), axis=1) < 0.05).sum())
    return n


def test_hidden_face_persists_then_is_carved_or_decays() -> None:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    T = _camera()
    x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
    settings = pc.CloudSettings(point_cloud_topics=(TOPIC,),
                                camera_poses=((TOPIC, (*T[:3, 3], x, y, z, w)),),
                                cloud_max_age=10.0, cloud_persistence=1.0)
    clouds = pc.SensedClouds(settings)
    clouds.set_robot(robot, {robot.base_name})
    cam = DepthCamera(80, 60, math.radians(60.0), 0.1, 4.0, 0.0)
    rng = np.random.default_rng(0)

    def send(t: float, objs: list[WorldObject]) -> None:
        clouds.joints.add(t, robot.named_configuration("ready"))
        msg = pc.points_to_pointcloud2(render_grid(cam, T, objs, rng), "camera_optical")
        clouds.on_message(TOPIC, msg, t, t)

    send(0.0, [BOX])
    assert not _persisted(clouds, 0.0)  # nothing seen before
    send(0.3, [PLATE, BOX])  # the plate hides the box
    objs = _persisted(clouds, 0.3)
    assert objs
    # the box's seen face (-x, facing the camera) is inside the persisted balls
    g = np.linspace(-0.1, 0.1, 41)
    Y, Z = np.meshgrid(g, g)
    face = np.stack([np.full(Y.size, -0.1), Y.ravel(), Z.ravel()], axis=1) + BOX.pose[:3, 3]
    covered = np.zeros(len(face), dtype=bool)
    for o in objs:
        d = np.linalg.norm(face[:, None] - o.shape.points[None], axis=2)
        covered |= (d <= o.shape.radius).any(axis=1)
    assert covered.all()
    # another parameter changed: the map stays
    clouds.configure(dataclasses.replace(settings, cloud_max_age=9.0))
    send(0.4, [PLATE, BOX])
    assert _near_box(_persisted(clouds, 0.4)) > 0
    # the box taken away, the camera sees the wall behind it: its rays carve the box's voxels
    send(0.6, [WALL])
    assert _near_box(_persisted(clouds, 0.6)) == 0
    # decay: seen at 0.7 (hidden from 0.8 on), gone after cloud_persistence
    send(0.7, [BOX])
    send(0.8, [PLATE, BOX])
    assert _near_box(_persisted(clouds, 0.8)) > 0
    send(1.65, [PLATE, BOX])
    assert _near_box(_persisted(clouds, 1.65)) > 0
    send(1.75, [PLATE, BOX])
    assert _near_box(_persisted(clouds, 1.75)) == 0
