"""The ``mock_arm`` node: a simulated arm behind a joint-velocity command interface.

It stands in for ros2_control's mock hardware + ``forward_command_controller`` +
``joint_state_broadcaster`` in the demo and the ROS tests: it integrates the newest velocity
command and publishes the joint states at a fixed rate.

Interface (names relative to the node; ``~`` = the node's private namespace):

- subscribes ``command_topic`` (default ``forward_velocity_controller/commands``, i.e.
  ``/forward_velocity_controller/commands`` in the root namespace; ``std_msgs/Float64MultiArray``,
  reliable, as the controller subscribes): joint velocities (rad/s or m/s) in the order of
  ``joints``. A command of the wrong length or with NaN/inf is rejected with a throttled
  warning and the arm holds still until a valid command arrives. A command older than
  ``command_timeout`` is dropped (the arm stops; see "Command watchdog").
- publishes ``joint_states_topic`` (default ``joint_states``, ``sensor_msgs/JointState``,
  reliable) at ``rate`` Hz: every joint of the robot model in model order, with position and
  velocity (the velocity actually applied in the last step), stamped with the node clock.
- serves ``~/set_publishing`` (``std_srvs/SetBool``): false stops publishing joint states (the
  arm keeps integrating), true resumes; for tests that cut the joint-state source.
- the robot comes from ``robot_description`` / ``urdf_path`` / the ``robot_description`` topic
  (:mod:`robot_collision.ros.robot_loader`).

Each step integrates ``q ← clamp(q + v dt, lower, upper)`` with ``v`` the newest command clamped
to the URDF velocity limits and a fixed ``dt = 1 / rate``, like a simulator stepping at a fixed
rate: when the process is starved of CPU the arm runs slower than real time instead of jumping
with the old command (which would break the timing any velocity filter in the loop relies on).
Command watchdog. Like the drivers of real arms (and unlike ros2_control's
``forward_command_controller``, which holds its last command forever), the mock arm stops when
no command arrived for ``command_timeout`` s (default 0.1 s, a few ticks of the velocity
filter; 0 = hold the last command forever): every step checks the age of the newest command
and integrates zero velocity once it is older, logging it (throttled) and counting it in
``stats["timeouts"]``. The age counts from the command's arrival (its DDS receive stamp: a
command whose callback a busy executor runs late is not younger for it), and the check sits in
the step itself, so nothing can move the arm on an expired command: a starved process steps
less often (the arm runs slower than real time), it never steps on without the check. The
velocity filter's own watchdog (zeros when its inputs expire) is the first line; this is the
second, the one a real robot must have (``docs/hardware_setup.md``).

Parameters are in :data:`PARAMETERS`; ``rate``, ``command_timeout`` and ``publish`` may be
changed at run time.
"""

from __future__ import annotations

import array
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool

from ..model.robot_model import RobotModel
from .intake import (
    LIMIT_PARAMETERS,
    CheckedSubscription,
    MessageLimits,
    MessageRejectedError,
)
from .log_throttle import LogThrottle
from .message_timing import arrival_time
from .robot_loader import RobotLoader

__all__ = ["MockArmNode", "PARAMETERS", "main"]

NODE_NAME = "mock_arm"

# name: (default, description, read at start-up only)
PARAMETERS: dict[str, tuple[Any, str, bool]] = {
    "joints": (
        [],
        "Joint names in the order of the command array; empty = every model joint in model "
        "order. Model joints not listed stay where they are.",
        True,
    ),
    "initial_positions": (
        [],
        "Start positions (rad or m) in the order of 'joints'; empty = home (zeros clipped into "
        "the limits). Values outside the limits are clamped.",
        True,
    ),
    "rate": (250.0, "Integration and joint-state publishing rate in Hz (> 0).", False),
    "command_topic": ("forward_velocity_controller/commands", "Velocity command topic.", True),
    "joint_states_topic": ("joint_states", "Joint state topic.", True),
    "command_timeout": (
        0.1,
        "Command watchdog: when the newest command is older than this (s, from its arrival), "
        "the arm stops until the next one; 0 = hold the last command forever (as the real "
        "forward_command_controller does).",
        False,
    ),
    "publish": (True, "Publish joint states (also switched by ~/set_publishing).", False),
    "max_message_bytes": (LIMIT_PARAMETERS["max_message_bytes"][0],
                          LIMIT_PARAMETERS["max_message_bytes"][1], False),
    "max_message_entries": (LIMIT_PARAMETERS["max_message_entries"][0],
                            LIMIT_PARAMETERS["max_message_entries"][1], False),
}


def _positive_int(v: float) -> bool:
    return v >= 1 and float(v).is_integer()


def _f64(values: NDArray[np.float64]) -> array.array:
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


