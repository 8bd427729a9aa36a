"""The ``planner`` node: collision-free joint trajectories through a ``PlanMotion`` action.

Interface (names relative to the node; ``~`` = the node's private namespace, so in the root
namespace the action is ``/planner/plan_motion``):

- action server ``~/plan_motion`` (``robot_collision_interfaces/action/PlanMotion``): plans with
  :class:`robot_collision.planning.rrt.BiRRT` from the goal's start (``use_start``) or the latest
  joint
  state to a joint configuration or a workspace goal region of an end effector, shortens the
  path (when the goal or the ``shorten`` parameter asks), times it
  (:func:`robot_collision.planning.trajectory.time_parameterize`) and returns a
  ``trajectory_msgs/JointTrajectory`` with ``error_code`` / ``message`` / ``planning_time`` /
  ``iterations``. Feedback (iterations, tree sizes, elapsed time) goes out at most
  ``feedback_rate`` times per second while planning, plus once when planning ends.
- subscribes ``joint_states`` (``sensor_msgs/JointState``, best effort, depth 10; joints mapped
  by name, extra joints ignored): the default start state, the newest good one received when
  a goal asks (read on demand, see "Idle cost").
- publishes ``~/planned_path`` (``visualization_msgs/MarkerArray``, reliable, transient local):
  the end-effector path (namespace ``end_effector_path``, a LINE_STRIP through the end-effector
  origin along the interpolated path) and ``ghost_poses`` copies of the robot's collision
  shapes along the path (namespaces ``ghost_<k>``, start to goal). A failed goal deletes the
  previous path, so RViz never shows a stale plan.
- publishes ``/display_planned_path`` (``moveit_msgs/DisplayTrajectory``) when ``moveit_msgs``
  can be imported (a ROS install with MoveIt); nothing otherwise (:mod:`.moveit`).
- world objects: ``world_file`` (the collision checker's YAML schema,
  :mod:`robot_collision.ros.world`) and the topics ``~/world_objects`` and every name in
  ``world_topics`` (``robot_collision_interfaces/WorldObject``; by default every node's
  ``~/world_objects``, so one message updates the checker, the filter and the planner), plus
  ``collision_object`` (``moveit_msgs/CollisionObject``) and ``planning_scene``
  (``moveit_msgs/PlanningScene``) when ``moveit_msgs`` is importable (:mod:`.moveit`).
- the robot comes from ``robot_description`` / ``urdf_path`` / the ``robot_description`` topic
  (:mod:`robot_collision.ros.robot_loader`).

Goals. Joint goals give ``joint_names`` (every joint of the robot model, any order; empty =
model order) and ``goal_positions``; region goals set ``use_goal_region`` and give
``end_effector`` (empty = the ``end_effector`` parameter), ``reference_pose``,
``goal_region_bounds`` (6 x 2 row-major) and ``end_effector_offset_pose``. ``start_positions``
(with ``use_start``) use ``joint_names`` too. Option fields left at 0 take the parameters;
a goal's ``validation_distance`` may only be finer than the parameter (the operator's safety
resolution) and is at least 1e-6, ``time_limit`` is at most one day, ``max_connection_distance``
must let one connect cross the joint ranges in at most 100,000 steps, and the scalings must
leave the timed trajectory at most 100,000 samples (1000 s). Arrays longer than the
``max_message_entries`` parameter are refused. ``shorten`` is on when the goal or the
``shorten`` parameter says so. Joint goals ignore ``end_effector`` (the ``end_effector``
parameter names the link whose path is drawn). The start state from ``joint_states`` is the
newest one received; one up to ``start_limit_tolerance`` outside the joint limits is clipped.

Error codes (the action's constants). Malformed requests (unknown, duplicate or missing joint
names, length mismatches, NaN/inf, negative, out-of-range, too small or too large options, bad
region bounds or poses, unknown end effector) and "no joint state received" give
``INVALID_GOAL``; the planner's errors
map one to one: start/goal in collision (the message names the colliding pairs), outside the
joint limits, goal region unreachable, no path within the time/iteration limit. Every failure
aborts the goal with its code and a message saying what to change; nothing ever moves (this
node only plans).

One goal at a time, newest wins (preemption). When a new goal is accepted while another is
planning (or waiting to plan), the older goal is stopped and ABORTED with
``error_code = PREEMPTED`` at once; the new goal starts planning when the worker is free
(within about 10 ms while the older goal is planning, later if it was shortening or timing its
path). A malformed goal is answered with ``INVALID_GOAL`` at once and does *not* preempt the
running goal. Cancelling a goal (``cancel_goal``) ends it CANCELED with
``error_code = CANCELLED`` at once and stops planning within about 10 ms. Goals that arrive
before a robot model is loaded end with ``INTERNAL_ERROR`` (the message says why); goals that
arrive during the start-up warm-up wait for it (their time limit starts when planning does).

Threading. Planning (planner, shortening, time parameterization, path markers) runs in one
worker thread of the node, one job at a time, so the planner's checker is never used
concurrently. A goal's execute callback resolves the start state, queues the goal and waits for
the worker's outcome *or* a stop request: a cancelled or preempted goal gets its result at once,
also when the worker is in a stage that cannot be interrupted (shortening, TOPP-RA timing: up to
a few hundred ms, whose output is then discarded); planning proper stops within ~10 ms. The
execute callback is a coroutine whose blocking part runs on a helper thread, so any executor
serves cancel requests and new goals meanwhile; the ``planner`` console script spins a
``SingleThreadedExecutor`` (a ``MultiThreadedExecutor`` works too but costs several times
more CPU per wake-up). After the robot loads, the worker plans once (``warm_up``) so that the
compiled kernels are loaded before goal 1.

Idle cost. Nothing runs periodically while no goal is active: joint states are not received
one by one but taken from the DDS reader (which keeps the newest 10) when a goal needs its start
state, so the idle planner uses no CPU whatever the joint-state rate (it used ~25 % of a core
at 100 Hz joint states, ~97 % under ``ros2 launch`` with the other nodes, in rclpy's per-wake-up
wait-set handling with a ``MultiThreadedExecutor``).

Parameters are listed in :data:`PARAMETERS` (also in ``config/robot_collision.yaml``). An
invalid value at start-up is logged and replaced by its default; an invalid change at run time
is rejected with the reason. Changes apply to goals accepted afterwards.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import uuid
from dataclasses import replace
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray
from rcl_interfaces.msg import (  # type: ignore[import-untyped,unused-ignore]
    SetParametersResult,
)
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from robot_collision_interfaces.action import PlanMotion
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg

from ..errors import (
    PlanningCancelledError,
    RobotCollisionError,
)
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from ..planning.ik import WorkspaceGoalRegion
from ..planning.rrt import BiRRT, PlanResult, ProgressInfo
from . import moveit
from .conversions import ConversionError, JointStateMapper, trajectory_to_msg
from .intake import (
    MessageLimits,
    MessageRejectedError,
    OnDemandSubscription,
    decode,
    message_limits_from_values,
)
from .joint_states import JointStateCache, stamp_age, stamp_ns
from .markers import PlannedPathMarkers
from .message_timing import arrival_time
from .planner_execution import (
    GoalContext,
    Pipeline,
    PlanningWorker,
    densify,
    time_parameterize_path,
)
from .planner_goals import (
    ErrorCode,
    GoalError,
    default_end_effector,
    error_code_for,
    parse_goal,
    rrt_options,
)
from .planner_settings import PARAMETERS, READ_ONLY, PlannerSettings, settings_from_values
from .point_clouds import (
    CloudSubscriptions,
    SensedClouds,
    cloud_settings,
    node_now,
    stamp_seconds,
    tf2_lookup,
)
from .robot_loader import RobotLoader
from .startup import KernelWarmUp
from .wiring import make_checker, start_up_settings
from .world import WorldModel, WorldTopics, world_qos

__all__ = ["PlannerNode", "PARAMETERS", "main"]

NODE_NAME = "planner"
ACTION_NAME = "~/plan_motion"

class PlannerNode(Node):
    """Motion-planning action server (see the module docstring). ``kwargs`` go to
    ``rclpy.node.Node`` (``context``, ``namespace``, ``parameter_overrides``, ...)."""

    MOVEIT_INTERFACES = moveit.WORLD_INTERFACES + moveit.DISPLAY_INTERFACES
    """Interfaces added when moveit_msgs is importable (for the node reference)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._state_lock = threading.Lock()  # the joint-state reader and the newest state
        self._pipeline: Optional[Pipeline] = None
        self._states: Optional[JointStateCache] = None  # of self._states_robot
        self._states_robot: Optional[RobotModel] = None
        self._goals: dict[bytes, GoalContext] = {}
        self._active: Optional[GoalContext] = None
        self._markers: Optional[PlannedPathMarkers] = None
        self._shutting_down = False
        self.stats = {"goals": 0, "succeeded": 0, "failed": 0, "cancelled": 0, "preempted": 0}
        self.last_cancel_latency: float = math.nan  # s, cancel request -> planner stopped

        self._action_group = ReentrantCallbackGroup()
        self._world_group = MutuallyExclusiveCallbackGroup()

        self.world = WorldModel()
        self._message_limits = MessageLimits()
        self._loader = RobotLoader(self, self._on_robot, callback_group=self._world_group,
                                   message_limits=self._limits)
        if self._loader.limits is not None:  # the load_limits parameter caps world files too
            self.world.limits = self._loader.limits

        self._settings = start_up_settings(
            self, PARAMETERS, settings_from_values, self.world, READ_ONLY)
        self._message_limits = message_limits_from_values(self._settings)

        # ---- interfaces
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._path_pub = self.create_publisher(MarkerArray, "~/planned_path", latched)
        self._display_pub: Any = None
        self._display_types = moveit.display_trajectory_types()
        if self._display_types is not None:
            self._display_pub = self.create_publisher(
                self._display_types[0], moveit.DISPLAY_TOPIC, reliable)
        # joint states are read when a goal needs its start state (or a cloud its self-filter
        # state), not received one by one (robot_collision.ros.intake.OnDemandSubscription: DDS
        # keeps the newest 10; an idle planner costs no CPU whatever the joint-state rate); every
        # input arrives serialized and is size-checked before it is deserialized
        self._state_reader = OnDemandSubscription(
            self, JointState, "joint_states",
            QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.clouds = SensedClouds(
            cloud_settings(self._settings), tf2_lookup(self, self._base_frame))
        self._cloud_subs = CloudSubscriptions(self, self.clouds, self._limits, self._world_group,
                                              before=self.latest_joint_state, start_paused=True)
        self._cloud_subs.sync()
        # ~/world_objects and the shared world_topics (every node's), reliable, deep enough
        # for bursts; ~/world_version reports the world's digest after each change
        self.world.max_extent = self._settings.max_object_extent
        self._world_topics = WorldTopics(
            self, self.world, self._settings.world_topics, self._on_world_object, self._limits,
            self._on_rejected_world, callback_group=self._world_group)
        self._world_subs: list[Any] = list(self._world_topics.subscriptions)
        self._world_subs += moveit.subscribe_world(
            self, self.world, world_qos(), self._limits, callback_group=self._world_group)
        self._action_server = ActionServer(
            self, PlanMotion, ACTION_NAME,
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel,
            callback_group=self._action_group,
        )
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._worker = PlanningWorker(self._run_goal, PlanMotion.Result,
                                      self.get_logger().error)
        with contextlib.suppress(Exception):  # stop goals as soon as rclpy shuts down
            self.context.on_shutdown(self._on_context_shutdown)
        self._loader.start()

    # ------------------------------------------------------------------ properties
    def _limits(self) -> MessageLimits:
        """Caps on incoming messages (parameters max_message_*), read per message."""
        return self._message_limits

    @property
    def settings(self) -> PlannerSettings:
        """The parameter values in force."""
        return self._settings

    @property
    def robot(self) -> Optional[RobotModel]:
        """The robot model in use (None until one loads)."""
        pipe = self._pipeline
        return pipe.robot if pipe is not None else None

    # ------------------------------------------------------------------ robot, parameters
    def _build_pipeline(self, robot: RobotModel, settings: PlannerSettings) -> Pipeline:
        return Pipeline(
            robot=robot,
            settings=settings,
            checker=make_checker(robot, settings),
            mapper=JointStateMapper(robot.joint_names),
            frame_id=settings.frame_id or robot.base_name,
        )

    def _install(self, pipe: Pipeline) -> None:
        with self._lock:
            old = self._pipeline
            self._pipeline = pipe
            if old is None or old.robot is not pipe.robot or old.frame_id != pipe.frame_id:
                self._markers = PlannedPathMarkers(pipe.robot, pipe.frame_id)
        self.world.set_frame_ids({pipe.robot.base_name, pipe.frame_id})
        self.clouds.set_robot(pipe.robot, {pipe.robot.base_name, pipe.frame_id})

    def _base_frame(self) -> str:
        pipe = self._pipeline
        return pipe.frame_id if pipe is not None else ""

    def world_objects(self) -> list[WorldObject]:
        """The world planned against: the world model's objects and the current clouds."""
        objects = list(self.world.objects())
        if self._settings.point_cloud_topics:
            objects += self.clouds.objects(node_now(self))
        return objects

    def _on_robot(self, robot: RobotModel, source: str) -> None:
        try:
            pipe = self._build_pipeline(robot, self._settings)
        except RobotCollisionError as exc:
            keep = replace(self._settings, skip_rule="parent", skip_pairs=(), pair_padding=(),
                           use_srdf=True)
            self.get_logger().error(
                f"skip/padding parameters do not fit robot {robot.name!r}: {exc}; using "
                "skip_rule 'parent' without skip_pairs and pair_padding"
            )
            self._settings = keep
            pipe = self._build_pipeline(robot, keep)
        self._install(pipe)
        self.get_logger().info(
            f"planner ready for {robot.name!r} on {self.resolve_action_name()}")
        if pipe.settings.warm_up:
            self._worker.submit(lambda: self._warm_up(pipe))
        else:
            self._cloud_subs.resume()

    def _warm_up(self, pipe: Pipeline) -> None:
        """Plan, shorten and time once (joint goal and goal region) between random valid
        configurations in the worker, so that numba loads or compiles the kernels before the
        first goal (the first compilation takes seconds and would otherwise count against that
        goal's time limit). Failures are ignored."""
        if self._shutting_down:
            return
        try:
            with KernelWarmUp(self.get_logger(), "planner kernels"):
                self._plan_once(pipe)
        except Exception as exc:
            self.get_logger().warning(f"planner warm-up failed: {type(exc).__name__}: {exc}")
        finally:
            self._cloud_subs.resume()  # kernels loaded: clouds may come

    def _plan_once(self, pipe: Pipeline) -> None:
        """The warm-up's planning (see :meth:`_warm_up`)."""
        robot = pipe.robot
        world = self.world_objects()
        rng = np.random.default_rng(0)
        valid = [q for q in (robot.random_configuration(rng) for _ in range(64))
                 if pipe.checker.is_valid(q, world)][:2]
        if len(valid) < 2:
            return
        options = rrt_options(pipe.settings, seed=0, max_iterations=50)
        planner = BiRRT(pipe.checker, options, world)

        def stop() -> bool:
            return self._shutting_down or not self.context.ok()

        with contextlib.suppress(RobotCollisionError):
            res = planner.plan(valid[0], valid[1], time_limit=60.0, should_stop=stop)
            path = planner.shorten(res.waypoints, 5)
            time_parameterize_path(
                path, robot, 1.0, 1.0, pipe.settings.acceleration_limit,
                pipe.settings.trajectory_method, checker=pipe.checker, world=world)
        ee = default_end_effector(robot, pipe.settings.end_effector)
        region = WorkspaceGoalRegion(ee, robot.link_transforms(valid[1])[ee])
        with contextlib.suppress(RobotCollisionError):
            planner.plan(valid[0], region, time_limit=60.0, should_stop=stop)

    def resolve_action_name(self) -> str:
        """Fully qualified name of the PlanMotion action (for logs and clients)."""
        ns = self.get_namespace().rstrip("/")
        return f"{ns}/{self.get_name()}/plan_motion"

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        changed = {p.name: p.value for p in params if p.name in PARAMETERS}
        if not changed:
            return SetParametersResult(successful=True)
        try:
            for name in changed:
                if changed[name] is None:  # PARAMETER_NOT_SET: back to the default
                    changed[name] = PARAMETERS[name][0]
            new, _ = settings_from_values(changed, base=self._settings, strict=True)
            rrt_options(new)  # combinations the options themselves refuse
            pipe = self._pipeline
            new_pipe = self._build_pipeline(pipe.robot, new) if pipe is not None else None
            if new.world_file != self._settings.world_file:
                # last: all-or-nothing, raises (changing nothing) if the file cannot be loaded
                self.world.use_file(new.world_file)
        except RobotCollisionError as exc:
            self.get_logger().error(f"parameter change rejected: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        except Exception as exc:
            self.get_logger().error(f"parameter change rejected: {type(exc).__name__}: {exc}")
            return SetParametersResult(successful=False, reason=f"{type(exc).__name__}: {exc}")
        self._settings = new
        self.clouds.configure(cloud_settings(new))
        self._cloud_subs.sync()
        self._message_limits = message_limits_from_values(new)
        if new_pipe is not None:
            self._install(new_pipe)
        self.get_logger().info(f"parameters updated: {sorted(changed)}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ topics
    def _read_joint_states(self) -> None:
        """Take the joint states waiting in the reader into the per-joint merged state
        (:class:`JointStateCache`; call with ``_state_lock`` held)."""
        pipe = self._pipeline
        for raw, info in self._state_reader.take():
            if pipe is None:
                continue
            if self._states is None or self._states_robot is not pipe.robot:
                self._states = JointStateCache(pipe.robot.joint_names)
                self._states_robot = pipe.robot
            arrived = arrival_time(info)
            try:
                msg = decode(raw, JointState, self._limits(), "JointState")
                age = stamp_age(msg.header.stamp, node_now(self))
                if age is not None:
                    age -= time.monotonic() - arrived  # its age when it arrived
                if not self._states.update(msg.name, msg.position, arrived, age,
                                           stamp_ns=stamp_ns(msg.header.stamp)):
                    continue
            except ConversionError as exc:
                self._on_rejected_joint_state(exc)
                continue
            if self._settings.point_cloud_topics:
                snap = self._states.snapshot()
                if not snap.fault:
                    self.clouds.joints.add(stamp_seconds(msg.header.stamp, self), snap.q)

    def _on_rejected_joint_state(self, exc: ConversionError) -> None:
        self.get_logger().error(f"rejected joint state: {exc}", throttle_duration_sec=2.0)

    def _on_rejected_world(self, exc: MessageRejectedError) -> None:
        self.get_logger().error(f"world object rejected: {exc}", throttle_duration_sec=1.0)

    def _on_world_object(self, msg: WorldObjectMsg) -> None:
        try:
            what = self.world.apply_msg(msg)
            self.get_logger().info(f"world: {what}")
        except Exception as exc:
            self.get_logger().error(f"world object rejected: {exc}", throttle_duration_sec=1.0)

    def _joint_topic(self) -> str:
        return self._state_reader.topic_name

    def latest_joint_state(self) -> Optional[NDArray[np.float64]]:
        """The newest good joint-state configuration of the current robot received so far
        (None if none yet)."""
        with self._state_lock:
            try:
                self._read_joint_states()
            except Exception as exc:  # a destroyed reader at shutdown, an RMW error
                self.get_logger().error(f"reading joint states failed: {type(exc).__name__}: "
                                        f"{exc}", throttle_duration_sec=2.0)
            pipe = self._pipeline
            states = self._states
            if states is None or pipe is None or self._states_robot is not pipe.robot:
                return None
            snap = states.snapshot()
            return None if snap.fault else snap.q

    def _current_start(self, max_age: float) -> tuple[Optional[NDArray[np.float64]], str]:
        """(the merged joint state, "") when every joint is fresher than ``max_age`` (s) by
        arrival and by stamp; else (None, why not)."""
        if self.latest_joint_state() is None:
            states = self._states
            if states is None:
                return None, f"no joint state received on {self._joint_topic()}"
            return None, f"{states.snapshot().fault} on {self._joint_topic()}"
        with self._state_lock:
            states = self._states
            assert states is not None
            snap = states.snapshot()
            now = time.monotonic()
            for by, t in (("arrival", snap.arrival), ("stamp", snap.stamp)):
                if now - t > max_age:
                    name, age = states.oldest(now, by=by)
                    how = "last received" if by == "arrival" else "measured (header stamp)"
                    return None, (
                        f"the start state is stale: joint {name!r} was {how} {age:.2f} s ago "
                        f"on {self._joint_topic()} (start_state_max_age {max_age:g} s); is "
                        "its joint_states publisher running?")
            return snap.q, ""

    # ------------------------------------------------------------------ action callbacks
    def _on_goal(self, goal_request: Any) -> GoalResponse:
        # Every goal is accepted so that a malformed one gets a result with a reason.
        return GoalResponse.REJECT if self._shutting_down else GoalResponse.ACCEPT

    def _on_accepted(self, goal_handle: Any) -> None:
        key = bytes(goal_handle.goal_id.uuid)
        label = str(uuid.UUID(bytes=key))[:8]
        ctx = GoalContext(goal_handle, key, label)
        pipe = self._pipeline
        try:
            if pipe is None:
                raise GoalError(
                    ErrorCode.INTERNAL_ERROR,
                    "no robot model loaded yet: set robot_description / urdf_path or publish "
                    "the robot_description topic")
            ctx.pipeline = pipe
            ctx.request = parse_goal(goal_handle.request, pipe.robot, pipe.settings, pipe.mapper)
        except Exception as exc:
            ctx.error = error_code_for(exc)
        with self._lock:
            self.stats["goals"] += 1
            self._goals[key] = ctx
            if ctx.error is None:
                prev, self._active = self._active, ctx
                if prev is not None and not prev.done.is_set():
                    prev.request_stop(
                        ErrorCode.PREEMPTED,
                        f"preempted: a newer goal ({label}) was accepted; one goal runs at a time")
        goal_handle.execute()

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        ctx = self._goals.get(bytes(goal_handle.goal_id.uuid))
        if ctx is not None:
            ctx.request_stop(ErrorCode.CANCELLED, "cancelled by the client")
        return CancelResponse.ACCEPT

    # ------------------------------------------------------------------ execution
    async def _execute(self, goal_handle: Any) -> Any:
        """Execute callback (a coroutine): the blocking part runs on a helper thread and this
        awaits it, so the node's executor keeps serving cancel requests and other goals even
        when it is a ``SingleThreadedExecutor``."""
        from rclpy.task import Future

        executor = self.executor
        done: Any = Future(executor=executor)

        def run() -> None:
            try:
                outcome: Any = self._execute_blocking(goal_handle)
            except BaseException as exc:
                outcome = exc
            done.set_result(outcome)
            # rclpy resumes an awaiting coroutine only when its executor wakes up for some
            # other reason (Future.__await__ just yields): wake it, or the result waits for the
            # next message or timer of the node (forever in an idle planner)
            if executor is not None:
                executor.wake()

        threading.Thread(target=run, name="planner_goal", daemon=True).start()
        outcome = await done
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _execute_blocking(self, goal_handle: Any) -> Any:
        """Resolve the start state, hand the goal to the worker and wait for its outcome or for
        a stop request (cancel, preemption), whichever comes first."""
        key = bytes(goal_handle.goal_id.uuid)
        result = PlanMotion.Result()
        ctx = self._goals.get(key)
        try:
            if ctx is None:  # not accepted through _on_accepted (cannot happen)
                ctx = GoalContext(goal_handle, key, "?")
                ctx.error = (ErrorCode.INTERNAL_ERROR, "goal was not registered")
            if ctx.error is not None:
                result.error_code, result.message = ctx.error
            else:
                self._serve(ctx, result)
        except Exception as exc:  # never let an exception escape into the executor
            result.error_code, result.message = error_code_for(exc)
            self.get_logger().error(f"goal failed unexpectedly: {result.message}")
        finally:
            if ctx is not None:
                ctx.done.set()
                with self._lock:
                    self._goals.pop(key, None)
                    if self._active is ctx:
                        self._active = None
        self._finish(goal_handle, ctx, result)
        return result

    def _serve(self, ctx: GoalContext, result: Any) -> None:
        pipe = ctx.pipeline
        assert pipe is not None
        try:
            ctx.start = self._start_state(ctx, pipe)
        except PlanningCancelledError:
            self._stopped(ctx, result)
            return
        except GoalError as exc:
            result.error_code, result.message = exc.code, str(exc)
            return
        self._worker.submit(ctx)
        while not ctx.wake.wait(0.05):
            if self._shutting_down or not self.context.ok():
                # rclpy's signal handler shuts the context down without running Python
                # on_shutdown callbacks: notice it here, so executor.shutdown() need not wait
                # for the planner's time limit
                self._shutting_down = True
                ctx.request_stop(ErrorCode.INTERNAL_ERROR, "the planner is shutting down")
            elif not self._worker.is_alive():
                raise GoalError(ErrorCode.INTERNAL_ERROR, "the planning thread has stopped")
        outcome = ctx.outcome
        if outcome is None:  # stopped while queued or while the worker is still busy
            self._stopped(ctx, result)
            return
        for name in ("error_code", "message", "trajectory", "planning_time", "iterations"):
            setattr(result, name, getattr(outcome, name))

    def _run_goal(self, ctx: GoalContext) -> Any:
        """Plan one goal on the worker thread (see :class:`PlanningWorker`)."""
        outcome = PlanMotion.Result()
        if ctx.stop.is_set():
            self._stopped(ctx, outcome)
        else:
            self._plan_goal(ctx, outcome)
        return outcome

    def _stopped(self, ctx: GoalContext, result: Any) -> None:
        if not ctx.stop.is_set():  # the client cancelled before our callback ran
            ctx.request_stop(ErrorCode.CANCELLED, "cancelled by the client")
        result.error_code = ctx.stop_code
        result.message = ctx.stop_message
        result.trajectory = JointTrajectory()

    def _start_state(self, ctx: GoalContext, pipe: Pipeline) -> NDArray[np.float64]:
        req = ctx.request
        assert req is not None
        if req.start is not None:
            return req.start
        timeout = pipe.settings.joint_state_timeout
        deadline = time.monotonic() + timeout
        while True:  # polls the reader (only while a goal waits for a current joint state)
            q, why = self._current_start(pipe.settings.start_state_max_age)
            if q is not None:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise GoalError(
                    ErrorCode.INVALID_GOAL,
                    f"{why} (waited joint_state_timeout {timeout:g} s): publish joint states "
                    "or set use_start and start_positions")
            if ctx.stop.wait(min(left, 0.005)):
                raise PlanningCancelledError("stopped while waiting for a joint state")
        tol = pipe.settings.start_limit_tolerance
        robot = pipe.robot
        if tol > 0:
            inside = (q >= robot.lower - tol) & (q <= robot.upper + tol)
            if np.all(inside):
                q = np.clip(q, robot.lower, robot.upper)
        return q

    def _plan_goal(self, ctx: GoalContext, result: Any) -> None:
        pipe, req = ctx.pipeline, ctx.request
        assert pipe is not None and req is not None
        if pipe.robot is not (self._pipeline.robot if self._pipeline else None):
            raise GoalError(ErrorCode.INTERNAL_ERROR,
                            "the robot model changed after the goal was accepted; send it again")
        handle = ctx.handle
        t0 = time.monotonic()  # planning time: planning, shortening and timing
        period = 1.0 / pipe.settings.feedback_rate
        last_feedback = [-math.inf]

        def feedback(info: ProgressInfo, force: bool = False) -> None:
            now = time.monotonic()
            if not force and now - last_feedback[0] < period:
                return
            last_feedback[0] = now
            fb = PlanMotion.Feedback()
            fb.iterations = int(info.iterations)
            fb.start_tree_size = int(info.start_tree_size)
            fb.goal_tree_size = int(info.goal_tree_size)
            fb.elapsed = float(info.elapsed)
            try:
                handle.publish_feedback(fb)
            except Exception as exc:  # feedback is best effort
                if self.context.ok():
                    self.get_logger().warning(f"feedback not sent: {exc}",
                                              throttle_duration_sec=5.0)

        # set by the cancel callback and by preemption; the planner polls it every ms
        should_stop = ctx.stop.is_set
        planned: Optional[PlanResult] = None
        try:
            q_start = ctx.start if ctx.start is not None else self._start_state(ctx, pipe)
            world = self.world_objects()
            planner = BiRRT(pipe.checker, req.options, world=world)
            planned = planner.plan(q_start, req.goal, time_limit=req.time_limit,
                                   should_stop=ctx.stop, progress=feedback)
            stats = planned.stats
            result.iterations = int(stats.iterations)
            feedback(ProgressInfo(stats.iterations, stats.start_tree_size, stats.goal_tree_size,
                                  stats.planning_time), force=True)
            path = planned.waypoints
            if req.shorten and req.shorten_iterations > 0 and len(path) > 2:
                path = planner.shorten(path, req.shorten_iterations)
            if should_stop():
                raise PlanningCancelledError("stopped after planning")
            timed = time_parameterize_path(
                path, pipe.robot, req.velocity_scaling, req.acceleration_scaling,
                pipe.settings.acceleration_limit, pipe.settings.trajectory_method,
                checker=pipe.checker, world=world,
                ignore_self=req.options.ignore_self_collision,
                resolution=req.options.validation_distance,
                edge_validation=req.options.edge_validation,
                min_clearance=req.options.min_clearance)
            stamp = self.get_clock().now().to_msg() if pipe.settings.stamp_trajectory else None
            result.trajectory = trajectory_to_msg(timed, pipe.frame_id, stamp)
            result.planning_time = time.monotonic() - t0
            result.error_code = ErrorCode.SUCCESS
            duration = float(timed.times[-1]) if len(timed.times) else 0.0
            result.message = (
                f"planned {len(path)} waypoints ({len(timed.times)} trajectory points, "
                f"{duration:.2f} s) in {result.planning_time * 1e3:.0f} ms, "
                f"{stats.iterations} iterations")
            if not should_stop():  # a stopped goal's result is not used: do not show it
                self._publish_path(pipe, densify(path, 0.02), req.end_effector, q_start,
                                   result.trajectory)
        except PlanningCancelledError:
            result.planning_time = time.monotonic() - t0
            self._stopped(ctx, result)
            if not math.isnan(ctx.cancel_time):
                self.last_cancel_latency = time.monotonic() - ctx.cancel_time
        except Exception as exc:
            result.planning_time = time.monotonic() - t0
            result.error_code, result.message = error_code_for(exc)
            err_stats = getattr(exc, "stats", None)
            if err_stats is not None:
                result.iterations = int(err_stats.iterations)
        if result.error_code != ErrorCode.SUCCESS:
            result.trajectory = JointTrajectory()
            self._clear_path()

    def _finish(self, goal_handle: Any, ctx: Optional[GoalContext], result: Any) -> None:
        """Move the goal to its terminal state."""
        code = int(result.error_code)
        name = ErrorCode.name(code)
        label = ctx.label if ctx is not None else "?"
        try:
            if code == ErrorCode.SUCCESS:
                goal_handle.succeed()
                self.stats["succeeded"] += 1
                self.get_logger().info(f"goal {label}: {result.message}")
                return
            if code == ErrorCode.CANCELLED:
                # the server moves the goal to CANCELING right after our cancel callback;
                # wait for it (briefly) so that CANCELED is a legal transition
                deadline = time.monotonic() + 1.0
                while not goal_handle.is_cancel_requested and time.monotonic() < deadline:
                    if not goal_handle.is_active:
                        return
                    time.sleep(0.0005)
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
                self.stats["cancelled"] += 1
                self.get_logger().info(f"goal {label} cancelled: {result.message}")
                return
            goal_handle.abort()
            if code == ErrorCode.PREEMPTED:
                self.stats["preempted"] += 1
            else:
                self.stats["failed"] += 1
            self.get_logger().warning(f"goal {label} aborted ({name}): {result.message}")
        except Exception as exc:  # an illegal transition must not take the node down
            if self._shutting_down or not self.context.ok():
                return  # the action server is gone with the context: nobody to tell
            self.get_logger().error(f"goal {label}: cannot set terminal state {name}: {exc}")

    # ------------------------------------------------------------------ visualisation
    def _publish_path(
        self, pipe: Pipeline, dense: NDArray[np.float64], end_effector: str,
        q_start: NDArray[np.float64], trajectory: JointTrajectory,
    ) -> None:
        try:
            stamp = self.get_clock().now().to_msg()
            markers = self._markers  # used by the worker thread only
            if markers is not None and markers.robot is pipe.robot:
                self._path_pub.publish(
                    markers.build(dense, end_effector, pipe.settings.ghost_poses, stamp))
            if self._display_pub is not None and self._display_types is not None:
                display_cls, robot_traj_cls = self._display_types
                disp = display_cls()
                disp.model_id = pipe.robot.name
                rt = robot_traj_cls()
                rt.joint_trajectory = trajectory
                disp.trajectory = [rt]
                disp.trajectory_start.joint_state.name = list(pipe.robot.joint_names)
                disp.trajectory_start.joint_state.position = [float(v) for v in q_start]
                self._display_pub.publish(disp)
        except Exception as exc:
            if not self.context.ok():
                return
            self.get_logger().error(
                f"path visualisation failed: {type(exc).__name__}: {exc}",
                throttle_duration_sec=5.0)

    def _clear_path(self) -> None:
        try:
            markers = self._markers
            if markers is not None:
                arr = markers.clear(self.get_clock().now().to_msg())
                if arr.markers:
                    self._path_pub.publish(arr)
        except Exception as exc:
            self.get_logger().error(f"clearing the path markers failed: {exc}",
                                    throttle_duration_sec=5.0)

    # ------------------------------------------------------------------ teardown
    def stop_all_goals(self, message: str = "the planner is shutting down") -> None:
        """Stop every running or waiting goal (they end ABORTED with INTERNAL_ERROR)."""
        with self._lock:
            contexts = list(self._goals.values())
        for ctx in contexts:
            ctx.request_stop(ErrorCode.INTERNAL_ERROR, message)

    def _on_context_shutdown(self) -> None:
        # rclpy is shutting down (Ctrl-C, SIGTERM): end the goals now, so that no execute
        # callback keeps the executor's threads busy until its time limit
        self._shutting_down = True
        self.stop_all_goals()

    def destroy_node(self, worker_timeout: float = 10.0) -> None:
        """Stop the goals and the planning thread (waiting up to ``worker_timeout`` s: the
        process must not exit while numba compiles in that thread), then destroy the action
        server and the node."""
        self._shutting_down = True
        self.stop_all_goals()
        if not self._worker.stop(worker_timeout):  # exits after its current job
            self.get_logger().warning(
                f"the planning thread is still busy after {worker_timeout:g} s "
                "(compiling?); destroying the node anyway")
        with contextlib.suppress(Exception):
            self._action_server.destroy()
        super().destroy_node()


def main(args: Optional[list[str]] = None) -> int:
    """``planner`` console script: run the node until Ctrl-C / SIGTERM, in a
    ``SingleThreadedExecutor`` (see "Threading" in the module docstring)."""
    from .bringup import run_nodes

    return run_nodes(lambda: [PlannerNode()], args=args, executor_type="single")


if __name__ == "__main__":
    raise SystemExit(main())

