"""Real robots (example-robot-data) on a floating or planar base against pinocchio + coal.

Each robot's URDF gets a root link and a ``floating`` or ``planar`` joint onto its base (as a
mobile base or a humanoid's free flyer is written); pinocchio parses the same file into a
JointModelFreeFlyer / JointModelPlanar. At random configurations (base translations within
``LoadLimits.floating_translation_bound``, rotations over every angle): every link pose agrees
with pinocchio's FK, and every checked link pair's collision and separation with coal's on the
convex hulls of the same meshes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import robot_corpus as rc

from robot_collision import CollisionChecker, RobotModel

pytestmark = pytest.mark.skipif(
    not rc.oracle_available(), reason="example-robot-data, pinocchio or coal not installed"
)

CONFIGS = 40


def _variant(tmp_path: Path, name: str, jtype: str) -> tuple[Path, RobotModel]:
    cr = rc.ROBOTS[name]
    text = cr.urdf_path().read_text(encoding="utf-8")
    root = RobotModel.from_urdf(cr.urdf_path(), package_dirs=rc.package_dirs(), warn=False)
    extra = (
        '<link name="mobile_world"/>'
        f'<joint name="mobile_base" type="{jtype}"><parent link="mobile_world"/>'
        f'<child link="{root.base_name}"/><origin xyz="0.1 -0.2 0.3" rpy="0.1 -0.2 0.3"/>'
        "</joint></robot>"
    )
    cut = text.rindex("</robot>")
    path = tmp_path / f"{name}_{jtype}.urdf"
    path.write_text(text[:cut] + extra + text[cut + len("</robot>"):], encoding="utf-8")
    robot = RobotModel.from_urdf(
        path, srdf=cr.srdf_path(), package_dirs=rc.package_dirs(), warn=False
    )
    return path, robot


@pytest.mark.parametrize("jtype", ["floating", "planar"])
@pytest.mark.parametrize("name", ["ur5", "panda", "kinova"])
def test_mobile_variants_agree_with_pinocchio_and_coal(
    tmp_path: Path, name: str, jtype: str
) -> None:
    path, robot = _variant(tmp_path, name, jtype)
    assert robot.multi_dof_joints["mobile_base"][0] == jtype
    checker = CollisionChecker(robot)
    oracle = rc.PinOracle(robot, checker, path)
    pin = oracle.pin
    assert oracle.model.joints[oracle.model.getJointId("mobile_base")].nq == (
        7 if jtype == "floating" else 4)
    bodies = {f.name: i for i, f in enumerate(oracle.model.frames)
              if f.type == pin.FrameType.BODY}
    assert set(bodies) == set(robot.link_names) - {
        v for v in robot.link_names if v.startswith("mobile_base/")}
    rng = np.random.default_rng(11)
    idx = {(a, b): (robot.link_index(a), robot.link_index(b)) for a, b in oracle.pairs}
    colliding = 0
    for _ in range(CONFIGS):
        q = robot.random_configuration(rng)
        ours = robot.link_transforms(q)
        pin.framesForwardKinematics(oracle.model, oracle.data, oracle.q_pin(q))
        for link, fid in bodies.items():
            np.testing.assert_allclose(ours[link], oracle.data.oMf[fid].homogeneous,
                                       atol=1e-9, err_msg=f"{name} {link}")
        D = checker.pair_distances(q).D
        for pair, d_ref in oracle.pair_distances(q).items():
            i, j = idx[pair]
            d = D[min(i, j), max(i, j)]
            assert (d < 0) == (d_ref < 0), f"{name} {pair}: {d} vs coal {d_ref}"
            if d_ref > 0:
                assert abs(d - d_ref) < 1e-6, (pair, d, d_ref)
        hit = oracle.in_collision(q)
        colliding += hit
        assert checker.is_valid(q) == (not hit)
    assert oracle.pairs
