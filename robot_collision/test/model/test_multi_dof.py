"""Planar and floating joints, expanded into single-axis virtual joints, against pinocchio
(JointModelPlanar / JointModelFreeFlyer from the same URDF) and coal (distances of the same
shapes at pinocchio's poses): FK, point Jacobians (finite differences of pinocchio's FK), the
checker's answers and signed distances, sampling bounds and group states."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from robot_collision import CollisionChecker, RobotModel, URDFError
from robot_collision.load_limits import LoadLimits
from robot_collision.model.kinematics import point_jacobian_into

pin = pytest.importorskip("pinocchio")
coal = pytest.importorskip("coal")


def _robot(jtype: str, axis: str = "") -> str:
    return f"""<?xml version="1.0"?>
<robot name="mobile">
  <link name="world"/>
  <link name="base"><collision><geometry><box size="0.4 0.3 0.2"/></geometry></collision></link>
  <link name="arm"><collision><origin xyz="0 0 0.25"/>
    <geometry><sphere radius="0.08"/></geometry></collision></link>
  <link name="post"><collision><geometry><box size="0.1 0.1 0.6"/></geometry></collision></link>
  <joint name="base_joint" type="{jtype}">
    <parent link="world"/><child link="base"/><origin xyz="0.1 -0.2 0.3" rpy="0.1 0.2 0.3"/>
    {axis}
  </joint>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/><origin xyz="0.1 0 0.1" rpy="0 0.3 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" velocity="1" effort="1"/>
  </joint>
  <joint name="fixed_post" type="fixed">
    <parent link="world"/><child link="post"/><origin xyz="0.6 0 0.3"/>
  </joint>
