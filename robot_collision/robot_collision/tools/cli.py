"""The ``robot_collision`` command line: one parser, one subcommand per task.

``robot_collision check-model ROBOT.urdf [--srdf ROBOT.srdf] [--package-dir DIR ...]`` loads a
robot as the nodes would and prints what was loaded (links, joints, shapes by kind, mesh vertex
counts), what was dropped or defaulted and why, and the self-colliding pairs at the home
configuration. It exits 0 when the robot loads (even if it self-collides), 1 on a load error, 2
on bad arguments.

``robot_collision generate-srdf ROBOT.urdf -o ROBOT.srdf [--samples N] [--seed S] [--srdf
EXISTING.srdf] [--package-dir DIR ...]`` samples configurations and writes the
``disable_collisions`` entries (reasons Adjacent, Default, Always, Never; see
:mod:`robot_collision.collision.srdf_generation`), merged into ``EXISTING.srdf`` when given,
with a progress bar on stderr. Exit status 0 when written, 1 on a load or write error.

Adding a subcommand is one function and its registration::

    @subcommand("name", "one-line help", arg("path", help="..."), arg("--flag", type=int))
    def name(args: argparse.Namespace) -> int:
        ...  # print to stdout, return the exit status
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Optional, TextIO

__all__ = ["main", "subcommand", "arg", "build_parser"]

Handler = Callable[[argparse.Namespace], int]
_SUBCOMMANDS: list[tuple[str, str, tuple[tuple[tuple[str, ...], dict[str, Any]], ...], Handler]]
_SUBCOMMANDS = []


def arg(*names: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An ``argparse`` argument of a subcommand: ``add_argument(*names, **kwargs)``."""
    return names, kwargs


def subcommand(
    name: str, help: str, *arguments: tuple[tuple[str, ...], dict[str, Any]]
) -> Callable[[Handler], Handler]:
    """Register the decorated ``handler(args) -> exit status`` as subcommand ``name``."""

    def register(handler: Handler) -> Handler:
        _SUBCOMMANDS.append((name, help, arguments, handler))
        return handler

    return register


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robot_collision",
        description="Robot collision tools: check a robot description, and more.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text, arguments, handler in _SUBCOMMANDS:
        # help= is %-formatted by argparse, description= is printed as written
        p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        for names, kwargs in arguments:
            p.add_argument(*names, **kwargs)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script entry point: parse ``argv`` (``sys.argv[1:]``) and run the subcommand."""
    args = build_parser().parse_args(argv)
    status: int = args.handler(args)
    return status


# --------------------------------------------------------------------------- check-model
_PACKAGE_DIR_HELP = (
    "NAME=PATH (the folder of package NAME, e.g. a source checkout named differently), or a "
    "folder that contains ROS packages (or is one), to resolve package:// URIs and xacro "
    "$(find NAME) without the ament index; repeatable"
)
_MESH_MODE_HELP = (
    "how meshes collide: their convex hull (default), the convex parts of a CoACD "
    "decomposition (follows concave meshes; minutes per mesh the first time, then cached), "
    "or auto: the decomposition only for meshes whose hull is much larger than the mesh "
    "(cheaper settings, in parallel; under a minute per corpus robot the first time)"
)
_XACRO_ARGS_HELP = "xacro arguments of a .xacro URDF/SRDF (as for the xacro command)"


def _package_dirs(entries: Sequence[str]) -> Optional[list[str]]:
    """``--package-dir`` values as ``package_dirs`` (``NAME=PATH`` entries are understood by
    ``robot_collision.model.urdf.resolve_uri``), None when there are none."""
    import os

    return [os.path.expanduser(e) for e in entries] or None


def _xacro_args(values: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":=")
        if not sep or not name:
            raise SystemExit(f"error: {value!r} is not a xacro argument NAME:=VALUE")
        out[name] = text
    return out


def _loading_what(mesh_mode: str) -> str:
    if mesh_mode == "decomposition":
        return ("meshes are read and decomposed with CoACD: minutes per mesh the first time, "
                "then read from the cache")
    if mesh_mode == "auto":
        return ("meshes are read, and those much smaller than their hull decomposed with "
                "CoACD: up to a minute the first time, then read from the cache")
    return "meshes are read and their hulls computed"


def _stage(message: str, quiet: bool = False) -> None:
    """A progress line on stderr (stdout stays the report)."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)


