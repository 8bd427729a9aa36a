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

``mesh_mode="auto"`` decomposes only the meshes whose convex hull is much larger than the mesh
(:func:`hull_excess`, :func:`wants_decomposition`; the rule and its parameters are in
:class:`DecompositionOptions`): the measure is cheap (milliseconds for a closed mesh) and cached
next to the decompositions, and the meshes to decompose are decomposed in parallel processes
(:func:`decompose_all`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
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
    "AUTO_DECOMPOSITION",
    "MESH_MODES",
    "DecompositionOptions",
    "HullExcess",
    "cache_directory",
    "decompose",
    "decompose_all",
    "decomposed_meshes",
    "hull_excess",
    "mesh_world_objects",
    "needs_remeshing",
    "resolve_meshes",
    "wants_decomposition",
]

MESH_MODES = ("hull", "decomposition", "auto")
"""How a mesh collides: its convex hull, the convex parts of its decomposition, or (``"auto"``)
the decomposition where :func:`wants_decomposition` says the hull is too large, else the
hull."""

_FORMAT = 4  # bump when the cached content changes meaning (4: parts fitted to the mesh)


@dataclass(frozen=True)
class DecompositionOptions:
    """CoACD parameters: ``threshold`` (concavity bound of each part relative to the mesh's
    size; the stated tolerance of a decomposition is ``threshold`` times the largest extent of
    the mesh's bounding box, e.g. 2 cm for a 0.4 m link at 0.05),
    ``max_parts`` (-1: no limit), ``preprocess`` ("auto", "on", "off": manifold remeshing),
    ``preprocess_resolution`` (voxels per side of that remeshing), ``seed``,
    ``mcts_iterations`` / ``mcts_nodes`` / ``mcts_max_depth`` (CoACD's search for each cut;
    fewer is faster and cuts less well), ``sampling_resolution`` (CoACD's ``resolution``:
    surface samples of its concavity measure); ``cache_dir`` (None: see the module docstring). The
    defaults are CoACD's; :data:`AUTO_DECOMPOSITION` is the cheaper set ``mesh_mode="auto"``
    uses unless given options.

    ``mesh_mode="auto"`` decomposes a mesh when its hull is too large for it
    (:func:`wants_decomposition`): ``auto_min_excess`` of the hull's volume lies outside the mesh
    (:func:`hull_excess`) **and** that excess volume is at least a cube of side
    ``auto_min_excess_size`` (m), so that small parts (screws, finger tips) stay hulls whatever
    their shape. ``workers``: processes that decompose the meshes of one model in parallel
    (0: ``os.cpu_count()``; 1, the default: in this process. Measured on the 2-core machine:
    no gain, and ``spawn`` re-imports the caller's main module, which an unguarded user
    script does not survive)."""

    threshold: float = 0.05
    max_parts: int = -1
    preprocess: str = "auto"
    preprocess_resolution: int = 50
    seed: int = 0
    cache_dir: Optional[str] = None
    mcts_iterations: int = 150
    mcts_nodes: int = 20
    mcts_max_depth: int = 3
    sampling_resolution: int = 2000
    auto_min_excess: float = 0.4
    auto_min_excess_size: float = 0.02
    workers: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < float(self.threshold) <= 1.0:
            raise MeshError(f"decomposition threshold must be in (0, 1], got {self.threshold}")
        if not 0.0 <= float(self.auto_min_excess) <= 1.0:
            raise MeshError(f"auto_min_excess must be in [0, 1], got {self.auto_min_excess}")
        if not float(self.auto_min_excess_size) >= 0.0:
            raise MeshError(
                f"auto_min_excess_size must be >= 0 (m), got {self.auto_min_excess_size}"
            )
        search = (self.mcts_iterations, self.mcts_nodes, self.mcts_max_depth,
                  self.sampling_resolution, self.preprocess_resolution)
        if min(int(x) for x in search) < 1:
            raise MeshError(
                "decomposition mcts_iterations, mcts_nodes, mcts_max_depth, "
                f"sampling_resolution and preprocess_resolution must be >= 1, got {search}"
            )
        if int(self.workers) < 0:
            raise MeshError(f"workers must be >= 0 (0: one per CPU), got {self.workers}")
        if self.preprocess not in ("auto", "on", "off"):
            raise MeshError(
                f"decomposition preprocess must be 'auto', 'on' or 'off', got {self.preprocess!r}"
            )

    def key(self) -> str:
        key = (
            f"t={self.threshold!r};m={self.max_parts};p={self.preprocess};"
            f"r={self.preprocess_resolution};s={self.seed}"
        )
        search = (self.mcts_iterations, self.mcts_nodes, self.mcts_max_depth,
                  self.sampling_resolution)
        if search != (150, 20, 3, 2000):  # CoACD's defaults keep the keys of earlier caches
            key += ";search=" + ",".join(str(int(x)) for x in search)
        return key