</robot>
"""


def _pin_q(model: RobotModel, pmodel: object, q: np.ndarray, jtype: str) -> np.ndarray:
    """pinocchio's configuration for our ``q``: free flyer [x y z qx qy qz qw], planar
    [x y cos sin], revolute as is."""
    pq = np.zeros(pmodel.nq)  # type: ignore[attr-defined]
    jid = pmodel.getJointId("base_joint")  # type: ignore[attr-defined]
    i0 = pmodel.joints[jid].idx_q  # type: ignore[attr-defined]
    v = {n: q[model.joint_index(n)] for n in model.joint_names}
    if jtype == "floating":
        R = pin.rpy.rpyToMatrix(v["base_joint/roll"], v["base_joint/pitch"], v["base_joint/yaw"])
        quat = pin.Quaternion(R)
        pq[i0:i0 + 7] = [v["base_joint/x"], v["base_joint/y"], v["base_joint/z"],
                         quat.x, quat.y, quat.z, quat.w]
    else:
        t = v["base_joint/theta"]
        pq[i0:i0 + 4] = [v["base_joint/x"], v["base_joint/y"], np.cos(t), np.sin(t)]
    sid = pmodel.getJointId("shoulder")  # type: ignore[attr-defined]
    pq[pmodel.joints[sid].idx_q] = v["shoulder"]  # type: ignore[attr-defined]
    return pq


def _pin_poses(pmodel: object, pdata: object, pq: np.ndarray) -> dict[str, np.ndarray]:
    pin.framesForwardKinematics(pmodel, pdata, pq)
    return {
        f.name: pdata.oMf[i].homogeneous  # type: ignore[attr-defined]
        for i, f in enumerate(pmodel.frames)  # type: ignore[attr-defined]
        if f.type == pin.FrameType.BODY
    }


@pytest.mark.parametrize("jtype", ["floating", "planar"])
def test_layout_and_fk_match_pinocchio(jtype: str) -> None:
    xml = _robot(jtype)
    robot = RobotModel.from_urdf(xml, warn=False)
    suffixes = ["x", "y", "z", "yaw", "pitch", "roll"] if jtype == "floating" else [
        "x", "y", "theta"]
    assert robot.joint_names == [f"base_joint/{s}" for s in suffixes] + ["shoulder"]
    assert robot.multi_dof_joints == {
        "base_joint": (jtype, tuple(f"base_joint/{s}" for s in suffixes))}
    lo, hi = robot.sampling_bounds()
    ntr = 3 if jtype == "floating" else 2
    np.testing.assert_array_equal(hi[:ntr], 2.0)  # LoadLimits.floating_translation_bound
    np.testing.assert_array_equal(lo[:ntr], -2.0)
    np.testing.assert_allclose(hi[ntr:-1], np.pi)  # rotations: continuous
    pmodel = pin.buildModelFromXML(xml)
    assert pmodel.nq == (7 if jtype == "floating" else 4) + 1
    pdata = pmodel.createData()
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = robot.random_configuration(rng)
        ours = robot.link_transforms(q)
        ref = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q, jtype))
        for name in ("base", "arm", "post"):
            np.testing.assert_allclose(ours[name], ref[name], atol=1e-12)


@pytest.mark.parametrize("jtype", ["floating", "planar"])
def test_point_jacobian_matches_pinocchio_finite_differences(jtype: str) -> None:
    xml = _robot(jtype)
    robot = RobotModel.from_urdf(xml, warn=False)
    pmodel = pin.buildModelFromXML(xml)
    pdata = pmodel.createData()
    k = robot.kin
    link = robot.link_index("arm")
    offset = np.array([0.03, -0.02, 0.25, 1.0])
    rng = np.random.default_rng(4)
    for _ in range(20):
        q = robot.random_configuration(rng)
        T = robot.link_poses(q)
        p = (T[link] @ offset)[:3]
        J = np.zeros((3, robot.num_joints))
        point_jacobian_into(T, link, p, k.parent, k.jtype, k.axis, k.qidx, k.scale, 1.0, J)
        Jfd = np.zeros_like(J)
        for j in range(robot.num_joints):
            dq = np.zeros(robot.num_joints)
            dq[j] = 1e-6
            plus = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q + dq, jtype))["arm"]
            minus = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q - dq, jtype))["arm"]
            Jfd[:, j] = ((plus @ offset)[:3] - (minus @ offset)[:3]) / 2e-6
        np.testing.assert_allclose(J, Jfd, atol=1e-6)


def _coal_shape(shape: object) -> object:
    from robot_collision.geometry.shapes import Box, Sphere

    if isinstance(shape, Box):
        return coal.Box(shape.x, shape.y, shape.z)
    assert isinstance(shape, Sphere)
    return coal.Sphere(shape.radius)


def _coal_distance(robot: RobotModel, ref: dict[str, np.ndarray], a: str, b: str) -> float:
    (sa, pa), = robot.collision_geometry(a)
    (sb, pb), = robot.collision_geometry(b)
    Ta, Tb = ref[a] @ pa, ref[b] @ pb
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    return float(coal.distance(
        _coal_shape(sa), coal.Transform3s(Ta[:3, :3], Ta[:3, 3]),
        _coal_shape(sb), coal.Transform3s(Tb[:3, :3], Tb[:3, 3]), req, res))


@pytest.mark.parametrize("jtype", ["floating", "planar"])
def test_checker_and_clearance_match_coal_at_pinocchio_poses(jtype: str) -> None:
    """is_valid, signed distances and their gradients ∂ϕ/∂q (central differences of coal's
    distance at pinocchio's poses) for the moving base and arm against a fixed post."""
    xml = _robot(jtype)
    robot = RobotModel.from_urdf(xml, warn=False)
    checker = CollisionChecker(robot)
    pmodel = pin.buildModelFromXML(xml)
    pdata = pmodel.createData()
    rng = np.random.default_rng(5)
    pairs = [("arm", "post"), ("base", "post")]
    seen = {True: 0, False: 0}
    ntr = 3 if jtype == "floating" else 2
    for _ in range(150):
        q = robot.random_configuration(rng)
        q[:ntr] *= 0.3  # near the post: both answers occur
        ref = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q, jtype))
        table = checker.clearance(q)
        dists = {a + "=" + b: _coal_distance(robot, ref, a, b) for a, b in pairs}
        if min(abs(d) for d in dists.values()) < 1e-4:
            continue  # touching: either answer is right
        colliding = min(dists.values()) < 0
        assert checker.is_valid(q) == (not colliding)
        seen[colliding] += 1
        for a, b in pairs:
            rows = [i for i, (x, y) in enumerate(zip(table.robot_bodies, table.other_bodies))
                    if {x, y} == {a, b}]
            assert len(rows) == 1, (a, b)
            d = dists[a + "=" + b]
            if d <= 1e-3:
                continue  # penetration depth: coal's EPA vs ours, not this test's subject
            assert table.distances[rows[0]] == pytest.approx(d, abs=1e-6)
            grad = np.zeros(robot.num_joints)
            for j in range(robot.num_joints):
                dq = np.zeros(robot.num_joints)
                dq[j] = 1e-6
                plus = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q + dq, jtype))
                minus = _pin_poses(pmodel, pdata, _pin_q(robot, pmodel, q - dq, jtype))
                grad[j] = (_coal_distance(robot, plus, a, b)
                           - _coal_distance(robot, minus, a, b)) / 2e-6
            np.testing.assert_allclose(table.jacobians[rows[0]], grad, atol=2e-4)
    assert seen[True] > 5 and seen[False] > 5, seen


