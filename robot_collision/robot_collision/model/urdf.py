"""Safe URDF / SRDF parsing into plain descriptions (no kinematics here).

The parser uses lxml with entity expansion, DTD loading and network access disabled; a document
that declares a DOCTYPE or entities is refused. Besides standard URDF geometry it accepts a
non-standard ``<capsule radius="r" length="l"/>`` element inside ``<geometry>``.
``package://pkg/rel`` mesh URIs resolve through the ament index when available, else through
``package_dirs`` (a mapping ``{pkg: dir}``, or a list of directories that contain ``pkg/`` or
are ``pkg``, and ``"pkg=dir"`` entries). A package that is found but lacks the file is
reported as such.
Relative mesh paths resolve against the URDF file's directory (or ``package_dirs`` roots); as a
last resort ``package://pkg/rel`` is also looked up as ``<urdf dir>/pkg/rel``.

Lenient where real files are sloppy and the fix is safe, as MoveIt and pinocchio are; each such
fix is a note in the :class:`~robot_collision.model.load_report.LoadReport` and a
:class:`~robot_collision.errors.ModelLoadWarning`:

- a moving joint without a velocity limit (``velocity`` missing or ``"0"``, or no ``<limit>`` on
  a continuous joint) gets ``LoadLimits.default_velocity_limit`` (never unlimited); fixed joints
  need none; a missing or zero ``effort`` means "not given" (``inf``);
- a mimic joint naming a joint that does not exist becomes an independent joint (MoveIt does
  the same; pinocchio treats every mimic joint as independent unless asked otherwise);
- an SRDF entry naming a link or joint that is not in the URDF is dropped, the rest is kept.

Everything else that is malformed is a typed error (:class:`~robot_collision.errors.URDFError`,
:class:`~robot_collision.errors.SRDFError`, :class:`~robot_collision.errors.MeshError`): XML
that is not well-formed, a DOCTYPE or entity, a missing or duplicate name, an unknown joint type
or link, a revolute/prismatic joint without ``<limit>``, any non-finite number (limits, origins,
axes, sizes, mesh scale, mimic multiplier/offset), a negative velocity or effort limit, lower
above upper, a missing or unreadable mesh file.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import NDArray

from ..errors import MeshError, RobotCollisionError, SRDFError, URDFError
from ..geometry.mesh_io import load_mesh
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere
from ..geometry.transforms import pose_from_xyz_rpy
from ..load_limits import LoadLimits, limits_or_default
from ..safe_xml import parse_xml
from .load_report import DEFAULTED, DROPPED, INDEPENDENT, LoadReport, MeshInfo

__all__ = [
    "JointDescription",
    "LinkDescription",
    "URDFDescription",
    "SRDFDescription",
    "PackageDirs",
    "parse_urdf",
    "parse_srdf",
    "read_xml_source",
    "XMLSource",
    "expand_multi_dof_joints",
    "expand_xacro",
    "is_xacro",
    "XacroArgs",
    "PLANAR_VARIABLES",
    "FLOATING_VARIABLES",
]

PackageDirs = Union[
    Mapping[str, Union[str, os.PathLike[str]]], Sequence[Union[str, os.PathLike[str]]], None
]

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "planar", "floating")

PLANAR_VARIABLES = ("x", "y", "theta")
"""Suffixes of a planar joint's virtual joints, ``<joint>/x`` etc. (MoveIt's variable names)."""
FLOATING_VARIABLES = ("x", "y", "z", "yaw", "pitch", "roll")
"""Suffixes of a floating joint's virtual joints: translation, then R = Rz(yaw) Ry(pitch)
Rx(roll)."""


@dataclass(frozen=True)
class JointDescription:
    """One URDF joint. ``origin`` (4, 4) child-joint frame in the parent link frame; ``axis``
    unit (3,) in the joint frame; limits in rad or m (``-inf/inf`` when unbounded);
    ``velocity`` in rad/s or m/s (for a moving joint that gives none,
    ``LoadLimits.default_velocity_limit``; ``inf`` for fixed joints); ``effort`` in N·m or N
    (``inf`` when not given)."""

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
    """A parsed URDF: links and joints in file order, and what the parser had to change."""

    name: str
    links: list[LinkDescription]
    joints: list[JointDescription]
    report: LoadReport = field(default_factory=LoadReport, compare=False, repr=False)
    multi_dof: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Planar and floating joints of the file: name -> (type, its virtual joints in order)."""


