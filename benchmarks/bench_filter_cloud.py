"""Velocity-filter tick cost with a 50,000-point cloud as the world.

The command stream, robot and judge of ``bench_filter`` (59-sphere Panda, cage problem 1's
start, dt = 2 ms, 500 Hz, commands straight at the closest obstacle and into self-collision and
sweeps; default ``FilterOptions``), with the world replaced by the cage's obstacles sampled on
their surfaces every 1 cm (``bench_plan_mbm_cloud.cloud_of``) and subsampled to 50,000 points
(radius 0), one ``PointCloud``. Keys as in ``bench_filter`` (``tick_us_median`` is the whole
filter call: FK, clearance against the cloud, QP); violations and minimum distances are judged
against the cloud by exhaustive checks.
"""

from __future__ import annotations

from typing import Any

import mbm
import numpy as np
from bench_filter import DT, _loop
from bench_plan_mbm_cloud import cloud_of

from robot_collision import PointCloud, WorldObject
from robot_collision.control.velocity_filter import FilterOptions

N_POINTS = 50_000


def run(quick: bool = False) -> dict[str, Any]:
    if not mbm.available():
        return {"skipped": "MotionBenchMaker data missing"}
    ticks = 500 if quick else 5000
    prob = mbm.load_problems()["problems"]["cage"][0]
    full = cloud_of(mbm.world_of(prob, "cage"))
    P = full[np.random.default_rng(0).choice(len(full), N_POINTS, replace=False)]
    world = [WorldObject(PointCloud(P), np.eye(4), "cloud")]
    q = np.array(prob["start"], dtype=float)
    out: dict[str, Any] = {"robot": "panda (59 spheres)",
                           "world": f"mbm cage #1 as {N_POINTS} surface points",
                           "ticks": ticks, "dt_s": DT, "points": N_POINTS}
    out.update(_loop(mbm.panda(), world, q, FilterOptions(), ticks))
    return out
