"""Real robots as ROS users load them, through xacro and package://, against pinocchio + coal.

The descriptions are test data fetched beside example-robot-data, not shipped: set
``ROBOT_COLLISION_XACRO_CORPUS`` to a folder holding checkouts of

- ``moveit_resources`` (https://github.com/moveit/moveit_resources, commit ef5836dd): Panda,
  Fanuc M-10iA and the dual-arm Panda, each a MoveIt config's ``*.urdf.xacro`` that includes
  its description package through ``$(find)``, with the config's SRDF;
- ``abb_experimental`` (https://github.com/ros-industrial/abb_experimental, commit 20b9cf86):
  the IRB1600-6/1.2 xacro (namespace ``http://ros.org/wiki/xacro``) and its MoveIt SRDF;

e.g. ``git clone https://github.com/moveit/moveit_resources $DIR/moveit_resources``. Without the
variable (or without the ``xacro`` package) the tests skip. Each robot is loaded from its xacro
with ``package_dirs`` entries ``NAME=PATH`` (the checkouts' folders are not named like the
packages); pinocchio parses the same document as expanded by xacro. At 200 random
configurations every link pose agrees with pinocchio's FK and ``is_valid`` with coal on the
convex hulls of the same meshes, the SRDF loads without dropped entries, and the robot with a
floating base added agrees as well.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import robot_corpus as rc

from robot_collision import CollisionChecker, RobotModel, URDFError
from robot_collision.model.urdf import expand_xacro

ROOT = Path(os.environ.get("ROBOT_COLLISION_XACRO_CORPUS", "/nonexistent"))
MR = ROOT / "moveit_resources"
ABB = ROOT / "abb_experimental"

pytestmark = pytest.mark.skipif(
    not (ROOT.is_dir() and rc.oracle_available()),
    reason="ROBOT_COLLISION_XACRO_CORPUS not set, or pinocchio/coal missing",
)

PACKAGES = {
    "moveit_resources_panda_description": MR / "panda_description",
    "moveit_resources_panda_moveit_config": MR / "panda_moveit_config",
    "moveit_resources_fanuc_description": MR / "fanuc_description",
    "moveit_resources_fanuc_moveit_config": MR / "fanuc_moveit_config",
    "dual_arm_panda_moveit_config": MR / "dual_arm_panda_moveit_config",
    "abb_irb1600_support": ABB / "abb_irb1600_support",
}
CASES = {
    "panda": ("panda_moveit_config/config/panda.urdf.xacro",
              "panda_moveit_config/config/panda.srdf", MR),
    "fanuc": ("fanuc_moveit_config/config/fanuc.urdf.xacro",
              "fanuc_moveit_config/config/fanuc.srdf", MR),
    "dual_arm_panda": ("dual_arm_panda_moveit_config/config/panda.urdf.xacro",
                       "dual_arm_panda_moveit_config/config/panda.srdf", MR),
    "irb1600": ("abb_irb1600_support/urdf/irb1600_6_12.xacro",
                "abb_irb1600_6_12_moveit_config/config/abb_irb1600_6_12.srdf", ABB),
}


def _package_dirs() -> list[str]:
    return [f"{name}={path}" for name, path in PACKAGES.items()]


def _pin_package_dirs(tmp_path: Path) -> list[str]:
    """pinocchio finds package://NAME/... in a folder holding a folder NAME: symlinks."""
    folder = tmp_path / "packages"
    folder.mkdir(exist_ok=True)
    for name, path in PACKAGES.items():
        if not (folder / name).exists():
            (folder / name).symlink_to(path)
    return [str(folder)]


def _oracle(robot: RobotModel, checker: Any, urdf_text: str, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Any:
    path = tmp_path / "expanded.urdf"
    path.write_text(urdf_text, encoding="utf-8")
    monkeypatch.setattr(rc, "package_dirs", lambda: _pin_package_dirs(tmp_path))
    return rc.PinOracle(robot, checker, path)


def _agree(robot: RobotModel, oracle: Any, configs: int = 200) -> int:
    pin = oracle.pin
    bodies = {f.name: i for i, f in enumerate(oracle.model.frames)
              if f.type == pin.FrameType.BODY}
    checker = CollisionChecker(robot)
    rng = np.random.default_rng(0)
    colliding = 0
    for _ in range(configs):
        q = robot.random_configuration(rng)
        T = robot.link_transforms(q)
        pin.framesForwardKinematics(oracle.model, oracle.data, oracle.q_pin(q))
        for link, fid in bodies.items():
            np.testing.assert_allclose(T[link], oracle.data.oMf[fid].homogeneous, atol=1e-9)
        hit = oracle.in_collision(q)
        colliding += hit
        assert checker.is_valid(q) == (not hit), q.tolist()
    return colliding


@pytest.mark.parametrize("name", list(CASES))
def test_real_xacro_robot_agrees_with_pinocchio_and_coal(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xacro")
    urdf_rel, srdf_rel, base = CASES[name]
    urdf, srdf = base / urdf_rel, base / srdf_rel
    robot = RobotModel.from_urdf(urdf, srdf=srdf, package_dirs=_package_dirs(), warn=False)
    assert not [n for n in robot.load_report.notes if n.source == "SRDF"]
    assert robot.load_report.meshes, "the meshes come through package://"
    text = expand_xacro(urdf, "URDF", URDFError, None, _package_dirs())
    oracle = _oracle(robot, CollisionChecker(robot), text, tmp_path, monkeypatch)
    assert oracle.pairs
    _agree(robot, oracle)
    # the same robot on a floating base (a humanoid's or a mobile manipulator's layout)
    cut = text.rindex("</robot>")
    floating = text[:cut] + (
        '<link name="mobile_world"/><joint name="mobile_base" type="floating">'
        f'<parent link="mobile_world"/><child link="{robot.base_name}"/></joint></robot>')
    (tmp_path / "floating.urdf").write_text(floating, encoding="utf-8")
    mobile = RobotModel.from_urdf(tmp_path / "floating.urdf", srdf=srdf,
                                  package_dirs=_package_dirs(), warn=False)
    assert mobile.num_joints == robot.num_joints + 6
    _agree(mobile, _oracle(mobile, CollisionChecker(mobile), floating, tmp_path, monkeypatch),
           configs=50)
