"""collision_checker node latency: joint_states at 500 Hz → ~/clearance, in one process.

The 59-sphere Panda (``mbm.panda()``) with the obstacles of MotionBenchMaker cage problem 1
(cylinders as capsules). A CollisionCheckerNode and a benchmark node (publisher + subscriber)
spin in one MultiThreadedExecutor in a background thread; the main thread publishes JointState
messages at 500 Hz (7 arm joints + 2 finger joints, moving back and forth between the problem's
start and first goal), each stamped with the wall-clock time of publishing. Latency = receive
time of the ClearanceTable − its header stamp (copied by the node from the joint state);
dropped = joint states published in the measured window without a table back.

Also ``clearance_us``: median wall time of the core call ``checker.clearance(q, world,
influence_distance)`` on the same robot, world and configurations (no ROS).

Targets: latency p99 <= 2 ms with 0 dropped; clearance_us <= 150 us.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import struct
import tempfile
import threading
import time
from typing import Any

import numpy as np

RATE_HZ = 500.0
INFLUENCE = 0.3
TARGET_P99_MS = 2.0
TARGET_CLEARANCE_US = 150.0
# How the node runs (RC_BENCH_MODE overrides):
# - "inprocess": node and benchmark node in one SingleThreadedExecutor (default);
# - "inprocess-multi": the same in one MultiThreadedExecutor (2 threads);
# - "bringup": the node in a robot_collision_bringup subprocess (its MultiThreadedExecutor).
MODE = os.environ.get("RC_BENCH_MODE", "inprocess")
BRINGUP_EXECUTOR = os.environ.get("RC_BENCH_BRINGUP_EXECUTOR", "multi")


def _ros_env() -> None:
    """Keep discovery on this machine and logs out of the home folder (unless already set)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", os.path.join(tempfile.gettempdir(), "rc_roslog"))
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))


def _problem() -> tuple[Any, list[Any], np.ndarray, np.ndarray]:
    import mbm

    problems = mbm.load_problems()["problems"]["cage"]
    prob = next(p for p in problems if p["index"] == 1)
    robot = mbm.panda()
    world = mbm.world_of(prob, "cage")
    return robot, world, np.array(prob["start"], float), np.array(prob["goals"][0], float)


def _trajectory(q0: np.ndarray, q1: np.ndarray, k: int, n: int) -> np.ndarray:
    s = 0.5 - 0.5 * np.cos(2.0 * np.pi * k / max(n, 1))  # 0 → 1 → 0 over n samples
    return q0 + s * (q1 - q0)


def _clearance_us(robot: Any, world: list[Any], q0: np.ndarray, q1: np.ndarray,
                  calls: int) -> tuple[float, float, float]:
    from robot_collision import CollisionChecker

    checker = CollisionChecker(robot)
    qs = [_trajectory(q0, q1, k, calls) for k in range(calls)]
    for q in qs[:50]:
        checker.clearance(q, world, INFLUENCE)
    times = np.empty(calls)
    rows = 0
    for k, q in enumerate(qs):
        t0 = time.perf_counter()
        table = checker.clearance(q, world, INFLUENCE)
        times[k] = time.perf_counter() - t0
        rows += len(table)
    return float(np.median(times) * 1e6), float(np.percentile(times, 99) * 1e6), rows / calls


def _world_yaml(world: list[Any], path: str) -> None:
    """Write core world objects as a robot_collision world file (for the bringup mode)."""
    import yaml

    from robot_collision import Box, Capsule, Cylinder, Sphere
    from robot_collision.geometry.transforms import matrix_to_quat_xyzw

    objects = []
    for obj in world:
        sh = obj.shape
        if isinstance(sh, Box):
            kind, dims = "box", [sh.x, sh.y, sh.z]
        elif isinstance(sh, Sphere):
            kind, dims = "sphere", [sh.radius]
        elif isinstance(sh, (Capsule, Cylinder)):
            kind, dims = type(sh).__name__.lower(), [sh.radius, sh.length]
        else:
            raise ValueError(f"no world-file form for {type(sh).__name__}")
        objects.append({
            "id": obj.name, "type": kind, "dimensions": [float(v) for v in dims],
            "position": [float(v) for v in obj.pose[:3, 3]],
            "orientation_quat_xyzw": [float(v) for v in matrix_to_quat_xyzw(obj.pose[:3, :3])],
        })
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"objects": objects}, f)


