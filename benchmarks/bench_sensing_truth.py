"""Sensed obstacles judged against the TRUE obstacle: does the safety distance hold?

One box (the demo's ``camera_box``, 0.2 x 0.2 x 0.4 m) that the filter knows only from a
simulated depth camera (160 x 120 pixels, 70 degree field of view, 1.5 m away, 2 mm depth noise,
10 clouds/s), the default arm in its ``ready`` pose with its closest body 12 cm from the box,
pushed straight at the box (joint velocity along the gradient of the TRUE distance, 0.1 m/s)
through the velocity filter at 100 Hz (safety distance 30 mm, ``cloud_timeout_action`` stop).
The arm's pipeline is the nodes' own: ``ros.point_clouds.SensedClouds`` (conversion, transform
by the camera pose, self-filter, the sensed-surface model) feeding ``VelocityFilter`` (what the
filter node's tick does). The judge is the real box primitive (``CollisionChecker.min_distance``
of the robot against it, every tick), never the package's picture of it.

Scenes (the push is along +x at the box's -x face, near its top edge):
- ``head_on``: the camera looks at the pushed face from 25 degrees off its normal;
- ``grazing``: the camera sees the pushed face at 14 degrees above its plane;
- ``hidden``: the camera looks from behind and above: it sees the top and the far faces, the
  pushed face is hidden from it;
- ``hidden_unseen``: "unseen is occupied" (``cloud_unseen_range`` 3 m: all that lies behind
  a seen surface within 3 m of the camera is an obstacle; earlier code without the parameter
  runs the scene with the default occlusion depth), the camera behind and steeply above the
  box (from ``hidden``'s camera the box's unseen shadow reaches the arm's lower links, which
  the simulated camera does not see: the arm starts inside it and cannot move), the push 25 cm
  below the box's top (farther behind the seen top face than the default occlusion depth);
- ``occluded``: ``head_on``; after 0.5 s a plate 0.3 m in front of the camera hides the box
  (the judge's world is the box alone; the plate is far from the arm), with seen surfaces
  persisting (``cloud_persistence`` 5 s; earlier code without it forgets the box);
- ``no_return``: ``head_on``, but the box returns nothing (a black or shiny box: its pixels are
  dropouts; a wall 0.6 m behind it gives the camera's other pixels a return), with "unseen is
  occupied" for pixels without a return (``cloud_unseen_range`` 3 m, ``cloud_unseen_min_range``
  0.5 m; earlier code without the parameters, and the default settings, see no box at all);
- ``blinded``: ``head_on``, then after 0.5 s the camera sends all-NaN clouds (a covered lens);
- ``future_dead``: ``head_on``; at 0.5 s one cloud stamped 10 s ahead, then the camera dies.

Reported per scene: the true minimum clearance (mm) and its margin against the safety distance,
and (dead camera) how long after its last cloud the filter stopped.

Before/after in one sitting: set ``SENSING_TRUTH_BEFORE`` to a work tree of the earlier code
(``git worktree add /tmp/before 9e23354``); the same scenes then also run on that code (in a
subprocess with its package first on the path) and both appear in the output.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from typing import Any

import numpy as np

SAFETY = 0.03
SPEED = 0.1
DT = 0.01
CLOUD_PERIOD = 0.1
CLOUD_MAX_AGE = 1.0
GAP = 0.12
BOX = (0.2, 0.2, 0.4)
UNSEEN_RANGE = 3.0
PERSISTENCE = 5.0
UNSEEN_MIN_RANGE = 0.5
TARGETS = {"seen_faces_min_mm": (SAFETY - 0.003) * 1e3, "hidden_min_mm": 0.0,
           "hidden_unseen_min_mm": (SAFETY - 0.003) * 1e3,
           "occluded_min_mm": (SAFETY - 0.003) * 1e3,
           "no_return_min_mm": (SAFETY - 0.003) * 1e3,
           "dead_camera_stop_s": CLOUD_MAX_AGE + 0.2}


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Optical frame (z forward, x right, y down) at ``eye`` looking at ``target``."""
    z = target - eye
    z = z / np.linalg.norm(z)
    up = np.array([0.0, 0.0, 1.0])
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-6:
        x = np.array([1.0, 0.0, 0.0])
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, y, z, eye
    return T


def _quat(R: np.ndarray) -> tuple[float, float, float, float]:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return float(x), float(y), float(z), float(w)


