"""The sphere-cover broad phase and the self-pair joint-space tables change no verdict:
validity with both (and with the base's world pairs decided once per scene) against the exact
narrow phase alone (covers, tables and that skip disabled: every pair that survives culling goes
to GJK / the closed forms), on fixed random configurations of the
mesh Panda in MotionBenchMaker scenes and of the default arm (capsules, boxes, cylinders) in its
demo world."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    RobotModel,
    Sphere,
    WorldObject,
    default_robot_paths,
)
from robot_collision.collision.kernels import packed_valid_serial
from robot_collision.collision.scene_packing import pack_scene
from robot_collision.geometry.transforms import make_pose


def _exact_and_covered(checker: CollisionChecker, world: list, Q: np.ndarray,
                       check_self: bool = True) -> tuple[np.ndarray, np.ndarray]:
    sc = checker._prepare(world)
    assert sc.block is None  # these robots run the scalar kernels
    assert (sc.rs.cover_index[:, 1] > 0).all()  # every shape has a cover
    rs0 = sc.rs._replace(cover_index=sc.rs.cover_index * np.array([1, 0, 1, 0]))
    ti0 = sc.pr.tab_i.copy()
    ti0[:, 0] = -1
    # (and no base pair decided once per scene: world_skip cleared)
    F0, I0 = pack_scene(checker.robot.kin, rs0, sc.ws,
                        sc.pr._replace(tab_i=ti0, world_skip=0 * sc.pr.world_skip))
    exact = np.empty(len(Q), dtype=bool)
    covered = np.empty(len(Q), dtype=bool)
    packed_valid_serial(Q, F0, I0, check_self, exact)
    packed_valid_serial(Q, sc.F, sc.I, check_self, covered)
    return exact, covered


@pytest.mark.mbm
@pytest.mark.parametrize("set_name", ["table_pick", "bookshelf_small", "box", "cage"])
def test_mesh_panda_verdicts_unchanged(set_name: str) -> None:
    import mbm

    robot = RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")
    checker = CollisionChecker(robot)
    problems = mbm.load_problems()["problems"][set_name]
    rng = np.random.default_rng(22)
    for p in problems[:2]:
        world = mbm.world_of(p, set_name)
        Q = np.array([robot.random_configuration(rng) for _ in range(1500)])
        # and configurations near the problem's start and goal, where obstacles are close
        near = np.array([p["start"], p["goals"][0]])[rng.integers(0, 2, 1500)]
        Q = np.concatenate([Q, near + rng.normal(scale=0.15, size=near.shape)])
        Q = np.clip(Q, *robot.sampling_bounds())
        exact, covered = _exact_and_covered(checker, world, Q)
        assert 0.05 < exact.mean() < 0.95
        np.testing.assert_array_equal(covered, exact)
        exact, covered = _exact_and_covered(checker, world, Q, check_self=False)
        np.testing.assert_array_equal(covered, exact)


def test_default_arm_verdicts_unchanged() -> None:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf)
    eye = np.eye(3)
    rot = make_pose(np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]]) @ np.array(
        [[1, 0, 0], [0, 0.6, -0.8], [0, 0.8, 0.6]]), [0.3, -0.3, 0.5])
    world = [
        WorldObject(Box(1.6, 1.6, 0.04), make_pose(eye, [0.0, 0.0, -0.03]), "floor"),
        WorldObject(Box(0.3, 0.8, 0.5), make_pose(eye, [0.65, 0.0, 0.25]), "crate"),
        WorldObject(Capsule(0.05, 0.8), make_pose(eye, [0.0, 0.6, 0.4]), "pole"),
        WorldObject(Box(0.2, 0.05, 0.3), rot, "tilted"),
        WorldObject(Sphere(0.1), make_pose(eye, [-0.3, 0.2, 0.6]), "ball"),
    ]
    rng = np.random.default_rng(5)
    Q = np.array([robot.random_configuration(rng) for _ in range(4000)])
    for padding, objs in ((0.0, world), (0.02, world[1:])):  # (the base sits on the floor)
        checker = CollisionChecker(robot, padding=padding)
        exact, covered = _exact_and_covered(checker, objs, Q)
        assert 0.05 < exact.mean() < 0.95
        np.testing.assert_array_equal(covered, exact)


def _folding_chain_urdf(links: int = 6) -> str:
    """A planar chain of box links 0.3 m long, joined by revolute z joints at their ends, that
    folds onto itself: pairs two joints apart (tables over two joints each, five distinct joints
    in all) touch in many configurations."""
    parts = ['<robot name="fold"><link name="l0"><collision><origin xyz="0.15 0 0"/><geometry>'
             '<box size="0.3 0.06 0.06"/></geometry></collision></link>']
    for i in range(1, links):
        parts.append(
            f'<link name="l{i}"><collision><origin xyz="0.15 0 {0.07 * (i % 2)}"/><geometry>'
            '<box size="0.3 0.06 0.06"/></geometry></collision></link>'
            f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
            '<origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>'
            '<limit lower="-3.1" upper="3.1" effort="1" velocity="1"/></joint>')
    return "".join(parts) + "</robot>"


def test_tables_over_many_joints_change_no_verdict() -> None:
    # The kernel reads each table's joint angles once per configuration (the last two joints
    # read are kept): here consecutive tables use other joints, so kept angles are replaced.
    robot = RobotModel.from_urdf(_folding_chain_urdf())
    checker = CollisionChecker(robot)
    tabs = checker._self_pairs[3]
    tabled = np.flatnonzero(tabs.tab_i[:, 0] >= 0)
    joints = {int(c) for k in tabled for c in tabs.tab_i[k, [4, 6]] if c >= 0}
    assert len(tabled) >= 4 and len(joints) >= 4
    rng = np.random.default_rng(8)
    Q = np.array([robot.random_configuration(rng) for _ in range(6000)])
    exact, covered = _exact_and_covered(checker, [], Q)
    assert 0.05 < exact.mean() < 0.95
    np.testing.assert_array_equal(covered, exact)
