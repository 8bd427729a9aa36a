"""Checker benchmark: 59-sphere Panda vs the obstacles of MotionBenchMaker cage problem 1.

Reports ``single_check_us`` (one boolean check from Python, median of repeated calls),
``batch_configs_per_s`` (``is_valid_batch`` on uniformly random configurations, all threads) and
``batch_configs_per_s_1thread`` (the same on one thread), ``exhaustive_matrix_us``
(``check(..., exhaustive=True)``: full MATLAB-style matrices with witness points) and
``clearance_us`` (``clearance`` with a 0.1 m influence distance).

Edge validation, one thread, edges as the planner makes them (from a collision-free
configuration towards a uniform sample, at most 1 rad, checked at 32 points per radian):
``edge_configs_per_s_1thread`` counts the configurations of collision-free edges (every one is
checked, no early exit), ``edge_mixed_configs_per_s_1thread`` the configurations covered by a
mix of free and colliding edges (a colliding edge stops at its first collision, so this is the
rate at which the planner's edges get decided, in configurations of edge). Both run the
compiled edge kernel in a compiled loop (no Python per edge): the 8-configuration kernel in
strided order when the scene supports it (``checker._prepare(world).block``), else the scalar
kernel in bisection order.
Targets: issue 2: <= 5 us, >= 2 M/s, <= 100 us; issue 15: single <= 2 us, one-thread batch and
edges >= 6 M configurations/s.
"""

from __future__ import annotations

import time

import mbm
import numba
import numpy as np
from numba import njit

from robot_collision import CollisionChecker
from robot_collision.collision.kernels import motion_valid

try:
    from robot_collision.collision import block_kernels
except ImportError:  # code before the blocked kernels
    block_kernels = None  # type: ignore[assignment]

EDGE_POINTS_PER_RADIAN = 32.0
EDGE_MAX_LENGTH = 1.0


@njit(cache=False)
def _edges_scalar(Q0, D, steps, kin, rs, ws, pr):  # type: ignore[no-untyped-def]
    L = rs.link_start.shape[0] - 1
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    free = 0
    for i in range(Q0.shape[0]):
        # motion_valid includes the start (k = 0); the edges here start at valid configurations
        free += motion_valid(Q0[i], Q0[i] + D[i], steps[i], kin, rs, ws, pr, True, T, SP, ready,
                             buf)
    return free


def _edges_blocked(fn):  # type: ignore[no-untyped-def]
    @njit(cache=False)
    def run(Q0, D, steps, BF, BI, W, RI):  # type: ignore[no-untyped-def]
        free = 0
        for i in range(Q0.shape[0]):
            free += fn(Q0[i], D[i], steps[i], 1, BF, BI, W, RI, True) > 0
        return free

    return run


def _edge_set(robot, checker, world, rng, n):  # type: ignore[no-untyped-def]
    """Planner-like edges: start at a collision-free configuration, head for a uniform sample,
    at most EDGE_MAX_LENGTH rad. Returns (Q0, D, steps, free mask by dense checks)."""
    Q = np.array([robot.random_configuration(rng) for _ in range(4 * n)])
    Q = Q[checker.is_valid_batch(Q, world)][:n]
    target = np.array([robot.random_configuration(rng) for _ in range(len(Q))])
    D = target - Q
    length = np.linalg.norm(D, axis=1)
    D *= np.minimum(1.0, EDGE_MAX_LENGTH * (1 - 1e-9) / length)[:, None]
    steps = np.maximum(1, np.ceil(np.linalg.norm(D, axis=1) * EDGE_POINTS_PER_RADIAN)).astype(
        np.int64)
    return Q, D, steps


def _edge_rates(robot, checker, world, repeats):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    Q0, D, steps = _edge_set(robot, checker, world, rng, 3000)
    # which edges are free (dense check), for the free-edge figure
    free = np.array([checker.is_valid_batch(q + d * (np.arange(1, k + 1) / k)[:, None],
                                            world).all() for q, d, k in zip(Q0, D, steps)])
    sc = checker._prepare(world)
    block = getattr(sc, "block", None)
    if block is not None:
        run = _edges_blocked(block_kernels.edge_valid_blocked)
        W, RI = block_kernels.block_workspace(block.BI)

        def call(a, b, c):  # type: ignore[no-untyped-def]
            return run(a, b, c, block.BF, block.BI, W, RI)
    else:
        kin, rs, ws, pr = checker.compiled(world)

        def call(a, b, c):  # type: ignore[no-untyped-def]
            return _edges_scalar(a, b, c, kin, rs, ws, pr)

    out = {}
    for name, sel in (("edge_configs_per_s_1thread", free),
                      ("edge_mixed_configs_per_s_1thread", np.ones(len(free), dtype=bool))):
        a, b, c = Q0[sel], D[sel], steps[sel]
        assert call(a, b, c) == free[sel].sum()  # the kernel agrees with the dense checks
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            call(a, b, c)
            best = min(best, time.perf_counter() - t0)
        out[name] = round(float(c.sum() / best))
    out["edge_free_fraction"] = round(float(free.mean()), 3)
    return out


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
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        rates1 = []
        for _ in range(3):
            t0 = time.perf_counter()
            checker.is_valid_batch(Q, world)
            rates1.append(len(Q) / (time.perf_counter() - t0))
    finally:
        numba.set_num_threads(threads)
    edges = _edge_rates(robot, checker, world, repeats)
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
        "batch_configs_per_s_1thread": round(float(np.max(rates1))),
        "batch_valid_fraction": round(float(valid.mean()), 3),
        **edges,
        "exhaustive_matrix_us": round(exhaustive, 1),
        "clearance_us": round(clearance, 1),
    }
