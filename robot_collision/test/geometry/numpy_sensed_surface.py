"""The numpy formulation of :mod:`robot_collision.geometry.sensed_surface` as it was before
its per-point loops became compiled kernels (commit 0337da7), kept as the oracle the kernels
are compared with (test_sensed_kernels.py)."""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np
from numba import njit
from numpy.typing import NDArray

from robot_collision.errors import ShapeError
from robot_collision.geometry.cloud_index import _radix_argsort

__all__ = [
    "RADIUS_RATIO",
    "grid_radii",
    "grid_surface",
    "merge_balls",
    "occlusion_balls",
    "pixel_angle",
    "radius_classes",
    "no_return_samples",
    "pixel_rays",
    "unseen_balls",
    "unseen_depth",
]

RADIUS_RATIO = 1.2
"""Radius classes: ``RADIUS_BASE * RADIUS_RATIO**k`` (a ball's radius is rounded up by at most
20 %)."""
RADIUS_BASE = 0.001


def _norm(a: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = np.sqrt(np.einsum("...i,...i->...", a, a))
    return out


def pixel_angle(G: NDArray[np.float64]) -> float:
    """The largest angle (rad) between the rays of horizontally or vertically neighbouring
    valid pixels of the organised cloud ``G`` (H, W, 3) (sensor at the origin); NaN when no
    two neighbours are valid."""
    rho = _norm(G)
    with np.errstate(invalid="ignore", divide="ignore"):
        U = G / rho[..., None]
        angles = []
        if G.shape[1] > 1:
            angles.append(_norm(U[:, 1:] - U[:, :-1]).ravel())
        if G.shape[0] > 1:
            angles.append(_norm(U[1:] - U[:-1]).ravel())
    if not angles:
        return math.nan
    a = np.concatenate(angles)
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return math.nan
    # chord -> angle; a ray pair can only be one pixel apart, so the largest is the pixel angle
    return float(2.0 * np.arcsin(min(1.0, float(a.max()) / 2.0)))


def grid_radii(
    G: NDArray[np.float64], max_incidence: float, min_radius: float = 0.0
) -> NDArray[np.float64]:
    """(H, W) radius of each sample of the organised cloud ``G`` (H, W, 3), sensor frame (the
    sensor at the origin), NaN for invalid pixels, when the samples alone cover the surface
    (no points added between them: :func:`grid_surface` with an unbounded target radius)."""
    return grid_surface(G, max_incidence, math.inf, min_radius)[0]


EDGE_REACH = 2.0
"""Silhouette, depth-edge and crease samples cover at most this many range x pixel angle
(a rim seen at a grazing angle, where the spacing along the face is larger, is covered only
that far)."""

CREASE_ANGLE_DEG = 10.0
"""A patch whose two triangles' normals differ by more than this is taken to hold a crease."""

MAX_SUBDIVISION = 32
"""Most pieces a patch edge is cut into by :func:`grid_surface` (a patch longer than
``MAX_SUBDIVISION * sqrt(3) * target`` gets balls larger than ``target``)."""


def grid_surface(
    G: NDArray[np.float64], max_incidence: float, target: float, min_radius: float = 0.0,
    interior: Optional[NDArray[np.bool_]] = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Balls covering the surface sampled by the organised cloud ``G`` (H, W, 3), sensor frame
    (the sensor at the origin; NaN = no return): ``(R, P, Rp)`` with ``R`` (H, W) the radius of
    each sample (NaN for invalid pixels) and ``P`` (M, 3), ``Rp`` (M,) points added on the
    patches between samples (the rule: module docstring).

    ``max_incidence`` (rad, < pi/2): the largest incidence angle still taken as one surface.
    ``target`` (m): a patch whose samples' balls would be larger than this (a face seen at a
    grazing angle) is cut into ``n x n`` smaller triangles, their vertices added as points, so
    that the balls stay close to the surface instead of bulging out by the patch size.
    ``interior`` (H, W) bool, when given, is set True for the samples all four of whose
    patches are continuous (inside a surface: neither a silhouette, a depth edge nor next to
    a missing return), False elsewhere."""
    if interior is not None:
        interior[...] = False
    if not (0.0 <= max_incidence < 0.5 * math.pi):
        raise ShapeError(f"max_incidence must be in [0, pi/2) rad, got {max_incidence!r}")
    H, W = G.shape[:2]
    valid: NDArray[np.bool_] = np.asarray(np.isfinite(G).all(axis=-1))
    rho = np.where(valid, _norm(np.where(valid[..., None], G, 0.0)), np.nan)
    alpha = pixel_angle(G)
    R = np.full((H, W), np.nan)
    R[valid] = min_radius
    none = (np.zeros((0, 3)), np.zeros(0))
    if not math.isfinite(alpha) or H < 2 or W < 2:
        if math.isfinite(alpha):
            R[valid] = np.maximum(R[valid], rho[valid] * alpha)
        return (R, *none)
    stretch = 1.0 / math.cos(max_incidence)
    corners = ((slice(None, -1), slice(None, -1)), (slice(None, -1), slice(1, None)),
               (slice(1, None), slice(None, -1)), (slice(1, None), slice(1, None)))
    P = [G[a, b] for a, b in corners]
    rr = [rho[a, b] for a, b in corners]
    with np.errstate(invalid="ignore"):
        longest = np.zeros((H - 1, W - 1))
        continuous = np.ones((H - 1, W - 1), dtype=bool)
        for i in range(4):
            for j in range(i + 1, 4):
                d = _norm(P[i] - P[j])
                near = np.minimum(rr[i], rr[j])
                # the angle between the two rays (1 or sqrt(2) pixels apart)
                gap = near * alpha * (1.0 if (i, j) in ((0, 1), (0, 2), (1, 3), (2, 3))
                                      else math.sqrt(2.0)) * stretch
                continuous &= d <= gap  # False for NaN (an invalid corner)
                longest = np.fmax(longest, d)
        L = np.where(continuous, longest, 0.0)
        if math.isfinite(target) and target > 0.0:
            n = np.clip(np.ceil(L / (math.sqrt(3.0) * target)), 1, MAX_SUBDIVISION)
        else:
            n = np.ones_like(L)
        n = n.astype(np.int64)
        rq = L / (n * math.sqrt(3.0))  # 0 where not continuous
    full = np.zeros((H, W), dtype=np.int8)  # continuous patches around each sample (of 4)
    rpatch = np.zeros((H, W))
    side = np.zeros((H, W))  # longest side of the continuous patches around each sample
    with np.errstate(invalid="ignore"):
        sides = np.fmax.reduce([_norm(P[i] - P[j]) for i, j in ((0, 1), (0, 2), (1, 3), (2, 3))])
    sides = np.where(continuous, sides, 0.0)
    # a patch bent along its diagonal (a crease: two faces meet between the samples) may hold
    # the edge outside both triangles: its samples cover one side length (the edge is within
    # one side of a sample when the faces meet at 90 degrees or more)
    with np.errstate(invalid="ignore", divide="ignore"):
        n1 = np.cross(P[1] - P[0], P[3] - P[0])
        n2 = np.cross(P[3] - P[0], P[2] - P[0])
        cos = np.einsum("...i,...i->...", n1, n2) / (_norm(n1) * _norm(n2))
    bent = continuous & ~(cos >= math.cos(math.radians(CREASE_ANGLE_DEG)))
    # (capped at EDGE_REACH range x pixel angle: beyond, a face seen at a grazing angle)
    cap = EDGE_REACH * alpha * np.fmin(np.fmin(rr[0], rr[1]), np.fmin(rr[2], rr[3]))
    rbent = np.where(bent, np.fmin(sides, cap), 0.0)
    for a, b in corners:
        rpatch[a, b] = np.maximum(rpatch[a, b], np.maximum(rq, rbent))
        side[a, b] = np.maximum(side[a, b], sides)
        full[a, b] += continuous
    R = np.fmax(R, rpatch)
    if interior is not None:
        interior[...] = valid & (full == 4)
    # a sample on a silhouette or depth edge: the surface may go on up to the next ray, one
    # sample spacing along the surface (the spacing to its continuous neighbours; at least
    # range x pixel angle)
    edge = valid & (full < 4)
    R[edge] = np.maximum(R[edge], rho[edge] * alpha * np.clip(
        side[edge] / (rho[edge] * alpha), 1.0, EDGE_REACH))
    R[~valid] = np.nan
    # the vertices of the n x n subdivision of both triangles (0, 1, 3) and (0, 3, 2) of every
    # patch cut into more than one piece (the corners themselves are the samples)
    pts, rad = [], []
    for k in np.unique(n[continuous & (n > 1)]):
        k = int(k)
        sel = continuous & (n == k)
        a_, b_ = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
        keep = (a_ + b_ <= k) & ~(((a_ == 0) | (a_ == k)) & (b_ == 0)) & ~((a_ == 0) & (b_ == k))
        wa = (a_[keep] / k)[None, :, None]
        wb = (b_[keep] / k)[None, :, None]
        p0, p1, p2, p3 = (Pk[sel][:, None, :] for Pk in P)
        r = np.maximum(rq[sel], min_radius)
        for u, v in ((p1, p3), (p3, p2)):
            q = p0 + wa * (u - p0) + wb * (v - p0)
            pts.append(q.reshape(-1, 3))
            rad.append(np.repeat(r, q.shape[1]))
    if not pts:
        return (R, *none)
    return R, np.concatenate(pts), np.concatenate(rad)


def occlusion_balls(
    P: NDArray[np.float64], R: NDArray[np.float64], depth: Union[float, NDArray[np.float64]],
    min_step: float = 0.005, back_only: Optional[NDArray[np.bool_]] = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Balls (centres (M, 3), radii (M,)) covering the space from each sample ``P[i]`` (sensor
    frame, sensor at the origin) to ``depth`` m behind it along its ray (the rule: module
    docstring). ``depth``: one depth for all samples or (N,) one per sample (0 = none; see
    :func:`unseen_depth`). ``R`` (N,): the samples' radii; the step along a ray is the sample's
    radius (at least ``min_step``). ``back_only`` (N,) bool: those samples get only the last
    ball of their ray (the shell's back face; for samples inside a surface, whose neighbours'
    rays close the shell around them: see "Hollow shell" in the module docstring)."""
    D = np.broadcast_to(np.asarray(depth, dtype=np.float64), (len(P),))
    if len(P) == 0 or not (D > 0.0).any():
        return np.zeros((0, 3)), np.zeros(0)
    rho = _norm(P)
    ok = (rho > 1e-9) & (D > 0.0)
    P, R, rho, D = P[ok], R[ok], rho[ok], D[ok]
    if back_only is not None:
        back = np.asarray(back_only, dtype=bool)[ok]
        Cf, Rf = occlusion_balls(P[~back], R[~back], D[~back], min_step)
        Pb, Rb, rb, Db = P[back], R[back], rho[back], D[back]
        step = np.maximum(Rb, min_step)
        t = np.minimum(np.ceil(Db / step) * step, Db)
        lateral = Rb * (rb + t) / rb
        Cb = Pb + (t / rb)[:, None] * Pb
        return (np.concatenate([Cf, Cb]),
                np.concatenate([Rf, np.sqrt(lateral * lateral + (0.5 * step) ** 2)]))
    if len(P) == 0:
        return np.zeros((0, 3)), np.zeros(0)
    U = P / rho[:, None]
    step = np.maximum(R, min_step)
    k = np.ceil(D / step).astype(np.int64)
    kmax = int(k.max())
    j = np.arange(1, kmax + 1, dtype=np.float64)[None, :]
    t = np.minimum(j * step[:, None], D[:, None])  # (N, kmax); repeats of depth where k < kmax
    keep = j <= k[:, None]
    lateral = R[:, None] * (rho[:, None] + t) / rho[:, None]
    radius = np.sqrt(lateral * lateral + (0.5 * step[:, None]) ** 2)
    C = P[:, None, :] + t[..., None] * U[:, None, :]
    return C[keep], radius[keep]


def unseen_balls(
    P: NDArray[np.float64], R: NDArray[np.float64], depth: float, unseen_range: float,
    min_step: float = 0.005, back_only: Optional[NDArray[np.bool_]] = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """"Unseen is occupied": the balls that extend :func:`occlusion_balls` (to ``depth``
    behind each sample) up to ``unseen_range`` m from the sensor, i.e. covering each ray from
    ``depth`` behind its sample to the range limit (the same cone: the sample moved to
    ``depth`` behind itself, its radius grown with range). Together with
    ``occlusion_balls(P, R, depth, ...)`` they are ``occlusion_balls(P, R,
    unseen_depth(P, depth, unseen_range), ...)`` in two parts, so that the caller can merge
    the far part on a coarser lattice."""
    rho = _norm(P)
    ext = unseen_range - rho - max(depth, 0.0)
    ok = (ext > 0.0) & (rho > 1e-9)
    if not ok.any():
        return np.zeros((0, 3)), np.zeros(0)
    grow = (rho[ok] + max(depth, 0.0)) / rho[ok]
    start, r0 = P[ok] * grow[:, None], R[ok] * grow
    back = None if back_only is None else np.asarray(back_only, bool)[ok]
    C, Rc = occlusion_balls(start, r0, ext[ok], min_step, back)
    # the filled rays' first ball is a step behind their start, and reaches back only half a
    # step (occlusion_balls counts on the sample's own ball, of radius >= half a step, there):
    # a ball at the start closes that gap
    fill = np.ones(len(start), dtype=bool) if back is None else ~back
    return (np.concatenate([C, start[fill]]),
            np.concatenate([Rc, np.sqrt(r0[fill] ** 2 + (0.5 * max(min_step, 0.0)) ** 2)]))


PINHOLE_TOLERANCE = 1e-3
"""Largest residual (of x/z, y/z: rad near the axis) of the pinhole model :func:`pixel_rays`
fits to a cloud's valid pixels; a larger one means the cloud is not a pinhole image in an
optical frame (z forward), and its no-return pixels get no rays."""


def pixel_rays(G: NDArray[np.float64]) -> Optional[NDArray[np.float64]]:
    """(H, W, 3) unit ray of every pixel of the organised cloud ``G`` (H, W, 3), optical frame
    (z forward), also of the pixels without a return: the pinhole model ``x / z = a col + b``,
    ``y / z = c row + d`` fitted to the valid pixels (least squares). None when fewer than two
    distinct columns and rows are valid, a valid point is not in front of the camera, or the
    fit's residual exceeds :data:`PINHOLE_TOLERANCE` (not a pinhole image)."""
    H, W = G.shape[:2]
    valid = np.isfinite(G).all(axis=-1)
    rows, cols = np.nonzero(valid)
    if len(np.unique(rows)) < 2 or len(np.unique(cols)) < 2:
        return None
    P = G[valid]
    if (P[:, 2] <= 0.0).any():
        return None
    u, v = P[:, 0] / P[:, 2], P[:, 1] / P[:, 2]
    a, b = np.polyfit(cols.astype(np.float64), u, 1)
    c, d = np.polyfit(rows.astype(np.float64), v, 1)
    if max(float(np.abs(a * cols + b - u).max()), float(np.abs(c * rows + d - v).max())) \
            > PINHOLE_TOLERANCE:
        return None
    U = np.empty((H, W, 3))
    U[..., 0] = (a * np.arange(W) + b)[None, :]
    U[..., 1] = (c * np.arange(H) + d)[:, None]
    U[..., 2] = 1.0
    out: NDArray[np.float64] = U / _norm(U)[..., None]
    return out


def no_return_samples(
    G: NDArray[np.float64], min_range: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """"Unseen is occupied" for the pixels of ``G`` (H, W, 3, optical frame) without a
    return: a virtual sample on each one's ray (:func:`pixel_rays`) at ``min_range`` m, its
    radius ``min_range`` x the largest angle between neighbouring rays (it reaches the
    neighbouring rays), and whether all eight neighbours are without a return too (inside the
    region: :func:`occlusion_balls`' ``back_only``). ``(P (M, 3), R (M,), inner (M,))``;
    empty when there are none or the cloud is not a pinhole image (:func:`pixel_rays`)."""
    none = (np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=bool))
    missing: NDArray[np.bool_] = np.asarray(~np.isfinite(G).all(axis=-1))
    if not missing.any() or min_range <= 0.0:
        return none
    U = pixel_rays(G)
    if U is None:
        return none
    alpha = max(pixel_angle(U), 0.0)
    H, W = missing.shape
    pad = np.ones((H + 2, W + 2), dtype=bool)  # outside the image: not a sample either
    pad[1:-1, 1:-1] = missing
    inner: NDArray[np.bool_] = missing.copy()
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            inner &= pad[1 + dr:H + 1 + dr, 1 + dc:W + 1 + dc]
    # a side of the frustum (the image border) closes the region too: its pixels fill their rays
    inner[0, :] = inner[-1, :] = False
    inner[:, 0] = inner[:, -1] = False
    P = U[missing] * min_range
    return P, np.full(len(P), min_range * alpha * math.sqrt(2.0)), inner[missing]


def unseen_depth(
    P: NDArray[np.float64], depth: float, unseen_range: float = 0.0
) -> NDArray[np.float64]:
    """(N,) occlusion depth (m) behind each sample ``P`` (N, 3) (sensor frame, sensor at the
    origin): ``depth``, or with ``unseen_range`` > 0 ("unseen is occupied", see the module
    docstring) everything behind the sample up to ``unseen_range`` m from the sensor, i.e.
    ``max(depth, unseen_range - range)``."""
    D = np.full(len(P), float(depth))
    if unseen_range > 0.0:
        D = np.maximum(D, unseen_range - _norm(P))
    return D


@njit(cache=True, nogil=True, boundscheck=False)
def _merge_sorted(C, R, order, key):  # type: ignore[no-untyped-def]
    """Balls ``C[order]``, ``R[order]`` (``key[order]`` sorted) merged per run of equal keys:
    box centre and the largest ``|c - centre| + r``."""
    n = order.shape[0]
    out_c = np.empty((n, 3))
    out_r = np.empty(n)
    g = 0
    i = 0
    lo = np.empty(3)
    hi = np.empty(3)
    while i < n:
        k0 = key[order[i]]
        j = i
        for a in range(3):
            lo[a] = C[order[i], a]
            hi[a] = C[order[i], a]
        while j < n and key[order[j]] == k0:
            for a in range(3):
                v = C[order[j], a]
                lo[a] = min(lo[a], v)
                hi[a] = max(hi[a], v)
            j += 1
        r = 0.0
        for m in range(i, j):
            d = 0.0
            for a in range(3):
                e = C[order[m], a] - 0.5 * (lo[a] + hi[a])
                d += e * e
            r = max(r, math.sqrt(d) + R[order[m]])
        for a in range(3):
            out_c[g, a] = 0.5 * (lo[a] + hi[a])
        out_r[g] = r
        g += 1
        i = j
    return out_c[:g], out_r[:g]


def merge_balls(
    C: NDArray[np.float64], R: NDArray[np.float64], resolution: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Balls merged per voxel of ``resolution`` m: centre = the centre of the box around the
    voxel's centres, radius = the largest ``|c_i - centre| + r_i`` (contains every ball it
    replaces)."""
    if len(C) == 0 or resolution <= 0.0:
        return C, R
    key3 = np.floor(C / resolution).astype(np.int64)
    # per column: numpy's axis-0 reduction of an (N, 3) array is 30 x slower
    key3 -= np.array([key3[:, a].min() for a in range(3)])
    span = np.array([key3[:, a].max() for a in range(3)]) + 1
    if float(np.prod(span.astype(np.float64))) >= 2.0**62:
        raise ShapeError(f"sensed points span {span} voxels of {resolution} m: too far apart")
    key = (key3[:, 0] * span[1] + key3[:, 1]) * span[2] + key3[:, 2]
    order = _radix_argsort(key)  # keys >= 0; without the interpreter's lock
    out: tuple[NDArray[np.float64], NDArray[np.float64]] = _merge_sorted(
        np.ascontiguousarray(C, dtype=np.float64), np.ascontiguousarray(R, dtype=np.float64),
        order, key)
    return out


def radius_classes(
    C: NDArray[np.float64], R: NDArray[np.float64], base: float = RADIUS_BASE,
    ratio: float = RADIUS_RATIO, max_radius: Optional[float] = None,
) -> list[tuple[int, float, NDArray[np.float64]]]:
    """Balls grouped by radius: ``[(class k, radius base * ratio**k, centres)]`` with every
    ball's radius rounded up to its class (class -1: radius 0, the points themselves; radii
    above ``max_radius`` are clipped to the class of ``max_radius``: they no longer cover their
    whole share)."""
    if len(C) == 0:
        return []
    r = np.asarray(R, dtype=np.float64)
    if max_radius is not None:
        r = np.minimum(r, max_radius)
    with np.errstate(divide="ignore"):
        k = np.ceil(np.log(np.maximum(r, 0.0) / base) / math.log(ratio))
    k = np.where(r > 0.0, np.maximum(k, 0.0), -1.0).astype(np.int64)  # -1: radius 0
    # one stable sort by class (input order kept within a class), then the runs
    order = _radix_argsort(k + 1)
    ks, Cs = k[order], C[order]
    starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
    ends = np.append(starts[1:], len(ks))
    out = []
    for a, b in zip(starts, ends):
        kk = int(ks[a])
        radius = 0.0 if kk < 0 else base * ratio ** kk
        out.append((kk, float(radius), Cs[a:b]))
    return out
