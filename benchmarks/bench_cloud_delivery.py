"""Large clouds at sensor rate: delivered, used, and the filter's tick unharmed.

A ``velocity_filter`` node (default arm, in-process on its own ``SingleThreadedExecutor``, as
its console script runs it) filters commands at 100 Hz; a separate process publishes organised
``PointCloud2`` clouds of ``POINTS`` points (1000 x 1000 float32 x, y, z: a wall 1.5 m in
front of the camera, every 35th pixel without a return) at 10 Hz, RELIABLE (and, second run,
BEST_EFFORT; third, BEST_EFFORT from a publisher whose Fast DDS shared-memory segment holds
whole clouds, ``LARGE_SHM_PROFILE``). Reported per run: clouds published, clouds the node
processed into obstacles (``clouds_used_pct``), the worker's wall time per processed cloud
(``worker_take_ms``: taking it from the reader; ``worker_process_ms``, and its thread CPU
``worker_process_cpu_ms``) and the node's command latency (command arrival -> filtered
command published, ``LatencyRecord``) p50 / p99 with the clouds and, first, without any. Those
are wall-clock figures of a shared machine; ``cpu_per_cloud`` adds the thread CPU time of the
same cloud's work in one process (worker, the tick after a new cloud, a steady tick), which the
machine's load does not change; ``worker_process`` the same with the filter's cloud worker
process (``robot_collision.ros.cloud_process``): the node thread's CPU per cloud and the child's.
The ``*_realtime`` runs repeat the no-cloud and reliable runs with the node's
``realtime_priority`` at ``REALTIME_PRIORITY`` (its executor and watchdog threads at
``SCHED_FIFO``; ``realtime_applied`` says whether this machine allowed it).
Before/after in one sitting: run it with ``PYTHONPATH`` at a
work tree of the earlier code (``git worktree add /tmp/before HEAD``,
``PYTHONPATH=/tmp/before/robot_collision``).
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from typing import Any

import numpy as np

CAMERA = (1.4, 0.0, 0.8, -0.5979, -0.5979, 0.37751, 0.37751)
POINTS = 1_000_000
RATE = 10.0
REALTIME_PRIORITY = 40  # the filter's realtime_priority in the *_realtime runs

_PUBLISHER = textwrap.dedent('''
    import math, sys, time
    import numpy as np
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from robot_collision.ros.point_clouds import points_to_pointcloud2
    topic, reliable = sys.argv[1], sys.argv[2] == "1"
    seconds, rate = float(sys.argv[3]), float(sys.argv[4])
    rclpy.init()
    node = rclpy.create_node("cloud_source")
    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE if reliable
                     else ReliabilityPolicy.BEST_EFFORT)
    from sensor_msgs.msg import PointCloud2
    pub = node.create_publisher(PointCloud2, topic, qos)
    W = 1000
    f = 0.5 * W / math.tan(math.radians(35.0))
    u = (np.arange(W) + 0.5 - W / 2) / f
    U, V = np.meshgrid(u, u)
    G = np.stack([1.5 * U, 1.5 * V, np.full(U.shape, 1.5)], -1)
    G.reshape(-1, 3)[::35] = np.nan
    msg = points_to_pointcloud2(G, "camera_optical")
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)
        n += 1
        time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
    print("published", n, flush=True)
    time.sleep(0.5)
    node.destroy_node()
    rclpy.shutdown()
''')


def _spin(executor: Any) -> None:
    with contextlib.suppress(Exception):  # ExternalShutdownException at the end of a run
        executor.spin()


def _pct(values: Any, q: float) -> float:
    a = np.asarray(list(values))
    return round(float(np.percentile(a, q)) * 1e3, 3) if len(a) else float("nan")


# The publisher's Fast DDS shared-memory segment large enough for whole clouds (the default,
# 512 kB, holds ~8 of a 12 MB cloud's ~190 fragments: a best-effort reader loses the cloud
# when the writer reuses a fragment's buffer before the reader's thread has copied it).
LARGE_SHM_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>shm_large</transport_id>
      <type>SHM</type>
      <segment_size>67108864</segment_size>
    </transport_descriptor>
    <transport_descriptor>
      <transport_id>udp</transport_id>
      <type>UDPv4</type>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="large_shm" is_default_profile="true">
    <rtps>
      <userTransports>
        <transport_id>shm_large</transport_id>
        <transport_id>udp</transport_id>
      </userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
    </rtps>
  </participant>
</profiles>
"""


