"""Packaging checks: package manifests, entry points, the interfaces package and a ROS round trip.

The interface checks need robot_collision_interfaces built and installed (``make venv``).
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import re
import tempfile
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the ROS package robot_collision/
IFACE = ROOT.parent / "robot_collision_interfaces"

ROOT_EXEC_DEPENDS = {
    "rclpy",
    "sensor_msgs",
    "trajectory_msgs",
    "visualization_msgs",
    "std_msgs",
    "std_srvs",
    "geometry_msgs",
    "shape_msgs",
    "robot_collision_interfaces",
    "python3-numpy",
    "python3-scipy",
    "python3-lxml",
    "python3-yaml",
    "python3-matplotlib",
    "tf2_ros_py",
}

CONSOLE_SCRIPTS = {
    "collision_checker": "robot_collision.ros.entry:collision_checker",
    "velocity_filter": "robot_collision.ros.entry:velocity_filter",
    "planner": "robot_collision.ros.entry:planner",
    "mock_arm": "robot_collision.ros.entry:mock_arm",
    "mock_camera": "robot_collision.ros.entry:mock_camera",
    "robot_collision_bringup": "robot_collision.ros.entry:bringup",
    "robot_collision_demo": "robot_collision.ros.demo:main",
    "robot_collision": "robot_collision.tools.cli:main",
}


# --------------------------------------------------------------------------- manifests
def _manifest(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "package", f"{path}: root element is <{root.tag}>, expected <package>"
    assert root.get("format") == "3", f"{path}: expected package format 3"
    return root


def _deps(root: ET.Element, *tags: str) -> set[str]:
    return {(el.text or "").strip() for tag in tags for el in root.findall(tag)}


def test_root_package_xml() -> None:
    root = _manifest(ROOT / "package.xml")
    assert root.findtext("name") == "robot_collision"
    assert root.findtext("export/build_type") == "ament_python"
    exec_deps = _deps(root, "exec_depend", "depend")
    missing = ROOT_EXEC_DEPENDS - exec_deps
    assert not missing, f"package.xml lacks exec_depend {sorted(missing)}"
    assert "moveit_msgs" in exec_deps
    assert {"python3-pytest", "python3-hypothesis"} <= _deps(root, "test_depend")
    assert (ROOT / "resource" / "robot_collision").is_file()


def test_interfaces_package_xml() -> None:
    root = _manifest(IFACE / "package.xml")
    assert root.findtext("name") == "robot_collision_interfaces"
    assert root.findtext("export/build_type") == "ament_cmake"
    assert "ament_cmake" in _deps(root, "buildtool_depend")
    assert "rosidl_default_generators" in _deps(root, "build_depend", "buildtool_depend")
    assert "rosidl_default_runtime" in _deps(root, "exec_depend")
    assert "rosidl_interface_packages" in _deps(root, "member_of_group")
    deps = _deps(root, "depend", "build_depend")
    assert {"std_msgs", "geometry_msgs", "shape_msgs", "trajectory_msgs"} <= deps


def test_manifests_validate_with_catkin_pkg() -> None:
    catkin_pkg = pytest.importorskip("catkin_pkg.package")
    for folder in (ROOT, IFACE):
        pkg = catkin_pkg.parse_package(str(folder))
        pkg.validate()


def test_versions_agree() -> None:
    """setup.py and the interfaces' pyproject read their versions from package.xml."""
    v_root = _manifest(ROOT / "package.xml").findtext("version")
    v_iface = _manifest(IFACE / "package.xml").findtext("version")
    assert v_root and re.fullmatch(r"\d+\.\d+\.\d+", v_root)
    assert v_iface and re.fullmatch(r"\d+\.\d+\.\d+", v_iface)
    init = (ROOT / "robot_collision" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", init, re.M)
    if m is not None:
        assert m.group(1) == v_root, "robot_collision.__version__ differs from package.xml"


# --------------------------------------------------------------------------- setup.py
def _console_scripts_from_setup() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    return list(ast.literal_eval(value))
    raise AssertionError("setup.py declares no console_scripts")


def _top_level_names(path: Path) -> set[str]:
    """Names a module defines or imports at top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_console_scripts_well_formed() -> None:
    scripts = _console_scripts_from_setup()
    pattern = re.compile(r"^([A-Za-z_][\w-]*)\s*=\s*([A-Za-z_][\w.]*):([A-Za-z_]\w*)$")
    found: dict[str, str] = {}
    for spec in scripts:
        m = pattern.match(spec)
        assert m, f"malformed console_scripts entry {spec!r}"
        name, module, func = m.groups()
        assert module.split(".")[0] == "robot_collision", spec
        found[name] = f"{module}:{func}"
        # Modules are written by several people; check the target only where it exists.
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        if path.is_file():
            names = _top_level_names(path)
            assert func in names, f"{path} defines no {func}() for console script {name}"
    assert found == CONSOLE_SCRIPTS


def test_installed_entry_points_match_setup() -> None:
    from importlib import metadata

    try:
        dist = metadata.distribution("robot_collision")
    except metadata.PackageNotFoundError:
        pytest.skip("robot_collision is not pip-installed (make venv installs it)")
    eps = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert eps == CONSOLE_SCRIPTS


def test_setup_cfg_script_dirs() -> None:
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "setup.cfg")
    assert cfg.get("develop", "script_dir") == "$base/lib/robot_collision"
    assert cfg.get("install", "install_scripts") == "$base/lib/robot_collision"


def test_py_typed_shipped() -> None:
    assert (ROOT / "robot_collision" / "py.typed").is_file()
    assert "py.typed" in (ROOT / "setup.py").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- interfaces
_NO_IFACE = ("robot_collision_interfaces is not built (make venv, or colcon build): a Python "
             "without ROS runs the core tests only")


def _fields(cls: Any) -> dict[str, str]:
    return dict(cls.get_fields_and_field_types())


def test_interface_constants() -> None:
    pytest.importorskip("robot_collision_interfaces", reason=_NO_IFACE)
    from robot_collision_interfaces.action import PlanMotion
    from robot_collision_interfaces.msg import ClearanceRow, WorldObject

    assert (ClearanceRow.SELF, ClearanceRow.ENVIRONMENT) == (0, 1)
    assert (WorldObject.ADD, WorldObject.REMOVE, WorldObject.MOVE) == (0, 1, 2)
    codes = [
        "SUCCESS",
        "START_IN_COLLISION",
        "GOAL_IN_COLLISION",
        "OUTSIDE_LIMITS",
        "GOAL_UNREACHABLE",
        "NO_PATH",
        "CANCELLED",
        "INVALID_GOAL",
        "PREEMPTED",
        "INTERNAL_ERROR",
    ]
    assert [getattr(PlanMotion.Result, c) for c in codes] == list(range(10))


def test_interface_fields() -> None:
    pytest.importorskip("robot_collision_interfaces", reason=_NO_IFACE)
    from robot_collision_interfaces.action import PlanMotion
    from robot_collision_interfaces.msg import (
        ClearanceRow,
        ClearanceTable,
        FilterStatus,
        WorldObject,
    )
    from robot_collision_interfaces.srv import CheckCollision, SetProtection

    assert _fields(ClearanceRow) == {
        "robot_body": "string",
        "other_body": "string",
        "kind": "uint8",
        "distance": "double",
        "witness_robot": "geometry_msgs/Point",
        "witness_other": "geometry_msgs/Point",
        "normal": "geometry_msgs/Vector3",
    }
    assert _fields(ClearanceTable) == {
        "header": "std_msgs/Header",
        "joint_names": "sequence<string>",
        "rows": "sequence<robot_collision_interfaces/ClearanceRow>",
        "jacobian": "sequence<double>",
        "min_distance": "double",
        "in_collision": "boolean",
    }
    assert _fields(WorldObject) == {
        "id": "string",
        "operation": "uint8",
        "primitive": "shape_msgs/SolidPrimitive",
        "mesh": "shape_msgs/Mesh",
        "use_mesh": "boolean",
        "cylinder_is_capsule": "boolean",
        "pose": "geometry_msgs/Pose",
        "header": "std_msgs/Header",
    }
    assert _fields(FilterStatus) == {
        "header": "std_msgs/Header",
        "ok": "boolean",
        "fault": "string",
        "min_distance": "double",
        "scaling": "double",
        "active_constraints": "sequence<string>",
        "disabled_groups": "sequence<string>",
        "solve_time": "double",
    }
    assert _fields(CheckCollision.Request) == {
        "joint_names": "sequence<string>",
        "positions": "sequence<double>",
        "exhaustive": "boolean",
        "ignore_self": "boolean",
    }
    assert _fields(CheckCollision.Response) == {
        "success": "boolean",
        "message": "string",
        "is_self_colliding": "boolean",
        "is_world_colliding": "boolean",
        "row_names": "sequence<string>",
        "column_names": "sequence<string>",
        "separation": "sequence<double>",
        "signed_distance": "sequence<double>",
        "witness": "sequence<double>",
        "colliding_pairs": "sequence<string>",
    }
    assert _fields(SetProtection.Request) == {"group": "string", "enabled": "boolean"}
    assert _fields(SetProtection.Response) == {"success": "boolean", "message": "string"}

    goal = _fields(PlanMotion.Goal)
    assert goal["goal_region_bounds"] == "double[12]"
    assert set(goal) == {
        "joint_names",
        "goal_positions",
        "use_goal_region",
        "end_effector",
        "reference_pose",
        "goal_region_bounds",
        "end_effector_offset_pose",
        "use_start",
        "start_positions",
        "time_limit",
        "max_connection_distance",
        "validation_distance",
        "max_iterations",
        "shorten",
        "velocity_scaling",
        "acceleration_scaling",
    }
    assert len(PlanMotion.Goal().goal_region_bounds) == 12
    assert _fields(PlanMotion.Result) == {
        "error_code": "int32",
        "message": "string",
        "trajectory": "trajectory_msgs/JointTrajectory",
        "planning_time": "double",
        "iterations": "int32",
    }
    assert _fields(PlanMotion.Feedback) == {
        "iterations": "int32",
        "start_tree_size": "int32",
        "goal_tree_size": "int32",
        "elapsed": "double",
    }


def test_interface_sources_are_documented() -> None:
    """Every field line of every interface file carries or follows a comment."""
    files = sorted(IFACE.glob("msg/*.msg")) + sorted(IFACE.glob("srv/*.srv"))
    files += sorted(IFACE.glob("action/*.action"))
    assert len(files) == 7
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            text = line.strip()
            if not text or text.startswith("#") or text == "---":
                continue
            documented = "#" in text or (i > 0 and lines[i - 1].strip().startswith("#"))
            assert documented, f"{path.name}:{i + 1}: undocumented field {text!r}"


# --------------------------------------------------------------------------- ROS round trip
def test_clearance_table_round_trip() -> None:
    """Publish a ClearanceTable and receive it on a real topic, in one process."""
    pytest.importorskip("rclpy", reason="rclpy is not installed (a Python without ROS)")
    pytest.importorskip("robot_collision_interfaces", reason=_NO_IFACE)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    log_dir = os.path.join(tempfile.gettempdir(), "robot_collision_roslog")
    os.environ.setdefault("ROS_LOG_DIR", log_dir)

    import rclpy
    from geometry_msgs.msg import Point, Vector3
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from robot_collision_interfaces.msg import ClearanceRow, ClearanceTable

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"packaging_round_trip_{uuid.uuid4().hex[:8]}", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)

    def spin_until_shutdown() -> None:
        # ExternalShutdownException: the context was shut down, the normal way out.
        with contextlib.suppress(ExternalShutdownException):
            executor.spin()

    spin = threading.Thread(target=spin_until_shutdown, daemon=True)
    try:
        topic = f"/test_packaging/clearance_{uuid.uuid4().hex[:8]}"
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        received: list[ClearanceTable] = []
        got = threading.Event()

        def on_msg(msg: ClearanceTable) -> None:
            received.append(msg)
            got.set()

        node.create_subscription(ClearanceTable, topic, on_msg, qos)
        pub = node.create_publisher(ClearanceTable, topic, qos)
        spin.start()

        sent = ClearanceTable()
        sent.header.frame_id = "base_link"
        sent.header.stamp.sec = 12
        sent.header.stamp.nanosec = 345
        sent.joint_names = ["j1", "j2", "j3"]
        sent.rows = [
            ClearanceRow(
                robot_body="link4",
                other_body="table",
                kind=ClearanceRow.ENVIRONMENT,
                distance=0.125,
                witness_robot=Point(x=0.1, y=0.2, z=0.3),
                witness_other=Point(x=0.1, y=0.2, z=0.175),
                normal=Vector3(x=0.0, y=0.0, z=-1.0),
            ),
            ClearanceRow(
                robot_body="link1",
                other_body="link5",
                kind=ClearanceRow.SELF,
                distance=-0.01,
            ),
        ]
        sent.jacobian = [0.5, -1.0, 0.0, 1e-3, 2.0, -math.pi]
        sent.min_distance = -0.01
        sent.in_collision = True

        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pub.get_subscription_count() > 0, "subscription never matched the publisher"
        while not got.is_set() and time.monotonic() < deadline:
            pub.publish(sent)
            got.wait(0.2)
        assert received, "no ClearanceTable received within 10 s"

        msg = received[0]
        assert msg.header.frame_id == "base_link"
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345)
        assert list(msg.joint_names) == ["j1", "j2", "j3"]
        assert len(msg.rows) == 2
        assert msg.rows[0].robot_body == "link4" and msg.rows[0].other_body == "table"
        assert msg.rows[0].kind == ClearanceRow.ENVIRONMENT
        assert msg.rows[0].distance == 0.125
        assert msg.rows[0].witness_other.z == 0.175 and msg.rows[0].normal.z == -1.0
        assert msg.rows[1].kind == ClearanceRow.SELF and msg.rows[1].distance == -0.01
        assert list(msg.jacobian) == [0.5, -1.0, 0.0, 1e-3, 2.0, -math.pi]
        assert msg.min_distance == -0.01 and msg.in_collision is True
    finally:
        # Order matters: shut the context down first, then stop the spinning thread, then the
        # executor (the reverse order aborts the process with the PyPI wheels).
        rclpy.try_shutdown(context=ctx)
        if spin.is_alive() or spin.ident is not None:
            spin.join(timeout=10.0)
        executor.shutdown()
        node.destroy_node()
    assert not spin.is_alive(), "executor thread did not stop after shutdown"


# --------------------------------------------------------------------------- version bounds
REPO = ROOT.parent


def _install_requires() -> dict[str, str]:
    """name -> lower bound of setup.py's install_requires (each entry must be 'name>=x')."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            entries = ast.literal_eval(node.value)
            out = {}
            for entry in entries:
                m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([\d.]+)", entry)
                assert m, f"install_requires entry {entry!r}: only lower bounds 'name>=x'"
                out[m.group(1)] = m.group(2)
            return out
    raise AssertionError("setup.py has no install_requires")


def _requirement_lines(path: Path) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8")
            .splitlines() if line.split("#", 1)[0].strip()]