@subcommand(
    "check-model",
    "Load a URDF (and SRDF) and report what was loaded, what was dropped and why, and the "
    "self-colliding pairs at the home configuration.",
    arg("urdf", help="URDF file (or .xacro)"),
    arg("xacro_args", nargs="*", metavar="NAME:=VALUE", help=_XACRO_ARGS_HELP),
    arg("--srdf", help="SRDF file (disabled collision pairs, groups, named states)"),
    arg("--package-dir", action="append", default=[], metavar="NAME=PATH|DIR",
        help=_PACKAGE_DIR_HELP),
    arg("--mesh-mode", choices=("hull", "decomposition", "auto"), default="hull",
        help=_MESH_MODE_HELP),
    arg("--virtual-joints", action="store_true",
        help="add the SRDF's planar/floating virtual_joint at the root, as MoveIt does"),
    arg("-q", "--quiet", action="store_true", help="no progress lines on stderr"),
)
def check_model(args: argparse.Namespace) -> int:
    import time

    import numpy as np

    from ..collision.checker import CollisionChecker
    from ..errors import RobotCollisionError
    from ..geometry.shapes import Shape
    from ..model.robot_model import RobotModel

    t0 = time.perf_counter()
    _stage(f"loading {args.urdf} ({_loading_what(args.mesh_mode)}) ...", args.quiet)
    try:
        robot = RobotModel.from_urdf(
            args.urdf, srdf=args.srdf, package_dirs=_package_dirs(args.package_dir),
            warn=False, xacro_args=_xacro_args(args.xacro_args), mesh_mode=args.mesh_mode,
            virtual_joints=args.virtual_joints,
        )
    except RobotCollisionError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    _stage(f"loaded in {time.perf_counter() - t0:.1f} s", args.quiet)
    report = robot.load_report
    out: list[str] = [f"robot {robot.name!r} from {args.urdf}"]

    # ---- what was loaded
    jtypes = Counter(robot.joint_types.values())
    moving, mimic = robot.num_joints, len(robot.mimic_joint_names)
    out.append(
        f"  links: {len(robot.link_names)} (base {robot.base_name!r}); joints: "
        f"{len(robot.joint_types)} ({', '.join(f'{n} {t}' for t, n in sorted(jtypes.items()))})"
        f"; configuration: {moving} joints" + (f" + {mimic} mimic" if mimic else "")
    )
    names = {0: "sphere", 1: "capsule", 2: "box", 3: "cylinder", 4: "mesh"}
    shapes: list[Shape] = [s for ln in robot.link_names for s, _ in robot.collision_geometry(ln)]
    kinds = Counter(names.get(s.kind, f"kind {s.kind}") for s in shapes)
    with_geometry = sum(1 for ln in robot.link_names if robot.collision_geometry(ln))
    out.append(
        f"  collision shapes: {len(shapes)} on {with_geometry} links"
        + (f" ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})" if shapes else "")
    )
    if report.meshes:
        out.append("  meshes (vertices / faces as merged, hull vertices):")
        width = max(len(m.link) for m in report.meshes)
        for m in report.meshes:
            out.append(
                f"    {m.link:<{width}}  {m.vertices:>7} v {m.faces:>7} f {m.hull_vertices:>5} "
                f"hull  {m.uri}"
            )
    if moving:
        out.append("  joint limits (lower, upper, velocity):")
        width = max(len(n) for n in robot.joint_names)
        for j in robot.joints:
            unit = "m" if j.type == "prismatic" else "rad"
            out.append(
                f"    {j.name:<{width}}  {j.lower: .4g} .. {j.upper:.4g} {unit}, "
                f"{j.velocity:.4g} {unit}/s ({j.type})"
            )
    if robot.srdf is not None:
        states = sum(len(v) for v in robot.srdf.group_states.values())
        out.append(
            f"  SRDF {args.srdf}: {len(robot.srdf.disabled_pairs)} disabled pairs, "
            f"{len(robot.groups)} groups, {states} named states"
        )
        for vname, vtype, parent, child in robot.srdf.virtual_joints:
            out.append(
                f"  SRDF virtual_joint {vname!r} ({vtype}) attaches {child!r} to frame "
                f"{parent!r}" + ("" if vtype == "fixed" else
                                 ": no configuration variable here (the model's root stays "
                                 "fixed; give the URDF a planar/floating joint to move it)")
            )
    if robot.multi_dof_joints:
        out.append("  planar/floating joints (expanded into virtual joints, see the limits):")
        for jname, (jtype, variables) in robot.multi_dof_joints.items():
            out.append(f"    {jname} ({jtype}): {', '.join(variables)}")

    # ---- what was dropped or defaulted
    out.append(f"dropped or defaulted: {len(report.notes) or 'nothing'}")
    for note in report.notes:
        out.append(f"  [{note.action}] {note}")

    # ---- self-collisions at home
    from .warmup import kernel_cache_stats

    t1 = time.perf_counter()
    _stage("checking the home configuration (compiled kernels: loaded from the cache, or "
           "compiled on a cold cache, which takes minutes; see "
           "python -m robot_collision.tools.warmup) ...", args.quiet)
    before = kernel_cache_stats()
    checker = CollisionChecker(robot)
    q = robot.home_configuration()
    res = checker.check(q, exhaustive=True)
    stats = kernel_cache_stats().since(before)
    _stage(f"checked in {time.perf_counter() - t1:.1f} s ({stats.loaded} kernels loaded from "
           f"the cache, {stats.compiled} compiled)", args.quiet)
    rows = {n: i for i, n in enumerate(res.row_names)}
    cols = {n: i for i, n in enumerate(res.column_names)}
    pairs = res.colliding_pairs
    with np.printoptions(precision=4, suppress=True):
        shown = str(q) if len(q) <= 8 else (
            f"(each joint 0, or its range's middle when 0 is outside, {len(q)} joints)")
        out.append(f"self-colliding pairs at home q = {shown}: {len(pairs) or 'none'}")
    from ..geometry.shapes import Mesh

    def meshy(link: str) -> bool:
        return any(isinstance(s, Mesh) for s, _ in robot.collision_geometry(link))

    for a, b in pairs:
        depth = -float(res.signed[rows[a], cols[b]])
        hull = ("; mesh hull involved: may overlap only as hulls, see --mesh-mode "
                "decomposition" if args.mesh_mode == "hull" and (meshy(a) or meshy(b)) else "")
        out.append(f"  {a} -- {b}  (penetration {depth:.4f} m{hull})")
    if pairs:
        out.append(
            "  (pairs that touch by design, e.g. parts joined by a fixed joint or a tight "
            "fit, belong in the SRDF as <disable_collisions>)"
        )
    print("\n".join(out))
    return 0


