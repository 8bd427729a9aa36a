"""What a depth camera's samples stand for (robot_collision.geometry.sensed_surface).

Oracles: the true box the simulated camera sees, its visible faces sampled densely (1 mm) and
tested point by point against the balls; the space behind the seen faces sampled along the
camera's rays; merged balls tested against random points of the balls they replace.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from robot_collision import Box, WorldObject, make_pose
from robot_collision.geometry.sensed_surface import (
    grid_radii,
    grid_surface,
    merge_balls,
    no_return_samples,
    occlusion_balls,
    pixel_rays,
    radius_classes,
    unseen_balls,
    unseen_depth,
)
from robot_collision.tools.depth_camera import DepthCamera, render_grid

CAMERA = DepthCamera(80, 60, math.radians(60.0), 0.1, 4.0, 0.0)


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, np.cross(z, x), z, eye
    return T


def _covered(Q: np.ndarray, C: np.ndarray, R: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """(len(Q),) bool: each query point inside some ball (exact distances to the balls a k-d
    tree finds within the largest radius: a dense (queries x balls) matrix took 20 s)."""
    out = np.zeros(len(Q), dtype=bool)
    if len(C) == 0:
        return out
    near = cKDTree(C).query_ball_point(Q, float(R.max()) + tol)
    for i, idx in enumerate(near):
        if idx:
            d = np.linalg.norm(Q[i] - C[idx], axis=1) - R[idx]
            out[i] = bool((d <= tol).any())
    return out


def _face_points(T_cam: np.ndarray, box: WorldObject, face_axis: int, sign: float,
                 step: float = 0.002) -> np.ndarray:
    """Points of one face of ``box`` (camera frame) whose pixel rays hit that face, i.e. the
    part of it the camera's samples span (not beyond the outermost samples' neighbours)."""
    half = 0.5 * np.array([box.shape.x, box.shape.y, box.shape.z])
    u, v = [a for a in range(3) if a != face_axis]
    g = np.arange(-half[u], half[u] + 1e-9, step)
    h = np.arange(-half[v], half[v] + 1e-9, step)
    U, V = np.meshgrid(g, h)
    P = np.zeros((U.size, 3))
    P[:, u], P[:, v], P[:, face_axis] = U.ravel(), V.ravel(), sign * half[face_axis]
    Pw = P @ box.pose[:3, :3].T + box.pose[:3, 3]
    return (Pw - T_cam[:3, 3]) @ T_cam[:3, :3]


@pytest.mark.parametrize("elevation_deg", [60.0, 14.0, 6.0])
def test_seen_face_is_covered_also_at_grazing_angles(elevation_deg: float) -> None:
    """Every point of the box's top face that lies between the camera's samples is inside a
    ball (the face seen at elevation_deg above its plane: 6 degrees is beyond
    max_incidence 80 degrees, so the face is then covered only where samples are continuous,
    and by the edge rule)."""
    box = WorldObject(Box(0.3, 0.3, 0.2), make_pose(np.eye(3), [0.0, 0.0, 0.1]), "box")
    a = math.radians(elevation_deg)
    eye = np.array([-1.2 * math.cos(a), 0.05, 0.2 + 1.2 * math.sin(a)])
    T = _look_at(eye, np.array([0.0, 0.0, 0.2]))
    G = render_grid(CAMERA, T, [box])
    R, Pe, Re = grid_surface(G, 1.4, 0.01, 0.0)
    valid = np.isfinite(G).all(axis=-1)
    C = np.concatenate([G[valid], Pe])
    Rb = np.concatenate([R[valid], Re])
    assert np.isfinite(Rb).all() and (Rb > 0).all()
    top = _face_points(T, box, 2, 1.0)
    # the face points the camera sees at its pixels: the nearest pixel of the point's ray has
    # a return (the sampled part of the face, its half-pixel rim included)
    f = 0.5 * CAMERA.width / math.tan(0.5 * CAMERA.hfov)
    u = np.rint(f * top[:, 0] / top[:, 2] + 0.5 * CAMERA.width - 0.5).astype(int)
    v = np.rint(f * top[:, 1] / top[:, 2] + 0.5 * CAMERA.height - 0.5).astype(int)
    ok = (top[:, 2] > 0) & (u >= 0) & (u < CAMERA.width) & (v >= 0) & (v < CAMERA.height)
    inside = np.zeros(len(top), dtype=bool)
    inside[ok] = valid[v[ok], u[ok]]
    # and that pixel's return is on this face (not on a nearer face in front of it)
    inside[ok] &= np.abs((G[v[ok], u[ok]] @ T[:3, :3].T + T[:3, 3])[:, 2] - 0.2) < 1e-6
    hit = _covered(top[inside], C, Rb)
    if elevation_deg >= 60.0:
        assert hit.mean() == 1.0, f"{(~hit).sum()} of {len(hit)} face points uncovered"
    elif elevation_deg >= 14.0:
        # the rim of a face seen at a grazing angle is covered to EDGE_REACH pixel spacings
        # only: a few points there lie just outside the balls (issue 19's tolerance: 3 mm)
        miss = top[inside][~hit]
        gap = (np.linalg.norm(miss[:, None, :] - C[None], axis=2) - Rb[None]).min(axis=1)
        assert hit.mean() >= 0.995 and (gap <= 0.003).all(), (hit.mean(), gap.max())
        # subdivided: the balls inside the faces stay near the cloud resolution (edges and
        # silhouettes, a few per cent of them, are larger)
        assert np.percentile(Rb, 90) <= 0.02
    # grid_radii alone (no points added) covers the face too, with larger balls
    R0 = grid_radii(G, 1.4, 0.0)
    if elevation_deg >= 14.0:
        assert _covered(top[inside], G[valid], R0[valid]).all()
        assert np.nanmax(R0) >= np.nanmax(R)


def test_occlusion_balls_fill_the_rays_behind_each_sample() -> None:
    rng = np.random.default_rng(3)
    P = rng.normal(size=(50, 3)) * 0.2 + np.array([0.0, 0.0, 1.5])
    R = rng.uniform(0.005, 0.02, 50)
    C, Rc = occlusion_balls(P, R, 0.1)
    rho = np.linalg.norm(P, axis=1)
    t = rng.uniform(0.0, 0.1, (50, 40))
    Q = (P[:, None, :] * (1.0 + t[..., None] / rho[:, None, None])).reshape(-1, 3)
    assert _covered(Q, np.concatenate([P, C]), np.concatenate([R, Rc])).all()
    # every ball is on a sample's ray, behind it, at most the depth
    U = P / rho[:, None]
    k = np.argmax((C / np.linalg.norm(C, axis=1, keepdims=True)) @ U.T, axis=1)
    depth = np.linalg.norm(C, axis=1) - rho[k]
    assert depth.min() > 0.0 and depth.max() <= 0.1 + 1e-9


@pytest.mark.parametrize("radius", [0.0, 0.001, 0.004, 0.012])
def test_occlusion_balls_leave_no_gap_behind_small_samples(radius: float) -> None:
    """Brute force: every point of each ray segment from the sample to the occlusion depth
    behind it (1/20 mm apart) lies in a ball -- the occlusion balls or the sample's own ball of
    radius ``radius`` -- also when the radius is under half the step (0.01 m) along the ray
    (the first ball, a step behind the sample, reaches back only half a step)."""
    rng = np.random.default_rng(8)
    P = rng.normal(size=(30, 3)) * 0.3 + np.array([0.0, 0.0, 1.2])
    R = np.full(30, radius)
    for depth in (0.1, 0.023, 0.004):
        C, Rc = occlusion_balls(P, R, depth, 0.01)
        rho = np.linalg.norm(P, axis=1)
        t = np.linspace(0.0, depth, int(depth / 5e-5) + 1)
        Q = (P[:, None, :] * (1.0 + t[None, :, None] / rho[:, None, None])).reshape(-1, 3)
        hit = _covered(Q, np.concatenate([P, C]), np.concatenate([R, Rc]))
        assert hit.all(), f"{(~hit).sum()} of {len(hit)} ray points uncovered (depth {depth})"


def test_merged_balls_contain_the_balls_they_replace() -> None:
    rng = np.random.default_rng(4)
    C = rng.uniform(-0.1, 0.1, (3000, 3))
    R = rng.uniform(0.0, 0.01, 3000)
    M, Rm = merge_balls(C, R, 0.02)
    assert len(M) < len(C)
    d = rng.normal(size=(3000, 3))
    Q = C + d / np.linalg.norm(d, axis=1, keepdims=True) * R[:, None]  # on each ball's surface
    assert _covered(Q, M, Rm, 1e-9).all()
    classes = radius_classes(M, Rm)
    assert sum(len(c) for _, _, c in classes) == len(M)
    for _, r, centres in classes:  # each merged ball lies inside its class's ball
        k = np.flatnonzero(np.isin(M[:, 0], centres[:, 0]))
        assert (Rm[k] <= r + 1e-12).all()


def test_hollow_shell_boundary_has_no_gap() -> None:
    """back_only for the samples inside a surface (grid_surface's ``interior``): the shell
    behind a box seen by the camera keeps a closed boundary -- every point on each camera ray
    at the occlusion depth behind the seen face (the back face), and every point along the
    rays of the samples on the box's silhouette (the sides), lies in a ball."""
    box = WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [1.2, 0.0, 0.5]), "box")
    T = _look_at(np.array([0.0, 0.2, 0.9]), np.array([1.2, 0.0, 0.5]))
    G = render_grid(CAMERA, T, [box], np.random.default_rng(0))
    valid = np.isfinite(G).all(axis=-1)
    inner = np.zeros(valid.shape, dtype=bool)
    R, _, _ = grid_surface(G, 1.4, math.inf, 0.0, inner)
    assert inner.any() and (valid & ~inner).any()
    P, Rv = G[valid], R[valid]
    rho = np.linalg.norm(P, axis=1)
    alpha = max(np.nanmax(R[valid]) / rho.min(), 1e-3)
    Rsh = np.maximum(Rv, rho * alpha * math.sqrt(0.5))
    full = occlusion_balls(P, Rsh, 0.1)
    C, Rc = occlusion_balls(P, Rsh, 0.1, back_only=inner[valid])
    assert len(C) < 0.5 * len(full[0])
    # the back face: rays through every pixel's footprint (sub-pixel offsets), 0.1 m behind
    rng = np.random.default_rng(5)
    k = rng.integers(0, len(P), 3000)
    U = P[k] / rho[k, None]
    offs = rng.normal(size=(3000, 3))
    offs -= (offs * U).sum(axis=1)[:, None] * U
    offs *= (rng.uniform(0, 0.5, 3000) * Rsh[k] / np.linalg.norm(offs, axis=1))[:, None]
    Q = (P[k] + offs) * (1.0 + 0.1 / rho[k])[:, None]
    edge = ~inner[valid][k]
    A = np.concatenate([P, C])
    B = np.concatenate([Rv, Rc])
    assert _covered(Q, A, B).all()
    # the sides: along the silhouette samples' rays
    t = rng.uniform(0.0, 0.1, (int(edge.sum()), 1))
    S = P[k][edge] * (1.0 + t / rho[k][edge, None])
    assert _covered(S, A, B).all()


