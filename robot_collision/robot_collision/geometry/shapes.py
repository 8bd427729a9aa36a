"""Collision primitives and world objects.

Constructors follow MATLAB's collision objects: ``Sphere(radius)``, ``Capsule(radius, length)``,
``Box(x, y, z)`` (full side lengths), ``Cylinder(radius, length)``, ``Mesh(vertices or path)``.
All lengths are metres. Every shape is expressed in its own local frame:

- sphere: centred at the origin;
- capsule: a segment of ``length`` along local z, centred, with hemispherical caps beyond it;
- box: centred, sides along the local axes;
- cylinder: axis along local z, centred;
- mesh: the convex hull of the given vertices (``(k, 3)``, local frame).

Each shape encodes itself for the compiled kernels as ``kind`` (an ``int``, see ``SPHERE`` ...),
``params`` (``(4,)`` float64, see :func:`Shape.params`) and hull ``vertices`` (``(k, 3)``; empty
for analytic shapes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import MeshError, ShapeError
from ..load_limits import LoadLimits, limits_or_default
from .hull import convex_hull, support_block
from .mesh_io import load_mesh, mesh_scale

__all__ = [
    "SPHERE",
    "CAPSULE",
    "BOX",
    "CYLINDER",
    "MESH",
    "Shape",
    "Sphere",
    "Capsule",
    "Box",
    "Cylinder",
    "Mesh",
    "WorldObject",
]

SPHERE = 0
CAPSULE = 1
BOX = 2
CYLINDER = 3
MESH = 4

_EMPTY_VERTS = np.zeros((0, 3))


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    v = float(value)
    if not np.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise ShapeError(f"{name} must be a finite {bound} number of metres, got {value!r}")
    return v


class Shape:
    """Base of every collision primitive."""

    kind: int = -1

    def params(self) -> NDArray[np.float64]:
        """Kernel parameters ``(4,)``: sphere ``[r]``, capsule/cylinder ``[r, half_length]``,
        box ``[hx, hy, hz]`` (half extents), mesh ``[cx, cy, cz]`` (centre of its bounding box);
        unused entries of 0-2 are zero; entry 3 is the radius of a sphere that encloses the
        shape about its origin (about the centre for meshes), for culling shape pairs."""
        raise NotImplementedError

    def vertices(self) -> NDArray[np.float64]:
        """Hull vertices ``(k, 3)`` in the local frame (empty for analytic shapes)."""
        return _EMPTY_VERTS

    def kernel_vertices(self) -> NDArray[np.float64]:
        """The vertex data the compiled kernels read (``(r, 3)``): :meth:`vertices`, or for
        large hulls a support block (see :mod:`.hull`)."""
        return self.vertices()

    def bounding_radius(self) -> float:
        """Radius (m) of a sphere about the local origin that encloses the shape."""
        raise NotImplementedError

    def bounding_sphere(self) -> tuple[NDArray[np.float64], float]:
        """``(centre (3,), radius)`` of a tight enclosing sphere (local frame, m): about the
        local origin for the analytic shapes (their centre), about the bounding-box centre for
        meshes."""
        return np.zeros(3), self.bounding_radius()

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(centre (3,), half_extents (3,))`` of a box along the local axes that encloses the
        shape (local frame, m); exact for boxes."""
        raise NotImplementedError


@dataclass(frozen=True)
class Sphere(Shape):
    """Sphere of ``radius`` metres centred at the local origin."""

    radius: float
    kind = SPHERE

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Sphere radius", self.radius))

    def params(self) -> NDArray[np.float64]:
        return np.array([self.radius, 0.0, 0.0, self.radius])

    def bounding_radius(self) -> float:
        return self.radius

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return np.zeros(3), np.full(3, self.radius)


@dataclass(frozen=True)
class Capsule(Shape):
    """Capsule: segment of ``length`` m along local z (centred), inflated by ``radius`` m."""

    radius: float
    length: float
    kind = CAPSULE

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Capsule radius", self.radius))
        object.__setattr__(
            self, "length", _positive("Capsule length", self.length, allow_zero=True)
        )

    def params(self) -> NDArray[np.float64]:
        return np.array([self.radius, 0.5 * self.length, 0.0, self.bounding_radius()])

    def bounding_radius(self) -> float:
        return self.radius + 0.5 * self.length

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r = self.radius
        return np.zeros(3), np.array([r, r, r + 0.5 * self.length])


@dataclass(frozen=True)
class Box(Shape):
    """Box of full side lengths ``x``, ``y``, ``z`` m, centred, sides along local axes."""

    x: float
    y: float
    z: float
    kind = BOX

    def __post_init__(self) -> None:
        for name in ("x", "y", "z"):
            object.__setattr__(self, name, _positive(f"Box {name}", getattr(self, name)))

    def params(self) -> NDArray[np.float64]:
        return np.array([0.5 * self.x, 0.5 * self.y, 0.5 * self.z, self.bounding_radius()])

    def bounding_radius(self) -> float:
        return 0.5 * float(np.sqrt(self.x**2 + self.y**2 + self.z**2))

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return np.zeros(3), 0.5 * np.array([self.x, self.y, self.z])


