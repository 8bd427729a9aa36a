"""``robot_collision_bringup``: start the robot_collision nodes in one process.

This does what ``launch/robot_collision.launch.py`` does on a full ROS install, for machines
without ``launch_ros``: it reads the same parameter file (``config/robot_collision.yaml`` unless
``--params-file`` is given), creates the nodes it lists under ``bringup: ros__parameters: nodes``
(or ``--nodes``) with their sections' parameters as overrides, and spins them together in one
executor per node, each on its own thread (``executor: isolated``, the default; ``multi`` = one
``MultiThreadedExecutor`` for all, ``single`` = one ``SingleThreadedExecutor``; see
:func:`run_nodes` for why), the main thread spinning the first, until Ctrl-C, SIGTERM or
``--duration`` seconds.
``gc.freeze()`` after start-up keeps the start-up objects out of garbage-collector pauses.

Nodes are looked up by name in :data:`NODE_REGISTRY` (``{name: "module:Class"}``) and imported
lazily; a node whose module is not there (yet) is skipped with a warning. A node class takes
keyword arguments for ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ...).

Examples::

    robot_collision_bringup
    robot_collision_bringup --urdf my_arm.urdf --srdf my_arm.srdf --nodes collision_checker
    robot_collision_bringup --params-file my.yaml --duration 10 --ros-args --log-level debug
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

__all__ = [
    "NODE_REGISTRY",
    "DEFAULT_NODES",
    "default_params_file",
    "load_params_file",
    "node_parameters",
    "to_parameter_overrides",
    "resolve_node_class",
    "run_nodes",
    "main",
]

EXECUTOR_TYPES = ("isolated", "multi", "single")
"""How bring-up spins its nodes (see :func:`run_nodes`)."""

NODE_REGISTRY: dict[str, str] = {
    "collision_checker": "robot_collision.ros.checker_node:CollisionCheckerNode",
    "velocity_filter": "robot_collision.ros.filter_node:VelocityFilterNode",
    "planner": "robot_collision.ros.planner_node:PlannerNode",
    "mock_arm": "robot_collision.ros.mock_arm:MockArmNode",
    "mock_camera": "robot_collision.ros.mock_camera:MockCameraNode",
}
"""Node name → ``"module:Class"`` of every node bringup can start."""

DEFAULT_NODES = ["collision_checker"]
"""Nodes started when neither ``--nodes`` nor the parameter file's bringup section says."""


def default_params_file() -> Path:
    """The package's ``config/robot_collision.yaml`` (source tree or installed share)."""
    from .. import data_path

    return data_path("config", "robot_collision.yaml")


def load_params_file(path: os.PathLike[str] | str) -> dict[str, Any]:
    """Parsed ROS 2 parameter file (``{node: {ros__parameters: {...}}}``)."""
    import yaml

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, Mapping):
        raise ValueError(f"parameter file {str(path)!r} must map node names to sections")
    return dict(data)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def node_parameters(data: Mapping[str, Any], node_name: str, namespace: str = "") -> dict[str, Any]:
    """Flat parameters (nested keys joined with '.') of ``node_name`` in a parameter file.

    Sections apply in the order ROS applies them: ``/**`` (every node), then the node's own
    section (``name``, ``/name`` or ``/namespace/name``).
    """
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    keys = ["/**", "**", node_name, "/" + node_name]
    if ns:
        keys.append(f"{ns}/{node_name}")
    out: dict[str, Any] = {}
    for key in keys:
        section = data.get(key)
        if not isinstance(section, Mapping):
            continue
        params = section.get("ros__parameters")
        if isinstance(params, Mapping):
            _flatten("", params, out)
    return out


def _parameter_value(value: Any) -> Any:
    """A YAML value as a ROS parameter value (mixed int/float lists become floats)."""
    if isinstance(value, (list, tuple)):
        items = list(value)
        if items and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            if any(isinstance(v, float) for v in items):
                return [float(v) for v in items]
        return items
    return value


def to_parameter_overrides(params: Mapping[str, Any]) -> list[Any]:
    """``rclpy.parameter.Parameter`` list; empty lists are left out (their type is unknown,
    the node's default applies)."""
    from rclpy.parameter import Parameter

    out = []
    for name, value in params.items():
        v = _parameter_value(value)
        if v is None or (isinstance(v, list) and not v):
            continue
        out.append(Parameter(name, value=v))
    return out


def resolve_node_class(name: str, registry: Mapping[str, str] = NODE_REGISTRY) -> Optional[type]:
    """The node class registered as ``name``; None when its module does not exist (yet).

    Raises ``KeyError`` for a name that is not registered, and re-raises import errors coming
    from inside an existing module (a broken module must not look like a missing one).
    """
    spec = registry[name]
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            return None
        raise
    cls = getattr(module, class_name, None)
    return cls if isinstance(cls, type) else None


