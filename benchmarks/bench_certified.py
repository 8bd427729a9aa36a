"""Certified vs discrete edges (issue 23), in one run: planning cost, dense re-checks, edge rates.

``plans``: for each robot -- the 59-sphere Panda and the mesh Panda (``panda.urdf``, meshes as
convex hulls) on the MotionBenchMaker sets (``../shared/benchmarks/panda_mbm``, the convention
of ``bench_plan_mbm``), and the default arm in ``bench_plan_default``'s demo world (random
collision-free start/goal pairs) -- every problem is planned twice, interleaved so that both see
the same machine load: ``RRTOptions(edge_validation="discrete")`` (samples every 1/32 rad) and
the default ``"certified"``. Each returned path and its shortened path (``BiRRT.shorten``, 50
iterations) is re-checked independently: every edge resampled at ``DENSE_PER_RADIAN`` (2048)
configurations per radian, each checked exactly with ``CollisionChecker.is_valid_batch`` (closed
forms for spheres/boxes/capsules, GJK on the hulls). Reported per robot and mode: success,
median/p95 planning time (a failure counts as the 1 s limit), paths with a configuration in
collision, and the ratio of the certified median to the discrete one.

``edges``: edges per second on one thread, random edges (uniform start, random direction, 0.3
and 1.0 rad) in one scene per MBM set with the sphere Panda and the mesh Panda: discrete
(``is_motion_valid(mode="discrete")``'s kernel, 1/32 rad) vs certified (the discrete check, then
inflated samples and conservative advancement when it passes, as ``is_motion_valid``'s default).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from typing import Any

import mbm
import numpy as np
from bench_plan_default import demo_world
from numba import njit

from robot_collision import CollisionChecker, PlanningError, RobotModel, default_robot_paths
from robot_collision.collision.block_kernels import block_workspace, edge_valid_blocked
from robot_collision.collision.certified import edges_certified_packed
from robot_collision.planning.rrt import BiRRT, RRTOptions

TIME_LIMIT = 1.0
DENSE_PER_RADIAN = 2048.0
SHORTEN_ITERATIONS = 50
MODES = ("discrete", "certified")


def dense(path: np.ndarray, per_radian: float = DENSE_PER_RADIAN) -> np.ndarray:
    out = [path[:1]]
    for a, b in itertools.pairwise(path):
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) * per_radian)))
        out.append(a + (b - a) * np.linspace(0.0, 1.0, steps + 1)[1:, None])
    return np.concatenate(out)


def mesh_panda() -> RobotModel:
    return RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms) if ms else np.asarray([np.nan])
    return {"median_ms": round(float(np.median(a)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3)}


def _problems(robot_name: str, per_set: int) -> list[tuple[Any, Any, list[Any], int]]:
    """(start, goal, world, seed) of the benchmark problems of one robot."""
    if robot_name == "default_arm":
        urdf, srdf = default_robot_paths()
        robot = RobotModel.from_urdf(urdf, srdf=srdf)
        world = demo_world()
        checker = CollisionChecker(robot)
        rng = np.random.default_rng(7)
        out: list[tuple[Any, Any, list[Any], int]] = []
        while len(out) < 4 * per_set:
            a, b = robot.random_configuration(rng), robot.random_configuration(rng)
            if checker.is_valid(a, world) and checker.is_valid(b, world):
                out.append((a, b, world, len(out)))
        return out
    problems = mbm.load_problems()["problems"]
    out = []
    for name, plist in problems.items():
        for p in plist[:per_set]:
            if p.get("valid", True):
                out.append((p["start"], p["goals"][0], mbm.world_of(p, name), int(p["index"])))
    return out


def _robot(name: str) -> RobotModel:
    if name == "sphere_panda":
        return mbm.panda()
    if name == "mesh_panda":
        return mesh_panda()
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf=srdf)


def plans(robot_name: str, per_set: int) -> dict[str, Any]:
    robot = _robot(robot_name)
    checker = CollisionChecker(robot)
    probs = _problems(robot_name, per_set)
    # warm-up: compile (or load) every kernel once, both modes
    s0, g0, w0, _ = probs[0]
    for mode in MODES:
        warm = BiRRT(checker, RRTOptions(seed=0, edge_validation=mode), w0)  # type: ignore[arg-type]
        with contextlib.suppress(PlanningError):
            warm.shorten(warm.plan(s0, g0, time_limit=5.0).waypoints, 5)
    res: dict[str, dict[str, Any]] = {m: {"ms": [], "ok": 0, "invalid": 0, "short_invalid": 0,
                                          "short_ms": []} for m in MODES}
    for start, goal, world, seed in probs:
        for mode in MODES:
            r = res[mode]
            planner = BiRRT(checker, RRTOptions(seed=seed, edge_validation=mode),  # type: ignore[arg-type]
                            world)
            t0 = time.perf_counter()
            try:
                out = planner.plan(start, goal, time_limit=TIME_LIMIT)
            except PlanningError:
                r["ms"].append(TIME_LIMIT * 1e3)
                continue
            r["ms"].append((time.perf_counter() - t0) * 1e3)
            r["ok"] += 1
            if not checker.is_valid_batch(dense(out.waypoints), world).all():
                r["invalid"] += 1
            t0 = time.perf_counter()
            short = planner.shorten(out.waypoints, SHORTEN_ITERATIONS)
            r["short_ms"].append((time.perf_counter() - t0) * 1e3)
            if not checker.is_valid_batch(dense(short), world).all():
                r["short_invalid"] += 1
    summary: dict[str, Any] = {"problems": len(probs)}
    for mode in MODES:
        r = res[mode]
        summary[mode] = {"success_rate": round(r["ok"] / max(len(probs), 1), 4),
                         **_stats(r["ms"]),
                         "paths_in_collision": r["invalid"],
                         "shortened_ms_median": _stats(r["short_ms"])["median_ms"],
                         "shortened_in_collision": r["short_invalid"]}
    summary["median_ratio_certified_over_discrete"] = round(
        summary["certified"]["median_ms"] / max(summary["discrete"]["median_ms"], 1e-9), 2)
    return summary


@njit(cache=True)
def _discrete_edges(Q0, D, BF, BI, W, RI, out):  # type: ignore[no-untyped-def]
    for k in range(Q0.shape[0]):
        length = np.sqrt((D[k] ** 2).sum())
        steps = max(1, int(np.ceil(length * 32.0)))
        out[k] = edge_valid_blocked(Q0[k], D[k], steps, 0, BF, BI, W, RI, True) > 0


def edges(robot_name: str, n_edges: int) -> dict[str, Any]:
    robot = _robot(robot_name)
    checker = CollisionChecker(robot)
    problems = mbm.load_problems()["problems"]
    rng = np.random.default_rng(1)
    out: dict[str, Any] = {}
    for length in (0.3, 1.0):
        t_disc = t_cert = 0.0
        n_free_disc = n_cert = evals = 0
        for name, plist in problems.items():
            world = mbm.world_of(plist[0], name)
            sc = checker._prepare(world)
            Q0 = np.ascontiguousarray(
                [robot.random_configuration(rng) for _ in range(n_edges)])
            D = rng.normal(size=Q0.shape)
            D = np.ascontiguousarray(D / np.linalg.norm(D, axis=1)[:, None] * length)
            free = np.zeros(n_edges, dtype=np.bool_)
            if sc.block is not None:
                W, RI = block_workspace(sc.block.BI)
                _discrete_edges(Q0[:2], D[:2], sc.block.BF, sc.block.BI, W, RI, free[:2])
                t0 = time.perf_counter()
                _discrete_edges(Q0, D, sc.block.BF, sc.block.BI, W, RI, free)
                t_disc += time.perf_counter() - t0
            else:  # (meshes: the scalar kernel through is_motion_valid)
                t0 = time.perf_counter()
                for k in range(n_edges):
                    free[k] = checker.is_motion_valid(Q0[k], Q0[k] + D[k], world,
                                                      mode="discrete")
                t_disc += time.perf_counter() - t0
            n_free_disc += int(free.sum())
            # certified = the discrete check, then conservative advancement of the free edges
            idx = np.flatnonzero(free)
            cert = np.zeros(len(idx), dtype=np.int64)
            BF, BI = ((sc.block.BF, sc.block.BI) if sc.block is not None
                      else (np.zeros(0), np.zeros(0, dtype=np.int64)))
            edges_certified_packed(Q0[idx[:2]], D[idx[:2]], sc.F, sc.I, BF, BI, True, 0.0,
                                   cert[:2])
            t0 = time.perf_counter()
            evals += int(edges_certified_packed(np.ascontiguousarray(Q0[idx]),
                                                np.ascontiguousarray(D[idx]), sc.F, sc.I, BF, BI,
                                                True, 0.0, cert))
            t_cert += time.perf_counter() - t0
            n_cert += int((cert == 1).sum())
        total = n_edges * len(problems)
        out[f"len_{length}"] = {
            "edges": total,
            "discrete_edges_per_s": round(total / t_disc),
            "certified_edges_per_s": round(total / (t_disc + t_cert)),
            "discrete_free": n_free_disc,
            "certified_free": n_cert,
            "evaluations_per_certified_edge": round(evals / max(n_free_disc, 1), 1),
        }
    return out


def run(quick: bool = False) -> dict[str, Any]:
    if not mbm.available():
        return {"skipped": f"no problems at {mbm.MBM_DIR}"}
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "plans": {
            "sphere_panda": plans("sphere_panda", 5 if quick else 100),
            "mesh_panda": plans("mesh_panda", 2 if quick else 15),
            "default_arm": plans("default_arm", 3 if quick else 25),
        },
        "edges_one_thread": {
            "sphere_panda": edges("sphere_panda", 100 if quick else 2000),
            "mesh_panda": edges("mesh_panda", 20 if quick else 200),
        },
        "dense_per_radian": DENSE_PER_RADIAN,
        "time_limit_s": TIME_LIMIT,
    }
    out["total_s"] = round(time.perf_counter() - t0, 1)
    return out
