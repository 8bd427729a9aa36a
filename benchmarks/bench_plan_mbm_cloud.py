"""BiRRT on the MotionBenchMaker Panda problems with every obstacle replaced by surface points.

Each obstacle of a problem (boxes, capsules -- boxes in the ``box`` set -- and spheres; see
``mbm.world_of``) is sampled on its surface at most 1 cm apart (``SPACING``; box faces on a
grid including edges and corners, round surfaces on rings), all points of a problem form one
``PointCloud`` of radius 0. Per problem: the cloud's index build (``build_ms``), then
``BiRRT.plan`` exactly as in ``bench_plan_mbm`` (same start, goal, seed, options, 1 s limit),
and in the same run the same problem planned against the primitives. Every returned path is
resampled at 32 points per radian and re-checked against the original primitives with a
3 mm tolerance (padding -3 mm: points 1 cm apart let a 1.2 cm sphere sink up to 2.3 mm between
them) and against the cloud itself.
"""

from __future__ import annotations

import math
import time
from typing import Any

import mbm
import numpy as np
from bench_plan_mbm import TIME_LIMIT, dense

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    PlanningError,
    PointCloud,
    Sphere,
    WorldObject,
)
from robot_collision.planning.rrt import BiRRT, RRTOptions

SPACING = 0.01
TOLERANCE = 0.003


def _grid(lo: float, hi: float) -> np.ndarray:
    n = max(1, math.ceil((hi - lo) / SPACING))
    return np.linspace(lo, hi, n + 1)


def _ring_points(radius: float, z: float) -> np.ndarray:
    if radius < 1e-9:
        return np.array([[0.0, 0.0, z]])
    n = max(3, math.ceil(2 * math.pi * radius / SPACING))
    a = np.arange(n) * (2 * math.pi / n)
    return np.stack([radius * np.cos(a), radius * np.sin(a), np.full(n, z)], axis=1)


def _cap(radius: float, z0: float, sign: float) -> list[np.ndarray]:
    """Hemisphere of ``radius`` on the plane z = z0 towards ``sign`` (rings 1 cm apart)."""
    n = max(1, math.ceil(0.5 * math.pi * radius / SPACING))
    return [_ring_points(radius * math.cos(t), z0 + sign * radius * math.sin(t))
            for t in np.linspace(0.0, 0.5 * math.pi, n + 1)]


def surface_points(obj: WorldObject) -> np.ndarray:
    """Points on the surface of a box, capsule or sphere, <= SPACING apart (base frame)."""
    s = obj.shape
    if isinstance(s, Box):
        h = np.array([s.x, s.y, s.z]) / 2
        faces = []
        for ax in range(3):
            u, v = [a for a in range(3) if a != ax]
            U, V = np.meshgrid(_grid(-h[u], h[u]), _grid(-h[v], h[v]))
            for sign in (-1.0, 1.0):
                P = np.zeros((U.size, 3))
                P[:, u], P[:, v], P[:, ax] = U.ravel(), V.ravel(), sign * h[ax]
                faces.append(P)
        local = np.concatenate(faces)
    elif isinstance(s, Capsule):
        half = s.length / 2
        rings = [_ring_points(s.radius, z) for z in _grid(-half, half)]
        local = np.concatenate(rings + _cap(s.radius, half, 1.0) + _cap(s.radius, -half, -1.0))
    elif isinstance(s, Sphere):
        local = np.concatenate(_cap(s.radius, 0.0, 1.0) + _cap(s.radius, 0.0, -1.0))
    else:
        raise TypeError(f"no surface sampler for {type(s).__name__}")
    return local @ obj.pose[:3, :3].T + obj.pose[:3, 3]  # type: ignore[no-any-return]