def test_unseen_is_occupied_fills_every_ray_to_the_range_limit() -> None:
    """'Unseen is occupied': per-sample depth max(depth, range_limit - range); every point on
    each sample's ray from the sample to the range limit (closed form) lies in a ball, and no
    ball reaches past the range limit along its ray; also with the hollow shell's back balls
    (at the range limit)."""
    rng = np.random.default_rng(7)
    P = rng.normal(size=(40, 3)) * 0.2 + np.array([0.0, 0.0, 1.2])
    R = rng.uniform(0.005, 0.02, 40)
    rho = np.linalg.norm(P, axis=1)
    D = unseen_depth(P, 0.1, 2.0)
    np.testing.assert_allclose(D, np.maximum(0.1, 2.0 - rho))
    np.testing.assert_array_equal(unseen_depth(P, 0.1), np.full(40, 0.1))
    C, Rc = occlusion_balls(P, R, D)
    t = rng.uniform(0.0, 1.0, (40, 60)) * D[:, None]
    Q = (P[:, None, :] * (1.0 + t[..., None] / rho[:, None, None])).reshape(-1, 3)
    assert _covered(Q, np.concatenate([P, C]), np.concatenate([R, Rc])).all()
    assert np.linalg.norm(C, axis=1).max() <= 2.0 + 1e-9
    # back_only: the last ball of each ray sits at the range limit and covers its cone there
    back = np.ones(40, dtype=bool)
    Cb, Rb = occlusion_balls(P, R, D, back_only=back)
    assert len(Cb) == 40
    np.testing.assert_allclose(np.linalg.norm(Cb, axis=1), np.maximum(2.0, rho + 0.1))
    np.testing.assert_array_less(R * np.linalg.norm(Cb, axis=1) / rho, Rb + 1e-12)
    # unseen_balls: the part beyond the occlusion depth, also with a coarser step; with
    # occlusion_balls to the depth it covers the same rays
    for step in (0.005, 0.03):
        Cu, Ru = unseen_balls(P, R, 0.1, 2.0, step)
        A = np.concatenate([P, *occlusion_balls(P, R, 0.1)[:1], Cu])
        B = np.concatenate([R, occlusion_balls(P, R, 0.1)[1], Ru])
        assert _covered(Q, A, B).all()
        assert np.linalg.norm(Cu, axis=1).max() <= 2.0 + 1e-9
    Cb2, _ = unseen_balls(P, R, 0.1, 2.0, 0.03, back_only=back)
    assert len(Cb2) == int((rho + 0.1 < 2.0).sum())
    # a zero depth gives that sample no balls
    C0, _ = occlusion_balls(P, R, np.where(np.arange(40) < 20, 0.0, 0.1))
    U = P / rho[:, None]
    k = np.argmax((C0 / np.linalg.norm(C0, axis=1, keepdims=True)) @ U.T, axis=1)
    assert (k >= 20).all()


