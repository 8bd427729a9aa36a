"""BiRRT on the MotionBenchMaker Panda problems (``../shared/benchmarks/panda_mbm``).

Benchmark convention (that folder's README): the 59-sphere Panda with the SRDF's disabled pairs,
fingers fixed open, cylinders as capsules except in the ``box`` set, edges validated at >= 32
points per radian (``validation_distance`` = 1/32 rad). Each valid problem plans from ``start``
to the first of ``goals`` with a 1 s limit and seed = problem index; problems marked
``valid: false`` are skipped and counted. Timings are of ``BiRRT.plan`` with the planner already
built for the problem's world (building it, i.e. flattening the scene, is ``setup_ms``); compile
time is excluded by a warm-up. A failed plan counts as the 1 s limit in the time statistics.

Every returned path and every shortened path is re-checked independently: each edge resampled
at ceil(32 * length) + 1 configurations and checked with ``CollisionChecker.is_valid_batch``
(``invalid_paths``), and again at 2048 configurations per radian (``dense_invalid_paths``: a
configuration in collision between the planner's samples). The planner runs with its default
``edge_validation`` ("certified" since issue 23: edges proven free over the whole segment;
``bench_certified`` compares it with "discrete" in one run).

``RC_MBM_ROBOT=mesh`` plans with the mesh Panda instead (``panda.urdf``, meshes as convex
hulls, same SRDF): the issue-22 comparison of a loaded robot with the sphere model; every
re-check is then exact against the hulls (GJK).
``shortened`` reports ``BiRRT.shorten`` (100 iterations): its time and the length ratio.
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import mbm
import numpy as np

from robot_collision import CollisionChecker, PlanningError, RobotModel
from robot_collision.planning.rrt import BiRRT, RRTOptions, path_length

TIME_LIMIT = 1.0
POINTS_PER_RADIAN = 32.0
DENSE_PER_RADIAN = 2048.0
SHORTEN_ITERATIONS = 100


def dense(path: np.ndarray, points_per_radian: float = POINTS_PER_RADIAN) -> np.ndarray:
    """Every edge resampled at ceil(points_per_radian * |edge|) + 1 points (ends included)."""
    out = [path[:1]]
    for a, b in itertools.pairwise(path):
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) * points_per_radian)))
        out.append(a + (b - a) * np.linspace(0.0, 1.0, steps + 1)[1:, None])
    return np.concatenate(out)


def _stats(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"median_ms": float("nan"), "p95_ms": float("nan"), "max_ms": float("nan")}
    a = np.asarray(ms)
    return {"median_ms": round(float(np.median(a)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3),
            "max_ms": round(float(a.max()), 3)}


def _robot(name: str) -> RobotModel:
    if name == "mesh":
        return RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")
    return mbm.panda()


def run(quick: bool = False) -> dict[str, Any]:
    if not mbm.available():
        return {"skipped": f"no problems at {mbm.MBM_DIR}"}
    robot_name = os.environ.get("RC_MBM_ROBOT", "sphere")
    t0 = time.perf_counter()
    robot = _robot(robot_name)
    checker = CollisionChecker(robot)
    load_s = time.perf_counter() - t0
    problems = mbm.load_problems()["problems"]
    options = RRTOptions()
    # warm-up: compile (or load) every kernel once
    p0 = problems["cage"][0]
    warm = BiRRT(checker, RRTOptions(seed=0), mbm.world_of(p0, "cage"))
    warm.shorten(warm.plan(p0["start"], p0["goals"][0]).waypoints, 5)

    per_set: dict[str, Any] = {}
    all_ms: list[float] = []
    all_short_ms: list[float] = []
    ratios: list[float] = []
    setup_ms: list[float] = []
    world_ms: list[float] = []  # building the problem's WorldObjects, CPU time
    checks: list[int] = []
    n_valid = n_ok = invalid = short_invalid = skipped = 0
    dense_invalid = dense_short_invalid = 0
    for name, plist in problems.items():
        chosen = plist[:5] if quick else plist
        ms_set: list[float] = []
        sms_set: list[float] = []
        ok_set = inv_set = sinv_set = 0
        ratio_set: list[float] = []
        for p in chosen:
            if not p.get("valid", True):
                skipped += 1
                continue
            n_valid += 1
            t0 = time.process_time()
            world = mbm.world_of(p, name)
            world_ms.append((time.process_time() - t0) * 1e3)
            t0 = time.perf_counter()
            planner = BiRRT(checker, RRTOptions(seed=int(p["index"])), world)
            setup_ms.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            try:
                res = planner.plan(p["start"], p["goals"][0], time_limit=TIME_LIMIT)
            except PlanningError:
                ms_set.append(TIME_LIMIT * 1e3)
                continue
            ms_set.append((time.perf_counter() - t0) * 1e3)
            ok_set += 1
            checks.append(res.stats.collision_checks)
            path = res.waypoints
            if not checker.is_valid_batch(dense(path), world).all():
                inv_set += 1
            if not checker.is_valid_batch(dense(path, DENSE_PER_RADIAN), world).all():
                dense_invalid += 1
            t0 = time.perf_counter()
            short = planner.shorten(path, SHORTEN_ITERATIONS)
            sms_set.append((time.perf_counter() - t0) * 1e3)
            if not checker.is_valid_batch(dense(short), world).all():
                sinv_set += 1
            if not checker.is_valid_batch(dense(short, DENSE_PER_RADIAN), world).all():
                dense_short_invalid += 1
            ratio_set.append(path_length(short) / max(path_length(path), 1e-12))
        n_set = len(ms_set)
        per_set[name] = {
            "problems": n_set,
            "success_rate": round(ok_set / max(n_set, 1), 4),
            **_stats(ms_set),
            "invalid_paths": inv_set,
            "shortened": {
                **_stats(sms_set),
                "length_ratio_mean": round(float(np.mean(ratio_set)), 4) if ratio_set
                else float("nan"),
                "invalid_paths": sinv_set,
            },
        }
        all_ms += ms_set
        all_short_ms += sms_set
        ratios += ratio_set
        n_ok += ok_set
        invalid += inv_set
        short_invalid += sinv_set
    return {
        "quick": quick,
        "robot": robot_name,
        "load_s": round(load_s, 3),
        "problems": n_valid,
        "skipped_invalid_problems": skipped,
        "success_rate": round(n_ok / max(n_valid, 1), 4),
        **_stats(all_ms),
        "invalid_paths": invalid,
        "dense_invalid_paths": dense_invalid,
        "dense_invalid_shortened": dense_short_invalid,
        "dense_per_radian": DENSE_PER_RADIAN,
        "setup_ms_median": round(float(np.median(setup_ms)), 3),
        "world_build_cpu_ms_median": round(float(np.median(world_ms)), 4),
        "collision_checks_median": int(np.median(checks)) if checks else 0,
        "per_set": per_set,
        "shortened": {
            **_stats(all_short_ms),
            "iterations": SHORTEN_ITERATIONS,
            "length_ratio_mean": round(float(np.mean(ratios)), 4) if ratios else float("nan"),
            "invalid_paths": short_invalid,
        },
        "time_limit_s": TIME_LIMIT,
        "points_per_radian": POINTS_PER_RADIAN,
        "options": {"max_connection_distance": options.max_connection_distance,
                    "validation_distance": options.validation_distance,
                    "dynamic_domain": options.dynamic_domain,
                    "balance_trees": options.balance_trees,
                    "enable_connect_heuristic": options.enable_connect_heuristic,
                    "edge_validation": getattr(options, "edge_validation", "discrete")},
    }