def cloud_of(world: list[WorldObject]) -> np.ndarray:
    return np.concatenate([surface_points(o) for o in world])


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms) if ms else np.array([np.nan])
    return {"median_ms": round(float(np.median(a)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3),
            "max_ms": round(float(a.max()), 3)}


def run(quick: bool = False) -> dict[str, Any]:
    if not mbm.available():
        return {"skipped": f"no problems at {mbm.MBM_DIR}"}
    robot = mbm.panda()
    checker = CollisionChecker(robot)
    judge = CollisionChecker(robot, padding=-TOLERANCE)
    problems = mbm.load_problems()["problems"]
    # warm-up: compile (or load) every kernel once, clouds included
    p0 = problems["cage"][0]
    w0 = mbm.world_of(p0, "cage")
    for world in (w0, [WorldObject(PointCloud(cloud_of(w0)), np.eye(4), "cloud")]):
        warm = BiRRT(checker, RRTOptions(seed=0), world)
        warm.shorten(warm.plan(p0["start"], p0["goals"][0]).waypoints, 5)

    res: dict[str, dict[str, list[float]]] = {
        k: {"ms": [], "setup_ms": []} for k in ("cloud", "primitives")}
    build_ms: list[float] = []
    npoints: list[int] = []
    ok = {"cloud": 0, "primitives": 0}
    invalid = {"cloud": 0, "primitives": 0}
    invalid_vs_cloud = 0
    n_valid = 0
    per_set: dict[str, Any] = {}
    for name, plist in problems.items():
        chosen = plist[:5] if quick else plist
        set_ms: dict[str, list[float]] = {"cloud": [], "primitives": []}
        set_ok = {"cloud": 0, "primitives": 0}
        for p in chosen:
            if not p.get("valid", True):
                continue
            n_valid += 1
            prims = mbm.world_of(p, name)
            P = cloud_of(prims)
            npoints.append(len(P))
            t0 = time.perf_counter()
            cloud = PointCloud(P)
            cloud.index  # noqa: B018 - the structure build is what is timed
            build_ms.append((time.perf_counter() - t0) * 1e3)
            cworld = [WorldObject(cloud, np.eye(4), "cloud")]
            for kind, world in (("cloud", cworld), ("primitives", prims)):
                t0 = time.perf_counter()
                planner = BiRRT(checker, RRTOptions(seed=int(p["index"])), world)
                res[kind]["setup_ms"].append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                try:
                    path = planner.plan(p["start"], p["goals"][0], time_limit=TIME_LIMIT).waypoints
                except PlanningError:
                    res[kind]["ms"].append(TIME_LIMIT * 1e3)
                    set_ms[kind].append(TIME_LIMIT * 1e3)
                    continue
                ms = (time.perf_counter() - t0) * 1e3
                res[kind]["ms"].append(ms)
                set_ms[kind].append(ms)
                ok[kind] += 1
                set_ok[kind] += 1
                Q = dense(path)
                if not judge.is_valid_batch(Q, prims).all():
                    invalid[kind] += 1
                if kind == "cloud" and not checker.is_valid_batch(Q, cworld).all():
                    invalid_vs_cloud += 1
        per_set[name] = {
            kind: {"success_rate": round(set_ok[kind] / max(len(set_ms[kind]), 1), 4),
                   **_stats(set_ms[kind])}
            for kind in ("cloud", "primitives")}
    out: dict[str, Any] = {"quick": quick, "problems": n_valid}
    for kind in ("cloud", "primitives"):
        out[kind] = {
            "success_rate": round(ok[kind] / max(n_valid, 1), 4),
            **_stats(res[kind]["ms"]),
            "setup_ms_median": round(float(np.median(res[kind]["setup_ms"])), 3),
            "invalid_paths_vs_primitives_3mm": invalid[kind],
        }
    out["cloud"]["invalid_paths_vs_cloud"] = invalid_vs_cloud
    out["cloud"]["build_ms_median"] = round(float(np.median(build_ms)), 3)
    out["cloud"]["build_ms_max"] = round(float(np.max(build_ms)), 3)
    out["cloud"]["points_median"] = int(np.median(npoints))
    out["cloud"]["points_range"] = [int(np.min(npoints)), int(np.max(npoints))]
    out["per_set"] = per_set
    out["spacing_m"] = SPACING
    out["tolerance_m"] = TOLERANCE
    out["time_limit_s"] = TIME_LIMIT
    return out