def run_nodes(
    factory: Callable[[], Sequence[Any]],
    args: Optional[list[str]] = None,
    duration: Optional[float] = None,
    num_threads: Optional[int] = None,
    executor_type: str = "multi",
) -> int:
    """Initialise rclpy, create the nodes with ``factory()``, spin them in this (main) thread
    until shutdown (Ctrl-C, SIGTERM) or ``duration`` seconds, then tear everything down.

    ``executor_type``: ``"multi"`` (one ``MultiThreadedExecutor``: callback groups of different
    nodes run concurrently), ``"single"`` (one ``SingleThreadedExecutor``: every callback in
    turn) or ``"isolated"`` (one ``SingleThreadedExecutor`` per node, each on its own thread).
    Measured here with the four nodes: a ``MultiThreadedExecutor`` in the process (even one
    serving only the idle planner) starved the other threads of the GIL, so ``/joint_states``
    from the mock arm came in bursts with gaps up to 0.9 s and the velocity filter stopped the
    arm as stale; with ``isolated`` the 100 Hz stream had gaps below 15 ms. ``isolated`` is
    the default in ``config/robot_collision.yaml``. Returns a process exit code."""
    import rclpy
    from rclpy.executors import (
        ExternalShutdownException,
        MultiThreadedExecutor,
        SingleThreadedExecutor,
    )

    from .entry import stop_requested
    from .heap import release_large_allocations

    if stop_requested():  # SIGINT/SIGTERM while the process was importing
        return 0
    release_large_allocations()  # a burst of oversized messages must not stay resident
    rclpy.init(args=args)
    nodes: list[Any] = []
    executors: list[Any] = []
    threads: list[threading.Thread] = []
    code = 0
    try:
        nodes = list(factory())
        if stop_requested():  # ... or while the nodes were starting
            return 0
        if not nodes:
            print("robot_collision: no node to run", file=sys.stderr)
            return 1
        # Everything allocated so far (modules, models, compiled kernels) lives as long as the
        # process: keep it out of the garbage collector's scans, which otherwise pause the
        # callbacks for milliseconds.
        gc.collect()
        gc.freeze()
        if executor_type == "isolated":
            # one SingleThreadedExecutor per node, each spun by its own thread (the first in
            # this thread): a node's callbacks never wait behind another node's, and rclpy's
            # per-callback cost stays that of the single-threaded executor (the planner's
            # action server runs its blocking part off the executor, so it needs no threads)
            for node in nodes:
                ex: Any = SingleThreadedExecutor()
                ex.add_node(node)
                executors.append(ex)
        elif executor_type == "single":
            executors.append(SingleThreadedExecutor())
        else:
            executors.append(
                MultiThreadedExecutor(num_threads=num_threads or max(2, os.cpu_count() or 2))
            )
        if executor_type != "isolated":
            for node in nodes:
                executors[0].add_node(node)
        for ex in executors[1:]:
            t = threading.Thread(target=_spin_quietly, args=(ex,), daemon=True)
            t.start()
            threads.append(t)
        main_executor = executors[0]
        deadline = None if duration is None else time.monotonic() + max(0.0, duration)
        while rclpy.ok():
            if deadline is None:
                main_executor.spin()
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            main_executor.spin_once(timeout_sec=min(0.1, left))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        if rclpy.ok() and not stop_requested():
            print(f"robot_collision: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
        # else: SIGINT/SIGTERM shut the context down while the executor was waiting; rclpy
        # then raises RCLError ("context is not valid") instead of ExternalShutdownException
    finally:
        # shared/docs/ros2-from-pypi.md: rclpy.try_shutdown(), then join the spin threads, then
        # executor.shutdown() (the reverse aborted the process); nodes are destroyed once
        # nothing spins them any more. A second Ctrl-C (without robot_collision.ros.entry's
        # handlers) must not turn the teardown into a traceback.
        with contextlib.suppress(KeyboardInterrupt):
            _tear_down(nodes, executors, threads)
    return code


def _tear_down(nodes: list[Any], executors: list[Any], threads: list[threading.Thread]) -> None:
    import rclpy

    # rclpy's signal handler may shut the context down between try_shutdown's ok() check and
    # its shutdown() (SIGINT during teardown): "rcl_shutdown already called" is that race
    with contextlib.suppress(Exception):
        rclpy.try_shutdown()
    for t in threads:
        t.join(timeout=10.0)
    for node in nodes:
        with contextlib.suppress(Exception):
            node.destroy_node()
    for ex in executors:
        with contextlib.suppress(Exception):
            ex.shutdown()


def _spin_quietly(executor: Any) -> None:
    """Spin ``executor`` until rclpy shuts down (a spin thread of the isolated mode)."""
    from rclpy.executors import ExternalShutdownException

    with contextlib.suppress(ExternalShutdownException, KeyboardInterrupt):
        executor.spin()


def _split_nodes(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out += [p.strip() for p in str(v).split(",") if p.strip()]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    """Console script ``robot_collision_bringup`` (see the module docstring)."""
    from rclpy.utilities import remove_ros_args

    raw = list(sys.argv if argv is None else [sys.argv[0], *argv])
    parser = argparse.ArgumentParser(
        prog="robot_collision_bringup",
        description="Start the robot_collision nodes in one process (launch file stand-in).",
    )
    parser.add_argument("--params-file", help="ROS 2 parameter file (default: the package's "
                        "config/robot_collision.yaml)")
    parser.add_argument("--urdf", help="robot URDF path (overrides urdf_path for every node; "
                        "default: the file's urdf_path, else the package's default arm)")
    parser.add_argument("--srdf", help="robot SRDF path (overrides srdf_path for every node)")
    parser.add_argument("--nodes", nargs="+", metavar="NODE",
                        help=f"nodes to start (space or comma separated) from: "
                        f"{', '.join(NODE_REGISTRY)}")
    parser.add_argument("--namespace", default="", help="namespace of every node")
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.add_argument("--executor", choices=list(EXECUTOR_TYPES),
                        help="isolated: one SingleThreadedExecutor per node, each on its own "
                        "thread; multi: one MultiThreadedExecutor for all; single: one "
                        "SingleThreadedExecutor for all; default: the file's bringup executor, "
                        "else isolated")
    parser.add_argument("--threads", type=int, help="executor threads (default: max(2, cores))")
    opts = parser.parse_args(remove_ros_args(raw)[1:])

    params_path = Path(opts.params_file) if opts.params_file else default_params_file()
    try:
        data = load_params_file(params_path)
    except (OSError, ValueError) as exc:
        print(f"robot_collision_bringup: cannot read {str(params_path)!r}: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"robot_collision_bringup: {str(params_path)!r} is not valid YAML: {exc}",
              file=sys.stderr)
        return 2

    bringup_params = node_parameters(data, "bringup")
    executor_type = opts.executor or str(bringup_params.get("executor", "isolated"))
    if executor_type not in EXECUTOR_TYPES:
        print(f"robot_collision_bringup: bringup executor must be one of "
              f"{', '.join(EXECUTOR_TYPES)}, got {executor_type!r}", file=sys.stderr)
        return 2
    if opts.nodes:
        names = _split_nodes(opts.nodes)
    else:
        listed = bringup_params.get("nodes")
        names = _split_nodes(listed) if isinstance(listed, list) and listed else DEFAULT_NODES
    unknown = [n for n in names if n not in NODE_REGISTRY]
    if unknown:
        print(f"robot_collision_bringup: unknown nodes {unknown}; choose from "
              f"{', '.join(NODE_REGISTRY)}", file=sys.stderr)
        return 2

    from .robot_loader import RobotLoader

    default_urdf, default_srdf = RobotLoader.default_paths()

    def factory() -> list[Any]:
        import rclpy.logging

        log = rclpy.logging.get_logger("robot_collision_bringup")
        nodes = []
        for name in names:
            cls = resolve_node_class(name)
            if cls is None:
                log.warning(f"node {name!r} is not available ({NODE_REGISTRY[name]} not found); "
                            "skipping it")
                continue
            params = node_parameters(data, name, opts.namespace)
            if opts.urdf:
                params["urdf_path"] = str(Path(opts.urdf).resolve())
                params.pop("robot_description", None)
            elif not params.get("robot_description") and not params.get("urdf_path"):
                params["urdf_path"] = str(default_urdf)
                if default_srdf is not None and not params.get("srdf_path"):
                    params["srdf_path"] = str(default_srdf)
            if opts.srdf:
                params["srdf_path"] = str(Path(opts.srdf).resolve())
                params.pop("robot_description_semantic", None)
            kwargs: dict[str, Any] = {"parameter_overrides": to_parameter_overrides(params)}
            if opts.namespace:
                kwargs["namespace"] = opts.namespace
            nodes.append(cls(**kwargs))
            log.info(f"started {name} ({len(params)} parameters from {params_path.name})")
        return nodes

    return run_nodes(factory, args=raw, duration=opts.duration, num_threads=opts.threads,
                     executor_type=executor_type)


if __name__ == "__main__":
    raise SystemExit(main())
