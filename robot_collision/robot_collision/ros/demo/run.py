"""``make demo`` / ``robot_collision_demo``: arguments, bring-up, client, outputs, exit code."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from ... import default_robot_paths
from ...collision.checker import CollisionChecker
from ...geometry.shapes import WorldObject
from ...model.robot_model import RobotModel
from .bringup_process import BringupProcess, write_demo_params
from .client import Progress
from .figure import format_summary, jsonable, write_csv, write_figure
from .scenario import DemoScenario
from .settings import CAMERA_OBSTACLE, DemoAborted, DemoSettings


# ----------------------------------------------------------------------------- main
def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="robot_collision_demo",
        description="Bring the robot_collision nodes up on the default arm (simulated) and run "
        "a scripted scenario against them; writes a figure and the recorded data.")
    p.add_argument("--fast", action="store_true",
                   help="shorter holds and full-speed plans (for tests and CI)")
    p.add_argument("--output", default="demo_output", metavar="DIR",
                   help="output folder (default: demo_output/)")
    p.add_argument("--no-figure", action="store_true", help="do not draw demo.png")
    p.add_argument("--namespace", default="", metavar="NS",
                   help="run every node in this namespace (isolates concurrent runs on one "
                   "machine; default: the root namespace, as on a real arm)")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="overall time limit in seconds (default: 420, --fast: 280)")
    return p.parse_args(list(argv) if argv is not None else None)


def _load_world(params: dict[str, Any]) -> list[WorldObject]:
    from ..world import WorldModel

    section = (params.get("collision_checker") or {}).get("ros__parameters") or {}
    world_file = str(section.get("world_file") or "")
    model = WorldModel()
    model.use_file(world_file)
    # the client is the judge: it also knows what only the camera shows the nodes (step 5)
    camera = (params.get("mock_camera") or {}).get("ros__parameters") or {}
    hidden = WorldModel()
    if str(camera.get("world_file") or "").strip():
        hidden.use_file(str(camera["world_file"]))
    return list(model.objects()) + list(hidden.objects())


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script ``robot_collision_demo`` (see the module docstring)."""
    args = _parse_args(argv)
    settings = DemoSettings.for_mode(args.fast)
    total_timeout = float(args.timeout) if args.timeout else settings.total_timeout
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    progress = Progress(sys.stdout, t0)

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if not os.environ.get("ROS_DOMAIN_ID"):
        os.environ["ROS_DOMAIN_ID"] = str(random.randint(1, 101))
    mode = "fast" if settings.fast else "normal"
    where = f", namespace /{args.namespace.strip('/')}" if args.namespace.strip("/") else ""
    progress.line(f"robot_collision demo ({mode} mode, ROS_DOMAIN_ID="
                  f"{os.environ['ROS_DOMAIN_ID']}{where}); output in {out}/")

    params_file = out / "demo_params.yaml"
    params, notes = write_demo_params(params_file)
    for note in notes:
        progress.line(f"note: {note}")
    bringup = BringupProcess(params_file, out / "bringup.log", total_timeout + 60.0,
                             args.namespace)
    bringup.start()
    progress.line(f"started the bring-up (pid {bringup.proc.pid if bringup.proc else '?'}): "
                  f"{', '.join(params['bringup']['ros__parameters']['nodes'])}; log in "
                  f"{bringup.log_path}")

    code = 2
    client: Optional[DemoScenario] = None
    abort_reason = ""
    try:
        urdf, srdf = default_robot_paths()
        robot = RobotModel.from_urdf(urdf, srdf=srdf)
        world = _load_world(params)
        # compile / load the kernels the client uses before the clock starts mattering
        CollisionChecker(robot).clearance(robot.home_configuration(), world)
        code, client, abort_reason = _run_client(robot, world, params, settings, progress,
                                                 bringup, t0, t0 + total_timeout, args.namespace)
    except KeyboardInterrupt:
        code, abort_reason = 130, "interrupted"
    finally:
        rc = bringup.stop()
        progress.line(f"bring-up stopped (exit code {rc})")
    if abort_reason:
        progress.line(f"ABORTED: {abort_reason}")
        if code == 2 and bringup.returncode not in (0, None, -2):
            tail = bringup.tail()
            if tail:
                print(f"--- last lines of {bringup.log_path} ---\n{tail}")

    steps = client.steps if client is not None else []
    samples = client.samples if client is not None else []
    expected = ["1", "2", "3a", "3b", "3c", "4a", "4b", "5a", "5b"]
    all_passed = not abort_reason and [s.key for s in steps] == expected \
        and all(s.passed for s in steps)
    if code == 0 and not all_passed:
        code = 1
    files: dict[str, str] = {"params": str(params_file), "bringup_log": str(bringup.log_path)}
    if samples and client is not None:
        write_csv(out / "demo_data.csv", samples, robot.joint_names)
        files["data"] = str(out / "demo_data.csv")
        if not args.no_figure:
            progress.line("drawing the figure ...")
            try:
                sensed = client.sensed_cloud()  # the figure shows the camera's points
                shown = [o for o in world if o.name != CAMERA_OBSTACLE] + (
                    [sensed] if sensed is not None else [])
                write_figure(out / "demo.png", samples, steps, robot, shown, client.safety_env,
                             client.safety_self)
                files["figure"] = str(out / "demo.png")
            except Exception as exc:
                progress.line(f"figure not written: {type(exc).__name__}: {exc}")
                code = code or 1
    duration = time.monotonic() - t0
    summary = {
        "passed": code == 0, "exit_code": code, "mode": mode, "duration_s": duration,
        "ready_s": client.ready_time if client is not None else None,
        "abort_reason": abort_reason or None,
        "ros_domain_id": int(os.environ["ROS_DOMAIN_ID"]),
        "safety_distance_env_m": client.safety_env if client is not None else None,
        "safety_distance_self_m": client.safety_self if client is not None else None,
        "settings": asdict(settings), "params_notes": notes,
        "steps": [asdict(s) for s in steps], "samples": len(samples), "files": files,
    }
    with open(out / "summary.json", "w", encoding="utf-8") as f:
        json.dump(jsonable(summary), f, indent=2)
    print()
    print(format_summary(steps) if steps else "(no step ran)")
    print()
    verdict = "every step behaved as expected" if code == 0 else (
        "SOME STEPS DID NOT BEHAVE AS EXPECTED" if code == 1 else "THE DEMO DID NOT COMPLETE")
    print(f"{verdict} ({duration:.0f} s). Figure, data and summary in {out}/")
    return code


