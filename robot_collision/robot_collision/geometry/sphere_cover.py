"""Sphere covers of collision shapes: outer spheres whose union contains the shape and inner
spheres contained in it (issue 22).

They bound a shape's distance to anything from both sides without running GJK: if no outer
sphere comes within ``pad`` of an obstacle, neither does the shape (its points all lie in the
union); if an inner sphere does, so does the shape (the sphere's points are the shape's). The
checkers test them before the exact narrow phase and run it only when they are inconclusive,
so every verdict is the exact one.

Construction (shape-local frame, m):

- **Convex hulls** (:class:`~.shapes.Mesh`, boxes): a grid of cells along the hull's principal
  axes; each cell that meets the hull gets the smallest-box-centred sphere through every vertex
  of (hull ∩ cell). Those vertices are enumerated exactly -- hull vertices in the cell, hull
  edges crossing a grid plane, cell edges clipped against the hull's facet planes -- so the
  sphere contains the convex set hull ∩ cell and the spheres together contain the hull.
  Inner spheres: candidate centres (per cell) with radius = distance to the nearest facet plane.
- **Capsules**: spheres on the axis, both ends included, spaced ``s`` apart with radius
  ``sqrt(r² + s²/4)`` (outer) and ``r`` (inner).
- **Cylinders**: the circumscribed 16-gon prism (a hull that contains the cylinder) for the
  outer spheres; inner spheres on the axis with radius ``min(r, distance to the caps)``.
- **Spheres**: the sphere itself, both outer and inner.

Every outer radius is widened by :data:`COVER_MARGIN` and every inner radius narrowed by it, for
round-off. Covers are cached in memory by the shape's content (kind, parameters, vertices).
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from .shapes import BOX, CAPSULE, CYLINDER, MESH, SPHERE, Shape

__all__ = ["COVER_MARGIN", "COVER_CELLS", "SphereCover", "sphere_cover", "hull_cover"]

COVER_MARGIN = 1e-7
"""Metres added to every outer radius and taken from every inner radius (round-off)."""
COVER_CELLS = 12
"""Target number of grid cells (and so of outer spheres) per convex hull."""
INNER_MAX = 6
"""Most inner spheres kept per shape (the largest)."""
_PRISM_SIDES = 16


class SphereCover(NamedTuple):
    """Outer and inner spheres of one shape, local frame: rows ``(x, y, z, r)`` (m)."""

    outer: NDArray[np.float64]  # (k, 4): the union contains the shape
    inner: NDArray[np.float64]  # (j, 4): each sphere lies inside the shape (j may be 0)


_CACHE: dict[str, SphereCover] = {}


def _key(shape: Shape, cells: int) -> str:
    h = hashlib.sha1()
    h.update(np.int64(shape.kind).tobytes())
    h.update(np.int64(cells).tobytes())
    h.update(np.ascontiguousarray(shape.params(), dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(shape.vertices(), dtype=np.float64).tobytes())
    return h.hexdigest()


def sphere_cover(shape: Shape, cells: int = COVER_CELLS) -> SphereCover:
    """The :class:`SphereCover` of ``shape`` (cached by content)."""
    key = _key(shape, cells)
    got = _CACHE.get(key)
    if got is not None:
        return got
    p = shape.params()
    if shape.kind == SPHERE:
        cov = SphereCover(np.array([[0.0, 0.0, 0.0, p[0] + COVER_MARGIN]]),
                          np.array([[0.0, 0.0, 0.0, p[0] - COVER_MARGIN]]))
    elif shape.kind == CAPSULE:
        cov = _capsule_cover(float(p[0]), float(p[1]))
    elif shape.kind == BOX:
        hx, hy, hz = p[:3]
        corners = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1)
                            for sz in (-1, 1)])
        cov = hull_cover(corners, cells)
    elif shape.kind == CYLINDER:
        cov = _cylinder_cover(float(p[0]), float(p[1]), cells)
    elif shape.kind == MESH:
        cov = hull_cover(shape.vertices(), cells)
    else:
        raise ShapeError(f"no sphere cover for shapes of kind {shape.kind}")
    _CACHE[key] = cov
    return cov


def _capsule_cover(r: float, h: float) -> SphereCover:
    n = int(np.ceil(2.0 * h / (0.5 * r))) + 1 if h > 0 else 1
    z = np.linspace(-h, h, n)
    s = 2.0 * h / (n - 1) if n > 1 else 0.0
    R = float(np.sqrt(r * r + 0.25 * s * s))
    c = np.zeros((n, 4))
    c[:, 2] = z
    outer = c.copy()
    outer[:, 3] = R + COVER_MARGIN
    inner = c.copy()
    inner[:, 3] = r - COVER_MARGIN
    return SphereCover(outer, inner)


def _cylinder_cover(r: float, h: float, cells: int) -> SphereCover:
    a = np.linspace(0.0, 2 * np.pi, _PRISM_SIDES, endpoint=False)
    rc = r / np.cos(np.pi / _PRISM_SIDES)  # circumscribed polygon: contains the disc
    ring = np.stack([rc * np.cos(a), rc * np.sin(a)], axis=1)
    verts = np.concatenate([np.c_[ring, np.full(len(a), -h)], np.c_[ring, np.full(len(a), h)]])
    outer = hull_cover(verts, cells).outer
    # inner: balls on the axis, radius min(r, distance to the nearer cap)
    n = max(1, int(np.ceil(2.0 * h / r)))
    z = np.linspace(-h, h, n + 2)[1:-1]
    rad = np.minimum(r, h - np.abs(z)) - COVER_MARGIN
    inner = np.zeros((len(z), 4))
    inner[:, 2] = z
    inner[:, 3] = rad
    inner = inner[rad > 0]
    return SphereCover(outer, _largest(inner))


def _largest(inner: NDArray[np.float64]) -> NDArray[np.float64]:
    order = np.argsort(-inner[:, 3], kind="stable")[:INNER_MAX]
    return np.ascontiguousarray(inner[order])


def _hull_planes(verts: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Facet planes ``(F, 4)`` (unit outward normal n, offset d: n.x + d <= 0 inside) and
    triangle edges ``(E, 2)`` of the convex hull of ``verts``."""
    from scipy.spatial import ConvexHull, QhullError  # load-time only

    try:
        hull = ConvexHull(verts)
    except (QhullError, ValueError) as exc:
        raise ShapeError(f"no sphere cover: the hull spans no volume ({exc})") from None
    tri = hull.simplices
    e = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    e = np.unique(np.sort(e, axis=1), axis=0)
    return np.asarray(hull.equations, dtype=float), e.astype(np.int64)


