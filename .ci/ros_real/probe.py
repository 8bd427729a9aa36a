"""Checks a running ``ros2 launch robot_collision robot_collision.launch.py use_mock_hardware:=true
use_robot_state_publisher:=false`` from a separate process, over real topics and actions only.

Run by ``.ci/ros_real/run.sh`` in the workspace's environment (the underlay plus the workspace's
``install/setup.bash``)::

    python probe.py --since <epoch seconds of `ros2 launch`> [--json out.json]

Checks, in order (each prints one line; the exit status is 1 if any failed):

1. clearance tables arrive on ``/collision_checker/clearance`` (reports the time from the
   launch to the first table);
2. a ``moveit_msgs/CollisionObject`` ADD on ``/collision_object`` adds rows for it to the table,
   REMOVE restores the table as it was;
3. a ``PlanMotion`` goal on ``/planner/plan_motion`` succeeds and the same trajectory is
   published as ``moveit_msgs/DisplayTrajectory`` on ``/display_planned_path``;
4. a depth camera as a user has one: its frame ``ci_camera_optical`` comes from a tf2
   ``StaticTransformBroadcaster`` (what ``static_transform_publisher`` does) and its
   ``PointCloud2`` (``/ci_camera/points``, given to the nodes by the launch argument
   ``point_cloud_topics``) is published in that frame from the start, a patch far above the arm;
   the check moves the patch next to the resting arm: the clearance table must get rows for the
   cloud at the distance computed here from the transformed points (a cloud read in the wrong
   frame would be a metre off), and lose them when the patch goes back;
5. joint velocities on ``/velocity_filter/command``: joint1 turns the upright arm towards the
   demo world's post, then the arm is pushed straight at it (along the gradient of the
   distance, recomputed from each joint state); the velocity filter must stop the mock arm at
   the safety distance (clearances computed here from ``/joint_states`` with the core API, an
   independent check of the filter's output).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import rclpy
from geometry_msgs.msg import Pose, TransformStamped
from moveit_msgs.msg import CollisionObject, DisplayTrajectory
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, PointCloud2, PointField
from shape_msgs.msg import SolidPrimitive
from std_msgs.msg import Float64MultiArray

from robot_collision import (
    CollisionChecker,
    PointCloud,
    RobotModel,
    WorldObject,
    data_path,
    default_robot_paths,
)
from robot_collision.ros.world import WorldModel
from robot_collision_interfaces.action import PlanMotion
from robot_collision_interfaces.msg import ClearanceTable

GOAL = (-1.0, 0.7, 0.0, 1.8, 0.0, math.pi - 2.5, 0.0)  # the demo's goal behind the post
SAFETY_ENV = 0.03  # velocity_filter safety_distance_env in config/robot_collision.yaml (m)
TOLERANCE = 0.002  # m below the safety distance still accepted (discrete time, mock arm steps)
STOP_BAND = 0.015  # the arm must stop within this much above the safety distance (m)
POST_AZIMUTH = math.atan2(-0.4, 0.5)  # joint1 angle facing the demo world's post (rad)
PUSH_SPEED = 0.15  # m/s: closing speed commanded towards the post
CLOUD_TOPIC = "/ci_camera/points"  # run.sh: ros2 launch ... point_cloud_topics:=/ci_camera/points
CAMERA_FRAME = "ci_camera_optical"
CLOUD_TOLERANCE = 0.02  # m: thinning to cloud_resolution (0.01) and the node's surface model
CLOUD_WAIT = 45.0  # s, for the first and the last cloud row (30 s seen at load 3-4)
FAR_PATCH = (0.0, 0.0, 3.0)  # m, base frame: out of every check's way


def _quat_matrix(q: tuple[float, float, float, float]) -> np.ndarray:
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _patch(centre: np.ndarray, normal: np.ndarray, size: float = 0.06,
           step: float = 0.01) -> np.ndarray:
    """A square of points (base frame) around ``centre``, facing ``normal``."""
    n = normal / np.linalg.norm(normal)
    a = np.cross(n, [0.0, 0.0, 1.0] if abs(n[2]) < 0.9 else [1.0, 0.0, 0.0])
    a /= np.linalg.norm(a)
    b = np.cross(n, a)
    r = np.arange(-size / 2, size / 2 + 1e-9, step)
    return np.array([centre + u * a + v * b for u in r for v in r])


class Probe(Node):
    def __init__(self) -> None:
        super().__init__("ros_real_probe")
        self.lock = threading.Condition()
        self.tables: list[tuple[float, Any]] = []
        self.states: list[tuple[float, np.ndarray]] = []
        self.displays: list[Any] = []
        names = [f"joint{i + 1}" for i in range(7)]
        self.joint_names = names
        reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(ClearanceTable, "/collision_checker/clearance",
                                 self._on_table, reliable)
        self.create_subscription(JointState, "/joint_states", self._on_state, 50)
        self.create_subscription(DisplayTrajectory, "/display_planned_path",
                                 self._on_display, reliable)
        self.co_pub = self.create_publisher(CollisionObject, "/collision_object", reliable)
        self.cmd_pub = self.create_publisher(Float64MultiArray, "/velocity_filter/command", 10)
        self.plan_client = ActionClient(self, PlanMotion, "/planner/plan_motion")
        self.executor: Any = None  # set by main(): goals are sent from its thread
        self.cloud_pub = self.create_publisher(PointCloud2, CLOUD_TOPIC, 5)
        self.camera: Optional[tuple[np.ndarray, np.ndarray]] = None  # (R, t): camera in base
        self.patch_base = _patch(np.array(FAR_PATCH), np.array([0.0, 0.0, -1.0]))
        self._tf_broadcaster: Any = None
        self.create_timer(0.2, self._publish_cloud)

    def set_camera(self, base_frame: str, rotation_xyzw: tuple[float, float, float, float],
                   translation: np.ndarray) -> None:
        """Broadcast the camera frame as a static transform (tf2_ros, like
        static_transform_publisher) and publish the clouds in it from now on."""
        import tf2_ros  # type: ignore[import-not-found,unused-ignore]

        tf = TransformStamped()
        tf.header.stamp = self.get_clock().now().to_msg()
        tf.header.frame_id = base_frame
        tf.child_frame_id = CAMERA_FRAME
        tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = (
            float(v) for v in translation)
        (tf.transform.rotation.x, tf.transform.rotation.y, tf.transform.rotation.z,
         tf.transform.rotation.w) = rotation_xyzw
        if self._tf_broadcaster is None:
            self._tf_broadcaster = tf2_ros.StaticTransformBroadcaster(self)
        self._tf_broadcaster.sendTransform(tf)
        with self.lock:
            self.camera = (_quat_matrix(rotation_xyzw), np.asarray(translation, dtype=float))

    def _publish_cloud(self) -> None:
        with self.lock:
            camera, points = self.camera, self.patch_base
        if camera is None:
            return
        R, t = camera
        local = (points - t) @ R  # base -> camera frame: R^T (p - t), row-wise
        msg = PointCloud2()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = CAMERA_FRAME
        msg.height, msg.width = 1, len(local)
        msg.fields = [PointField(name=a, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                      for i, a in enumerate("xyz")]
        msg.is_bigendian = False
        msg.point_step, msg.row_step = 12, 12 * len(local)
        msg.data = np.ascontiguousarray(local, dtype="<f4").tobytes()
        msg.is_dense = True
        self.cloud_pub.publish(msg)

    def _on_table(self, msg: Any) -> None:
        with self.lock:
            self.tables.append((time.time(), msg))
            self.lock.notify_all()

    def _on_state(self, msg: Any) -> None:
        idx = {n: i for i, n in enumerate(msg.name)}
        if all(n in idx for n in self.joint_names):
            q = np.array([msg.position[idx[n]] for n in self.joint_names])
            with self.lock:
                self.states.append((time.monotonic(), q))
                del self.states[:-2000]
                self.lock.notify_all()

    def _on_display(self, msg: Any) -> None:
        with self.lock:
            self.displays.append(msg)
            self.lock.notify_all()

    def wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    return value
                self.lock.wait(min(left, 0.1))


def _rows(msg: Any) -> dict[tuple[str, str], float]:
    return {(r.robot_body, r.other_body): float(r.distance) for r in msg.rows}


def _box(op: bytes) -> Any:
    obj = CollisionObject()
    obj.header.frame_id = "base_link"
    obj.id = "ci_box"
    obj.operation = op
    obj.pose = Pose()
    obj.pose.position.x = 0.2
    obj.pose.position.z = 0.5
    obj.pose.orientation.w = 1.0
    obj.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.1, 0.1])]
    obj.primitive_poses = [Pose()]
    obj.primitive_poses[0].orientation.w = 1.0
    return obj


def check_tables(p: Probe, since: float, timeout: float) -> tuple[bool, str, dict[str, Any]]:
    got = p.wait(lambda: p.tables, timeout)
    if not got:
        return False, f"no clearance table within {timeout:.0f} s", {}
    first = p.tables[0][0] - since
    msg = p.tables[-1][1]
    return True, (f"first table {first:.1f} s after ros2 launch; {len(msg.rows)} rows, "
                  f"min distance {msg.min_distance:.3f} m"), {"first_table_s": first}


def check_collision_object(p: Probe) -> tuple[bool, str, dict[str, Any]]:
    def table_after(t: float) -> Any:
        return p.wait(lambda: next((m for s, m in p.tables if s > t), None), 10.0)

    before = table_after(time.time())
    if before is None:
        return False, "no table before the ADD", {}
    if not p.wait(lambda: p.co_pub.get_subscription_count() >= 3, 10.0):
        return False, "collision_object has fewer than 3 subscribers (checker, filter, planner)", {}
    p.co_pub.publish(_box(CollisionObject.ADD))
    added = p.wait(lambda: next((m for _, m in p.tables[-5:]
                                 if any(r.other_body == "ci_box" for r in m.rows)), None), 10.0)
    if added is None:
        return False, "ADD: no table row for 'ci_box' within 10 s", {}
    n_box = sum(r.other_body == "ci_box" for r in added.rows)
    t_remove = time.time()
    p.co_pub.publish(_box(CollisionObject.REMOVE))
    removed = p.wait(lambda: next((m for s, m in p.tables[-5:] if s > t_remove and not any(
        r.other_body == "ci_box" for r in m.rows)), None), 10.0)
    if removed is None:
        return False, "REMOVE: the rows of 'ci_box' did not go within 10 s", {}
    a, b = _rows(before), _rows(removed)
    if set(a) != set(b) or any(abs(a[k] - b[k]) > 1e-9 for k in a):
        return False, f"REMOVE: table differs from before the ADD: {sorted(set(a) ^ set(b))}", {}
    return True, (f"ADD gave {n_box} rows for 'ci_box' (min {added.min_distance:.3f} m), REMOVE "
                  f"restored the {len(a)} rows"), {"rows_for_box": n_box}


def check_plan(p: Probe) -> tuple[bool, str, dict[str, Any]]:
    if not p.plan_client.wait_for_server(timeout_sec=30.0):
        return False, "no /planner/plan_motion action server", {}
    goal = PlanMotion.Goal()
    goal.joint_names = list(p.joint_names)
    goal.goal_positions = list(GOAL)
    goal.time_limit = 10.0
    n_display = len(p.displays)

    async def send() -> Any:
        # in the executor's thread: rclpy's ActionClient drops a reply that the spinning thread
        # takes before the sending thread filed its sequence number (ros2/rclpy#1123)
        handle = await p.plan_client.send_goal_async(goal)
        return (await handle.get_result_async()).result if handle.accepted else False

    task = p.executor.create_task(send)
    if not p.wait(task.done, 60.0):
        return False, "PlanMotion: no result within 60 s", {}
    res = task.result()
    if res is False:
        return False, "PlanMotion goal not accepted", {}
    if res.error_code != PlanMotion.Result.SUCCESS:
        return False, f"PlanMotion failed: {res.error_code} {res.message}", {}
    disp = p.wait(lambda: p.displays[n_display:], 10.0)
    if not disp:
        return False, "no DisplayTrajectory on /display_planned_path", {}
    jt = disp[-1].trajectory[0].joint_trajectory
    same = (len(jt.points) == len(res.trajectory.points) and np.allclose(
        jt.points[-1].positions, res.trajectory.points[-1].positions))
    if not same:
        return False, "DisplayTrajectory differs from the action's trajectory", {}
    end = np.asarray(res.trajectory.points[-1].positions)
    if not np.allclose(end, GOAL, atol=1e-6):
        return False, f"trajectory ends at {end}, not at the goal", {}
    return True, (f"SUCCESS in {res.planning_time * 1e3:.0f} ms, {len(jt.points)} points, "
                  f"{res.trajectory.points[-1].time_from_start.sec} s; DisplayTrajectory "
                  f"'{disp[-1].model_id}' published"), {"planning_time_s": res.planning_time}


def _matrix_quat(R: np.ndarray) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation matrix."""
    w = math.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return x / n, y / n, z / n, w / n


