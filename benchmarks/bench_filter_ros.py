"""Latency of the ``velocity_filter`` ROS node: command sent → filtered command received.

An in-process :class:`~robot_collision.ros.filter_node.VelocityFilterNode` filters for the
59-sphere Panda in MotionBenchMaker cage problem 1 (world objects added straight to the node's
world model). A paced load thread publishes joint states (the problem's start configuration) at
500 Hz and velocity commands at 500 Hz, half a period apart (sinusoids on every joint at up to
0.8 × the velocity limits: most are changed by the filter, some pass). Each command carries its
sequence number as the label of its single layout dimension; the node copies a valid command's
layout to its output, so a receiver node matches each output to the send time recorded just
before ``publish()``.

Threads of the one process: the filter node spins in its own ``SingleThreadedExecutor`` in the
main thread (as the ``velocity_filter`` console script does), the receiver node in a second
executor thread, the load thread publishes directly. Times are ``time.time_ns()`` and the DDS
receive stamps of rclpy's message info (Iron and later; else callback entry). The first 0.5 s
are not counted.

Keys: ``ros_latency_p50_ms`` / ``ros_latency_p99_ms`` / ``ros_latency_max_ms`` (command sent →
its output delivered to the receiver: both hops + the node's queueing and work),
``ros_node_latency_p50_ms`` / ``ros_node_latency_p99_ms`` (inside the node: the command's DDS
arrival → the output's ``publish()`` returned, i.e. "command received → filtered command
published"), ``ticks`` (commands counted), ``ros_lost`` (counted commands without an output:
superseded in the node's depth-1 input queue by a newer command while the node was busy; not
in the percentiles, ``ros_lost_pct`` of the commands),
``ros_constrained`` (outputs that differ from their command), ``ros_rate_hz`` (commands per
second actually sent), ``ros_loadavg_1min`` / ``ros_cpus`` (the machine's load at the end and its
CPU count: with other jobs competing for the CPUs, the tail grows, as one Python process can
only keep its latency when it gets a CPU within about a millisecond).
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import mbm  # noqa: E402

__all__ = ["ros_latency", "run"]

RATE_HZ = 500.0
WARMUP_S = 0.5


def _ros_environment() -> None:
    """Keep discovery on this machine and logs out of the home folder (unless already set)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    log_dir = os.path.join(tempfile.gettempdir(), "robot_collision_roslog")
    os.environ.setdefault("ROS_LOG_DIR", log_dir)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)) * 1e3, 3) if values else float("nan")