def test_version_floors_agree() -> None:
    """setup.py's lower bounds = the import-time check's minimums = requirements-ros-user.txt's
    floors = the versions the oldest-supported CI run installs (scripts/compat-oldest.txt)."""
    from robot_collision import _compat

    floors = _install_requires()
    expected = {n: v for n, (v, _) in _compat.MINIMUM.items()} | dict(_compat.OPTIONAL)
    assert floors == expected
    user: dict[str, str] = {}
    for line in _requirement_lines(REPO / "requirements-ros-user.txt"):
        name, _, rest = re.split(r"([<>=!;])", line, maxsplit=1)[0], None, line
        m = re.match(r"[A-Za-z0-9_.-]+>=([\d.]+)", rest)
        assert m, f"requirements-ros-user.txt: {line!r} has no lower bound"
        user.setdefault(name.strip(), m.group(1))
    assert user["numpy"] == floors["numpy"]
    # everything apt lacks, nothing apt has except numpy's bounds
    assert set(user) == {"numba", "daqp", "toppra", "trimesh", "pycollada", "coacd", "numpy"}
    for name in set(user) - {"numpy"}:
        assert user[name] == floors[name], name
    oldest = dict(line.split("==") for line in _requirement_lines(
        REPO / "scripts" / "compat-oldest.txt"))
    for name in set(user):
        got, want = oldest[name].split("."), floors[name].split(".")
        assert got[:len(want)] == want, f"compat-oldest.txt {name} {oldest[name]} is not the floor"


