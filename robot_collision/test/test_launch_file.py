"""Static checks of launch/robot_collision.launch.py (launch_ros cannot be imported here).

The file is parsed with ``ast``: every ``Node(package="robot_collision", executable=...)`` must
name a console script of setup.py, every path built from ``FindPackageShare("robot_collision")``
must exist in the source tree (and be installed by setup.py's data_files), and the config file
it names must have a section for every node it starts.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / "launch" / "robot_collision.launch.py"
PACKAGE = "robot_collision"


def _tree() -> ast.Module:
    return ast.parse(LAUNCH.read_text(encoding="utf-8"), filename=str(LAUNCH))


def _const(node: ast.AST, names: dict[str, Any]) -> Any:
    """Value of a constant or of a module-level name bound to a constant."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    return None


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt.value.value
    return out


def _calls(tree: ast.AST, func_name: str) -> list[ast.Call]:
    return [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == func_name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == func_name))
    ]


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _console_scripts() -> set[str]:
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    return {s.split("=")[0].strip() for s in ast.literal_eval(value)}
    raise AssertionError("setup.py declares no console_scripts")


def _launch_nodes() -> list[tuple[str, str]]:
    tree = _tree()
    consts = _module_constants(tree)
    nodes = []
    for call in _calls(tree, "Node"):
        pkg = _const(_kw(call, "package"), consts)  # type: ignore[arg-type]
        exe = _const(_kw(call, "executable"), consts)  # type: ignore[arg-type]
        assert isinstance(pkg, str) and isinstance(exe, str), (
            f"line {call.lineno}: Node needs constant package= and executable=")
        nodes.append((pkg, exe))
    return nodes


def _share_paths() -> list[tuple[int, Path]]:
    """Paths built as PathJoinSubstitution([FindPackageShare(PACKAGE), "a", "b"])."""
    tree = _tree()
    consts = _module_constants(tree)
    out = []
    for call in _calls(tree, "PathJoinSubstitution"):
        (arg,) = call.args
        assert isinstance(arg, ast.List)
        first, *rest = arg.elts
        if not (isinstance(first, ast.Call) and _calls(first, "FindPackageShare")):
            continue
        assert _const(first.args[0], consts) == PACKAGE
        parts = [_const(e, consts) for e in rest]
        assert all(isinstance(p, str) for p in parts), f"line {call.lineno}: non-constant path"
        out.append((call.lineno, Path(*parts)))
    return out


def test_launch_file_parses_and_declares_generate() -> None:
    tree = _tree()
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in funcs


def test_every_executable_is_a_console_script() -> None:
    nodes = _launch_nodes()
    ours = {exe for pkg, exe in nodes if pkg == PACKAGE}
    assert {"collision_checker", "velocity_filter", "planner", "mock_arm"} <= ours
    missing = ours - _console_scripts()
    assert not missing, f"launch file starts executables setup.py does not install: {missing}"
    others = {pkg for pkg, _ in nodes if pkg != PACKAGE}
    assert others <= {"robot_state_publisher"}, others


def test_every_package_path_exists_and_is_installed() -> None:
    paths = _share_paths()
    assert {Path("config/robot_collision.yaml"), Path("urdf/default_arm.urdf")} <= {
        p for _, p in paths}
    setup_text = (ROOT / "setup.py").read_text(encoding="utf-8")
    for lineno, rel in paths:
        assert (ROOT / rel).is_file(), f"line {lineno}: {rel} does not exist in the package"
        # setup.py installs launch/*.py, config/*.yaml and the whole urdf/ tree to share/
        folder = rel.parts[0]
        assert f'"{folder}' in setup_text or f"'{folder}" in setup_text, (
            f"{rel}: setup.py does not install {folder}/")
        if folder == "config":
            assert rel.suffix == ".yaml"


def test_config_has_a_section_per_launched_node() -> None:
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load((ROOT / "config" / "robot_collision.yaml").read_text(encoding="utf-8"))
    for pkg, exe in _launch_nodes():
        if pkg == PACKAGE:
            assert "ros__parameters" in data.get(exe, {}), f"config has no {exe} section"
    assert "nodes" in data["bringup"]["ros__parameters"]
    # the shipped file loads no world (a real arm starts with the user's); the demo's world is
    # given with the launch argument world_file (README, real-ROS tier)
    for node in ("collision_checker", "velocity_filter", "planner"):
        world = data[node]["ros__parameters"]["world_file"]
        if world:
            assert world.startswith("package://robot_collision/")
            assert (ROOT / world[len("package://robot_collision/"):]).is_file()
    assert (ROOT / "config" / "demo_world.yaml").is_file()


def _launch_functions(*names: str) -> dict[str, Any]:
    """The named module-level functions of the launch file, executed without launch_ros, with
    LaunchConfiguration(name).perform(context) reading ``context[name]``."""
    tree = _tree()
    body: list[ast.stmt] = [s for s in tree.body
                            if isinstance(s, ast.FunctionDef) and s.name in names]
    assert {s.name for s in body if isinstance(s, ast.FunctionDef)} == set(names)

    class LaunchConfiguration:
        def __init__(self, name: str) -> None:
            self.name = name

        def perform(self, context: dict[str, str]) -> str:
            return context[self.name]

    namespace: dict[str, Any] = {"Any": Any, "LaunchConfiguration": LaunchConfiguration}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(LAUNCH), "exec"), namespace)
    return namespace


def test_launch_arguments_for_package_dirs_world_and_clouds() -> None:
    """package_dirs, world_file and point_cloud_topics override the parameter file only when
    given ('none' clears the world file and the clouds)."""
    declared = {_const(c.args[0], {}) for c in _calls(_tree(), "DeclareLaunchArgument")}
    assert {"package_dirs", "world_file", "point_cloud_topics"} <= declared
    overrides = _launch_functions("_entries", "_overrides")["_overrides"]
    empty = {"package_dirs": "", "world_file": "", "point_cloud_topics": ""}
    assert overrides(empty) == ({}, {})
    robot, world = overrides({
        "package_dirs": "/home/me/ws/src,/opt/robots", "world_file": "/w.yaml",
        "point_cloud_topics": "/cam1/points, /cam2/points"})
    assert robot == {"package_dirs": ["/home/me/ws/src", "/opt/robots"]}
    assert world == {"world_file": "/w.yaml", "point_cloud_topics": ["/cam1/points",
                                                                      "/cam2/points"]}
    _, world = overrides({**empty, "world_file": "none", "point_cloud_topics": "none"})
    assert world == {"world_file": "", "point_cloud_topics": []}
