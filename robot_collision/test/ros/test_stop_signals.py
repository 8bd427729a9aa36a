"""SIGINT and SIGTERM end every node process with status 0, no traceback, within 2 s: while
importing, while running (the filter ticking), while planning and while compiling kernels.

The nodes run as their console scripts do (``python -m robot_collision.ros.entry NAME``, what
the installed ``collision_checker`` etc. call), each in its own process and namespace.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robot_collision import default_robot_paths

pytest.importorskip("rclpy")

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # the ROS package folder robot_collision/
URDF, SRDF = default_robot_paths()
STOP_LIMIT = 2.0  # s, from the signal to the process's exit

READY = {
    "collision_checker": "collision kernels ready",
    "velocity_filter": "filtering ",
    "planner": "planner kernels ready",
    "mock_arm": "mock arm '",
}


class NodeProcess:
    """A node started like its console script, its output collected line by line."""

    def __init__(self, name: str, namespace: str, env: dict[str, str] | None = None,
                 params: dict[str, str] | None = None) -> None:
        self.name = name
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(PACKAGE_DIR) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "robot_collision.ros.entry", name, "--ros-args",
             "-r", f"__ns:={namespace}", "-p", f"urdf_path:={URDF}", "-p", f"srdf_path:={SRDF}",
             *(arg for k, v in (params or {}).items() for arg in ("-p", f"{k}:={v}"))],
            cwd=str(PACKAGE_DIR), env=full_env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return any(text in line for line in self.lines)
                self._cond.wait(min(left, 0.2))
            return True

    def stop(self, sig: int) -> tuple[int, float]:
        """Send ``sig``; (exit status, seconds until the process ended)."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=30.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.name} did not stop on {sig!r}:\n{self.output}") from None
        elapsed = time.monotonic() - t0
        self._reader.join(timeout=5.0)
        return code, elapsed

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture()
def spawn(ros: Any) -> Iterator[Any]:
    procs: list[NodeProcess] = []

    def start(name: str, namespace: str, env: dict[str, str] | None = None,
              params: dict[str, str] | None = None) -> NodeProcess:
        p = NodeProcess(name, namespace, env, params)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()


def _assert_clean_stop(p: NodeProcess, sig: int) -> None:
    code, elapsed = p.stop(sig)
    out = p.output
    assert code == 0, f"{p.name} exited {code} on {signal.Signals(sig).name}:\n{out}"
    assert elapsed < STOP_LIMIT, f"{p.name} took {elapsed:.2f} s to stop:\n{out}"
    for bad in ("Traceback", "KeyboardInterrupt", "Exception ignored"):
        assert bad not in out, f"{p.name} printed {bad!r} on {signal.Signals(sig).name}:\n{out}"


def test_running_nodes_stop_cleanly(ros: Any, spawn: Any) -> None:
    """All four nodes up (the filter ticking, the mock arm integrating), then SIGINT to two
    and SIGTERM to the other two."""
    ns = ros.namespace()
    procs = {name: spawn(name, ns) for name in READY}
    for name, p in procs.items():
        assert p.wait_for(READY[name]), f"{name} did not get ready:\n{p.output}"
    for name, sig in (("collision_checker", signal.SIGINT), ("velocity_filter", signal.SIGTERM),
                      ("planner", signal.SIGINT), ("mock_arm", signal.SIGTERM)):
        _assert_clean_stop(procs[name], sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_nodes_stop_cleanly_while_importing(ros: Any, spawn: Any, sig: int) -> None:
    p = spawn("collision_checker", ros.namespace())
    time.sleep(0.3)  # importing numpy, numba, rclpy and the package (about a second)
    assert p.proc.poll() is None
    _assert_clean_stop(p, sig)


def test_planner_stops_cleanly_while_planning(ros: Any, spawn: Any) -> None:
    """A goal whose edges are sampled every 1e-6 rad (the finest the planner accepts; discrete
    edge validation) keeps the planner busy for seconds inside a compiled kernel that cannot be
    interrupted; SIGINT still ends it in time."""
    from rclpy.action import ActionClient

    from robot_collision import RobotModel
    from robot_collision_interfaces.action import PlanMotion

    ns = ros.namespace()
    p = spawn("planner", ns, params={"edge_validation": "discrete"})
    assert p.wait_for(READY["planner"]), p.output
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    helper = ros.helper(ns)
    client = ActionClient(helper, PlanMotion, f"{ns}/planner/plan_motion")
    try:
        assert client.wait_for_server(timeout_sec=30.0)
        goal = PlanMotion.Goal()
        goal.joint_names = list(robot.joint_names)
        goal.goal_positions = [float(v) for v in robot.named_configuration("ready")]
        goal.use_start = True
        goal.start_positions = [float(v) for v in robot.home_configuration()]
        goal.validation_distance = 1e-6
        goal.time_limit = 120.0
        future = ros.in_executor(lambda: client.send_goal_async(goal))
        assert ros.wait_until(future.done, 30.0) and future.result().accepted
        time.sleep(1.0)  # planning
        label = bytes(future.result().goal_id.uuid).hex()[:8]  # the planner's log label
        assert f"goal {label}" not in p.output, f"the goal ended before the stop:\n{p.output}"
        _assert_clean_stop(p, signal.SIGINT)
    finally:
        client.destroy()
        ros.remove_node(helper)


def test_checker_stops_cleanly_while_compiling(ros: Any, spawn: Any, tmp_path: Path) -> None:
    """An empty numba cache (NUMBA_CACHE_DIR): the node compiles its kernels for tens of
    seconds after 'loading the compiled collision kernels'; SIGTERM ends it in time."""
    p = spawn("collision_checker", ros.namespace(), env={"NUMBA_CACHE_DIR": str(tmp_path)})
    assert p.wait_for("loading the compiled collision kernels", 60.0), p.output
    time.sleep(1.0)
    assert not p.wait_for(READY["collision_checker"], 0.0), "compiled too fast to test"
    _assert_clean_stop(p, signal.SIGTERM)


def test_entry_imports_nothing_heavy() -> None:
    """The stop handlers are installed before numpy, numba or rclpy load: importing the entry
    module (and so the package facade) must not import them."""
    code = ("import sys, robot_collision.ros.entry; "
            "print(sorted(m for m in ('numpy', 'numba', 'rclpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(PACKAGE_DIR), text=True,
                         capture_output=True, check=True).stdout
    assert out.strip() == "[]", out


def test_every_node_starts_through_the_entry_module() -> None:
    """A node's console script must go through robot_collision.ros.entry (stop handlers before
    the heavy imports): every node of the bring-up registry has an entry there, and setup.py
    points its console script at it."""
    import ast

    from robot_collision.ros.bringup import NODE_REGISTRY
    from robot_collision.ros.entry import CONSOLE_SCRIPTS

    tree = ast.parse((PACKAGE_DIR / "setup.py").read_text(encoding="utf-8"))
    scripts: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    for spec in ast.literal_eval(value):
                        name, _, target = spec.partition("=")
                        scripts[name.strip()] = target.strip()
    for name, class_path in NODE_REGISTRY.items():
        module = class_path.partition(":")[0]
        assert CONSOLE_SCRIPTS.get(name) == f"{module}:main", (
            f"node {name!r}: add it to robot_collision.ros.entry.CONSOLE_SCRIPTS (and a "
            "function of its name there)")
        assert scripts.get(name) == f"robot_collision.ros.entry:{name}", (
            f"setup.py: console script {name} = robot_collision.ros.entry:{name}")
