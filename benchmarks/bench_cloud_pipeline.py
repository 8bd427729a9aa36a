"""Point-cloud message -> self-filtered cloud -> first clearance table, as the checker node does.

A 640 x 480 ``sensor_msgs/PointCloud2`` (FLOAT32 x, y, z, camera frame, 2 mm depth noise) of the
demo world (``config/demo_world.yaml``: table, crate, post), a box only the camera sees and the
default arm itself at the ``ready`` configuration (its collision shapes rendered as objects, so
that the self-filter has work to do), rendered by ``tools.depth_camera`` from the mock camera's
default pose. Timed in-process, per message, exactly the node's path (median of ``RUNS``):

- ``convert_ms``: PointCloud2 -> (N, 3) (``pointcloud2_to_points``);
- ``process_ms``: all of ``SensedClouds.on_message``: conversion, transform into the base frame
  (static camera pose), thinning to 1 cm, self-filter (1.5 cm padding) at the nearest joint state,
  index build;
- ``table_ms``: the next clearance table with the new cloud in the world (scene rebuild +
  ``CollisionChecker.clearance`` at 0.3 m influence) and its serialization for publishing
  (``ros.cdr.ClearanceTableWriter``);
- ``total_ms`` = process + table (the target: <= 10 ms).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from robot_collision import (
    CollisionChecker,
    RobotModel,
    WorldObject,
    data_path,
    default_robot_paths,
)
from robot_collision.geometry.shapes import Box
from robot_collision.geometry.transforms import make_pose, pose_from_position_quat
from robot_collision.tools.depth_camera import DepthCamera, render_points

RUNS = 30
CAMERA = (1.4, 0.0, 0.8, -0.5979, -0.5979, 0.37751, 0.37751)


def run(quick: bool = False) -> dict[str, Any]:
    try:
        from robot_collision.ros.cdr import ClearanceTableWriter
        from robot_collision.ros.point_clouds import (
            CloudSettings,
            SensedClouds,
            pointcloud2_to_points,
            points_to_pointcloud2,
        )
        from robot_collision.ros.world import WorldModel
    except ImportError as exc:
        return {"skipped": f"ROS messages not importable: {exc}"}
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    q = robot.named_configuration("ready")
    world = WorldModel()
    world.use_file(data_path("config", "demo_world.yaml"))
    seen = [*world.objects(),
            WorldObject(Box(0.2, 0.3, 0.3), make_pose(np.eye(3), [0.6, -0.05, 0.15]), "hidden")]
    T = robot.link_poses(q)
    arm = [WorldObject(s, T[robot.link_index(b)] @ local, f"{b}{k}")
           for b in robot.link_names for k, (s, local) in enumerate(robot.collision_geometry(b))]
    cam_pose = pose_from_position_quat(CAMERA[:3], CAMERA[3:])
    cam = DepthCamera(640, 480, noise_stddev=0.002)
    P = render_points(cam, cam_pose, seen + arm, np.random.default_rng(0))
    msg = points_to_pointcloud2(P, "camera_optical")
    settings = CloudSettings(point_cloud_topics=("cam",), camera_poses=(("cam", CAMERA),),
                             cloud_resolution=0.01, cloud_padding=0.015, cloud_max_age=0.0)
    clouds = SensedClouds(settings)
    clouds.set_robot(robot, {"base_link"})
    clouds.joints.add(0.0, q)
    checker = CollisionChecker(robot)
    writer = ClearanceTableWriter()
    base = list(world.objects())
    runs = 5 if quick else RUNS
    conv, proc, table, total = [], [], [], []
    rows = 0
    for k in range(runs + 2):  # the first two warm up (kernel loading)
        t0 = time.perf_counter()
        pointcloud2_to_points(msg)
        t1 = time.perf_counter()
        clouds.on_message("cam", msg, 0.001 * k)
        t2 = time.perf_counter()
        objs = base + clouds.objects(0.001 * k)
        tab = checker.clearance(q, objs, 0.3)
        writer.serialize(tab, 0, 0, "base_link")
        t3 = time.perf_counter()
        if k >= 2:
            conv.append(t1 - t0)
            proc.append(t2 - t1)
            table.append(t3 - t2)
            total.append(t3 - t1)
            rows = len(tab)
    cloud = clouds.objects(1.0)[0].shape
    # how much the self-filter removed (outside the timed path)
    from robot_collision.collision.self_filter import robot_filter
    from robot_collision.geometry.cloud_index import voxel_downsample

    thinned = voxel_downsample(P @ cam_pose[:3, :3].T + cam_pose[:3, 3], 0.01)
    kept = len(robot_filter(robot, thinned, q, 0.015))

    def ms(v: list[float]) -> float:
        return round(1e3 * float(np.median(v)), 2)

    return {
        "quick": quick,
        "image": [cam.width, cam.height],
        "message_points": len(P),
        "thinned_points": len(thinned),
        "self_filtered_out": len(thinned) - kept,
        "cloud_points": cloud.num_points,
        "clearance_rows": rows,
        "convert_ms": ms(conv),
        "process_ms": ms(proc),
        "table_ms": ms(table),
        "total_ms": ms(total),
        "total_ms_p90": round(1e3 * float(np.percentile(total, 90)), 2),
        "runs": runs,
    }
