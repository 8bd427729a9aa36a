"""Soak the robot_collision nodes: minutes of normal traffic, watching memory, CPU and errors.

The four nodes run as separate processes with the package's parameter file (as ``ros2 launch``
starts them; :mod:`ros_procs`; mock arm and filter at the configured 100 Hz). After they are up
and ``warmup`` seconds have passed:

1. idle (``idle`` s): nothing is commanded; the CPU each node uses is its idle cost (the
   filter and the mock arm still tick at their rate, the checker computes a clearance table per
   joint state, the planner waits for goals);
2. load (``minutes``): velocity commands stream to the filter at ``command_rate`` Hz (small
   sinusoids on every joint, tagged with their sequence number), and a planning goal goes to
   the planner every ``goal_period`` s (alternating between two configurations). Every filter
   output is checked (non-finite, over the velocity limit, non-zero on a fault); each node's
   RSS is sampled every ``sample_period`` s.

Keys: per node ``idle_cpu_pct`` / ``load_cpu_pct`` (% of one core), ``rss_mb_start`` /
``rss_mb_end``, ``rss_growth_mb_per_min`` (least-squares slope of the RSS samples of the load
phase after its first ``settle`` fraction), ``errors_logged`` (ERROR/FATAL lines), ``alive``;
``commands_sent``, ``outputs_received``, ``outputs_matched`` (outputs of our commands),
``filter_outputs`` (violations, must be 0), ``goals_sent`` / ``goals_succeeded``,
``max_rss_growth_mb_per_min`` (target <= 0.1 over 30 min), ``loadavg_1min`` at the end (other
jobs on the machine inflate CPU figures).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from ros_procs import (  # noqa: E402
    NodeProcesses,
    OutputCheck,
    errors_logged,
    ros_environment,
    send_goal,
)

__all__ = ["run", "soak"]

NODES = ("collision_checker", "velocity_filter", "planner", "mock_arm")
GOALS = ([0.2, 0.3, 0.0, -0.3, 0.0, 0.5, 0.0], [-0.2, 0.4, 0.1, -0.5, 0.0, 0.6, 0.0])


def _slope_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope (per minute) of (time s, value) samples; nan with fewer than 3."""
    if len(samples) < 3:
        return math.nan
    t = np.array([s[0] for s in samples]) / 60.0
    v = np.array([s[1] for s in samples])
    return float(np.polyfit(t - t.mean(), v, 1)[0])


