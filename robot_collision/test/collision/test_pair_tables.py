"""Joint-space self-pair tables (collision.pair_tables): the joint angles read back from link
poses equal the configuration's, and every tabulated cell value is within the cell's bound δ of
the exact signed distance (the narrow phase at the configuration itself) everywhere in the
cell, on random mesh-Panda configurations."""

from __future__ import annotations

import numpy as np
import pytest

from robot_collision import CollisionChecker, RobotModel
from robot_collision.collision.kernels import _joint_angle, _table_cell
from robot_collision.collision.pair_tables import TABLE_TOL


@pytest.fixture(scope="module")
def mesh_panda() -> RobotModel:
    import mbm

    return RobotModel.from_urdf(mbm.MBM_DIR / "panda.urdf", srdf=mbm.MBM_DIR / "panda.srdf")


@pytest.mark.mbm
def test_tables_bound_the_exact_distance(mesh_panda: RobotModel) -> None:
    robot = mesh_panda
    checker = CollisionChecker(robot)
    sa, sb, _, tabs = checker._self_pairs
    with_table = np.flatnonzero(tabs.tab_i[:, 0] >= 0)
    names = {(robot.link_names[sa[k]], robot.link_names[sb[k]]) for k in with_table}
    # the wrist pairs two joints apart have tables; pairs four joints apart do not
    assert ("panda_link5", "panda_link7") in names and ("panda_link5", "panda_hand") in names
    assert all(abs(int(sb[k]) - int(sa[k])) <= 6 for k in with_table)
    kin = robot.kin
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(1500):
        q = robot.random_configuration(rng)
        T = robot.link_poses(q)
        D = checker.pair_distances(q, exhaustive=True).D
        for k in with_table:
            ti, tf = tabs.tab_i, tabs.tab_f
            for j, (p_col, c_col) in enumerate(((3, 4), (5, 6))):
                c = ti[k, c_col]
                if c < 0:
                    continue
                angle = _joint_angle(T, ti[k, p_col], c, tf, k, 12 * j)
                want = kin.scale[c] * q[kin.qidx[c]] + kin.offset[c]
                assert abs(np.angle(np.exp(1j * (angle - want)))) < 1e-9
            i1 = _table_cell(_joint_angle(T, ti[k, 3], ti[k, 4], tf, k, 0), ti[k, 1])
            i2 = (_table_cell(_joint_angle(T, ti[k, 5], ti[k, 6], tf, k, 12), ti[k, 2])
                  if ti[k, 6] >= 0 else 0)
            d_cell = tabs.data[ti[k, 0] + i1 * ti[k, 2] + i2]
            d = D[sa[k], sb[k]]
            if not np.isfinite(d):
                continue
            err = abs(d - d_cell)
            assert err <= tf[k, 24] + TABLE_TOL, (k, d, d_cell, tf[k, 24])
            worst = max(worst, err / tf[k, 24])
    assert worst > 0.05  # the bound is not vacuous


def test_tables_have_one_row_per_pair() -> None:
    from robot_collision import default_robot_paths

    urdf, srdf = default_robot_paths()
    checker = CollisionChecker(RobotModel.from_urdf(urdf, srdf))
    tabs = checker._self_pairs[3]
    assert tabs.tab_i.shape[0] == len(checker._self_pairs[0])


@pytest.mark.mbm
def test_chain_poses_are_the_forward_kinematics(mesh_panda: RobotModel) -> None:
    """The tables' relative poses, from the chain between the two links alone
    (``_chain_arrays``, driven by the moving joints' angles), equal the whole robot's forward
    kinematics' ``T_lo^-1 T_hi`` at random configurations, for every pair that has a table."""
    from robot_collision.collision.pair_tables import _chain, _chain_arrays
    from robot_collision.model.kinematics import forward_kinematics

    robot = mesh_panda
    kin = robot.kin
    sa, sb, _, tabs = CollisionChecker(robot)._self_pairs
    rng = np.random.default_rng(3)
    checked = 0
    for k in np.flatnonzero(tabs.tab_i[:, 0] >= 0):
        ch = _chain(kin, int(sa[k]), int(sb[k]))
        assert ch is not None
        lo, hi, moving = ch
        chain, _ = _chain_arrays(kin, lo, hi, moving)
        for _ in range(20):
            q = robot.random_configuration(rng)
            T = robot.link_poses(q)
            want = np.linalg.inv(T[lo]) @ T[hi]
            theta = np.array([kin.scale[c] * q[kin.qidx[c]] + kin.offset[c] for c in moving])
            got = forward_kinematics(theta, *chain)[-1]
            np.testing.assert_allclose(got, want, atol=1e-12)
            checked += 1
    assert checked >= 20 * 4