@pytest.mark.parametrize(("python", "apt_numpy", "allowed"), [
    ("3.10", "1.21.5", ["1.22.4", "1.24.4"]),   # Humble: apt scipy 1.8 caps numpy below 1.25
    ("3.12", "1.26.4", ["1.26.4"]),             # Jazzy: apt's numpy kept
])
def test_ros_user_requirements_keep_apt_numpy(python: str, apt_numpy: str,
                                              allowed: list[str]) -> None:
    """requirements-ros-user.txt never lets pip put numpy 2.x (or, on Humble, numpy >= 1.25)
    over a distribution's apt packages."""
    requirements = pytest.importorskip("packaging.requirements")
    env = {"python_version": python, "python_full_version": python + ".0"}
    specs = [requirements.Requirement(line) for line in
             _requirement_lines(REPO / "requirements-ros-user.txt")]
    numpy = [r for r in specs if r.name == "numpy" and (r.marker is None or r.marker.evaluate(env))]
    assert numpy, f"no numpy bound for Python {python}"
    for version in allowed:
        assert all(r.specifier.contains(version) for r in numpy), (python, version)
    for version in ("1.25.0" if python == "3.10" else "2.0.0", "2.0.0", "2.4.6"):
        assert not all(r.specifier.contains(version) for r in numpy), (python, version)
    # numpy needs no upgrade on Jazzy: apt's version satisfies every bound
    if python != "3.10":
        assert all(r.specifier.contains(apt_numpy) for r in numpy)