def soak(minutes: float = 10.0, idle: float = 20.0, warmup: float = 30.0,
         command_rate: float = 100.0, goal_period: float = 60.0, sample_period: float = 10.0,
         settle: float = 0.2) -> dict[str, Any]:
    """Run the soak (see the module docstring); returns the result dictionary."""
    ros_environment()
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    from robot_collision import RobotModel, default_robot_paths
    from robot_collision_interfaces.action import PlanMotion
    from robot_collision_interfaces.msg import FilterStatus

    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    joints = list(robot.joint_names)
    n = len(joints)
    procs = NodeProcesses(NODES)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    node = rclpy.create_node("soak", context=ctx)
    executor.add_node(node)
    judge = OutputCheck(robot.velocity_limits)
    lock = threading.Lock()
    counts = {"sent": 0, "received": 0, "matched": 0}
    sent_labels: set[str] = set()
    status: dict[str, Any] = {"msg": None}
    stop = threading.Event()
    threads: list[threading.Thread] = []
    result: dict[str, Any] = {}
    try:
        procs.start()
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        cmd_pub = node.create_publisher(Float64MultiArray, "velocity_filter/command", reliable)

        def on_output(raw: bytes) -> None:
            msg = deserialize_message(raw, Float64MultiArray)
            judge.check(msg.data, bool(msg.layout.dim))
            with lock:
                counts["received"] += 1
                if msg.layout.dim and msg.layout.dim[0].label in sent_labels:
                    counts["matched"] += 1
                    sent_labels.discard(msg.layout.dim[0].label)

        node.create_subscription(Float64MultiArray, "forward_velocity_controller/commands",
                                 on_output, reliable, raw=True)
        node.create_subscription(FilterStatus, "velocity_filter/status",
                                 lambda m: status.update(msg=m), 10)
        goal_client = ActionClient(node, PlanMotion, "planner/plan_motion")

        def spin() -> None:
            while not stop.is_set() and ctx.ok():
                with contextlib.suppress(Exception):
                    executor.spin_once(timeout_sec=0.05)

        threads.append(threading.Thread(target=spin, name="soak_spin", daemon=True))
        threads[-1].start()
        if not (procs.wait_for_log("planner", "planner kernels ready", 300.0)
                and goal_client.wait_for_server(timeout_sec=60.0)):
            return {"error": "nodes did not come up",
                    "logs": {nm: procs.log_text(nm)[-2000:] for nm in NODES}}
        deadline = time.monotonic() + 60.0
        while status["msg"] is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(warmup)

        def cpu_pct(seconds: float) -> dict[str, float]:
            c0 = {nm: procs.cpu_seconds(nm) for nm in NODES}
            t0 = time.monotonic()
            time.sleep(seconds)
            dt = time.monotonic() - t0
            return {nm: round(100.0 * (procs.cpu_seconds(nm) - c0[nm]) / dt, 2) for nm in NODES}

        idle_cpu = cpu_pct(idle)
        rss_start = {nm: round(procs.rss_mb(nm), 1) for nm in NODES}

        def stream() -> None:
            k = 0
            t0 = time.monotonic()
            period = 1.0 / command_rate
            while not stop.is_set():
                t = time.monotonic() - t0
                m = Float64MultiArray()
                m.layout.dim = [MultiArrayDimension(label=str(k), size=n, stride=n)]
                m.data = (0.1 * np.sin(2 * np.pi * 0.25 * t + np.arange(n))).tolist()
                with lock:
                    sent_labels.add(str(k))
                    counts["sent"] += 1
                cmd_pub.publish(m)
                k += 1
                stop.wait(max(0.0, t0 + k * period - time.monotonic()))

        def goals() -> None:
            k = 0
            while not stop.wait(0.0 if k == 0 else goal_period):
                g = PlanMotion.Goal()
                g.joint_names = joints
                g.goal_positions = GOALS[k % 2]
                g.use_start = True
                g.start_positions = GOALS[(k + 1) % 2]
                g.time_limit = 5.0
                res = send_goal(executor, goal_client, g, 30.0)
                ok = res is not None and res.error_code == 0
                with lock:
                    counts["goals"] = counts.get("goals", 0) + 1
                    counts["goals_ok"] = counts.get("goals_ok", 0) + int(ok)
                k += 1

        c_load = {nm: procs.cpu_seconds(nm) for nm in NODES}
        t_load = time.monotonic()
        for target in (stream, goals):
            threads.append(threading.Thread(target=target, daemon=True))
            threads[-1].start()
        samples: dict[str, list[tuple[float, float]]] = {nm: [] for nm in NODES}
        end = t_load + 60.0 * minutes
        while time.monotonic() < end:
            now = time.monotonic() - t_load
            for nm in NODES:
                samples[nm].append((now, procs.rss_mb(nm)))
            time.sleep(max(0.0, min(sample_period, end - time.monotonic())))
        for nm in NODES:
            samples[nm].append((time.monotonic() - t_load, procs.rss_mb(nm)))
        dt_load = time.monotonic() - t_load
        load_cpu = {nm: round(100.0 * (procs.cpu_seconds(nm) - c_load[nm]) / dt_load, 2)
                    for nm in NODES}
        stop.set()
        time.sleep(0.5)
        cut = settle * 60.0 * minutes
        nodes_out = {}
        for nm in NODES:
            kept = [s for s in samples[nm] if s[0] >= cut]
            nodes_out[nm] = {
                "alive": procs.alive(nm),
                "idle_cpu_pct": idle_cpu[nm],
                "load_cpu_pct": load_cpu[nm],
                "rss_mb_start": rss_start[nm],
                "rss_mb_end": round(samples[nm][-1][1], 1),
                "rss_growth_mb_per_min": round(_slope_per_min(kept), 4),
                "errors_logged": errors_logged(procs.log_text(nm)),
            }
        with lock:
            result = {
                "minutes": minutes,
                "command_rate_hz": command_rate,
                "nodes": nodes_out,
                "commands_sent": counts["sent"],
                "outputs_received": counts["received"],
                "outputs_matched": counts["matched"],
                "goals_sent": counts.get("goals", 0),
                "goals_succeeded": counts.get("goals_ok", 0),
                "filter_outputs": judge.snapshot(),
                "max_rss_growth_mb_per_min": max(
                    v["rss_growth_mb_per_min"] for v in nodes_out.values()),
                "max_idle_cpu_pct": max(v["idle_cpu_pct"] for v in nodes_out.values()),
                "errors_logged": sum(v["errors_logged"] for v in nodes_out.values()),
                "all_alive": all(v["alive"] for v in nodes_out.values()),
                "loadavg_1min": round(os.getloadavg()[0], 2),
                "cpus": os.cpu_count(),
            }
    finally:
        stop.set()
        for th in threads:
            th.join(timeout=10.0)
        codes = procs.stop()
        rclpy.try_shutdown(context=ctx)
        with contextlib.suppress(Exception):
            executor.shutdown()
        with contextlib.suppress(Exception):
            node.destroy_node()
        result["exit_codes"] = codes
        result["log_dir"] = str(procs.log_dir)
    return result


def run(quick: bool = False, minutes: float | None = None) -> dict[str, Any]:
    """Entry point of ``benchmarks/run.py soak [--minutes N]`` (default 10 min, quick 1 min)."""
    if minutes is None:
        minutes = 1.0 if quick else 10.0
    return soak(minutes=minutes, idle=10.0 if quick else 20.0, warmup=10.0 if quick else 30.0)


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv)))