def _scene(robot: Any, checker: Any, name: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """(true box, camera pose, start q) of a scene."""
    from robot_collision import Box, WorldObject, make_pose

    q = robot.named_configuration("ready")
    # the box's -x face GAP in front of the robot's point closest to it, its top 4 cm above it
    probe = WorldObject(Box(0.02, 2.0, 2.0), make_pose(np.eye(3), [2.0, 0.0, 0.0]), "probe")
    table = checker.clearance(q, [probe], influence_distance=10.0)
    rows = np.flatnonzero(np.asarray(table.other_links) < 0)
    k = int(rows[np.argmin(table.distances[rows])])
    p = np.asarray(table.witness_robot[k])
    # (hidden_unseen: the push 25 cm below the top, deeper behind the seen top face than the
    # default occlusion depth)
    top = 0.25 if name == "hidden_unseen" else 0.04
    c = p + np.array([GAP + 0.5 * BOX[0], 0.0, top - 0.5 * BOX[2]])
    for _ in range(4):  # move the box along x until the robot is GAP from it
        box = WorldObject(Box(*BOX), make_pose(np.eye(3), c), "camera_box")
        c = c + np.array([GAP - checker.min_distance(q, [box], ignore_self=True), 0.0, 0.0])
    box = WorldObject(Box(*BOX), make_pose(np.eye(3), c), "camera_box")
    face = np.array([c[0] - 0.5 * BOX[0], p[1], p[2]])  # on the pushed face
    if name == "grazing":
        a = math.radians(14.0)
        eye = face + 1.5 * np.array([-math.sin(a), math.cos(a), 0.0])
    elif name == "hidden":
        eye = c + 1.5 * np.array([0.55, 0.25, 0.8]) / np.linalg.norm([0.55, 0.25, 0.8])
    elif name == "hidden_unseen":  # steeper: the box's unseen shadow clears the arm
        eye = c + 1.5 * np.array([0.15, 0.1, 1.0]) / np.linalg.norm([0.15, 0.1, 1.0])
    else:
        a = math.radians(25.0)
        eye = face + 1.5 * np.array([-math.cos(a), math.sin(a) * 0.6, math.sin(a) * 0.8])
    return box, _look_at(eye, face if not name.startswith("hidden") else c), q


def _settings(**kw: Any) -> Any:
    from robot_collision.ros.point_clouds import CloudSettings

    names = {f.name for f in dataclasses.fields(CloudSettings)}
    return CloudSettings(**{k: v for k, v in kw.items() if k in names})


def run_scene(name: str, seconds: float = 3.0) -> dict[str, Any]:
    from robot_collision import (
        Box,
        CollisionChecker,
        RobotModel,
        WorldObject,
        default_robot_paths,
    )
    from robot_collision.control.velocity_filter import FilterOptions, VelocityFilter
    from robot_collision.ros import point_clouds as pc
    from robot_collision.tools import depth_camera as dc

    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    judge = CollisionChecker(robot, skip="parent")
    box, cam_T, q = _scene(robot, judge, name)
    topic = "camera/points"
    settings = _settings(point_cloud_topics=(topic,),
                         camera_poses=((topic, (*cam_T[:3, 3], *_quat(cam_T[:3, :3]))),),
                         cloud_max_age=CLOUD_MAX_AGE, cloud_point_radius=0.01,
                         cloud_unseen_range=(UNSEEN_RANGE if name in ("hidden_unseen", "no_return")
                                             else 0.0),
                         cloud_unseen_min_range=UNSEEN_MIN_RANGE if name == "no_return" else 0.0,
                         cloud_persistence=PERSISTENCE if name == "occluded" else 0.0)
    clouds = pc.SensedClouds(settings)
    clouds.set_robot(robot, {robot.base_name})
    organised = hasattr(dc, "render_grid")
    camera = dc.DepthCamera(160, 120, math.radians(70.0), 0.1, 4.0, 0.002)
    rng = np.random.default_rng(0)
    # (occluded) a plate across the camera's view of the box, 0.3 m in front of the camera
    view = cam_T[:3, 2]
    plate = WorldObject(Box(0.005, 0.6, 0.6), cam_T @ np.array(
        [[0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0.3], [0, 0, 0, 1.0]]), "plate")
    assert abs(float(plate.pose[:3, 0] @ view)) > 0.99
    # (no_return) a wall 0.6 m behind the box, across the camera's view
    back = WorldObject(Box(0.005, 4.0, 4.0), cam_T @ np.array(
        [[0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, float(np.linalg.norm(
            box.pose[:3, 3] - cam_T[:3, 3])) + 0.6], [0, 0, 0, 1.0]]), "back_wall")
    filt = VelocityFilter(CollisionChecker(robot, skip="parent"),
                          FilterOptions(safety_distance_env=SAFETY))
    t = 0.0
    next_cloud = 0.0
    last_cloud = -1.0
    stopped_at = math.nan
    dead = False
    true_min = math.inf
    sensed_min = math.inf
    key: Any = None
    rejected = 0
    while t < seconds:
        clouds.joints.add(t, q.copy())
        if t >= next_cloud - 1e-9 and not dead:
            next_cloud += CLOUD_PERIOD
            stamp = t
            if organised:
                P = dc.render_grid(camera, cam_T, [box], rng)
            else:
                P = dc.render_points(camera, cam_T, [box], rng)
            if name == "occluded" and t >= 0.5:
                P = (dc.render_grid(camera, cam_T, [plate, box], rng) if organised
                     else dc.render_points(camera, cam_T, [plate, box], rng))
            if name == "no_return":  # the box's pixels are dropouts, the wall's return
                P = dc.render_grid(camera, cam_T, [back, box], rng)
                P[np.isfinite(dc.render_grid(camera, cam_T, [box], rng))] = np.nan
            if name == "blinded" and t >= 0.5:
                P = np.full((120, 160, 3) if organised else (19200, 3), np.nan)
            if name == "future_dead" and t >= 0.5:
                stamp, dead = t + 10.0, True
            msg = pc.points_to_pointcloud2(P, "camera_optical")
            msg.is_dense = bool(np.isfinite(P).all())
            try:
                try:
                    clouds.on_message(topic, msg, stamp, t)
                except TypeError:  # the earlier code: no clock argument
                    clouds.on_message(topic, msg, stamp)
            except pc.CloudError:
                rejected += 1
            last_cloud = t
        missing = clouds.missing(t)
        qd_cmd = np.zeros(robot.num_joints)
        row = judge.clearance(q, [box], influence_distance=10.0)
        world_rows = np.flatnonzero(np.asarray(row.other_links) < 0)
        k = int(world_rows[np.argmin(row.distances[world_rows])])
        true_min = min(true_min, float(judge.min_distance(q, [box], ignore_self=True)))
        J = np.asarray(row.jacobians[k])
        if J @ J > 1e-12:
            qd_cmd = -SPEED * J / (J @ J)
        if missing:
            if math.isnan(stopped_at) and (dead or name == "blinded") and t > 0.5:
                stopped_at = t - (0.5 if name == "blinded" else last_cloud)
            qd = np.zeros(robot.num_joints)
        else:
            objs = clouds.objects(t)
            new_key = tuple(id(o) for o in objs)
            if new_key != key:
                filt.set_world(objs, keep_witnesses=key is not None)
                key = new_key
            res = filt.filter(q, qd_cmd, DT)
            qd = res.velocity if res.ok else np.zeros(robot.num_joints)
            if res.ok and math.isfinite(res.min_distance):
                sensed_min = min(sensed_min, float(res.min_distance))
        q = q + DT * qd
        t += DT
    out: dict[str, Any] = {"true_min_clearance_mm": round(true_min * 1e3, 1),
                           "vs_safety_mm": round((true_min - SAFETY) * 1e3, 1),
                           "sensed_min_mm": round(sensed_min * 1e3, 1),
                           "clouds_refused": rejected}
    if name in ("blinded", "future_dead"):
        out["stopped_after_s"] = None if math.isnan(stopped_at) else round(stopped_at, 2)
    return out


SCENES = ("head_on", "grazing", "hidden", "hidden_unseen", "occluded", "no_return", "blinded",
          "future_dead")


def _all(quick: bool) -> dict[str, Any]:
    seconds = 2.5 if quick else 3.0
    res = {s: run_scene(s, seconds if s != "future_dead" else (4.0 if quick else 13.0))
           for s in SCENES}
    seen = [res[s]["true_min_clearance_mm"] for s in ("head_on", "grazing", "blinded")]
    dead = res["future_dead"].get("stopped_after_s")
    res["verdict"] = {
        "seen_faces_min_mm": min(seen),
        "seen_faces_ok": min(seen) >= TARGETS["seen_faces_min_mm"],
        "hidden_ok": res["hidden"]["true_min_clearance_mm"] >= TARGETS["hidden_min_mm"],
        "hidden_unseen_ok": res["hidden_unseen"]["true_min_clearance_mm"]
        >= TARGETS["hidden_unseen_min_mm"],
        "occluded_ok": res["occluded"]["true_min_clearance_mm"] >= TARGETS["occluded_min_mm"],
        "no_return_ok": res["no_return"]["true_min_clearance_mm"] >= TARGETS["no_return_min_mm"],
        "dead_camera_ok": dead is not None and dead <= TARGETS["dead_camera_stop_s"],
    }
    return res


def run(quick: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"safety_distance_mm": SAFETY * 1e3, "targets": TARGETS,
                           "after": _all(quick)}
    before = os.environ.get("SENSING_TRUTH_BEFORE", "")
    if before:
        env = dict(os.environ, PYTHONPATH=os.path.join(before, "robot_collision"),
                   SENSING_TRUTH_BEFORE="")
        code = (f"import sys, json; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                f"import bench_sensing_truth as b; print(json.dumps(b._all({quick!r})))")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, cwd=before, check=False)
        try:
            out["before"] = json.loads(r.stdout.strip().splitlines()[-1])
            out["before_tree"] = before
        except (IndexError, json.JSONDecodeError):
            out["before"] = {"error": (r.stderr or r.stdout)[-2000:]}
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=1))
