"""Spatial index of a point cloud and the compiled queries of robot shapes against it.

A cloud (N points, a ball of ``radius`` m around each, local frame) is indexed once; every
kernel (validity, distances, clearance, self-filtering) reads the same index. Everything lives
in two flat buffers, ``F`` (float64) and ``I`` (int64), so that a scene can carry any number of
clouds next to its other arrays (offsets ``fo`` / ``io`` locate one cloud in them).

The index (written here: no maintained library offers compiled queries of every shape kind
against a point set that numba kernels can call; scipy's cKDTree answers ~1 us per query from
Python):

- Points sorted along a Morton (Z-order) curve of a global lattice of ``quantum`` m (radix
  sort; clouds thinned by :func:`voxel_downsample` at that step come sorted).
- A bounding-volume hierarchy over that order: leaves of ``LEAF`` consecutive points, each
  with the tight axis-aligned box of its points; an implicit complete binary tree above them
  (node ``i`` has children ``2i+1``, ``2i+2``; missing leaves hold an empty box), so that it is
  walked without a stack and built in O(N) once the points are sorted. Exact queries and
  nearest-point searches (branch and bound) walk it.
- A dense grid of cells of size ``h`` over the points' box plus a margin, holding per cell a
  lower bound ``h * sqrt(e2)`` of the distance from any position in the cell to any point
  (box-to-box distance to the nearest occupied cell, exact up to ``_WINDOW`` cells, see
  :func:`_grid_words`) and a hint, a point of the cell or of a neighbour. A query sphere
  smaller than the bound is free after one memory read (most queries, CAPT-style constant
  time); one that contains the hint collides; only the rest walk the hierarchy. (CAPT itself
  stores per cell every point a sphere of the largest radius could reach: exact in one scan
  but tens of points a cell and a radius range fixed at build time; here any radius works.)

Queries take positions in the cloud's frame. A "distance" to a cloud is the distance to the
nearest point minus ``radius`` (the union of balls), with that point as witness.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import ShapeError
from ..jitcall import call_or as _call_or
from .distance import mesh_vertex_count, shape_distance
from .shapes import BOX, CAPSULE, CYLINDER, MESH, SPHERE

__all__ = [
    "LEAF",
    "CloudIndex",
    "build_index",
    "cloud_sphere_hits",
    "cloud_sphere_maybe",
    "voxel_downsample",
]

LEAF = 8
"""Points per leaf of the hierarchy."""

# float header (relative to fo)
F_ORIGIN = 0  # (3) position of the grid's cell (0, 0, 0) corner, m
F_H = 3  # cell size h, m
F_INVH = 4  # 1 / h
F_LO = 5  # (3) lower corner of the points' box
F_HI = 8  # (3) upper corner
F_RADIUS = 11  # ball radius around each point, m
F_QUANTUM = 12  # lattice step of the Morton order, m
F_RMAX = 13  # largest distance of a point from the frame's origin, m
F_HEADER = 16
# int header (relative to io)
I_N = 0  # points
I_NLEAF = 1  # leaves holding points
I_P = 2  # leaves of the complete tree (power of two >= I_NLEAF)
I_NX = 3  # grid cells along x, y, z
I_NY = 4
I_NZ = 5
I_PTS = 6  # float offset (from fo) of the (N, 3) sorted points
I_NODES = 7  # float offset of the (2P - 1, 6) node boxes [lo xyz, hi xyz]
I_CELLS = 8  # int offset (from io) of the (G,) cell words: e2 << 32 | (hint + 1)
I_HEADER = 16

_EMPTY = 1e150  # empty boxes: lo = +_EMPTY, hi = -_EMPTY (finite: squares stay finite)
_LATTICE_OFFSET = 1 << 20  # lattice indices are shifted by this to stay non-negative
_LATTICE_MAX = (1 << 21) - 1
_MARGIN_CELLS = 2  # grid cells beyond the points' box on every side
_LB_SLACK = 1e-9  # m; grid bounds are tightened by this against rounding of cell indices
_WINDOW = 8  # cells up to which the grid's lower bound is exact (capped beyond)
_HINT_RING = 1  # cells around an occupied cell that get its point as hint
_NO_KEY = np.int64(0x7FFFFFFFFFFFFFFF)  # empty cell while the grid is built


# --------------------------------------------------------------------------------------------
# Morton order and radix sort
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _spread3(v):  # type: ignore[no-untyped-def]
    """Bits of a 21-bit integer spread to every third bit (Morton interleave)."""
    v &= 0x1FFFFF
    v = (v | (v << 32)) & 0x1F00000000FFFF
    v = (v | (v << 16)) & 0x1F0000FF0000FF
    v = (v | (v << 8)) & 0x100F00F00F00F00F
    v = (v | (v << 4)) & 0x10C30C30C30C30C3
    v = (v | (v << 2)) & 0x1249249249249249
    return v


@njit(cache=True, nogil=True)
def _lattice(P, quantum):  # type: ignore[no-untyped-def]
    """(N, 3) int64 lattice indices ``floor(p / quantum) + 2^20`` and their Morton codes."""
    N = P.shape[0]
    L = np.empty((N, 3), np.int64)
    codes = np.empty(N, np.int64)
    inv = 1.0 / quantum
    for i in range(N):
        c = 0
        for a in range(3):
            v = math.floor(P[i, a] * inv) + _LATTICE_OFFSET
            v = min(max(v, 0), _LATTICE_MAX)
            L[i, a] = v
            c |= _spread3(v) << (2 - a)
        codes[i] = c
    return L, codes


@njit(cache=True, nogil=True)  # also sorts the voxels of live clouds, off the tick
def _radix_argsort(codes):  # type: ignore[no-untyped-def]
    """Stable argsort of non-negative int64 keys (LSD radix, 11-bit digits, only the digits
    below the highest bit in which the keys differ; ~3 x faster than numpy's argsort for 100 k
    keys of 21 bits)."""
    N = codes.shape[0]
    order = np.arange(N)
    if N < 2:
        return order
    lo = codes[0]
    hi = codes[0]
    sorted_ = True
    for i in range(1, N):
        c = codes[i]
        lo = min(lo, c)
        hi = max(hi, c)
        if c < codes[i - 1]:
            sorted_ = False
    if sorted_:
        return order
    span = hi - lo
    bits = 0
    while span > 0:
        bits += 1
        span >>= 1
    tmp = np.empty(N, np.int64)
    keys = codes - lo
    kt = np.empty(N, np.int64)
    count = np.empty(2049, np.int64)
    shift = 0
    while shift < bits:
        count[:] = 0
        for i in range(N):
            count[((keys[i] >> shift) & 2047) + 1] += 1
        for d in range(2048):
            count[d + 1] += count[d]
        for i in range(N):
            d = (keys[i] >> shift) & 2047
            j = count[d]
            count[d] = j + 1
            tmp[j] = order[i]
            kt[j] = keys[i]
        order, tmp = tmp, order
        keys, kt = kt, keys
        shift += 11
    return order


# --------------------------------------------------------------------------------------------
# Voxel filter
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _voxel_centroids(P, resolution):  # type: ignore[no-untyped-def]
    _, codes = _lattice(P, resolution)
    order = _radix_argsort(codes)
    N = P.shape[0]
    out = np.empty((N, 3))
    k = -1
    last = -1
    cnt = 0.0
    for j in range(N):
        i = order[j]
        c = codes[i]
        if k < 0 or c != last:
            if k >= 0:
                for a in range(3):
                    out[k, a] /= cnt
            k += 1
            last = c
            cnt = 0.0
            for a in range(3):
                out[k, a] = 0.0
        for a in range(3):
            out[k, a] += P[i, a]
        cnt += 1.0
    if k >= 0:
        for a in range(3):
            out[k, a] /= cnt
    return out[: k + 1]


def voxel_downsample(points: NDArray[np.float64], resolution: float) -> NDArray[np.float64]:
    """One point per occupied voxel of a global lattice of ``resolution`` m: the centroid of the
    points in it (as PCL's VoxelGrid). Returns ``(M, 3)``, M <= N, sorted along the Morton
    curve of that lattice (which the index then needs not sort again). Every input point lies
    within ``resolution * sqrt(3)`` of an output point (the voxel's diagonal)."""
    P = _checked_points(points)
    res = float(resolution)
    if not (np.isfinite(res) and res > 0):
        raise ShapeError(
            f"voxel resolution must be a positive number of metres, got {resolution!r}"
        )
    _check_extent(P, res)
    if len(P) == 0:
        return P
    out: NDArray[np.float64] = _voxel_centroids(P, res)
    return out


# --------------------------------------------------------------------------------------------
# Index construction
# --------------------------------------------------------------------------------------------


@njit(cache=True, boundscheck=False, fastmath=True, inline="always")
def _relax(dst, src, c):  # type: ignore[no-untyped-def]
    """``dst = min(dst, src + c)`` element-wise (vectorised; no argmin, which would not be)."""
    for x in range(dst.shape[0]):
        dst[x] = min(dst[x], src[x] + c)


@njit(cache=True, boundscheck=False)
def _grid_words(key, nx, ny, nz, W):  # type: ignore[no-untyped-def]
    """Cell words ``e2 << 32 | (hint + 1)`` into ``W`` (G,).

    ``e2`` = min over occupied cells of ``sum_axes max(|offset| - 1, 0)^2`` (offsets in cells),
    so that ``h * sqrt(e2)`` is the distance between the cell's box and the nearest occupied
    cell's box: a lower bound of the distance from any position in the cell to any point. It is
    computed exactly up to ``_WINDOW`` cells by three separable min-plus passes over windows of
    +-``_WINDOW`` cells and capped at ``_WINDOW^2`` beyond (still a lower bound: an occupied
    cell farther along an axis costs at least that much). A full distance transform carrying
    the nearest site was measured 10x slower here: the argmin does not vectorise.

    ``key`` (G,) is ``_NO_KEY`` for empty cells, else holds in its low 32 bits the point of the
    cell nearest its centre; ``hint`` = that point, else the point of an occupied cell among
    the 26 neighbours (a nearby point for constant-time hits), else -1.
    """
    G = nx * ny * nz
    s = nx * ny
    K = _WINDOW
    cap = np.float32(K * K)
    cost = np.empty(2 * K + 1, np.float32)
    for t in range(-K, K + 1):
        c = max(abs(t) - 1, 0)
        cost[t + K] = c * c
    A = np.empty(G, np.float32)
    B = np.empty(G, np.float32)
    for i in range(G):
        A[i] = 0.0 if key[i] != _NO_KEY else cap
        B[i] = cap
    for r in range(ny * nz):  # along x
        o = r * nx
        for t in range(-K, K + 1):
            lo = max(0, -t)
            hi = min(nx, nx - t)
            if lo < hi:
                _relax(B[o + lo : o + hi], A[o + lo + t : o + hi + t], cost[t + K])
    A[:] = cap
    for z in range(nz):  # along y
        for y in range(ny):
            o = z * s + y * nx
            for t in range(max(-K, -y), min(K, ny - 1 - y) + 1):
                i = o + t * nx
                _relax(A[o : o + nx], B[i : i + nx], cost[t + K])
    B[:] = cap
    for z in range(nz):  # along z
        for t in range(max(-K, -z), min(K, nz - 1 - z) + 1):
            o = z * s
            i = o + t * s
            _relax(B[o : o + s], A[i : i + s], cost[t + K])
    # hints (low word: point + 1, 0 = none): the cell's own point, else a neighbour's
    for i in range(G):
        W[i] = (key[i] & 0xFFFFFFFF) + 1 if key[i] != _NO_KEY else 0
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                i = (z * ny + y) * nx + x
                if key[i] == _NO_KEY:
                    continue
                hint = (key[i] & 0xFFFFFFFF) + 1
                for dz in range(max(z - _HINT_RING, 0), min(z + _HINT_RING + 1, nz)):
                    for dy in range(max(y - _HINT_RING, 0), min(y + _HINT_RING + 1, ny)):
                        o = (dz * ny + dy) * nx
                        for dx in range(max(x - _HINT_RING, 0), min(x + _HINT_RING + 1, nx)):
                            if W[o + dx] == 0:
                                W[o + dx] = hint
    for i in range(G):
        W[i] |= np.int64(B[i]) << 32
    return True


@njit(cache=True, boundscheck=False, nogil=True)  # live clouds are indexed off the tick
def _build(P, radius, quantum, h_min, max_cells):  # type: ignore[no-untyped-def]
    """``(F, I, order)`` of the index of ``P`` (see the module docstring and the header
    constants); ``order[j]`` is the input index of sorted point ``j``."""
    N = P.shape[0]
    if N == 0:
        F, I = _empty_index(radius, quantum)
        return F, I, np.zeros(0, np.int64)
    _, codes = _lattice(P, quantum)
    order = _radix_argsort(codes)
    lo = P[0].copy()
    hi = P[0].copy()
    for i in range(N):
        for a in range(3):
            lo[a] = min(lo[a], P[i, a])
            hi[a] = max(hi[a], P[i, a])
    # grid: cells of h >= h_min, enlarged until the grid (with margins) has <= max_cells cells
    h = h_min
    dims = np.empty(3, np.int64)
    for _ in range(64):
        cells = 1.0
        for a in range(3):
            dims[a] = int((hi[a] - lo[a]) / h) + 1 + 2 * _MARGIN_CELLS
            cells *= dims[a]
        if cells <= max_cells:
            break
        h *= max(1.01, (cells / max_cells) ** (1.0 / 3.0))
    nx, ny, nz = dims[0], dims[1], dims[2]
    G = nx * ny * nz
    nleaf = (N + LEAF - 1) // LEAF
    Pn = 1
    while Pn < nleaf:
        Pn *= 2
    M = 2 * Pn - 1
    fpts = F_HEADER
    fnodes = fpts + 3 * N
    F = np.empty(fnodes + 6 * M)
    icells = I_HEADER
    I = np.empty(icells + G, np.int64)
    I[:icells] = 0
    for a in range(3):
        F[F_ORIGIN + a] = lo[a] - _MARGIN_CELLS * h
        F[F_LO + a] = lo[a]
        F[F_HI + a] = hi[a]
    F[F_H] = h
    F[F_INVH] = 1.0 / h
    F[F_RADIUS] = radius
    F[F_QUANTUM] = quantum
    for j in range(F_QUANTUM + 1, F_HEADER):
        F[j] = 0.0
    rmax = 0.0
    for i in range(N):
        rmax = max(rmax, P[i, 0] ** 2 + P[i, 1] ** 2 + P[i, 2] ** 2)
    F[F_RMAX] = math.sqrt(rmax)
    I[I_N] = N
    I[I_NLEAF] = nleaf
    I[I_P] = Pn
    I[I_NX] = nx
    I[I_NY] = ny
    I[I_NZ] = nz
    I[I_PTS] = fpts
    I[I_NODES] = fnodes
    I[I_CELLS] = icells
    # sorted points; cell occupancy and, per occupied cell, the point nearest its centre. Cells
    # are computed exactly as the queries compute them (same origin, same 1 / h).
    ox, oy, oz, invh = F[F_ORIGIN], F[F_ORIGIN + 1], F[F_ORIGIN + 2], F[F_INVH]
    # one word a cell (one cache miss a point): squared distance to the cell centre (cells^2,
    # 20 bits) above the point index, so that the minimum is the point nearest the centre
    key = np.full(G, _NO_KEY, np.int64)
    for j in range(N):
        i = order[j]
        x, y, z = P[i, 0], P[i, 1], P[i, 2]
        F[fpts + 3 * j] = x
        F[fpts + 3 * j + 1] = y
        F[fpts + 3 * j + 2] = z
        fx = (x - ox) * invh
        fy = (y - oy) * invh
        fz = (z - oz) * invh
        cx = min(int(fx), nx - 1)
        cy = min(int(fy), ny - 1)
        cz = min(int(fz), nz - 1)
        c = (cz * ny + cy) * nx + cx
        dx = fx - cx - 0.5
        dy = fy - cy - 0.5
        dz = fz - cz - 0.5
        kk = (np.int64((dx * dx + dy * dy + dz * dz) * (1 << 20)) << 32) | j
        if kk < key[c]:
            key[c] = kk
    # leaves, then internal nodes bottom-up
    for leaf in range(Pn):
        nd = fnodes + 6 * (Pn - 1 + leaf)
        for a in range(3):
            F[nd + a] = _EMPTY
            F[nd + 3 + a] = -_EMPTY
        for j in range(leaf * LEAF, min(leaf * LEAF + LEAF, N)):
            for a in range(3):
                x = F[fpts + 3 * j + a]
                F[nd + a] = min(F[nd + a], x)
                F[nd + 3 + a] = max(F[nd + 3 + a], x)
    for i in range(Pn - 2, -1, -1):
        nd = fnodes + 6 * i
        l = fnodes + 6 * (2 * i + 1)
        r = fnodes + 6 * (2 * i + 2)
        for a in range(3):
            F[nd + a] = min(F[l + a], F[r + a])
            F[nd + 3 + a] = max(F[l + 3 + a], F[r + 3 + a])
    _grid_words(key, nx, ny, nz, I[icells : icells + G])
    return F, I, order


@njit(cache=True)
def _empty_index(radius, quantum):  # type: ignore[no-untyped-def]
    """Index of a cloud without points: an empty box (every query is free), one empty node and
    a 1-cell grid."""
    F = np.zeros(F_HEADER + 6)
    I = np.zeros(I_HEADER + 1, np.int64)
    for a in range(3):
        F[F_LO + a] = _EMPTY
        F[F_HI + a] = -_EMPTY
        F[F_HEADER + a] = _EMPTY
        F[F_HEADER + 3 + a] = -_EMPTY
    F[F_H] = 1.0
    F[F_INVH] = 1.0
    F[F_RADIUS] = radius
    F[F_QUANTUM] = quantum
    I[I_P] = 1
    I[I_NX] = 1
    I[I_NY] = 1
    I[I_NZ] = 1
    I[I_PTS] = F_HEADER
    I[I_NODES] = F_HEADER
    I[I_CELLS] = I_HEADER
    I[I_HEADER] = np.int64((1 << 31) - 1) << 32
    return F, I


def _checked_points(points: object) -> NDArray[np.float64]:
    try:
        P = np.ascontiguousarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"point cloud must be an (N, 3) array of numbers: {exc}") from exc
    if P.ndim != 2 or P.shape[1] != 3:
        if P.size == 0:
            return np.zeros((0, 3))
        raise ShapeError(f"point cloud must be an (N, 3) array, got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        bad = int(np.count_nonzero(~np.isfinite(P).all(axis=1)))
        raise ShapeError(
            f"point cloud has {bad} non-finite point(s) (NaN or inf); drop them first "
            "(e.g. points[np.isfinite(points).all(axis=1)])"
        )
    return P


def _check_extent(P: NDArray[np.float64], quantum: float) -> None:
    if len(P) and float(np.abs(P).max()) >= (_LATTICE_OFFSET - 1) * quantum:
        raise ShapeError(
            f"point cloud extends beyond {(_LATTICE_OFFSET - 1) * quantum:.4g} m from its frame's "
            "origin; express it in a frame near the points"
        )


class CloudIndex:
    """The index of one point cloud: flat buffers ``F`` (float64) and ``I`` (int64).

    ``points`` (N, 3) in the cloud's frame (m), ``radius`` (m) of the ball around each point.
    ``quantum`` (m) is the lattice of the Morton order (points thinned by
    :func:`voxel_downsample` at the same step are already in order); ``cell`` (m) the smallest
    grid cell, enlarged until the grid has at most ``max_cells`` cells (the grid's build time
    and memory, 8 bytes a cell, grow with it; its lower bound tightens as cells shrink).
    """

    def __init__(
        self,
        points: NDArray[np.float64],
        radius: float = 0.0,
        quantum: float = 0.001,
        cell: float = 0.015,
        max_cells: int = 1 << 19,
    ) -> None:
        P = _checked_points(points)
        if not (np.isfinite(radius) and radius >= 0):
            raise ShapeError(f"point radius must be a finite non-negative number, got {radius!r}")
        _check_extent(P, quantum)
        self.F, self.I, self._order = _build(
            P, float(radius), float(quantum), float(cell), int(max_cells)
        )

    @property
    def num_points(self) -> int:
        return int(self.I[I_N])

    @property
    def points(self) -> NDArray[np.float64]:
        """(N, 3) points in index order."""
        o = int(self.I[I_PTS])
        return self.F[o : o + 3 * self.num_points].reshape(-1, 3)

    @property
    def order(self) -> NDArray[np.int64]:
        """(N,) index of each point of :attr:`points` in the array given to the constructor."""
        return self._order

    @property
    def cell_size(self) -> float:
        return float(self.F[F_H])

    @property
    def grid_shape(self) -> tuple[int, int, int]:
        return int(self.I[I_NX]), int(self.I[I_NY]), int(self.I[I_NZ])


def build_index(points: NDArray[np.float64], radius: float = 0.0, **kw: float) -> CloudIndex:
    """:class:`CloudIndex` of ``points`` (see there)."""
    return CloudIndex(points, radius, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Sphere queries. A query collides when a point lies strictly closer than the query radius plus
# the cloud's radius (signed distance < 0, as for every other pair; touching is not a collision).
# --------------------------------------------------------------------------------------------


@njit(cache=True, boundscheck=False, inline="always")
def _box_gap2(F, nd, x, y, z):  # type: ignore[no-untyped-def]
    """Squared distance from (x, y, z) to the box at ``F[nd:nd+6]`` (zero inside)."""
    ex = max(F[nd] - x, x - F[nd + 3], 0.0)
    ey = max(F[nd + 1] - y, y - F[nd + 4], 0.0)
    ez = max(F[nd + 2] - z, z - F[nd + 5], 0.0)
    return ex * ex + ey * ey + ez * ez


@njit(cache=True, boundscheck=False)
def cloud_sphere_maybe(F, I, fo, io, x, y, z, r):  # type: ignore[no-untyped-def]
    """Constant-time test of the ball (x, y, z; ``r`` m, cloud frame) against the cloud:
    0 = certainly free, 1 = certainly colliding, -1 = undecided (walk the hierarchy).

    One exit (no early return): inlined into the validity kernels, several exits keep the
    reference counting of ``F`` and ``I`` that LLVM's pruning removes otherwise."""
    out = -1
    rr = r + F[fo + F_RADIUS]
    ex = max(F[fo + F_LO] - x, x - F[fo + F_HI], 0.0)
    ey = max(F[fo + F_LO + 1] - y, y - F[fo + F_HI + 1], 0.0)
    ez = max(F[fo + F_LO + 2] - z, z - F[fo + F_HI + 2], 0.0)
    if ex * ex + ey * ey + ez * ez >= rr * rr:
        out = 0
    else:
        invh = F[fo + F_INVH]
        fx = (x - F[fo + F_ORIGIN]) * invh
        fy = (y - F[fo + F_ORIGIN + 1]) * invh
        fz = (z - F[fo + F_ORIGIN + 2]) * invh
        if fx >= 0.0 and fy >= 0.0 and fz >= 0.0:
            cx = int(fx)
            cy = int(fy)
            cz = int(fz)
            nx = I[io + I_NX]
            ny = I[io + I_NY]
            if cx < nx and cy < ny and cz < I[io + I_NZ]:
                w = I[io + I[io + I_CELLS] + (cz * ny + cy) * nx + cx]
                e2 = w >> 32
                h = F[fo + F_H]
                rs = rr + _LB_SLACK
                if rs * rs <= h * h * e2:
                    out = 0
                else:
                    j = (w & 0xFFFFFFFF) - 1
                    if j >= 0:
                        p = fo + I[io + I_PTS] + 3 * j
                        dx = F[p] - x
                        dy = F[p + 1] - y
                        dz = F[p + 2] - z
                        if dx * dx + dy * dy + dz * dz < rr * rr:
                            out = 1
    return out


@njit(cache=True, boundscheck=False)
def cloud_sphere_exact(F, I, fo, io, x, y, z, r):  # type: ignore[no-untyped-def]
    """True when a point lies closer than ``r`` + radius to (x, y, z) (cloud frame), by a walk
    of the hierarchy alone."""
    rr = r + F[fo + F_RADIUS]
    r2 = rr * rr
    nodes = fo + I[io + I_NODES]
    pts = fo + I[io + I_PTS]
    N = I[io + I_N]
    first_leaf = I[io + I_P] - 1
    i = 0
    hit = False
    while True:
        if _box_gap2(F, nodes + 6 * i, x, y, z) < r2:
            if i >= first_leaf:
                j0 = (i - first_leaf) * LEAF
                for j in range(j0, min(j0 + LEAF, N)):
                    p = pts + 3 * j
                    dx = F[p] - x
                    dy = F[p + 1] - y
                    dz = F[p + 2] - z
                    if dx * dx + dy * dy + dz * dz < r2:
                        hit = True
                        break
                if hit:
                    break
            else:
                i = 2 * i + 1
                continue
        # next node: climb while a right child, then go to the right sibling
        while i > 0 and (i & 1) == 0:
            i = (i - 1) >> 1
        if i == 0:
            break
        i += 1
    return hit


@njit(cache=True, boundscheck=False)
def cloud_sphere_hits(F, I, fo, io, x, y, z, r):  # type: ignore[no-untyped-def]
    """True when the ball (x, y, z; ``r`` m, cloud frame) collides with the cloud: some point
    lies closer than ``r`` + radius to the centre."""
    m = cloud_sphere_maybe(F, I, fo, io, x, y, z, r)
    if m >= 0:
        return m == 1
    return cloud_sphere_exact(F, I, fo, io, x, y, z, r)


# --------------------------------------------------------------------------------------------
# Any shape against the cloud. The shape is given by its kernel encoding (kind, params, hull
# vertices; see .distance) and ``Tl`` (4, 4), its pose in the cloud's frame. ``aux`` (6,) holds
# the centre and half extents of a mesh's vertex box (shape frame), see shape_aux.
# --------------------------------------------------------------------------------------------


@njit(cache=True, boundscheck=False)
def shape_aux(kind, params, verts, aux):  # type: ignore[no-untyped-def]
    """Fill ``aux`` (7,): centre (3) and half extents (3) of a box around the shape (shape
    frame) and the radius of a ball about the shape's origin that encloses it."""
    for a in range(6):
        aux[a] = 0.0
    nv = mesh_vertex_count(verts)  # large hulls carry a support block after the vertices
    if kind == MESH and nv > 0:
        rad = 0.0
        for a in range(3):
            lo = verts[0, a]
            hi = verts[0, a]
            for k in range(nv):
                lo = min(lo, verts[k, a])
                hi = max(hi, verts[k, a])
            aux[a] = 0.5 * (lo + hi)
            aux[3 + a] = 0.5 * (hi - lo)
        for k in range(nv):
            rad = max(rad, verts[k, 0] ** 2 + verts[k, 1] ** 2 + verts[k, 2] ** 2)
        aux[6] = math.sqrt(rad)
    elif kind == SPHERE:
        aux[6] = params[0]
    elif kind == CAPSULE:
        aux[6] = params[0] + params[1]
    elif kind == BOX:
        aux[6] = math.sqrt(params[0] ** 2 + params[1] ** 2 + params[2] ** 2)
    else:  # CYLINDER
        aux[6] = math.sqrt(params[0] ** 2 + params[1] ** 2)
    return True


@njit(cache=True, boundscheck=False, inline="always")
def _box_signed3(lx, ly, lz, hx, hy, hz):  # type: ignore[no-untyped-def]
    """Exact signed distance of a point (box frame) to the box [-h, h] (negative inside)."""
    ex = abs(lx) - hx
    ey = abs(ly) - hy
    ez = abs(lz) - hz
    ox = max(ex, 0.0)
    oy = max(ey, 0.0)
    oz = max(ez, 0.0)
    return math.sqrt(ox * ox + oy * oy + oz * oz) + min(max(ex, max(ey, ez)), 0.0)


@njit(cache=True, boundscheck=False, inline="always")
def _point_shape_lb(kind, prm, Tl, aux, px, py, pz):  # type: ignore[no-untyped-def]
    """Signed distance (m) from point p (cloud frame) to the shape: exact for spheres, capsules,
    boxes and cylinders; for meshes a lower bound (the signed distance to the vertex box).
    1-Lipschitz in p in every case."""
    dx = px - Tl[0, 3]
    dy = py - Tl[1, 3]
    dz = pz - Tl[2, 3]
    if kind == SPHERE:
        return math.sqrt(dx * dx + dy * dy + dz * dz) - prm[0]
    lz = Tl[0, 2] * dx + Tl[1, 2] * dy + Tl[2, 2] * dz
    if kind == CAPSULE:
        t = min(max(lz, -prm[1]), prm[1])
        ex = dx - t * Tl[0, 2]
        ey = dy - t * Tl[1, 2]
        ez = dz - t * Tl[2, 2]
        return math.sqrt(ex * ex + ey * ey + ez * ez) - prm[0]
    lx = Tl[0, 0] * dx + Tl[1, 0] * dy + Tl[2, 0] * dz
    ly = Tl[0, 1] * dx + Tl[1, 1] * dy + Tl[2, 1] * dz
    if kind == BOX:
        return _box_signed3(lx, ly, lz, prm[0], prm[1], prm[2])
    if kind == CYLINDER:
        a = math.sqrt(lx * lx + ly * ly) - prm[0]
        b = abs(lz) - prm[1]
        if a <= 0.0 and b <= 0.0:
            return max(a, b)
        a = max(a, 0.0)
        b = max(b, 0.0)
        return math.sqrt(a * a + b * b)
    return _box_signed3(lx - aux[0], ly - aux[1], lz - aux[2], aux[3], aux[4], aux[5])


@njit(cache=True, boundscheck=False)
def _mesh_point(prm, Tl, verts, px, py, pz, scratch):  # type: ignore[no-untyped-def]
    """Exact signed distance (m) from point p (cloud frame) to a mesh hull (GJK / EPA)."""
    Tp = scratch[0:4]
    for a in range(4):
        for b in range(4):
            Tp[a, b] = 1.0 if a == b else 0.0
    Tp[0, 3] = px
    Tp[1, 3] = py
    Tp[2, 3] = pz
    zero = scratch[4, :]
    for a in range(4):
        zero[a] = 0.0
    w = scratch[5:8]
    return shape_distance(MESH, prm, Tl, verts, SPHERE, zero, Tp, verts[0:0], w[0, :3],
                          w[1, :3], w[2, :3])


@njit(cache=True, boundscheck=False)
def cloud_shape_hits(F, I, fo, io, kind, prm, Tl, verts, aux, thr, scratch):  # type: ignore[no-untyped-def]
    """True when some point lies at a signed distance below ``thr`` (m) from the shape (callers
    pass padding + the cloud's radius). A walk of the hierarchy pruned by the 1-Lipschitz bound
    of :func:`_point_shape_lb` at box centres; ``scratch`` (8, 4) is working memory for meshes."""
    nodes = fo + I[io + I_NODES]
    pts = fo + I[io + I_PTS]
    N = I[io + I_N]
    first_leaf = I[io + I_P] - 1
    i = 0
    hit = False
    while True:
        nd = nodes + 6 * i
        cx = 0.5 * (F[nd] + F[nd + 3])
        cy = 0.5 * (F[nd + 1] + F[nd + 4])
        cz = 0.5 * (F[nd + 2] + F[nd + 5])
        hx = F[nd + 3] - F[nd]
        hy = F[nd + 4] - F[nd + 1]
        hz = F[nd + 5] - F[nd + 2]
        if hx >= 0.0 and (
            _point_shape_lb(kind, prm, Tl, aux, cx, cy, cz)
            < thr + 0.5 * math.sqrt(hx * hx + hy * hy + hz * hz)
        ):
            if i >= first_leaf:
                j0 = (i - first_leaf) * LEAF
                for j in range(j0, min(j0 + LEAF, N)):
                    p = pts + 3 * j
                    d = _point_shape_lb(kind, prm, Tl, aux, F[p], F[p + 1], F[p + 2])
                    if d < thr and kind == MESH:
                        d = _mesh_point(prm, Tl, verts, F[p], F[p + 1], F[p + 2], scratch)
                    if d < thr:
                        hit = True
                        break
                if hit:
                    break
            else:
                i = 2 * i + 1
                continue
        while i > 0 and (i & 1) == 0:
            i = (i - 1) >> 1
        if i == 0:
            break
        i += 1
    return hit


@njit(cache=True, boundscheck=False)
def cloud_nearest(F, I, fo, io, kind, prm, Tl, verts, aux, bound, scratch):  # type: ignore[no-untyped-def]
    """``(d, j)``: the smallest signed distance (m) from the shape to a point, and that point's
    index (index order), among points closer than ``bound``; ``(bound, -1)`` if none.
    Branch and bound over the hierarchy, nearer child first."""
    nodes = fo + I[io + I_NODES]
    pts = fo + I[io + I_PTS]
    N = I[io + I_N]
    first_leaf = I[io + I_P] - 1
    stack = np.empty(128, np.int64)
    slb = np.empty(128)
    best = bound
    bj = -1
    sp = 0
    stack[0] = 0
    slb[0] = -np.inf
    sp = 1
    while sp > 0:
        sp -= 1
        i = stack[sp]
        if slb[sp] >= best:
            continue
        if i >= first_leaf:
            j0 = (i - first_leaf) * LEAF
            for j in range(j0, min(j0 + LEAF, N)):
                p = pts + 3 * j
                d = _point_shape_lb(kind, prm, Tl, aux, F[p], F[p + 1], F[p + 2])
                if d < best and kind == MESH:
                    d = _mesh_point(prm, Tl, verts, F[p], F[p + 1], F[p + 2], scratch)
                if d < best:
                    best = d
                    bj = j
            continue
        c0 = 2 * i + 1
        lb0 = _node_lb(F, nodes + 6 * c0, kind, prm, Tl, aux)
        lb1 = _node_lb(F, nodes + 6 * (c0 + 1), kind, prm, Tl, aux)
        if lb0 <= lb1:
            if lb1 < best:
                stack[sp] = c0 + 1
                slb[sp] = lb1
                sp += 1
            if lb0 < best:
                stack[sp] = c0
                slb[sp] = lb0
                sp += 1
        else:
            if lb0 < best:
                stack[sp] = c0
                slb[sp] = lb0
                sp += 1
            if lb1 < best:
                stack[sp] = c0 + 1
                slb[sp] = lb1
                sp += 1
    return best, bj


@njit(cache=True, boundscheck=False, inline="always")
def _node_lb(F, nd, kind, prm, Tl, aux):  # type: ignore[no-untyped-def]
    """Lower bound of the signed distance from the shape to any point in the box at ``nd``
    (+inf for an empty box). The larger of two bounds:

    - the box seen from the shape's origin, less the radius ``R`` of the ball about the origin
      that encloses the shape (tight for large boxes; inside the shape the depth at ``b`` is at
      most ``R - |b - origin|``, so it bounds the signed distance too);
    - with ``c`` the box's centre, ``s`` the point of the shape nearest ``c`` (a capsule: of its
      axis segment, less its radius ``r``; a mesh: of its vertex box) and ``n = (c - s) /
      |c - s|``: every point ``b`` of the box and ``x`` of the shape have ``|b - x| >= n.(b -
      x) >= |c - s| - sum_a e_a |n_a| - r`` (``e``: the box's half extents; ``n.(x - s) <= r``
      for a convex shape and the point nearest ``c``), a separating axis that is exact for a
      flat box (a wall's leaf) facing the shape. It bounds the signed
      distance too: the shape lies in the half space ``n.(x - s) <= r`` (``r``: a capsule's
      radius, else 0), so a box point inside it is at most ``r - n.(b - s)`` deep. It is never
      below the centre's signed distance less the half diagonal (``sum_a e_a |n_a|`` is at
      most the half diagonal), which is used for a centre inside the solid (``c = s``).
    """
    hx = F[nd + 3] - F[nd]
    if hx < 0.0:
        return np.inf
    x0 = Tl[0, 3]
    y0 = Tl[1, 3]
    z0 = Tl[2, 3]
    if kind == SPHERE:
        return math.sqrt(_box_gap2(F, nd, x0, y0, z0)) - prm[0]
    far = math.sqrt(_box_gap2(F, nd, x0, y0, z0)) - aux[6]
    ex = 0.5 * hx
    ey = 0.5 * (F[nd + 4] - F[nd + 1])
    ez = 0.5 * (F[nd + 5] - F[nd + 2])
    dx = 0.5 * (F[nd] + F[nd + 3]) - x0
    dy = 0.5 * (F[nd + 1] + F[nd + 4]) - y0
    dz = 0.5 * (F[nd + 2] + F[nd + 5]) - z0
    lz = Tl[0, 2] * dx + Tl[1, 2] * dy + Tl[2, 2] * dz
    r = 0.0  # the capsule's radius (the rest: 0)
    if kind == CAPSULE:
        # offset from the nearest point of the axis segment, cloud frame
        t = min(max(lz, -prm[1]), prm[1])
        ox = dx - t * Tl[0, 2]
        oy = dy - t * Tl[1, 2]
        oz = dz - t * Tl[2, 2]
        r = prm[0]
    else:
        lx = Tl[0, 0] * dx + Tl[1, 0] * dy + Tl[2, 0] * dz
        ly = Tl[0, 1] * dx + Tl[1, 1] * dy + Tl[2, 1] * dz
        # offset from the nearest point of the solid, shape frame
        if kind == CYLINDER:
            a = math.sqrt(lx * lx + ly * ly)
            k = max(a - prm[0], 0.0) / a if a > 0.0 else 0.0
            px = lx * k
            py = ly * k
            pz = math.copysign(max(abs(lz) - prm[1], 0.0), lz)
        else:
            if kind == BOX:
                cx, cy, cz, hbx, hby, hbz = 0.0, 0.0, 0.0, prm[0], prm[1], prm[2]
            else:  # MESH: its vertex box
                cx, cy, cz, hbx, hby, hbz = aux[0], aux[1], aux[2], aux[3], aux[4], aux[5]
            px = math.copysign(max(abs(lx - cx) - hbx, 0.0), lx - cx)
            py = math.copysign(max(abs(ly - cy) - hby, 0.0), ly - cy)
            pz = math.copysign(max(abs(lz - cz) - hbz, 0.0), lz - cz)
        ox = Tl[0, 0] * px + Tl[0, 1] * py + Tl[0, 2] * pz
        oy = Tl[1, 0] * px + Tl[1, 1] * py + Tl[1, 2] * pz
        oz = Tl[2, 0] * px + Tl[2, 1] * py + Tl[2, 2] * pz
    g = math.sqrt(ox * ox + oy * oy + oz * oz)
    if g > 0.0:
        near = g - (ex * abs(ox) + ey * abs(oy) + ez * abs(oz)) / g - r
    else:  # the centre inside the solid (or on the capsule's axis)
        near = _point_shape_lb(kind, prm, Tl, aux, dx + x0, dy + y0, dz + z0) - math.sqrt(
            ex * ex + ey * ey + ez * ez
        )
    return max(near, far)


@njit(cache=True, boundscheck=False)
def rigid_inverse_mul(A, B, out):  # type: ignore[no-untyped-def]
    """``out = A^-1 @ B`` for rigid (4, 4) transforms. Returns True."""
    for a in range(3):
        for b in range(4):
            acc = A[0, a] * B[0, b] + A[1, a] * B[1, b] + A[2, a] * B[2, b]
            if b == 3:
                acc -= A[0, a] * A[0, 3] + A[1, a] * A[1, 3] + A[2, a] * A[2, 3]
            out[a, b] = acc
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0
    return True


@njit(cache=True, boundscheck=False)
def cloud_distance(kind, prm, T, verts, F, I, fo, io, Tc, bound, wa, wb, n):  # type: ignore[no-untyped-def]
    """Signed distance (m) from a shape (pose ``T``, common frame) to the cloud posed by ``Tc``:
    distance to the nearest point minus the cloud's radius, with witness points (``wa`` on the
    shape, ``wb`` on that point's ball) and the unit normal from the shape towards the point,
    all in the common frame (conventions of :func:`.distance.shape_distance`). Only distances
    below ``bound`` are searched: returns +inf (outputs untouched) if none is."""
    r_pt = F[fo + F_RADIUS]
    Tl = np.empty((4, 4))
    rigid_inverse_mul(Tc, T, Tl)
    aux = np.empty(7)
    shape_aux(kind, prm, verts, aux)
    # the ball about the shape's origin that encloses the shape, grown by the bound: free in
    # the grid's constant-time test => no point closer than the bound
    if cloud_sphere_maybe(F, I, fo, io, Tl[0, 3], Tl[1, 3], Tl[2, 3], aux[6] + bound) == 0:
        return np.inf
    scratch = np.empty((8, 4))
    _, j = cloud_nearest(F, I, fo, io, kind, prm, Tl, verts, aux, bound + r_pt, scratch)
    if j < 0:
        return np.inf
    p = fo + I[io + I_PTS] + 3 * j
    Tp = np.zeros((4, 4))
    for a in range(3):
        Tp[a, a] = 1.0
        Tp[a, 3] = Tc[a, 0] * F[p] + Tc[a, 1] * F[p + 1] + Tc[a, 2] * F[p + 2] + Tc[a, 3]
    Tp[3, 3] = 1.0
    ball = np.zeros(4)
    ball[0] = r_pt
    return shape_distance(kind, prm, T, verts, SPHERE, ball, Tp, verts[0:0], wa, wb, n)


@njit(cache=True, boundscheck=False)
def cloud_ball_free(F, I, fo, io, Tc, o, x, y, z, r):  # type: ignore[no-untyped-def]
    """True when the ball (x, y, z; ``r`` m, common frame) is certainly free of the cloud posed
    by ``Tc[o]`` (constant time; False = undecided or colliding)."""
    dx = x - Tc[o, 0, 3]
    dy = y - Tc[o, 1, 3]
    dz = z - Tc[o, 2, 3]
    lx = Tc[o, 0, 0] * dx + Tc[o, 1, 0] * dy + Tc[o, 2, 0] * dz
    ly = Tc[o, 0, 1] * dx + Tc[o, 1, 1] * dy + Tc[o, 2, 1] * dz
    lz = Tc[o, 0, 2] * dx + Tc[o, 1, 2] * dy + Tc[o, 2, 2] * dz
    # through call_or (undecided if it failed): a plain call, or an inlined cloud_sphere_maybe
    # (several exits), would bring reference counting of F and I into the validity kernel,
    # which inlines this function
    return _call_or(cloud_sphere_maybe, -1, F, I, fo, io, lx, ly, lz, r) == 0