def test_import_check_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Humble's apt numpy and an old numba: `import robot_collision` says what and how to fix."""
    from robot_collision import _compat

    found = {"numpy": ("1.21.5", "/usr/lib/python3/dist-packages"),
             "numba": ("0.62.1", "/home/u/venv/lib/python3.10/site-packages")}
    monkeypatch.setattr(_compat, "_installed",
                        lambda name: found.get(name, ("99.0", "/somewhere")))
    monkeypatch.delenv("ROBOT_COLLISION_SKIP_VERSION_CHECK", raising=False)
    with pytest.raises(ImportError) as info:
        _compat.check_versions()
    text = str(info.value)
    assert "numpy 1.21.5 (/usr/lib/python3/dist-packages) is too old: need >= 1.22" in text
    assert "numba 0.62.1" in text and "segmentation fault" in text
    assert "'numba>=0.63'" in text
    # outside a venv (the ROS install's system Python): the venv recipe, never pip into it
    monkeypatch.setattr(_compat.sys, "base_prefix", _compat.sys.prefix)
    assert "requirements-ros-user.txt" in _compat.fix_command(_compat.problems())
    assert "--system-site-packages" in _compat.fix_command(_compat.problems())
    # in a venv: pip into it, numpy bounded as requirements-ros-user.txt bounds it
    monkeypatch.setattr(_compat.sys, "base_prefix", "/usr")
    monkeypatch.setattr(_compat.sys, "prefix", "/home/u/venv")
    cmd = _compat.fix_command(_compat.problems())
    assert cmd.startswith(f"{_compat.sys.executable} -m pip install ")
    numpy_spec = "'numpy>=1.22,<1.25'" if _compat.sys.version_info < (3, 11) else "'numpy>=1.22,<2'"
    assert numpy_spec in cmd
    monkeypatch.setenv("ROBOT_COLLISION_SKIP_VERSION_CHECK", "1")
    _compat.check_versions()  # the escape hatch


def test_import_check_passes_here_and_reads_versions() -> None:
    """In this Python (every supported one runs this test) the check passes, and it reads the
    versions the packages report."""
    import numpy

    from robot_collision import _compat

    assert _compat.problems() == []
    version, where = _compat._installed("numpy")
    assert version == numpy.__version__ and where
    assert _compat._version_tuple("0.63.0rc1") == (0, 63, 0)
    assert _compat._version_tuple("1.26.4") > _compat._version_tuple("1.22")
    assert _compat._installed("no-such-distribution-xyz") == (None, "")
