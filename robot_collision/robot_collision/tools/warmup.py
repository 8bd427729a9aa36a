"""Compile (first run) or load (cached) every numba kernel of the package once, up front.

numba compiles on first call and caches on disk. A compile takes seconds and holds the GIL,
so the first call inside a running ROS process stalls every other callback of that process
(measured: joint states went stale while a node compiled). Call :func:`warm_up` before
starting time-critical work (the test suite does it once per session; ``python -m
robot_collision.tools.warmup`` fills the cache after installation). On a cold cache,
:func:`warm_up_in_processes` first compiles the independent parts in one process each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

__all__ = [
    "WARM_UP_PARTS",
    "KernelCacheStats",
    "cache_is_cold",
    "kernel_cache_stats",
    "warm_up",
    "warm_up_in_processes",
]

# a robot made of spheres: scenes with it run on the 8-configuration kernels
# (collision.block_kernels), which the default robot (capsules, boxes) never reaches
_SPHERE_ROBOT = """<robot name="spheres">
  <link name="base"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="arm"><collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.04"/>
    </geometry></collision></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def _mesh_robot() -> Any:
    """A robot whose links carry every shape kind, meshes both small (plain vertex arrays)
    and large (hulls above SUPPORT_BLOCK_MIN_VERTICES: support blocks), as real mesh robots
    do: the default robot (capsules and boxes) never reaches those kernel paths, and the first
    check of a mesh robot compiled them for minutes (issue 21)."""
    from .. import Box, Capsule, Cylinder, Mesh, RobotModel, Sphere
    from ..geometry.transforms import make_pose

    links = "".join(f'<link name="l{i}"/>' for i in range(5))
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
        f'<origin xyz="0 0 0.15"/><axis xyz="{"0 1 0" if i % 2 else "0 0 1"}"/>'
        '<limit lower="-2" upper="2" effort="1" velocity="1"/></joint>'
        for i in range(1, 5)
    )
    robot = RobotModel.from_urdf(f'<robot name="meshes">{links}{joints}</robot>')
    rng = np.random.default_rng(0)
    ball = rng.normal(size=(200, 3))
    ball = 0.06 * ball / np.linalg.norm(ball, axis=1, keepdims=True)
    cube = 0.05 * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    up = make_pose(np.eye(3), [0.0, 0.0, 0.07])
    robot.add_collision("l0", Mesh(ball * 2))
    robot.add_collision("l1", Mesh(cube), up)
    robot.add_collision("l1", Sphere(0.04))
    robot.add_collision("l2", Mesh(ball), up)
    robot.add_collision("l2", Capsule(0.03, 0.1))
    robot.add_collision("l3", Box(0.06, 0.06, 0.12), up)
    robot.add_collision("l3", Mesh(ball * 0.8))
    robot.add_collision("l4", Cylinder(0.03, 0.1), up)
    robot.add_collision("l4", Mesh(cube * 0.8))
    return robot


def _warm_mesh_robot(parts: Sequence[str], world: list[Any]) -> None:
    """What ``check-model``, ``generate-srdf`` and a node do first with a mesh robot, with and
    without world objects."""
    from .. import CollisionChecker
    from ..collision.checker import PARALLEL_BATCH_MIN

    robot = _mesh_robot()
    checker = CollisionChecker(robot)
    rng = np.random.default_rng(1)
    Q = np.array([robot.random_configuration(rng) for _ in range(PARALLEL_BATCH_MIN)])
    q0 = robot.home_configuration()
    for w in ([], world):
        if "collision" in parts:
            checker.check(q0, w, exhaustive=True)
            checker.check(Q[0], w, exhaustive=False)
            checker.clearance(Q[1], w, influence_distance=0.2)
        if "planning" in parts:
            checker.is_valid(q0, w)
            checker.is_valid_batch(Q, w)
            checker.is_valid_batch(Q[:8], w)
            checker.is_motion_valid(q0, Q[0], w)
    if "planning" in parts:
        from ..planning.rrt import BiRRT, RRTOptions

        BiRRT(checker, RRTOptions(seed=1), world=world).warmup()
    if "collision" in parts:
        from ..collision.srdf_generation import SRDFGenerationOptions, generate_disabled_pairs

        generate_disabled_pairs(robot, SRDFGenerationOptions(samples=64, batch_size=32))


@dataclass(frozen=True)
class KernelCacheStats:
    """Counts over every numba-compiled function of the loaded ``robot_collision`` modules:
    ``loaded`` specialisations came from numba's on-disk cache, ``compiled`` ones were compiled
    in this process (cache misses); ``cache_dir`` is where one of them is cached (None before
    any kernel module is imported)."""

    loaded: int
    compiled: int
    cache_dir: Optional[str]

    def since(self, before: KernelCacheStats) -> KernelCacheStats:
        """The counts of what happened after ``before`` was taken."""
        return KernelCacheStats(self.loaded - before.loaded, self.compiled - before.compiled,
                                self.cache_dir or before.cache_dir)


def kernel_cache_stats() -> KernelCacheStats:
    """:class:`KernelCacheStats` of this process so far (cheap: reads numba's counters)."""
    from numba.core.dispatcher import Dispatcher

    seen: set[int] = set()
    loaded = compiled = 0
    cache_dir = None
    for name, module in list(sys.modules.items()):
        if not name.startswith("robot_collision.") or module is None:
            continue
        for value in list(vars(module).values()):
            if not isinstance(value, Dispatcher) or id(value) in seen:
                continue
            seen.add(id(value))
            stats = value.stats
            loaded += sum(stats.cache_hits.values())
            compiled += sum(stats.cache_misses.values())
            if cache_dir is None and stats.cache_path:
                cache_dir = str(stats.cache_path)
    return KernelCacheStats(loaded, compiled, cache_dir)