@dataclass(frozen=True)
class SRDFDescription:
    """What the checker uses of an SRDF: disabled pairs, groups and named states."""

    disabled_pairs: list[tuple[str, str]]
    groups: dict[str, list[str]]  # group -> joint names (chains and links expanded later)
    group_links: dict[str, list[str]]
    group_chains: dict[str, list[tuple[str, str]]]
    group_subgroups: dict[str, list[str]]
    group_states: dict[str, dict[str, dict[str, float]]]  # group -> state -> joint -> value
    virtual_joints: list[tuple[str, str, str, str]] = field(default_factory=list)
    """``<virtual_joint>`` entries: (name, type, parent_frame, child_link)."""
    group_state_lists: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)
    """Multi-valued group_state joints (a planar or floating joint's values), as written."""


XMLSource = Union[str, bytes, os.PathLike[str]]
"""A file path, XML text (a ``str`` starting with ``<``) or an XML document as ``bytes``."""


def read_xml_source(
    source: XMLSource,
    what: str,
    error: type[RobotCollisionError] = URDFError,
    max_name: str = "max_urdf_bytes",
    limits: Optional[LoadLimits] = None,
) -> tuple[Union[str, bytes], Optional[Path]]:
    """``(document, file path or None)`` for a path, XML text or XML bytes, refused with
    ``error`` when over ``getattr(limits, max_name)`` bytes: a file's size is checked with
    ``stat`` before it is read. A file is returned as bytes (its encoding declaration or BOM
    decides), text as ``str``."""
    lim = limits_or_default(limits)
    cap = int(getattr(lim, max_name))
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > cap:
            raise error(lim.exceeded(max_name, f"{what} document", len(data), "bytes"))
        return data, None
    if isinstance(source, str) and source.lstrip(" \t\r\n\ufeff").startswith("<"):
        # characters <= UTF-8 bytes: count the bytes only when the characters pass
        n = len(source) if len(source) > cap else len(source.encode("utf-8", "surrogatepass"))
        if n > cap:
            raise error(lim.exceeded(max_name, f"{what} text", n, "bytes"))
        return source, None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
    else:
        raise error(
            f"{what} must be a file path, XML text or bytes, got {type(source).__name__}"
        )
    try:
        st = path.stat()
    except OSError:
        raise error(f"{what} file {str(path)!r} does not exist") from None
    if not path.is_file():
        raise error(f"{what} file {str(path)!r} is not a regular file")
    if st.st_size > cap:
        raise error(lim.exceeded(max_name, f"{what} file {str(path)!r}", st.st_size, "bytes"))
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise error(f"cannot read {what} file {str(path)!r}: {exc}") from exc
    if len(data) > cap:  # grew since stat
        raise error(lim.exceeded(max_name, f"{what} file {str(path)!r}", len(data), "bytes"))
    return data, path


XACRO_NAMESPACE = "http://www.ros.org/wiki/xacro"
XacroArgs = Optional[Mapping[str, str]]
"""``name:=value`` arguments of a xacro file, as ``{name: value}``."""
_XACRO_LOCK = threading.Lock()  # xacro keeps its file and macro stacks in module globals


def _is_xacro_namespace(uri: Optional[str]) -> bool:
    """xacro's namespace as files write it: http://www.ros.org/wiki/xacro, http://ros.org/wiki/
    xacro, http://wiki.ros.org/xacro (with or without a trailing slash)."""
    if not uri:
        return False
    u = uri.strip().rstrip("/").lower()
    return u.endswith("xacro") and "ros.org" in u


def is_xacro(root: Any) -> bool:
    """Whether the parsed document ``root`` is an unexpanded xacro file: an element or
    attribute in the xacro namespace, or a ``$(...)`` / ``${...}`` substitution in an
    attribute or text (decided on the parsed document, like the DOCTYPE check; the search runs
    in libxml2's XPath, 0.1 s on a 400,000-element document)."""
    if any(_is_xacro_namespace(uri) for uri in (root.nsmap or {}).values()):
        return True
    if root.xpath('boolean(//@*[contains(., "$(") or contains(., "${")]'
                  ' | //text()[contains(., "$(") or contains(., "${")])'):
        return True
    named = root.xpath('//*[namespace-uri() != ""] | //@*[namespace-uri() != ""]')
    return any(_is_xacro_namespace(_namespace_of(node)) for node in named)