def _run_client(robot: RobotModel, world: list[WorldObject], params: dict[str, Any],
                settings: DemoSettings, progress: Progress, bringup: BringupProcess,
                t0: float, deadline: float,
                namespace: str = "") -> tuple[int, Optional[DemoScenario], str]:
    """Start rclpy and the client node, run the scenario in a worker thread while this (main)
    thread spins; returns (exit code, client, abort reason)."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    rclpy.init(args=["robot_collision_demo"])
    stop = threading.Event()
    client: Optional[DemoScenario] = None
    executor: Optional[SingleThreadedExecutor] = None
    worker: Optional[threading.Thread] = None
    failure: list[BaseException] = []
    abort_reason = ""
    code = 0
    try:
        client = DemoScenario(robot, world, params, settings, progress, stop, bringup, t0,
                            namespace)
        executor = SingleThreadedExecutor()
        executor.add_node(client.node)

        def scenario() -> None:
            assert client is not None
            try:
                client.run_scenario()
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=scenario, name="demo-scenario", daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                executor.spin_once(timeout_sec=0.05)
                if time.monotonic() > deadline:
                    abort_reason = "overall time limit reached"
                    code = 2
                    break
                if not rclpy.ok():
                    abort_reason, code = "interrupted", 130
                    break
        except (KeyboardInterrupt, ExternalShutdownException):
            abort_reason, code = "interrupted", 130
        stop.set()
        if worker.is_alive():
            # let the scenario notice the stop while callbacks still run
            end = time.monotonic() + 10.0
            with contextlib.suppress(Exception):
                while worker.is_alive() and time.monotonic() < end and rclpy.ok():
                    executor.spin_once(timeout_sec=0.05)
        if failure and not abort_reason:
            exc = failure[0]
            code = 2
            abort_reason = str(exc) if isinstance(exc, DemoAborted) else \
                f"{type(exc).__name__}: {exc}"
    finally:
        rclpy.try_shutdown()
        if worker is not None:
            worker.join(10.0)
        if executor is not None:
            with contextlib.suppress(Exception):
                executor.shutdown(timeout_sec=5.0)
        if client is not None:
            with contextlib.suppress(Exception):
                client.node.destroy_node()
    return code, client, abort_reason


if __name__ == "__main__":
    raise SystemExit(main())
