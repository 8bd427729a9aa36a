"""depth_camera: the simulated depth camera's points.

Oracles: every point lies on the surface of one of the objects (signed distance of the pair
kernel ``distance`` ~ 0) and no object is crossed between the camera and the point (the
segment's samples are all outside every object); for a box, the depth image equals trimesh's
independent ray-triangle intersection of the box mesh.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from robot_collision import Box, Capsule, Cylinder, Mesh, Sphere, WorldObject, make_pose
from robot_collision.errors import ConfigurationError
from robot_collision.geometry.distance import distance
from robot_collision.geometry.transforms import rot_x, rot_y, rot_z
from robot_collision.tools.depth_camera import DepthCamera, render_points


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return make_pose(np.stack([x, y, z], axis=1), eye)


WORLD = [
    WorldObject(Box(0.3, 0.2, 0.25), make_pose(rot_z(0.3), [1.0, 0.2, 0.1]), "box"),
    WorldObject(Sphere(0.12), make_pose(np.eye(3), [1.1, -0.3, 0.3]), "ball"),
    WorldObject(Capsule(0.06, 0.3), make_pose(rot_x(1.2), [0.8, 0.0, 0.5]), "cap"),
    WorldObject(Cylinder(0.08, 0.25), make_pose(rot_y(0.7), [1.3, 0.5, 0.4]), "cyl"),
    WorldObject(Mesh(np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0.05, 0.05, 0.25]])),
                make_pose(rot_z(2.0), [1.2, -0.1, -0.2]), "tet"),
]


def test_points_lie_on_the_first_surface_along_their_ray() -> None:
    cam = DepthCamera(80, 60, math.radians(70))
    T = _look_at(np.array([0.0, 0.0, 0.4]), np.array([1.0, 0.1, 0.2]))
    P = render_points(cam, T, WORLD)
    assert len(P) > 500
    Pw = P @ T[:3, :3].T + T[:3, 3]
    hit_kinds = set()
    probe = 1e-4
    for p in Pw[:: max(1, len(Pw) // 400)]:
        d = [distance(Sphere(probe), make_pose(np.eye(3), p), o.shape, o.pose)[0] + probe
             for o in WORLD]
        k = int(np.argmin(np.abs(d)))
        assert abs(d[k]) < 1e-7, d
        hit_kinds.add(WORLD[k].name)
        for f in np.linspace(0.05, 0.97, 12):  # nothing between the camera and the point
            q = T[:3, 3] + f * (p - T[:3, 3])
            for o in WORLD:
                assert distance(Sphere(probe), make_pose(np.eye(3), q), o.shape, o.pose)[0] \
                    + probe > -1e-9
    assert hit_kinds == {o.name for o in WORLD}


def _moller_trumbore(o: np.ndarray, D: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Nearest ray-triangle hit distance per ray (inf if none): Moller-Trumbore."""
    best = np.full(len(D), np.inf)
    for a, b, c in tri:
        e1, e2 = b - a, c - a
        p = np.cross(D, e2)
        det = p @ e1
        ok = np.abs(det) > 1e-14
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        s = o - a
        u = (p @ s) * inv
        q = np.cross(s, e1)
        v = (D @ q) * inv
        t = (q @ e2) * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
        best = np.where(hit & (t < best), t, best)
    return best


def test_box_depth_matches_ray_triangle_casting() -> None:
    """Against trimesh's triangulation of the box, intersected triangle by triangle."""
    import trimesh

    box = WORLD[0]
    cam = DepthCamera(40, 30, math.radians(50))
    T = _look_at(np.array([0.0, 0.1, 0.6]), box.pose[:3, 3])
    P = render_points(cam, T, [box])
    mesh = trimesh.creation.box(extents=[0.3, 0.2, 0.25], transform=box.pose)
    rays = cam.rays() @ T[:3, :3].T
    ref = _moller_trumbore(T[:3, 3], rays, np.asarray(mesh.triangles))
    hit = np.isfinite(ref)
    assert len(P) == int(hit.sum()) > 100
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), ref[hit], atol=1e-9)


def test_noise_and_range() -> None:
    T = _look_at(np.array([0.0, 0.0, 0.4]), np.array([1.0, 0.1, 0.2]))
    clean = render_points(DepthCamera(40, 30), T, WORLD)
    noisy = render_points(DepthCamera(40, 30, noise_stddev=0.01), T, WORLD,
                          np.random.default_rng(0))
    assert len(noisy) == len(clean)
    err = np.linalg.norm(noisy, axis=1) - np.linalg.norm(clean, axis=1)
    assert 0.005 < err.std() < 0.015
    assert len(render_points(DepthCamera(40, 30, max_range=0.5), T, WORLD)) == 0
    with pytest.raises(ConfigurationError):
        DepthCamera(0, 10)
    with pytest.raises(ConfigurationError):
        DepthCamera(hfov=4.0)
