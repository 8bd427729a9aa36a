"""'Unseen is occupied' in the nodes' cloud pipeline (SensedClouds, cloud_unseen_range and
cloud_unseen_min_range): inside the camera's frustum, behind every measured point and along
the rays of pixels with no return, up to the range limit, is an obstacle; before the minimum
range (no return) and outside the frustum is not.

Oracle: the camera's rays from its field of view (closed form), the true box, and brute-force
coverage of points against every ball of the resulting world objects.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs.msg")

from scipy.spatial.transform import Rotation

from robot_collision import Box, RobotModel, WorldObject, default_robot_paths, make_pose
from robot_collision.ros import point_clouds as pc
from robot_collision.tools.depth_camera import DepthCamera, render_grid

TOPIC = "camera/points"
CAM = DepthCamera(64, 48, math.radians(60.0), 0.1, 4.0, 0.0)
BOX = WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [1.4, 0.0, 0.5]), "box")


def _camera() -> np.ndarray:
    eye, target = np.array([0.0, 0.0, 0.9]), np.array([1.4, 0.0, 0.5])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, np.cross(z, x), z, eye
    return T


def _rays() -> np.ndarray:
    f = 0.5 * CAM.width / math.tan(0.5 * CAM.hfov)
    u = (np.arange(CAM.width) + 0.5 - 0.5 * CAM.width) / f
    v = (np.arange(CAM.height) + 0.5 - 0.5 * CAM.height) / f
    U = np.stack(np.broadcast_arrays(u[None, :], v[:, None], 1.0), axis=-1)
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def _covered(Q: np.ndarray, objs: list[WorldObject]) -> np.ndarray:
    out = np.zeros(len(Q), dtype=bool)
    for o in objs:
        P = o.shape.points @ o.pose[:3, :3].T + o.pose[:3, 3]
        for k in range(0, len(Q), 500):
            d = np.linalg.norm(Q[k:k + 500, None] - P[None], axis=2)
            out[k:k + 500] |= (d <= o.shape.radius).any(axis=1)
    return out


@pytest.mark.parametrize("min_range", [0.0, 0.4])
def test_unseen_space_in_the_frustum_is_an_obstacle(min_range: float) -> None:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    T = _camera()
    x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
    clouds = pc.SensedClouds(pc.CloudSettings(
        point_cloud_topics=(TOPIC,), camera_poses=((TOPIC, (*T[:3, 3], x, y, z, w)),),
        cloud_max_age=10.0, cloud_unseen_range=2.5, cloud_unseen_min_range=min_range))
    clouds.set_robot(robot, {robot.base_name})
    G = render_grid(CAM, T, [BOX], np.random.default_rng(0))
    clouds.joints.add(0.0, robot.named_configuration("ready"))
    clouds.on_message(TOPIC, pc.points_to_pointcloud2(G, "camera_optical"), 0.0, 0.0)
    objs = clouds.objects(0.0)
    rng = np.random.default_rng(1)
    hit = np.isfinite(G).all(axis=-1)
    rays = _rays()

    def world(d: np.ndarray, t: np.ndarray) -> np.ndarray:
        return (d * t[:, None]) @ T[:3, :3].T + T[:3, 3]

    # the shell is hollow (robot_collision.geometry.sensed_surface): its boundary is covered
    # -- the front, the back at the range limit, the sides along the rays of the pixels on a
    # border between hits and no returns (or on the image's border)
    pad = np.zeros((hit.shape[0] + 2, hit.shape[1] + 2), dtype=bool)
    pad[1:-1, 1:-1] = hit
    same = np.ones(hit.shape, dtype=bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            same &= pad[1 + dr:hit.shape[0] + 1 + dr, 1 + dc:hit.shape[1] + 1 + dc] == hit
    side = ~same
    side[0, :] = side[-1, :] = side[:, 0] = side[:, -1] = True
    back = 2.5 * (1 - 1e-9)
    away = ~hit  # no-return pixels 4 or more pixels from any hit
    for dr in range(-3, 4):
        for dc in range(-3, 4):
            away &= ~np.roll(np.roll(hit, dr, axis=0), dc, axis=1)
    for region, front in ((hit, None), (~hit, 0.4)):
        if front is None:
            near = np.linalg.norm(G[region], axis=1)
        else:
            near = np.full(int(region.sum()), front + 1e-6)
        k = rng.integers(0, int(region.sum()), 600)
        d = rays[region][k]
        t = np.where(rng.random(600) < 0.5, near[k], back)
        t = np.where(side[region][k], rng.uniform(near[k], back), t)
        covered = _covered(world(d, t), objs)
        if front is None or min_range > 0:
            assert covered.all()
        else:  # no-return rays stay free (but for the hits' shell reaching a few pixels over)
            assert not covered[away[region][k]].any()
    k = rng.integers(0, int((~hit).sum()), 600)
    # outside the frustum (behind the camera) and beyond the range limit: free
    assert not _covered(world(-rays.reshape(-1, 3)[:300], np.full(300, 1.0)), objs).any()
    assert not _covered(world(rays.reshape(-1, 3)[:300], np.full(300, 2.6)), objs).any()