def _run(seconds: float, reliable: bool | None, large_shm: bool = False,
         realtime: int = 0) -> dict[str, Any]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from robot_collision import default_robot_paths
    from robot_collision.ros.filter_node import VelocityFilterNode

    urdf, srdf = default_robot_paths()
    ns = f"/cd_{uuid.uuid4().hex[:8]}"
    topic = f"{ns}/camera/points"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    load_ex = SingleThreadedExecutor(context=ctx)
    params = {"urdf_path": str(urdf), "srdf_path": str(srdf), "rate": 100.0,
              "command_timeout": 0.5, "cloud_max_age": 1.0}
    if realtime:
        params["realtime_priority"] = realtime
    if reliable is not None:
        params.update(point_cloud_topics=[topic],
                      camera_poses=[f"{topic}=" + " ".join(map(str, CAMERA))])
    node = VelocityFilterNode(context=ctx, namespace=ns, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])
    ex.add_node(node)
    gen = rclpy.create_node("load", context=ctx, namespace=ns)
    load_ex.add_node(gen)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    js_pub = gen.create_publisher(JointState, "joint_states", qos)
    cmd_pub = gen.create_publisher(Float64MultiArray, "velocity_filter/command", qos)
    stop = threading.Event()
    proc = None
    profile = ""
    out: dict[str, Any] = {}
    try:
        threading.Thread(target=_spin, args=(ex,), daemon=True).start()
        threading.Thread(target=_spin, args=(load_ex,), daemon=True).start()
        js = JointState()
        js.name = [f"joint{i}" for i in range(1, 8)]
        js.position = [0.0, 0.3, 0.0, 1.2, 0.0, 0.8, 0.0]

        def load() -> None:
            k = 0
            t0 = time.monotonic()
            while not stop.is_set():
                js.header.stamp = gen.get_clock().now().to_msg()
                cmd = Float64MultiArray()
                cmd.data = [0.05 * np.sin(0.5 * k * 0.01)] * 7
                try:
                    js_pub.publish(js)
                    time.sleep(0.005)
                    cmd_pub.publish(cmd)
                except Exception:  # the node is being destroyed
                    return
                k += 1
                time.sleep(max(0.0, t0 + k * 0.01 - time.monotonic()))

        threading.Thread(target=load, daemon=True).start()
        time.sleep(3.0)  # warm-up: discovery, kernels
        if reliable is not None:
            env = dict(os.environ)
            if large_shm:  # (read by the publisher only)
                profile = os.path.join(tempfile.gettempdir(), f"cd_{uuid.uuid4().hex[:8]}.xml")
                with open(profile, "w", encoding="utf-8") as f:
                    f.write(LARGE_SHM_PROFILE)
                env["FASTRTPS_DEFAULT_PROFILES_FILE"] = profile
            proc = subprocess.Popen(
                [sys.executable, "-c", _PUBLISHER, topic, "1" if reliable else "0",
                 str(seconds), str(RATE)], stdout=subprocess.PIPE, text=True, env=env)
            time.sleep(1.5)
        node.command_latencies.clear()
        before = dict(node._cloud_subs.stats)
        timing0 = dict(getattr(node._cloud_subs, "timing", {}))
        acc0 = node.clouds.stats["accepted"]
        if proc is not None:
            text, _ = proc.communicate(timeout=seconds + 60.0)
            published = int(text.split()[-1]) if "published" in text else 0
            time.sleep(1.0)
            out["clouds_published"] = published
            out["clouds_taken"] = node._cloud_subs.stats["taken"] - before["taken"]
            used = node.clouds.stats["accepted"] - acc0
            out["clouds_used"] = used
            out["clouds_used_pct"] = round(100.0 * used / max(1, published), 1)
            out["reader"] = node._cloud_subs.reliability(topic)
            timing = getattr(node._cloud_subs, "timing", {})
            done = node._cloud_subs.stats["processed"] - before["processed"]
            for k, v in timing.items():  # per processed cloud, where the code records it
                out[f"worker_{k[:-2]}_ms"] = round(1e3 * (v - timing0[k]) / max(1, done), 1)
            out["clouds_rejected"] = node.clouds.stats["rejected"]
            out["last_error"] = node.clouds.last_error[:200]
        else:
            time.sleep(seconds)
        lat = list(node.command_latencies)
        if realtime:
            prio = getattr(node, "_priority", None)
            out["realtime_applied"] = bool(prio is not None and not prio.refused
                                           and realtime in prio.applied().values())
        out["latency_p50_ms"] = _pct(lat, 50)
        out["latency_p99_ms"] = _pct(lat, 99)
        out["commands"] = len(lat)
    finally:
        stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
        if profile:
            with contextlib.suppress(OSError):
                os.unlink(profile)
        rclpy.try_shutdown(context=ctx)
        for e in (ex, load_ex):
            with contextlib.suppress(Exception):
                e.shutdown()
        for nd in (node, gen):
            with contextlib.suppress(Exception):
                nd.destroy_node()
    return out


