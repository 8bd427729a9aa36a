"""The boolean pair kernel (``shape_overlap``: early-exit GJK, no EPA) against signed distance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from robot_collision import Mesh
from robot_collision.geometry.distance import distance, shape_overlap

from .test_distance import random_pose, random_shape


@njit(cache=False)
def _overlap(ka, pa, Ta, va, kb, pb, Tb, vb, pad):  # type: ignore[no-untyped-def]
    buf = np.empty((3, 3))
    return shape_overlap(ka, pa, Ta, va, kb, pb, Tb, vb, pad, buf[0], buf[1], buf[2])


def _big_mesh(rng: np.random.Generator) -> Mesh:
    p = rng.normal(size=(300, 3))
    return Mesh(p / np.linalg.norm(p, axis=1, keepdims=True) * rng.uniform(0.05, 0.3, 3))


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ka=st.integers(0, 5),
    kb=st.integers(0, 5),
    spread=st.sampled_from([0.1, 0.3, 0.8]),
    pad=st.sampled_from([0.0, 0.02, -0.01]),
)
def test_overlap_is_signed_distance_below_padding(
    seed: int, ka: int, kb: int, spread: float, pad: float
) -> None:
    rng = np.random.default_rng(seed)
    A = _big_mesh(rng) if ka == 5 else random_shape(ka, rng)
    B = _big_mesh(rng) if kb == 5 else random_shape(kb, rng)
    for _ in range(10):
        TA = random_pose(rng, "random", 0.05)
        TB = random_pose(rng, "random", spread)
        d = distance(A, TA, B, TB)[0]
        if abs(d - pad) < 1e-8:
            continue  # within the GJK tolerance of the boundary either answer is right
        hit = _overlap(
            A.kind, A.params(), TA, A.kernel_vertices(), B.kind, B.params(), TB,
            B.kernel_vertices(), pad,
        )
        assert hit == (d < pad), (A, B, d, pad)
