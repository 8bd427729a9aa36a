"""The URDF velocity limit reaches the filter: a valid URDF clips a 100 rad/s command to its
limit; a URDF whose limit is NaN (which used to load as "unlimited" and pass the command
unchanged) no longer loads; a joint without a limit gets the finite default."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import CollisionChecker, RobotModel, URDFError, VelocityFilter
from robot_collision.errors import ModelLoadWarning

from ..conftest import URDF_DIR

LIMIT = 'velocity="2.175"'


def _urdf() -> str:
    text = (URDF_DIR / "default_arm.urdf").read_text(encoding="utf-8")
    assert LIMIT in text
    return text


def _first_joint_output(robot: RobotModel, speed: float) -> float:
    filt = VelocityFilter(CollisionChecker(robot), world=[])
    cmd = np.zeros(robot.num_joints)
    cmd[0] = speed
    res = filt.filter(robot.home_configuration(), cmd, 0.01)
    assert res.ok, res.message
    return float(res.velocity[0])


def test_valid_urdf_clips_a_100_rad_s_command() -> None:
    robot = RobotModel.from_urdf(_urdf())
    assert _first_joint_output(robot, 100.0) == pytest.approx(2.175)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_velocity_limit_no_longer_loads(value: str) -> None:
    with pytest.raises(URDFError, match="velocity' must be a finite number"):
        RobotModel.from_urdf(_urdf().replace(LIMIT, f'velocity="{value}"', 1))


def test_missing_velocity_limit_is_the_finite_default_not_unlimited() -> None:
    with pytest.warns(ModelLoadWarning):
        robot = RobotModel.from_urdf(_urdf().replace(LIMIT, 'velocity="0"', 1))
    assert _first_joint_output(robot, 100.0) == pytest.approx(1.0)