class CameraPlan:
    """Where the check's patch and camera go, for the arm at ``q`` (its resting pose): the patch
    ~10 cm from the arm, the camera on the arm's side of it looking at it (so that the space the
    nodes treat as occluded, behind the measured points, lies away from the arm)."""

    def __init__(self, checker: Any, q: np.ndarray) -> None:
        self.checker = checker

        def dist(c: np.ndarray) -> float:
            return self.distance(q, c[None, :])

        best: Optional[tuple[float, np.ndarray]] = None
        for x in np.arange(-0.6, 0.61, 0.15):
            for y in np.arange(-0.6, 0.61, 0.15):
                for z in np.arange(0.15, 1.36, 0.15):
                    c = np.array([x, y, z])
                    d = dist(c)
                    if 0.07 <= d <= 0.14 and (best is None or abs(d - 0.1) < abs(best[0] - 0.1)):
                        best = (d, c)
        if best is None:
            raise RuntimeError("no place for the camera check's patch near the arm")
        centre = best[1]
        h = 1e-3
        grad = np.array([(dist(centre + h * e) - dist(centre - h * e)) / (2 * h)
                         for e in np.eye(3)])
        away = grad / np.linalg.norm(grad)  # from the arm towards the patch
        self.patch = _patch(centre, -away)
        self.translation = centre - 0.8 * away  # camera 0.8 m from the patch, arm side
        z = away
        x = np.cross([0.0, 0.0, 1.0] if abs(z[2]) < 0.9 else [1.0, 0.0, 0.0], z)
        x /= np.linalg.norm(x)
        self.rotation = _matrix_quat(np.column_stack([x, np.cross(z, x), z]))

    def distance(self, q: np.ndarray, points: np.ndarray) -> float:
        """Smallest robot-to-points distance (m) at ``q``, the core's own computation."""
        table = self.checker.clearance(q, [WorldObject(PointCloud(points), name="p")], math.inf)
        kinds = np.asarray(table.kinds)
        d = np.asarray(table.distances)[kinds != 0]
        return float(d.min()) if len(d) else math.inf


