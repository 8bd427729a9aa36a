"""Convex decomposition of non-convex meshes (CoACD), cached on disk.

By default a mesh collides as its convex hull (MATLAB semantics): conservative, and a concave
object (an L-shaped bracket, a bin, a shelf, a hollow link) is filled in. A decomposition
replaces the mesh by several convex parts whose union follows the surface within the
decomposition's concavity ``threshold``; each part is a :class:`~.shapes.Mesh` (its own hull),
so the kernels need nothing new.

The parts are computed by CoACD (``coacd`` on PyPI; seconds per mesh) once and cached on disk
under a hash of the mesh's vertices and faces (after scaling) and the options, so a file that
did not change is never decomposed again. Cache folder, first that is set:
``DecompositionOptions.cache_dir``, ``$ROBOT_COLLISION_CACHE_DIR``,
``$XDG_CACHE_HOME/robot_collision/decomposition``, ``~/.cache/robot_collision/decomposition``.
A cache file that cannot be read is recomputed; one that cannot be written is only reported
by the missing speed-up.

Conservativeness: CoACD cuts the mesh into pieces and returns each piece's convex hull, so the
union of the parts contains the mesh, except where its preprocessing remeshes a non-manifold
input (surface moved by up to about one voxel, 1/``preprocess_resolution`` of the mesh size;
CoACD finds triangle self-intersections in common robot meshes, e.g. the UR5's, and remeshes
them). Remeshed parts reach outside the mesh by up to that voxel (3.6 mm on the UR5 upper arm,
and those millimetres were its false collisions), so each part of a closed mesh is fitted to
the mesh inside it (:func:`_fit_to_mesh`), and every input vertex outside all parts is added to
the part it is nearest to.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import MeshError
from .hull import convex_hull
from .mesh_io import TriangleMesh, load_mesh, mesh_scale
from .shapes import Mesh, WorldObject

__all__ = [
    "MESH_MODES",
    "DecompositionOptions",
    "cache_directory",
    "decompose",
    "decomposed_meshes",
    "mesh_world_objects",
    "needs_remeshing",
]

MESH_MODES = ("hull", "decomposition")
"""How a mesh collides: its convex hull, or the convex parts of its decomposition."""

_FORMAT = 4  # bump when the cached content changes meaning (4: parts fitted to the mesh)


@dataclass(frozen=True)
class DecompositionOptions:
    """CoACD parameters: ``threshold`` (concavity bound of each part relative to the mesh's
    size; the stated tolerance of a decomposition is ``threshold`` times the largest extent of
    the mesh's bounding box, e.g. 2 cm for a 0.4 m link at 0.05),
    ``max_parts`` (-1: no limit), ``preprocess`` ("auto", "on", "off": manifold remeshing),
    ``preprocess_resolution`` (voxels per side of that remeshing), ``seed``; ``cache_dir``
    (None: see the module docstring)."""

    threshold: float = 0.05
    max_parts: int = -1
    preprocess: str = "auto"
    preprocess_resolution: int = 50
    seed: int = 0
    cache_dir: Optional[str] = None

    def __post_init__(self) -> None:
        if not 0.0 < float(self.threshold) <= 1.0:
            raise MeshError(f"decomposition threshold must be in (0, 1], got {self.threshold}")
        if self.preprocess not in ("auto", "on", "off"):
            raise MeshError(
                f"decomposition preprocess must be 'auto', 'on' or 'off', got {self.preprocess!r}"
            )

    def key(self) -> str:
        return (
            f"t={self.threshold!r};m={self.max_parts};p={self.preprocess};"
            f"r={self.preprocess_resolution};s={self.seed}"
        )


def cache_directory(options: Optional[DecompositionOptions] = None) -> Path:
    """The folder decompositions are cached in (see the module docstring)."""
    if options is not None and options.cache_dir:
        return Path(options.cache_dir)
    env = os.environ.get("ROBOT_COLLISION_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "robot_collision" / "decomposition"


def _digest(mesh: TriangleMesh, options: DecompositionOptions) -> str:
    from importlib import metadata

    try:
        version = metadata.version("coacd")
    except metadata.PackageNotFoundError:
        version = ""
    h = hashlib.sha256()
    v = np.ascontiguousarray(mesh.vertices, dtype="<f8")
    f = np.ascontiguousarray(mesh.faces, dtype="<i8")
    h.update(str(v.shape).encode() + v.tobytes() + str(f.shape).encode() + f.tobytes())
    h.update(f"{options.key()};coacd={version};format={_FORMAT}".encode())
    return h.hexdigest()


def _read_cache(path: Path) -> Optional[list[NDArray[np.float64]]]:
    try:
        with np.load(path) as data:
            points = np.asarray(data["points"], dtype=float)
            counts = np.asarray(data["counts"], dtype=np.int64)
    except (OSError, KeyError, ValueError):
        return None
    if points.ndim != 2 or points.shape[1] != 3 or counts.sum() != len(points) or not len(counts):
        return None
    return list(np.split(points, np.cumsum(counts)[:-1]))


def _write_cache(path: Path, parts: list[NDArray[np.float64]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, points=np.concatenate(parts), counts=[len(p) for p in parts])
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache is for every user
        os.replace(tmp, path)  # atomic: concurrent writers leave one complete file
    except OSError:
        pass  # read-only or full disk: no cache, same result


def _cover_vertices(
    parts: list[NDArray[np.float64]], vertices: NDArray[np.float64]
) -> list[NDArray[np.float64]]:
    """Add every vertex outside all parts (by more than 1e-9 m) to the part it is nearest to
    (smallest violation of the part's hull planes)."""
    from scipy.spatial import ConvexHull, QhullError

    planes = []
    for p in parts:
        try:
            planes.append(ConvexHull(p).equations)
        except QhullError:
            planes.append(None)
    viol = np.full((len(vertices), len(parts)), np.inf)
    for j, eq in enumerate(planes):
        if eq is not None:
            viol[:, j] = np.max(vertices @ eq[:, :3].T + eq[:, 3], axis=1)
    outside = np.min(viol, axis=1) > 1e-9
    if not outside.any():
        return parts
    nearest = np.argmin(viol[outside], axis=1)
    out = list(parts)
    for j in np.unique(nearest):
        out[j] = np.vstack([out[j], vertices[outside][nearest == j]])
    return out


def _clip_polygon(poly: NDArray[np.float64], eq: NDArray[np.float64]) -> NDArray[np.float64]:
    """``poly`` (k, 3), a convex polygon, clipped to ``n . x + d <= 0`` for every row (n, d) of
    ``eq`` (Sutherland-Hodgman); (0, 3) when nothing is left."""
    for n0, n1, n2, d in eq:
        if len(poly) == 0:
            break
        s = poly @ np.array([n0, n1, n2]) + d
        if np.all(s <= 0.0):
            continue
        if np.all(s > 0.0):
            return np.zeros((0, 3))
        out = []
        k = len(poly)
        for i in range(k):
            j = (i + 1) % k
            if s[i] <= 0.0:
                out.append(poly[i])
            if (s[i] <= 0.0) != (s[j] <= 0.0):
                t = s[i] / (s[i] - s[j])
                out.append(poly[i] + t * (poly[j] - poly[i]))
        poly = np.array(out)
    return poly


def _winding(tris: NDArray[np.float64], points: NDArray[np.float64]) -> NDArray[np.float64]:
    """Winding numbers (n,) of ``points`` (n, 3) with respect to the closed triangle surface
    ``tris`` (m, 3, 3) (Van Oosterom-Strackee solid angles): about 1 inside, 0 outside."""
    out = np.zeros(len(points))
    for i in range(0, len(points), 256):
        P = points[i : i + 256, None, :]
        a, b, c = tris[None, :, 0] - P, tris[None, :, 1] - P, tris[None, :, 2] - P
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        num = np.einsum("ijk,ijk->ij", a, np.cross(b, c))
        den = (
            la * lb * lc
            + np.einsum("ijk,ijk->ij", a, b) * lc
            + np.einsum("ijk,ijk->ij", b, c) * la
            + np.einsum("ijk,ijk->ij", c, a) * lb
        )
        out[i : i + 256] = np.abs(np.sum(2.0 * np.arctan2(num, den), axis=1)) / (4.0 * np.pi)
    return out


def _fit_to_mesh(parts: list[NDArray[np.float64]], mesh: TriangleMesh) -> list[NDArray[np.float64]]:
    """Each part shrunk onto the mesh inside it: the points of the mesh's triangles clipped to
    the part, plus the part's corners that lie inside the mesh (where CoACD's cuts meet inside
    it), span a hull that contains the mesh's share of the part (the hull of a solid is the
    hull of its boundary: surface pieces and cut faces, whose corners are these points); every
    face plane of the part is moved in until it touches them. So the fitted parts cover
    whatever of the mesh the parts covered, and their outer faces touch the mesh instead of
    CoACD's remeshed surface (up to a voxel outside, see the module docstring). A part with no
    solid left is kept as it is, and so are all parts of a mesh that has no inside (not
    closed, see :func:`needs_remeshing`)."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

    if needs_remeshing(mesh):  # no inside: corners inside it cannot be told, keep the parts
        return parts
    V = np.asarray(mesh.vertices, dtype=float)
    tris = V[np.asarray(mesh.faces)]
    out = []
    for p in parts:
        try:
            eq = ConvexHull(p).equations
        except QhullError:
            out.append(p)
            continue
        scale = float(np.max(np.ptp(p, axis=0)))
        eps = 1e-9 * max(scale, 1e-3)
        s = np.einsum("mvk,pk->mvp", tris, eq[:, :3]) + eq[:, 3]  # (m, 3, planes)
        inside = np.all(s <= eps, axis=(1, 2))
        outside = np.any(np.all(s > eps, axis=1), axis=1)
        cut = ~inside & ~outside
        pts = [tris[inside].reshape(-1, 3)]
        for t in tris[cut]:
            pts.append(_clip_polygon(t, eq))
        pts.append(p[_winding(tris, p) > 0.5])
        pts_all = np.concatenate(pts)
        if len(pts_all) < 4:
            out.append(p)
            continue
        # Each face plane of the part moved in until it touches those points: the part keeps
        # its faces (CoACD's hulls have at most 256 vertices; the hull of the points themselves
        # had up to 1397 on the Kinova's curved links, and is_valid paid for them) and still
        # contains their hull, which contains the mesh's share of the part.
        tight = np.c_[eq[:, :3], -np.max(pts_all @ eq[:, :3].T, axis=0)]
        try:
            centre = pts_all.mean(axis=0)
            if np.max(tight[:, :3] @ centre + tight[:, 3]) >= -eps:
                raise MeshError("flat")
            corners = HalfspaceIntersection(tight, centre).intersections
            out.append(convex_hull(corners, "fitted part")[0])
        except (QhullError, MeshError, ValueError):
            out.append(p)
    return out


def needs_remeshing(mesh: TriangleMesh) -> bool:
    """True unless ``mesh`` is closed (every edge shared by exactly two faces) and
    consistently oriented, i.e. has an inside."""
    import trimesh

    tm = trimesh.Trimesh(
        np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces), process=False
    )
    return not (tm.is_watertight and tm.is_winding_consistent)


def decompose(
    mesh: TriangleMesh, options: DecompositionOptions = DecompositionOptions()
) -> list[NDArray[np.float64]]:
    """Vertices ``(k_i, 3)`` (m, mesh frame) of the convex parts of ``mesh`` (cached)."""
    if len(mesh.faces) == 0:
        raise MeshError("a convex decomposition needs a mesh with faces (the file has points only)")
    path = cache_directory(options) / f"{_digest(mesh, options)}.npz"
    parts = _read_cache(path) if path.is_file() else None
    if parts is not None:
        return parts
    import coacd

    coacd.set_log_level("error")
    try:
        result = coacd.run_coacd(
            coacd.Mesh(np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)),
            threshold=float(options.threshold),
            max_convex_hull=int(options.max_parts),
            preprocess_mode=options.preprocess,
            preprocess_resolution=int(options.preprocess_resolution),
            seed=int(options.seed),
        )
    except Exception as exc:  # the C++ library reports failures as generic exceptions
        raise MeshError(f"convex decomposition failed: {exc}") from exc
    parts = []
    for v, _ in result:
        try:  # only hull vertices are kept; flat slivers are dropped (covered just below)
            parts.append(convex_hull(np.asarray(v, dtype=float).reshape(-1, 3), "part")[0])
        except MeshError:
            continue
    if not parts:
        raise MeshError("convex decomposition returned no solid part; use mesh_mode='hull'")
    verts = np.asarray(mesh.vertices, dtype=float)
    parts = _cover_vertices(_fit_to_mesh(parts, mesh), verts)
    parts = [convex_hull(p, "decomposition part")[0] for p in parts]
    _write_cache(path, parts)
    return parts


def decomposed_meshes(
    source: Union[str, os.PathLike[str], TriangleMesh],
    scale: Union[float, ArrayLike] = 1.0,
    options: DecompositionOptions = DecompositionOptions(),
) -> list[tuple[Mesh, NDArray[np.float64]]]:
    """The convex parts of a mesh file (or a :class:`TriangleMesh`, scaled by ``scale``) as
    ``(Mesh, pose)``: each part centred on its own origin (so that its bounding sphere, which
    the kernels cull with, is tight) and ``pose`` (4, 4) placing it in the mesh's frame."""
    if isinstance(source, TriangleMesh):
        mesh = TriangleMesh(source.vertices * mesh_scale(scale), source.faces)
    else:
        mesh = load_mesh(source, scale)
    out = []
    for p in decompose(mesh, options):
        centre = 0.5 * (p.min(axis=0) + p.max(axis=0))
        pose = np.eye(4)
        pose[:3, 3] = centre
        out.append((Mesh(p - centre), pose))
    return out


def mesh_world_objects(
    source: Union[str, os.PathLike[str], TriangleMesh],
    pose: Optional[ArrayLike] = None,
    name: str = "",
    mode: str = "hull",
    scale: Union[float, ArrayLike] = 1.0,
    options: DecompositionOptions = DecompositionOptions(),
) -> list[WorldObject]:
    """World objects for a mesh at ``pose`` (4, 4): one (its convex hull) in ``mode="hull"``,
    one per convex part in ``mode="decomposition"``, named ``name`` / ``name#k``."""
    if mode not in MESH_MODES:
        raise MeshError(f"mesh mode must be one of {', '.join(MESH_MODES)}, got {mode!r}")
    T = np.eye(4) if pose is None else np.asarray(pose, dtype=float)
    if mode == "hull":
        if isinstance(source, TriangleMesh):
            shape = Mesh(source.vertices, scale=scale)
        else:
            shape = Mesh(source, scale=scale)
        return [WorldObject(shape, T, name)]
    parts = decomposed_meshes(source, scale, options)
    return [
        WorldObject(m, T @ offset, f"{name}#{k}" if name else "")
        for k, (m, offset) in enumerate(parts)
    ]
