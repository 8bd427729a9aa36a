"""Every URDF of example-robot-data that has collision geometry loads.

The known failures are listed with their cause as strict expected failures: once a loader change
makes one of them load, its XPASS fails this test, so the list is kept honest (issue 13).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import robot_corpus as rc

from robot_collision import RobotModel

pytestmark = pytest.mark.skipif(not rc.available(), reason="example-robot-data is not installed")

# URDF (relative to robots/) -> why it does not load yet
KNOWN_FAILURES: dict[str, str] = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "mimic joint names a missing joint",
    "anymal_b_simple_description/robots/anymal-kinova.urdf": 'velocity="0" on a fixed joint',
    "borinot_description/urdf/borinot_flying_arm_2.urdf": 'velocity="0" on a fixed joint',
    "double_pendulum_description/urdf/double_pendulum.urdf": 'velocity="0"',
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf": 'velocity="0"',
    "double_pendulum_description/urdf/double_pendulum_simple.urdf": 'velocity="0"',
    "iris_description/robots/iris.urdf": 'velocity="0" on a fixed joint',
    "iris_description/robots/iris_simple.urdf": 'velocity="0" on a fixed joint',
    "kinova_description/robots/kinova.urdf": 'velocity="0" on a fixed joint',
    "romeo_description/urdf/romeo.urdf": 'velocity="0" on a fixed joint',
}
# an empty file (pinocchio does not load it either)
NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}


def _corpus() -> list[str]:
    return [rc.name(p) for p in rc.urdf_files()]


def test_corpus_counts() -> None:
    names = _corpus()
    assert len(names) == 69
    assert set(KNOWN_FAILURES) | NOT_A_ROBOT <= set(names)
    assert len(names) - len(KNOWN_FAILURES) - len(NOT_A_ROBOT) == 58


@pytest.mark.parametrize(
    "rel",
    [
        pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[r], strict=True))
        if r in KNOWN_FAILURES
        else r
        for r in _corpus()
        if r not in NOT_A_ROBOT
    ],
)
def test_corpus_urdf_loads(rel: str) -> None:
    path: Path = rc.robots_dir() / rel
    robot = RobotModel.from_urdf(path, package_dirs=rc.package_dirs())
    assert robot.link_names
