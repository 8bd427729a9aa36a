"""Compiled per-pixel and per-ray loops of :mod:`robot_collision.geometry.sensed_surface`.

Every kernel here is compiled with ``nogil=True``: a point cloud's worker thread runs them
without the interpreter's lock, so the filter's control tick (another thread of the same
process) never waits for a cloud's per-point work. They compute exactly what the numpy
formulation did (the same floating-point operations in the same order; the tests compare them
with it), the rules are in the module docstring of :mod:`~robot_collision.geometry.sensed_surface`.
Arrays: ``G`` (H, W, 3) float64 organised cloud in the sensor frame (NaN = no return); points
(N, 3) float64, C-contiguous.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "grid_patches",
    "occlusion_fill",
    "pixel_angle_kernel",
    "radius_class_keys",
    "subdivision_points",
    "voxel_keys",
]

_SQRT2 = math.sqrt(2.0)
_SQRT3 = math.sqrt(3.0)


@njit(cache=True, nogil=True, boundscheck=False)
def _norm3(x, y, z):  # type: ignore[no-untyped-def]
    return math.sqrt(x * x + y * y + z * z)


@njit(cache=True, nogil=True, boundscheck=False)
def pixel_angle_kernel(G):  # type: ignore[no-untyped-def]
    """Largest chord between the unit rays of horizontally or vertically neighbouring pixels
    of ``G`` (pixels whose ray is not finite skipped); -1 when there is none."""
    H, W = G.shape[0], G.shape[1]
    U = np.empty((H, W, 3))
    for i in range(H):
        for j in range(W):
            r = _norm3(G[i, j, 0], G[i, j, 1], G[i, j, 2])
            for a in range(3):
                U[i, j, a] = G[i, j, a] / r
    best = -1.0
    for i in range(H):
        for j in range(W):
            for di, dj in ((0, 1), (1, 0)):
                i2, j2 = i + di, j + dj
                if i2 >= H or j2 >= W:
                    continue
                c = _norm3(U[i2, j2, 0] - U[i, j, 0], U[i2, j2, 1] - U[i, j, 1],
                           U[i2, j2, 2] - U[i, j, 2])
                if math.isfinite(c) and c > best:
                    best = c
    return best


@njit(cache=True, nogil=True, boundscheck=False)
def grid_patches(G, alpha, stretch, target, min_radius, cos_crease, edge_reach, max_sub):  # type: ignore[no-untyped-def]
    """The per-patch rule of :func:`~robot_collision.geometry.sensed_surface.grid_surface`
    (``H, W >= 2``, ``alpha`` finite): ``(R (H, W), interior (H, W) bool, n (H-1, W-1) int64,
    rq (H-1, W-1), continuous (H-1, W-1) bool)``; ``target`` <= 0 or inf: no subdivision."""
    H, W = G.shape[0], G.shape[1]
    valid = np.empty((H, W), np.bool_)
    rho = np.empty((H, W))
    R = np.empty((H, W))
    for i in range(H):
        for j in range(W):
            ok = (math.isfinite(G[i, j, 0]) and math.isfinite(G[i, j, 1])
                  and math.isfinite(G[i, j, 2]))
            valid[i, j] = ok
            if ok:
                rho[i, j] = _norm3(G[i, j, 0], G[i, j, 1], G[i, j, 2])
                R[i, j] = min_radius
            else:
                rho[i, j] = np.nan
                R[i, j] = np.nan
    subdivide = math.isfinite(target) and target > 0.0
    n = np.ones((H - 1, W - 1), np.int64)
    rq = np.zeros((H - 1, W - 1))
    cont = np.zeros((H - 1, W - 1), np.bool_)
    full = np.zeros((H, W), np.int64)
    rpatch = np.zeros((H, W))
    side = np.zeros((H, W))
    ci = np.array([0, 0, 1, 1])
    cj = np.array([0, 1, 0, 1])
    P = np.empty((4, 3))
    rr = np.empty(4)
    for i in range(H - 1):
        for j in range(W - 1):
            for c in range(4):
                for a in range(3):
                    P[c, a] = G[i + ci[c], j + cj[c], a]
                rr[c] = rho[i + ci[c], j + cj[c]]
            longest = 0.0
            continuous = True
            for p in range(4):
                for q in range(p + 1, 4):
                    d = _norm3(P[p, 0] - P[q, 0], P[p, 1] - P[q, 1], P[p, 2] - P[q, 2])
                    near = min(rr[p], rr[q]) if not (math.isnan(rr[p]) or math.isnan(rr[q])) \
                        else np.nan
                    diag = (p == 0 and q == 3) or (p == 1 and q == 2)
                    gap = near * alpha * (_SQRT2 if diag else 1.0) * stretch
                    if not (d <= gap):
                        continuous = False
                    if not math.isnan(d) and (d > longest or math.isnan(longest)):
                        longest = d
            L = longest if continuous else 0.0
            k = 1
            if subdivide:
                kk = math.ceil(L / (_SQRT3 * target))
                kk = min(max(kk, 1.0), float(max_sub))
                k = int(kk)
            r_q = L / (k * _SQRT3)
            n[i, j] = k
            rq[i, j] = r_q
            cont[i, j] = continuous
            # longest of the four sides (fmax: NaN sides ignored), 0 when not continuous
            sides = np.nan
            for p, q in ((0, 1), (0, 2), (1, 3), (2, 3)):
                d = _norm3(P[p, 0] - P[q, 0], P[p, 1] - P[q, 1], P[p, 2] - P[q, 2])
                if math.isnan(sides) or d > sides:
                    sides = d if not math.isnan(d) else sides
            if not continuous:
                sides = 0.0
            rbent = 0.0
            if continuous:
                ax, ay, az = P[1, 0] - P[0, 0], P[1, 1] - P[0, 1], P[1, 2] - P[0, 2]
                bx, by, bz = P[3, 0] - P[0, 0], P[3, 1] - P[0, 1], P[3, 2] - P[0, 2]
                ex, ey, ez = P[2, 0] - P[0, 0], P[2, 1] - P[0, 1], P[2, 2] - P[0, 2]
                n1x, n1y, n1z = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
                n2x, n2y, n2z = by * ez - bz * ey, bz * ex - bx * ez, bx * ey - by * ex
                cos = (n1x * n2x + n1y * n2y + n1z * n2z) / (
                    _norm3(n1x, n1y, n1z) * _norm3(n2x, n2y, n2z))
                if not (cos >= cos_crease):
                    cap = edge_reach * alpha * min(min(rr[0], rr[1]), min(rr[2], rr[3]))
                    rbent = min(sides, cap)
            m = max(r_q, rbent)
            for c in range(4):
                a_, b_ = i + ci[c], j + cj[c]
                rpatch[a_, b_] = max(rpatch[a_, b_], m)
                side[a_, b_] = max(side[a_, b_], sides)
                if continuous:
                    full[a_, b_] += 1
    interior = np.zeros((H, W), np.bool_)
    for i in range(H):
        for j in range(W):
            if not valid[i, j]:
                R[i, j] = np.nan
                continue
            r = R[i, j]
            if rpatch[i, j] > r or math.isnan(r):  # fmax
                r = rpatch[i, j]
            if full[i, j] == 4:
                interior[i, j] = True
            else:
                ra = rho[i, j] * alpha
                x = side[i, j] / ra
                if x < 1.0:
                    x = 1.0
                elif x > edge_reach:
                    x = edge_reach
                v = ra * x
                if math.isnan(v) or v > r:
                    r = v
            R[i, j] = r
    return R, interior, n, rq, cont


@njit(cache=True, nogil=True, boundscheck=False)
def subdivision_points(G, n, rq, cont, min_radius, max_sub):  # type: ignore[no-untyped-def]
    """The vertices of the ``n x n`` subdivision of both triangles (0, 1, 3) and (0, 3, 2) of
    every continuous patch with ``n > 1`` (corners excluded), ``(P (M, 3), R (M,))``, ordered
    by ``n``, then triangle, then patch (row-major), then vertex."""
    Hp, Wp = n.shape[0], n.shape[1]
    count = np.zeros(max_sub + 1, np.int64)
    for i in range(Hp):
        for j in range(Wp):
            if cont[i, j] and n[i, j] > 1:
                count[n[i, j]] += 1
    total = 0
    for k in range(2, max_sub + 1):
        # vertices of a k x k triangle minus its three corners
        total += 2 * count[k] * ((k + 1) * (k + 2) // 2 - 3)
    P = np.empty((total, 3))
    Rp = np.empty(total)
    ci = np.array([0, 0, 1, 1])
    cj = np.array([0, 1, 0, 1])
    o = 0
    for k in range(2, max_sub + 1):
        if count[k] == 0:
            continue
        for tri in range(2):
            u = 1 if tri == 0 else 3
            v = 3 if tri == 0 else 2
            for i in range(Hp):
                for j in range(Wp):
                    if not (cont[i, j] and n[i, j] == k):
                        continue
                    r = max(rq[i, j], min_radius)
                    for a in range(k + 1):
                        for b in range(k + 1):
                            if a + b > k or ((a == 0 or a == k) and b == 0) \
                                    or (a == 0 and b == k):
                                continue
                            wa = a / k
                            wb = b / k
                            for x in range(3):
                                p0 = G[i, j, x]
                                pu = G[i + ci[u], j + cj[u], x]
                                pv = G[i + ci[v], j + cj[v], x]
                                P[o, x] = p0 + wa * (pu - p0) + wb * (pv - p0)
                            Rp[o] = r
                            o += 1
    return P, Rp


@njit(cache=True, nogil=True, boundscheck=False)
def occlusion_fill(P, R, D, min_step, back, has_back, close_front):  # type: ignore[no-untyped-def]
    """Occlusion balls of the samples ``P`` (N, 3), radii ``R`` (N,), depths ``D`` (N,) (the
    rule of :func:`~robot_collision.geometry.sensed_surface.occlusion_balls`): the filled rays'
    balls (samples with ``back[i]`` False or ``has_back`` False; per sample, in order), then
    the back balls of the others. ``close_front``: a filled ray whose sample's radius is under
    half its step also gets a ball at the sample (the first ball, a step behind it, reaches
    back only half a step)."""
    N = P.shape[0]
    total = 0
    for i in range(N):
        rho = _norm3(P[i, 0], P[i, 1], P[i, 2])
        if not (rho > 1e-9 and D[i] > 0.0):
            continue
        if has_back and back[i]:
            total += 1
        else:
            step = max(R[i], min_step)
            total += math.ceil(D[i] / step)
            if close_front and R[i] < 0.5 * step:
                total += 1
    C = np.empty((total, 3))
    Rc = np.empty(total)
    o = 0
    for i in range(N):  # the filled rays
        rho = _norm3(P[i, 0], P[i, 1], P[i, 2])
        if not (rho > 1e-9 and D[i] > 0.0) or (has_back and back[i]):
            continue
        step = max(R[i], min_step)
        k = math.ceil(D[i] / step)
        h2 = (0.5 * step) * (0.5 * step)
        if close_front and R[i] < 0.5 * step:
            for a in range(3):
                C[o, a] = P[i, a]
            Rc[o] = math.sqrt(R[i] * R[i] + h2)
            o += 1
        for j in range(1, k + 1):
            t = min(j * step, D[i])
            lateral = R[i] * (rho + t) / rho
            for a in range(3):
                C[o, a] = P[i, a] + t * (P[i, a] / rho)
            Rc[o] = math.sqrt(lateral * lateral + h2)
            o += 1
    if has_back:
        for i in range(N):  # the back balls
            rho = _norm3(P[i, 0], P[i, 1], P[i, 2])
            if not (rho > 1e-9 and D[i] > 0.0) or not back[i]:
                continue
            step = max(R[i], min_step)
            t = min(math.ceil(D[i] / step) * step, D[i])
            lateral = R[i] * (rho + t) / rho
            for a in range(3):
                C[o, a] = P[i, a] + (t / rho) * P[i, a]
            Rc[o] = math.sqrt(lateral * lateral + (0.5 * step) * (0.5 * step))
            o += 1
    return C, Rc


@njit(cache=True, nogil=True, boundscheck=False)
def voxel_keys(C, resolution):  # type: ignore[no-untyped-def]
    """Voxel key (int64 >= 0, row-major over the box of the occupied voxels) of each centre of
    ``C`` (N >= 1, 3) and the number of voxels in that box (float, for the overflow check)."""
    N = C.shape[0]
    k3 = np.empty((N, 3), np.int64)
    lo = np.empty(3, np.int64)
    hi = np.empty(3, np.int64)
    for i in range(N):
        for a in range(3):
            v = np.int64(math.floor(C[i, a] / resolution))
            k3[i, a] = v
            if i == 0 or v < lo[a]:
                lo[a] = v
            if i == 0 or v > hi[a]:
                hi[a] = v
    span = hi - lo + 1
    cells = float(span[0]) * float(span[1]) * float(span[2])
    key = np.empty(N, np.int64)
    if cells >= 2.0**62:
        return key, cells
    for i in range(N):
        key[i] = ((k3[i, 0] - lo[0]) * span[1] + (k3[i, 1] - lo[1])) * span[2] \
            + (k3[i, 2] - lo[2])
    return key, cells


@njit(cache=True, nogil=True, boundscheck=False)
def radius_class_keys(R, base, log_ratio, max_radius, clip):  # type: ignore[no-untyped-def]
    """Radius class of each radius (``ceil(log(r / base) / log_ratio)``, at least 0; -1 for
    radius 0), radii clipped to ``max_radius`` when ``clip``."""
    N = R.shape[0]
    k = np.empty(N, np.int64)
    for i in range(N):
        r = R[i]
        if clip:
            r = min(r, max_radius) if not math.isnan(r) else r
        if r > 0.0:
            c = math.ceil(math.log(r / base) / log_ratio)
            k[i] = np.int64(max(c, 0.0))
        else:
            k[i] = -1
    return k


@njit(cache=True, nogil=True, boundscheck=False)
def gather_rows(C, order, lo, hi):  # type: ignore[no-untyped-def]
    """``C[order[lo:hi]]`` (a copy)."""
    out = np.empty((hi - lo, C.shape[1]))
    for i in range(lo, hi):
        for a in range(C.shape[1]):
            out[i - lo, a] = C[order[i], a]
    return out
