"""The compiled sensed-surface loops (robot_collision.geometry.sensed_kernels, through
robot_collision.geometry.sensed_surface) against the numpy formulation they replaced
(numpy_sensed_surface.py, the module at commit 0337da7): the same radii, interior masks,
added points, occlusion balls, merged balls and radius classes, on random and rendered
organised clouds with missing returns, depth edges, creases and grazing faces.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from robot_collision import Box, WorldObject, make_pose
from robot_collision.geometry import sensed_surface as new
from robot_collision.tools.depth_camera import DepthCamera, render_grid

from . import numpy_sensed_surface as old

CAMERA = DepthCamera(80, 60, math.radians(60.0), 0.1, 4.0, 0.0)


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    T[:3, 3] = eye
    return T


@functools.lru_cache(maxsize=1)
def _clouds() -> list[np.ndarray]:
    """Organised clouds: rendered boxes (depth edges, creases, grazing faces, background
    without returns), a noisy wavy surface with NaN pixels, tiny and one-row grids."""
    rng = np.random.default_rng(11)
    out = []
    boxes = [WorldObject(Box(0.3, 0.3, 0.3), make_pose(np.eye(3), [1.2, 0.0, 0.5]), "a"),
             WorldObject(Box(0.5, 0.2, 0.4), make_pose(np.eye(3), [1.6, 0.4, 0.3]), "b")]
    for eye, el in (((0.0, 0.2, 0.9), 0.0), ((-0.2, -0.3, 1.6), 0.0), ((0.4, 0.05, 0.55), 0.1)):
        T = _look_at(np.array(eye), np.array([1.3, 0.1, 0.4 + el]))
        out.append(render_grid(CAMERA, T, boxes, rng))
    for H, W, holes in ((40, 50, 0.1), (7, 9, 0.4), (2, 2, 0.0), (3, 60, 0.05)):
        u = np.linspace(-0.5, 0.5, W)
        v = np.linspace(-0.4, 0.4, H)
        U, V = np.meshgrid(u, v)
        Z = 1.0 + 0.2 * np.sin(6 * U) * np.cos(4 * V) + rng.normal(0, 0.01, U.shape)
        Z[rng.random(U.shape) < 0.05] += rng.uniform(0.1, 0.5)  # depth edges
        G = np.stack([U * Z, V * Z, Z], -1)
        G[rng.random(U.shape) < holes] = np.nan
        out.append(G)
    out.append(np.full((5, 6, 3), np.nan))  # no valid pixel
    G = np.full((4, 4, 3), np.nan)
    G[1, 1] = (0.0, 0.0, 1.0)  # one valid pixel: no pixel angle
    out.append(G)
    return out


@pytest.mark.parametrize("case", range(len(_clouds())))
@pytest.mark.parametrize("target,min_radius", [(math.inf, 0.0), (0.004, 0.0), (0.01, 0.003),
                                               (0.002, 0.0)])
def test_grid_surface_equals_the_numpy_formulation(case: int, target: float,
                                                   min_radius: float) -> None:
    G = _clouds()[case]
    inner_old = np.ones(G.shape[:2], dtype=bool)
    inner_new = np.ones(G.shape[:2], dtype=bool)
    R0, P0, Rp0 = old.grid_surface(G, 1.4, target, min_radius, inner_old)
    R1, P1, Rp1 = new.grid_surface(G, 1.4, target, min_radius, inner_new)
    np.testing.assert_array_equal(np.isnan(R0), np.isnan(R1))
    np.testing.assert_allclose(R1, R0, rtol=1e-12, atol=0.0)
    np.testing.assert_array_equal(inner_new, inner_old)
    assert P1.shape == P0.shape and Rp1.shape == Rp0.shape
    np.testing.assert_allclose(P1, P0, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(Rp1, Rp0, rtol=1e-12, atol=0.0)
    a0, a1 = old.pixel_angle(G), new.pixel_angle(G)
    assert (math.isnan(a0) and math.isnan(a1)) or a1 == pytest.approx(a0, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_occlusion_balls_equal_the_numpy_formulation(seed: int) -> None:
    """Without the front ball (close_front False: the numpy rule as it was), per-sample or one
    depth, filled or hollow (back_only), samples at the sensor (no ray) and zero depths."""
    from robot_collision.geometry.sensed_kernels import occlusion_fill

    rng = np.random.default_rng(seed)
    n = 400
    P = rng.normal(size=(n, 3)) * 0.3 + np.array([0.0, 0.0, 1.2])
    P[:5] = 0.0
    R = rng.uniform(0.0, 0.03, n)
    D = rng.uniform(0.0, 0.2, n)
    D[rng.random(n) < 0.1] = 0.0
    back = rng.random(n) < 0.6
    for depth in (D, np.full(n, 0.1)):
        for b in (None, back):
            C0, R0 = old.occlusion_balls(P, R, depth, 0.005, b)
            C1, R1 = occlusion_fill(P, R, np.ascontiguousarray(depth), 0.005,
                                    np.zeros(1, bool) if b is None else b, b is not None, False)
            assert C1.shape == C0.shape
            np.testing.assert_allclose(C1, C0, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(R1, R0, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("seed", range(3))
def test_merge_and_radius_classes_equal_the_numpy_formulation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    C = rng.uniform(-1.0, 1.0, (5000, 3)) + rng.normal(0, 3.0, 3)
    R = rng.uniform(0.0, 0.05, 5000)
    R[rng.random(5000) < 0.1] = 0.0
    for res in (0.01, 0.05, 0.0):
        M0, Rm0 = old.merge_balls(C, R, res)
        M1, Rm1 = new.merge_balls(C, R, res)
        np.testing.assert_array_equal(M1, M0)
        np.testing.assert_array_equal(Rm1, Rm0)
        for max_radius in (None, 0.02):
            c0 = old.radius_classes(M0, Rm0, max_radius=max_radius)
            c1 = new.radius_classes(M1, Rm1, max_radius=max_radius)
            assert [(k, r) for k, r, _ in c1] == [(k, r) for k, r, _ in c0]
            for (_, _, a), (_, _, b) in zip(c0, c1):
                np.testing.assert_array_equal(b, a)