def _namespace_of(node: Any) -> str:
    """Namespace URI of an element or attribute result of lxml's XPath."""
    name = node.tag if hasattr(node, "tag") else getattr(node, "attrname", "")
    return str(name)[1:].partition("}")[0] if str(name).startswith("{") else ""


def _xacro_how(what: str, path: Optional[Path]) -> str:
    shown = str(path) if path is not None else f"robot.{what.lower()}.xacro"
    return (
        f"expand it first (xacro {shown} name:=value ... > robot.{what.lower()}), or give "
        "the file path to robot_collision with the xacro package installed (pip install "
        "xacro, or apt install ros-$ROS_DISTRO-xacro) and its arguments (Python: "
        "xacro_args={'name': 'value'}; CLI: name:=value)"
    )


def expand_xacro(
    path: Path,
    what: str,
    error: type[RobotCollisionError],
    xacro_args: XacroArgs = None,
    package_dirs: PackageDirs = None,
    limits: Optional[LoadLimits] = None,
) -> str:
    """The xacro file ``path`` expanded with the ``xacro`` package (``$(arg name)`` from
    ``xacro_args``; ``$(find pkg)`` from ``package_dirs``, else the ament index). Raises
    ``error`` naming what to do when xacro is not installed or the expansion fails, or when
    the result exceeds the document cap."""
    lim = limits_or_default(limits)
    try:
        import xacro  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from xacro import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
            substitution_args,
        )
    except ImportError:
        raise error(
            f"{what} {str(path)!r} is an unexpanded xacro file and the xacro package is not "
            "installed; " + _xacro_how(what, path)
        ) from None
    named, roots = _package_roots(package_dirs)
    original = substitution_args._eval_find

    def find(pkg: str) -> str:  # absolute: xacro joins relative paths to the including file
        if pkg in named:
            return str(named[pkg].resolve())
        for root in roots:
            if (root / pkg).is_dir():
                return str((root / pkg).resolve())
            if root.name == pkg:
                return str(root.resolve())
        try:
            return str(original(pkg))
        except Exception as exc:  # no ament index, or the package is not in it
            raise error(
                f"{what} {str(path)!r}: xacro $(find {pkg}) failed ({type(exc).__name__}: "
                f"{exc}); pass the package's folder (package_dirs={{'{pkg}': '/path'}}, CLI "
                f"--package-dir {pkg}=/path)"
            ) from None

    mappings = {str(k): str(v) for k, v in (xacro_args or {}).items()}
    with _XACRO_LOCK:
        substitution_args._eval_find = find
        substitution_args._eval_dict["find"] = find
        try:
            text = str(xacro.process_file(str(path.resolve()), mappings=mappings).toxml())
        except RobotCollisionError:
            raise
        except Exception as exc:  # XacroException, SubstitutionException, expat errors, ...
            message = " ".join(str(exc).split()) or type(exc).__name__
            hint = ""
            if "substitution arg" in message.lower() or "undefined" in message.lower():
                hint = " (give the missing argument as name:=value; Python: xacro_args=...)"
            raise error(
                f"{what} {str(path)!r}: xacro expansion failed: {message[:500]}{hint}"
            ) from None
        finally:
            substitution_args._eval_find = original
            substitution_args._eval_dict["find"] = original
    cap_name = "max_urdf_bytes" if what == "URDF" else "max_srdf_bytes"
    if len(text) > int(getattr(lim, cap_name)):
        raise error(lim.exceeded(
            cap_name, f"{what} {str(path)!r} expanded by xacro", len(text), "bytes"))
    return text


def _parse_document(
    source: XMLSource,
    what: str,
    error: type[RobotCollisionError],
    max_name: str,
    limits: Optional[LoadLimits],
    xacro_args: XacroArgs,
    package_dirs: PackageDirs,
    check: Optional[Callable[[Any], None]] = None,
) -> tuple[Any, Optional[Path]]:
    """Root element of a URDF/SRDF source, xacro expanded when the document is xacro.
    ``check(root)`` (count caps) runs on the document before anything else looks at it, and
    again on the expansion."""
    data, path = read_xml_source(source, what, error, max_name, limits)
    root = parse_xml(data, what, error)
    if check is not None:
        check(root)
    if is_xacro(root):
        if path is None:
            raise error(
                f"the {what} text is an unexpanded xacro document (xacro namespace or $(...) / "
                "${...} substitutions); robot_collision expands xacro only from a file path: "
                + _xacro_how(what, None)
            )
        text = expand_xacro(path, what, error, xacro_args, package_dirs, limits)
        root = parse_xml(text, f"{what} {str(path)!r} expanded by xacro", error)
        if check is not None:
            check(root)
        if is_xacro(root):
            raise error(
                f"{what} {str(path)!r} still has xacro content after expansion (a $(...) or "
                "${...} left in a value); check the file"
            )
    return root, path


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
    """Attribute ``name`` as a finite float (``default`` when absent; required when None)."""
    text = el.get(name)  # type: ignore[attr-defined]
    if text is None:
        if default is None:
            raise URDFError(f"{what} needs attribute {name!r}")
        return default
    try:
        value = float(text)
    except ValueError as exc:
        raise URDFError(f"{what} attribute {name!r} must be a number, got {text!r}") from exc
    if not np.isfinite(value):
        raise URDFError(f"{what} attribute {name!r} must be a finite number, got {text!r}")
    return value