def check_cloud(p: Probe, plan: CameraPlan) -> tuple[bool, str, dict[str, Any]]:
    def cloud_rows(msg: Any) -> list[Any]:
        return [r for r in msg.rows if r.other_body.startswith(CLOUD_TOPIC)]

    if not p.wait(lambda: p.states, 10.0):
        return False, "no /joint_states", {}
    with p.lock:
        q = p.states[-1][1].copy()
    expected = plan.distance(q, plan.patch)
    wrong_frame = plan.distance(q, (plan.patch - plan.translation) @ _quat_matrix(plan.rotation))
    t0 = time.time()
    with p.lock:
        p.patch_base = plan.patch
    near = p.wait(lambda: next((m for s, m in p.tables[-5:] if s > t0 and cloud_rows(m)), None),
                  CLOUD_WAIT)
    if near is None:
        return False, (f"no clearance row for {CLOUD_TOPIC} within {CLOUD_WAIT:.0f} s of moving "
                       f"the patch {expected * 1e3:.0f} mm from the arm"), {}
    got = min(float(r.distance) for r in cloud_rows(near))
    info = {"cloud_expected_m": expected, "cloud_row_m": got, "cloud_wrong_frame_m": wrong_frame,
            "cloud_rows": len(cloud_rows(near))}
    t1 = time.time()
    with p.lock:
        p.patch_base = _patch(np.array(FAR_PATCH), np.array([0.0, 0.0, -1.0]))
    gone = p.wait(lambda: next((m for s, m in p.tables[-5:] if s > t1 and not cloud_rows(m)),
                               None), CLOUD_WAIT)
    text = (f"{len(cloud_rows(near))} rows for {CLOUD_TOPIC} (frame {CAMERA_FRAME} from a tf2 "
            f"static transform), closest {got * 1e3:.1f} mm, computed here {expected * 1e3:.1f}"
            f" mm (read in the wrong frame: {wrong_frame * 1e3:.0f} mm)")
    if abs(got - expected) > CLOUD_TOLERANCE:
        return False, "distance differs: " + text, info
    if gone is None:
        return False, "rows stayed after the patch moved away: " + text, info
    return True, text + "; gone when the patch moved away", info


