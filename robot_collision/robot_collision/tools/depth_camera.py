"""A simulated depth camera: the point cloud a pinhole range sensor sees of world objects.

:func:`render_points` casts one ray per pixel of a :class:`DepthCamera` from its pose (robot
base frame) against the world objects (spheres, capsules, boxes, cylinders, convex meshes;
point clouds are not rendered) and returns the first hit of every pixel within the range, in
the camera's optical frame (ROS convention: z forward, x right, y down, metres), with optional
Gaussian noise along the ray. Vectorised numpy (no per-pixel Python): ~10 ms for 160 x 120
pixels and a few objects. Used by the ``mock_camera`` node and the tests; not a renderer of
the robot itself (a real camera would see the arm: the nodes' self-filter removes it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigurationError
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Sphere, WorldObject

__all__ = ["DepthCamera", "render_grid", "render_points"]


@dataclass(frozen=True)
class DepthCamera:
    """Pinhole depth camera: ``width`` x ``height`` pixels, horizontal field of view ``hfov``
    (rad, square pixels), ranges ``min_range`` .. ``max_range`` (m) along the ray, depth noise
    ``noise_stddev`` (m, Gaussian along the ray; 0 = none)."""

    width: int = 160
    height: int = 120
    hfov: float = math.radians(70.0)
    min_range: float = 0.1
    max_range: float = 4.0
    noise_stddev: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.width, int) and isinstance(self.height, int)
                and 1 <= self.width <= 4096 and 1 <= self.height <= 4096):
            raise ConfigurationError(
                f"camera width and height must be 1..4096 pixels, got {self.width} x "
                f"{self.height}")
        if not (0.0 < self.hfov < math.pi):
            raise ConfigurationError(f"camera hfov must be in (0, pi) rad, got {self.hfov!r}")
        if not (0.0 <= self.min_range < self.max_range and math.isfinite(self.max_range)):
            raise ConfigurationError("camera ranges must satisfy 0 <= min_range < max_range")
        if not (math.isfinite(self.noise_stddev) and self.noise_stddev >= 0.0):
            raise ConfigurationError("camera noise_stddev must be finite and >= 0")

    def rays(self) -> NDArray[np.float64]:
        """(height * width, 3) unit ray directions in the optical frame, row-major pixels."""
        f = 0.5 * self.width / math.tan(0.5 * self.hfov)
        u = np.arange(self.width) + 0.5 - 0.5 * self.width
        v = np.arange(self.height) + 0.5 - 0.5 * self.height
        U, V = np.meshgrid(u / f, v / f)
        D = np.stack([U.ravel(), V.ravel(), np.ones(U.size)], axis=1)
        return D / np.linalg.norm(D, axis=1, keepdims=True)


def _sphere(o: NDArray[np.float64], d: NDArray[np.float64], r: float,
            c: Optional[NDArray[np.float64]] = None) -> NDArray[np.float64]:
    """Entry distance of unit rays (o, d) into the ball (c, r); inf where missed."""
    oc = o - (c if c is not None else 0.0)
    b = d @ oc if oc.ndim == 1 else np.einsum("ij,ij->i", d, oc)
    disc = b * b - (oc @ oc - r * r)
    out = np.full(len(d), np.inf)
    ok = disc >= 0.0
    s = -b[ok] - np.sqrt(disc[ok])
    out[ok] = np.where(s > 0.0, s, np.inf)
    return out


def _slab(o: NDArray[np.float64], d: NDArray[np.float64], h: NDArray[np.float64]
          ) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-h - o) / d
        t2 = (h - o) / d
    lo = np.nanmax(np.minimum(t1, t2), axis=1)
    hi = np.nanmin(np.maximum(t1, t2), axis=1)
    return np.where((hi >= lo) & (lo > 0.0), lo, np.inf)


def _side(o: NDArray[np.float64], d: NDArray[np.float64], r: float, h: float
          ) -> NDArray[np.float64]:
    """Entry into the side of the cylinder x^2 + y^2 = r^2, |z| <= h."""
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    b = o[0] * d[:, 0] + o[1] * d[:, 1]
    c = o[0] ** 2 + o[1] ** 2 - r * r
    disc = b * b - a * c
    out = np.full(len(d), np.inf)
    ok = (disc >= 0.0) & (a > 1e-15)
    s = (-b[ok] - np.sqrt(disc[ok])) / a[ok]
    z = o[2] + s * d[ok, 2]
    out[ok] = np.where((s > 0.0) & (np.abs(z) <= h), s, np.inf)
    return out


def _caps(o: NDArray[np.float64], d: NDArray[np.float64], r: float, h: float
          ) -> NDArray[np.float64]:
    out = np.full(len(d), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for zc in (-h, h):
            s = (zc - o[2]) / d[:, 2]
            x = o[0] + s * d[:, 0]
            y = o[1] + s * d[:, 1]
            hit = (s > 0.0) & (x * x + y * y <= r * r)
            out = np.where(hit & (s < out), s, out)
    return out


def _hull_planes(shape: Mesh) -> NDArray[np.float64]:
    from scipy.spatial import ConvexHull

    return np.asarray(ConvexHull(shape.vertices()).equations)  # (F, 4): n . x + c <= 0


def _convex(o: NDArray[np.float64], d: NDArray[np.float64], planes: NDArray[np.float64]
            ) -> NDArray[np.float64]:
    n, c = planes[:, :3], planes[:, 3]
    denom = d @ n.T  # (R, F)
    num = -(n @ o + c)  # (F,): ray enters where n . (o + s d) + c = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = num / denom
    enter = np.where(denom < 0.0, t, -np.inf).max(axis=1)
    leave = np.where(denom > 0.0, t, np.inf).min(axis=1)
    outside_parallel = ((np.abs(denom) <= 1e-15) & (num < 0.0)).any(axis=1)
    return np.where((enter <= leave) & (enter > 0.0) & ~outside_parallel, enter, np.inf)


def _hit_distance(obj: WorldObject, origin: NDArray[np.float64], D: NDArray[np.float64]
                  ) -> NDArray[np.float64]:
    """Distance along each unit ray (base frame) to its entry into ``obj``; inf where missed."""
    R, t = obj.pose[:3, :3], obj.pose[:3, 3]
    o = R.T @ (origin - t)
    d = D @ R  # rows R^T d
    s = obj.shape
    if isinstance(s, Sphere):
        return _sphere(o, d, s.radius)
    if isinstance(s, Box):
        return _slab(o, d, 0.5 * np.array([s.x, s.y, s.z]))
    if isinstance(s, Cylinder):
        return np.minimum(_side(o, d, s.radius, 0.5 * s.length),
                          _caps(o, d, s.radius, 0.5 * s.length))
    if isinstance(s, Capsule):
        h = 0.5 * s.length
        out = _side(o, d, s.radius, h)
        for zc in (-h, h):
            out = np.minimum(out, _sphere(o, d, s.radius, np.array([0.0, 0.0, zc])))
        return out
    if isinstance(s, Mesh):
        return _convex(o, d, _hull_planes(s))
    return np.full(len(d), np.inf)  # point clouds and unknown kinds are not rendered


def render_grid(
    camera: DepthCamera,
    pose: NDArray[np.float64],
    world: Sequence[WorldObject],
    rng: Optional[np.random.Generator] = None,
) -> NDArray[np.float64]:
    """(height, width, 3) organised cloud (optical frame of the camera at ``pose``): each
    pixel's first hit as :func:`render_points`, NaN where the ray meets nothing within range
    (as depth cameras publish: ``is_dense`` false)."""
    T = np.asarray(pose, dtype=float)
    rays = camera.rays()
    D = rays @ T[:3, :3].T
    origin = T[:3, 3]
    s = np.full(len(rays), np.inf)
    for obj in world:
        s = np.minimum(s, _hit_distance(obj, origin, D))
    keep = (s >= camera.min_range) & (s <= camera.max_range)
    if camera.noise_stddev > 0.0 and keep.any():
        rng = rng or np.random.default_rng()
        s = s.copy()
        s[keep] += rng.normal(0.0, camera.noise_stddev, int(keep.sum()))
    out = np.full((len(rays), 3), np.nan)
    out[keep] = rays[keep] * s[keep, None]
    return out.reshape(camera.height, camera.width, 3)


def render_points(
    camera: DepthCamera,
    pose: NDArray[np.float64],
    world: Sequence[WorldObject],
    rng: Optional[np.random.Generator] = None,
) -> NDArray[np.float64]:
    """(N, 3) points (optical frame of the camera at ``pose``, (4, 4) in the base frame) where
    pixel rays first meet ``world`` within the camera's range; noise from ``rng`` (a fresh
    generator when None) when ``camera.noise_stddev`` > 0."""
    T = np.asarray(pose, dtype=float)
    rays = camera.rays()
    D = rays @ T[:3, :3].T  # base frame
    origin = T[:3, 3]
    s = np.full(len(rays), np.inf)
    for obj in world:
        s = np.minimum(s, _hit_distance(obj, origin, D))
    keep = (s >= camera.min_range) & (s <= camera.max_range)
    depth = s[keep]
    if camera.noise_stddev > 0.0 and len(depth):
        rng = rng or np.random.default_rng()
        depth = depth + rng.normal(0.0, camera.noise_stddev, len(depth))
    return rays[keep] * depth[:, None]