def _pinhole_rays(cam: DepthCamera) -> np.ndarray:
    """(H, W, 3) unit rays of a pinhole camera, from its field of view (closed form)."""
    f = 0.5 * cam.width / math.tan(0.5 * cam.hfov)
    u = (np.arange(cam.width) + 0.5 - 0.5 * cam.width) / f
    v = (np.arange(cam.height) + 0.5 - 0.5 * cam.height) / f
    U = np.stack(np.broadcast_arrays(u[None, :], v[:, None], 1.0), axis=-1)
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def test_no_return_pixels_get_their_rays_and_a_closed_unseen_shell() -> None:
    """pixel_rays recovers every pixel's ray (also where nothing was hit) from the valid
    pixels; the virtual samples of the no-return pixels with unseen_balls cover each such ray
    from the minimum range to the range limit (brute force), and nothing before it."""
    box = WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [1.2, 0.0, 0.5]), "box")
    T = _look_at(np.array([0.0, 0.2, 0.9]), np.array([1.2, 0.0, 0.5]))
    G = render_grid(CAMERA, T, [box], np.random.default_rng(0))
    missing = ~np.isfinite(G).all(axis=-1)
    assert missing.any() and (~missing).sum() > 100
    U = pixel_rays(G)
    assert U is not None
    np.testing.assert_allclose(U, _pinhole_rays(CAMERA), atol=1e-9)
    # not a pinhole image (z not forward): no rays
    assert pixel_rays(G[..., ::-1]) is None
    P, R, inner = no_return_samples(G, 0.3)
    assert len(P) == missing.sum() and inner.any() and (~inner).any()
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 0.3)
    C, Rc = unseen_balls(P, R, 0.0, 2.0, 0.03, back_only=inner)
    A, B = np.concatenate([P, C]), np.concatenate([R, Rc])
    rng = np.random.default_rng(1)
    rays = _pinhole_rays(CAMERA)[missing]
    k = rng.integers(0, len(rays), 4000)
    # sub-pixel offsets within the pixel footprint (half the pixel angle)
    alpha = 2.0 * math.atan(0.5 * math.tan(0.5 * CAMERA.hfov) / (0.5 * CAMERA.width))
    d = rays[k] + rng.uniform(-0.5, 0.5, (4000, 3)) * alpha
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    # the region's boundary: its front at min range, sides along its border rays, back at 2 m
    t = np.where(rng.random(4000) < 0.5, 0.3, 2.0 * (1 - 1e-9))
    border = ~inner[k]
    t[border] = rng.uniform(0.3, 2.0, int(border.sum()))
    assert _covered(d * t[:, None], A, B).all()
    # before the minimum range: free
    assert not _covered(rays[k] * 0.1, A, B).any()
