"""The layer rules of the package, read from the imports of every module (``ast``, no import).

Layers, lowest first: the foundation modules (``clock``, ``errors``, ``jitcall``,
``kernel_cache``, ``simd``, ``load_limits``, ``safe_xml``); ``geometry``; ``model``;
``collision``; ``planning`` and ``control`` (side by side: neither imports the other); ``tools``;
``ros``. A module may import its own layer and lower ones. Only ``ros`` imports rclpy or ROS
message packages; the package facade (``robot_collision/__init__.py``) is imported only by
``tools`` and ``ros``; ROS nodes never import each other; there are no import cycles.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "robot_collision"
FOUNDATION = {"_compat", "clock", "errors", "jitcall", "kernel_cache", "load_limits", "safe_xml",
              "simd"}
RANK = {
    "foundation": 0, "geometry": 1, "model": 2, "collision": 3, "planning": 4, "control": 4,
    "tools": 5, "ros": 6,
}
# (ament_index_python, a plain library that resolves package:// paths, is allowed everywhere)
ROS_IMPORTS = ("rclpy", "rcl_interfaces", "builtin_interfaces", "robot_collision_interfaces",
               "tf2_ros", "launch", "launch_ros")
NODE_MODULES = {"robot_collision.ros.checker_node", "robot_collision.ros.filter_node",
                "robot_collision.ros.planner_node", "robot_collision.ros.mock_arm",
                "robot_collision.ros.mock_camera"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """(absolute module name, line) of every import in the file, also inside functions;
    ``from pkg import name`` gives ``pkg.name`` when that is a module of the package, else
    ``pkg``."""
    modules = _modules()
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base[: len(base) - node.level + 1]
                mod = ".".join(parent + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:  # `from . import x` may import a submodule
                sub = f"{mod}.{alias.name}"
                yield (sub if sub in modules else mod), node.lineno


def _internal(target: str, modules: dict[str, Path]) -> str | None:
    """The package module that ``target`` names (a submodule or a name in a module)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return ""  # the facade robot_collision/__init__
    return "foundation" if parts[1] in FOUNDATION else parts[1]


def _edges() -> list[tuple[str, str, int]]:
    modules = _modules()
    out = []
    for name, path in modules.items():
        for target, line in _imports(name, path):
            dep = _internal(target, modules)
            if dep is not None and dep != name:
                out.append((name, dep, line))
    return out


def test_every_module_is_in_a_known_layer() -> None:
    unknown = sorted(m for m in _modules() if _layer(m) not in RANK and _layer(m) != "")
    assert not unknown, f"modules outside the layers {sorted(RANK)}: {unknown}"


def test_lower_layers_never_import_higher_ones() -> None:
    bad = []
    for src, dep, line in _edges():
        a, b = _layer(src), _layer(dep)
        if a == "":
            continue  # the facade re-exports the public API of every layer
        if b == "":
            if RANK[a] < RANK["tools"]:
                bad.append(f"{src}:{line} imports the package facade (use the module itself)")
            continue
        if RANK[b] > RANK[a] or (RANK[b] == RANK[a] and a != b):
            bad.append(f"{src}:{line} ({a}) imports {dep} ({b})")
    assert not bad, "\n".join(bad)


def test_only_the_ros_layer_imports_ros() -> None:
    modules = _modules()
    bad = []
    for name, path in modules.items():
        if _layer(name) == "ros":
            continue
        for target, line in _imports(name, path):
            if target.startswith(ROS_IMPORTS) or target.split(".")[0].endswith(("_msgs", "_srvs")):
                bad.append(f"{name}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_nodes_do_not_import_each_other() -> None:
    bad = [f"{src}:{line} imports {dep}" for src, dep, line in _edges()
           if src in NODE_MODULES and dep in NODE_MODULES]
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for src, dep, _ in _edges():
        if _layer(src) and _layer(dep):  # the facade and its lazy re-exports aside
            graph.setdefault(src, set()).add(dep)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycle = [*stack[stack.index(d):], d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
