"""The ``collision_checker`` node: clearance tables, RViz markers and a collision-check service.

Interface (names relative to the node; ``~`` = the node's private namespace):

- subscribes ``joint_states`` (``sensor_msgs/JointState``, best effort: any publisher's
  reliability; joints mapped by name, extra joints
  ignored; a sample with missing or non-finite model joints, mismatched lengths or no names is
  rejected with a throttled error and produces nothing);
- publishes ``~/clearance`` (``robot_collision_interfaces/ClearanceTable``): one table per
  accepted joint state (at most ``publish_rate`` per second when that is > 0), stamped with the
  joint state's stamp, rows = pairs closer than ``influence_distance``;
- publishes ``~/markers`` (``visualization_msgs/MarkerArray``) at ``marker_rate`` while anyone
  subscribes (see :mod:`robot_collision.ros.markers`);
- serves ``~/check_collision`` (``robot_collision_interfaces/CheckCollision``);
- subscribes ``~/world_objects`` and every topic of ``world_topics`` (by default every node's
  ``~/world_objects``; ``robot_collision_interfaces/WorldObject``: ADD/REMOVE/MOVE), publishes
  ``~/world_version`` (:class:`.world.WorldTopics`) and, when ``moveit_msgs`` is importable,
  ``collision_object`` (``moveit_msgs/CollisionObject``)
  and ``planning_scene`` (``moveit_msgs/PlanningScene``, world objects; see :mod:`.moveit`);
- the robot comes from ``robot_description`` / ``urdf_path`` / the ``robot_description`` topic
  (:mod:`robot_collision.ros.robot_loader`); world objects from ``world_file`` and the topics.

Parameters are listed in :data:`PARAMETERS` (also in ``config/robot_collision.yaml``). An invalid
value given at start-up is logged and replaced by its default; an invalid change at run time is
rejected with the reason and the previous value stays in force. No callback lets an exception
escape: bad input is logged (throttled) and the node keeps running.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray
from rcl_interfaces.msg import (  # type: ignore[import-untyped,unused-ignore]
    SetParametersResult,
)
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from robot_collision_interfaces.msg import ClearanceTable as ClearanceTableMsg
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg
from robot_collision_interfaces.srv import CheckCollision

from ..collision.checker import CollisionChecker
from ..collision.clearance import ClearanceTable
from ..errors import ConfigurationError, RobotCollisionError
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from . import moveit
from .cdr import WIRE_FORMAT_SUPPORTED, ClearanceTableWriter
from .conversions import (
    ConversionError,
    JointStateMapper,
    check_result_to_response,
    clearance_table_to_msg,
)
from .intake import (
    LIMIT_PARAMETERS,
    CheckedSubscription,
    MessageLimits,
    MessageRejectedError,
    message_limits_from_values,
    validate_limit_parameter,
)
from .joint_states import JointStateCache, stamp_age, stamp_ns
from .markers import ClearanceMarkers
from .point_clouds import (
    CLOUD_PARAMETERS,
    CloudSettings,
    CloudSubscriptions,
    SensedClouds,
    cloud_settings,
    node_now,
    stamp_seconds,
    tf2_lookup,
    validate_cloud_parameter,
)
from .robot_loader import RobotLoader
from .startup import KernelWarmUp
from .wiring import (
    COLLISION_KEYS,
    apply_parameter_values,
    finite_float,
    make_checker,
    start_up_settings,
    validate_collision_parameter,
)
from .world import (
    WORLD_PARAMETERS,
    WORLD_TOPICS,
    WorldModel,
    WorldTopics,
    validate_world_parameter,
    world_qos,
)

__all__ = [
    "CollisionCheckerNode",
    "CheckerSettings",
    "PARAMETERS",
    "settings_from_values",
    "main",
]

NODE_NAME = "collision_checker"

# name: (default, description, constraints)
PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "skip_rule": (
        "parent",
        "Self pairs never checked: 'parent' (each link with its parent), 'adjacent' (consecutive "
        "links in tree order) or 'none'; the SRDF's disabled pairs and skip_pairs are added.",
        "parent | adjacent | none",
    ),
    "skip_pairs": (
        [],
        "Extra self pairs never checked, each 'linkA=linkB'.",
        "each 'linkA=linkB' with link names of the robot",
    ),
    "use_srdf": (True, "Skip the SRDF's disable_collisions pairs.", ""),
    "padding": (
        0.0,
        "Safety margin subtracted from every pair's distance, in metres.",
        "finite",
    ),
    "pair_padding": (
        [],
        "Per-pair padding overriding 'padding', each 'bodyA=bodyB:metres' (bodies are robot "
        "links or world object ids).",
        "each 'a=b:value' with a finite value",
    ),
    "influence_distance": (
        0.3,
        "Pairs closer than this (m, padding applied) get a row in ~/clearance and witness "
        "markers; shapes are coloured from green (at it) to red (touching).",
        "> 0",
    ),
    "exhaustive": (
        False,
        "CheckCollision evaluates every pair (full matrices) even when the request's exhaustive "
        "flag is false.",
        "",
    ),
    "ignore_self": (False, "Leave robot-robot pairs out of ~/clearance.", ""),
    "publish_rate": (
        0.0,
        "Maximum rate of ~/clearance in Hz; 0 = one table for every joint state. Joint states "
        "arriving faster are coalesced (the newest is used).",
        ">= 0",
    ),
    "marker_rate": (
        10.0,
        "Rate of ~/markers in Hz while someone subscribes; 0 = no markers.",
        ">= 0",
    ),
    "frame_id": (
        "",
        "Frame of ~/clearance and ~/markers (empty = the robot base link). World objects in "
        "messages may use this frame, the base link or an empty frame_id.",
        "",
    ),
    "world_file": (
        "",
        "World objects YAML (path or package://pkg/path; empty = none); see "
        "robot_collision.ros.world.",
        "",
    ),
    **WORLD_PARAMETERS,
    **CLOUD_PARAMETERS,
    **LIMIT_PARAMETERS,
}


# --------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class CheckerSettings(CloudSettings):
    """Validated parameter values of the node."""

    skip_rule: str = "parent"
    skip_pairs: tuple[tuple[str, str], ...] = ()
    use_srdf: bool = True
    padding: float = 0.0
    pair_padding: tuple[tuple[str, str, float], ...] = ()
    influence_distance: float = 0.3
    exhaustive: bool = False
    ignore_self: bool = False
    publish_rate: float = 0.0
    marker_rate: float = 10.0
    frame_id: str = ""
    world_file: str = ""
    world_topics: tuple[str, ...] = WORLD_TOPICS
    max_object_extent: float = 100.0
    max_message_bytes: int = LIMIT_PARAMETERS["max_message_bytes"][0]
    max_message_entries: int = LIMIT_PARAMETERS["max_message_entries"][0]
    max_mesh_vertices: int = LIMIT_PARAMETERS["max_mesh_vertices"][0]


def _validate_one(name: str, value: Any) -> Any:
    """Validated value of one parameter (raises ConfigurationError with the reason)."""
    if name in COLLISION_KEYS:
        return validate_collision_parameter(name, value)
    if name in WORLD_PARAMETERS:
        return validate_world_parameter(name, value)
    if name in CLOUD_PARAMETERS:
        return validate_cloud_parameter(name, value)
    if name == "influence_distance":
        v = finite_float(value, name)
        if v <= 0:
            raise ConfigurationError(f"influence_distance must be > 0 m, got {value!r}")
        return v
    if name in ("publish_rate", "marker_rate"):
        v = finite_float(value, name)
        if v < 0:
            raise ConfigurationError(f"{name} must be >= 0 Hz (0 = off/unlimited), got {value!r}")
        return v
    if name in ("exhaustive", "ignore_self"):
        if not isinstance(value, bool):
            raise ConfigurationError(f"{name} must be true or false, got {value!r}")
        return value
    if name in ("frame_id", "world_file"):
        return str(value).strip()
    if name in LIMIT_PARAMETERS:
        return validate_limit_parameter(name, value)
    raise ConfigurationError(f"unknown parameter {name!r}")


def settings_from_values(
    values: dict[str, Any], base: Optional[CheckerSettings] = None, strict: bool = True
) -> tuple[CheckerSettings, list[str]]:
    """Settings from parameter values (missing names keep ``base``'s, default: defaults).

    ``strict``: raise :class:`ConfigurationError` on the first invalid value; otherwise keep the
    base value for it and return the error texts as the second element.
    """
    settings = base or CheckerSettings()
    return apply_parameter_values(settings, values, PARAMETERS, _validate_one, strict)


@dataclass
class _Pipeline:
    """Everything derived from one robot model + settings (swapped atomically)."""

    robot: RobotModel
    settings: CheckerSettings
    stream: CollisionChecker  # used only by the joint-state callback group
    service: CollisionChecker  # used only by the service callback group
    mapper: JointStateMapper
    markers: ClearanceMarkers
    frame_id: str


@dataclass
class _Latest:
    """The last computed table (for markers)."""

    serial: int
    q: NDArray[np.float64]
    table: ClearanceTable
    world: Sequence[WorldObject]
    stamp: Any


# --------------------------------------------------------------------------- node
class CollisionCheckerNode(Node):
    """Collision checker node (see the module docstring). ``kwargs`` go to ``rclpy.node.Node``
    (``context``, ``namespace``, ``parameter_overrides``, ``cli_args``, ...)."""

    MOVEIT_INTERFACES = moveit.WORLD_INTERFACES
    """Interfaces added when moveit_msgs is importable (for the node reference)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._pipeline: Optional[_Pipeline] = None
        self._latest: Optional[_Latest] = None
        self._q: Optional[NDArray[np.float64]] = None  # newest merged state, all joints
        self._states: Optional[JointStateCache] = None  # per joint, from every publisher
        self._serial = 0
        self._pending: Optional[tuple[_Pipeline, NDArray[np.float64], Any]] = None
        self._last_publish = -math.inf
        self._marker_key: Any = None
        # ~/clearance goes out as serialized bytes (5x cheaper than message objects, see
        # robot_collision.ros.cdr); used by the joint-state group only
        self._writer = ClearanceTableWriter() if WIRE_FORMAT_SUPPORTED else None
        self._rate_timer: Any = None
        self._marker_timer: Any = None
        self.stats = {"received": 0, "published": 0, "rejected": 0, "coalesced": 0, "errors": 0,
                      "skipped_unheard": 0}

        self._state_group = MutuallyExclusiveCallbackGroup()
        self._service_group = MutuallyExclusiveCallbackGroup()
        self._world_group = MutuallyExclusiveCallbackGroup()
        self._marker_group = MutuallyExclusiveCallbackGroup()
        self._cloud_group = MutuallyExclusiveCallbackGroup()

        self.world = WorldModel()
        self._message_limits = MessageLimits()
        self._loader = RobotLoader(self, self._on_robot, callback_group=self._world_group,
                                   message_limits=self._limits)
        if self._loader.limits is not None:  # the load_limits parameter caps world files too
            self.world.limits = self._loader.limits

        # ---- parameters: declared with dynamic typing (a mistyped value in a parameter file must
        # not abort the node), then validated here (invalid start-up values → defaults)
        self._settings = start_up_settings(
            self, PARAMETERS, settings_from_values, self.world)
        self._message_limits = message_limits_from_values(self._settings)

        # ---- interfaces
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        overrides = QoSOverridingOptions.with_default_policies()
        self._clearance_pub = self.create_publisher(
            ClearanceTableMsg, "~/clearance", qos, qos_overriding_options=overrides)
        self._marker_pub = self.create_publisher(MarkerArray, "~/markers", qos)
        # inputs arrive serialized and are size-checked before they are deserialized
        # (robot_collision.ros.intake)
        # joint states best effort (as the filter and the planner): a best-effort subscription
        # hears reliable and best-effort publishers alike (drivers that publish joint states
        # with the sensor-data profile never reached a reliable one); depth 20 for several
        # publishers publishing at the same moments
        states_qos = QoSProfile(depth=20, reliability=ReliabilityPolicy.BEST_EFFORT)
        self._joint_sub = CheckedSubscription(
            self, JointState, "joint_states", self._on_joint_state, states_qos, self._limits,
            self._on_rejected_joint_state, "JointState", callback_group=self._state_group,
            qos_overriding_options=overrides)
        # ~/world_objects and the shared world_topics (every node's), reliable, deep enough
        # for bursts; ~/world_version reports the world's digest after each change
        self.world.max_extent = self._settings.max_object_extent
        self._world_topics = WorldTopics(
            self, self.world, self._settings.world_topics, self._on_world_object, self._limits,
            self._on_rejected_world, callback_group=self._world_group)
        self._moveit_subs = moveit.subscribe_world(
            self, self.world, world_qos(), self._limits, callback_group=self._world_group)
        self._service = self.create_service(
            CheckCollision, "~/check_collision", self._on_check_collision,
            callback_group=self._service_group)
        self.clouds = SensedClouds(
            cloud_settings(self._settings), tf2_lookup(self, self._base_frame))
        self._cloud_subs = CloudSubscriptions(self, self.clouds, self._limits, self._cloud_group,
                                              start_paused=True)
        self._cloud_subs.sync()
        self._world_cache: tuple[Any, tuple[WorldObject, ...]] = (None, ())
        self._make_timers()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._loader.start()

    # ------------------------------------------------------------------ helpers
    def _limits(self) -> MessageLimits:
        """Caps on incoming messages (parameters max_message_*), read per message."""
        return self._message_limits

    @property
    def settings(self) -> CheckerSettings:
        """The parameter values in force."""
        return self._settings

    @property
    def robot(self) -> Optional[RobotModel]:
        """The robot model in use (None until one loads)."""
        pipe = self._pipeline
        return pipe.robot if pipe is not None else None

    @property
    def checker(self) -> Optional[CollisionChecker]:
        """A checker configured like the node's (the service's; do not use concurrently)."""
        pipe = self._pipeline
        return pipe.service if pipe is not None else None

    def _base_frame(self) -> str:
        pipe = self._pipeline
        return pipe.frame_id if pipe is not None else ""

    def world_objects(self) -> tuple[WorldObject, ...]:
        """The world in force: the world model's objects and the current sensed clouds (the
        same tuple while neither changes, so that the checkers' compiled scenes stay cached)."""
        version, objects = self.world.snapshot()
        clouds = self.clouds.objects(node_now(self)) if self._settings.point_cloud_topics else []
        key = (version, tuple(id(c) for c in clouds))
        cached = self._world_cache
        if cached[0] != key:
            cached = (key, tuple(objects) + tuple(clouds))
            self._world_cache = cached
        return cached[1]

    def _make_timers(self) -> None:
        if self._rate_timer is not None:
            self.destroy_timer(self._rate_timer)
            self._rate_timer = None
        if self._marker_timer is not None:
            self.destroy_timer(self._marker_timer)
            self._marker_timer = None
        if self._settings.publish_rate > 0:
            self._rate_timer = self.create_timer(
                1.0 / self._settings.publish_rate, self._on_rate_timer,
                callback_group=self._state_group)
        if self._settings.marker_rate > 0:
            self._marker_timer = self.create_timer(
                1.0 / self._settings.marker_rate, self._on_marker_timer,
                callback_group=self._marker_group)

    def _build_pipeline(self, robot: RobotModel, settings: CheckerSettings) -> _Pipeline:
        frame = settings.frame_id or robot.base_name
        old = self._pipeline
        markers = ClearanceMarkers(robot, frame)
        if old is not None:
            markers.take_over(old.markers)  # so that the old robot's markers get deleted
        return _Pipeline(
            robot=robot,
            settings=settings,
            stream=make_checker(robot, settings),
            service=make_checker(robot, settings),
            mapper=JointStateMapper(robot.joint_names),
            markers=markers,
            frame_id=frame,
        )

    def _install(self, pipe: _Pipeline) -> None:
        with self._lock:
            if self._pipeline is None or self._pipeline.robot is not pipe.robot:
                self._q = None
                self._states = JointStateCache(pipe.robot.joint_names)
                self._latest = None
                self._pending = None
            self._pipeline = pipe
            self._marker_key = None
        self.world.set_frame_ids({pipe.robot.base_name, pipe.frame_id})
        self.clouds.set_robot(pipe.robot, {pipe.robot.base_name, pipe.frame_id})

    # ------------------------------------------------------------------ robot
    def _on_robot(self, robot: RobotModel, source: str) -> None:
        try:
            pipe = self._build_pipeline(robot, self._settings)
        except RobotCollisionError as exc:
            defaults = CheckerSettings()
            keep = replace(
                self._settings, skip_rule=defaults.skip_rule, skip_pairs=(),
                pair_padding=(), use_srdf=defaults.use_srdf,
            )
            self.get_logger().error(
                f"skip/padding parameters do not fit robot {robot.name!r}: {exc}; using "
                f"skip_rule {keep.skip_rule!r} without skip_pairs and pair_padding"
            )
            self._settings = keep
            pipe = self._build_pipeline(robot, keep)
        self._warm_up(pipe)
        self._install(pipe)
        self._cloud_subs.resume()  # kernels loaded: clouds may come

    def _warm_up(self, pipe: _Pipeline) -> None:
        """Run each checker once so that the compiled kernels are loaded (or compiled) now and
        not on the first joint state."""
        try:
            with KernelWarmUp(self.get_logger(), "collision kernels"):
                q = pipe.robot.home_configuration()
                world = self.world_objects()
                pipe.stream.clearance(q, world, pipe.settings.influence_distance)
                pipe.service.check(q, world, exhaustive=True)
                every_pair = pipe.stream.clearance(q, world, math.inf)  # rows to compare
                if self._writer is not None and not ClearanceTableWriter().agrees_with_rmw(
                    every_pair, pipe.frame_id
                ):  # (a writer of its own: writers are per thread)
                    self._writer = None
                    self.get_logger().warning(
                        "this RMW serializes ClearanceTable differently from "
                        "robot_collision.ros.cdr; publishing message objects instead")
        except Exception as exc:
            self.get_logger().warning(f"checker warm-up failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ parameters
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        changed = {p.name: p.value for p in params if p.name in PARAMETERS}
        if not changed:
            return SetParametersResult(successful=True)
        try:
            for name in changed:
                if changed[name] is None:  # PARAMETER_NOT_SET: back to the default
                    changed[name] = PARAMETERS[name][0]
            new, _ = settings_from_values(changed, base=self._settings, strict=True)
            pipe = self._pipeline
            new_pipe = None
            if pipe is not None:
                new_pipe = self._build_pipeline(pipe.robot, new)
            if new.world_file != self._settings.world_file:
                # last: all-or-nothing, raises (changing nothing) if the file cannot be loaded
                self.world.use_file(new.world_file)
        except RobotCollisionError as exc:
            self.get_logger().error(f"parameter change rejected: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        except Exception as exc:
            self.get_logger().error(f"parameter change rejected: {type(exc).__name__}: {exc}")
            return SetParametersResult(successful=False, reason=f"{type(exc).__name__}: {exc}")
        rates_changed = (new.publish_rate, new.marker_rate) != (
            self._settings.publish_rate, self._settings.marker_rate)
        self._settings = new
        self.clouds.configure(cloud_settings(new))
        self._cloud_subs.sync()
        self._message_limits = message_limits_from_values(new)
        if new_pipe is not None:
            self._install(new_pipe)
        if rates_changed:
            self._make_timers()
        self.get_logger().info(f"parameters updated: {sorted(changed)}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ joint states
    def _on_joint_state(self, msg: JointState) -> None:
        try:
            self.stats["received"] += 1
            pipe = self._pipeline
            if pipe is None:
                self.get_logger().warning(
                    "joint states received but no robot model is loaded yet; ignoring them",
                    throttle_duration_sec=5.0,
                )
                return
            states = self._states
            if states is None:
                return
            try:
                age = stamp_age(msg.header.stamp, node_now(self))
                if not states.update(msg.name, msg.position, time.monotonic(), age,
                                     stamp_ns=stamp_ns(msg.header.stamp)):
                    return  # names no joint of the model (or only older measurements)
            except ConversionError as exc:
                self._on_rejected_joint_state(exc)
                return
            snap = states.snapshot()
            if snap.fault:  # waiting for the other publishers' joints (or a refused one)
                self.get_logger().warning(
                    f"no clearance table yet: {snap.fault}", throttle_duration_sec=5.0)
                return
            q = snap.q
            self._q = q
            stamp = msg.header.stamp
            if stamp.sec == 0 and stamp.nanosec == 0:
                stamp = self.get_clock().now().to_msg()
            self.clouds.joints.add(stamp_seconds(stamp, self), q)
            if self._settings.publish_rate > 0:
                now = time.monotonic()
                if now - self._last_publish < 1.0 / self._settings.publish_rate:
                    if self._pending is not None:
                        self.stats["coalesced"] += 1
                    self._pending = (pipe, q, stamp)
                    return
            self._pending = None
            if (self._clearance_pub.get_subscription_count() == 0
                    and self._marker_pub.get_subscription_count() == 0):
                # nobody listens: no table (an idle checker costs the message, not the
                # clearance query; the next joint state after a subscriber appears computes)
                self.stats["skipped_unheard"] += 1
                return
            self._compute_and_publish(pipe, q, stamp)
        except Exception as exc:
            self._callback_failed("joint state processing", exc, 1.0)

    def _on_rejected_joint_state(self, exc: ConversionError) -> None:
        self.stats["rejected"] += 1
        self.get_logger().error(f"rejected joint state: {exc}", throttle_duration_sec=1.0)

    def _on_rate_timer(self) -> None:
        try:
            pending, self._pending = self._pending, None
            if pending is not None:
                self._compute_and_publish(*pending)
        except Exception as exc:
            self._callback_failed("clearance computation", exc, 1.0)

    def _compute_and_publish(self, pipe: _Pipeline, q: NDArray[np.float64], stamp: Any) -> None:
        settings = pipe.settings
        world = self.world_objects()
        table = pipe.stream.clearance(q, world, settings.influence_distance, settings.ignore_self)
        writer = self._writer  # read once: a robot reload may switch it off meanwhile
        if writer is not None:
            self._clearance_pub.publish(
                writer.serialize(table, stamp.sec, stamp.nanosec, pipe.frame_id))
        else:
            self._clearance_pub.publish(clearance_table_to_msg(table, stamp, pipe.frame_id))
        self._last_publish = time.monotonic()
        self.stats["published"] += 1
        self._serial += 1
        self._latest = _Latest(self._serial, q, table, world, stamp)

    # ------------------------------------------------------------------ markers
    def _on_marker_timer(self) -> None:
        try:
            pipe = self._pipeline
            if pipe is None or self._marker_pub.get_subscription_count() == 0:
                return
            latest = self._latest
            world = self.world_objects()
            key = (id(pipe), latest.serial if latest else -1, id(world))
            if key == self._marker_key:
                return
            stamp = self.get_clock().now().to_msg()
            if latest is not None and latest.world is world:
                poses = pipe.robot.link_transforms(latest.q)
                table: Optional[ClearanceTable] = latest.table
            elif latest is not None:
                # world changed since the last table: show the robot, drop stale witnesses
                poses = pipe.robot.link_transforms(latest.q)
                table = None
            else:
                poses, table = {}, None
            arr = pipe.markers.build(
                poses, table, world, pipe.settings.influence_distance, stamp)
            self._marker_pub.publish(arr)
            self._marker_key = key
        except Exception as exc:
            self._callback_failed("marker publishing", exc, 5.0, count=False)

    def _callback_failed(self, what: str, exc: Exception, throttle: float,
                         count: bool = True) -> None:
        """Log (throttled, s) and count a callback's failure, unless the node is shutting down:
        Ctrl-C shuts the context down under a running callback, which then fails on destroyed
        handles (like the filter and the mock arm, through LogThrottle, it logs nothing then)."""
        if not self.context.ok():
            return
        if count:
            self.stats["errors"] += 1
        self.get_logger().error(f"{what} failed: {type(exc).__name__}: {exc}",
                                throttle_duration_sec=throttle)

    # ------------------------------------------------------------------ world
    def _on_rejected_world(self, exc: MessageRejectedError) -> None:
        self.get_logger().error(f"world object rejected: {exc}", throttle_duration_sec=1.0)

    def _on_world_object(self, msg: WorldObjectMsg) -> None:
        try:
            what = self.world.apply_msg(msg)
            self.get_logger().info(f"world: {what}")
        except RobotCollisionError as exc:
            self.get_logger().error(f"world object rejected: {exc}", throttle_duration_sec=1.0)
        except Exception as exc:
            self.get_logger().error(
                f"world object rejected: {type(exc).__name__}: {exc}", throttle_duration_sec=1.0)

    # ------------------------------------------------------------------ service
    def _on_check_collision(
        self, request: CheckCollision.Request, response: CheckCollision.Response
    ) -> CheckCollision.Response:
        response.success = False
        try:
            pipe = self._pipeline
            if pipe is None:
                response.message = "no robot model is loaded yet"
                return response
            current = self._q
            cap = self._message_limits.max_message_entries
            longest = max(len(request.joint_names), len(request.positions))
            if longest > cap:
                response.message = (
                    f"request refused: {longest:,} joint names or positions, above the node's "
                    f"max_message_entries parameter ({cap:,})")
                return response
            names, positions = list(request.joint_names), request.positions
            if not names and len(positions) == 0 and current is None:
                response.message = (
                    "empty request and no joint state received yet: give joint_names and positions"
                )
                return response
            try:
                q = pipe.mapper.positions(
                    names, positions, fallback=current, allow_unknown=False, what="request")
            except ConversionError as exc:
                hint = "" if current is not None else " (no joint state received yet to fill in)"
                response.message = f"{exc}{hint}"
                return response
            exhaustive = bool(request.exhaustive or pipe.settings.exhaustive)
            result = pipe.service.check(
                q, self.world_objects(), exhaustive=exhaustive,
                ignore_self=bool(request.ignore_self))
            check_result_to_response(result, response)
        except RobotCollisionError as exc:
            response.success = False
            response.message = str(exc)
        except Exception as exc:
            response.success = False
            response.message = f"internal error: {type(exc).__name__}: {exc}"
            self.get_logger().error(f"check_collision failed: {response.message}")
        return response


def main(args: Optional[list[str]] = None) -> int:
    """``collision_checker`` console script: run the node until Ctrl-C / SIGTERM.

    Alone in its process, the node spins in a SingleThreadedExecutor: every callback is
    CPU-bound Python, so threads add no parallelism, and rclpy's multi-threaded executor costs
    several times more per message (ros2/rclpy#1452).
    """
    from .bringup import run_nodes

    return run_nodes(lambda: [CollisionCheckerNode()], args=args, executor_type="single")


if __name__ == "__main__":
    raise SystemExit(main())
