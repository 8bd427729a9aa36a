"""The ``mock_camera`` node: a simulated depth camera publishing point clouds of world objects.

For demos and tests in place of a real RGB-D sensor. It renders the objects of its own
``world_file`` (the collision checker's YAML schema, :mod:`robot_collision.ros.world`; typically
objects the other nodes are NOT told about as primitives, so that they know them only through
this camera) with :func:`robot_collision.tools.depth_camera.render_points` from ``camera_pose``
and publishes the points.

Interface:

- publishes ``topic`` (default ``~/points``, ``sensor_msgs/PointCloud2``, FLOAT32 x, y, z,
  organised ``height`` x ``width`` with NaN for pixels without a return (``is_dense``
  false, as depth cameras publish), reliable) at ``rate`` Hz, in the camera's optical
  frame ``frame_id`` (z forward, x right, y down), stamped with the node clock; set the
  consumers' ``camera_poses`` to the same pose (or publish the camera's TF) so that they can
  place the cloud in the base frame.
- subscribes ``~/world_objects`` (``robot_collision_interfaces/WorldObject``: ADD / REMOVE /
  MOVE) to change what it sees at run time.

Parameters are in :data:`PARAMETERS`; an invalid start-up value is logged and replaced by its
default, an invalid run-time change is rejected with the reason. Nothing raises out of a
callback.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from rcl_interfaces.msg import SetParametersResult  # type: ignore[import-untyped,unused-ignore]
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2

from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg

from ..errors import ConfigurationError, RobotCollisionError
from ..geometry.transforms import pose_from_position_quat
from ..tools.depth_camera import DepthCamera, render_grid
from .point_clouds import points_to_pointcloud2
from .wiring import apply_parameter_values, finite_float, start_up_settings
from .world import WorldModel

__all__ = ["MockCameraNode", "MockCameraSettings", "PARAMETERS", "settings_from_values", "main"]

NODE_NAME = "mock_camera"

# A camera 1.4 m in front of the default arm's base, 0.8 m up, looking at (0.35, 0, 0.3).
_DEFAULT_POSE = (1.4, 0.0, 0.8, -0.5979, -0.5979, 0.37751, 0.37751)

# name: (default, description, constraints)
PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "world_file": (
        "",
        "YAML of the objects the camera sees (the world-file schema of "
        "robot_collision.ros.world; path or package://pkg/path).",
        "",
    ),
    "camera_pose": (
        list(_DEFAULT_POSE),
        "Pose of the camera's optical frame (z forward, x right, y down) in the robot base "
        "frame: [x, y, z, qx, qy, qz, qw] (m, unit quaternion).",
        "7 numbers",
    ),
    "frame_id": ("camera_optical", "frame_id of the published clouds.", ""),
    "topic": ("~/points", "PointCloud2 topic.", ""),
    "rate": (5.0, "Clouds per second (Hz).", "> 0"),
    "width": (160, "Image width in pixels.", "1..4096"),
    "height": (120, "Image height in pixels.", "1..4096"),
    "hfov": (math.radians(70.0), "Horizontal field of view (rad).", "(0, pi)"),
    "min_range": (0.1, "Nearest depth measured (m).", ">= 0"),
    "max_range": (4.0, "Farthest depth measured (m).", "> min_range"),
    "noise_stddev": (0.0, "Gaussian depth noise along each ray (m; 0 = none).", ">= 0"),
    "seed": (0, "Seed of the noise.", "integer"),
}
_READ_ONLY = ("topic",)


@dataclass(frozen=True)
class MockCameraSettings:
    """Validated parameter values of the node."""

    world_file: str = ""
    camera_pose: tuple[float, ...] = _DEFAULT_POSE
    frame_id: str = "camera_optical"
    topic: str = "~/points"
    rate: float = 5.0
    width: int = 160
    height: int = 120
    hfov: float = math.radians(70.0)
    min_range: float = 0.1
    max_range: float = 4.0
    noise_stddev: float = 0.0
    seed: int = 0

    def camera(self) -> DepthCamera:
        return DepthCamera(self.width, self.height, self.hfov, self.min_range, self.max_range,
                           self.noise_stddev)


def _validate_one(name: str, value: Any) -> Any:
    if name in ("world_file", "frame_id", "topic"):
        text = str(value).strip()
        if name != "world_file" and not text:
            raise ConfigurationError(f"{name} must not be empty")
        return text
    if name == "camera_pose":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or len(
                value) != 7:
            raise ConfigurationError(f"camera_pose must be 7 numbers [x, y, z, qx, qy, qz, qw], "
                                     f"got {value!r}")
        vals = tuple(finite_float(v, "camera_pose entry") for v in value)
        if abs(math.sqrt(sum(v * v for v in vals[3:])) - 1.0) > 1e-3:
            raise ConfigurationError("camera_pose quaternion must have unit length")
        return vals
    if name in ("width", "height", "seed"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigurationError(f"{name} must be an integer, got {value!r}")
        if name != "seed" and not 1 <= value <= 4096:
            raise ConfigurationError(f"{name} must be 1..4096 pixels, got {value!r}")
        return int(value)
    if name in ("rate", "hfov", "min_range", "max_range", "noise_stddev"):
        v = finite_float(value, name)
        if v < 0 or (name in ("rate", "hfov", "max_range") and v == 0):
            raise ConfigurationError(f"{name} must be {'> 0' if name != 'min_range' else '>= 0'},"
                                     f" got {value!r}")
        return v
    raise ConfigurationError(f"unknown parameter {name!r}")


def settings_from_values(
    values: dict[str, Any], base: Optional[MockCameraSettings] = None, strict: bool = True
) -> tuple[MockCameraSettings, list[str]]:
    """Settings from parameter values (see ``wiring.apply_parameter_values``); the camera
    model is checked as a whole (ranges, field of view)."""
    settings, errors = apply_parameter_values(
        base or MockCameraSettings(), values, PARAMETERS, _validate_one, strict)
    try:
        settings.camera()
    except ConfigurationError as exc:
        if strict:
            raise
        errors.append(f"{exc}; using the default camera")
        d = MockCameraSettings()
        from dataclasses import replace

        settings = replace(settings, width=d.width, height=d.height, hfov=d.hfov,
                           min_range=d.min_range, max_range=d.max_range,
                           noise_stddev=d.noise_stddev)
    return settings, errors


class MockCameraNode(Node):
    """Simulated depth camera (see the module docstring). ``kwargs`` go to
    ``rclpy.node.Node``."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.Lock()
        self.world = WorldModel()
        self._settings = start_up_settings(
            self, PARAMETERS, settings_from_values, self.world, _READ_ONLY)
        self.world.set_frame_ids({"", "base_link", "world"})
        self._rng = np.random.default_rng(self._settings.seed)
        self.stats = {"published": 0, "points": 0, "errors": 0}
        group = MutuallyExclusiveCallbackGroup()
        self._pub = self.create_publisher(
            PointCloud2, self._settings.topic,
            QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE))
        self._world_sub = self.create_subscription(
            WorldObjectMsg, "~/world_objects", self._on_world_object,
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE), callback_group=group)
        self._timer: Any = None
        self._make_timer()
        self.add_on_set_parameters_callback(self._on_set_parameters)

    @property
    def settings(self) -> MockCameraSettings:
        return self._settings

    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        self._timer = self.create_timer(1.0 / self._settings.rate, self._on_timer)

    def _on_timer(self) -> None:
        try:
            s = self._settings
            pose = pose_from_position_quat(s.camera_pose[:3], s.camera_pose[3:])
            with self._lock:
                G = render_grid(s.camera(), pose, self.world.objects(), self._rng)
            self._pub.publish(
                points_to_pointcloud2(G, s.frame_id, self.get_clock().now().to_msg()))
            self.stats["published"] += 1
            self.stats["points"] = int(np.isfinite(G).all(axis=-1).sum())
        except Exception as exc:
            self.stats["errors"] += 1
            self.get_logger().error(f"rendering failed: {type(exc).__name__}: {exc}",
                                    throttle_duration_sec=5.0)

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        changed = {p.name: p.value for p in params if p.name in PARAMETERS}
        if not changed:
            return SetParametersResult(successful=True)
        try:
            new, _ = settings_from_values(changed, base=self._settings, strict=True)
            if new.world_file != self._settings.world_file:
                self.world.use_file(new.world_file)
        except RobotCollisionError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        rate_changed = new.rate != self._settings.rate
        with self._lock:
            if new.seed != self._settings.seed:
                self._rng = np.random.default_rng(new.seed)
            self._settings = new
        if rate_changed:
            self._make_timer()
        return SetParametersResult(successful=True)

    def _on_world_object(self, msg: WorldObjectMsg) -> None:
        try:
            with self._lock:
                what = self.world.apply_msg(msg)
            self.get_logger().info(f"world: {what}")
        except Exception as exc:
            self.get_logger().error(f"world object rejected: {exc}", throttle_duration_sec=1.0)


def main(args: Optional[list[str]] = None) -> int:
    """``mock_camera`` console script: run the node until Ctrl-C / SIGTERM."""
    from .bringup import run_nodes

    return run_nodes(lambda: [MockCameraNode()], args=args, executor_type="single")


if __name__ == "__main__":
    raise SystemExit(main())
