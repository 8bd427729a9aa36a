"""Robot model loading shared by the robot_collision nodes.

:class:`RobotLoader` declares the robot parameters on a node and builds the
:class:`~robot_collision.model.robot_model.RobotModel` from the first source that is set:

1. parameter ``robot_description`` (URDF XML, as launch files pass it), else
2. parameter ``urdf_path`` (file path or ``package://pkg/path``), else
3. the ``robot_description`` topic (``std_msgs/String``, reliable + transient-local QoS, as
   ``robot_state_publisher`` publishes it); the node waits for it.

The SRDF (optional) comes from ``robot_description_semantic`` (XML), else ``srdf_path``, else the
``robot_description_semantic`` topic (as MoveIt's move_group publishes it). The node subscribes
to a description topic only while it can use it (the URDF topic while the robot does not come
from the parameters, the SRDF topic while no SRDF parameter is set), and checks each message's
size (``max_message_bytes``) before deserializing it.

Errors never stop the node: a malformed (or oversized, see ``limits``) description is logged with
the parser's reason and the previous model (if any) stays in use. A new description on the
topic, or a parameter change, is tried again; a parameter change that does not load is rejected
with the reason. A bad SRDF with a good URDF is logged and the URDF is used alone. What a loaded
description had dropped or defaulted (its load report) is logged as warnings.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

from ..errors import RobotCollisionError
from ..load_limits import LoadLimits
from ..model.robot_model import RobotModel
from .intake import DEFAULT_MESSAGE_LIMITS, MessageLimits, MessageRejectedError, checked_callback
from .wiring import type_empty_list
from .world import resolve_resource_path

__all__ = ["RobotLoader", "build_robot_model", "ROBOT_PARAMETERS"]

ROBOT_PARAMETERS = (
    "robot_description",
    "robot_description_semantic",
    "urdf_path",
    "srdf_path",
    "package_dirs",
)


def _read_source(value: str, what: str) -> str:
    """XML text or a path (``package://`` allowed) to pass to the core parser."""
    text = value.strip()
    if text.startswith("<"):
        return value
    return str(resolve_resource_path(text))


def build_robot_model(
    urdf: str,
    srdf: str = "",
    package_dirs: Sequence[str] = (),
    limits: Optional[LoadLimits] = None,
) -> tuple[RobotModel, Optional[str]]:
    """(model, SRDF error or None) from URDF and SRDF, each XML text or a path.

    Raises :class:`~robot_collision.errors.RobotCollisionError` when the URDF does not load. A
    failing SRDF does not raise: the model is built without it and the error text is returned.
    ``limits`` caps the files (defaults when None). What the loader dropped or defaulted is in
    ``model.load_report`` (no Python warnings are issued: the caller logs the report).
    """
    if not urdf.strip():
        raise RobotCollisionError("the robot description is empty")
    dirs = [str(d) for d in package_dirs if str(d).strip()] or None
    try:
        model = RobotModel.from_urdf(
            _read_source(urdf, "URDF"), package_dirs=dirs, limits=limits, warn=False
        )
    except RobotCollisionError:
        raise
    except Exception as exc:
        raise RobotCollisionError(f"cannot load the URDF: {type(exc).__name__}: {exc}") from exc
    if not srdf.strip():
        return model, None
    try:
        with_srdf = RobotModel.from_urdf(
            _read_source(urdf, "URDF"), srdf=_read_source(srdf, "SRDF"), package_dirs=dirs,
            limits=limits, warn=False,
        )
    except Exception as exc:
        return model, f"{type(exc).__name__}: {exc}"
    return with_srdf, None


_PYTHON_PACKAGE_DIRS = re.compile(r"package_dirs=\{'(?P<pkg>[^']+)'")


def node_advice(text: str) -> str:
    """An error of the core as a node's user needs it: the core's advice for a package:// URI
    outside the ament index ends with how to pass the folder in Python (``package_dirs={'pkg':
    ...}``) or the CLI; a node is configured with its ``package_dirs`` parameter (or the launch
    argument). That advice is replaced by the node's."""
    m = _PYTHON_PACKAGE_DIRS.search(text)
    if m is None:
        return text
    pkg = m.group("pkg")
    cut = text.rfind("pass ", 0, m.start())
    if cut < 0:
        cut = text.rfind("(", 0, m.start())
    head = text[:cut].rstrip(" ;,(") if cut >= 0 else text[: m.start()]
    return (
        f"{head}; set the parameter package_dirs to the folder that contains the folder "
        f"{pkg!r} (e.g. package_dirs: [\"/home/me/ws/src\"] in the parameter file, "
        f"package_dirs:=/home/me/ws/src with robot_collision.launch.py, or "
        f"ros2 param set <node> package_dirs \"['/home/me/ws/src']\" while it runs), or build "
        f"and source the workspace that has {pkg!r}"
    )


class RobotLoader:
    """Declares the robot parameters on ``node`` and delivers each loaded model to ``on_model``.

    ``on_model(model, source)`` is called from the thread that loaded the model (the
    constructor's caller in :meth:`start`, a parameter service thread or a topic callback);
    ``source`` says where the model came from. Call :meth:`start` once the node is ready to
    receive a model. ``callback_group`` is used for the description subscriptions. ``limits``
    caps what a description may bring in (file sizes, links, meshes; defaults when None): a
    description over a cap is refused like a malformed one. Descriptions on the topics are
    size-checked with ``message_limits()`` (the node's caps on incoming messages) before they
    are deserialized.
    """

    def __init__(
        self,
        node: Any,
        on_model: Callable[[RobotModel, str], None],
        callback_group: Any = None,
        limits: Optional[LoadLimits] = None,
        message_limits: Callable[[], MessageLimits] = lambda: DEFAULT_MESSAGE_LIMITS,
    ) -> None:
        from rcl_interfaces.msg import (  # type: ignore[import-untyped,unused-ignore]
            ParameterDescriptor,
        )

        self._node = node
        self._on_model = on_model
        self.limits = limits
        self._callback_group = callback_group
        self._message_limits = message_limits
        self._lock = threading.RLock()
        self.model: Optional[RobotModel] = None
        self.source = ""
        self._from_parameters = False
        self._topic_urdf = ""
        self._topic_srdf = ""
        self._subs: dict[str, Any] = {}  # "urdf" / "srdf": the description subscriptions
        self._wait_timer: Any = None
        self._resubscribe_timer: Any = None
        self._started = False

        def desc(text: str, read_only: bool = False) -> Any:
            # dynamic typing: a mistyped value in a parameter file must not abort the node
            return ParameterDescriptor(description=text, read_only=read_only, dynamic_typing=True)

        node.declare_parameter(
            "robot_description", "",
            desc("Robot URDF as XML text (first choice of robot source; empty = unused)."),
        )
        node.declare_parameter(
            "urdf_path", "",
            desc("URDF file path or package://pkg/path, used when robot_description is empty."),
        )
        node.declare_parameter(
            "robot_description_semantic", "",
            desc("Robot SRDF as XML text (disabled collision pairs, groups); optional."),
        )
        node.declare_parameter(
            "srdf_path", "",
            desc("SRDF file path or package://pkg/path, used when robot_description_semantic "
                 "is empty; optional."),
        )
        node.declare_parameter(
            "package_dirs", [],
            desc("Extra folders that contain packages, to resolve package:// mesh URIs "
                 "without the ament index."),
        )
        node.declare_parameter(
            "robot_description_topic", "robot_description",
            desc("Topic (std_msgs/String, transient local) to wait on for the URDF when neither "
                 "robot_description nor urdf_path is set, and for the SRDF on the same name + "
                 "'_semantic'; empty = do not subscribe.", read_only=True),
        )
        node.declare_parameter(
            "load_limits", [],
            desc("Size caps on loaded robot descriptions, meshes and world files, as "
                 "'name=value' entries overriding the defaults of robot_collision.LoadLimits "
                 "(e.g. 'max_urdf_bytes=20000000', 'max_mesh_vertices=10000000'); read at "
                 "start-up.", read_only=True),
        )
        # typed empty string arrays, not byte arrays (ros2 param describe / dump; wiring)
        for name in ("package_dirs", "load_limits"):
            type_empty_list(node, name)
        if limits is None:
            entries = [e for e in (self._param("load_limits", []) or []) if str(e).strip()]
            try:
                self.limits = LoadLimits.from_strings(entries)
            except RobotCollisionError as exc:
                node.get_logger().error(f"invalid load_limits, using the defaults: {exc}")
                self.limits = LoadLimits()
        node.add_on_set_parameters_callback(self._on_set_parameters)

    # ------------------------------------------------------------------ parameters
    def _param(self, name: str, default: Any = "") -> Any:
        try:
            value = self._node.get_parameter(name).value
        except Exception:
            return default
        return default if value is None else value

    def _values(self, overrides: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        vals = {n: self._param(n, [] if n == "package_dirs" else "") for n in ROBOT_PARAMETERS}
        if overrides:
            vals.update({k: v for k, v in overrides.items() if k in vals})
        for k, v in vals.items():
            if k == "package_dirs":
                vals[k] = [str(d) for d in v] if isinstance(v, (list, tuple)) else []
            else:
                vals[k] = "" if v is None else str(v)
        return vals

    @staticmethod
    def _param_urdf(vals: dict[str, Any]) -> tuple[str, str]:
        if str(vals["robot_description"]).strip():
            return str(vals["robot_description"]), "parameter robot_description"
        if str(vals["urdf_path"]).strip():
            return str(vals["urdf_path"]), f"urdf_path {vals['urdf_path']!r}"
        return "", ""

    def _srdf_for(self, vals: dict[str, Any]) -> tuple[str, str]:
        if str(vals["robot_description_semantic"]).strip():
            return str(vals["robot_description_semantic"]), "parameter robot_description_semantic"
        if str(vals["srdf_path"]).strip():
            return str(vals["srdf_path"]), f"srdf_path {vals['srdf_path']!r}"
        if self._topic_srdf:
            return self._topic_srdf, "topic robot_description_semantic"
        return "", ""

    def _on_set_parameters(self, params: list[Any]) -> Any:
        from rcl_interfaces.msg import (  # type: ignore[import-untyped,unused-ignore]
            SetParametersResult,
        )

        changed = {p.name: p.value for p in params if p.name in ROBOT_PARAMETERS}
        if not changed:
            return SetParametersResult(successful=True)
        if not self._started:
            return SetParametersResult(successful=True)  # start() reads the values
        vals = self._values(changed)
        urdf, source = self._param_urdf(vals)
        from_parameters = bool(urdf)
        if not urdf and self._topic_urdf:
            urdf, source = self._topic_urdf, "topic robot_description"
        if not urdf:
            with self._lock:
                self._from_parameters = False
            self._node.get_logger().info(
                "no robot source in the parameters: keeping the current model; a description "
                "on the robot_description topic will replace it"
            )
            self._resubscribe_soon()
            return SetParametersResult(successful=True)
        try:
            self._load(urdf, source, vals, from_parameters=from_parameters, raise_errors=True)
        except RobotCollisionError as exc:
            return SetParametersResult(successful=False, reason=f"robot not loaded: {exc}")
        self._resubscribe_soon()
        return SetParametersResult(successful=True)

    def _resubscribe_soon(self) -> None:
        """Update the description subscriptions once the parameter change is in force (the
        parameter callback runs before the node's values change)."""
        def once() -> None:
            timer, self._resubscribe_timer = self._resubscribe_timer, None
            if timer is not None:
                self._node.destroy_timer(timer)
            self._subscribe()

        if self._resubscribe_timer is None:
            self._resubscribe_timer = self._node.create_timer(
                0.05, once, callback_group=self._callback_group)

    # ------------------------------------------------------------------ loading
    def start(self) -> Optional[RobotModel]:
        """Load from the parameters now; otherwise (or on error) wait for the topic."""
        self._started = True
        vals = self._values()
        urdf, source = self._param_urdf(vals)
        if urdf:
            self._load(urdf, source, vals, from_parameters=True, raise_errors=False)
        self._subscribe()
        if self.model is None:
            self._start_wait_reminder()
        return self.model

    def _subscribe(self) -> None:
        """Subscribe to the description topics the node can use now, unsubscribe from the
        others: the URDF topic only while the robot does not come from the parameters, the SRDF
        topic only while no SRDF parameter is set. A node configured by parameters then takes
        no traffic from these topics (a 70 MB description on them used to stall every node's
        DDS reception for seconds before being refused)."""
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        topic = str(self._param("robot_description_topic", "robot_description")).strip()
        vals = self._values()
        wanted = {
            "urdf": bool(topic) and not self._from_parameters,
            "srdf": bool(topic) and not (str(vals["robot_description_semantic"]).strip()
                                         or str(vals["srdf_path"]).strip()),
        }
        qos = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        for key, name, callback in (("urdf", topic, self._on_description),
                                    ("srdf", topic + "_semantic", self._on_semantic)):
            sub = self._subs.get(key)
            if wanted[key] and sub is None:
                self._subs[key] = self._node.create_subscription(
                    String, name,
                    checked_callback(String, callback, self._message_limits, self._on_refused,
                                     "robot_description" if key == "urdf"
                                     else "robot_description_semantic"),
                    qos, callback_group=self._callback_group, raw=True)
            elif not wanted[key] and sub is not None:
                del self._subs[key]
                self._node.destroy_subscription(sub)

    def _start_wait_reminder(self) -> None:
        sub = self._subs.get("urdf")
        topic = sub.topic_name if sub is not None else None

        def remind() -> None:
            if self.model is not None:
                self._stop_wait_reminder()
                return
            vals = self._values()
            if str(vals["robot_description"]).strip() or str(vals["urdf_path"]).strip():
                return  # it is set but did not load: the error was logged (and says the fix)
            where = f"publish it on {topic} or " if topic else ""
            self._node.get_logger().warning(
                f"no robot model yet: {where}set the robot_description or urdf_path parameter"
            )

        if topic:
            self._node.get_logger().info(f"waiting for the robot description on {topic}")
        self._wait_timer = self._node.create_timer(
            5.0, remind, callback_group=self._callback_group)

    def _stop_wait_reminder(self) -> None:
        """Destroy the reminder timer (a destroyed timer leaves the executor's wait set)."""
        timer, self._wait_timer = self._wait_timer, None
        if timer is not None:
            self._node.destroy_timer(timer)

    def _load(
        self, urdf: str, source: str, vals: dict[str, Any], from_parameters: bool,
        raise_errors: bool,
    ) -> None:
        srdf, srdf_source = self._srdf_for(vals)
        log = self._node.get_logger()
        try:
            model, srdf_error = build_robot_model(
                urdf, srdf, list(vals["package_dirs"] or []), self.limits
            )
        except RobotCollisionError as exc:
            keep = "keeping the previous model" if self.model is not None else "no robot model yet"
            log.error(f"cannot load the robot from {source}: {node_advice(str(exc))} ({keep})")
            if raise_errors:
                raise
            return
        if srdf_error:
            log.error(
                f"cannot load the SRDF from {srdf_source}: {srdf_error}; using the URDF without "
                "SRDF (no disabled collision pairs)"
            )
            srdf_source = ""
        full_source = source + (f" + {srdf_source}" if srdf_source else "")
        for note in model.load_report.notes:
            log.warning(f"robot description from {full_source}: {note}")
        with self._lock:
            self.model = model
            self.source = full_source
            self._from_parameters = from_parameters
        log.info(
            f"robot {model.name!r} loaded from {full_source}: {model.num_joints} joints, "
            f"{model.num_bodies} bodies, base {model.base_name!r}"
        )
        self._stop_wait_reminder()
        try:
            self._on_model(model, full_source)
        except Exception as exc:
            log.error(f"the node could not use the new robot model: {type(exc).__name__}: {exc}")
            if raise_errors:
                raise RobotCollisionError(str(exc)) from exc

    def _on_refused(self, exc: MessageRejectedError) -> None:
        keep = "keeping the current model" if self.model is not None else "no robot model yet"
        self._node.get_logger().error(f"{exc} ({keep})", throttle_duration_sec=1.0)

    def _on_description(self, msg: Any) -> None:
        try:
            text = str(msg.data)
            if self._from_parameters:
                self._node.get_logger().info(
                    "ignoring the robot_description topic: the robot comes from parameters",
                    once=True,
                )
                return
            if text == self._topic_urdf and self.model is not None:
                return
            self._topic_urdf = text
            self._load(text, "topic robot_description", self._values(), False, False)
        except Exception as exc:
            self._node.get_logger().error(f"robot_description callback failed: {exc}")

    def _on_semantic(self, msg: Any) -> None:
        try:
            text = str(msg.data)
            if text == self._topic_srdf:
                return
            self._topic_srdf = text
            vals = self._values()
            if str(vals["robot_description_semantic"]).strip() or str(vals["srdf_path"]).strip():
                return  # the SRDF parameters win
            if self._from_parameters:
                urdf, source = self._param_urdf(vals)
            else:
                urdf, source = self._topic_urdf, "topic robot_description"
            if urdf:
                self._load(urdf, source, vals, self._from_parameters, False)
        except Exception as exc:
            self._node.get_logger().error(f"robot_description_semantic callback failed: {exc}")

    @staticmethod
    def default_paths() -> tuple[Path, Optional[Path]]:
        """(URDF, SRDF or None) of the package's default arm."""
        from .. import default_robot_paths

        urdf, srdf = default_robot_paths()
        return urdf, (srdf if srdf.is_file() else None)
