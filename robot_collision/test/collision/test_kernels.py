"""check_kernels: the packed scene layout (every compiled entry point reads the scene from it)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    Cylinder,
    Mesh,
    RobotModel,
    Sphere,
    WorldObject,
)
from robot_collision.collision.kernels import (
    _box_gap2,
    _box_signed,
    pack_scene,
    unpack_scene,
    unpack_scene_borrowed,
)
from robot_collision.collision.scene import world_arrays
from robot_collision.geometry.distance import distance
from robot_collision.geometry.transforms import make_pose, rot_x, rot_z

SHAPES = [
    Box(0.4, 0.1, 0.25),
    Sphere(0.12),
    Capsule(0.06, 0.3),
    Cylinder(0.08, 0.2),
    Mesh(np.array([[0, 0, 0], [0.3, 0, 0], [0, 0.2, 0], [0.05, 0.05, 0.25]]) - 0.1),
]


def test_pack_and_unpack_round_trip(default_robot: RobotModel) -> None:
    world = [
        WorldObject(Box(0.2, 0.3, 0.4), make_pose(rot_z(0.3), [0.5, 0.1, 0.3]), "box"),
        WorldObject(Sphere(0.08), make_pose(np.eye(3), [0.0, 0.5, 0.6]), "ball"),
        WorldObject(Capsule(0.05, 0.2), make_pose(np.eye(3), [0.3, -0.4, 0.2]), "cap"),
        WorldObject(Mesh(np.vstack([np.zeros(3), np.eye(3)]) * 0.1),
                    make_pose(np.eye(3), [0, 0, 1]), "mesh"),
    ]
    checker = CollisionChecker(default_robot, padding={("*", "*"): 0.01, ("tool", "box"): 0.05})
    kin, rs, ws, pr = checker.compiled(world)
    back = unpack_scene(*pack_scene(kin, rs, ws, pr))
    for original, unpacked in zip((kin, rs, ws, pr), back):
        assert type(unpacked).__name__ == type(original).__name__
        assert unpacked._fields == original._fields
        for name, a, b in zip(original._fields, original, unpacked):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=name)
    # the borrowed views (hot entry points) see the same arrays; copied inside the call
    F, I = pack_scene(kin, rs, ws, pr)
    borrowed = _copied_borrowed(F, I)
    for original, unpacked in zip((kin, rs, ws, pr), borrowed):
        for name, a, b in zip(original._fields, original, unpacked):
            np.testing.assert_array_equal(b, np.asarray(a), err_msg=name)


@njit(cache=False)
def _copied_borrowed(F, I):  # type: ignore[no-untyped-def]
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    return (
        (kin[0].copy(), kin[1].copy(), kin[2].copy(), kin[3].copy(), kin[4].copy(),
         kin[5].copy(), kin[6].copy()),
        (rs[0].copy(), rs[1].copy(), rs[2].copy(), rs[3].copy(), rs[4].copy(), rs[5].copy(),
         rs[6].copy(), rs[7].copy(), rs[8].copy(), rs[9].copy()),
        (ws[0].copy(), ws[1].copy(), ws[2].copy(), ws[3].copy(), ws[4].copy(), ws[5].copy(),
         ws[6].copy(), ws[7].copy(), ws[8].copy(), ws[9].copy()),
        (pr[0].copy(), pr[1].copy(), pr[2].copy(), pr[3].copy()),
    )


@settings(max_examples=300, deadline=None)
@given(
    k=st.integers(0, len(SHAPES) - 1),
    angles=st.tuples(st.floats(-3.2, 3.2), st.floats(-3.2, 3.2)),
    p=st.tuples(*[st.floats(-0.4, 0.4)] * 3),
)
def test_enclosing_box_bounds_the_signed_distance(
    k: int, angles: tuple[float, float], p: tuple[float, float, float]
) -> None:
    """The pruning bounds of the kernels: the signed distance of a point to an object's
    enclosing box never exceeds its signed distance to the object (penetration included), and
    the squared gap is zero exactly where that is <= 0. Oracle: ``distance`` of a small sphere
    at the point, plus its radius."""
    shape = SHAPES[k]
    pose = make_pose(rot_z(angles[0]) @ rot_x(angles[1]), [0.05, -0.02, 0.1])
    box = world_arrays([WorldObject(shape, pose, "o")]).box
    r = 1e-3
    exact = distance(Sphere(r), make_pose(np.eye(3), p), shape, pose)[0] + r
    bound = _box_signed(p[0], p[1], p[2], box, 0)
    assert bound <= exact + 1e-9
    gap2 = _box_gap2(p[0], p[1], p[2], box, 0)
    assert gap2 >= 0.0
    assert (gap2 == 0.0) == (bound <= 0.0) or abs(bound) < 1e-12
    if k == 0:  # exact for boxes
        assert abs(bound - exact) < 1e-9
