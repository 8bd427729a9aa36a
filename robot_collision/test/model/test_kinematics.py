"""Compiled kinematics helpers (model.kinematics) against independent references: the scalar
``sincos`` against C's libm (``math``; numpy's own SIMD sine can differ from it by an ulp), and
forward kinematics with +-z joint axes (a fast path) against the same joints given a general
axis that is +-z up to an invisible tilt."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision.model.kinematics import REVOLUTE, fk_into, sincos


@settings(max_examples=2000, deadline=None)
@given(st.floats(-1e4, 1e4, allow_nan=False))
def test_sincos_matches_libm(x: float) -> None:
    s, c = sincos(x)
    assert abs(s - math.sin(x)) <= 4.5e-16
    assert abs(c - math.cos(x)) <= 4.5e-16


def test_sincos_dense_and_beyond_its_range() -> None:
    x = np.concatenate([np.linspace(-20, 20, 200_001), np.arange(-8, 9) * np.pi / 4,
                        np.random.default_rng(3).uniform(-1e4, 1e4, 100_000)])
    got = np.array([sincos(v) for v in x])
    assert np.abs(got[:, 0] - [math.sin(v) for v in x]).max() <= 4.5e-16
    assert np.abs(got[:, 1] - [math.cos(v) for v in x]).max() <= 4.5e-16
    for v in (1e4 + 1.0, -3e7, 1e300):  # libm's own answer
        assert sincos(v) == (math.sin(v), math.cos(v))
    for v in (np.inf, -np.inf, np.nan):
        assert all(math.isnan(y) for y in sincos(v))


def _chain(axes: np.ndarray, rng: np.random.Generator) -> tuple:
    L = len(axes) + 1
    parent = np.arange(-1, L - 1)
    jtype = np.full(L, REVOLUTE)
    jtype[0] = 0
    origin = np.tile(np.eye(4), (L, 1, 1))
    for i in range(1, L):  # random rotations and offsets
        qm, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        origin[i, :3, :3] = qm * np.sign(np.linalg.det(qm))
        origin[i, :3, 3] = rng.normal(scale=0.3, size=3)
    axis = np.zeros((L, 3))
    axis[1:] = axes
    qidx = np.arange(-1, L - 1)
    return parent, jtype, origin, axis, qidx, np.ones(L), np.zeros(L)


def test_fk_fast_axis_path_equals_the_general_rotation() -> None:
    rng = np.random.default_rng(4)
    for _ in range(50):
        signs = rng.choice([-1.0, 1.0], size=6)
        axes = np.zeros((6, 3))
        axes[:, 2] = signs
        parent, jtype, origin, axis, qidx, scale, offset = _chain(axes, rng)
        # the same axes a hair off +-z take the general (Rodrigues) path
        tilted = axis.copy()
        tilted[1:, 0] = 1e-300
        q = rng.uniform(-7, 7, 6)
        T_fast = np.empty((7, 4, 4))
        T_gen = np.empty((7, 4, 4))
        fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T_fast)
        fk_into(q, parent, jtype, origin, tilted, qidx, scale, offset, T_gen)
        np.testing.assert_allclose(T_fast, T_gen, rtol=0, atol=1e-14)
        # and an independent product of 4x4 matrices
        T = np.eye(4)
        for i in range(1, 7):
            th = signs[i - 1] * q[i - 1]
            R = np.eye(4)
            R[:2, :2] = [[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]
            T = T @ origin[i] @ R
            np.testing.assert_allclose(T_fast[i], T, rtol=0, atol=1e-13)
