"""Shared fixtures: repository paths, the test robots and the MotionBenchMaker data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the ROS package robot_collision/
REPO = PACKAGE_DIR.parent  # the repository root (README.md, benchmarks/)
ROOT = PACKAGE_DIR
URDF_DIR = PACKAGE_DIR / "urdf"
sys.path.insert(0, str(REPO / "benchmarks"))

import mbm  # noqa: E402

from robot_collision import RobotModel  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not mbm.available():
        skip = pytest.mark.skip(reason="../shared/benchmarks/panda_mbm is not present")
        for item in items:
            if "mbm" in item.keywords:
                item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mbm: needs ../shared/benchmarks/panda_mbm")
    config.addinivalue_line("markers", "ros: starts real rclpy nodes")
    config.addinivalue_line("markers", "slow: long-running test")


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels() -> None:
    """Compile (cold cache, e.g. a fresh CI clone) or load every numba kernel once before any
    test: a compile inside a ROS test holds the GIL for seconds and starves the nodes' spin
    threads, which timing-sensitive ROS tests then report as stale joint states. A cold cache
    is first filled by one process per part (both cores)."""
    from robot_collision.tools.warmup import cache_is_cold, warm_up, warm_up_in_processes

    if cache_is_cold():
        _copy_installed_kernels()
    if cache_is_cold():
        warm_up_in_processes()
    warm_up()
    # the ROS layer's kernel (the node also warms it up at start, but then inside a process
    # that may be running other nodes)
    from robot_collision import CollisionChecker, RobotModel, default_robot_paths
    from robot_collision.ros.cdr import ClearanceTableWriter

    robot = RobotModel.from_urdf(default_robot_paths()[0])
    table = CollisionChecker(robot).clearance(robot.home_configuration())
    ClearanceTableWriter().serialize(table, 0, 0, "base")


def _copy_installed_kernels() -> None:
    """``colcon test`` imports the package from the source tree, whose kernels ``colcon build``
    did not compile (it compiled the install's, which is on ``sys.path`` too): take the
    install's cached kernels when it holds the same sources (~5 min of compiling saved)."""
    import robot_collision
    from robot_collision.kernel_cache import copy_kernel_caches

    here = Path(robot_collision.__file__).resolve().parent
    for entry in sys.path:
        other = Path(entry or ".") / "robot_collision"
        if (other / "kernel_cache.py").is_file() and other.resolve() != here:
            if copy_kernel_caches(other, here):
                return


@pytest.fixture(scope="session")
def default_robot() -> RobotModel:
    return RobotModel.from_urdf(URDF_DIR / "default_arm.urdf", srdf=URDF_DIR / "default_arm.srdf")


@pytest.fixture(scope="session")
def panda() -> RobotModel:
    if not mbm.available():
        pytest.skip("../shared/benchmarks/panda_mbm is not present")
    return mbm.panda()


@pytest.fixture(scope="session")
def cage_world() -> list:
    if not mbm.available():
        pytest.skip("../shared/benchmarks/panda_mbm is not present")
    return mbm.world_of(mbm.load_problems()["problems"]["cage"][0], "cage")


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
