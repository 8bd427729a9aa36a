"""Checker benchmark: 59-sphere Panda vs the obstacles of MotionBenchMaker cage problem 1.

Reports ``single_check_us`` (one boolean check from Python, median of repeated calls),
``batch_configs_per_s`` (``is_valid_batch`` on uniformly random configurations),
``exhaustive_matrix_us`` (``check(..., exhaustive=True)``: full MATLAB-style matrices with
witness points) and ``clearance_us`` (``clearance`` with a 0.1 m influence distance).
Targets (issue 2): <= 5 us, >= 2 M/s, <= 100 us.
"""

from __future__ import annotations

import time

import mbm
import numpy as np

from robot_collision import CollisionChecker


def _median_us(fn, repeats: int, inner: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner * 1e6)
    return float(np.median(samples))


def run(quick: bool = False) -> dict:
    robot = mbm.panda()
    problem = mbm.load_problems()["problems"]["cage"][0]
    world = mbm.world_of(problem, "cage")
    checker = CollisionChecker(robot)
    rng = np.random.default_rng(0)
    q_start = np.asarray(problem["start"], dtype=float)
    n_batch = 20_000 if quick else 400_000
    Q = np.array([robot.random_configuration(rng) for _ in range(min(n_batch, 20_000))])
    Q = np.tile(Q, (n_batch // len(Q), 1))
    # warm up (compile / load the numba cache)
    checker.is_valid(q_start, world)
    checker.is_valid_batch(Q[:100], world)
    checker.check(q_start, world, exhaustive=True)
    checker.clearance(q_start, world, influence_distance=0.1)

    repeats = 5 if quick else 15
    single = _median_us(lambda: checker.is_valid(q_start, world), repeats, 2000)
    qs = Q[:2000]
    single_random = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for q in qs:
            checker.is_valid(q, world)
        single_random.append((time.perf_counter() - t0) / len(qs) * 1e6)
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        valid = checker.is_valid_batch(Q, world)
        rates.append(len(Q) / (time.perf_counter() - t0))
    exhaustive = _median_us(lambda: checker.check(q_start, world, exhaustive=True), repeats, 200)
    clearance = _median_us(
        lambda: checker.clearance(q_start, world, influence_distance=0.1), repeats, 200
    )
    return {
        "robot": "panda_spherized (59 spheres)",
        "world": f"cage #1 ({len(world)} obstacles)",
        "single_check_us": round(single, 2),
        "single_check_random_us": round(float(np.median(single_random)), 2),
        "batch_configs_per_s": round(float(np.max(rates))),
        "batch_valid_fraction": round(float(valid.mean()), 3),
        "exhaustive_matrix_us": round(exhaustive, 1),
        "clearance_us": round(clearance, 1),
    }