AUTO_DECOMPOSITION = DecompositionOptions(
    threshold=0.1,
    preprocess_resolution=30,
    mcts_iterations=40,
    mcts_nodes=10,
    mcts_max_depth=2,
    sampling_resolution=1000,
)
"""The options ``mesh_mode="auto"`` decomposes with when none are given: CoACD's search cut
down (40 iterations of 10 nodes, depth 2, 1000 samples instead of 150, 20, 3, 2000), threshold
0.1 and remeshing on a 30-voxel grid. Measured on the meshes of the corpus it is 4-7x faster
(PR2's open ``shoulder_lift.stl``: 94 s -> 13 s; Talos' ``torso_1_link``: over 100 s -> 26 s)
and the false-collision target still holds (docs/robots.md)."""


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


def _mesh_digest(mesh: TriangleMesh, key: str) -> str:
    """SHA-256 of the mesh's vertices and faces and ``key`` (what is computed from them)."""
    h = hashlib.sha256()
    v = np.ascontiguousarray(mesh.vertices, dtype="<f8")
    f = np.ascontiguousarray(mesh.faces, dtype="<i8")
    h.update(str(v.shape).encode() + v.tobytes() + str(f.shape).encode() + f.tobytes())
    h.update(key.encode())
    return h.hexdigest()


def _digest(mesh: TriangleMesh, options: DecompositionOptions) -> str:
    from importlib import metadata

    try:
        version = metadata.version("coacd")
    except metadata.PackageNotFoundError:
        version = ""
    return _mesh_digest(mesh, f"{options.key()};coacd={version};format={_FORMAT}")


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


@dataclass(frozen=True)
class HullExcess:
    """How much larger a mesh's convex hull is than the mesh: volumes in m^3. ``exact``: the
    mesh is closed and its volume is its signed volume; otherwise (no inside, see
    :func:`needs_remeshing`) ``mesh_volume`` is the hull's volume times the share of points
    sampled uniformly in the hull whose generalized winding number with respect to the mesh's
    triangles exceeds 1/2 (robust to holes and gaps in the surface; 100-1000 points, so about
    +-3 % of the hull's volume)."""

    hull_volume: float
    mesh_volume: float
    exact: bool

    @property
    def relative(self) -> float:
        """Share of the hull's volume outside the mesh, in [0, 1]."""
        if self.hull_volume <= 0.0:
            return 0.0
        return float(min(max(1.0 - self.mesh_volume / self.hull_volume, 0.0), 1.0))

    @property
    def volume(self) -> float:
        """Volume of the hull outside the mesh (m^3)."""
        return max(self.hull_volume - self.mesh_volume, 0.0)


_EXCESS_FORMAT = 1  # bump when hull_excess computes something else


