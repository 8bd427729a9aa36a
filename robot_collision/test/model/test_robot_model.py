"""RobotModel: parsing, tree order, FK and Jacobians against hand-computed transforms."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import (
    Box,
    CollisionChecker,
    ConfigurationError,
    MeshError,
    ModelError,
    RobotModel,
    Sphere,
    SRDFError,
    UnknownNameError,
    URDFError,
)
from robot_collision.errors import ModelLoadWarning
from robot_collision.geometry.transforms import rot_x, rot_z
from robot_collision.model.kinematics import point_jacobian_into

from ..conftest import URDF_DIR

MIXED = """<?xml version="1.0"?>
<robot name="mixed">
  <link name="base"/>
  <link name="a"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <link name="b"><collision><geometry><capsule radius="0.05" length="0.3"/></geometry>
  </collision></link>
  <link name="c"/>
  <link name="d"/>
  <link name="e"/>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="a"/><origin xyz="0 0 0.2"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" velocity="0.3" effort="10"/>
  </joint>
  <joint name="spin" type="continuous">
    <parent link="a"/><child link="b"/><origin xyz="0.1 0 0" rpy="1.5707963267948966 0 0"/>
    <axis xyz="0 0 1"/><limit velocity="2.0" effort="10"/>
  </joint>
  <joint name="fixed" type="fixed">
    <parent link="b"/><child link="c"/><origin xyz="0 0 0.3"/>
  </joint>
  <joint name="follow" type="revolute">
    <parent link="c"/><child link="d"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/>
    <mimic joint="spin" multiplier="2.0" offset="0.1"/>
  </joint>
  <joint name="follow2" type="revolute">
    <parent link="d"/><child link="e"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/>
    <mimic joint="follow" multiplier="-1.0" offset="0.5"/>
  </joint>
</robot>
"""


def test_two_link_fk_matches_hand_computation() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf")
    assert robot.joint_names == ["joint1", "joint2"]
    assert robot.body_names[:2] == ["link1", "link2"]
    for q1, q2 in [(0.0, 0.0), (0.3, -1.1), (2.5, 0.7)]:
        T = robot.link_transforms([q1, q2])
        np.testing.assert_allclose(T["link1"][:3, :3], rot_z(q1), atol=1e-12)
        np.testing.assert_allclose(
            T["link2"][:3, 3], [0.5 * np.cos(q1), 0.5 * np.sin(q1), 0.0], atol=1e-12
        )
        np.testing.assert_allclose(T["link2"][:3, :3], rot_z(q1 + q2), atol=1e-12)


def test_mixed_joint_types_and_mimic() -> None:
    robot = RobotModel.from_urdf(MIXED)
    assert robot.base_name == "base"
    assert robot.body_names == ["a", "b", "c", "d", "e"]
    assert robot.joint_names == ["slide", "spin"]  # fixed and mimic joints are not variables
    assert robot.is_continuous.tolist() == [False, True]
    assert np.isinf(robot.upper[1]) and robot.velocity_limits.tolist() == [0.3, 2.0]
    x, th = 0.2, 0.7
    T = robot.link_transforms([x, th])
    np.testing.assert_allclose(T["a"][:3, 3], [x, 0, 0.2], atol=1e-12)
    Rb = rot_x(np.pi / 2) @ rot_z(th)
    np.testing.assert_allclose(T["b"][:3, :3], Rb, atol=1e-12)
    np.testing.assert_allclose(T["c"][:3, 3], T["b"][:3, 3] + Rb @ [0, 0, 0.3], atol=1e-12)
    follow = 2.0 * th + 0.1
    Rd = Rb @ rot_z(follow)
    np.testing.assert_allclose(T["d"][:3, :3], Rd, atol=1e-12)
    follow2 = -1.0 * follow + 0.5
    np.testing.assert_allclose(T["e"][:3, :3], Rd @ rot_x(follow2), atol=1e-12)


AXES = """<?xml version="1.0"?>
<robot name="axes">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0 0.2" rpy="0.3 -0.2 0.5"/><axis xyz="0 0 -1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="0 0.2 0" rpy="0 0.4 0"/><axis xyz="0 0 2.5"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0 0 0.3"/><axis xyz="1 1 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
  <joint name="j4" type="revolute"><parent link="c"/><child link="d"/>
    <origin xyz="0.2 0 0" rpy="1 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
</robot>
"""


def _rodrigues(axis: list[float], angle: float) -> np.ndarray:
    u = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    return _rodrigues([0, 0, 1], y) @ _rodrigues([0, 1, 0], p) @ _rodrigues([1, 0, 0], r)


def test_fk_for_negative_scaled_and_skew_axes(rng: np.random.Generator) -> None:
    """Joint axes -z, an unnormalised +z (the fast path), a skew axis and y, against a chain of
    4x4 products built from Rodrigues' formula."""
    robot = RobotModel.from_urdf(AXES)
    joints = [  # (xyz, rpy, axis)
        ([0.1, 0, 0.2], (0.3, -0.2, 0.5), [0, 0, -1]),
        ([0, 0.2, 0], (0, 0.4, 0), [0, 0, 2.5]),
        ([0, 0, 0.3], (0, 0, 0), [1, 1, 1]),
        ([0.2, 0, 0], (1, 0, 0), [0, 1, 0]),
    ]
    for _ in range(5):
        q = rng.uniform(-3, 3, 4)
        T = robot.link_transforms(q)
        acc = np.eye(4)
        for name, (xyz, rpy, axis), angle in zip("abcd", joints, q):
            origin = np.eye(4)
            origin[:3, :3] = _rpy(*rpy)
            origin[:3, 3] = xyz
            motion = np.eye(4)
            motion[:3, :3] = _rodrigues(axis, angle)
            acc = acc @ origin @ motion
            np.testing.assert_allclose(T[name], acc, atol=1e-12)