def check_filter(p: Probe) -> tuple[bool, str, dict[str, Any]]:
    """Turn the (upright) arm towards the post with joint1, then push it straight at the post
    (PUSH_SPEED along the distance gradient of the closest body): unfiltered, the motion runs
    into the post (integrated here with the core checker); the filter must stop the arm at
    the safety distance."""
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    world = WorldModel()
    world.use_file(data_path("config", "demo_world.yaml"))
    objects = list(world.objects())
    checker = CollisionChecker(robot)
    if not p.wait(lambda: p.states, 10.0):
        return False, "no /joint_states", {}

    def latest() -> np.ndarray:
        with p.lock:
            return p.states[-1][1].copy()

    def command(v: np.ndarray) -> None:
        p.cmd_pub.publish(Float64MultiArray(data=[float(x) for x in v]))

    # 1. joint1 to the post's azimuth (arm upright: nothing near), P control through the filter
    deadline = time.monotonic() + 20.0
    while abs(latest()[0] - POST_AZIMUTH) > 0.005 and time.monotonic() < deadline:
        v = np.zeros(7)
        v[0] = np.clip(2.0 * (POST_AZIMUTH - latest()[0]), -0.5, 0.5)
        command(v)
        time.sleep(0.02)
    q = latest()
    if abs(q[0] - POST_AZIMUTH) > 0.005:
        command(np.zeros(7))
        return False, f"joint1 did not reach {POST_AZIMUTH} rad (at {q[0]:.3f})", {}
    post = [o for o in objects if o.name == "post"]

    def straight_at_post(q: np.ndarray) -> np.ndarray:
        """Joint velocity closing the gap between the post and the robot body closest to it
        at PUSH_SPEED m/s: along the gradient of that distance, the most direct way in."""
        table = checker.clearance(q, post, math.inf)
        movable = [k for k in range(len(table)) if float(table.jacobians[k] @ table.jacobians[k])
                   > 1e-6]
        k = min(movable, key=lambda i: float(table.distances[i]))
        J = np.asarray(table.jacobians[k])
        v: np.ndarray = -PUSH_SPEED * J / float(J @ J)
        norm = float(np.linalg.norm(v))
        return v if norm <= 0.5 else v * (0.5 / norm)

    # the commanded motion, unfiltered, runs into the post: integrate it here
    ahead = q.copy()
    for _ in range(400):
        ahead = ahead + 0.01 * straight_at_post(ahead)
        if _min_env(checker, ahead, post) < 0:
            break
    hit = _min_env(checker, ahead, post)
    # 2. straight at the post until the filter holds the arm
    d0, _ = _closest_env(checker, q, objects)
    d_min = math.inf
    start = time.monotonic()
    stopped_since: Optional[float] = None
    last = latest()
    while time.monotonic() - start < 30.0:
        command(straight_at_post(last))
        time.sleep(0.02)
        q = latest()
        d = _min_env(checker, q, objects)
        d_min = min(d_min, d)
        speed = float(np.linalg.norm(q - last)) / 0.02
        last = q
        if d < SAFETY_ENV + STOP_BAND and speed < 0.01:
            stopped_since = stopped_since or time.monotonic()
            if time.monotonic() - stopped_since > 1.0:
                break
        else:
            stopped_since = None
    command(np.zeros(7))
    q = latest()
    d_end, what = _closest_env(checker, q, objects)
    info = {"start_distance_m": d0, "stop_distance_m": d_end, "stopped_at": what,
            "min_world_clearance_m": d_min, "unfiltered_distance_m": hit,
            "push_time_s": time.monotonic() - start, "joint2_at_stop": float(q[1])}
    text = (f"arm pushed straight at the post at {PUSH_SPEED} m/s from {d0 * 1e3:.0f} mm "
            f"(unfiltered it would reach {hit * 1e3:.0f} mm, into it): stopped "
            f"{d_end * 1e3:.1f} mm from {what} (safety {SAFETY_ENV * 1e3:.0f} mm) after "
            f"{info['push_time_s']:.1f} s; closest {d_min * 1e3:.1f} mm")
    if hit >= 0:
        return False, "the commanded motion would not hit anything: " + text, info
    if d_min < SAFETY_ENV - TOLERANCE:
        return False, "came too close: " + text, info
    if stopped_since is None:
        return False, "did not stop at an obstacle: " + text, info
    return True, text, info


