"""Sensed obstacles: point clouds and occupancy maps as collision shapes, and their files.

A :class:`PointCloud` is the union of balls of ``radius`` m around its points (``radius = 0``:
the points themselves), usable wherever a shape is: ``WorldObject(PointCloud(P, r), pose,
name)``. Its signed distance to another shape is the distance to the nearest point minus
``radius``; the witness on the cloud is on that point's ball (the point itself when
``radius = 0``). :class:`OccupancyMap` is a cloud of occupied voxel centres whose balls
circumscribe the voxels (``radius`` = half the voxel diagonal, so the map never covers less
than the voxels; MATLAB's ``occupancyMap3D`` and octomap report occupied voxel centres).

Files (:func:`load_point_cloud`): ``.ply`` (ASCII or binary, read by trimesh), ``.pcd`` (PCL's
format: ``ascii``, ``binary`` and ``binary_compressed``; read here, see
:func:`read_pcd` for why), ``.npy`` (an (N, 3) or wider float array, or a structured array with
``x``, ``y``, ``z`` fields). :func:`~.cloud_index.voxel_downsample` thins a dense cloud to a
resolution (one centroid per voxel of a Morton-ordered lattice).

The spatial index the kernels use (:class:`~.cloud_index.CloudIndex`) is built on first use
and kept with the cloud (clouds are immutable), so every checker, planner and filter sharing a
cloud object shares one index.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..load_limits import LoadLimits, limits_or_default
from .cloud_index import F_HI, F_LO, F_RMAX, CloudIndex, _checked_points, voxel_downsample
from .shapes import Shape

__all__ = [
    "POINT_CLOUD",
    "PointCloud",
    "OccupancyMap",
    "load_point_cloud",
    "read_pcd",
    "voxel_downsample",
]

POINT_CLOUD = 16
"""Kernel kind of :class:`PointCloud` (kept apart from the primitive kinds 0-4 of
:mod:`.shapes` so that new primitive kinds can be numbered on from there)."""

_DEFAULT_QUANTUM = 0.001  # m, Morton lattice of clouds that were not thinned here
_DEFAULT_CELL = 0.015  # m, smallest grid cell of the index (16 mm on the 1 mm lattice)


@dataclass(frozen=True, eq=False)
class PointCloud(Shape):
    """Points ``(N, 3)`` (m, local frame) with a ball of ``radius`` m around each.

    ``resolution`` (m, optional) records that the points are one per voxel of that lattice
    (set by :meth:`downsampled`); the index then reuses their order. ``grid_cells`` caps the
    index's grid (memory and build time grow with it, 8 bytes a cell; its constant-time bound
    tightens). N may be 0 (an empty cloud is no obstacle). Non-finite points are rejected:
    drop them first.
    """

    points: NDArray[np.float64]
    radius: float = 0.0
    resolution: Optional[float] = None
    grid_cells: int = field(default=1 << 19, kw_only=True)
    _index: list[CloudIndex] = field(default_factory=list, init=False, repr=False)
    _box: list[tuple[NDArray[np.float64], NDArray[np.float64], float]] = field(
        default_factory=list, init=False, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    kind = POINT_CLOUD

    def __post_init__(self) -> None:
        P = _checked_points(self.points)
        P.setflags(write=False)
        object.__setattr__(self, "points", P)
        r = float(self.radius)
        if not (math.isfinite(r) and r >= 0.0):
            raise ShapeError(f"PointCloud radius must be a finite non-negative number of metres, "
                             f"got {self.radius!r}")
        object.__setattr__(self, "radius", r)
        if self.resolution is not None:
            res = float(self.resolution)
            if not (math.isfinite(res) and res > 0.0):
                raise ShapeError(f"PointCloud resolution must be a positive number of metres, "
                                 f"got {self.resolution!r}")
            object.__setattr__(self, "resolution", res)

    def __getstate__(self) -> dict[str, object]:
        """Picklable with its built index (a cloud reduced in a worker process arrives indexed);
        the lock is not pickled."""
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_lock", threading.Lock())
        self.points.setflags(write=False)  # (arrays unpickled out of band are writable)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def downsampled(
        cls, points: ArrayLike, resolution: float, radius: float = 0.0
    ) -> PointCloud:
        """The cloud thinned to one point (the centroid) per voxel of ``resolution`` m."""
        return cls(voxel_downsample(np.asarray(points, dtype=float), resolution), radius,
                   float(resolution))

    @classmethod
    def from_file(
        cls,
        path: Union[str, os.PathLike[str]],
        radius: float = 0.0,
        resolution: Optional[float] = None,
        limits: Optional[LoadLimits] = None,
    ) -> PointCloud:
        """Cloud read by :func:`load_point_cloud` (non-finite points dropped), thinned to
        ``resolution`` m when given."""
        P = load_point_cloud(path, limits)
        if resolution is not None:
            return cls.downsampled(P, resolution, radius)
        return cls(P, radius)

    # ------------------------------------------------------------------ Shape interface
    @property
    def num_points(self) -> int:
        return int(self.points.shape[0])

    def params(self) -> NDArray[np.float64]:
        """``[radius, 0, 0, 0]``."""
        return np.array([self.radius, 0.0, 0.0, 0.0])

    def _bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """(centre, half extents, radius about the origin) of the points, computed once."""
        if not self._box:
            if self.num_points == 0:
                self._box.append((np.zeros(3), np.zeros(3), 0.0))
            else:  # read from the index (computed by its compiled build)
                F = self.index.F
                lo, hi = F[F_LO : F_LO + 3], F[F_HI : F_HI + 3]
                self._box.append((0.5 * (lo + hi), 0.5 * (hi - lo), float(F[F_RMAX])))
        return self._box[0]

    def bounding_radius(self) -> float:
        return self._bounds()[2] + (self.radius if self.num_points else 0.0)

    def local_box(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        centre, half, _ = self._bounds()
        return centre.copy(), half + (self.radius if self.num_points else 0.0)

    @property
    def index(self) -> CloudIndex:
        """The spatial index (built on first use, ~10-30 ms per 100,000 points; thread-safe)."""
        if not self._index:
            with self._lock:
                if not self._index:
                    quantum = self.resolution or _DEFAULT_QUANTUM
                    self._index.append(
                        CloudIndex(self.points, self.radius, quantum=quantum,
                                   cell=_DEFAULT_CELL, max_cells=self.grid_cells)
                    )
        return self._index[0]


class OccupancyMap(PointCloud):
    """Occupied voxels as a cloud: ``centres`` (M, 3) of voxels of edge ``voxel_size`` m, each
    covered by the ball circumscribing it (radius = ``voxel_size * sqrt(3) / 2``: never less
    than the voxel, at most 0.37 voxel beyond its faces)."""

    voxel_size: float

    def __init__(self, centres: ArrayLike, voxel_size: float) -> None:
        v = float(voxel_size)
        if not (math.isfinite(v) and v > 0.0):
            raise ShapeError(f"OccupancyMap voxel_size must be a positive number of metres, "
                             f"got {voxel_size!r}")
        super().__init__(np.asarray(centres, dtype=float), 0.5 * math.sqrt(3.0) * v)
        object.__setattr__(self, "voxel_size", v)

    @classmethod
    def from_file(  # type: ignore[override]
        cls,
        path: Union[str, os.PathLike[str]],
        voxel_size: float,
        limits: Optional[LoadLimits] = None,
    ) -> OccupancyMap:
        """Occupied voxel centres read by :func:`load_point_cloud`."""
        return cls(load_point_cloud(path, limits), voxel_size)


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def load_point_cloud(
    path: Union[str, os.PathLike[str]], limits: Optional[LoadLimits] = None
) -> NDArray[np.float64]:
    """Points ``(N, 3)`` (float64) of a ``.ply``, ``.pcd`` or ``.npy`` file; points with a
    non-finite coordinate (the gaps of organised clouds) are dropped. The caps
    ``max_cloud_bytes`` and ``max_cloud_points`` of ``limits`` (defaults when None) are checked
    before the points are parsed."""
    p = Path(path)
    if not p.is_file():
        raise ShapeError(f"point cloud file {str(p)!r} does not exist")
    lim = limits_or_default(limits)
    size = p.stat().st_size
    if size > lim.max_cloud_bytes:
        raise ShapeError(lim.exceeded("max_cloud_bytes", f"point cloud file {str(p)!r}", size,
                                      "bytes"))
    suffix = p.suffix.lower()
    try:
        if suffix == ".pcd":
            P = read_pcd(p, lim.max_cloud_points)
        elif suffix == ".ply":
            P = _read_ply(p, lim.max_cloud_points)
        elif suffix == ".npy":
            P = _read_npy(p, lim.max_cloud_points)
        else:
            raise ShapeError(
                f"point cloud file {str(p)!r} has unsupported format {suffix!r}; use .ply, .pcd "
                "or .npy"
            )
    except ShapeError:
        raise
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ShapeError(f"cannot read point cloud file {str(p)!r}: {exc}") from exc
    P = np.ascontiguousarray(P, dtype=np.float64).reshape(-1, 3)
    return P[np.isfinite(P).all(axis=1)]


def _too_many(path: Path, n: int, max_points: int) -> None:
    if n > max_points:
        lim = LoadLimits(max_cloud_points=max_points)
        raise ShapeError(lim.exceeded("max_cloud_points", f"point cloud file {str(path)!r}", n,
                                      " points"))


def _read_ply(path: Path, max_points: int) -> NDArray[np.float64]:
    import trimesh

    with open(path, "rb") as f:
        head = f.read(1 << 16)
    end = head.find(b"end_header")
    if not head.startswith(b"ply") or end < 0:
        raise ShapeError(f"{str(path)!r} is not a PLY file (no 'ply' ... 'end_header' header)")
    for line in head[:end].decode("ascii", errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "element" and parts[1] == "vertex":
            _too_many(path, int(parts[2]), max_points)
    geom = trimesh.load(str(path), file_type="ply", process=False)
    verts = getattr(geom, "vertices", None)
    if verts is None:
        raise ShapeError(f"point cloud file {str(path)!r} holds no vertices")
    return np.asarray(verts, dtype=np.float64)


def _read_npy(path: Path, max_points: int) -> NDArray[np.float64]:
    a = np.load(path, allow_pickle=False, mmap_mode="r")
    _too_many(path, a.shape[0] if a.ndim else 1, max_points)
    if a.dtype.names:
        if not {"x", "y", "z"} <= set(a.dtype.names):
            raise ShapeError(f"{str(path)!r}: a structured array needs fields x, y, z")
        return np.stack([a["x"].ravel(), a["y"].ravel(), a["z"].ravel()], axis=1).astype(float)
    if a.ndim != 2 or a.shape[1] < 3:
        raise ShapeError(f"{str(path)!r} must hold an (N, 3) array (or wider: x, y, z first), "
                         f"got shape {a.shape}")
    return np.asarray(a[:, :3], dtype=np.float64)


_PCD_TYPES = {("F", 4): "<f4", ("F", 8): "<f8", ("I", 1): "<i1", ("I", 2): "<i2",
              ("I", 4): "<i4", ("I", 8): "<i8", ("U", 1): "<u1", ("U", 2): "<u2",
              ("U", 4): "<u4", ("U", 8): "<u8"}


def read_pcd(
    path: Union[str, os.PathLike[str]], max_points: Optional[int] = None
) -> NDArray[np.float64]:
    """``x``, ``y``, ``z`` of a PCL ``.pcd`` file (any version, ``DATA ascii``, ``binary`` or
    ``binary_compressed``) as ``(N, 3)`` float64, non-finite points included; more than
    ``max_points`` declared points (default: ``LoadLimits().max_cloud_points``) is an error.

    Written here rather than taken from ``pypcd4``: that package needs pydantic and a compiled
    LZF extension (neither in ROS distributions) for what is a header, a ``numpy`` record view
    and the LZF decompressor below.
    """
    data = Path(path).read_bytes()
    header: dict[str, list[str]] = {}
    pos = 0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            raise ShapeError(f"{str(path)!r}: PCD header ends before its DATA line")
        line = data[pos:end].decode("ascii", errors="replace").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *vals = line.split()
        header[key.upper()] = vals
        if key.upper() == "DATA":
            break
    try:
        fields = header["FIELDS"]
        sizes = [int(s) for s in header["SIZE"]]
        types = [t.upper() for t in header["TYPE"]]
        counts = [int(c) for c in header.get("COUNT", ["1"] * len(fields))]
        n = int(header["POINTS"][0]) if "POINTS" in header else (
            int(header["WIDTH"][0]) * int(header.get("HEIGHT", ["1"])[0]))
        kind = header["DATA"][0].lower()
    except (KeyError, IndexError, ValueError) as exc:
        raise ShapeError(f"{str(path)!r}: malformed PCD header ({exc})") from exc
    if not (len(fields) == len(sizes) == len(types) == len(counts)):
        raise ShapeError(f"{str(path)!r}: PCD FIELDS, SIZE, TYPE and COUNT differ in length")
    for axis in ("x", "y", "z"):
        if axis not in fields:
            raise ShapeError(f"{str(path)!r}: PCD file has no {axis!r} field (fields: {fields})")
    if n < 0:
        raise ShapeError(f"{str(path)!r}: negative PCD point count")
    _too_many(Path(path), n, limits_or_default(None).max_cloud_points if max_points is None
              else max_points)
    dtypes = []
    for f, s, t, c in zip(fields, sizes, types, counts):
        base = _PCD_TYPES.get((t, s))
        if base is None:
            raise ShapeError(f"{str(path)!r}: unsupported PCD field type {t}{s} for {f!r}")
        dtypes.append((f, base, (c,)) if c > 1 else (f, base))
    # PCL writes '_' for padding fields; numpy needs unique names
    names = [f if f != "_" else f"_pad{i}" for i, f in enumerate(fields)]
    dt = np.dtype([(nm, *d[1:]) for nm, d in zip(names, dtypes)])
    body = data[pos:]
    if kind == "ascii":
        rows = [ln.split() for ln in body.decode("ascii", errors="replace").splitlines()
                if ln.strip()]
        width = sum(counts)
        table = np.array([r[:width] for r in rows[:n] if len(r) >= width], dtype=float)
        table = table.reshape(-1, width)
        col = {f: sum(counts[:i]) for i, f in enumerate(fields)}
        return np.stack([table[:, col["x"]], table[:, col["y"]], table[:, col["z"]]], axis=1)
    if kind == "binary":
        if len(body) < n * dt.itemsize:
            raise ShapeError(f"{str(path)!r}: PCD binary data is shorter than {n} points")
        rec = np.frombuffer(body, dtype=dt, count=n)
        return np.stack([rec["x"], rec["y"], rec["z"]], axis=1).astype(np.float64)
    if kind == "binary_compressed":
        if len(body) < 8:
            raise ShapeError(f"{str(path)!r}: PCD compressed data is missing")
        csize, usize = (int(v) for v in np.frombuffer(body[:8], dtype="<u4"))
        if usize != n * dt.itemsize or len(body) < 8 + csize:
            raise ShapeError(f"{str(path)!r}: PCD compressed sizes do not match {n} points")
        raw = np.empty(usize, dtype=np.uint8)
        got = _lzf_decompress(np.frombuffer(body[8 : 8 + csize], dtype=np.uint8), raw)
        if got != usize:
            raise ShapeError(f"{str(path)!r}: PCD compressed data is corrupt")
        # field-major layout: every field's n values together, in header order
        out = {}
        off = 0
        for nm in names:
            sub = dt[nm]
            size = sub.itemsize * n
            if nm in ("x", "y", "z"):
                out[nm] = np.frombuffer(raw[off : off + size].tobytes(), dtype=sub.base,
                                        count=n * max(1, sub.shape[0] if sub.shape else 1))
            off += size
        return np.stack([out["x"][:n], out["y"][:n], out["z"][:n]], axis=1).astype(np.float64)
    raise ShapeError(f"{str(path)!r}: unsupported PCD DATA {kind!r} (ascii, binary, "
                     "binary_compressed)")


@njit(cache=True)
def _lzf_decompress(src, dst):  # type: ignore[no-untyped-def]
    """LZF (liblzf) decompression of ``src`` into ``dst`` (uint8); returns the bytes written or
    -1 on corrupt input."""
    ip = 0
    op = 0
    n = src.shape[0]
    m = dst.shape[0]
    while ip < n:
        ctrl = int(src[ip])
        ip += 1
        if ctrl < 32:
            run = ctrl + 1
            if ip + run > n or op + run > m:
                return -1
            for k in range(run):
                dst[op + k] = src[ip + k]
            ip += run
            op += run
        else:
            length = ctrl >> 5
            if length == 7:
                if ip >= n:
                    return -1
                length += int(src[ip])
                ip += 1
            if ip >= n:
                return -1
            ref = op - ((ctrl & 0x1F) << 8) - 1 - int(src[ip])
            ip += 1
            length += 2
            if ref < 0 or op + length > m:
                return -1
            for k in range(length):
                dst[op + k] = dst[ref + k]
            op += length
    return op
