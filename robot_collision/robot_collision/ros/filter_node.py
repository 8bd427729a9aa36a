"""The ``velocity_filter`` node: a collision-avoiding filter in front of a velocity controller.

The node sits between whatever produces joint-velocity commands (teleoperation, a servoing or
visual-servo loop, a test script) and a ``forward_command_controller`` of ros2_control
(``velocity_controllers/JointGroupVelocityController``). Every command is run through
:class:`robot_collision.control.velocity_filter.VelocityFilter` against the latest joint state, so
the arm
slows down near obstacles and itself and never gets closer than the safety distances.

Interface (names relative to the node; ``~`` = the node's private namespace; in the root
namespace ``~/command`` is ``/velocity_filter/command``):

- subscribes ``command_topic`` (default ``~/command``, ``std_msgs/Float64MultiArray``): joint
  velocities (rad/s or m/s) in the order of the ``joints`` parameter, exactly what the
  forward_command_controller takes. Best-effort QoS, depth 1 (matches reliable and best-effort
  publishers; only the newest command counts).
- subscribes ``joint_states_topic`` (default ``joint_states``, ``sensor_msgs/JointState``):
  joints merged by name from every publisher (:mod:`.joint_states`: each joint's newest value
  and stamp; joints the model lacks ignored; non-finite positions, mismatched lengths, a name
  twice or a stamp ahead of the clock refuse the message and stop at once). Best-effort QoS
  (matches reliable publishers too), depth 20 (publishers that publish at the same moment).
- publishes ``output_topic`` (default ``forward_velocity_controller/commands``, i.e.
  ``/forward_velocity_controller/commands`` in the root namespace; ``Float64MultiArray``,
  reliable, depth 1): the filtered command in the order of ``joints``. A valid command's
  ``layout`` is copied to its output unchanged (so a sender can tag commands, e.g. with a
  sequence number in a dimension label); outputs that are zeros because of a fault have an
  empty layout.
- publishes ``~/status`` (``robot_collision_interfaces/FilterStatus``) every tick: ``ok``,
  ``fault`` (why the output is zero), ``min_distance``, ``scaling`` (|filtered| / |command|),
  ``active_constraints`` (``"link=object"`` rows, ``"joint:upper|lower|velocity"`` bounds),
  ``disabled_groups`` and ``solve_time``.
- serves ``~/set_protection`` (``robot_collision_interfaces/SetProtection``): switch collision
  protection of a joint group off/on (joint limits always stay on). Groups are the SRDF's groups
  plus the ``protection_groups`` parameter.
- subscribes ``~/world_objects`` and every topic of ``world_topics`` (by default every node's
  ``~/world_objects``; ``robot_collision_interfaces/WorldObject``: ADD/REMOVE/MOVE), publishes
  ``~/world_version`` (:class:`.world.WorldTopics`) and, when ``moveit_msgs`` is importable,
  ``collision_object`` and ``planning_scene`` (MoveIt's
  world topics, :mod:`.moveit`); world objects also come from ``world_file``. The robot comes
  from ``robot_description`` / ``urdf_path`` / the ``robot_description`` topic
  (:mod:`robot_collision.ros.robot_loader`).

Timing. A timer runs at ``rate`` Hz (the control tick, ``dt = 1 / rate`` for the filter's
joint-limit bounds). With ``filter_on_command`` (default) a command is filtered and published
as soon as it arrives (lowest latency: ``benchmarks/bench_filter_ros.py`` measures it), and the
tick re-filters the newest command against the newest joint state only when no output went out
during the last half tick; without it, only the tick publishes. Either way at least one output
goes out every tick, also when there is nothing to forward, so the controller never holds a
stale command. The status goes out every tick.

Joint states (:mod:`.joint_states`) are merged joint by joint from every publisher. A state's
age is its header stamp against the node's clock (``use_sim_time`` too): the filter takes the
arm to be where the outputs sent since that stamp moved it, give or take how much they varied
(``_SentHistory``), and lowers every distance and joint-limit room by that uncertainty
(:class:`VelocityFilter`'s ``motion_bound``, "Late states"): a late state costs speed, never
clearance (``benchmarks/run.py realstate``).

The output layout (joint list and size) is fixed by the first robot model: a later robot
description that lacks one of its joints is refused (zeros of the same size, a
"configuration error" naming it) unless ``allow_layout_change``. More than one publisher on the
command topic is warned about once a second (``single_command_source``: refused). Self pairs
closer than ``safety_distance_self`` in every sampled configuration of the joint ranges are
named at start-up and held where they are (``hold_unreachable_pairs``).

Zero output (never motion) when: no robot model or a configuration error; a model joint without
a state yet, one whose newest state arrived longer than ``state_timeout`` ago or was measured
longer than ``max_state_age`` ago ("stale state", until a fresh one arrives); a joint state
was refused ("rejected joint state": NaN/inf, lengths that differ, a name twice, a stamp more
than ``stamp_tolerance`` ahead: zeros at once, until valid ones arrive; a state farther than
``state_limit_tolerance`` outside the position limits: "state out of limits", next cycle); the
newest command is invalid (wrong length, NaN/inf: zeros until a valid command arrives); no
command yet or the newest is older than ``command_timeout`` (deadman); the filter faults
(see :meth:`VelocityFilter.filter`). Each reason is in the status' ``fault`` and logged,
throttled (idle is not logged). While idle with a fresh state the status still reports
``min_distance`` (the filter runs on a zero command for it). Zeros are sent as zeros, not
filtered: the filter's recovery motion (pushing apart a pair that starts inside the safety
distance) only acts on a live command. Joints of the model that are not in ``joints`` are held
(zero velocity) and taken out of the filter's optimisation.

Fail-safe. Every non-zero output has an expiry: the arrival of the joint state it was computed
from + ``state_timeout``, its stamp + ``max_state_age`` (and its command's arrival +
``command_timeout``), arrival meaning the DDS
receive stamp (a callback that a busy executor runs late does not make an old message look
fresh). A watchdog thread of the node sends zeros at that moment unless a newer output
replaced it, whatever the executor is doing (a tick delayed by other jobs, a robot model or
world file being loaded, a service call); an output computed from a state that expired while
it was computed is sent as zeros instead. ``benchmarks/run.py failsafe`` measures it
(``state_timeout`` 0.1 s, 100 Hz, 2 cores shared with other jobs at load average 6-11): last
joint state → zeros received after a median of 100.2 ms (was 110), p99 100.6-100.7 ms (was
113-115) and, with two busy-loop processes added, 107-125 ms (was 152-155; max 108-181, was
171-260); a NaN joint state → zeros after 0.4-1 ms (was 100: driven on until the timeout).
The watchdog needs the Python interpreter: code that holds the GIL for long (a C extension
that does not release it) delays it too, so the hardware's own command timeout stays the last
line of defence.

Timing assumption: the guarantee (never closer than the safety distances, to 1 mm) holds while
the loop runs at about ``rate``: the controller applies each output for about one tick. A
controller that keeps applying an old output while this node is stalled (a starved process,
the forward_command_controller holds its last command forever) can carry the arm past the
safety distance: inside the influence zone a hold of (d_i − d_s) / gain = 0.18 s (defaults)
is enough, outside it a full-speed command covers the whole zone. Run the node in its own
process and give the controller or hardware a command timeout of a few ticks
(``docs/hardware_setup.md``; ``mock_arm``'s ``command_timeout`` is one). ``realtime_priority``
puts the executor thread (when the node has a ``SingleThreadedExecutor`` of its own) and the
watchdog at ``SCHED_FIFO`` (:mod:`.realtime`; needs the rtprio permission), ahead of the cloud
worker, its process and the rest of the machine.

Acceleration limits (``acceleration_limits``): the filter is told the velocity last sent and
the time since, so the output changes by at most a·min(elapsed, 1/rate) per output also when
commands arrive faster than the tick; a zero output on a fault or deadman is a stop and is
sent at once (the drive brakes as it can).

Parameters are listed in :data:`PARAMETERS` (also in ``config/robot_collision.yaml``). Topic
names and ``joints`` are read at start-up; every other parameter may be changed at run time (an
invalid change is rejected with the reason). An invalid value at start-up is logged and
replaced by its default. ``protection_groups`` entries are strings ``"name: joint_a, joint_b"``
(ROS parameters cannot hold mappings); a name equal to an SRDF group replaces that group.
"""