def _node_latency(robot_files: tuple[str, str], world: list[Any], q0: np.ndarray,
                  q1: np.ndarray, seconds: float, mode: str) -> dict[str, Any]:
    import subprocess
    import sys

    import rclpy
    from rclpy.executors import (
        ExternalShutdownException,
        MultiThreadedExecutor,
        SingleThreadedExecutor,
    )
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from robot_collision_interfaces.msg import ClearanceTable

    urdf, srdf = robot_files
    ns = f"/bench_{os.getpid()}"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    checker: Any = None
    proc: Any = None
    tmp = tempfile.TemporaryDirectory(prefix="rc_bench_")
    if mode == "bringup":
        # the node in its own process, started exactly as robot_collision_bringup starts it
        import yaml

        world_file = os.path.join(tmp.name, "world.yaml")
        _world_yaml(world, world_file)
        params = os.path.join(tmp.name, "params.yaml")
        with open(params, "w", encoding="utf-8") as f:
            yaml.safe_dump({"collision_checker": {"ros__parameters": {
                "influence_distance": INFLUENCE, "marker_rate": 0.0, "world_file": world_file,
            }}}, f)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen(
            [sys.executable, "-m", "robot_collision.ros.bringup", "--params-file", params,
             "--urdf", urdf, "--srdf", srdf, "--nodes", "collision_checker",
             "--namespace", ns, "--duration", "300", "--executor", BRINGUP_EXECUTOR],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        from robot_collision.ros.checker_node import CollisionCheckerNode

        checker = CollisionCheckerNode(context=ctx, namespace=ns, parameter_overrides=[
            Parameter("urdf_path", value=urdf), Parameter("srdf_path", value=srdf),
            Parameter("influence_distance", value=INFLUENCE),
            Parameter("marker_rate", value=0.0)])
        for obj in world:
            checker.world.add_object(obj)
    bench = rclpy.create_node("clearance_bench", namespace=ns, context=ctx)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub = bench.create_publisher(JointState, "joint_states", qos)
    received: dict[int, int] = {}  # stamp ns → receive time ns

    def on_table(data: bytes) -> None:
        # Raw (serialized) delivery: the measuring node reads only the header stamp, so that
        # deserialising every table in Python does not load the executor the node runs in.
        # CDR: 4-byte encapsulation header, then Header.stamp (int32 sec, uint32 nanosec).
        now = time.time_ns()
        sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
        received[sec * 1_000_000_000 + nsec] = now

    sub = bench.create_subscription(
        ClearanceTable, "collision_checker/clearance", on_table, qos, raw=True)
    executor: Any = (
        MultiThreadedExecutor(num_threads=2, context=ctx) if mode == "inprocess-multi"
        else SingleThreadedExecutor(context=ctx))
    if checker is not None:
        executor.add_node(checker)
    executor.add_node(bench)

    def spin() -> None:
        with contextlib.suppress(ExternalShutdownException):
            executor.spin()

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120.0
        while pub.get_subscription_count() == 0 or sub.get_publisher_count() == 0:
            if time.monotonic() > deadline or (proc is not None and proc.poll() is not None):
                raise RuntimeError("the checker node and the benchmark node did not connect")
            time.sleep(0.01)
        # wait until the node answers (it has its robot and world)
        probe = JointState()
        probe.name = [f"panda_joint{i + 1}" for i in range(7)]
        probe.position = q0.tolist()
        while not received:
            if time.monotonic() > deadline:
                raise RuntimeError("the checker node published no clearance table")
            pub.publish(probe)
            time.sleep(0.05)
        names = [*probe.name, "panda_finger_joint1", "panda_finger_joint2"]
        period = 1.0 / RATE_HZ
        warmup = int(0.5 * RATE_HZ)
        total = warmup + int(seconds * RATE_HZ)
        sent: list[int] = []
        msg = JointState()
        msg.name = names
        gc.collect()
        gc.freeze()  # as robot_collision_bringup does after start-up
        t_start = time.perf_counter()
        for k in range(total):
            target = t_start + k * period
            left = target - time.perf_counter()
            if left > 0:  # sleep (no busy wait: it would hold the GIL the node needs)
                time.sleep(left)
            q = _trajectory(q0, q1, k, int(2 * RATE_HZ))
            msg.position = [*q.tolist(), 0.035, 0.035]
            now = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
            pub.publish(msg)
            if k >= warmup:
                sent.append(now)
        elapsed = time.perf_counter() - t_start
        time.sleep(0.3)  # drain
        gc.unfreeze()
        lat = np.array([(received[s] - s) / 1e6 for s in sent if s in received])
        dropped = sum(1 for s in sent if s not in received)
        stats = dict(checker.stats) if checker is not None else None
    finally:
        rclpy.try_shutdown(context=ctx)
        thread.join(timeout=10.0)
        executor.shutdown()
        for node in (checker, bench):
            with contextlib.suppress(Exception):
                if node is not None:
                    node.destroy_node()
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        tmp.cleanup()
    out: dict[str, Any] = {
        "latency_p50_ms": round(float(np.percentile(lat, 50)), 3) if lat.size else None,
        "latency_p99_ms": round(float(np.percentile(lat, 99)), 3) if lat.size else None,
        "latency_max_ms": round(float(lat.max()), 3) if lat.size else None,
        "dropped": int(dropped),
        "sent": len(sent),
        "received": int(lat.size),
        "publish_rate_hz": round(total / elapsed, 1),
    }
    if stats is not None:
        out["node_stats"] = stats
    return out


def run(quick: bool = False) -> dict[str, Any]:
    _ros_env()
    import mbm

    if not mbm.available():
        return {"skipped": f"MotionBenchMaker data not found in {mbm.MBM_DIR}"}
    robot, world, q0, q1 = _problem()
    clearance_us, clearance_p99_us, rows = _clearance_us(
        robot, world, q0, q1, 500 if quick else 3000)
    files = (str(mbm.MBM_DIR / "panda_spherized.urdf"), str(mbm.MBM_DIR / "panda.srdf"))
    res = _node_latency(files, world, q0, q1, 1.0 if quick else 5.0, MODE)
    out: dict[str, Any] = {
        "robot": "panda 59 spheres",
        "world": f"cage #1 ({len(world)} obstacles)",
        "rate_hz": RATE_HZ,
        "mode": MODE,
        "influence_distance": INFLUENCE,
        **res,
        "clearance_us": round(clearance_us, 1),
        "clearance_p99_us": round(clearance_p99_us, 1),
        "clearance_rows_mean": round(rows, 1),
    }
    p99 = out["latency_p99_ms"]
    out["meets_latency_target"] = bool(p99 is not None and p99 <= TARGET_P99_MS
                                       and out["dropped"] == 0)
    out["meets_clearance_target"] = bool(clearance_us <= TARGET_CLEARANCE_US)
    return out