def test_translation_bound_is_a_load_option() -> None:
    robot = RobotModel.from_urdf(
        _robot("floating"), warn=False, limits=LoadLimits(floating_translation_bound=7.5))
    _, hi = robot.sampling_bounds()
    np.testing.assert_array_equal(hi[:3], 7.5)
    assert LoadLimits.from_strings(["floating_translation_bound=0.5"]).floating_translation_bound \
        == 0.5


def test_planar_axis_is_the_plane_normal() -> None:
    """A planar joint with axis y moves in the joint frame's z-x plane and turns about y."""
    robot = RobotModel.from_urdf(_robot("planar", '<axis xyz="0 1 0"/>'), warn=False)
    q = robot.home_configuration()
    T0 = robot.link_transforms(q)["base"]
    q[robot.joint_index("base_joint/x")] = 0.5
    q[robot.joint_index("base_joint/y")] = -0.25
    T1 = robot.link_transforms(q)["base"]
    # the displacement, in the joint frame, has no y component
    d = T0[:3, :3].T @ (T1[:3, 3] - T0[:3, 3])
    assert abs(d[1]) < 1e-12 and np.linalg.norm(d) == pytest.approx(np.hypot(0.5, 0.25))
    q[robot.joint_index("base_joint/theta")] = 0.7
    T2 = robot.link_transforms(q)["base"]
    R = T1[:3, :3].T @ T2[:3, :3]
    np.testing.assert_allclose(R @ [0, 1, 0], [0, 1, 0], atol=1e-12)


def test_group_and_group_state_of_multi_dof_joints() -> None:
    srdf = """<robot name="mobile">
  <group name="base"><joint name="base_joint"/></group>
  <group name="all"><joint name="base_joint"/><joint name="shoulder"/></group>
  <group_state name="there" group="all">
    <joint name="base_joint" value="0.5 -0.5 0.2 0 0 0.7071067811865476 0.7071067811865476"/>
    <joint name="shoulder" value="0.3"/>
  </group_state>
</robot>"""
    robot = RobotModel.from_urdf(_robot("floating"), srdf=srdf, warn=False)
    assert robot.groups["base"] == [f"base_joint/{s}" for s in
                                    ("x", "y", "z", "yaw", "pitch", "roll")]
    assert len(robot.groups["all"]) == 7
    q = robot.named_configuration("there")
    np.testing.assert_allclose(q, [0.5, -0.5, 0.2, np.pi / 2, 0, 0, 0.3], atol=1e-12)
    assert [n.source for n in robot.load_report.notes] == ["URDF"]  # the velocity default


def test_name_clash_and_mimic_of_multi_dof_are_refused() -> None:
    clash = _robot("planar").replace('<link name="post">', '<link name="base_joint/x"/>'
                                     '<link name="post">')
    with pytest.raises(URDFError, match="base_joint/x"):
        RobotModel.from_urdf(clash, warn=False)
    mimic = _robot("planar").replace(
        '<axis xyz="0 1 0"/><limit', '<axis xyz="0 1 0"/><mimic joint="base_joint"/><limit')
    with pytest.raises(URDFError, match="mimics planar joint"):
        RobotModel.from_urdf(mimic, warn=False)