from __future__ import annotations

import array
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription

try:  # Iron and later
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import (  # type: ignore[no-redef,attr-defined,unused-ignore]
        PublisherEventCallbacks,
        SubscriptionEventCallbacks,
    )
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayLayout

from robot_collision_interfaces.msg import FilterStatus
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg
from robot_collision_interfaces.srv import SetProtection

from ..collision.pair_ranges import unsatisfiable_pairs
from ..control.velocity_filter import VelocityFilter
from ..errors import ConfigurationError, RobotCollisionError
from ..model.robot_model import RobotModel
from . import moveit
from .cloud_process import CloudProcess
from .conversions import (
    ConversionError,
)
from .filter_settings import (
    PARAMETERS,
    FilterNodeSettings,
    parse_protection_group,
    settings_from_values,
)
from .filter_settings import READ_ONLY as _READ_ONLY
from .filter_settings import UNCOMMANDED_GROUP as _UNCOMMANDED
from .intake import (
    CheckedSubscription,
    MessageLimits,
    MessageRejectedError,
    message_limits_from_values,
)
from .joint_states import JointStateCache, stamp_age, stamp_ns
from .log_throttle import LogThrottle
from .message_timing import LatencyRecord, arrival_time
from .point_clouds import (
    CloudSubscriptions,
    SensedClouds,
    cloud_settings,
    node_now,
    stamp_seconds,
    tf2_lookup,
)
from .realtime import ThreadPriority
from .robot_loader import RobotLoader
from .startup import KernelWarmUp
from .wiring import make_checker, start_up_settings
from .world import WorldModel, WorldTopics, world_qos

__all__ = [
    "VelocityFilterNode",
    "FilterNodeSettings",
    "PARAMETERS",
    "parse_protection_group",
    "settings_from_values",
    "main",
]

NODE_NAME = "velocity_filter"


# --------------------------------------------------------------------------- internals
@dataclass
class _Setup:
    """Everything derived from one robot model + settings (swapped atomically)."""

    robot: RobotModel
    filt: VelocityFilter
    cmd_idx: NDArray[np.int64]  # model index of each entry of `joints`
    joints: tuple[str, ...]


@dataclass(frozen=True)
class _SkipSettings:
    """The filter's CollisionSettings for make_checker (the filter has no pair_padding)."""

    skip_pairs: tuple[tuple[str, str], ...]
    padding: float
    skip_rule: str = "parent"
    use_srdf: bool = True
    pair_padding: tuple[tuple[str, str, float], ...] = ()