def _child_cpu(proc: Any) -> float:
    """User + system CPU time (s) of a ``CloudProcess``'s child so far (``/proc``)."""
    with open(f"/proc/{proc._proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_cloud(n: int = 8) -> dict[str, Any]:
    """Thread CPU time (not wall time: independent of the machine's load) of the same 1 M-point
    cloud in one process: the worker's share (read from the serialized bytes, process, and
    build the filter's scene when this code can: ``SensedClouds.prepare``), the filter's tick
    right after the new cloud is handed over (set_world + filter) and a steady tick; medians
    after two warm-up clouds, and the largest tick after a new cloud."""
    import math

    from rclpy.serialization import serialize_message

    from robot_collision import CollisionChecker, RobotModel, default_robot_paths
    from robot_collision.control.velocity_filter import FilterOptions, VelocityFilter
    from robot_collision.ros import point_clouds as pc
    from robot_collision.ros.intake import MessageLimits

    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    W = 1000
    f = 0.5 * W / math.tan(math.radians(35.0))
    u = (np.arange(W) + 0.5 - W / 2) / f
    U, V = np.meshgrid(u, u)
    G = np.stack([1.5 * U, 1.5 * V, np.full(U.shape, 1.5)], -1)
    G.reshape(-1, 3)[::35] = np.nan
    raw = serialize_message(pc.points_to_pointcloud2(G, "camera_optical"))
    limits = MessageLimits(max_message_bytes=1 << 30)
    clouds = pc.SensedClouds(pc.CloudSettings(point_cloud_topics=("c",),
                                              camera_poses=(("c", CAMERA),)))
    clouds.set_robot(robot, {robot.base_name})
    q = np.array([0.0, 0.3, 0.0, 1.2, 0.0, 0.8, 0.0])
    clouds.joints.add(0.0, q)
    filt = VelocityFilter(CollisionChecker(robot), FilterOptions(safety_distance_env=0.03))
    view = getattr(pc, "pointcloud2_view", None)
    if view is not None and hasattr(filt.checker, "prepare"):
        clouds.prepare = lambda objs: filt.checker.prepare(list(objs))

    def read(b: bytes) -> Any:
        if view is not None:
            return view(b, limits)
        from sensor_msgs.msg import PointCloud2

        from robot_collision.ros.intake import decode
        return decode(b, PointCloud2, limits, "PointCloud2")

    work, new_tick, tick = [], [], []
    qd = np.full(7, 0.01)
    text = ""
    for _ in range(max(3, n)):
        c0 = time.thread_time()
        text = clouds.on_message("c", read(raw), 0.0, 0.0)
        work.append(time.thread_time() - c0)
        objs = clouds.objects(0.0)
        c0 = time.thread_time()
        filt.set_world(objs, keep_witnesses=True)
        filt.filter(q, qd, 0.01)
        new_tick.append(time.thread_time() - c0)
        c0 = time.thread_time()
        for _ in range(20):
            filt.filter(q, qd, 0.01)
        tick.append((time.thread_time() - c0) / 20)

    def med(a: list[float]) -> float:
        return round(1e3 * float(np.median(a[2:])), 1)

    process: dict[str, Any] = {}
    try:
        from robot_collision.ros.cloud_process import CloudProcess
    except ImportError:  # code before the worker process
        CloudProcess = None  # type: ignore[assignment,misc]
    if CloudProcess is not None:
        proc = CloudProcess(clouds)
        clouds.reducer = proc
        node, child = [], []
        try:
            for _ in range(max(3, n)):
                c0 = time.thread_time()
                clouds.on_message("c", read(raw), 0.0, 0.0)
                node.append(time.thread_time() - c0)
                child.append(_child_cpu(proc))
        finally:
            proc.close()
        process = {"node_thread_cpu_ms": med(node),
                   "child_cpu_ms": round(1e3 * float(np.median(np.diff(child[1:]))), 1)}
    return {"worker_cpu_ms": med(work), "worker_process": process,
            "tick_after_new_cloud_cpu_ms": med(new_tick),
            "tick_after_new_cloud_max_cpu_ms": round(1e3 * max(new_tick[2:]), 1),
            "steady_tick_cpu_ms": round(1e3 * float(np.median(tick)), 2),
            "balls": text.split("->")[-1].split(" in ")[0].strip()}


def run(quick: bool = False) -> dict[str, Any]:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", os.path.join(tempfile.gettempdir(), "rc_roslog"))
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))
    seconds = 5.0 if quick else 20.0
    return {"points": POINTS, "rate_hz": RATE, "seconds": seconds,
            "cpu_per_cloud": cpu_per_cloud(4 if quick else 8),
            "no_clouds": _run(seconds, None),
            "reliable_publisher": _run(seconds, True),
            "best_effort_publisher": _run(seconds, False),
            "best_effort_publisher_large_shm": _run(seconds, False, large_shm=True),
            "no_clouds_realtime": _run(seconds, None, realtime=REALTIME_PRIORITY),
            "reliable_publisher_realtime": _run(seconds, True, realtime=REALTIME_PRIORITY),
            "loadavg_1min": round(os.getloadavg()[0], 2)}
