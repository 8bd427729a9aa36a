"""What a depth sensor's samples stand for: balls that cover the sensed surface and the space
hidden behind it.

A depth camera samples a surface at its pixels; between two samples the surface goes on. A
point obstacle (or a ball of a fixed radius) leaves the gaps between samples open, and those
gaps grow with range and with the incidence angle: a face seen at a grazing angle is sampled
``range * pixel_angle / cos(incidence)`` apart. The rules here give each sample a ball that
covers its share of the surface, and add balls for the space the surface hides.

**Surface radius** (:func:`grid_radii`, organised clouds, H x W pixels in the sensor frame):
two neighbouring samples (4-neighbourhood and diagonals) belong to one continuous surface when
their distance is at most ``min(range) * angle / cos(max_incidence)`` (``angle`` between their
rays; farther apart they straddle a depth edge). Each 2 x 2 block of pixels whose six pairs are
all continuous is a surface patch; every point of a triangle lies within ``L / sqrt(3)`` of a
vertex (``L`` its longest edge), so each of the block's samples gets radius ``L / sqrt(3)``,
``L`` the longest of the six distances. A sample not surrounded by four such patches (a
silhouette, a depth edge, a pixel next to a missing return) also gets ``range * pixel_angle``:
the true surface may go on up to the neighbouring ray, and the spacing to its continuous
neighbours (the surface's slant there) when larger, up to ``EDGE_REACH`` range x pixel angle.
``pixel_angle`` is measured from the cloud (the largest angle between neighbouring rays), so no
camera model is needed. This is exact
for surfaces that are planar between neighbouring samples (faces of boxes, walls); a patch
bent along its diagonal (two faces meeting between the samples: a box's edge) gives its samples
one side length (at most ``EDGE_REACH`` range x pixel angle), which holds the edge when the
faces meet at 90 degrees or more and neither is seen at a grazing angle; sharper
features and curvature between samples are not covered (less than the sampling can show).
Unorganised clouds carry no neighbourhood: their samples get the fixed ``min_radius``.

**Occlusion** (:func:`occlusion_balls`): the space behind each sample along its ray is unseen.
Balls are placed along the ray from the sample to ``depth`` behind it, one per ``step``; each
covers the ray's cone at its depth (the sample's radius grown with range) and the gap to the
next ball along the ray (``sqrt(r^2 + (step / 2)^2)``); a sample whose radius is under
half a step gets one at the sample too (the gap to the first ball). With the surface balls
this makes every sensed surface a shell ``depth`` thick: an object thinner than it, seen from
one side, is covered whole, also its hidden faces.

**Unseen is occupied** (opt-in, :func:`unseen_depth`): inside the camera's frustum, the space a
ray did not see as free, i.e. farther along it than its measured hit, is an obstacle up to a
range limit from the sensor: the occlusion depth of each sample becomes
``max(depth, range_limit - range)`` (the same shell with its back face at the range limit;
:func:`unseen_balls` gives the part beyond ``depth`` on its own, to be merged coarser).
Pixels with no return (a dropout, or nothing within range) are, opt-in, occupied from a minimum
range to the range limit (:func:`no_return_samples`: their rays from a pinhole model fitted to
the valid pixels, :func:`pixel_rays`); an all-NaN cloud (a blinded camera) is caught by the
faulty-sensor check instead. Rays whose sample is on the robot (self-filtered)
get no shadow: the robot's own shadow would hold it where it is.

**Hollow shell** (``back_only``): a robot outside the shell can enter it only through its
boundary, so the rays of samples inside a surface (all four patches around them continuous,
their neighbours' rays all filled or closed) need only their last ball, the shell's back
face: the front is the surface balls, the sides are the filled rays of the samples on
silhouettes, depth edges and next to missing returns or self-filtered samples. The back balls
of neighbouring rays overlap as the surface balls do (each covers its ray's cone at ``depth``),
so the boundary has no gap. A 1 M-point wall cloud: 246 k occlusion balls -> ~80 k. Not
covered: a robot already inside the shell when the cloud arrives (occluded by the surface
itself) is not "in collision"; it is kept from the shell's boundary as from any obstacle.

**Merging** (:func:`merge_balls`): balls are merged per voxel of ``resolution`` into one ball
centred on the box around their centres whose radius is the largest ``|p - c| + r``: the merged
ball contains every ball it replaces (no loss of coverage; the radius grows by at most half the
voxel's diagonal). :func:`radius_classes` groups balls into classes of equal radius (rounded
up to a geometric ladder, ratio ``RADIUS_RATIO``), one :class:`PointCloud` each, since a cloud's
kernels take one radius.
"""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import ShapeError
from .cloud_index import _radix_argsort
from .sensed_kernels import (
    gather_rows,
    grid_patches,
    occlusion_fill,
    pixel_angle_kernel,
    radius_class_keys,
    subdivision_points,
    voxel_keys,
)

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
    two neighbours are valid. (Compiled, without the interpreter's lock.)"""
    chord = float(pixel_angle_kernel(np.ascontiguousarray(G, dtype=np.float64)))
    if chord < 0.0:
        return math.nan
    # chord -> angle; a ray pair can only be one pixel apart, so the largest is the pixel angle
    return float(2.0 * np.arcsin(min(1.0, chord / 2.0)))


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
    G = np.ascontiguousarray(G, dtype=np.float64)
    alpha = pixel_angle(G)
    none = (np.zeros((0, 3)), np.zeros(0))
    if not math.isfinite(alpha) or H < 2 or W < 2:
        valid: NDArray[np.bool_] = np.asarray(np.isfinite(G).all(axis=-1))
        R = np.full((H, W), np.nan)
        R[valid] = min_radius
        if math.isfinite(alpha):
            rho = _norm(G[valid])
            R[valid] = np.maximum(R[valid], rho * alpha)
        return (R, *none)
    # the per-patch rule and the subdivision: compiled loops without the interpreter's lock
    # (the numpy formulation held it for ~9 ms of a 1 M-point cloud's 30 k pixels)
    R, inner, n, rq, continuous = grid_patches(
        G, alpha, 1.0 / math.cos(max_incidence), float(target), float(min_radius),
        math.cos(math.radians(CREASE_ANGLE_DEG)), EDGE_REACH, MAX_SUBDIVISION)
    if interior is not None:
        interior[...] = inner
    P, Rp = subdivision_points(G, n, rq, continuous, float(min_radius), MAX_SUBDIVISION)
    if not len(P):
        return (R, *none)
    return R, P, Rp


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
    rays close the shell around them: see "Hollow shell" in the module docstring).

    A filled ray whose sample's radius is under half its step also gets a ball at the sample
    (radius ``sqrt(r^2 + (step / 2)^2)``): its first ball, a step behind the sample, reaches
    back only half a step, and the sample's own ball would not reach it."""
    return _occlusion(P, R, depth, min_step, back_only, True)


