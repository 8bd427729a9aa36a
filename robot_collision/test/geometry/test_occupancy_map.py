"""Fused occupancy with decay (robot_collision.geometry.occupancy_map).

Oracles: brute force -- the voxel of every point (floor of point / resolution) and its newest
stamp, recomputed from all clouds; carving judged by an exact segment-box intersection (slab
method) of each ray against each stored voxel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision.errors import ConfigurationError
from robot_collision.geometry.occupancy_map import FusedOccupancy, FusionOptions

RES = 0.05


def _brute(clouds: list[tuple[np.ndarray, float]], now: float, persistence: float
           ) -> dict[tuple[int, int, int], float]:
    out: dict[tuple[int, int, int], float] = {}
    for P, t in clouds:
        for p in P:
            k = tuple(int(v) for v in np.floor(p / RES))
            out[k] = max(out.get(k, -math.inf), t)
    return {k: t for k, t in out.items() if t >= now - persistence}


def _as_dict(centres: np.ndarray, times: np.ndarray) -> dict[tuple[int, int, int], float]:
    return {tuple(int(v) for v in np.floor(c / RES)): float(t) for c, t in zip(centres, times)}


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.floats(0.5, 3.0))
def test_time_decay_is_the_brute_force_union(seed: int, persistence: float) -> None:
    rng = np.random.default_rng(seed)
    fused = FusedOccupancy(FusionOptions(resolution=RES, persistence=persistence, carve=False))
    clouds = []
    for k in range(6):
        P = rng.uniform(-0.3, 0.3, (int(rng.integers(0, 40)), 3))
        t = 0.7 * k
        fused.insert(P, t)
        clouds.append((P, t))
        centres, times = fused.voxels(t)
        assert _as_dict(centres, times) == _brute(clouds, t, persistence)
    # voxel centres are the centres of the points' voxels
    c, _ = fused.voxels(clouds[-1][1])
    np.testing.assert_allclose((c / RES - 0.5) % 1.0, 0.0, atol=1e-9)


def _segment_box_length(o: np.ndarray, p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Length of the segment o -> p inside the box [lo, hi] (slab method)."""
    d = p - o
    t0, t1 = 0.0, 1.0
    for a in range(3):
        if abs(d[a]) < 1e-15:
            if o[a] < lo[a] or o[a] > hi[a]:
                return 0.0
            continue
        u, v = (lo[a] - o[a]) / d[a], (hi[a] - o[a]) / d[a]
        t0, t1 = max(t0, min(u, v)), min(t1, max(u, v))
    return max(0.0, t1 - t0) * float(np.linalg.norm(d))


def test_newer_rays_carve_what_they_pass_through_and_nothing_else() -> None:
    rng = np.random.default_rng(2)
    opts = FusionOptions(resolution=RES, persistence=10.0)
    fused = FusedOccupancy(opts)
    old = rng.uniform([-0.4, -0.4, 0.4], [0.4, 0.4, 1.2], (300, 3))
    fused.insert(old, 0.0)
    before, _ = fused.voxels(0.0)
    origin = np.zeros(3)
    hits = rng.uniform([-0.5, -0.5, 1.0], [0.5, 0.5, 1.6], (200, 3))
    fused.insert(hits, 1.0, origin)
    after = _as_dict(*fused.voxels(1.0))
    back = math.sqrt(3.0) * RES
    for c in before:
        k = tuple(int(v) for v in np.floor(c / RES))
        lo, hi = np.array(k) * RES, (np.array(k) + 1) * RES
        lengths = []
        for h in hits:
            L = float(np.linalg.norm(h))
            end = h * (L - back) / L
            lengths.append(_segment_box_length(origin, end, lo, hi) if back < L else 0.0)
        seen_now = k in _brute([(hits, 1.0)], 1.0, 10.0)
        if seen_now:
            assert after[k] == 1.0
        elif max(lengths) >= 0.26 * RES:  # a ray crosses it: carved
            assert k not in after
        elif max(lengths) == 0.0:  # no ray touches it: kept
            assert after[k] == 0.0
    # carving happened, and every new hit's voxel is in
    assert len(after) < len(before) + len(_brute([(hits, 1.0)], 1.0, 10.0))
    assert set(_brute([(hits, 1.0)], 1.0, 10.0)) <= set(after)


def test_voxel_cap_keeps_the_newest_and_options_are_checked() -> None:
    fused = FusedOccupancy(FusionOptions(resolution=RES, persistence=100.0, max_voxels=50,
                                         carve=False))
    rng = np.random.default_rng(3)
    for t in range(5):
        fused.insert(rng.uniform(-1, 1, (30, 3)) + 3.0 * t, float(t))
    c, times = fused.voxels(4.0)
    assert len(fused) == 50 and len(c) == 50
    assert times.min() >= 3.0 and (times == 4.0).sum() == 30
    assert len(fused.voxels(4.0, seen_before=4.0)[0]) == 20
    for bad in ({"resolution": 0.0}, {"persistence": -1.0}, {"max_voxels": 0},
                {"carve_stop": math.nan}):
        with pytest.raises(ConfigurationError):
            FusionOptions(**bad)  # type: ignore[arg-type]