@dataclass(frozen=True)
class Cylinder(Shape):
    """Cylinder of ``radius`` m and full ``length`` m along local z, centred."""

    radius: float
    length: float
    kind = CYLINDER

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Cylinder radius", self.radius))
        object.__setattr__(self, "length", _positive("Cylinder length", self.length))

    def params(self) -> NDArray[np.float64]:
        return np.array([self.radius, 0.5 * self.length, 0.0, self.bounding_radius()])

    def bounding_radius(self) -> float:
        return float(np.hypot(self.radius, 0.5 * self.length))

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r = self.radius
        return np.zeros(3), np.array([r, r, 0.5 * self.length])


@dataclass(frozen=True, eq=False)
class Mesh(Shape):
    """Convex mesh: the convex hull of ``source`` (vertices ``(k, 3)`` or a mesh file path, see
    :func:`~robot_collision.geometry.mesh_io.load_mesh`), each vertex multiplied by ``scale`` (a
    number or ``(3,)`` per axis). ``limits`` caps the file and vertex count (defaults when None).
    """

    source: Union[ArrayLike, str, os.PathLike[str]]
    scale: Union[float, ArrayLike] = 1.0
    limits: Optional[LoadLimits] = field(default=None, repr=False, compare=False)
    hull: NDArray[np.float64] = field(init=False, repr=False)
    support: NDArray[np.float64] = field(init=False, repr=False)
    # derived from the hull once (a world's scene is packed again on every update: a 20 k-vertex
    # hull's bounding box and sphere took 3.4 ms per packing, holding the interpreter's lock)
    _box: tuple[NDArray[np.float64], NDArray[np.float64]] = field(
        init=False, repr=False, compare=False)
    _params: NDArray[np.float64] = field(init=False, repr=False, compare=False)
    _radius: float = field(init=False, repr=False, compare=False)
    kind = MESH

    def __post_init__(self) -> None:
        try:
            scale = mesh_scale(self.scale, "Mesh")
        except MeshError as exc:
            raise ShapeError(str(exc)) from None
        if isinstance(self.source, (str, os.PathLike)):
            label = repr(str(self.source))
            pts = load_mesh(self.source, scale, self.limits).vertices
        else:
            label = "from vertices"
            try:
                pts = np.asarray(self.source, dtype=float)
            except (TypeError, ValueError):
                raise MeshError("mesh vertices must be a (k, 3) array of numbers") from None
            lim = limits_or_default(self.limits)
            if pts.ndim == 2 and len(pts) > lim.max_mesh_vertices:
                raise MeshError(lim.exceeded("max_mesh_vertices", "mesh vertex count", len(pts)))
            if pts.ndim == 2 and pts.shape[1] == 3:
                pts = pts * scale
        hull, neighbours = convex_hull(pts, label)
        object.__setattr__(self, "hull", hull)
        object.__setattr__(self, "support", support_block(hull, neighbours))
        lo, hi = hull.min(axis=0), hull.max(axis=0)
        c = 0.5 * (lo + hi)
        object.__setattr__(self, "_box", (c, 0.5 * (hi - lo)))
        r = float(np.max(np.linalg.norm(hull - c, axis=1)))
        object.__setattr__(self, "_params", np.array([c[0], c[1], c[2], r]))
        object.__setattr__(self, "_radius", float(np.max(np.linalg.norm(hull, axis=1))))

    def params(self) -> NDArray[np.float64]:
        """``[cx, cy, cz, r]``: centre of the hull's bounding box (local frame) and the radius
        of a sphere about it that encloses the hull (the kernels start GJK from the centre and
        cull with the sphere; a mesh's origin is often far from its geometry)."""
        return self._params.copy()

    def vertices(self) -> NDArray[np.float64]:
        return self.hull

    def kernel_vertices(self) -> NDArray[np.float64]:
        return self.support

    def bounding_radius(self) -> float:
        return self._radius

    def bounding_sphere(self) -> tuple[NDArray[np.float64], float]:
        return self._params[:3].copy(), float(self._params[3])

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return self._box[0].copy(), self._box[1].copy()


@dataclass(frozen=True, eq=False)
class WorldObject:
    """An obstacle: ``shape`` placed at ``pose`` (``(4, 4)`` homogeneous, robot base frame)."""

    shape: Shape
    pose: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.shape, Shape):
            raise ShapeError(f"WorldObject shape must be a Shape, got {type(self.shape).__name__}")
        pose = np.asarray(self.pose, dtype=float)
        if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
            raise ShapeError("WorldObject pose must be a finite (4, 4) homogeneous transform")
        # R R^T = I within np.allclose(atol=1e-6) (diagonal 1e-6 + 1e-5) and det R > 0, on
        # Python floats: np.allclose and np.linalg.det cost ~100 us per object, and a MoveIt
        # planning scene rebuilds every object on each update
        (a, b, c), (d, e, f), (g, h, i) = pose[:3, :3].tolist()
        diag_ok = (abs(a * a + b * b + c * c - 1.0) <= 1.1e-5
                   and abs(d * d + e * e + f * f - 1.0) <= 1.1e-5
                   and abs(g * g + h * h + i * i - 1.0) <= 1.1e-5)
        off_ok = (abs(a * d + b * e + c * f) <= 1e-6 and abs(a * g + b * h + c * i) <= 1e-6
                  and abs(d * g + e * h + f * i) <= 1e-6)
        det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        if not (diag_ok and off_ok) or det < 0:
            raise ShapeError("WorldObject pose rotation must be orthonormal and right-handed")
        object.__setattr__(self, "pose", pose)