class MockArmNode(Node):
    """Simulated arm (see the module docstring). ``kwargs`` go to ``rclpy.node.Node``."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._robot: Optional[RobotModel] = None
        self._cmd_idx = np.zeros(0, dtype=np.int64)
        self._q = np.zeros(0)
        self._qd = np.zeros(0)
        self._vmax = np.zeros(0)
        self._cmd: Optional[NDArray[np.float64]] = None
        self._cmd_time = -math.inf
        self._throttled = LogThrottle(self.context)  # (key, period=2.0 s) -> log now?
        self._timer: Any = None
        self.stats = {"commands": 0, "rejected_commands": 0, "published": 0, "timeouts": 0}

        self._group = MutuallyExclusiveCallbackGroup()
        self._service_group = MutuallyExclusiveCallbackGroup()
        self._message_limits = MessageLimits()
        self._loader = RobotLoader(self, self._on_robot, callback_group=self._service_group,
                                   message_limits=lambda: self._message_limits)
        for name, (default, text, read_only) in PARAMETERS.items():
            self.declare_parameter(
                name, default,
                ParameterDescriptor(description=text, dynamic_typing=True, read_only=read_only))
        self._rate = self._number("rate", 250.0, lambda v: v > 0, "> 0 Hz")
        self._command_timeout = self._number(
            "command_timeout", 0.1, lambda v: v >= 0, ">= 0 s")
        self._publishing = bool(self._value("publish", True))
        self._message_limits = MessageLimits(**{
            name: int(self._number(name, getattr(MessageLimits, name), _positive_int,
                                   "an integer >= 1"))
            for name in ("max_message_bytes", "max_message_entries")})
        self._joint_param = [str(j) for j in (self._value("joints", []) or [])]
        self._initial_param = list(self._value("initial_positions", []) or [])

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._state_pub = self.create_publisher(
            JointState, str(self._value("joint_states_topic", "joint_states")), qos)
        # commands arrive serialized and are size-checked before they are deserialized
        self._command_sub = CheckedSubscription(
            self, Float64MultiArray,
            str(self._value("command_topic", "forward_velocity_controller/commands")),
            self._on_command, qos, lambda: self._message_limits, self._on_rejected_command,
            "command", with_info=hasattr(Subscription, "CallbackType"),
            callback_group=self._group)
        self._service = self.create_service(
            SetBool, "~/set_publishing", self._on_set_publishing,
            callback_group=self._service_group)
        self._make_timer()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._loader.start()

    # ------------------------------------------------------------------ accessors
    @property
    def robot(self) -> Optional[RobotModel]:
        """The robot model in use (None until one loads)."""
        return self._robot

    @property
    def positions(self) -> NDArray[np.float64]:
        """Current joint positions (model order; empty until a robot loads)."""
        with self._lock:
            return self._q.copy()

    @property
    def publishing(self) -> bool:
        """Whether joint states are being published."""
        return self._publishing

    # ------------------------------------------------------------------ helpers
    def _value(self, name: str, default: Any) -> Any:
        try:
            value = self.get_parameter(name).value
        except Exception:
            value = None
        return default if value is None else value

    def _number(self, name: str, default: float, ok: Any, what: str) -> float:
        value = self._value(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(float(value)) or not ok(float(value)):
            self.get_logger().error(f"invalid parameter {name} = {value!r} (must be {what}); "
                                    f"using {default}")
            return default
        return float(value)

    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        self._timer = self.create_timer(1.0 / self._rate, self._on_tick, callback_group=self._group)

    # ------------------------------------------------------------------ robot
    def _on_robot(self, robot: RobotModel, source: str) -> None:
        log = self.get_logger()
        joints = self._joint_param or list(robot.joint_names)
        unknown = [j for j in joints if j not in robot.joint_names]
        if unknown or len(set(joints)) != len(joints):
            log.error(f"joints {joints} must be distinct joints of robot {robot.name!r} "
                      f"({', '.join(robot.joint_names)}); commanding every model joint instead")
            joints = list(robot.joint_names)
        cmd_idx = np.array([robot.joint_index(j) for j in joints], dtype=np.int64)
        lower = np.asarray(robot.lower, dtype=float)
        upper = np.asarray(robot.upper, dtype=float)
        q = robot.home_configuration().astype(float)
        init = self._initial_param
        if init:
            try:
                values = np.array([float(v) for v in init], dtype=float)
                if values.shape != (len(joints),) or not np.isfinite(values).all():
                    raise ValueError(f"needs {len(joints)} finite numbers (joints {joints})")
                clipped = np.clip(values, lower[cmd_idx], upper[cmd_idx])
                if not np.array_equal(clipped, values):
                    log.warning("initial_positions outside the joint limits were clamped")
                q[cmd_idx] = clipped
            except (TypeError, ValueError) as exc:
                log.error(f"invalid initial_positions {init!r}: {exc}; starting from home")
        vel = np.asarray(robot.velocity_limits, dtype=float)
        with self._lock:
            self._robot = robot
            self._cmd_idx = cmd_idx
            self._q = q
            self._qd = np.zeros_like(q)
            self._vmax = np.where(np.isfinite(vel) & (vel > 0), vel, np.inf)
            self._cmd = None
            log.info(f"mock arm {robot.name!r}: {len(joints)} commanded joints, start "
                 f"{np.round(q, 4).tolist()}, {self._rate:g} Hz")

    # ------------------------------------------------------------------ parameters
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        updates: dict[str, Any] = {}
        for p in params:
            if p.name not in ("rate", "command_timeout", "publish", "max_message_bytes",
                              "max_message_entries"):
                continue
            v = p.value
            if p.name.startswith("max_message_"):
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    return SetParametersResult(
                        successful=False, reason=f"{p.name} must be an integer >= 1, got {v!r}")
            elif p.name == "publish":
                if not isinstance(v, bool):
                    return SetParametersResult(successful=False, reason="publish must be a bool")
            elif isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(float(v)) or float(v) < 0 \
                    or (p.name == "rate" and float(v) == 0):
                return SetParametersResult(
                    successful=False, reason=f"{p.name} must be a finite number "
                    f"{'> 0' if p.name == 'rate' else '>= 0'}, got {v!r}")
            updates[p.name] = v
        if "command_timeout" in updates:
            self._command_timeout = float(updates["command_timeout"])
        if "publish" in updates:
            self._publishing = bool(updates["publish"])
        limits = {k: int(v) for k, v in updates.items() if k.startswith("max_message_")}
        if limits:
            self._message_limits = replace(self._message_limits, **limits)
        if "rate" in updates and float(updates["rate"]) != self._rate:
            self._rate = float(updates["rate"])
            self._make_timer()
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ callbacks
    def _on_rejected_command(self, exc: MessageRejectedError) -> None:
        """An oversized or malformed command: hold still until a valid command arrives."""
        with self._lock:
            self._cmd = None
            self.stats["commands"] += 1
            self.stats["rejected_commands"] += 1
        if self._throttled("refused"):
            self.get_logger().warning(f"command rejected ({exc}); holding still")

    def _on_command(self, msg: Float64MultiArray, info: Optional[dict[str, Any]] = None) -> None:
        arrived = arrival_time(info)
        try:
            self.stats["commands"] += 1
            with self._lock:
                n = self._cmd_idx.shape[0]
                if self._robot is None:
                    return
                cmd = np.array(msg.data, dtype=np.float64)
                reason = ""
                if cmd.shape != (n,):
                    reason = f"wrong length: {cmd.shape[0]} values, expected {n}"
                elif not np.isfinite(cmd).all():
                    reason = "NaN or inf values"
                if reason:
                    self._cmd = None  # hold still until a valid command arrives
                    self.stats["rejected_commands"] += 1
                else:
                    self._cmd = cmd
                    self._cmd_time = arrived
            if reason and self._throttled(reason.split(":")[0]):
                self.get_logger().warning(f"command rejected ({reason}); holding still")
        except Exception as exc:
            if self._throttled("error"):
                self.get_logger().error(f"command processing failed: {type(exc).__name__}: {exc}")

    def _on_tick(self) -> None:
        try:
            now = time.monotonic()
            with self._lock:
                robot = self._robot
                if robot is None:
                    return
                dt = 1.0 / self._rate
                v = np.zeros_like(self._q)
                cmd = self._cmd
                timed_out = 0.0
                if cmd is not None and self._command_timeout > 0 and \
                        now - self._cmd_time > self._command_timeout:
                    timed_out = now - self._cmd_time
                    cmd = self._cmd = None
                    self.stats["timeouts"] += 1
                if cmd is not None and dt > 0:
                    idx = self._cmd_idx
                    v[idx] = np.clip(cmd, -self._vmax[idx], self._vmax[idx])
                    free = self._q + v * dt
                    q_new = np.clip(free, robot.lower, robot.upper)
                    at_limit = q_new != free  # report what was applied: slower at a limit
                    v[at_limit] = (q_new[at_limit] - self._q[at_limit]) / dt
                    self._qd = v
                    self._q = q_new
                else:
                    self._qd = v
                q, qd = self._q.copy(), self._qd.copy()
            if timed_out and self._throttled("timeout"):
                self.get_logger().warning(
                    f"command timeout: newest command is {timed_out:.3f} s old "
                    f"(command_timeout {self._command_timeout:g} s); stopping")
            if not self._publishing:
                return
            msg = JointState()
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.name = list(robot.joint_names)
            msg.position = _f64(q)
            msg.velocity = _f64(qd)
            self._state_pub.publish(msg)
            self.stats["published"] += 1
        except Exception as exc:
            if self._throttled("tick"):
                self.get_logger().error(f"mock arm step failed: {type(exc).__name__}: {exc}")

    def _on_set_publishing(
        self, request: SetBool.Request, response: SetBool.Response
    ) -> SetBool.Response:
        self._publishing = bool(request.data)
        response.success = True
        response.message = f"joint states {'published' if self._publishing else 'stopped'}"
        self.get_logger().info(response.message)
        return response


def main(args: Optional[Sequence[str]] = None) -> int:
    """``mock_arm`` console script: run the node until Ctrl-C / SIGTERM (single-threaded)."""
    from .bringup import run_nodes

    return run_nodes(lambda: [MockArmNode()], args=list(args) if args else None,
                     executor_type="single")


if __name__ == "__main__":
    raise SystemExit(main())