def test_point_jacobian_matches_finite_differences(rng: np.random.Generator) -> None:
    robot = RobotModel.from_urdf(MIXED)
    k = robot.kin
    link = robot.link_index("e")
    offset = np.array([0.05, -0.02, 0.1, 1.0])
    for _ in range(5):
        q = robot.random_configuration(rng)
        T = robot.link_poses(q)
        p = (T[link] @ offset)[:3]
        J = np.zeros((3, robot.num_joints))
        point_jacobian_into(T, link, p, k.parent, k.jtype, k.axis, k.qidx, k.scale, 1.0, J)
        Jfd = np.zeros_like(J)
        for j in range(robot.num_joints):
            dq = np.zeros(robot.num_joints)
            dq[j] = 1e-6
            Jfd[:, j] = (
                (robot.link_poses(q + dq)[link] @ offset)[:3]
                - (robot.link_poses(q - dq)[link] @ offset)[:3]
            ) / 2e-6
        np.testing.assert_allclose(J, Jfd, atol=1e-7)


def test_configurations(default_robot: RobotModel, rng: np.random.Generator) -> None:
    r = default_robot
    assert r.num_joints == 7
    assert r.within_limits(r.home_configuration())
    for _ in range(20):
        assert r.within_limits(r.random_configuration(rng))
    with pytest.raises(ConfigurationError, match="7 values"):
        r.link_transforms([0.0] * 6)
    with pytest.raises(ConfigurationError, match="non-finite"):
        r.link_transforms([np.nan] + [0.0] * 6)
    with pytest.raises(ConfigurationError):
        r.validate_batch(np.zeros((3, 5)))


def test_add_and_clear_collision_is_seen_by_checker() -> None:
    robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf")
    checker = CollisionChecker(robot, skip=[])
    q = [0.0, 0.0]
    robot.clear_collision("link1")
    robot.clear_collision("link2")
    assert checker.is_valid(q)
    T = robot.link_transforms(q)
    # two spheres at the same base-frame point on link1 and link2 collide
    p2 = np.eye(4)
    p2[:3, 3] = np.linalg.inv(T["link2"])[:3, :3] @ (np.array([0.6, 0, 0]) - T["link2"][:3, 3])
    p1 = np.eye(4)
    p1[:3, 3] = [0.6, 0, 0]
    robot.add_collision("link1", Sphere(0.05), p1)
    robot.add_collision("link2", Box(0.05, 0.05, 0.05), p2)
    assert not checker.is_valid(q)
    robot.clear_collision("link2")
    assert checker.is_valid(q)
    with pytest.raises(UnknownNameError, match="unknown body 'nope'"):
        robot.add_collision("nope", Sphere(0.1))


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("<robot><link name='a'>", URDFError, "well-formed"),
        (
            "<?xml version='1.0'?><!DOCTYPE r [<!ENTITY x 'y'>]>"
            "<robot name='r'><link name='a'/></robot>",
            URDFError,
            "entities",
        ),
        (
            "<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='ball'>"
            "<parent link='a'/><child link='b'/></joint></robot>",
            URDFError,
            "supported",
        ),
        ("<robot name='r'><link name='a'/><link name='b'/></robot>", ModelError, "one root"),
        (
            "<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'>"
            "<parent link='a'/><child link='c'/><limit lower='0' upper='1' velocity='1'/>"
            "</joint></robot>",
            URDFError,
            "unknown link 'c'",
        ),
        (
            "<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'>"
            "<parent link='a'/><child link='b'/><limit lower='1' upper='0' velocity='1'/>"
            "</joint></robot>",
            URDFError,
            "lower limit",
        ),
        (
            "<robot name='r'><link name='a'><collision><geometry><mesh filename='missing.stl'/>"
            "</geometry></collision></link></robot>",
            MeshError,
            "does not exist",
        ),
        (
            "<robot name='r'><link name='a'><collision><geometry><sphere radius='-1'/></geometry>"
            "</collision></link></robot>",
            URDFError,
            "radius",
        ),
        ("/definitely/not/here.urdf", URDFError, "does not exist"),
    ],
)
def test_bad_urdf_gives_typed_error(text: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        RobotModel.from_urdf(text)


def test_bad_srdf() -> None:
    # an entry naming an unknown link is dropped with a warning (as MoveIt and pinocchio do)
    srdf = "<robot name='r'><disable_collisions link1='link1' link2='nope' reason='x'/></robot>"
    with pytest.warns(ModelLoadWarning, match="'nope', which is not a link"):
        robot = RobotModel.from_urdf(URDF_DIR / "two_link.urdf", srdf=srdf)
    assert robot.disabled_pairs() == []
    # malformed SRDF stays an error
    with pytest.raises(SRDFError, match="link1 and link2"):
        RobotModel.from_urdf(
            URDF_DIR / "two_link.urdf", srdf="<robot><disable_collisions/></robot>"
        )


@pytest.mark.mbm
def test_mesh_robot_loads_convex_hulls() -> None:
    import mbm

    robot = RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")
    shapes = robot.collision_geometry("panda_link1")
    assert shapes and shapes[0][0].vertices().shape[1] == 3
    checker = CollisionChecker(robot)
    assert checker.is_valid(robot.named_configuration("ready"))
