"""Caps on what a file can bring into the model, checked before the expensive work.

:class:`LoadLimits` is passed to every loader (``RobotModel.from_urdf``, ``load_mesh``, the world
file loader); ``None`` means the defaults below. A file over a cap raises a typed error
(:class:`~robot_collision.errors.URDFError`, :class:`~robot_collision.errors.MeshError`, ...)
whose message names the cap and how to raise it, before the file is read, parsed or built.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Optional

__all__ = ["LoadLimits", "DEFAULT_LOAD_LIMITS", "format_bytes", "limits_or_default"]

MiB = 1 << 20


@dataclass(frozen=True)
class LoadLimits:
    """Size caps of loaded files (defaults fit every robot of ``example-robot-data`` with room).

    Robot descriptions (checked before parsing, then before building):

    - ``max_urdf_bytes``, ``max_srdf_bytes``: document size (file: ``stat`` before reading;
      text: its length); 10 MiB (the largest corpus URDF, TIAGo dual, is 0.2 MB);
    - ``max_links``, ``max_joints``: ``<link>``/``<joint>`` elements, counted after parsing and
      before any shape or mesh is built; 1000 (the largest corpus robot has 130 links). The
      checker's per-pair tables grow with links²: at 1000 links an exhaustive check returns
      (1000, 1000 + W, 3) arrays (24 MB each without world objects).

    World files (``robot_collision.ros.world``):

    - ``max_world_bytes``: YAML file size, ``stat`` before reading; 16 MiB;
    - ``max_world_depth``: nesting of YAML mappings/sequences, checked on the event stream
      before any object is built (a file nested 50,000 deep would exhaust Python's recursion);
      32 (a world file needs 4). YAML aliases may not expand the document beyond what
      ``max_world_bytes`` of plain text could hold;
    - ``max_world_objects``: objects in a world file, and in a world model altogether; 1000.

    Mesh caps apply to every mesh file (URDF ``<mesh>``, world files, ``Mesh(path)``):

    - ``max_mesh_bytes``: file size, checked with ``stat`` before reading (64 MiB; the largest
      mesh of example-robot-data is 28 MB);
    - ``max_mesh_vertices``: vertices as stored in the file, before duplicates are merged (a
      binary STL stores 3 per triangle), checked after parsing and before the hull;
    - ``max_mesh_faces``: triangles (polygons are triangulated), checked likewise (binary STL:
      from its header, before parsing);
    - ``max_hull_points``: distinct vertices (after merging duplicates) that go into the convex
      hull, checked before it is computed (500,000; the most in example-robot-data is 174,688,
      Go1's trunk, whose hull has 12,161). The hull's cost grows with the vertices on it: at
      the cap, with every vertex on the hull (the worst case: 499,995 distinct points on a
      sphere), ``Mesh(path)`` took 23 s and 0.55 GiB peak RSS on a loaded 2-core machine,
      and no file within the caps costs more. (A 50 MB STL of 3.1 M distinct vertices on a
      sphere had taken 136 s and 9 GiB; it is now refused after its parse and merge.)

    Point-cloud files (``load_point_cloud``, ``PointCloud.from_file``, ``OccupancyMap.from_file``):

    - ``max_cloud_bytes``: file size, checked with ``stat`` before reading (1 GiB);
    - ``max_cloud_points``: points the file declares (PCD ``POINTS``, PLY ``element vertex``)
      or holds (``.npy`` shape), checked before the points are parsed (50,000,000).

    Not a cap but the one loading default: ``default_velocity_limit`` (rad/s for revolute and
    continuous joints, m/s for prismatic ones, 1.0) is given, with a warning, to every moving
    joint whose URDF gives no velocity limit (``velocity`` missing or ``"0"``, or no ``<limit>``),
    so that no joint is ever unlimited.

    Neither is ``floating_translation_bound`` (m, 2.0): the translation variables of planar
    (``<joint>/x``, ``/y``) and floating (``/x``, ``/y``, ``/z``) joints are bounded to
    ``[-b, b]`` around the joint's origin, which is what samplers, planners and the velocity
    filter treat as the joint's limits (URDF gives these joints no limits; MoveIt and OMPL
    bound them by a workspace, pinocchio by ``model.lowerPositionLimit``).
    """

    _FLOATS = ("default_velocity_limit", "floating_translation_bound")

    max_urdf_bytes: int = 10 * MiB
    max_srdf_bytes: int = 10 * MiB
    max_links: int = 1000
    max_joints: int = 1000
    max_world_bytes: int = 16 * MiB
    max_world_depth: int = 32
    max_world_objects: int = 1000
    max_mesh_bytes: int = 64 * MiB
    max_mesh_vertices: int = 6_000_000
    max_mesh_faces: int = 2_000_000
    max_hull_points: int = 500_000
    max_cloud_bytes: int = 1024 * MiB
    max_cloud_points: int = 50_000_000
    default_velocity_limit: float = 1.0
    floating_translation_bound: float = 2.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"LoadLimits.{f.name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"LoadLimits.{f.name} must be finite and positive, got {value!r}")

    @classmethod
    def from_strings(cls, entries: Iterable[str]) -> LoadLimits:
        """Limits from ``"name=value"`` strings (the nodes' ``load_limits`` parameter), the
        defaults for the others; raises :class:`ConfigurationError` naming a bad entry."""
        from .errors import ConfigurationError

        names = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for entry in entries:
            name, sep, text = str(entry).partition("=")
            name = name.strip()
            if not sep or name not in names:
                raise ConfigurationError(
                    f"load_limits entry {str(entry)[:80]!r}: expected 'name=value' with a name "
                    f"of {', '.join(names)}")
            try:
                number = float(text)
                value: Any = number if name in cls._FLOATS else int(number)
                if value != number:
                    raise ValueError("not an integer")
                values[name] = value
                cls(**{name: value})  # checks finite and positive
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(
                    f"load_limits entry {str(entry)[:80]!r}: {name} must be a positive "
                    f"{'number' if name in cls._FLOATS else 'integer'} ({exc})"
                ) from None
        return cls(**values)

    def exceeded(self, name: str, what: str, value: float, unit: str = "") -> str:
        """Message for ``what`` being ``value`` over the cap ``name``: says how to raise it."""
        cap = getattr(self, name)
        if unit == "bytes":
            shown, limit = format_bytes(value), format_bytes(cap)
        else:
            shown, limit = f"{int(value):,}{unit}", f"{int(cap):,}{unit}"
        return (
            f"{what} is {shown}, above the limit of {limit} (LoadLimits.{name}); "
            f"pass limits=LoadLimits({name}=...) to the loader to allow it (nodes: parameter "
            f"load_limits: ['{name}=...'])"
        )


DEFAULT_LOAD_LIMITS = LoadLimits()


def format_bytes(n: float) -> str:
    """``n`` bytes as a short human-readable size (``"3.0 GiB"``)."""
    if n < 1024:
        return f"{int(n)} bytes"
    size, unit = float(n), "bytes"
    for unit in ("KiB", "MiB", "GiB"):  # noqa: B007 (the last unit reached is used)
        size /= 1024
        if size < 1024:
            break
    return f"{size:.1f} {unit}"


def limits_or_default(limits: Optional[LoadLimits]) -> LoadLimits:
    """``limits``, or the defaults when ``None``."""
    return DEFAULT_LOAD_LIMITS if limits is None else limits
