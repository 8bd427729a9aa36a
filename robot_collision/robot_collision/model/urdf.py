"""Safe URDF / SRDF parsing into plain descriptions (no kinematics here).

The parser uses lxml with entity expansion, DTD loading and network access disabled; a document
that declares a DOCTYPE or entities is refused. Besides standard URDF geometry it accepts a
non-standard ``<capsule radius="r" length="l"/>`` element inside ``<geometry>``.
``package://pkg/rel`` mesh URIs resolve through the ament index when available, else through
``package_dirs`` (a mapping ``{pkg: dir}`` or a list of directories that contain ``pkg/``).
Relative mesh paths resolve against the URDF file's directory (or ``package_dirs`` roots); as a
last resort ``package://pkg/rel`` is also looked up as ``<urdf dir>/pkg/rel``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np
from numpy.typing import NDArray

from ..errors import MeshError, SRDFError, URDFError
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere
from ..geometry.transforms import pose_from_xyz_rpy

__all__ = [
    "JointDescription",
    "LinkDescription",
    "URDFDescription",
    "SRDFDescription",
    "PackageDirs",
    "parse_urdf",
    "parse_srdf",
    "read_xml_source",
]

PackageDirs = Union[
    Mapping[str, Union[str, os.PathLike[str]]], Sequence[Union[str, os.PathLike[str]]], None
]

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")


@dataclass(frozen=True)
class JointDescription:
    """One URDF joint. ``origin`` (4, 4) child-joint frame in the parent link frame; ``axis``
    unit (3,) in the joint frame; limits in rad or m (``-inf/inf`` when unbounded);
    ``velocity`` in rad/s or m/s (``inf`` when not given)."""

    name: str
    type: str
    parent: str
    child: str
    origin: NDArray[np.float64]
    axis: NDArray[np.float64]
    lower: float
    upper: float
    velocity: float
    effort: float
    mimic: Optional[tuple[str, float, float]] = None  # (joint, multiplier, offset)


@dataclass(frozen=True)
class LinkDescription:
    """One URDF link with its collision shapes as ``(shape, (4, 4) pose in the link frame)``."""

    name: str
    collisions: list[tuple[Shape, NDArray[np.float64]]] = field(default_factory=list)


@dataclass(frozen=True)
class URDFDescription:
    name: str
    links: list[LinkDescription]
    joints: list[JointDescription]


@dataclass(frozen=True)
class SRDFDescription:
    """What the checker uses of an SRDF: disabled pairs, groups and named states."""

    disabled_pairs: list[tuple[str, str]]
    groups: dict[str, list[str]]  # group -> joint names (chains and links expanded later)
    group_links: dict[str, list[str]]
    group_chains: dict[str, list[tuple[str, str]]]
    group_subgroups: dict[str, list[str]]
    group_states: dict[str, dict[str, dict[str, float]]]  # group -> state -> joint -> value


def read_xml_source(source: Union[str, os.PathLike[str]], what: str) -> tuple[str, Optional[Path]]:
    """Return ``(xml_text, file_path or None)`` for a path or an XML string."""
    if isinstance(source, os.PathLike):
        path = Path(source)
    elif isinstance(source, str) and source.lstrip().startswith("<"):
        return source, None
    elif isinstance(source, str):
        path = Path(source)
    else:
        raise URDFError(f"{what} must be a file path or an XML string, got {type(source).__name__}")
    if not path.is_file():
        raise URDFError(f"{what} file {str(path)!r} does not exist")
    try:
        return path.read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as exc:
        raise URDFError(f"cannot read {what} file {str(path)!r}: {exc}") from exc


def _parse_xml(text: str, what: str, err: type[Exception]) -> object:
    from lxml import etree

    head = text[:4096]
    if "<!DOCTYPE" in head or "<!ENTITY" in text:
        raise err(
            f"{what} declares a DOCTYPE or entities, which are refused for safety; remove them"
        )
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
    )
    try:
        root = etree.fromstring(text.encode("utf-8"), parser=parser)
    except etree.XMLSyntaxError as exc:
        raise err(f"{what} is not well-formed XML: {exc}") from exc
    return root


def _floats(
    text: Optional[str], count: int, what: str, default: Optional[list[float]] = None
) -> list[float]:
    if text is None:
        if default is None:
            raise URDFError(f"{what} is missing")
        return list(default)
    try:
        vals = [float(v) for v in text.split()]
    except ValueError as exc:
        raise URDFError(f"{what} must be {count} numbers, got {text!r}") from exc
    if len(vals) != count or not all(np.isfinite(vals)):
        raise URDFError(f"{what} must be {count} finite numbers, got {text!r}")
    return vals


def _attr_float(el: object, name: str, what: str, default: Optional[float] = None) -> float:
    text = el.get(name)  # type: ignore[attr-defined]
    if text is None:
        if default is None:
            raise URDFError(f"{what} needs attribute {name!r}")
        return default
    try:
        return float(text)
    except ValueError as exc:
        raise URDFError(f"{what} attribute {name!r} must be a number, got {text!r}") from exc


def _origin(el: object, what: str) -> NDArray[np.float64]:
    o = el.find("origin")  # type: ignore[attr-defined]
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz"), 3, f"{what} origin xyz", [0.0, 0.0, 0.0])
    rpy = _floats(o.get("rpy"), 3, f"{what} origin rpy", [0.0, 0.0, 0.0])
    return pose_from_xyz_rpy(xyz, rpy)


def _package_roots(package_dirs: PackageDirs) -> tuple[dict[str, Path], list[Path]]:
    named: dict[str, Path] = {}
    roots: list[Path] = []
    if package_dirs is None:
        return named, roots
    if isinstance(package_dirs, Mapping):
        named = {k: Path(v) for k, v in package_dirs.items()}
    elif isinstance(package_dirs, (str, os.PathLike)):
        roots = [Path(package_dirs)]
    else:
        roots = [Path(p) for p in package_dirs]
    return named, roots


def resolve_uri(uri: str, base_dir: Optional[Path], package_dirs: PackageDirs) -> Path:
    """Resolve a mesh filename (``package://``, ``file://``, absolute or relative) to a path."""
    named, roots = _package_roots(package_dirs)
    if uri.startswith("package://"):
        # "package:///pkg/rel" (an extra slash, written by some exporters) means "package://pkg/rel"
        rest = uri[len("package://") :].lstrip("/")
        pkg, _, rel = rest.partition("/")
        if pkg in named:
            return named[pkg] / rel
        for root in roots + ([base_dir] if base_dir is not None else []):
            cand = root / pkg / rel
            if cand.exists():
                return cand
            if root.name == pkg:
                return root / rel
        try:
            from ament_index_python.packages import (  # type: ignore[import-not-found,unused-ignore]
                PackageNotFoundError,
                get_package_share_directory,
            )

            try:
                return Path(get_package_share_directory(pkg)) / rel
            except (PackageNotFoundError, LookupError, ValueError, OSError):
                pass  # not installed, or no ament index on this machine
        except ImportError:
            pass
        raise MeshError(
            f"cannot resolve {uri!r}: package {pkg!r} is not in the ament index; "
            "pass package_dirs={'%s': '/path/to/%s'}" % (pkg, pkg)
        )
    if uri.startswith("file://"):
        from urllib.parse import unquote

        return Path(unquote(uri[len("file://") :]))
    p = Path(uri)
    if p.is_absolute():
        return p
    for root in ([base_dir] if base_dir else []) + roots:
        cand = root / p
        if cand.exists():
            return cand
    return (base_dir or Path.cwd()) / p


def _geometry(
    geom: object, what: str, base_dir: Optional[Path], package_dirs: PackageDirs
) -> Shape:
    children = [c for c in geom if isinstance(c.tag, str)]  # type: ignore[attr-defined]
    if len(children) != 1:
        raise URDFError(f"{what} <geometry> must contain exactly one shape element")
    g = children[0]
    tag = g.tag
    try:
        if tag == "sphere":
            return Sphere(_attr_float(g, "radius", what))
        if tag == "capsule":
            return Capsule(_attr_float(g, "radius", what), _attr_float(g, "length", what))
        if tag == "cylinder":
            return Cylinder(_attr_float(g, "radius", what), _attr_float(g, "length", what))
        if tag == "box":
            x, y, z = _floats(g.get("size"), 3, f"{what} box size")
            return Box(x, y, z)
        if tag == "mesh":
            fn = g.get("filename")
            if not fn:
                raise URDFError(f"{what} mesh needs a filename attribute")
            scale = _floats(g.get("scale"), 3, f"{what} mesh scale", [1.0, 1.0, 1.0])
            path = resolve_uri(fn, base_dir, package_dirs)
            return Mesh(path, scale=np.asarray(scale))
    except URDFError:
        raise
    except MeshError as exc:
        raise MeshError(f"{what}: {exc}") from exc
    except Exception as exc:  # ShapeError and friends: add location
        raise URDFError(f"{what}: {exc}") from exc
    raise URDFError(
        f"{what} has unsupported geometry <{tag}>; use sphere, capsule, box, cylinder or mesh"
    )


def parse_urdf(
    source: Union[str, os.PathLike[str]], package_dirs: PackageDirs = None
) -> URDFDescription:
    """Parse a URDF file path or XML string. Raises :class:`URDFError` with a fix-it message."""
    text, path = read_xml_source(source, "URDF")
    root = _parse_xml(text, "URDF", URDFError)
    if root.tag != "robot":  # type: ignore[attr-defined]
        raise URDFError(f"URDF root element must be <robot>, got <{root.tag}>")  # type: ignore[attr-defined]
    base_dir = path.parent if path is not None else None
    links: list[LinkDescription] = []
    seen: set[str] = set()
    for el in root.findall("link"):  # type: ignore[attr-defined]
        name = el.get("name")
        if not name:
            raise URDFError("every <link> needs a non-empty name attribute")
        if name in seen:
            raise URDFError(f"link {name!r} is defined twice")
        seen.add(name)
        cols = []
        for i, c in enumerate(el.findall("collision")):
            what = f"link {name!r} collision #{i}"
            geom = c.find("geometry")
            if geom is None:
                raise URDFError(f"{what} has no <geometry>")
            cols.append((_geometry(geom, what, base_dir, package_dirs), _origin(c, what)))
        links.append(LinkDescription(name, cols))
    if not links:
        raise URDFError("URDF has no <link> elements")
    joints: list[JointDescription] = []
    jseen: set[str] = set()
    for el in root.findall("joint"):  # type: ignore[attr-defined]
        name = el.get("name")
        what = f"joint {name!r}"
        if not name:
            raise URDFError("every <joint> needs a non-empty name attribute")
        if name in jseen:
            raise URDFError(f"joint {name!r} is defined twice")
        jseen.add(name)
        jtype = el.get("type")
        if jtype not in _JOINT_TYPES:
            raise URDFError(f"{what} has type {jtype!r}; supported: {', '.join(_JOINT_TYPES)}")
        parent_el, child_el = el.find("parent"), el.find("child")
        if (
            parent_el is None
            or child_el is None
            or not parent_el.get("link")
            or not child_el.get("link")
        ):
            raise URDFError(f"{what} needs <parent link=...> and <child link=...>")
        parent, child = parent_el.get("link"), child_el.get("link")
        for ln in (parent, child):
            if ln not in seen:
                raise URDFError(f"{what} refers to unknown link {ln!r}")
        axis_el = el.find("axis")
        axis = np.array(
            _floats(
                axis_el.get("xyz") if axis_el is not None else None,
                3,
                f"{what} axis",
                [1.0, 0.0, 0.0],
            )
        )
        nrm = float(np.linalg.norm(axis))
        if jtype != "fixed":
            if nrm < 1e-9:
                raise URDFError(f"{what} axis must be a non-zero vector")
            axis = axis / nrm
        lim = el.find("limit")
        lower, upper, vel, eff = -np.inf, np.inf, np.inf, np.inf
        if lim is not None:
            vel = _attr_float(lim, "velocity", f"{what} limit", np.inf)
            eff = _attr_float(lim, "effort", f"{what} limit", np.inf)
            if jtype in ("revolute", "prismatic"):
                lower = _attr_float(lim, "lower", f"{what} limit", 0.0)
                upper = _attr_float(lim, "upper", f"{what} limit", 0.0)
        elif jtype in ("revolute", "prismatic"):
            raise URDFError(f"{what} of type {jtype} needs a <limit lower upper velocity effort>")
        if lower > upper:
            raise URDFError(f"{what} has lower limit {lower} above upper limit {upper}")
        if vel <= 0:
            raise URDFError(f"{what} velocity limit must be positive, got {vel}")
        mim = el.find("mimic")
        mimic = None
        if mim is not None:
            if not mim.get("joint"):
                raise URDFError(f"{what} <mimic> needs a joint attribute")
            mimic = (
                mim.get("joint"),
                _attr_float(mim, "multiplier", f"{what} mimic", 1.0),
                _attr_float(mim, "offset", f"{what} mimic", 0.0),
            )
        joints.append(
            JointDescription(
                name,
                jtype,
                parent,
                child,
                _origin(el, what),
                axis,
                float(lower),
                float(upper),
                float(vel),
                float(eff),
                mimic,
            )
        )
    return URDFDescription(root.get("name") or "robot", links, joints)  # type: ignore[attr-defined]


def parse_srdf(source: Union[str, os.PathLike[str]], link_names: Iterable[str]) -> SRDFDescription:
    """Parse an SRDF path or XML string; unknown link names raise :class:`SRDFError`."""
    try:
        text, _ = read_xml_source(source, "SRDF")
    except URDFError as exc:
        raise SRDFError(str(exc)) from exc
    root = _parse_xml(text, "SRDF", SRDFError)
    known = set(link_names)
    disabled: list[tuple[str, str]] = []
    for el in root.findall("disable_collisions"):  # type: ignore[attr-defined]
        a, b = el.get("link1"), el.get("link2")
        if not a or not b:
            raise SRDFError("<disable_collisions> needs link1 and link2 attributes")
        for ln in (a, b):
            if ln not in known:
                raise SRDFError(
                    f"SRDF disable_collisions names link {ln!r}, which is not in the URDF"
                )
        disabled.append((a, b))
    groups: dict[str, list[str]] = {}
    glinks: dict[str, list[str]] = {}
    gchains: dict[str, list[tuple[str, str]]] = {}
    gsub: dict[str, list[str]] = {}
    for g in root.findall("group"):  # type: ignore[attr-defined]
        gname = g.get("name")
        if not gname:
            raise SRDFError("every SRDF <group> needs a name")
        groups[gname] = [j.get("name") for j in g.findall("joint") if j.get("name")]
        glinks[gname] = [x.get("name") for x in g.findall("link") if x.get("name")]
        gchains[gname] = [(c.get("base_link"), c.get("tip_link")) for c in g.findall("chain")]
        gsub[gname] = [x.get("name") for x in g.findall("group") if x.get("name")]
    states: dict[str, dict[str, dict[str, float]]] = {}
    for s in root.findall("group_state"):  # type: ignore[attr-defined]
        vals: dict[str, float] = {}
        for j in s.findall("joint"):
            try:
                vals[j.get("name")] = float(j.get("value", "").split()[0])
            except (ValueError, IndexError) as exc:
                raise SRDFError(
                    f"group_state {s.get('name')!r} joint value is not a number"
                ) from exc
        states.setdefault(s.get("group") or "", {})[s.get("name") or ""] = vals
    return SRDFDescription(disabled, groups, glinks, gchains, gsub, states)