# --------------------------------------------------------------------------- generate-srdf
class _ProgressBar:
    """A one-line progress bar on ``stream`` (default stderr): redrawn in place on a
    terminal, else printed at every 10 %."""

    def __init__(self, label: str, stream: Optional[TextIO] = None) -> None:
        import time

        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.clock = time.perf_counter
        self.t0 = self.clock()
        self.last_decile = -1

    def __call__(self, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        width = 30
        bar = "#" * int(frac * width) + "." * (width - int(frac * width))
        line = f"{self.label} [{bar}] {done}/{total} {self.clock() - self.t0:.1f} s"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if done >= total else ""))
            self.stream.flush()
        elif int(frac * 10) > self.last_decile:
            self.last_decile = int(frac * 10)
            print(line, file=self.stream, flush=True)


@subcommand(
    "generate-srdf",
    "Sample configurations and write an SRDF whose disable_collisions name the link pairs "
    "that are Adjacent, collide at the home pose (Default), collide in >= 95% of the samples "
    "(Always) or in none (Never), as MoveIt Setup Assistant does.",
    arg("urdf", help="URDF file (or .xacro)"),
    arg("xacro_args", nargs="*", metavar="NAME:=VALUE", help=_XACRO_ARGS_HELP),
    arg("-o", "--output", required=True, help="SRDF file to write"),
    arg("--samples", type=int, default=100_000, help="random configurations (default 100000)"),
    arg("--seed", type=int, default=0, help="sampler seed (default 0)"),
    arg("--srdf", help="existing SRDF to merge the new entries into (its content is kept)"),
    arg("--package-dir", action="append", default=[], metavar="NAME=PATH|DIR",
        help=_PACKAGE_DIR_HELP),
    arg("--mesh-mode", choices=("hull", "decomposition", "auto"), default="hull",
        help=_MESH_MODE_HELP),
    arg("-q", "--quiet", action="store_true", help="no progress bar"),
)
def generate_srdf(args: argparse.Namespace) -> int:
    from ..collision.srdf_generation import SRDFGenerationOptions, generate_disabled_pairs
    from ..errors import RobotCollisionError
    from ..model.robot_model import RobotModel
    from ..model.srdf_writer import srdf_with_disabled_pairs

    _stage(f"loading {args.urdf} ({_loading_what(args.mesh_mode)}) ...", args.quiet)
    try:
        robot = RobotModel.from_urdf(
            args.urdf, package_dirs=_package_dirs(args.package_dir),
            xacro_args=_xacro_args(args.xacro_args), mesh_mode=args.mesh_mode,
        )
        options = SRDFGenerationOptions(samples=args.samples, seed=args.seed)
        progress = None if args.quiet else _ProgressBar("sampling")
        result = generate_disabled_pairs(robot, options, progress)
        text, added = srdf_with_disabled_pairs(
            robot.name,
            [(p.link1, p.link2, p.reason) for p in result.disabled],
            existing=args.srdf,
            comment=(
                f"robot_collision generate-srdf: {result.samples} samples, seed {args.seed}, "
                f"{result.candidate_pairs} link pairs with geometry"
            ),
        )
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except (RobotCollisionError, OSError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for text in result.warnings():
        print(f"warning: {text}", file=sys.stderr)
    counts = ", ".join(f"{r} {n}" for r, n in result.by_reason().items())
    print(
        f"{args.output}: {added} disable_collisions added ({counts}) of "
        f"{result.candidate_pairs} link pairs with geometry; {result.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
