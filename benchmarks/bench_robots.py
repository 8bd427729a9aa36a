"""Real robots (example-robot-data) against pinocchio + coal in the same process.

Per robot (every corpus URDF with collision geometry that loads; ``--quick``: the oracle robots
of issue 13 only): ``load_s`` (``RobotModel.from_urdf`` with its SRDF), ``is_valid_us`` (one
boolean self-collision check from Python, mean over random configurations within the limits,
median of repeats) and ``coal_us`` (``pin.computeCollisions`` stop-at-first-collision on the
same link pairs, coal's convex hulls of the same meshes, same configurations), ``ratio``
(ours / coal; issue 13 target <= 1 on every robot), ``colliding`` (fraction of the random
configurations in collision).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import robot_corpus as rc

from robot_collision import CollisionChecker, RobotModel

# URDFs whose SRDF is not named after them (relative to robots/)
_SRDF_OF = {
    "ur_description/urdf/ur5_robot.urdf": "ur_description/srdf/ur5.srdf",
    "panda_description/urdf/panda_collision.urdf": "panda_description/srdf/panda.srdf",
}


def _corpus_entries(quick: bool) -> list[tuple[str, Any, Any]]:
    """(name, urdf path, srdf path or None) of the robots to measure."""
    if quick:
        return [(n, r.urdf_path(), r.srdf_path()) for n, r in rc.ROBOTS.items()]
    root = rc.corpus_root()
    assert root is not None
    out = []
    for urdf in rc.all_urdfs():
        name = str(urdf.relative_to(root / "robots"))
        srdfs = sorted((urdf.parent.parent / "srdf").glob("*.srdf"))
        same = [p for p in srdfs if p.stem == urdf.stem]
        if name in _SRDF_OF:
            srdf = root / "robots" / _SRDF_OF[name]
        elif same or len(srdfs) == 1:
            srdf = (same or srdfs)[0]  # named after the URDF, or the package's only SRDF
        else:
            srdf = None
        out.append((name, urdf, srdf))
    return out


def _load(urdf: Any, srdf: Any) -> RobotModel:
    try:
        return RobotModel.from_urdf(urdf, srdf=srdf, package_dirs=rc.package_dirs())
    except Exception:
        if srdf is None:
            raise
        return RobotModel.from_urdf(urdf, package_dirs=rc.package_dirs())


def _timed_mean_us(fn: Any, Q: np.ndarray) -> float:
    t0 = time.perf_counter()
    for q in Q:
        fn(q)
    return (time.perf_counter() - t0) / len(Q) * 1e6


def measure_robot(urdf: Any, srdf: Any, n_configs: int, repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    robot = _load(urdf, srdf)
    load_s = time.perf_counter() - t0
    shapes = [s for n in robot.link_names for s, _ in robot.collision_geometry(n)]
    res: dict[str, Any] = {
        "load_s": round(load_s, 3),
        "joints": robot.num_joints,
        "shapes": len(shapes),
        "max_hull_vertices": max([len(s.vertices()) for s in shapes] or [0]),
    }
    checker = CollisionChecker(robot)
    oracle = rc.PinOracle(robot, checker, urdf)
    res["pairs"] = len(oracle.pairs)
    if not oracle.pairs:
        return res
    rng = np.random.default_rng(0)
    Q = np.array([robot.random_configuration(rng) for _ in range(n_configs)])
    valid = np.array([checker.is_valid(q) for q in Q])  # also warms up
    ref = np.array([not oracle.in_collision(q) for q in Q])
    ours, theirs = [], []
    for _ in range(repeats):  # interleaved, so that machine noise hits both alike
        ours.append(_timed_mean_us(checker.is_valid, Q))
        theirs.append(_timed_mean_us(oracle.in_collision, Q))
    res["is_valid_us"] = round(float(np.median(ours)), 2)
    res["coal_us"] = round(float(np.median(theirs)), 2)
    res["ratio"] = round(res["is_valid_us"] / res["coal_us"], 3)
    res["colliding"] = round(float(1.0 - valid.mean()), 3)
    res["disagree"] = int(np.sum(valid != ref))
    return res


def run(quick: bool = False) -> dict:
    n_configs = 200 if quick else 500
    repeats = 3 if quick else 7
    robots: dict[str, Any] = {}
    for name, urdf, srdf in _corpus_entries(quick):
        try:
            robots[name] = measure_robot(urdf, srdf, n_configs, repeats)
        except Exception as exc:  # not loadable (yet): say why
            robots[name] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
        r = robots[name]
        if "ratio" in r:
            print(
                f"  {name}: load {r['load_s']} s, is_valid {r['is_valid_us']} us, coal "
                f"{r['coal_us']} us, ratio {r['ratio']}, hull <= {r['max_hull_vertices']} "
                f"vertices, {r['pairs']} pairs, colliding {r['colliding']}",
                flush=True,
            )
    ratios = [r["ratio"] for r in robots.values() if "ratio" in r]
    return {
        "robots": robots,
        "measured": len(ratios),
        "worst_ratio": max(ratios) if ratios else None,
        "disagreements": sum(r.get("disagree", 0) for r in robots.values()),
    }