def ros_latency(quick: bool = False) -> dict[str, Any]:
    """Run the node benchmark (``quick``: 3 s of commands, else 20 s); see the module docstring."""
    if not mbm.available():
        return {"ros_skipped": "MotionBenchMaker data missing"}
    _ros_environment()
    try:
        import rclpy
        from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rclpy.task import Future
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension

        from robot_collision.ros.filter_node import VelocityFilterNode
    except ImportError as exc:
        return {"ros_skipped": f"ROS 2 not importable: {exc}"}

    duration = 3.0 if quick else 20.0
    prob = mbm.load_problems()["problems"]["cage"][0]
    world = mbm.world_of(prob, "cage")
    robot = mbm.panda()
    q0 = np.array(prob["start"], dtype=float)
    vmax = np.asarray(robot.velocity_limits, dtype=float)
    names = list(robot.joint_names)
    n = len(names)
    rng = np.random.default_rng(0)
    phase = rng.uniform(0, 2 * np.pi, n)
    freq = rng.uniform(0.3, 1.0, n)

    ns = f"/bench_{uuid.uuid4().hex[:8]}"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    filt_exec = SingleThreadedExecutor(context=ctx)
    gen_exec = SingleThreadedExecutor(context=ctx)
    nodes: list[Any] = []
    sent: dict[int, int] = {}  # sequence number -> time.time_ns() just before publish()
    received: dict[int, int] = {}  # sequence number -> DDS receive stamp of its output (ns)
    commands: dict[int, np.ndarray] = {}
    changed = [0]
    lock = threading.Lock()
    t_first = [0]  # time.time_ns() after the warm-up
    threads: list[threading.Thread] = []
    try:
        node = VelocityFilterNode(context=ctx, namespace=ns, parameter_overrides=[
            Parameter("urdf_path", value=str(mbm.MBM_DIR / "panda_spherized.urdf")),
            Parameter("srdf_path", value=str(mbm.MBM_DIR / "panda.srdf")),
            Parameter("command_timeout", value=0.5),
        ])
        nodes.append(node)
        for obj in world:
            node.world.add_object(obj)
        filt_exec.add_node(node)

        gen = rclpy.create_node("filter_bench_load", context=ctx, namespace=ns)
        nodes.append(gen)
        gen_exec.add_node(gen)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        js_pub = gen.create_publisher(JointState, "joint_states", qos)
        cmd_pub = gen.create_publisher(Float64MultiArray, "velocity_filter/command", qos)

        def on_output(msg: Float64MultiArray, info: Any = None) -> None:
            t = time.time_ns()
            if info and info.get("received_timestamp"):
                t = int(info["received_timestamp"])  # DDS delivery, before this executor
            if not msg.layout.dim:
                return
            try:
                k = int(msg.layout.dim[0].label)
            except ValueError:
                return
            with lock:
                if k in sent and k not in received:
                    received[k] = t
                    cmd = commands.pop(k, None)
                    if cmd is not None and not np.array_equal(np.asarray(msg.data), cmd):
                        changed[0] += 1

        from rclpy.subscription import Subscription

        with_info = hasattr(Subscription, "CallbackType")  # rclpy passes MessageInfo (Iron+)
        callback: Any = (lambda m, i: on_output(m, i)) if with_info else on_output
        gen.create_subscription(
            Float64MultiArray, "forward_velocity_controller/commands", callback, qos)

        def spin_gen() -> None:
            with contextlib.suppress(ExternalShutdownException, Exception):
                gen_exec.spin()

        threads.append(threading.Thread(target=spin_gen, name="bench_receiver", daemon=True))
        threads[-1].start()

        js = JointState()
        js.name = names
        js.position = q0.tolist()
        done = Future()
        # as robot_collision.ros.bringup.run_nodes does for deployed nodes: keep everything
        # allocated so far out of the garbage collector's scans (pauses of milliseconds)
        gc.collect()
        gc.freeze()

        def load() -> None:
            """Paced publisher thread: joint states at k·T, commands at k·T + T/2."""
            period = 1.0 / RATE_HZ
            try:
                js_pub.publish(js)
                # discovery, and a joint state at the node, before the clock starts
                deadline = time.monotonic() + 10.0
                while time.monotonic() < deadline and (
                        cmd_pub.get_subscription_count() == 0 or node.stats["joint_states"] == 0
                        or node._output_pub.get_subscription_count() == 0):
                    js_pub.publish(js)
                    time.sleep(0.01)
                t0 = time.perf_counter()
                t_first[0] = time.time_ns() + int(WARMUP_S * 1e9)
                warm = True
                k = 0
                while True:
                    t = k * period
                    if t > duration + WARMUP_S:
                        break
                    if warm and t >= WARMUP_S:
                        node.command_latencies.clear()
                        warm = False
                    time.sleep(max(0.0, t0 + t - time.perf_counter()))
                    js.header.stamp = gen.get_clock().now().to_msg()
                    js_pub.publish(js)
                    time.sleep(max(0.0, t0 + t + 0.5 * period - time.perf_counter()))
                    cmd = 0.8 * vmax * np.sin(2 * np.pi * freq * t + phase)
                    msg = Float64MultiArray()
                    msg.layout.dim = [MultiArrayDimension(label=str(k), size=n, stride=n)]
                    msg.data = cmd.tolist()
                    with lock:
                        commands[k] = np.asarray(msg.data)
                        sent[k] = time.time_ns()
                    cmd_pub.publish(msg)
                    k += 1
                time.sleep(0.2)  # let the last outputs arrive
            finally:
                done.set_result(True)

        threads.append(threading.Thread(target=load, name="bench_load", daemon=True))
        threads[-1].start()
        filt_exec.spin_until_future_complete(done, timeout_sec=duration + 60.0)
        node_lat = list(node.command_latencies)
    finally:
        gc.unfreeze()
        rclpy.try_shutdown(context=ctx)
        for th in threads:
            th.join(timeout=10.0)
        for ex in (gen_exec, filt_exec):
            with contextlib.suppress(Exception):
                ex.shutdown()
        for nd in nodes:
            with contextlib.suppress(Exception):
                nd.destroy_node()

    with lock:
        counted = [k for k, t in sent.items() if t >= t_first[0]]
        lat = [(received[k] - sent[k]) * 1e-9 for k in counted if k in received]
        lost = sum(1 for k in counted if k not in received)
    return {
        "ros_latency_p50_ms": _pct(lat, 50),
        "ros_latency_p99_ms": _pct(lat, 99),
        "ros_latency_max_ms": _pct(lat, 100),
        "ros_node_latency_p50_ms": _pct(node_lat, 50),
        "ros_node_latency_p99_ms": _pct(node_lat, 99),
        "ticks": len(lat),
        "ros_lost": int(lost),
        "ros_lost_pct": round(100.0 * lost / max(1, len(counted)), 2),
        "ros_constrained": int(changed[0]),
        "ros_rate_hz": round(len(counted) / duration, 1),
        # other jobs on the machine: the tail latency follows the CPU competition closely
        "ros_loadavg_1min": round(os.getloadavg()[0], 2),
        "ros_cpus": os.cpu_count(),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point of ``benchmarks/run.py filter_ros``."""
    return ros_latency(quick)


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv)))