def _origin(el: object, what: str) -> NDArray[np.float64]:
    o = el.find("origin")  # type: ignore[attr-defined]
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz"), 3, f"{what} origin xyz", [0.0, 0.0, 0.0])
    rpy = _floats(o.get("rpy"), 3, f"{what} origin rpy", [0.0, 0.0, 0.0])
    return pose_from_xyz_rpy(xyz, rpy)


_PACKAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


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
        for entry in package_dirs:
            text = os.fspath(entry)
            name, sep, folder = text.partition("=")
            # "NAME=PATH": the folder of package NAME (a checkout named differently), unless
            # the whole entry is an existing folder whose name happens to contain "="
            if sep and _PACKAGE_NAME.fullmatch(name) and not os.path.isdir(text):
                named.setdefault(name, Path(os.path.expanduser(folder)))
            else:
                roots.append(Path(text))
    return named, roots


def resolve_uri(uri: str, base_dir: Optional[Path], package_dirs: PackageDirs) -> Path:
    """Resolve a mesh filename (``package://``, ``file://``, absolute or relative) to a path."""
    named, roots = _package_roots(package_dirs)
    if uri.startswith("package://"):
        # "package:///pkg/rel" (an extra slash, written by some exporters) means "package://pkg/rel"
        rest = uri[len("package://") :].lstrip("/")
        pkg, _, rel = rest.partition("/")
        found: list[tuple[Path, str]] = []  # (package folder, how it was found)
        if pkg in named:
            found.append((named[pkg], "package_dirs"))
        for root in roots + ([base_dir] if base_dir is not None else []):
            if (root / pkg).is_dir():
                found.append((root / pkg, "package_dirs" if root in roots else "URDF folder"))
            if root.name == pkg:
                found.append((root, "package_dirs" if root in roots else "URDF folder"))
        try:
            from ament_index_python.packages import (  # type: ignore[import-not-found,unused-ignore]
                PackageNotFoundError,
                get_package_share_directory,
            )

            # not installed, or no ament index on this machine: not found there
            with contextlib.suppress(PackageNotFoundError, LookupError, ValueError, OSError):
                found.append((Path(get_package_share_directory(pkg)), "the ament index"))
        except ImportError:
            pass
        for folder, _how in found:
            if (folder / rel).exists():
                return folder / rel
        if found:
            folder, how = found[0]
            others = "".join(f", {f} ({h})" for f, h in found[1:])
            raise MeshError(
                f"cannot resolve {uri!r}: package {pkg!r} was found at {str(folder)!r} (from "
                f"{how}{others}) but it has no file {rel!r} (looked for "
                f"{str(folder / rel)!r}); fix the path in the URDF or restore the file"
            )
        raise MeshError(
            f"cannot resolve {uri!r}: package {pkg!r} is neither in the ament index nor in "
            f"package_dirs; pass its folder (Python: package_dirs={{'{pkg}': '/path/to/{pkg}'}}; "
            f"CLI: --package-dir {pkg}=/path/to/{pkg}; nodes: parameter package_dirs)"
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
    geom: object,
    what: str,
    link: str,
    base_dir: Optional[Path],
    package_dirs: PackageDirs,
    limits: LoadLimits,
    report: LoadReport,
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
            scale = np.asarray(_floats(g.get("scale"), 3, f"{what} mesh scale", [1.0, 1.0, 1.0]))
            if np.any(scale == 0.0):
                raise URDFError(f"{what} mesh scale must be non-zero, got {g.get('scale')!r}")
            path = resolve_uri(fn, base_dir, package_dirs)
            tri = load_mesh(path, scale, limits)
            shape = Mesh(path, scale=scale, limits=limits)  # the parse is cached: no re-read
            report.meshes.append(
                MeshInfo(link, fn, str(path), len(tri.vertices), len(tri.faces), len(shape.hull))
            )
            return shape
    except URDFError:
        raise
    except MeshError as exc:
        raise MeshError(f"{what}: {exc}") from exc
    except Exception as exc:  # ShapeError and friends: add location
        raise URDFError(f"{what}: {exc}") from exc
    raise URDFError(
        f"{what} has unsupported geometry <{tag}>; use sphere, capsule, box, cylinder or mesh"
    )


@dataclass
class _RawJoint:
    """A joint as written, before mimic leaders and default limits are resolved."""

    name: str
    type: str
    parent: str
    child: str
    origin: NDArray[np.float64]
    axis: NDArray[np.float64]
    lower: float
    upper: float
    velocity: Optional[float]  # None: not given (missing or 0)
    effort: float
    mimic: Optional[tuple[str, float, float]]


def _joint(el: object, seen_links: set[str]) -> _RawJoint:
    name = el.get("name")  # type: ignore[attr-defined]
    what = f"joint {name!r}"
    if not name:
        raise URDFError("every <joint> needs a non-empty name attribute")
    jtype = el.get("type")  # type: ignore[attr-defined]
    if jtype not in _JOINT_TYPES:
        raise URDFError(f"{what} has type {jtype!r}; supported: {', '.join(_JOINT_TYPES)}")
    parent_el, child_el = el.find("parent"), el.find("child")  # type: ignore[attr-defined]
    if parent_el is None or child_el is None or not parent_el.get("link") or not child_el.get(
        "link"
    ):
        raise URDFError(f"{what} needs <parent link=...> and <child link=...>")
    parent, child = parent_el.get("link"), child_el.get("link")
    for ln in (parent, child):
        if ln not in seen_links:
            raise URDFError(f"{what} refers to unknown link {ln!r}")
    axis_el = el.find("axis")  # type: ignore[attr-defined]
    # a planar joint's axis is its plane's normal; without <axis> the plane is the joint
    # frame's XY plane, as pinocchio and MoveIt place it (URDF's general default is x)
    default_axis = [0.0, 0.0, 1.0] if jtype == "planar" else [1.0, 0.0, 0.0]
    axis = np.array(
        _floats(
            axis_el.get("xyz") if axis_el is not None else None, 3, f"{what} axis", default_axis
        )
    )
    if jtype == "floating":
        axis = np.array([1.0, 0.0, 0.0])  # unused: a floating joint moves along every axis
    if jtype != "fixed":
        nrm = float(np.linalg.norm(axis))
        if nrm < 1e-9:
            raise URDFError(f"{what} axis must be a non-zero vector")
        axis = axis / nrm
    lim = el.find("limit")  # type: ignore[attr-defined]
    lower, upper, vel, eff = -np.inf, np.inf, 0.0, 0.0
    if lim is not None:
        vel = _attr_float(lim, "velocity", f"{what} limit", 0.0)
        eff = _attr_float(lim, "effort", f"{what} limit", 0.0)
        if jtype in ("revolute", "prismatic"):
            lower = _attr_float(lim, "lower", f"{what} limit", 0.0)
            upper = _attr_float(lim, "upper", f"{what} limit", 0.0)
    elif jtype in ("revolute", "prismatic"):
        raise URDFError(f"{what} of type {jtype} needs a <limit lower upper velocity effort>")
    if lower > upper:
        raise URDFError(f"{what} has lower limit {lower} above upper limit {upper}")
    if vel < 0:
        raise URDFError(f"{what} velocity limit must be positive (or 0 for none), got {vel}")
    if eff < 0:
        raise URDFError(f"{what} effort limit must be positive (or 0 for none), got {eff}")
    mim = el.find("mimic")  # type: ignore[attr-defined]
    mimic = None
    if mim is not None and jtype in ("planar", "floating"):
        raise URDFError(f"{what} is {jtype} and has a <mimic>: only single-axis joints can mimic")
    if mim is not None:
        if not mim.get("joint"):
            raise URDFError(f"{what} <mimic> needs a joint attribute")
        mimic = (
            mim.get("joint"),
            _attr_float(mim, "multiplier", f"{what} mimic", 1.0),
            _attr_float(mim, "offset", f"{what} mimic", 0.0),
        )
    return _RawJoint(
        name, jtype, parent, child, _origin(el, what), axis, float(lower), float(upper),
        float(vel) if vel > 0 else None, float(eff) if eff > 0 else np.inf, mimic,
    )


def _resolve_joints(
    raw: list[_RawJoint], limits: LoadLimits, report: LoadReport
) -> list[JointDescription]:
    """Mimic joints of missing leaders become independent; moving joints without a velocity
    limit get the default (both noted in ``report``)."""
    names = {j.name for j in raw}
    multi = {j.name: j.type for j in raw if j.type in ("planar", "floating")}
    out: list[JointDescription] = []
    for j in raw:
        mimic = j.mimic
        if mimic is not None and mimic[0] in multi:
            raise URDFError(
                f"joint {j.name!r} mimics {multi[mimic[0]]} joint {mimic[0]!r}; a mimic joint "
                "must follow a revolute, continuous or prismatic joint"
            )
        if mimic is not None and mimic[0] not in names:
            report.add(
                "URDF", f"joint {j.name!r}", INDEPENDENT,
                f"joint {j.name!r} mimics joint {mimic[0]!r}, which is not in the URDF; it is "
                "loaded as an independent joint (fix the <mimic joint=...> name to couple it)",
            )
            mimic = None
        vel = j.velocity
        if j.type == "fixed":
            vel = np.inf
        elif vel is None:
            vel = limits.default_velocity_limit
            if mimic is None:  # a mimic joint follows its leader: its own limit is unused
                unit = {"prismatic": "m/s", "revolute": "rad/s", "continuous": "rad/s"}.get(
                    j.type, "m/s and rad/s, per variable"
                )
                report.add(
                    "URDF", f"joint {j.name!r}", DEFAULTED,
                    f"joint {j.name!r} ({j.type}) gives no velocity limit (velocity missing or "
                    f"0); using the default {vel:g} {unit}"
                    " (LoadLimits.default_velocity_limit); give <limit velocity=...> to set it",
                )
        out.append(
            JointDescription(
                j.name, j.type, j.parent, j.child, j.origin, j.axis, j.lower, j.upper,
                float(vel), float(j.effort), mimic,
            )
        )
    return out


def parse_urdf(
    source: XMLSource,
    package_dirs: PackageDirs = None,
    limits: Optional[LoadLimits] = None,
    report: Optional[LoadReport] = None,
    xacro_args: XacroArgs = None,
) -> URDFDescription:
    """Parse a URDF (file path, XML text or bytes). Raises :class:`URDFError` with a fix-it
    message.

    ``limits``: caps and defaults (:class:`~robot_collision.load_limits.LoadLimits`, defaults
    when None); ``report``: collects what was changed or dropped (a new one, issuing
    warnings, when None); it is returned as the description's ``report``. An unexpanded xacro
    file (xacro namespace or ``$(...)``/``${...}``) is expanded with the ``xacro`` package and
    ``xacro_args`` (or refused with a message saying how, when xacro is not installed or the
    source is text)."""
    lim = limits_or_default(limits)
    rep = LoadReport() if report is None else report
    def caps(doc: Any) -> None:
        for tag, cap in (("link", "max_links"), ("joint", "max_joints")):
            count = sum(1 for _ in doc.iterchildren(tag))
            if count > getattr(lim, cap):
                raise URDFError(lim.exceeded(cap, f"the URDF's <{tag}> count", count))

    root, path = _parse_document(
        source, "URDF", URDFError, "max_urdf_bytes", lim, xacro_args, package_dirs, caps
    )
    if root.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, got <{root.tag}>")
    base_dir = path.parent if path is not None else None
    links: list[LinkDescription] = []
    seen: set[str] = set()
    for el in root.findall("link"):
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
            shape = _geometry(geom, what, name, base_dir, package_dirs, lim, rep)
            cols.append((shape, _origin(c, what)))
        links.append(LinkDescription(name, cols))
    if not links:
        raise URDFError("URDF has no <link> elements")
    raw: list[_RawJoint] = []
    jseen: set[str] = set()
    for el in root.findall("joint"):
        j = _joint(el, seen)
        if j.name in jseen:
            raise URDFError(f"joint {j.name!r} is defined twice")
        jseen.add(j.name)
        raw.append(j)
    joints = _resolve_joints(raw, lim, rep)
    links, joints, multi = expand_multi_dof_joints(links, joints, lim)
    name = root.get("name") or "robot"
    return URDFDescription(name, links, joints, rep, multi)


def _plane_basis(normal: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """In-plane unit axes (u, v) with u x v = normal; (x, y) for the normal z."""
    n = normal / np.linalg.norm(normal)
    if abs(n[2]) > 1.0 - 1e-12:
        u = np.array([1.0, 0.0, 0.0])
    else:
        u = np.cross([0.0, 0.0, 1.0], n)
        u /= np.linalg.norm(u)
    v = np.cross(n, u)
    return u, v


def expand_multi_dof_joints(
    links: list[LinkDescription], joints: list[JointDescription], limits: LoadLimits
) -> tuple[list[LinkDescription], list[JointDescription], dict[str, tuple[str, tuple[str, ...]]]]:
    """Each planar or floating joint replaced by a chain of single-axis virtual joints through
    virtual links without geometry (named like the virtual joint whose child they are):

    - planar ``J`` (plane normal ``axis``, joint frame XY when no ``<axis>``): ``J/x``, ``J/y``
      prismatic along the plane's in-plane axes, ``J/theta`` continuous about the normal;
    - floating ``J``: ``J/x``, ``J/y``, ``J/z`` prismatic along the joint frame's axes, then
      ``J/yaw`` (z), ``J/pitch`` (y), ``J/roll`` (x) continuous, so that the child's rotation
      is Rz(yaw) Ry(pitch) Rx(roll) (URDF's rpy convention) and its origin is (x, y, z) in the
      joint frame.

    Translations are bounded to ``[-b, b]`` with ``b = limits.floating_translation_bound``;
    the velocity limit of the joint (or the default) applies to every variable."""
    if not any(j.type in ("planar", "floating") for j in joints):
        return links, joints, {}
    taken = {ln.name for ln in links}
    jtaken = {j.name for j in joints}
    bound = float(limits.floating_translation_bound)
    out_links = list(links)
    out_joints: list[JointDescription] = []
    multi: dict[str, tuple[str, tuple[str, ...]]] = {}
    ex, ey, ez = np.eye(3)
    for j in joints:
        if j.type not in ("planar", "floating"):
            out_joints.append(j)
            continue
        if j.type == "planar":
            u, v = _plane_basis(j.axis)
            spec = [("x", "prismatic", u), ("y", "prismatic", v), ("theta", "continuous", j.axis)]
        else:
            spec = [
                ("x", "prismatic", ex), ("y", "prismatic", ey), ("z", "prismatic", ez),
                ("yaw", "continuous", ez), ("pitch", "continuous", ey),
                ("roll", "continuous", ex),
            ]
        names = tuple(f"{j.name}/{suffix}" for suffix, _, _ in spec)
        for vname in names:
            if vname in taken or vname in jtaken:
                raise URDFError(
                    f"{j.type} joint {j.name!r} needs the virtual link and joint {vname!r}, but "
                    "the URDF already has a link or joint of that name; rename it"
                )
            taken.add(vname)
        parent = j.parent
        for k, ((_, vtype, ax), vname) in enumerate(zip(spec, names)):
            last = k == len(spec) - 1
            child = j.child if last else vname
            if not last:
                out_links.append(LinkDescription(vname, []))
            lo, hi = (-bound, bound) if vtype == "prismatic" else (-np.inf, np.inf)
            out_joints.append(
                JointDescription(
                    vname, vtype, parent, child, j.origin if k == 0 else np.eye(4),
                    np.asarray(ax, dtype=float), lo, hi, j.velocity, j.effort, None,
                )
            )
            parent = vname
        multi[j.name] = (j.type, names)
    return out_links, out_joints, multi


def parse_srdf(
    source: XMLSource,
    link_names: Iterable[str],
    joint_names: Optional[Iterable[str]] = None,
    report: Optional[LoadReport] = None,
    limits: Optional[LoadLimits] = None,
    base_link: Optional[str] = None,
    xacro_args: XacroArgs = None,
    package_dirs: PackageDirs = None,
) -> SRDFDescription:
    """Parse an SRDF path or XML string against the URDF's ``link_names`` (and ``joint_names``,
    all joints, when given). A ``disable_collisions`` or ``group_state`` entry naming a link or
    joint that is not in the URDF is dropped with a note in ``report`` (and a warning);
    malformed XML or an entry without its required names raises :class:`SRDFError`. Group
    members are checked when the model expands the groups."""
    rep = LoadReport() if report is None else report
    root, _ = _parse_document(
        source, "SRDF", SRDFError, "max_srdf_bytes", limits, xacro_args, package_dirs
    )
    if root.tag != "robot":
        raise SRDFError(f"SRDF root element must be <robot>, got <{root.tag}>")
    known = set(link_names)
    known_joints = None if joint_names is None else set(joint_names)
    virtual: list[tuple[str, str, str, str]] = []
    for el in root.findall("virtual_joint"):
        vname, vtype = el.get("name") or "", el.get("type") or ""
        parent, child = el.get("parent_frame") or "", el.get("child_link") or ""
        if not vname or not child:
            raise SRDFError("<virtual_joint> needs name and child_link attributes")
        if vtype not in ("fixed", "planar", "floating"):
            raise SRDFError(
                f"virtual_joint {vname!r} has type {vtype!r}; MoveIt knows fixed, planar, floating"
            )
        if child not in known:
            rep.add(
                "SRDF", f"virtual_joint {vname!r}", DROPPED,
                f"virtual_joint {vname!r} attaches link {child!r}, which is not a link of the "
                "URDF; entry dropped",
            )
            continue
        if base_link is not None and child != base_link:
            rep.add(
                "SRDF", f"virtual_joint {vname!r}", DROPPED,
                f"virtual_joint {vname!r} attaches {child!r}, which is not the URDF's root link "
                f"{base_link!r} (MoveIt requires the root); entry dropped",
            )
            continue
        virtual.append((vname, vtype, parent, child))
    virtual_names = {v[0] for v in virtual}
    disabled: list[tuple[str, str]] = []
    for el in root.findall("disable_collisions"):
        a, b = el.get("link1"), el.get("link2")
        if not a or not b:
            raise SRDFError("<disable_collisions> needs link1 and link2 attributes")
        unknown = [ln for ln in (a, b) if ln not in known]
        if unknown:
            rep.add(
                "SRDF", f"disable_collisions {a!r}-{b!r}", DROPPED,
                f"disable_collisions of {a!r} and {b!r} names {unknown[0]!r}, which is not a "
                "link of the URDF; entry dropped (the pair stays checked)",
            )
            continue
        disabled.append((a, b))
    groups: dict[str, list[str]] = {}
    glinks: dict[str, list[str]] = {}
    gchains: dict[str, list[tuple[str, str]]] = {}
    gsub: dict[str, list[str]] = {}
    for g in root.findall("group"):
        gname = g.get("name")
        if not gname:
            raise SRDFError("every SRDF <group> needs a name")
        groups[gname] = [j.get("name") for j in g.findall("joint") if j.get("name")]
        glinks[gname] = [x.get("name") for x in g.findall("link") if x.get("name")]
        chains = []
        for c in g.findall("chain"):
            if not c.get("base_link") or not c.get("tip_link"):
                raise SRDFError(f"SRDF group {gname!r} <chain> needs base_link and tip_link")
            chains.append((c.get("base_link"), c.get("tip_link")))
        gchains[gname] = chains
        gsub[gname] = [x.get("name") for x in g.findall("group") if x.get("name")]
    states: dict[str, dict[str, dict[str, float]]] = {}
    state_lists: dict[str, dict[str, dict[str, list[float]]]] = {}
    for s in root.findall("group_state"):
        sname = s.get("name") or ""
        vals: dict[str, float] = {}
        lists: dict[str, list[float]] = {}
        for j in s.findall("joint"):
            jname = j.get("name")
            if not jname:
                raise SRDFError(f"group_state {sname!r} has a <joint> without a name")
            try:
                values = [float(v) for v in j.get("value", "").split()]
                value = values[0]
            except (ValueError, IndexError) as exc:
                raise SRDFError(
                    f"group_state {sname!r} joint {jname!r} value is not a number"
                ) from exc
            if not np.all(np.isfinite(values)):
                raise SRDFError(f"group_state {sname!r} joint {jname!r} value is not finite")
            if len(values) > 1 or jname in virtual_names:
                lists[jname] = values  # a planar/floating joint's variables (or a virtual joint)
                continue
            if known_joints is not None and jname not in known_joints:
                rep.add(
                    "SRDF", f"group_state {sname!r} joint {jname!r}", DROPPED,
                    f"group_state {sname!r} sets joint {jname!r}, which is not a joint of the "
                    "URDF; value dropped",
                )
                continue
            vals[jname] = value
        states.setdefault(s.get("group") or "", {})[sname] = vals
        if lists:
            state_lists.setdefault(s.get("group") or "", {})[sname] = lists
    return SRDFDescription(
        disabled, groups, glinks, gchains, gsub, states, virtual, state_lists
    )