def _occlusion(
    P: NDArray[np.float64], R: NDArray[np.float64], depth: Union[float, NDArray[np.float64]],
    min_step: float, back_only: Optional[NDArray[np.bool_]], close_front: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`occlusion_balls`; ``close_front`` False: no ball at a sample (the caller
    places its own)."""
    D = np.ascontiguousarray(np.broadcast_to(np.asarray(depth, dtype=np.float64), (len(P),)))
    if len(P) == 0:
        return np.zeros((0, 3)), np.zeros(0)
    back = (np.zeros(1, dtype=np.bool_) if back_only is None
            else np.ascontiguousarray(back_only, dtype=np.bool_))
    C, Rc = occlusion_fill(
        np.ascontiguousarray(P, dtype=np.float64), np.ascontiguousarray(R, dtype=np.float64),
        D, float(min_step), back, back_only is not None, close_front)
    return C, Rc


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
    C, Rc = _occlusion(start, r0, ext[ok], min_step, back, False)
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
    C = np.ascontiguousarray(C, dtype=np.float64)
    key, cells = voxel_keys(C, float(resolution))
    if cells >= 2.0**62:
        raise ShapeError(f"sensed points span {cells:.3g} voxels of {resolution} m: too far "
                         "apart")
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
    k = radius_class_keys(np.ascontiguousarray(R, dtype=np.float64), float(base),
                          math.log(ratio), 0.0 if max_radius is None else float(max_radius),
                          max_radius is not None)  # -1: radius 0
    # one stable sort by class (input order kept within a class), then the runs
    order = _radix_argsort(k + 1)
    ks = k[order]
    starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
    ends = np.append(starts[1:], len(ks))
    C = np.ascontiguousarray(C, dtype=np.float64)
    out = []
    for a, b in zip(starts, ends):
        kk = int(ks[a])
        radius = 0.0 if kk < 0 else base * ratio ** kk
        out.append((kk, float(radius), gather_rows(C, order, int(a), int(b))))
    return out