class _SentHistory:
    """The outputs sent, newest last, in memory allocated once: (monotonic time, model-order
    velocity). Predicts where each joint is since a joint state was measured, and bounds how
    far from that it may be (:meth:`motion_since`, "Late states" in the module docstring)."""

    def __init__(self, n: int, capacity: int = 4096) -> None:
        self._t = np.full(capacity, -np.inf)
        self._v = np.zeros((capacity, n))
        self._count = 0
        self._vmax = np.full(n, np.inf)  # speed assumed before the oldest entry kept

    def set_limits(self, vmax: NDArray[np.float64]) -> None:
        self._vmax = np.where(np.isfinite(vmax), vmax, 1e3)

    def append(self, t: float, v: NDArray[np.float64]) -> None:
        k = self._count % self._t.shape[0]
        self._t[k] = t
        self._v[k] = v
        self._count += 1

    def motion_since(self, t0: float, now: float, lag: float,
                     measured: Optional[NDArray[np.float64]] = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(predicted, bound) (n,) each: where each joint most likely is relative to where it
        was measured at ``t0`` (rad, m), and how far from that it may be. The joints' speeds
        over [t0, now] are taken to stay within the range of the outputs in force from
        ``t0 - lag`` on (the one in force then included: ``lag`` allows for a controller
        tracking behind; a velocity controller that does not overshoot): joint i moved by
        (now − t0)·[min_i, max_i], the middle is the prediction, half the width the bound.
        Zeros before any output (the robot is taken to be at rest until this node commands
        it); the velocity limits when the outputs of that time are no longer kept.
        ``measured`` (n,): the joint velocities measured at ``t0`` (NaN: not published),
        added to the range (a robot still moving from earlier commands, tracking behind)."""
        span = max(now - t0, 0.0)
        n = self._v.shape[1]
        if span == 0.0:
            return np.zeros(n), np.zeros(n)
        if self._count == 0:
            if measured is None or not np.isfinite(measured).any():
                return np.zeros(n), np.zeros(n)
            m = np.where(np.isfinite(measured), measured, 0.0)
            lo, hi = np.minimum(m, 0.0), np.maximum(m, 0.0)
            return 0.5 * (lo + hi) * span, 0.5 * (hi - lo) * span
        cap = self._t.shape[0]
        kept = min(self._count, cap)
        start = t0 - lag
        t = self._t
        inside = t > start
        if inside.sum() >= kept:
            if self._count > cap:  # what was in force before is no longer known
                return np.zeros(n), self._vmax * span
            inside[:] = True
        else:
            # the newest entry at or before `start` (in force then) counts too
            older = np.where(t <= start, t, -np.inf)
            inside[int(np.argmax(older))] = True
        v = self._v[inside]
        lo = v.min(axis=0)
        hi = v.max(axis=0)
        if measured is not None:
            known = np.isfinite(measured)
            lo = np.where(known, np.minimum(lo, measured), lo)
            hi = np.where(known, np.maximum(hi, measured), hi)
        return 0.5 * (lo + hi) * span, 0.5 * (hi - lo) * span


@dataclass
class _Cycle:
    """Outcome of one filter cycle: what was published and what the status reports."""

    velocity: Optional[NDArray[np.float64]]  # (len(joints),); None: nothing can be published
    layout: Optional[MultiArrayLayout]
    ok: bool
    fault: str
    min_distance: float = math.nan
    scaling: float = 0.0
    active: list[str] = field(default_factory=list)
    solve_time: float = 0.0
    expiry: float = math.inf  # monotonic time after which this output must not be in force
    why: str = ""  # what sets the expiry: the state's "arrival" or "stamp", or the "command"
    since: float = math.nan  # the monotonic time the expiry counts from


def _f64(values: NDArray[np.float64]) -> array.array:
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


# --------------------------------------------------------------------------- node
class VelocityFilterNode(Node):
    """Velocity filter node (see the module docstring). ``kwargs`` go to ``rclpy.node.Node``
    (``context``, ``namespace``, ``parameter_overrides``, ``cli_args``, ...)."""

    MOVEIT_INTERFACES = moveit.WORLD_INTERFACES
    """Interfaces added when moveit_msgs is importable (for the node reference)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._setup: Optional[_Setup] = None
        self._robot: Optional[RobotModel] = None
        self._config_fault = "no robot model loaded yet"
        self._protection: dict[str, bool] = {}  # service changes, re-applied on rebuilds
        self._states: Optional[JointStateCache] = None  # of the current robot model
        self._layout: Optional[tuple[str, ...]] = None  # output joints, fixed at first setup
        self._cmd: Optional[NDArray[np.float64]] = None
        self._cmd_error = ""
        self._cmd_time = -math.inf
        self._cmd_layout: Optional[MultiArrayLayout] = None
        self._world_version: Any = -1
        self._last_output = -math.inf
        self._last_cycle = _Cycle(None, None, False, self._config_fault)
        self._throttled = LogThrottle(self.context)  # (key, period=2.0 s) -> log now?
        self._timer: Any = None
        # fail-safe state (see "Fail-safe" in the module docstring)
        self._sent: Optional[NDArray[np.float64]] = None  # model-order velocity last sent
        self._history: Optional[_SentHistory] = None
        self._hold_report = ""
        self._sources_fault = ""  # several command publishers with single_command_source
        self._sources_checked = -math.inf
        self._sources_seen = 1
        self._expiry = math.inf  # when the output in force stops being valid (monotonic s)
        self._cond = threading.Condition(self._lock)
        self._watchdog_wake = math.inf
        self._stopping = False
        self.stats = {"commands": 0, "rejected_commands": 0, "joint_states": 0,
                      "rejected_joint_states": 0, "ignored_joint_states": 0, "ticks": 0,
                      "published": 0, "zeros": 0, "watchdog": 0, "errors": 0,
                      "late_states": 0}
        self.command_latencies = LatencyRecord(200_000)
        """Seconds from a command's arrival (the DDS receive stamp where rclpy provides it, else
        entering the callback) to its output's ``publish()`` returning, newest last."""

        self._control_group = MutuallyExclusiveCallbackGroup()
        self._service_group = MutuallyExclusiveCallbackGroup()
        self._world_group = MutuallyExclusiveCallbackGroup()

        self.world = WorldModel()
        self._message_limits = MessageLimits()
        self._loader = RobotLoader(self, self._on_robot, callback_group=self._world_group,
                                   message_limits=self._limits)
        if self._loader.limits is not None:  # the load_limits parameter caps world files too
            self.world.limits = self._loader.limits

        self._settings = start_up_settings(
            self, PARAMETERS, settings_from_values, self.world, _READ_ONLY)
        self._message_limits = message_limits_from_values(self._settings)

        s = self._settings
        latest = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                            reliability=ReliabilityPolicy.BEST_EFFORT)
        reliable = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                              reliability=ReliabilityPolicy.RELIABLE)
        # No default QoS-event handlers on these (rclpy adds one waitable per entity and event
        # type, and rebuilds its wait set for every message: they cost latency on every
        # command). These QoS profiles cannot be incompatible with a peer's reliability (best-
        # effort readers, reliable writers); the peer still reports other incompatibilities.
        pub_events = PublisherEventCallbacks(use_default_callbacks=False)
        sub_events = SubscriptionEventCallbacks(use_default_callbacks=False)
        self._output_pub = self.create_publisher(
            Float64MultiArray, s.output_topic, reliable, event_callbacks=pub_events)
        self._status_pub = self.create_publisher(
            FilterStatus, "~/status", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
            event_callbacks=pub_events)
        # Inputs arrive serialized (raw=True) and are size-checked before they are
        # deserialized (robot_collision.ros.intake): an oversized message costs microseconds.
        # Commands and states get rclpy's message info (arrival stamps) where it exists.
        with_info = hasattr(Subscription, "CallbackType")
        self._command_sub = CheckedSubscription(
            self, Float64MultiArray, s.command_topic, self._on_command, latest, self._limits,
            self._on_rejected_command, "command", with_info=with_info,
            callback_group=self._control_group, event_callbacks=sub_events)
        # joint states: several publishers (a controller each, a gripper) publish at the same
        # moments; a depth of 1 kept only the last of them (the others never arrived)
        states_qos = QoSProfile(depth=20, history=HistoryPolicy.KEEP_LAST,
                                reliability=ReliabilityPolicy.BEST_EFFORT)
        self._state_sub = CheckedSubscription(
            self, JointState, s.joint_states_topic, self._on_joint_state, states_qos,
            self._limits,
            self._on_rejected_joint_state, "JointState", with_info=with_info,
            callback_group=self._control_group, event_callbacks=sub_events)
        # ~/world_objects and the shared world_topics (every node's), reliable, deep enough
        # for bursts; ~/world_version reports the world's digest after each change
        self.world.max_extent = s.max_object_extent
        self._world_topics = WorldTopics(
            self, self.world, s.world_topics, self._on_world_object, self._limits,
            self._on_rejected_world_object, callback_group=self._world_group)
        self._moveit_subs = moveit.subscribe_world(
            self, self.world, world_qos(), self._limits, callback_group=self._world_group)
        self._service = self.create_service(
            SetProtection, "~/set_protection", self._on_set_protection,
            callback_group=self._service_group)
        self.clouds = SensedClouds(cloud_settings(s), tf2_lookup(self, self._base_frame))
        self._cloud_subs = CloudSubscriptions(
            self, self.clouds, self._limits, MutuallyExclusiveCallbackGroup(),
            start_paused=True, reducer=CloudProcess)
        self.clouds.prepare = self._prebuild_cloud_scene
        self._cloud_subs.sync()
        self._make_timer()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._priority = ThreadPriority(self.get_logger(), node_name)
        self._watchdog = threading.Thread(target=self._watchdog_loop, daemon=True,
                                          name=f"{node_name}_watchdog")
        self._watchdog.start()
        self._loader.start()
        self.get_logger().info(
            f"filtering {self._command_sub.topic_name} -> {self._output_pub.topic_name} at "
            f"{s.rate:g} Hz (state {self._state_sub.topic_name}, timeout {s.state_timeout:g} s)")

    # ------------------------------------------------------------------ accessors
    @property
    def settings(self) -> FilterNodeSettings:
        """The parameter values in force."""
        return self._settings

    @property
    def robot(self) -> Optional[RobotModel]:
        """The robot model in use (None until one loads)."""
        return self._robot

    @property
    def joints(self) -> list[str]:
        """Joint order of the command and output arrays ([] until known)."""
        setup = self._setup
        return list(setup.joints) if setup is not None else list(self._settings.joints)

    @property
    def protection(self) -> dict[str, bool]:
        """Protection group → enabled (empty until a robot model loads)."""
        with self._lock:
            setup = self._setup
            if setup is None:
                return {}
            return {g: on for g, on in setup.filt.protection.items() if g != _UNCOMMANDED}

    @property
    def last_status(self) -> tuple[bool, str]:
        """(ok, fault) of the newest cycle."""
        c = self._last_cycle
        return c.ok, c.fault

    # ------------------------------------------------------------------ helpers
    def _limits(self) -> MessageLimits:
        """Caps on incoming messages (parameters max_message_*), read per message."""
        return self._message_limits

    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        self._timer = self.create_timer(
            self._settings.period, self._on_tick, callback_group=self._control_group)

    def _build_setup(self, robot: RobotModel, s: FilterNodeSettings) -> _Setup:
        """Filter, mapping and groups for ``robot`` (raises RobotCollisionError on bad config)."""
        layout = self._layout
        if layout is not None and not s.allow_layout_change:
            joints = layout
            unknown = [j for j in joints if j not in robot.joint_names]
            if unknown:
                raise ConfigurationError(
                    f"robot description {robot.name!r} refused: it lacks joints {unknown} of "
                    f"the output layout {list(joints)} fixed at start-up (a controller takes "
                    "commands of that size and order only); publish the robot's own "
                    "description, restart the filter, or set allow_layout_change")
        else:
            joints = s.joints or tuple(robot.joint_names)
        unknown = [j for j in joints if j not in robot.joint_names]
        if unknown:
            raise ConfigurationError(
                f"joints {unknown} are not joints of robot {robot.name!r} "
                f"({', '.join(robot.joint_names)})")
        cmd_idx = np.array([robot.joint_index(j) for j in joints], dtype=np.int64)
        groups: dict[str, list[str]] = {g: list(js) for g, js in robot.groups.items()}
        for name, js in s.protection_groups:
            groups[name] = list(js)
        held = [j for j in robot.joint_names if j not in joints]
        if held:
            groups[_UNCOMMANDED] = held
        checker = make_checker(robot, _SkipSettings(s.skip_pairs, s.padding))
        filt = VelocityFilter(checker, s.options, world=self.world.objects(), groups=groups)
        margin = s.safety_distance_self + s.discrete_margin
        stuck = unsatisfiable_pairs(checker, margin)
        self._hold_report = ""
        if stuck:
            names = ", ".join(str(r) for r in stuck)
            self._hold_report = (
                f"self pairs closer than safety_distance_self + discrete_margin "
                f"({1000 * margin:.1f} mm) in every sampled configuration of the joint ranges: "
                f"{names}; " + (
                    "held where they are (never closer, never asked to separate); disable them "
                    "in the SRDF or skip_pairs if they can never touch"
                    if s.hold_unreachable_pairs else
                    "hold_unreachable_pairs is false: commands may be refused near them"))
            if s.hold_unreachable_pairs:
                filt.set_hold_pairs([(r.link_a, r.link_b) for r in stuck])
        if held:
            filt.set_protection(_UNCOMMANDED, False)
        for g, on in self._protection.items():
            if g in filt.protection:
                filt.set_protection(g, on)
        # the first call compiles the filter's kernels (seconds without a numba cache): do it
        # here, outside the control path, so that the first command is not held up
        home = robot.home_configuration()
        with KernelWarmUp(self.get_logger(), "velocity filter kernels"):
            filt.filter(home, np.zeros(robot.num_joints), s.period)
        filt.reset()
        return _Setup(robot, filt, cmd_idx, tuple(joints))

    def _install(self, setup: Optional[_Setup], robot: Optional[RobotModel], fault: str) -> None:
        with self._lock:
            if robot is not self._robot or self._states is None:
                self._states = (JointStateCache(robot.joint_names, self._settings.stamp_tolerance)
                                if robot is not None else None)
            if robot is not None and (self._history is None or robot is not self._robot):
                self._history = _SentHistory(robot.num_joints)
                self._history.set_limits(np.asarray(robot.velocity_limits, dtype=float))
            if self._states is not None:
                self._states.future_tolerance = self._settings.stamp_tolerance
            self._sent = None
            n_old = len(self._setup.joints) if self._setup is not None else None
            self._robot = robot
            self._setup = setup
            self._config_fault = fault
            self._world_version = -1
            if setup is not None and (self._layout is None or self._settings.allow_layout_change):
                self._layout = setup.joints
            if setup is None or len(setup.joints) != n_old:
                self._cmd = None  # a command of another length is meaningless now
                self._cmd_error = ""
        if robot is not None:
            self.world.set_frame_ids({robot.base_name})
            self.clouds.set_robot(robot, {robot.base_name})

    def _base_frame(self) -> str:
        robot = self._robot
        return robot.base_name if robot is not None else ""

    # ------------------------------------------------------------------ robot
    def _on_robot(self, robot: RobotModel, source: str) -> None:
        try:
            setup = self._build_setup(robot, self._settings)
        except RobotCollisionError as exc:
            self.get_logger().error(f"velocity filter not configured: {exc}; publishing zeros")
            self._install(None, robot, f"configuration error: {exc}")
            return
        self._install(setup, robot, "")
        self._cloud_subs.resume()  # the filter's kernels are loaded: clouds may come
        groups = sorted(g for g in setup.filt.protection if g != _UNCOMMANDED)
        self.get_logger().info(
            f"filter ready for {len(setup.joints)} joints {list(setup.joints)}; protection "
            f"groups {groups}")
        if self._hold_report:
            self.get_logger().warning(self._hold_report)

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
            setup = None
            robot = self._robot
            if robot is not None:
                setup = self._build_setup(robot, new)
            if new.world_file != self._settings.world_file:
                # last: all-or-nothing, raises (changing nothing) if the file cannot be loaded
                self.world.use_file(new.world_file)
        except RobotCollisionError as exc:
            self.get_logger().error(f"parameter change rejected: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        except Exception as exc:
            self.get_logger().error(f"parameter change rejected: {type(exc).__name__}: {exc}")
            return SetParametersResult(successful=False, reason=f"{type(exc).__name__}: {exc}")
        rate_changed = new.rate != self._settings.rate
        with self._lock:
            self._settings = new
            self._message_limits = message_limits_from_values(new)
            if robot is not None:
                self._install(setup, robot, "")
        self.clouds.configure(cloud_settings(new))
        self._cloud_subs.sync()
        if rate_changed:
            self._make_timer()
        self.get_logger().info(f"parameters updated: {sorted(changed)}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ inputs
    def _on_joint_state(self, msg: JointState, info: Optional[dict[str, Any]] = None) -> None:
        arrived = arrival_time(info)
        try:
            self.stats["joint_states"] += 1
            states = self._states
            if states is None:
                return
            clock_now = node_now(self)
            age = stamp_age(msg.header.stamp, clock_now)
            if age is not None:
                age -= time.monotonic() - arrived  # its age when it arrived (it then waited)
            with self._lock:
                if states is not self._states:
                    return
                try:
                    used = states.update(msg.name, msg.position, arrived, age,
                                         stamp_ns=stamp_ns(msg.header.stamp),
                                         velocities=msg.velocity)
                except ConversionError as exc:
                    self._reject_joint_state(exc, states, known=True)
                    return
                if used == 0:
                    self.stats["ignored_joint_states"] += 1
                    return
                if age is not None and age > self._settings.state_timeout:
                    self.stats["late_states"] += 1
                snap = states.snapshot() if self._settings.point_cloud_topics else None
            if snap is not None and not snap.fault:
                self.clouds.joints.add(stamp_seconds(msg.header.stamp, self), snap.q)
        except Exception as exc:
            self.stats["errors"] += 1
            if self._throttled("joint state error"):
                self.get_logger().error(f"joint state processing failed: "
                                        f"{type(exc).__name__}: {exc}")

    def _reject_joint_state(self, exc: ConversionError, states: Optional[JointStateCache],
                            known: bool = False) -> None:
        """A joint state that cannot be used (refused by the intake caps, malformed, stamped
        in the future). ``known``: the cache has already marked the joints it names invalid;
        else (joints unknown, e.g. over a size cap) every joint is until each arrives again."""
        self.stats["rejected_joint_states"] += 1
        with self._lock:
            if states is not None and states is self._states:
                if not known:
                    states.invalidate(f"refused: {exc}")
                # a refused state is not the robot's: stop now, not at the timeout
                if self._expiry < math.inf:  # a non-zero output is in force
                    self._publish(self._cycle(time.monotonic()))
        if self._throttled("bad joint state"):
            self.get_logger().error(f"rejected joint state: {exc}")

    def _on_rejected_joint_state(self, exc: MessageRejectedError) -> None:
        """Intake refusal (over a cap, or not CDR) of a joint state."""
        try:
            self.stats["joint_states"] += 1
            self._reject_joint_state(exc, self._states)
        except Exception as err:
            self.stats["errors"] += 1
            if self._throttled("joint state error"):
                self.get_logger().error(f"joint state processing failed: "
                                        f"{type(err).__name__}: {err}")

    def _on_rejected_command(self, exc: MessageRejectedError) -> None:
        """Intake refusal of a command: an invalid command (zeros until a valid one arrives)."""
        try:
            self.stats["commands"] += 1
            with self._lock:
                self._cmd = None
                self._cmd_error = f"invalid command: {exc}"
                self._cmd_layout = None
                self._cmd_time = time.monotonic()
                self.stats["rejected_commands"] += 1
                self._publish(self._cycle(time.monotonic()))
        except Exception as err:
            self.stats["errors"] += 1
            if self._throttled("command error"):
                self.get_logger().error(
                    f"command processing failed: {type(err).__name__}: {err}")

    def _on_rejected_world_object(self, exc: MessageRejectedError) -> None:
        if self._throttled("world"):
            self.get_logger().error(f"world object rejected: {exc}")

    def _parse_command(self, msg: Float64MultiArray, n: int) -> tuple[Any, str]:
        """(velocities (n,), "") or (None, reason)."""
        data = msg.data
        if len(data) != n:
            return None, (f"wrong length: command has {len(data)} values, expected {n} "
                          f"(joints {', '.join(self.joints)})")
        try:
            cmd = np.array(data, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            return None, f"invalid command: {exc}"
        if not np.isfinite(cmd).all():
            bad = [self.joints[i] for i in np.flatnonzero(~np.isfinite(cmd))]
            return None, f"non-finite command: NaN or inf for joints {bad}"
        return cmd, ""


    def _on_command(self, msg: Float64MultiArray, info: Optional[dict[str, Any]] = None) -> None:
        t0 = time.perf_counter()
        received_ns = int(info.get("received_timestamp") or 0) if info else 0
        try:
            self.stats["commands"] += 1
            arrived = arrival_time(info)
            with self._lock:
                setup = self._setup
                n = len(setup.joints) if setup is not None else len(self._settings.joints)
                cmd, err = self._parse_command(msg, n)
                self._cmd = cmd
                self._cmd_error = err
                self._cmd_layout = msg.layout if cmd is not None else None
                self._cmd_time = arrived
                if err:
                    self.stats["rejected_commands"] += 1
                if not (self._settings.filter_on_command or err):
                    return
                self._publish(self._cycle(time.monotonic()))
            if received_ns > 0:
                self.command_latencies.append((time.time_ns() - received_ns) * 1e-9)
            else:
                self.command_latencies.append(time.perf_counter() - t0)
        except Exception as exc:
            self.stats["errors"] += 1
            if self._throttled("command error"):
                self.get_logger().error(
                    f"command processing failed: {type(exc).__name__}: {exc}")

    def _on_world_object(self, msg: WorldObjectMsg) -> None:
        try:
            what = self.world.apply_msg(msg)
            self.get_logger().info(f"world: {what}")
        except RobotCollisionError as exc:
            if self._throttled("world"):
                self.get_logger().error(f"world object rejected: {exc}")
        except Exception as exc:
            if self._throttled("world"):
                self.get_logger().error(f"world object rejected: {type(exc).__name__}: {exc}")

    def _prebuild_cloud_scene(self, clouds: list[Any]) -> None:
        """The cloud worker, before a new cloud is handed over: the checker's scene for the
        world the tick will then see (world objects, then ``clouds``, as in ``_cycle``), so
        that the tick only adopts it (packing ~100 k balls took the tick 60-80 ms)."""
        setup = self._setup
        if setup is not None:
            _, objects = self.world.snapshot()
            setup.filt.checker.prepare(tuple(objects) + tuple(clouds))

    # ------------------------------------------------------------------ the cycle
    def _cycle(self, now: float) -> _Cycle:
        """Filter the newest command against the newest state (call with the lock held)."""
        s = self._settings
        setup = self._setup
        if setup is None:
            n = self._layout_size()
            return _Cycle(np.zeros(n) if n else None, None, False, self._config_fault)
        n = len(setup.joints)
        zeros = np.zeros(n)
        states = self._states
        assert states is not None
        snap = states.snapshot()
        if snap.fault.startswith("rejected"):
            return _Cycle(zeros, None, False, snap.fault)
        if self._cmd_error:
            return _Cycle(zeros, None, False, self._cmd_error)
        if self._sources_fault:
            return _Cycle(zeros, None, False, self._sources_fault)
        if snap.fault:
            return _Cycle(zeros, None, False,
                          f"{snap.fault} on {self._state_sub.topic_name}")
        stale = self._stale(now, snap.stamp, snap.arrival)
        if stale:
            return _Cycle(zeros, None, False, stale)
        age = now - snap.stamp
        idle = ""
        if self._cmd is None:
            idle = f"no command received yet on {self._command_sub.topic_name}"
        elif s.command_timeout > 0 and now - self._cmd_time > s.command_timeout:
            idle = (f"command timeout: newest command is {now - self._cmd_time:.3f} s old "
                    f"(command_timeout {s.command_timeout:g} s)")
        filt = setup.filt
        version, objects = self.world.snapshot()
        if s.point_cloud_topics:
            ros_now = node_now(self)
            missing = self.clouds.problems(ros_now)
            if missing and s.cloud_timeout_action == "stop":
                return _Cycle(zeros, None, False,
                              "stale cloud: " + "; ".join(f"{t}: {why}" for t, why in
                                                          missing.items())
                              + " (the scene is unknown; cloud_timeout_action 'stop')")
            clouds = self.clouds.objects(ros_now)
            key: Any = (version, tuple(c.name for c in clouds), tuple(id(c) for c in clouds))
            objects = tuple(objects) + tuple(clouds)
        else:
            key = version
        if key != self._world_version:
            # the next cloud of the same topics (nothing else changed): the filter keeps the
            # witnesses it remembers on the sensed surfaces (at 5-30 clouds/s, forgetting them
            # made the arm jerk along a surface it was pushed against after every cloud)
            prev = self._world_version
            refreshed = isinstance(key, tuple) and isinstance(prev, tuple) and \
                key[:2] == prev[:2]
            filt.set_world(objects, keep_witnesses=refreshed)
            self._world_version = key
        qd = np.zeros(setup.robot.num_joints)
        if not idle:
            qd[setup.cmd_idx] = self._cmd
        sent = self._sent
        # where the arm is now: the measured state moved on by the outputs in force since its
        # stamp, give or take how much those outputs varied (see "Late states")
        q = snap.q
        bound = None
        if self._history is not None:
            moved, bound = self._history.motion_since(snap.stamp, now, s.period,
                                                      snap.velocity)
            # never predicted past a position limit (farther than the measurement was): the
            # joint box held the outputs there, and the state check is on the measurement
            robot = setup.robot
            q = np.clip(q + moved, np.minimum(q, robot.lower), np.maximum(q, robot.upper))
        res = filt.filter(q, qd, s.period, stamp_age=age,
                          previous=sent if sent is not None else np.zeros(qd.shape[0]),
                          elapsed=now - self._last_output, motion_bound=bound)
        solve = res.solve_time + res.clearance_time
        if idle:  # zeros; the filter ran on a zero command only for the status' distances
            return _Cycle(zeros, None, False, idle, res.min_distance, 0.0, [], solve)
        if not res.ok:
            return _Cycle(zeros, None, False, res.fault, res.min_distance, 0.0,
                          res.active_constraints, solve)
        ends = [(snap.arrival + s.state_timeout, "arrival", snap.arrival),
                (snap.stamp + s.max_state_age, "stamp", snap.stamp)]
        if s.command_timeout > 0:
            ends.append((self._cmd_time + s.command_timeout, "command", self._cmd_time))
        expiry, why, since = min(ends)
        return _Cycle(res.velocity[setup.cmd_idx], self._cmd_layout, True, "",
                      res.min_distance, res.scaling, res.active_constraints, solve, expiry,
                      why, since)

    def _zero_cycle(self, fault: str) -> _Cycle:
        setup = self._setup
        n = len(setup.joints) if setup is not None else self._layout_size()
        return _Cycle(np.zeros(n) if n or setup is not None else None, None, False, fault)

    def _layout_size(self) -> int:
        """Length of the output when no filter is set up (a refused robot description)."""
        if self._layout is not None:
            return len(self._layout)
        return len(self._settings.joints)

    def _stale(self, now: float, stamp: float, arrival: float) -> str:
        """Why the merged state (oldest needed joint measured at ``stamp``, arrived at
        ``arrival``) may not be used at ``now`` ("" = it may)."""
        s = self._settings
        states = self._states
        if now - arrival > s.state_timeout:
            name, age = states.oldest(now) if states is not None else ("", now - arrival)
            return (f"stale state: joint {name!r} last arrived {age:.3f} s ago on "
                    f"{self._state_sub.topic_name} (state_timeout {s.state_timeout:g} s)")
        if now - stamp > s.max_state_age:
            name, age = states.oldest(now, by="stamp") if states is not None else (
                "", now - stamp)
            return (f"stale state: joint {name!r} was measured {age:.3f} s ago by its stamp "
                    f"(max_state_age {s.max_state_age:g} s; a late publisher or clocks that "
                    "disagree)")
        return ""

    def _expired(self, now: float, cycle: Optional[_Cycle] = None) -> str:
        """Why the output of ``cycle`` (default: the one in force) is no longer valid at
        ``now``: the limit that set its expiry, measured from the input it was computed from
        (a newer input that arrived meanwhile does not make that output valid)."""
        c = cycle if cycle is not None else self._last_cycle
        s = self._settings
        states = self._states
        if c.why == "arrival":
            name = states.oldest(now)[0] if states is not None else ""
            return (f"stale state: joint {name!r} arrived {now - c.since:.3f} s before this "
                    f"output would have been applied (state_timeout {s.state_timeout:g} s)")
        if c.why == "stamp":
            return (f"stale state: the joint state was measured {now - c.since:.3f} s ago by "
                    f"its stamp (max_state_age {s.max_state_age:g} s)")
        return (f"command timeout: newest command is {now - self._cmd_time:.3f} s old "
                f"(command_timeout {s.command_timeout:g} s)")

    @staticmethod
    def _output_msg(cycle: _Cycle) -> Optional[Float64MultiArray]:
        """The output message of ``cycle`` (None when it sends nothing)."""
        if cycle.velocity is None:
            return None
        out = Float64MultiArray()
        if cycle.layout is not None:
            out.layout = cycle.layout
        out.data = _f64(cycle.velocity)
        return out

    def _publish(self, cycle: _Cycle) -> None:
        """Send ``cycle``'s output (call with the lock held: outputs go out in order, and
        every non-zero one is checked against its expiry at the moment it is sent)."""
        out = self._output_msg(cycle)
        # the expiry is checked after the message is built, right before it is sent: the
        # window in which a preempted thread can send a just-expired output is the publish
        # call itself (a message built after the check had let one through 27 ms late, 1 in
        # 140 trials with two busy loops on the 2 cores)
        now = time.monotonic()
        if cycle.ok and now > cycle.expiry:  # went stale while it was computed
            cycle = self._zero_cycle(self._expired(now, cycle))
            out = self._output_msg(cycle)
        self._last_cycle = cycle
        if out is None or cycle.velocity is None:
            return
        self._output_pub.publish(out)
        self._last_output = now
        self.stats["published"] += 1
        setup = self._setup
        if setup is not None:
            sent = np.zeros(setup.robot.num_joints)
            if cycle.ok:
                sent[setup.cmd_idx] = cycle.velocity
            self._sent = sent
            if self._history is not None:
                self._history.append(now, sent)
        if cycle.ok and cycle.velocity.any():
            self._expiry = cycle.expiry
            if cycle.expiry < self._watchdog_wake:
                self._cond.notify()
        else:
            self._expiry = math.inf
        if not cycle.ok:
            self.stats["zeros"] += 1
            self._log_fault(cycle.fault)

    def _watchdog_loop(self) -> None:
        """The watchdog thread: sends zeros the moment the output in force expires (its
        joint state older than ``state_timeout``, its command older than ``command_timeout``),
        whether or not the executor gets to run a tick or callback (busy with a robot model,
        a world file, starved of CPU); see "Fail-safe" in the module docstring."""
        with self._cond:
            while not self._stopping:
                self._priority.ensure(self._settings.realtime_priority, "watchdog")
                now = time.monotonic()
                if now >= self._expiry:
                    try:
                        self.stats["watchdog"] += 1
                        self._publish(self._zero_cycle(self._expired(now)))
                    except Exception as exc:  # shutting down: the publisher is gone
                        self._expiry = math.inf
                        if not self.context.ok():
                            return
                        self.stats["errors"] += 1
                        if self._throttled("watchdog error"):
                            self.get_logger().error(
                                f"watchdog failed to send zeros: {type(exc).__name__}: {exc}")
                    continue
                self._watchdog_wake = self._expiry
                self._cond.wait(min(self._expiry - now, 1.0))
                self._watchdog_wake = math.inf

    def destroy_node(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=5.0)
        super().destroy_node()

    def _log_fault(self, fault: str) -> None:
        reason = fault.split(":")[0]
        if reason.startswith(("no command", "command timeout")):
            return  # idle is normal
        waiting = reason.startswith(("no joint state", "no robot"))  # start-up: less often
        if not self._throttled("fault " + reason, 10.0 if waiting else 2.0):
            return
        if reason.startswith(("no joint state", "stale state", "stale cloud", "no robot")):
            self.get_logger().warning(f"publishing zeros: {fault}")
        else:
            self.get_logger().error(f"publishing zeros: {fault}")

    def _check_command_sources(self, now: float) -> None:
        """Once a second: warn while several nodes publish commands (their commands interleave:
        the output flips between them); with ``single_command_source`` refuse them all."""
        if now - self._sources_checked < 1.0:
            return
        self._sources_checked = now
        infos = self.get_publishers_info_by_topic(self._command_sub.topic_name)
        count = len(infos)
        fault = ""
        if count > 1:
            nodes = sorted({f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos})
            what = (f"{count} publishers on {self._command_sub.topic_name} (nodes "
                    f"{', '.join(nodes)}): their commands interleave")
            if self._settings.single_command_source:
                fault = (f"several command sources: {what}; single_command_source refuses "
                         "commands until one publisher remains")
            if count != self._sources_seen or self._throttled("command sources", 10.0):
                self.get_logger().warning(
                    what + ("; refusing commands (single_command_source)" if fault else
                            "; set single_command_source to refuse them"))
        elif self._sources_seen > 1:
            self.get_logger().info(f"one publisher on {self._command_sub.topic_name} again")
        self._sources_seen = count
        with self._lock:
            self._sources_fault = fault

    def _executor_priority(self) -> int:
        """``realtime_priority`` where the thread running this tick serves this node alone
        (a ``SingleThreadedExecutor`` of its own), else 0: a thread shared with other nodes
        (a planner's search, a checker's service) must not run them ahead of the machine."""
        priority = self._settings.realtime_priority
        if priority <= 0:
            return 0
        executor = self.executor
        nodes = executor.get_nodes() if isinstance(executor, SingleThreadedExecutor) else []
        if len(nodes) == 1 and nodes[0] is self:
            return priority
        if self._throttled("realtime shared", 60.0):
            self.get_logger().warning(
                f"realtime_priority {priority} not applied to the executor thread: it also "
                "runs other nodes' callbacks (run the velocity_filter in a process or "
                "SingleThreadedExecutor of its own; the watchdog thread has it)")
        return 0

    def _on_tick(self) -> None:
        try:
            self.stats["ticks"] += 1
            self._priority.ensure(self._executor_priority(), "executor")
            now = time.monotonic()
            self._check_command_sources(now)
            with self._lock:
                s = self._settings
                if not s.filter_on_command or now - self._last_output >= 0.5 * s.period:
                    cycle = self._cycle(now)
                    self._publish(cycle)
                cycle = self._last_cycle
                disabled = [g for g, on in self._setup.filt.protection.items()
                            if not on and g != _UNCOMMANDED] if self._setup else []
                frame = self._robot.base_name if self._robot is not None else ""
            status = FilterStatus()
            status.header.stamp = self.get_clock().now().to_msg()
            status.header.frame_id = frame
            status.ok = cycle.ok
            status.fault = cycle.fault
            status.min_distance = float(cycle.min_distance)
            status.scaling = float(cycle.scaling)
            status.active_constraints = list(cycle.active)
            status.disabled_groups = disabled
            status.solve_time = float(cycle.solve_time)
            self._status_pub.publish(status)
        except Exception as exc:
            self.stats["errors"] += 1
            if self._throttled("tick error"):
                self.get_logger().error(f"filter tick failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ service
    def _on_set_protection(
        self, request: SetProtection.Request, response: SetProtection.Response
    ) -> SetProtection.Response:
        response.success = False
        try:
            group = str(request.group).strip()
            with self._lock:
                setup = self._setup
                if setup is None:
                    response.message = f"the filter is not ready: {self._config_fault}"
                    return response
                known = [g for g in setup.filt.protection if g != _UNCOMMANDED]
                if group not in known:
                    response.message = (f"unknown protection group {group!r}; known groups: "
                                        f"{', '.join(known) or 'none'}")
                    return response
                setup.filt.set_protection(group, bool(request.enabled))
                self._protection[group] = bool(request.enabled)
                protected = setup.filt.protected_joints
            response.success = True
            response.message = (
                f"collision protection of group {group!r} "
                f"{'enabled' if request.enabled else 'disabled'}; protected joints: "
                f"{', '.join(protected) or 'none'}")
            self.get_logger().info(response.message)
        except Exception as exc:
            response.success = False
            response.message = f"internal error: {type(exc).__name__}: {exc}"
            self.get_logger().error(f"set_protection failed: {response.message}")
        return response


def main(args: Optional[Sequence[str]] = None) -> int:
    """``velocity_filter`` console script: run the node until Ctrl-C / SIGTERM, in a
    ``SingleThreadedExecutor`` (lowest latency per message in rclpy), the interpreter's thread
    switch interval at 1 ms (the watchdog thread's worst wait for a running callback)."""
    import sys

    from .bringup import run_nodes

    # the watchdog thread waits at most 1 ms (not 5) for the interpreter while a callback runs
    sys.setswitchinterval(0.001)
    return run_nodes(lambda: [VelocityFilterNode()], args=list(args) if args else None,
                     executor_type="single")


if __name__ == "__main__":
    raise SystemExit(main())