def _min_env(checker: Any, q: np.ndarray, objects: list[Any]) -> float:
    """Smallest robot-world distance (m) at ``q`` (self pairs left out)."""
    table = checker.clearance(q, objects, math.inf)
    kinds = np.asarray(table.kinds)
    env = np.asarray(table.distances)[kinds != 0] if len(kinds) else np.asarray(table.distances)
    return float(env.min()) if len(env) else math.inf


def _closest_env(checker: Any, q: np.ndarray, objects: list[Any]) -> tuple[float, str]:
    """(distance, "object (robot body)") of the closest robot-world pair at ``q``."""
    table = checker.clearance(q, objects, math.inf)
    best = (math.inf, "nothing")
    for k in range(len(table)):
        if int(table.kinds[k]) != 0 and table.distances[k] < best[0]:
            best = (float(table.distances[k]),
                    f"{table.other_bodies[k]} ({table.robot_bodies[k]})")
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--since", type=float, required=True, help="epoch time of ros2 launch")
    ap.add_argument("--first-table-timeout", type=float, default=300.0)
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args()
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    camera = CameraPlan(CollisionChecker(robot), robot.home_configuration())
    rclpy.init()
    probe = Probe()
    # the camera's frame: a static transform, published before anything else
    probe.set_camera(robot.base_name, camera.rotation, camera.translation)
    executor = SingleThreadedExecutor()
    executor.add_node(probe)
    probe.executor = executor
    def spin_quietly() -> None:
        with contextlib.suppress(ExternalShutdownException):
            executor.spin()

    spin = threading.Thread(target=spin_quietly, daemon=True)
    spin.start()
    results: dict[str, Any] = {}
    ok_all = True
    try:
        checks: list[tuple[str, Callable[[], tuple[bool, str, dict[str, Any]]]]] = [
            ("clearance tables", lambda: check_tables(probe, args.since,
                                                      args.first_table_timeout)),
            ("camera cloud, frame from tf2", lambda: check_cloud(probe, camera)),
            ("moveit CollisionObject ADD/REMOVE", lambda: check_collision_object(probe)),
            ("PlanMotion + DisplayTrajectory", lambda: check_plan(probe)),
            ("velocity filter stops the arm", lambda: check_filter(probe)),
        ]
        for name, fn in checks:
            try:
                ok, text, info = fn()
            except Exception as exc:  # a probe bug must show as a failed check
                ok, text, info = False, f"{type(exc).__name__}: {exc}", {}
            results[name] = {"ok": ok, "text": text, **info}
            print(f"probe: {'PASS' if ok else 'FAIL'} {name}: {text}", flush=True)
            ok_all = ok_all and ok
            if not ok and name == "clearance tables":
                break
    finally:
        rclpy.try_shutdown()
        spin.join(timeout=5.0)
        executor.shutdown()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