WARM_UP_PARTS = ("collision", "planning")
"""Independent parts of :func:`warm_up` (compiled in parallel processes at install time):
``collision`` = distances, clearance tables, exhaustive checks, the velocity filter;
``planning`` = validity checks (single, batched, motions), the planner, IK and timing."""


def _scene() -> tuple[Any, list[Any]]:
    """The default robot and one world object of each shape kind."""
    from .. import (
        Box,
        Capsule,
        Cylinder,
        Mesh,
        PointCloud,
        RobotModel,
        Sphere,
        WorldObject,
        default_robot_paths,
    )
    from ..geometry.transforms import make_pose

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
    return robot, world


def warm_up(parts: Sequence[str] = WARM_UP_PARTS) -> float:
    """Run every compiled path of ``parts`` (see :data:`WARM_UP_PARTS`) once on the default
    robot with one object of each shape kind, and on a robot whose links carry every shape
    kind (small and large meshes included), with and without world objects. Returns the time
    taken (s)."""
    from .. import CollisionChecker
    from ..collision.checker import PARALLEL_BATCH_MIN

    unknown = set(parts) - set(WARM_UP_PARTS)
    if unknown:
        raise ValueError(f"unknown warm-up parts {sorted(unknown)}; choose from {WARM_UP_PARTS}")
    t0 = time.perf_counter()
    robot, world = _scene()
    checker = CollisionChecker(robot)
    rng = np.random.default_rng(0)
    q0 = robot.home_configuration()
    Q = np.array([robot.random_configuration(rng) for _ in range(PARALLEL_BATCH_MIN)])
    if "planning" in parts:
        from ..planning.ik import solve_ik
        from ..planning.rrt import BiRRT, RRTOptions
        from ..planning.trajectory import time_parameterize

        checker.is_valid(q0, world)
        checker.is_valid_batch(Q, world)
        checker.is_valid_batch(Q[:8], world)
        checker.is_motion_valid(q0, Q[0], world)
        planner = BiRRT(checker, RRTOptions(seed=1), world=world)
        planner.warmup()
        goal = robot.named_configuration("ready")
        path = planner.plan(q0, goal).waypoints
        path = planner.shorten(path, 10)
        time_parameterize(path, robot, checker=checker, world=world)
        solve_ik(robot, robot.link_transforms(goal)["tool"], "tool", q0, checker=checker,
                 world=world)
        # the 8-configuration kernels (robots made of spheres only)
        from .. import RobotModel

        blocked = CollisionChecker(RobotModel.from_urdf(_SPHERE_ROBOT))
        near = [*world[:4], world[-1]]
        Qs = np.linspace(-3.0, 3.0, PARALLEL_BATCH_MIN)[:, None]
        blocked.is_valid(Qs[0], near)
        blocked.is_valid_batch(Qs, near)
        blocked.is_valid_batch(Qs[:8], near)
        blocked.is_motion_valid(Qs[0], Qs[-1], near)
        BiRRT(blocked, RRTOptions(seed=1), world=near).plan(Qs[10], Qs[-10])
    if "collision" in parts:
        from ..collision.self_filter import robot_filter
        from ..control.velocity_filter import VelocityFilter

        for q in Q[:20]:
            checker.check(q, world, exhaustive=True)
            checker.check(q, world, exhaustive=False)
            checker.clearance(q, world, influence_distance=0.2)
        robot_filter(robot, world[-1].shape.points + 0.3, q0, 0.02)
        filt = VelocityFilter(checker, world=world)
        filt.filter(q0, np.full(robot.num_joints, 0.1), 0.002)
    _warm_mesh_robot(parts, world)
    return time.perf_counter() - t0


def cache_is_cold() -> bool:
    """True when numba's cache holds no kernel of this package yet (no ``*.nbi`` index in the
    package's ``__pycache__`` folders, nor under ``NUMBA_CACHE_DIR`` when that is set), and
    kernels are compiled at all (not under ``NUMBA_DISABLE_JIT=1``)."""
    from ..kernel_cache import cached_kernel_files, jit_disabled

    if jit_disabled():
        return False
    roots = [Path(__file__).resolve().parents[1]]
    if os.environ.get("NUMBA_CACHE_DIR"):
        roots.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    return not any(next(cached_kernel_files(root, (".nbi",)), None)
                   for root in roots if root.is_dir())


def warm_up_in_processes(parts: Sequence[str] = WARM_UP_PARTS) -> float:
    """Compile ``parts`` into numba's on-disk cache in one process each (``python -m
    robot_collision.tools.warmup --part P``, importing this same package), concurrently: on
    2 cores about half the time of :func:`warm_up` on a cold cache. Returns the time taken
    (s); 0 at once under ``NUMBA_DISABLE_JIT=1`` (nothing to compile). A part whose process
    fails is left to the caller's :func:`warm_up` (in its own process; it compiles whatever
    is missing from the cache)."""
    from ..kernel_cache import jit_disabled

    if jit_disabled():
        return 0.0
    package_parent = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "robot_collision.tools.warmup", "--part",
                               part], env=env, stdout=subprocess.DEVNULL)
             for part in parts]
    for proc in procs:
        proc.wait()
    return time.perf_counter() - t0


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m robot_collision.tools.warmup",
        description="Compile (or load) every numba kernel of robot_collision into numba's "
                    "on-disk cache.")
    ap.add_argument("--part", choices=WARM_UP_PARTS, help="only this part (default: all)")
    args = ap.parse_args(argv)
    seconds = warm_up([args.part] if args.part else WARM_UP_PARTS)
    print(f"robot_collision: compiled kernels ready in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
