"""robot_collision_bringup: parameter-file handling, node registry, and the real process
(started as a subprocess, talked to over real topics, stopped by SIGTERM or --duration)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from robot_collision import data_path

pytest.importorskip("rclpy")

from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from robot_collision.ros.bringup import (
    NODE_REGISTRY,
    default_params_file,
    load_params_file,
    node_parameters,
    resolve_node_class,
    to_parameter_overrides,
)
from robot_collision.ros.checker_node import CollisionCheckerNode
from robot_collision_interfaces.msg import ClearanceTable

ROOT = Path(__file__).resolve().parents[3]  # repository root
CONFIG = data_path("config", "robot_collision.yaml")


def test_params_file_sections() -> None:
    assert default_params_file() == CONFIG
    data = load_params_file(CONFIG)
    p = node_parameters(data, "collision_checker")
    assert p["skip_rule"] == "parent" and p["influence_distance"] == 0.3
    # the shipped file loads no world (a real arm's surroundings are the user's); the demo
    # writes its own parameter file with config/demo_world.yaml
    assert p["world_file"] == ""
    nodes = node_parameters(data, "bringup")["nodes"]
    assert nodes[0] == "collision_checker" and set(nodes) <= set(NODE_REGISTRY)
    # wildcard, namespaced and nested sections, as ROS applies them
    data = {
        "/**": {"ros__parameters": {"use_sim_time": True, "padding": 0.01}},
        "collision_checker": {"ros__parameters": {"padding": 0.02, "qos": {"depth": 5}}},
        "/arm/collision_checker": {"ros__parameters": {"padding": 0.03}},
    }
    assert node_parameters(data, "collision_checker") == {
        "use_sim_time": True, "padding": 0.02, "qos.depth": 5}
    assert node_parameters(data, "collision_checker", "/arm")["padding"] == 0.03
    assert node_parameters(data, "planner") == {"use_sim_time": True, "padding": 0.01}


def test_parameter_overrides_types() -> None:
    params = to_parameter_overrides(
        {"a": 1, "b": [0, 0.5], "c": [], "d": ["x=y"], "e": None, "f": [1, 2], "g": "s"})
    by = {p.name: p for p in params}
    assert set(by) == {"a", "b", "d", "f", "g"}  # empty lists and None are left to defaults
    assert by["b"].type_ == Parameter.Type.DOUBLE_ARRAY
    assert by["f"].type_ == Parameter.Type.INTEGER_ARRAY
    assert by["d"].type_ == Parameter.Type.STRING_ARRAY


def test_node_registry_is_lazy_and_skips_missing_modules() -> None:
    assert resolve_node_class("collision_checker") is CollisionCheckerNode
    fake = {"ghost": "robot_collision.ros.no_such_module:Ghost",
            "typo": "robot_collision.ros.checker_node:NoSuchClass"}
    assert resolve_node_class("ghost", fake) is None
    assert resolve_node_class("typo", fake) is None
    with pytest.raises(KeyError):
        resolve_node_class("nobody")


def test_config_parses_with_the_ros_parameter_parser() -> None:
    """The file as launch passes it (--params-file, parsed by rcl) sets the node's values."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=["x", "--ros-args", "--params-file", str(CONFIG)])
    node = None
    try:
        urdf, srdf = data_path("urdf", "default_arm.urdf"), data_path("urdf", "default_arm.srdf")
        # root namespace: a section named "collision_checker" is for /collision_checker
        node = CollisionCheckerNode(context=ctx, parameter_overrides=[
            Parameter("urdf_path", value=str(urdf)), Parameter("srdf_path", value=str(srdf))])
        st = node.settings
        assert (st.skip_rule, st.influence_distance, st.marker_rate) == ("parent", 0.3, 10.0)
        assert st.world_file == "" and node.world.ids() == []
        assert node.robot is not None and node.robot.srdf is not None
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def _bringup(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "robot_collision") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-m", "robot_collision.ros.bringup", *args],
        cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 20.0) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"bringup did not stop on signal {sig}:\n{out}") from None
    return out


def test_bringup_process_serves_clearance_and_stops_on_sigterm(ros: Any, tmp_path: Path) -> None:
    from robot_collision.ros.demo.bringup_process import write_demo_params

    ns = ros.namespace()
    params = tmp_path / "demo_params.yaml"  # the demo's parameter file: its world included
    write_demo_params(params)
    proc = _bringup("--params-file", str(params), "--nodes", "collision_checker", "--namespace",
                    ns, "--duration", "120")
    helper = ros.helper(ns)
    try:
        pub = helper.create_publisher(JointState, "joint_states", 10)
        tables = ros.collect(helper, ClearanceTable, "collision_checker/clearance")
        assert ros.wait_for_subscribers(pub, timeout=60.0), "bringup's checker never subscribed"
        assert ros.wait_until(lambda: tables.sub.get_publisher_count() > 0, timeout=30.0)
        msg = JointState()
        msg.name = [f"joint{i + 1}" for i in range(7)]
        msg.position = [0.0, 1.2, 0.0, 1.2, 0.0, 0.8, 0.0]  # tool into the demo world's table
        msg.header.stamp.sec = 77
        deadline = time.monotonic() + 30.0
        while not len(tables) and time.monotonic() < deadline:
            pub.publish(msg)
            tables.wait(1, timeout=0.5)
        assert len(tables), "no ClearanceTable from the bringup process"
        table = tables.messages[0]
        assert table.header.stamp.sec == 77 and table.header.frame_id == "base_link"
        assert table.in_collision
        assert ("tool", "table") in {(r.robot_body, r.other_body) for r in table.rows}
        assert np.isfinite(np.asarray(table.jacobian)).all()
    finally:
        out = _stop(proc)
        ros.remove_node(helper)
    assert proc.returncode == 0, out
    assert "robot 'rc_arm' loaded" in out


def test_bringup_duration_and_errors() -> None:
    proc = _bringup("--nodes", "collision_checker", "--duration", "1")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "started collision_checker" in out
    proc = _bringup("--nodes", "collision_checker,warp_drive", "--duration", "1")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "unknown nodes ['warp_drive']" in out
    proc = _bringup("--params-file", "/nonexistent.yaml", "--duration", "1")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "cannot read" in out
