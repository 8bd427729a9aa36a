"""Generate the node reference (topics, services, actions, parameters) from the nodes themselves.

Each node of :data:`~robot_collision.ros.bringup.NODE_REGISTRY` is started in-process on the
default robot; its declared parameters (with their descriptors and defaults) and its
publishers, subscriptions, services and action servers are read back through rclpy's graph
API and rendered as Markdown. The README's reference section is this output, so the code is
the single source. The launch file's arguments are documented the same way, read from
``launch/robot_collision.launch.py`` itself (:func:`launch_arguments`)::

    python -m robot_collision.ros.reference            # print the Markdown
    python -m robot_collision.ros.reference --write    # update README.md between the markers
    python -m robot_collision.ros.reference --check    # exit 1 if README.md is out of date
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["launch_arguments", "launch_arguments_markdown", "node_reference", "render_markdown",
           "main"]

BEGIN = "<!-- REFERENCE:BEGIN -->"
END = "<!-- REFERENCE:END -->"
LAUNCH_BEGIN = "<!-- LAUNCH_ARGUMENTS:BEGIN -->"
LAUNCH_END = "<!-- LAUNCH_ARGUMENTS:END -->"
LAUNCH_FILE = ("launch", "robot_collision.launch.py")

# internal topics/services every rclpy node has; not part of the product's interface
_HIDDEN_SUFFIXES = (
    "/describe_parameters",
    "/get_parameter_types",
    "/get_parameters",
    "/list_parameters",
    "/set_parameters",
    "/set_parameters_atomically",
    "/get_type_description",
)
_HIDDEN_TOPICS = ("/rosout", "/parameter_events")
# Nodes that listen to tf2 where tf2_ros is installed (robot_collision.ros.point_clouds.
# tf2_lookup: point cloud frames). Shown as "(tf2)" rows whether or not tf2 is installed here,
# so that the reference is the same on every machine; checked against the node where it is.
TF2_NODES = ("collision_checker", "velocity_filter", "planner")
_TF2_SUBSCRIPTIONS = (("/tf", "tf2_msgs/msg/TFMessage"), ("/tf_static", "tf2_msgs/msg/TFMessage"))


def _fmt_value(value: Any) -> str:
    if isinstance(value, str):
        return f'`"{value}"`' if value else '`""`'
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(str(v) for v in value) + "]`" if value else "`[]`"
    return f"`{value}`"


def _action_names(names_and_types: list[tuple[str, list[str]]]) -> dict[str, str]:
    """Action servers show up as ``<name>/_action/...`` services; fold them back."""
    out: dict[str, str] = {}
    for name, types in names_and_types:
        if "/_action/send_goal" in name:
            base = name.split("/_action/")[0]
            out[base] = types[0].replace("_SendGoal", "")
    return out


def _is_moveit(type_name: str) -> bool:
    return type_name.startswith("moveit_msgs/")


def _resolve(name: str, namespace: str, node_name: str) -> str:
    """Absolute topic name of ``name`` as the node resolves it (``~`` = the node's name)."""
    ns = namespace.rstrip("/")
    if name.startswith("/"):
        return name
    if name.startswith("~/"):
        return f"{ns}/{node_name}/{name[2:]}"
    return f"{ns}/{name}"


def _moveit_rows(
    cls: type,
    namespace: str,
    node_name: str,
    pubs: list[tuple[str, list[str]]],
    subs: list[tuple[str, list[str]]],
) -> list[tuple[str, str, str]]:
    """(kind, name, type) of the interfaces the node adds when moveit_msgs is installed, from
    the class's ``MOVEIT_INTERFACES`` declaration, so that the reference reads the same with or
    without moveit_msgs. Where moveit_msgs is installed, the declaration is checked against
    what the node actually created (a drift raises RuntimeError)."""
    from .moveit import moveit_available

    declared = sorted(
        (kind, _resolve(name, namespace, node_name), type_name)
        for kind, name, type_name in getattr(cls, "MOVEIT_INTERFACES", ())
    )
    if moveit_available():
        actual = sorted(
            [("publishes", n, t[0]) for n, t in pubs if _is_moveit(t[0])]
            + [("subscribes", n, t[0]) for n, t in subs if _is_moveit(t[0])]
        )
        if actual != declared:
            raise RuntimeError(
                f"{cls.__name__}.MOVEIT_INTERFACES {declared} differs from the moveit_msgs "
                f"interfaces the node created: {actual}")
    return declared


def _tf2_available() -> bool:
    try:
        import tf2_ros  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _tf2_rows(name: str, subs: list[tuple[str, list[str]]]) -> list[tuple[str, str, str]]:
    """The (tf2) rows of node ``name``; where tf2_ros is installed they must be what the node
    subscribed to (a drift from :data:`TF2_NODES` raises RuntimeError)."""
    declared = [("subscribes", n, t) for n, t in _TF2_SUBSCRIPTIONS] if name in TF2_NODES else []
    if _tf2_available():
        actual = [("subscribes", n, t[0]) for n, t in sorted(subs)
                  if (n, t[0]) in _TF2_SUBSCRIPTIONS]
        if actual != declared:
            raise RuntimeError(f"{name}: tf2 subscriptions {actual} differ from TF2_NODES' "
                               f"{declared} (robot_collision/ros/reference.py)")
    return declared


def node_reference(name: str, class_path: str, context: Any, executor: Any) -> dict[str, Any]:
    """Start one node and collect its interface."""
    import importlib

    module, cls_name = class_path.split(":")
    cls = getattr(importlib.import_module(module), cls_name)
    from robot_collision import default_robot_paths

    urdf, srdf = default_robot_paths()
    from rclpy.parameter import Parameter

    overrides = [
        Parameter("urdf_path", value=str(urdf)),
        Parameter("srdf_path", value=str(srdf)),
    ]
    node = cls(context=context, parameter_overrides=overrides)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        fqn_ns = node.get_namespace()
        nname = node.get_name()
        pubs = node.get_publisher_names_and_types_by_node(nname, fqn_ns)
        subs = node.get_subscriber_names_and_types_by_node(nname, fqn_ns)
        srvs = node.get_service_names_and_types_by_node(nname, fqn_ns)
        actions = _action_names(srvs)
        optional = _moveit_rows(cls, fqn_ns, nname, pubs, subs)
        tf2 = _tf2_rows(nname, subs)
        params = []
        for pname in sorted(node.list_parameters([], 0).names):
            if pname in ("use_sim_time", "start_type_description_service") or pname.startswith(
                "qos_overrides."
            ):
                continue
            descriptor = node.describe_parameter(pname)
            value = node.get_parameter(pname).value
            if pname in ("urdf_path", "srdf_path"):
                value = ""
            params.append((pname, value, descriptor.description.replace("\n", " ")))
        return {
            "name": nname,
            "doc": (sys.modules[cls.__module__].__doc__ or "").strip().splitlines()[0],
            "publishers": sorted(
                (n, t[0]) for n, t in pubs
                if n not in _HIDDEN_TOPICS and "/_action/" not in n and not _is_moveit(t[0])
            ),
            "subscriptions": sorted(
                (n, t[0]) for n, t in subs
                if n not in _HIDDEN_TOPICS and "/_action/" not in n and not _is_moveit(t[0])
                and (n, t[0]) not in _TF2_SUBSCRIPTIONS
            ),
            "moveit": optional,
            "tf2": tf2,
            "services": sorted(
                (n, t[0])
                for n, t in srvs
                if not n.endswith(_HIDDEN_SUFFIXES) and "/_action/" not in n
            ),
            "actions": sorted(actions.items()),
            "parameters": params,
        }
    finally:
        executor.remove_node(node)
        node.destroy_node()


def render_markdown(refs: list[dict[str, Any]]) -> str:
    lines = [
        "## Node reference",
        "",
        "Generated from the nodes themselves by `python -m robot_collision.ros.reference "
        "--write` (each node started on the default robot; defaults shown are the code's, "
        "`config/robot_collision.yaml` overrides some of them). Interfaces marked (MoveIt) "
        "exist when `moveit_msgs` is installed (see `robot_collision/ros/moveit.py`), those "
        "marked (tf2) when `tf2_ros` is (point cloud frames).",
    ]
    for ref in refs:
        lines += ["", f"### `{ref['name']}`", "", ref["doc"], ""]
        rows = []
        for kind, key in (
            ("publishes", "publishers"),
            ("subscribes", "subscriptions"),
            ("service", "services"),
            ("action", "actions"),
        ):
            rows += [f"| {kind} | `{n}` | `{t}` |" for n, t in ref[key]]
        rows += [f"| {kind} (MoveIt) | `{n}` | `{t}` |" for kind, n, t in ref["moveit"]]
        rows += [f"| {kind} (tf2) | `{n}` | `{t}` |" for kind, n, t in ref.get("tf2", [])]
        if rows:
            lines += ["| interface | name | type |", "| --- | --- | --- |", *rows, ""]
        if ref["parameters"]:
            lines += ["| parameter | default | description |", "| --- | --- | --- |"]
            lines += [
                f"| `{p}` | {_fmt_value(v)} | {d.replace('|', '/')} |"
                for p, v, d in ref["parameters"]
            ]
    return "\n".join(lines) + "\n"


def generate() -> str:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from .bringup import NODE_REGISTRY

    context = rclpy.Context()
    rclpy.init(context=context, args=[])
    executor = SingleThreadedExecutor(context=context)
    try:
        refs = [node_reference(n, p, context, executor) for n, p in NODE_REGISTRY.items()]
    finally:
        context.try_shutdown()
        executor.shutdown()
    return render_markdown(refs)


# --------------------------------------------------------------------------- launch arguments
def _launch_default(node: ast.AST, consts: dict[str, Any]) -> str:
    """A default value as launch's substitution syntax: ``"false"``, or
    ``$(find-pkg-share robot_collision)/config/x.yaml`` for a PathJoinSubstitution."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(consts.get(node.id), str):
        return str(consts[node.id])
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "PathJoinSubstitution" and node.args
            and isinstance(node.args[0], ast.List)):
        parts = []
        for elt in node.args[0].elts:
            if (isinstance(elt, ast.Call) and isinstance(elt.func, ast.Name)
                    and elt.func.id == "FindPackageShare" and elt.args):
                parts.append(f"$(find-pkg-share {_launch_default(elt.args[0], consts)})")
            else:
                parts.append(_launch_default(elt, consts))
        return "/".join(parts)
    raise ValueError(f"line {getattr(node, 'lineno', '?')}: cannot render the default value "
                     f"{ast.dump(node)} of a launch argument")


def launch_arguments(path: Path | None = None) -> list[tuple[str, str, str]]:
    """(name, default, description) of every ``DeclareLaunchArgument`` of the launch file,
    read with ``ast`` (works without launch installed). Where ``launch`` can be imported the
    result is checked against the launch description itself (a drift raises RuntimeError)."""
    from .. import data_path

    path = path or data_path(*LAUNCH_FILE)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    consts = {t.id: stmt.value.value for stmt in tree.body if isinstance(stmt, ast.Assign)
              and isinstance(stmt.value, ast.Constant) for t in stmt.targets
              if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "DeclareLaunchArgument"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        name = _launch_default(node.args[0] if node.args else kw["name"], consts)
        default = _launch_default(kw["default_value"], consts) if "default_value" in kw else ""
        desc_node = kw.get("description")
        desc = desc_node.value if isinstance(desc_node, ast.Constant) else ""
        out.append((name, default, str(desc)))
    _check_against_launch(path, out)
    return out


def _check_against_launch(path: Path, declared: list[tuple[str, str, str]]) -> None:
    try:
        import launch  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        import launch_ros  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("_robot_collision_launch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    actual = [(a.name, a.description) for a in
              module.generate_launch_description().get_launch_arguments()]
    if actual != [(n, d) for n, _, d in declared]:
        raise RuntimeError(f"launch arguments read from {path} {declared} differ from the "
                           f"launch description's {actual}")


def launch_arguments_markdown() -> str:
    """The README's launch-argument table."""
    lines = [
        "Launch arguments of `robot_collision.launch.py` (generated from the launch file by "
        "`python -m robot_collision.ros.reference --write`):",
        "",
        "| argument | default | description |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{n}` | `{d}` | {t.replace('|', '/')} |" for n, d, t in launch_arguments()]
    return "\n".join(lines) + "\n"


def _splice(readme: str, block: str, begin: str = BEGIN, end: str = END) -> str:
    if begin not in readme or end not in readme:
        raise ValueError(f"README.md has no {begin} ... {end} block")
    head, _, rest = readme.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{block}{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--write", action="store_true", help="update README.md in place")
    ap.add_argument("--check", action="store_true", help="fail if README.md is out of date")
    ap.add_argument("--readme", default=str(Path(__file__).resolve().parents[3] / "README.md"))
    args = ap.parse_args(argv)
    block = generate()
    launch_block = launch_arguments_markdown()
    if not (args.write or args.check):
        print(block)
        print(launch_block)
        return 0
    path = Path(args.readme)
    readme = path.read_text(encoding="utf-8")
    new = _splice(_splice(readme, block), launch_block, LAUNCH_BEGIN, LAUNCH_END)
    if args.check:
        if new != readme:
            print("README.md node reference or launch arguments are out of date: run "
                  "`python -m robot_collision.ros.reference --write`")
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
