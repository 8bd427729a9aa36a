"""Compile (first run) or load (cached) every numba kernel of the package once, up front.

numba compiles on first call and caches on disk. A compile takes seconds and holds the GIL,
so the first call inside a running ROS process stalls every other callback of that process
(measured: joint states went stale while a node compiled). Call :func:`warm_up` before
starting time-critical work (the test suite does it once per session; ``python -m
robot_collision.tools.warmup`` fills the cache after installation).
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["warm_up"]


def warm_up() -> float:
    """Run every compiled path once on the default robot with one object of each shape kind.
    Returns the time taken (s)."""
    from .. import (
        Box,
        Capsule,
        CollisionChecker,
        Cylinder,
        Mesh,
        PointCloud,
        RobotModel,
        Sphere,
        WorldObject,
        default_robot_paths,
    )
    from ..collision.checker import PARALLEL_BATCH_MIN
    from ..collision.self_filter import robot_filter
    from ..control.velocity_filter import VelocityFilter
    from ..geometry.transforms import make_pose
    from ..planning.ik import solve_ik
    from ..planning.rrt import BiRRT, RRTOptions
    from ..planning.trajectory import time_parameterize

    t0 = time.perf_counter()
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    cube = np.array(
        [[x, y, z] for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)]
    )
    world = [
        WorldObject(Box(0.2, 0.2, 0.2), make_pose(np.eye(3), [0.0, -0.6, 0.3]), "box"),
        WorldObject(Sphere(0.05), make_pose(np.eye(3), [0.0, 0.6, 0.5]), "sphere"),
        WorldObject(Capsule(0.04, 0.3), make_pose(np.eye(3), [-0.5, 0.3, 0.4]), "capsule"),
        WorldObject(Cylinder(0.04, 0.3), make_pose(np.eye(3), [-0.5, -0.3, 0.4]), "cylinder"),
        WorldObject(Mesh(cube), make_pose(np.eye(3), [-0.3, 0.6, 0.9]), "mesh"),
        WorldObject(PointCloud.downsampled(cube * 2, 0.02, radius=0.01),
                    make_pose(np.eye(3), [0.5, 0.0, 0.9]), "cloud"),
    ]
    checker = CollisionChecker(robot)
    rng = np.random.default_rng(0)
    q0 = robot.home_configuration()
    Q = np.array([robot.random_configuration(rng) for _ in range(PARALLEL_BATCH_MIN)])
    checker.is_valid(q0, world)
    checker.is_valid_batch(Q, world)
    checker.is_valid_batch(Q[:8], world)
    checker.is_motion_valid(q0, Q[0], world)
    for q in Q[:20]:
        checker.check(q, world, exhaustive=True)
        checker.check(q, world, exhaustive=False)
        checker.clearance(q, world, influence_distance=0.2)
    robot_filter(robot, cube + 0.3, q0, 0.02)
    filt = VelocityFilter(checker, world=world)
    filt.filter(q0, np.full(robot.num_joints, 0.1), 0.002)
    planner = BiRRT(checker, RRTOptions(seed=1), world=world)
    planner.warmup()
    goal = robot.named_configuration("ready")
    path = planner.plan(q0, goal).waypoints
    path = planner.shorten(path, 10)
    time_parameterize(path, robot, checker=checker, world=world)
    solve_ik(robot, robot.link_transforms(goal)["tool"], "tool", q0, checker=checker, world=world)
    return time.perf_counter() - t0


if __name__ == "__main__":
    print(f"robot_collision: compiled kernels ready in {warm_up():.1f} s")