def hull_cover(verts: ArrayLike, cells: int = COVER_CELLS) -> SphereCover:
    """Outer and inner spheres of the convex hull of ``verts`` (k, 3) (see the module
    docstring)."""
    V = np.asarray(verts, dtype=float)
    if V.ndim != 2 or V.shape[1] != 3 or len(V) < 4 or not np.all(np.isfinite(V)):
        raise ShapeError("hull_cover needs at least 4 finite vertices (k, 3) spanning a volume")
    mean = V.mean(axis=0)
    _, _, vt = np.linalg.svd(V - mean, full_matrices=False)
    R = vt.T  # columns: principal axes
    U = (V - mean) @ R
    planes, edges = _hull_planes(U)
    N, d = planes[:, :3], planes[:, 3]
    lo, hi = U.min(axis=0), U.max(axis=0)
    ext = np.maximum(hi - lo, 1e-12)
    h = float(np.prod(ext) / max(cells, 1)) ** (1.0 / 3.0)
    n = np.clip(np.round(ext / h), 1, 64).astype(np.int64)
    grids = [np.linspace(lo[a], hi[a], n[a] + 1) for a in range(3)]
    pts = [U]
    # hull edges crossing interior grid planes
    P0, P1 = U[edges[:, 0]], U[edges[:, 1]]
    for a in range(3):
        for c in grids[a][1:-1]:
            s0, s1 = P0[:, a] - c, P1[:, a] - c
            m = s0 * s1 < 0
            if m.any():
                t = s0[m] / (s0[m] - s1[m])
                x = P0[m] + t[:, None] * (P1[m] - P0[m])
                x[:, a] = c
                pts.append(x)
    # grid lines (cell edges) clipped against the facet planes, with the cell corners on them
    for a in range(3):
        b, c_ = [k for k in range(3) if k != a]
        mb, mc = np.meshgrid(grids[b], grids[c_], indexing="ij")
        gb, gc = mb.ravel(), mc.ravel()
        # n_a t <= -(d + n_b gb + n_c gc)
        rhs = -(d[None, :] + N[None, :, b] * gb[:, None] + N[None, :, c_] * gc[:, None])
        na = N[:, a][None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            tt = rhs / na
        up = np.where(na > 0, tt, np.inf).min(axis=1)
        lw = np.where(na < 0, tt, -np.inf).max(axis=1)
        par_bad = ((na == 0) & (rhs < 0)).any(axis=1)
        ok = (lw <= up) & ~par_bad
        for k in np.flatnonzero(ok):
            ts = [lw[k], up[k]]
            ga = grids[a]
            ts += list(ga[(ga > lw[k]) & (ga < up[k])])
            x = np.zeros((len(ts), 3))
            x[:, a] = ts
            x[:, b] = gb[k]
            x[:, c_] = gc[k]
            pts.append(x)
    X = np.concatenate(pts)
    # cells containing each point (points on a grid plane belong to both cells)
    cell_lo = np.empty((len(X), 3), dtype=np.int64)
    cell_hi = np.empty((len(X), 3), dtype=np.int64)
    for a in range(3):
        f = (X[:, a] - lo[a]) / (ext[a] / n[a])
        eps = 1e-9
        cell_lo[:, a] = np.clip(np.ceil(f - 1.0 - eps), 0, n[a] - 1)
        cell_hi[:, a] = np.clip(np.floor(f + eps), 0, n[a] - 1)
    ids, owners = [], []
    for sx in (0, 1):
        for sy in (0, 1):
            for sz in (0, 1):
                ix = np.where(sx, cell_hi[:, 0], cell_lo[:, 0])
                iy = np.where(sy, cell_hi[:, 1], cell_lo[:, 1])
                iz = np.where(sz, cell_hi[:, 2], cell_lo[:, 2])
                ids.append((ix * n[1] + iy) * n[2] + iz)
                owners.append(np.arange(len(X)))
    cid = np.concatenate(ids)
    own = np.concatenate(owners)
    key = np.unique(cid * len(X) + own)
    cid, own = key // len(X), key % len(X)
    cells_used, inv = np.unique(cid, return_inverse=True)
    ncell = len(cells_used)
    bmin = np.full((ncell, 3), np.inf)
    bmax = np.full((ncell, 3), -np.inf)
    np.minimum.at(bmin, inv, X[own])
    np.maximum.at(bmax, inv, X[own])
    centre = 0.5 * (bmin + bmax)
    dist = np.linalg.norm(X[own] - centre[inv], axis=1)
    rad = np.zeros(ncell)
    np.maximum.at(rad, inv, dist)
    outer = np.c_[centre @ R.T + mean, rad + COVER_MARGIN]
    # inner spheres: per cell, the better of the box centre and the centroid of its points
    csum = np.zeros((ncell, 3))
    np.add.at(csum, inv, X[own])
    cnt = np.bincount(inv, minlength=ncell).astype(float)
    cands = np.concatenate([centre, csum / cnt[:, None]])
    depth = -(cands @ N.T + d[None, :]).max(axis=1) - COVER_MARGIN
    inner = np.c_[cands @ R.T + mean, depth]
    inner = inner[depth > 0]
    return SphereCover(np.ascontiguousarray(outer), _largest(inner))


