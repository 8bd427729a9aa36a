"""Velocity-filter tick cost on the 59-sphere Panda in MotionBenchMaker cage problem 1.

A 500 Hz command stream (dt = 2 ms) alternates segments that drive straight at the closest
obstacle (−J of the closest robot-world pair at the velocity limits), straight into the
closest self pair, and sweep around (sinusoids on every joint); q ← q + q̇ dt. Per tick it times
:meth:`VelocityFilter.filter` in-process (FK + clearance + QP) and, outside the timed region,
checks the new configuration with an independent exhaustive evaluation.

Keys: ``tick_us_median``/``tick_us_p99`` (µs, whole filter call), ``qp_us_median`` (µs, QP build
and solve), ``clearance_us_median`` (µs, clearance table), ``constrained_ticks`` (ticks where a
constraint changed the command), ``min_distance`` (m, smallest padded signed distance of any
pair that started outside its safety distance; ``min_distance_env``/``min_distance_self``
split it), ``violations`` (ticks where a pair came closer than min(start, d_s) − 1 mm),
``faults`` (ticks with zero output); the same with acceleration limits of 10 rad/s² on every
joint as ``accel_*``, plus ``accel_relaxed_ticks`` (ticks where the clearance needed more than
the limits: reported by the filter) and ``accel_max_step_ratio`` (largest |Δq̇_i| / (a dt) of
the other ticks: ≤ 1),
``ros_latency_p99_ms`` (from ``bench_filter_ros`` when present, else None).
"""

from __future__ import annotations

import time
from typing import Any

import mbm
import numpy as np

from robot_collision import CollisionChecker
from robot_collision.control.velocity_filter import FilterOptions, VelocityFilter

DT = 0.002
TOL = 1e-3
ACCEL = 10.0  # rad/s², every joint, for the accel_* keys


def _closest(checker: CollisionChecker, q: np.ndarray, world: list, kind: int) -> np.ndarray | None:
    tab = checker.clearance(q, world, np.inf)
    ok = (tab.kinds == kind) & (np.abs(tab.jacobians).max(axis=1) > 1e-6)
    if not ok.any():
        return None
    return tab.jacobians[np.flatnonzero(ok)[np.argmin(tab.distances[ok])]]  # type: ignore[no-any-return]


def _loop(robot: Any, world: list, q: np.ndarray, opts: FilterOptions, ticks: int
          ) -> dict[str, Any]:
    """The adversarial 500 Hz command stream of the module docstring against one filter."""
    filt = VelocityFilter(CollisionChecker(robot), opts, world=world)
    judge = CollisionChecker(robot)
    adversary = CollisionChecker(robot)
    vmax = robot.velocity_limits
    rng = np.random.default_rng(0)
    acc = filt.acceleration_limits

    for _ in range(50):  # warm-up: numba dispatch, caches
        filt.filter(q, np.zeros(robot.num_joints), DT)
    filt.reset()  # the loop starts from rest

    s0 = judge.check(q, world, exhaustive=True).signed
    is_self = np.zeros(s0.shape, dtype=bool)
    is_self[:, : len(judge.row_names)] = True
    ds = np.where(is_self, opts.safety_distance_self, opts.safety_distance_env)
    floor = np.minimum(s0, ds) - TOL
    outside = s0 >= ds
    phase = rng.uniform(0, 2 * np.pi, robot.num_joints)
    freq = rng.uniform(0.3, 1.0, robot.num_joints)

    tick, qp, clr = np.empty(ticks), np.empty(ticks), np.empty(ticks)
    solves = faults = violations = relaxed = 0
    step = 0.0  # largest |Δq̇_i| / (a_i dt) of the ticks within the acceleration limits
    low_env = low_self = np.inf
    towards: np.ndarray | None = None
    prev = np.zeros(robot.num_joints)
    for t in range(ticks):
        seg = (t // 250) % 4  # 0.5 s segments: obstacle, around, self, obstacle + around
        if t % 250 == 0:
            towards = None
        if seg == 1:
            cmd = 0.8 * vmax * np.sin(2 * np.pi * freq * t * DT + phase)
        else:
            if towards is None or t % 5 == 0:
                J = _closest(adversary, q, world, 0 if seg == 2 else 1)
                towards = -J / np.max(np.abs(J) / vmax) if J is not None else np.zeros_like(q)
            cmd = towards.copy()
            if seg == 3:
                cmd += 0.4 * vmax * np.sin(2 * np.pi * freq * t * DT + phase)
        t0 = time.perf_counter()
        res = filt.filter(q, cmd, DT)
        tick[t] = time.perf_counter() - t0
        qp[t] = res.solve_time
        clr[t] = res.clearance_time
        solves += res.ok and bool(res.active_constraints)
        faults += not res.ok
        if "acceleration:relaxed" in res.active_constraints:
            relaxed += 1
        elif res.ok:
            step = max(step, float(np.max(np.abs(res.velocity - prev) / (acc * DT))))
        prev = res.velocity
        q = q + res.velocity * DT
        s = judge.check(q, world, exhaustive=True).signed
        violations += bool((s < floor).any())
        low_env = min(low_env, float(s[outside & ~is_self].min(initial=np.inf)))
        low_self = min(low_self, float(s[outside & is_self].min(initial=np.inf)))
    return {
        "tick_us_median": round(float(np.median(tick)) * 1e6, 1),
        "tick_us_p99": round(float(np.percentile(tick, 99)) * 1e6, 1),
        "qp_us_median": round(float(np.median(qp)) * 1e6, 1),
        "clearance_us_median": round(float(np.median(clr)) * 1e6, 1),
        "constrained_ticks": int(solves),
        "min_distance": round(min(low_env, low_self), 5),
        "min_distance_env": round(low_env, 5),
        "min_distance_self": round(low_self, 5),
        "violations": int(violations),
        "faults": int(faults),
        "relaxed_ticks": int(relaxed),
        "max_step_ratio": round(step, 6),
    }


def run(quick: bool = False) -> dict[str, Any]:
    ticks = 500 if quick else 5000
    if not mbm.available():
        return {"skipped": "MotionBenchMaker data missing"}
    prob = mbm.load_problems()["problems"]["cage"][0]
    robot = mbm.panda()
    world = mbm.world_of(prob, "cage")
    q = np.array(prob["start"], dtype=float)
    plain = _loop(robot, world, q, FilterOptions(), ticks)
    out: dict[str, Any] = {"robot": "panda (59 spheres)", "world": "mbm cage #1",
                           "ticks": ticks, "dt_s": DT}
    out.update({k: v for k, v in plain.items() if k not in ("relaxed_ticks", "max_step_ratio")})
    accel = _loop(robot, world, q, FilterOptions(acceleration_limits=(ACCEL,)), ticks)
    out.update({f"accel_{k}": v for k, v in accel.items()})
    # ---- hook: the ROS node's end-to-end latency, measured by benchmarks/bench_filter_ros.py
    try:
        from bench_filter_ros import ros_latency  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        out["ros_latency_p99_ms"] = None
    else:
        out.update(ros_latency(quick))
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run()))
