"""BiRRT, shortening and time parameterization on the embedded default arm
(``urdf/default_arm.urdf`` + SRDF) in a demo world: a floor, a crate in front of the arm, a
pole and a panel.

Problems: pairs of random collision-free configurations (fixed seed), each planned once with a
1 s limit (seed = problem index); plus goal-region problems (the tool pointing down inside a
10 cm box beside the crate). Every path and shortened path is re-checked independently at 32
configurations per radian with ``is_valid_batch``; goal-region paths must end inside the region
(FK). The shortened path is then timed (TOPP-RA, velocity limits from the URDF, 2 rad/s^2) with
the spline collision-checked against the world; its samples (every 10 ms) are re-checked too.
Those samples fall between the configurations the planner checked: with
``edge_validation="discrete"`` a path that only grazes an obstacle between two checks
(sub-millimetre here, no padding) shows up as an invalid trajectory with its penetration depth
(``max_penetration_mm``); the default certified edges and trajectory checks (issue 23) prove the
whole motion free.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    PlanningError,
    RobotModel,
    WorldObject,
    default_robot_paths,
)
from robot_collision.geometry.transforms import make_pose
from robot_collision.planning.ik import WorkspaceGoalRegion
from robot_collision.planning.rrt import BiRRT, RRTOptions, path_length
from robot_collision.planning.trajectory import time_parameterize

TIME_LIMIT = 1.0


def demo_world() -> list[WorldObject]:
    """Floor, crate, pole and panel around the default arm (base frame, m)."""
    eye = np.eye(3)
    return [
        WorldObject(Box(1.6, 1.6, 0.04), make_pose(eye, [0.0, 0.0, -0.03]), "floor"),
        WorldObject(Box(0.3, 0.8, 0.5), make_pose(eye, [0.65, 0.0, 0.25]), "crate"),
        WorldObject(Capsule(0.05, 0.8), make_pose(eye, [0.0, 0.6, 0.4]), "pole"),
        WorldObject(Box(0.5, 0.05, 0.5), make_pose(eye, [-0.4, -0.45, 0.6]), "panel"),
    ]


def demo_region() -> WorkspaceGoalRegion:
    ref = make_pose(np.diag([1.0, -1.0, -1.0]), [0.0, -0.5, 0.5])  # tool pointing down
    bounds = np.array([[-0.05, 0.05], [-0.05, 0.05], [0.0, 0.1], [-np.pi, np.pi], [0, 0], [0, 0]])
    return WorkspaceGoalRegion("tool", ref, bounds)


def _dense(path: np.ndarray, ppr: float = 32.0) -> np.ndarray:
    out = [path[:1]]
    for a, b in itertools.pairwise(path):
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) * ppr)))
        out.append(a + (b - a) * np.linspace(0.0, 1.0, steps + 1)[1:, None])
    return np.concatenate(out)


def _ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median_ms": float("nan"), "p95_ms": float("nan")}
    a = np.asarray(values)
    return {"median_ms": round(float(np.median(a)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3)}


def run(quick: bool = False) -> dict[str, Any]:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf)
    checker = CollisionChecker(robot)
    world = demo_world()
    n_pairs = 8 if quick else 100
    rng = np.random.default_rng(2024)
    free: list[np.ndarray] = []
    while len(free) < 2 * n_pairs + 1:
        Q = np.array([robot.random_configuration(rng) for _ in range(64)])
        free.extend(Q[checker.is_valid_batch(Q, world)])
    # warm-up (compile or load every kernel)
    warm = BiRRT(checker, RRTOptions(seed=0), world)
    wp = warm.plan(free[-1], free[-2]).waypoints
    time_parameterize(warm.shorten(wp, 5), robot, checker=checker, world=world)

    plan_ms: list[float] = []
    short_ms: list[float] = []
    timing_ms: list[float] = []
    ratios: list[float] = []
    durations: list[float] = []
    ok = invalid = short_invalid = traj_invalid = fallbacks = 0
    depth = 0.0
    for i in range(n_pairs):
        planner = BiRRT(checker, RRTOptions(seed=i), world)
        t0 = time.perf_counter()
        try:
            res = planner.plan(free[2 * i], free[2 * i + 1], time_limit=TIME_LIMIT)
        except PlanningError:
            plan_ms.append(TIME_LIMIT * 1e3)
            continue
        plan_ms.append((time.perf_counter() - t0) * 1e3)
        ok += 1
        invalid += int(not checker.is_valid_batch(_dense(res.waypoints), world).all())
        t0 = time.perf_counter()
        short = planner.shorten(res.waypoints, 100)
        short_ms.append((time.perf_counter() - t0) * 1e3)
        short_invalid += int(not checker.is_valid_batch(_dense(short), world).all())
        ratios.append(path_length(short) / max(path_length(res.waypoints), 1e-12))
        t0 = time.perf_counter()
        traj = time_parameterize(short, robot, checker=checker, world=world)
        timing_ms.append((time.perf_counter() - t0) * 1e3)
        durations.append(traj.duration)
        fallbacks += int(traj.method != "toppra")
        hit = ~checker.is_valid_batch(traj.positions, world)
        if hit.any():
            traj_invalid += 1
            depth = max(depth, max(-checker.min_distance(q, world) for q in traj.positions[hit]))

    region = demo_region()
    start = free[0]
    tool = robot.link_index("tool")
    wgr_ms: list[float] = []
    wgr_ok = wgr_invalid = wgr_outside = 0
    for i in range(4 if quick else 20):
        planner = BiRRT(checker, RRTOptions(seed=i), world)
        t0 = time.perf_counter()
        try:
            res = planner.plan(start, region, time_limit=TIME_LIMIT)
        except PlanningError:
            wgr_ms.append(TIME_LIMIT * 1e3)
            continue
        wgr_ms.append((time.perf_counter() - t0) * 1e3)
        wgr_ok += 1
        wgr_invalid += int(not checker.is_valid_batch(_dense(res.waypoints), world).all())
        wgr_outside += int(not region.contains(robot.link_poses(res.waypoints[-1])[tool], 1e-3))
    return {
        "quick": quick,
        "problems": n_pairs,
        "success_rate": round(ok / n_pairs, 4),
        **_ms(plan_ms),
        "invalid_paths": invalid,
        "shortened": {**_ms(short_ms), "invalid_paths": short_invalid,
                      "length_ratio_mean": round(float(np.mean(ratios)), 4) if ratios else None},
        "time_parameterization": {**_ms(timing_ms), "invalid_trajectories": traj_invalid,
                                  "max_penetration_mm": round(depth * 1e3, 4),
                                  "linear_fallbacks": fallbacks,
                                  "duration_s_median": round(float(np.median(durations)), 3)
                                  if durations else None},
        "goal_region": {"problems": len(wgr_ms), "success_rate": round(wgr_ok / len(wgr_ms), 4),
                        **_ms(wgr_ms), "invalid_paths": wgr_invalid,
                        "ends_outside_region": wgr_outside},
    }