def test_planner_and_filter_drive_a_planar_base_around_an_obstacle() -> None:
    """BiRRT plans the planar base (plus arm) from one side of a wall to the other within the
    translation bounds; the velocity filter slows a base command towards the wall."""
    from robot_collision import BiRRT, Box, VelocityFilter, WorldObject, make_pose

    xml = _robot("planar").replace('origin xyz="0.1 -0.2 0.3" rpy="0.1 0.2 0.3"', 'origin')
    xml = xml.replace('<origin xyz="0.6 0 0.3"/>', '<origin xyz="0 0 -5"/>')  # post out of reach
    robot = RobotModel.from_urdf(xml, warn=False)
    wall = WorldObject(Box(0.1, 1.5, 1.0), make_pose(np.eye(3), [0.0, 0.0, 0.0]), name="wall")
    checker = CollisionChecker(robot)
    start, goal = robot.home_configuration(), robot.home_configuration()
    start[0], goal[0] = -1.0, 1.0  # base x, either side of the wall
    assert checker.is_valid(start, [wall]) and checker.is_valid(goal, [wall])
    path = BiRRT(checker, world=[wall]).plan(start, goal, time_limit=30.0).waypoints
    assert np.all(path[:, :2] >= -2.0) and np.all(path[:, :2] <= 2.0)
    for a, b in itertools.pairwise(path):
        for t in np.linspace(0.0, 1.0, 20):
            assert checker.is_valid(a + t * (b - a), [wall])
    filt = VelocityFilter(checker, world=[wall])
    q = start.copy()
    q[0] = -0.4  # the base's front face 0.15 m from the wall; +x closes in
    cmd = np.zeros(robot.num_joints)
    cmd[0] = 5.0
    res = filt.filter(q, cmd, 0.01)
    assert res.ok, res.message
    assert 0.0 <= res.velocity[0] <= 1.0  # the default 1 m/s limit at most


def test_srdf_virtual_joint_added_on_request_matches_pinocchio_root_joint() -> None:
    """virtual_joints=True: the SRDF's floating virtual joint becomes the root, as MoveIt
    models it; pinocchio's buildModelFromXML(..., JointModelFreeFlyer()) is the same robot."""
    fixed = _robot("fixed")
    srdf = """<robot name="mobile">
  <virtual_joint name="odom_joint" type="floating" parent_frame="odom" child_link="world"/>
  <group name="all"><joint name="odom_joint"/><joint name="shoulder"/></group>
</robot>"""
    plain = RobotModel.from_urdf(fixed, srdf=srdf, warn=False)
    assert plain.num_joints == 1 and plain.groups["all"] == ["shoulder"]
    robot = RobotModel.from_urdf(fixed, srdf=srdf, warn=False, virtual_joints=True)
    assert robot.base_name == "odom"
    assert robot.multi_dof_joints["odom_joint"][0] == "floating"
    assert robot.groups["all"] == robot.joint_names  # the virtual joint's six, then shoulder
    assert any("odom_joint" in n.message for n in robot.load_report.notes)
    pmodel = pin.buildModelFromXML(fixed, pin.JointModelFreeFlyer())
    pdata = pmodel.createData()
    rng = np.random.default_rng(8)
    for _ in range(30):
        q = robot.random_configuration(rng)
        v = q[:6]
        quat = pin.Quaternion(pin.rpy.rpyToMatrix(v[5], v[4], v[3]))
        pq = np.zeros(pmodel.nq)
        pq[:7] = [v[0], v[1], v[2], quat.x, quat.y, quat.z, quat.w]
        pq[pmodel.joints[pmodel.getJointId("shoulder")].idx_q] = q[6]
        ref = _pin_poses(pmodel, pdata, pq)
        ours = robot.link_transforms(q)
        for name in ("world", "base", "arm", "post"):
            np.testing.assert_allclose(ours[name], ref[name], atol=1e-12)
