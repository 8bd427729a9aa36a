"""Pose helpers and WorldObject's pose check, against scipy and numpy's own expressions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from robot_collision import Box, ShapeError, WorldObject
from robot_collision.geometry.transforms import quat_xyzw_to_matrix

finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.tuples(finite, finite, finite, finite).filter(
    lambda q: math.sqrt(sum(v * v for v in q)) > 1e-6))
def test_quaternion_matrix_matches_scipy(q: tuple[float, float, float, float]) -> None:
    np.testing.assert_allclose(quat_xyzw_to_matrix(q), Rotation.from_quat(q).as_matrix(),
                               atol=1e-12)


@pytest.mark.parametrize("q", [(0.0, 0.0, 0.0, 0.0), (math.nan, 0.0, 0.0, 1.0),
                               (math.inf, 0.0, 0.0, 1.0)])
def test_degenerate_quaternion_gives_nan(q: tuple[float, ...]) -> None:
    with np.errstate(invalid="ignore", divide="ignore"):
        assert np.isnan(quat_xyzw_to_matrix(q)).any()


def _numpy_rule(rot: np.ndarray) -> bool:
    """The rule as numpy states it (the check's previous form)."""
    return bool(np.allclose(rot @ rot.T, np.eye(3), atol=1e-6) and np.linalg.det(rot) >= 0)


@settings(max_examples=400, deadline=None)
@given(st.tuples(finite, finite, finite, finite).filter(
           lambda q: math.sqrt(sum(v * v for v in q)) > 1e-3),
       st.sampled_from([0.0, 1e-7, 5e-7, 2e-6, 8e-6, 1.2e-5, 1e-3]),
       st.integers(0, 8), st.booleans())
def test_world_object_pose_check_matches_numpy(q: tuple[float, ...], eps: float, entry: int,
                                               mirror: bool) -> None:
    rot = Rotation.from_quat(q).as_matrix()
    rot.flat[entry] += eps
    if mirror:
        rot[:, 0] *= -1.0
    pose = np.eye(4)
    pose[:3, :3] = rot
    if _numpy_rule(rot):
        WorldObject(Box(0.1, 0.1, 0.1), pose)
    else:
        with pytest.raises(ShapeError, match="orthonormal"):
            WorldObject(Box(0.1, 0.1, 0.1), pose)