def hull_excess(
    mesh: TriangleMesh, options: DecompositionOptions = DecompositionOptions()
) -> HullExcess:
    """The :class:`HullExcess` of ``mesh`` (cached in the decompositions' folder under a hash of
    the mesh, like the decompositions; milliseconds for a closed mesh, up to about 2 s for a
    large open one)."""
    key = _mesh_digest(mesh, f"excess;format={_EXCESS_FORMAT}")
    path = cache_directory(options) / f"{key}.json"
    try:
        data = json.loads(path.read_text())
        return HullExcess(float(data["hull"]), float(data["mesh"]), bool(data["exact"]))
    except (OSError, KeyError, ValueError, TypeError):
        pass
    from scipy.spatial import ConvexHull, QhullError

    V = np.asarray(mesh.vertices, dtype=float)
    F = np.asarray(mesh.faces, dtype=np.int64)
    try:
        hull = ConvexHull(V)
    except (QhullError, ValueError):  # flat or too few points: no volume to speak of
        return HullExcess(0.0, 0.0, True)
    if len(F) == 0:
        result = HullExcess(float(hull.volume), float(hull.volume), False)
    elif not needs_remeshing(mesh):
        tris = V[F]
        signed = np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum() / 6.0
        result = HullExcess(float(hull.volume), float(min(abs(signed), hull.volume)), True)
    else:
        n = int(np.clip(5_000_000 // len(F), 100, 1000))
        rng = np.random.default_rng(0)
        lo, hi = V.min(axis=0), V.max(axis=0)
        eq = hull.equations
        pts = np.zeros((0, 3))
        for _ in range(100):  # rejection sampling in the hull (it fills >= 1/6 of its box)
            P = rng.uniform(lo, hi, (4 * n, 3))
            pts = np.vstack([pts, P[np.max(P @ eq[:, :3].T + eq[:, 3], axis=1) <= 0.0]])
            if len(pts) >= n:
                break
        pts = pts[:n]
        occupied = float(np.mean(_winding(V[F], pts) > 0.5)) if len(pts) else 1.0
        result = HullExcess(float(hull.volume), occupied * float(hull.volume), False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({"hull": result.hull_volume, "mesh": result.mesh_volume,
                       "exact": result.exact}, fh)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        pass
    return result


def wants_decomposition(
    excess: HullExcess, options: DecompositionOptions = DecompositionOptions()
) -> bool:
    """The ``mesh_mode="auto"`` rule: decompose when at least ``options.auto_min_excess`` of
    the hull's volume lies outside the mesh and that volume is at least
    ``options.auto_min_excess_size`` cubed."""
    return (
        excess.hull_volume > 0.0
        and excess.relative >= float(options.auto_min_excess)
        and excess.volume >= float(options.auto_min_excess_size) ** 3
    )


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
            mcts_iterations=int(options.mcts_iterations),
            mcts_nodes=int(options.mcts_nodes),
            mcts_max_depth=int(options.mcts_max_depth),
            resolution=int(options.sampling_resolution),
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


def decompose_all(
    meshes: list[TriangleMesh], options: DecompositionOptions = DecompositionOptions()
) -> list[list[NDArray[np.float64]]]:
    """:func:`decompose` of each of ``meshes``: identical meshes once, the ones not cached in
    up to ``options.workers`` processes (0: one per CPU), the largest first."""
    keys = [_digest(m, options) for m in meshes]
    done: dict[str, list[NDArray[np.float64]]] = {}
    todo: dict[str, TriangleMesh] = {}
    for k, m in zip(keys, meshes):
        if k in done or k in todo:
            continue
        path = cache_directory(options) / f"{k}.npz"
        cached = _read_cache(path) if path.is_file() else None
        if cached is not None:
            done[k] = cached
        else:
            todo[k] = m
    order = sorted(todo, key=lambda k: -len(todo[k].faces))
    workers = min(int(options.workers) or (os.cpu_count() or 1), len(order))
    if workers <= 1:
        for k in order:
            done[k] = decompose(todo[k], options)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the parent may hold threads (numba, BLAS, rclpy) that fork would copy
        # mid-lock; the children import only numpy, scipy, trimesh and coacd
        with ProcessPoolExecutor(workers, multiprocessing.get_context("spawn")) as pool:
            for k, parts in zip(order, pool.map(decompose, [todo[k] for k in order],
                                                [options] * len(order))):
                done[k] = parts
    return [done[k] for k in keys]


def _placed_parts(parts: list[NDArray[np.float64]]) -> list[tuple[Mesh, NDArray[np.float64]]]:
    out = []
    for p in parts:
        centre = 0.5 * (p.min(axis=0) + p.max(axis=0))
        pose = np.eye(4)
        pose[:3, 3] = centre
        out.append((Mesh(p - centre), pose))
    return out


def decomposed_meshes(
    source: Union[str, os.PathLike[str], TriangleMesh],
    scale: Union[float, ArrayLike] = 1.0,
    options: DecompositionOptions = DecompositionOptions(),
) -> list[tuple[Mesh, NDArray[np.float64]]]:
    """The convex parts of a mesh file (or a :class:`TriangleMesh`, scaled by ``scale``) as
    ``(Mesh, pose)``: each part centred on its own origin (so that its bounding sphere, which
    the kernels cull with, is tight) and ``pose`` (4, 4) placing it in the mesh's frame."""
    return _placed_parts(decompose(_scaled(source, scale), options))


def _scaled(
    source: Union[str, os.PathLike[str], TriangleMesh], scale: Union[float, ArrayLike]
) -> TriangleMesh:
    if isinstance(source, TriangleMesh):
        return TriangleMesh(source.vertices * mesh_scale(scale), source.faces)
    return load_mesh(source, scale)


def resolve_meshes(
    requests: Sequence[
        tuple[Union[str, os.PathLike[str], TriangleMesh], Union[float, ArrayLike], str]
    ],
    options: DecompositionOptions = DecompositionOptions(),
) -> list[Optional[list[tuple[Mesh, NDArray[np.float64]]]]]:
    """For each ``(source, scale, mode)`` (mode ``"decomposition"`` or ``"auto"``): None where
    the mesh keeps its hull (``"auto"`` and :func:`wants_decomposition` is false), else its
    parts as :func:`decomposed_meshes` gives them. All decompositions of the list are computed
    together (:func:`decompose_all`: in parallel, identical meshes once)."""
    meshes = [_scaled(src, scale) for src, scale, _ in requests]
    pick = [
        mode == "decomposition"
        or (mode == "auto" and wants_decomposition(hull_excess(m, options), options))
        for m, (_, _, mode) in zip(meshes, requests)
    ]
    chosen = [m for m, p in zip(meshes, pick) if p]
    parts = iter(decompose_all(chosen, options))
    return [_placed_parts(next(parts)) if p else None for p in pick]


def mesh_world_objects(
    source: Union[str, os.PathLike[str], TriangleMesh],
    pose: Optional[ArrayLike] = None,
    name: str = "",
    mode: str = "hull",
    scale: Union[float, ArrayLike] = 1.0,
    options: DecompositionOptions = DecompositionOptions(),
) -> list[WorldObject]:
    """World objects for a mesh at ``pose`` (4, 4): one (its convex hull) in ``mode="hull"``,
    one per convex part in ``mode="decomposition"`` (``"auto"``: either, by
    :func:`wants_decomposition`), named ``name`` / ``name#k``."""
    if mode not in MESH_MODES:
        raise MeshError(f"mesh mode must be one of {', '.join(MESH_MODES)}, got {mode!r}")
    T = np.eye(4) if pose is None else np.asarray(pose, dtype=float)
    if mode == "auto":
        (parts,) = resolve_meshes([(source, scale, "auto")], options)
        mode = "hull" if parts is None else "decomposition"
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
