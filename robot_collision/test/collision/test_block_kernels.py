"""block_kernels: the 8-configuration kernels agree with the scalar kernels and with a numpy
brute-force sphere oracle, at block boundaries, with early exits, NaN lanes and strided edges."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import njit

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    Cylinder,
    Mesh,
    PointCloud,
    RobotModel,
    Sphere,
    WorldObject,
)
from robot_collision.collision import block_kernels as bk
from robot_collision.collision.kernels import motion_valid, packed_valid_serial
from robot_collision.geometry.transforms import make_pose, rot_x, rot_y, rot_z

from .test_checker import _sphere_robot_oracle

# a sphere robot with every joint kind the frames must handle: -z, skew and y axes, a prismatic
# joint, fixed links in the middle and at the end, a continuous joint and a mimic joint
ODD_URDF = """<?xml version="1.0"?>
<robot name="odd">
  <link name="base"><collision><geometry><sphere radius="0.08"/></geometry></collision></link>
  <link name="l1"><collision><origin xyz="0 0 0.15"/><geometry><sphere radius="0.05"/></geometry>
    </collision><collision><origin xyz="0.05 0 0.3"/><geometry><sphere radius="0.04"/></geometry>
    </collision></link>
  <link name="l2"><collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.05"/></geometry>
    </collision><collision><origin xyz="0.35 0.02 0"/><geometry><sphere radius="0.04"/></geometry>
    </collision></link>
  <link name="l3"><collision><origin xyz="0.1 0 0.05"/><geometry><sphere radius="0.04"/>
    </geometry></collision></link>
  <link name="l4"><collision><origin xyz="0 0.1 0"/><geometry><sphere radius="0.035"/></geometry>
    </collision></link>
  <link name="l5"><collision><origin xyz="0 0 0.12"/><geometry><sphere radius="0.03"/></geometry>
    </collision><collision><origin xyz="0.03 0 0.2"/><geometry><sphere radius="0.03"/></geometry>
    </collision></link>
  <link name="l6"><collision><origin xyz="0.08 0 0"/><geometry><sphere radius="0.025"/>
    </geometry></collision></link>
  <link name="tip"><collision><origin xyz="0 0 0.05"/><geometry><sphere radius="0.02"/>
    </geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0.1 0 0"/><axis xyz="0 0 -1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.35" rpy="0 0.3 0.2"/><axis xyz="1 1 0.5"/>
    <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
  <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.4 0 0" rpy="0 0 0.4"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.2" effort="1" velocity="1"/></joint>
  <joint name="j4" type="fixed"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.15 0 0" rpy="0.5 -0.2 0.1"/></joint>
  <joint name="j5" type="continuous"><parent link="l4"/><child link="l5"/>
    <origin xyz="0 0.15 0" rpy="0 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="j6" type="revolute"><parent link="l5"/><child link="l6"/>
    <origin xyz="0 0 0.25" rpy="0 0 0"/><axis xyz="1 0 0"/>
    <mimic joint="j2" multiplier="0.5" offset="0.1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j7" type="fixed"><parent link="l6"/><child link="tip"/>
    <origin xyz="0.1 0 0" rpy="0 0 1.0"/></joint>
</robot>
"""


def _odd_world() -> list[WorldObject]:
    return [
        WorldObject(Box(0.3, 0.2, 0.4), make_pose(rot_z(0.4) @ rot_x(0.3), [0.5, 0.2, 0.4]),
                    "box"),
        WorldObject(Capsule(0.05, 0.5), make_pose(rot_y(1.1), [0.1, -0.4, 0.5]), "pole"),
        WorldObject(Sphere(0.12), make_pose(np.eye(3), [-0.3, 0.3, 0.6]), "ball"),
        WorldObject(Cylinder(0.07, 0.4), make_pose(rot_x(1.2) @ rot_z(0.5), [0.2, 0.4, 0.3]),
                    "can"),
        # turned about z only: the kernel's shorter box test
        WorldObject(Box(0.25, 0.15, 0.3), make_pose(rot_z(1.0), [-0.35, -0.3, 0.45]), "crate"),
    ]


def _point_cylinder_signed(p: np.ndarray, obj: WorldObject) -> float:
    """Signed distance of a point to a cylinder object (numpy, closed form)."""
    r, h = obj.shape.params()[:2]
    local = obj.pose[:3, :3].T @ (p - obj.pose[:3, 3])
    rho, z = float(np.hypot(local[0], local[1])), abs(float(local[2]))
    if rho <= r and z <= h:
        return -min(r - rho, h - z)
    return float(np.hypot(max(rho - r, 0.0), max(z - h, 0.0)))


def _oracle_valid(checker: CollisionChecker, q: np.ndarray, world: list[WorldObject],
                  pad: float) -> bool:
    """Verdict from the numpy brute-force distances (sphere robots), with the checker's skip
    rules and a scalar padding."""
    cylinders = [o for o in world if isinstance(o.shape, Cylinder)]
    rest = [o for o in world if not isinstance(o.shape, Cylinder)]
    for key, d in _sphere_robot_oracle(checker.robot, q, rest).items():
        if isinstance(key, frozenset):
            a, b = sorted(key)
            if not checker.is_pair_checked(a, b):
                continue
        if d - pad < 0.0:
            return False
    T = checker.robot.link_transforms(q)
    for obj in cylinders:
        for name in checker.robot.link_names:
            for s, pose in checker.robot.collision_geometry(name):
                if _point_cylinder_signed((T[name] @ pose)[:3, 3], obj) - s.radius - pad < 0.0:
                    return False
    return True


def _scalar(checker: CollisionChecker, Q: np.ndarray, world: list[WorldObject]) -> np.ndarray:
    sc = checker._prepare(world)
    out = np.empty(len(Q), dtype=np.bool_)
    packed_valid_serial(Q, sc.F, sc.I, True, out)
    return out


def _blocked(checker: CollisionChecker, Q: np.ndarray, world: list[WorldObject],
             check_self: bool = True) -> np.ndarray:
    sc = checker._prepare(world)
    assert sc.block is not None
    out = np.empty(len(Q), dtype=np.bool_)
    bk.batch_valid_blocked(Q, sc.block.BF, sc.block.BI, check_self, out)
    return out


@pytest.fixture(scope="module")
def odd_robot() -> RobotModel:
    return RobotModel.from_urdf(ODD_URDF)


@pytest.mark.parametrize("pad", [0.0, 0.02])
def test_odd_joints_agree_with_scalar_and_oracle(odd_robot: RobotModel, pad: float,
                                                 rng: np.random.Generator) -> None:
    checker = CollisionChecker(odd_robot, padding=pad)
    world = _odd_world()
    Q = np.array([odd_robot.random_configuration(rng) for _ in range(203)])  # 25 blocks + 3
    # the continuous joint far from zero (the vector sine/cosine hands |x| > 1e4 to np.sin)
    Q[:, odd_robot.joint_names.index("j5")] += rng.choice([0.0, 40.0, -1e5], size=len(Q))
    got = _blocked(checker, Q, world)
    np.testing.assert_array_equal(got, _scalar(checker, Q, world))
    oracle = np.array([_oracle_valid(checker, q, world, pad) for q in Q])
    np.testing.assert_array_equal(got, oracle)
    assert 0 < got.sum() < len(got)


@pytest.mark.mbm
@pytest.mark.parametrize("N", [1, 7, 8, 9, 17, 301])
def test_panda_batches_agree_at_block_boundaries(panda: RobotModel, cage_world: list, N: int,
                                                 rng: np.random.Generator) -> None:
    extra = [
        WorldObject(Capsule(0.05, 0.4), make_pose(rot_x(0.4) @ rot_z(0.3), [0.4, 0.2, 0.5]),
                    "pole"),
        WorldObject(Sphere(0.1), make_pose(np.eye(3), [0.3, -0.3, 0.6]), "ball"),
        WorldObject(Cylinder(0.06, 0.5), make_pose(rot_y(0.7), [-0.2, 0.4, 0.5]), "can"),
    ]
    world = cage_world + extra
    checker = CollisionChecker(panda, padding=0.01)
    Q = np.array([panda.random_configuration(rng) for _ in range(N)])
    got = _blocked(checker, Q, world)
    np.testing.assert_array_equal(got, _scalar(checker, Q, world))
    for q, ok in zip(Q[:40], got[:40]):
        assert ok == _oracle_valid(checker, q, world, 0.01)
    # ignore_self: world pairs only
    sc = checker._prepare(world)
    ref = np.array([checker.is_valid(q, world, ignore_self=True) for q in Q])
    np.testing.assert_array_equal(_blocked(checker, Q, world, check_self=False), ref)
    assert sc.block is not None


@pytest.mark.mbm
def test_panda_near_contact(panda: RobotModel, cage_world: list, rng: np.random.Generator) -> None:
    """Configurations on segments that enter collision: many lanes within a few mm of
    contact."""
    checker = CollisionChecker(panda)
    Q = []
    for _ in range(12):
        a, b = panda.random_configuration(rng), panda.random_configuration(rng)
        Q.append(np.linspace(a, b, 64))
    Qa = np.concatenate(Q)
    got = _blocked(checker, Qa, cage_world)
    np.testing.assert_array_equal(got, _scalar(checker, Qa, cage_world))
    flips = np.count_nonzero(np.diff(got.astype(int)))
    assert flips > 4  # contact boundaries crossed inside blocks


def _cloud_world(rng: np.random.Generator) -> list[WorldObject]:
    """A wall and a lumpy patch of points (1-2 cm apart) around the Panda's workspace."""
    u, v = np.meshgrid(np.linspace(-0.5, 0.5, 40), np.linspace(0.0, 0.9, 36))
    wall = np.stack([np.full(u.size, 0.55), u.ravel(), v.ravel()], axis=1)
    patch = rng.normal(size=(600, 3)) * [0.12, 0.12, 0.05] + [0.0, 0.45, 0.45]
    return [
        WorldObject(PointCloud(wall, 0.005), make_pose(rot_z(0.3), [0.05, 0.0, 0.0]), "wall"),
        WorldObject(PointCloud(patch), make_pose(rot_x(0.2), [0.0, 0.0, 0.1]), "patch"),
        WorldObject(Box(0.2, 0.2, 0.2), make_pose(np.eye(3), [-0.4, -0.3, 0.5]), "box"),
    ]


def _cloud_oracle_valid(checker: CollisionChecker, q: np.ndarray, world: list[WorldObject],
                        pad: float) -> bool:
    """Brute force: every sphere against every point (and the box via the sphere oracle)."""
    T = checker.robot.link_transforms(q)
    for obj in world:
        if not isinstance(obj.shape, PointCloud):
            continue
        P = obj.shape.points @ obj.pose[:3, :3].T + obj.pose[:3, 3]
        for name in checker.robot.link_names:
            for s, pose in checker.robot.collision_geometry(name):
                c = (T[name] @ pose)[:3, 3]
                if np.min(np.linalg.norm(P - c, axis=1)) - s.radius - obj.shape.radius < pad:
                    return False
    rest = [o for o in world if not isinstance(o.shape, PointCloud)]
    return _oracle_valid(checker, q, rest, pad)


@pytest.mark.mbm
@pytest.mark.parametrize("pad", [0.0, 0.015])
def test_point_clouds_agree_with_scalar_and_brute_force(panda: RobotModel, pad: float,
                                                        rng: np.random.Generator) -> None:
    world = _cloud_world(rng)
    checker = CollisionChecker(panda, padding=pad)
    assert checker._prepare(world).block is not None
    Q = [np.array([panda.random_configuration(rng) for _ in range(61)])]
    for _ in range(4):  # segments entering the clouds: lanes near contact
        a, b = panda.random_configuration(rng), panda.random_configuration(rng)
        Q.append(np.linspace(a, b, 40))
    Qa = np.concatenate(Q)
    got = _blocked(checker, Qa, world)
    np.testing.assert_array_equal(got, _scalar(checker, Qa, world))
    for q, ok in zip(Qa[::4], got[::4]):
        assert ok == _cloud_oracle_valid(checker, q, world, pad)
    assert 0 < got.sum() < len(got)
    # edges: strided blocked order against dense scalar checks
    sc = checker._prepare(world)
    assert sc.block is not None
    W, RI = bk.block_workspace(sc.block.BI)
    for _ in range(10):
        a = Qa[rng.integers(len(Qa))]
        d = 0.3 * (panda.random_configuration(rng) - a)
        dense = a + d * (np.arange(1, 21) / 20)[:, None]
        expected = bool(_scalar(checker, dense, world).all())
        r = bk.edge_valid_blocked(a, d, 20, 1, sc.block.BF, sc.block.BI, W, RI, True)
        assert (r > 0) == expected


def test_nan_lanes_collide_and_leave_the_others_alone(odd_robot: RobotModel,
                                                      rng: np.random.Generator) -> None:
    checker = CollisionChecker(odd_robot)
    world = _odd_world()
    Q = np.array([odd_robot.random_configuration(rng) for _ in range(21)])
    ref = _blocked(checker, Q, world)
    bad = Q.copy()
    bad[3, 1] = np.nan
    bad[8, 0] = np.inf
    bad[9, 3] = -np.inf
    bad[20, :] = np.nan  # in the last, partial block
    got = _blocked(checker, bad, world)
    assert not got[[3, 8, 9, 20]].any()
    keep = np.setdiff1d(np.arange(len(Q)), [3, 8, 9, 20])
    np.testing.assert_array_equal(got[keep], ref[keep])


def test_early_exit_when_every_lane_collides(odd_robot: RobotModel,
                                             rng: np.random.Generator) -> None:
    """A block stops when no lane is left; the next block starts afresh."""
    checker = CollisionChecker(odd_robot)
    Q = np.array([odd_robot.random_configuration(rng) for _ in range(24)])
    engulf = [WorldObject(Sphere(0.05), make_pose(np.eye(3), [0.0, 0.0, 0.0]), "at_base")]
    assert not _blocked(checker, Q, engulf).any()  # the base sphere always overlaps it
    world = _odd_world()
    mixed = Q.copy()
    mixed[8:16] = np.nan  # the middle block dies at once
    got = _blocked(checker, mixed, world)
    assert not got[8:16].any()
    np.testing.assert_array_equal(got[:8], _scalar(checker, Q[:8], world))
    np.testing.assert_array_equal(got[16:], _scalar(checker, Q[16:], world))


def test_any_hit_mode_stops_at_the_first_collision(odd_robot: RobotModel,
                                                    rng: np.random.Generator) -> None:
    """Edges and single checks ask whether every lane is free: 0 as soon as one collides, the
    full mask otherwise (or the lanes asked for)."""
    checker = CollisionChecker(odd_robot)
    world = _odd_world()
    sc = checker._prepare(world)
    assert sc.block is not None
    W, RI = bk.block_workspace(sc.block.BI)
    n = odd_robot.num_joints
    seen = set()
    for _ in range(40):
        Q = np.array([odd_robot.random_configuration(rng) for _ in range(8)])
        lanes = _scalar(checker, Q, world)
        W[: 8 * n] = Q.T.ravel()
        for want in (255, 0b10110101):
            per_lane = bk.block_valid(sc.block.BF, sc.block.BI, W, RI, want, True, False)
            any_hit = bk.block_valid(sc.block.BF, sc.block.BI, W, RI, want, True, True)
            free = int(sum(1 << k for k in range(8) if lanes[k])) & want
            assert per_lane == free
            assert any_hit == (want if free == want else 0)
            seen.add(free == want)
    assert seen == {True, False}


@pytest.mark.parametrize("first", [0, 1])
def test_strided_edges_agree_with_dense_sequential_checks(odd_robot: RobotModel, first: int,
                                                          rng: np.random.Generator) -> None:
    checker = CollisionChecker(odd_robot)
    world = _odd_world()
    sc = checker._prepare(world)
    assert sc.block is not None
    W, RI = bk.block_workspace(sc.block.BI)
    outcomes = set()
    for steps in [*range(1, 20), 31, 32, 33, 64, 65, 100]:
        for _ in range(4):
            a, b = odd_robot.random_configuration(rng), odd_robot.random_configuration(rng)
            d = 0.3 * (b - a)
            dense = a + d * (np.arange(first, steps + 1) / steps)[:, None]
            expected = bool(_scalar(checker, dense, world).all())
            r = bk.edge_valid_blocked(a, d, steps, first, sc.block.BF, sc.block.BI, W, RI, True)
            assert (r > 0) == expected
            if expected:
                assert r == steps + 1 - first  # every configuration checked exactly once
            outcomes.add(expected)
    assert outcomes == {True, False}


@pytest.mark.mbm
def test_motion_valid_uses_the_strided_kernel(panda: RobotModel, cage_world: list,
                                              rng: np.random.Generator) -> None:
    checker = CollisionChecker(panda)
    sc = checker._prepare(cage_world)
    kin = panda.kin
    L = len(panda.link_names)
    for _ in range(30):
        a, b = panda.random_configuration(rng), panda.random_configuration(rng)
        b = a + 0.4 * (b - a)
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) * 32)))
        scalar = motion_valid(a, b, steps, kin, sc.rs, sc.ws, sc.pr, True, np.empty((L, 4, 4)),
                              np.empty((len(sc.rs.kind), 4, 4)), np.zeros(L, np.bool_),
                              np.empty((L + 3, 3)))
        assert checker.is_motion_valid(a, b, cage_world) == scalar


def test_unsupported_scenes_fall_back_to_the_scalar_kernels(default_robot: RobotModel,
                                                            odd_robot: RobotModel,
                                                            rng: np.random.Generator) -> None:
    # capsules on the robot
    checker = CollisionChecker(default_robot)
    assert checker._prepare([]).block is None
    # a mesh in the world
    odd = CollisionChecker(odd_robot)
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.1
    world = [WorldObject(Mesh(cube), make_pose(np.eye(3), [0.3, 0.0, 0.5]), "mesh")]
    assert odd._prepare(world).block is None
    Q = np.array([odd_robot.random_configuration(rng) for _ in range(30)])
    np.testing.assert_array_equal(odd.is_valid_batch(Q, world), _scalar(odd, Q, world))
    # negative padding that makes a sphere radius vanish against a box
    neg = CollisionChecker(odd_robot, padding=-0.03)
    assert neg._prepare([WorldObject(Box(0.1, 0.1, 0.1), make_pose(np.eye(3), [1, 1, 1]),
                                     "b")]).block is None
    assert neg._prepare([WorldObject(Sphere(0.1), make_pose(np.eye(3), [1, 1, 1]),
                                     "s")]).block is not None


def _native(disp, name: str, kind: str) -> str:  # type: ignore[no-untyped-def]
    text = disp.inspect_llvm(disp.signatures[0]) if kind == "ir" else disp.inspect_asm(
        disp.signatures[0])
    if kind == "ir":
        for m in re.finditer(r"define [^\n]*\{.*?\n\}", text, re.S):
            head = m.group(0).split("\n", 1)[0]
            if name in head and "cpython" not in head and "cfunc" not in head:
                return m.group(0)
    else:
        for m in re.finditer(r"^([_A-Za-z]\S*):\n", text, re.M):
            if name in m.group(1) and not m.group(1).startswith(("_ZN7cpython", "cfunc")):
                return text[m.end():text.find(".Lfunc_end", m.end())]
    raise AssertionError(f"no native function {name}")


def test_block_kernel_is_vectorised_and_free_of_reference_counting(
        odd_robot: RobotModel) -> None:
    """The point of the block kernel: 8-lane vector instructions (zmm with AVX-512, ymm with
    AVX2) and, as for the scalar kernel, no reference counting per call."""
    checker = CollisionChecker(odd_robot)
    sc = checker._prepare(_odd_world())
    assert sc.block is not None
    W, RI = bk.block_workspace(sc.block.BI)
    fresh = njit(**{**bk._OPTS, "cache": False})(bk.block_valid.py_func)
    W[: 8 * odd_robot.num_joints] = 0.1
    fresh(sc.block.BF, sc.block.BI, W, RI, 255, True, False)
    ir = _native(fresh, "block_valid", "ir")
    assert ir.count("NRT_incref") == 0 and ir.count("NRT_decref") == 0
    assert "<8 x double>" in ir
    asm = _native(fresh, "block_valid", "asm")
    vector_ops = len(re.findall(r"\b[a-z0-9]+pd\s+[^\n]*%[yz]mm", asm))
    assert vector_ops > 100


@pytest.mark.parametrize("pad", [0.0, 0.03])
def test_block_valid_from_starts_at_a_test_and_records_the_failing_one(
        odd_robot: RobotModel, pad: float, rng: np.random.Generator) -> None:
    """``block_valid_from`` (the certified stage's sub-intervals): from test position ``first``
    on, a lane is returned free exactly when no later test collides, and a lane in collision
    is reported at its first colliding test. Oracle: the scalar kernel's exhaustive padded
    pair distances (world link l: any object below 0; self pair (a, b))."""
    checker = CollisionChecker(odd_robot, padding=pad)
    world = _odd_world()
    sc = checker._prepare(world)
    assert sc.block is not None
    BF, BI = sc.block.BF, sc.block.BI
    nl, P, L = int(BI[bk.H_NL]), int(BI[bk.H_P]), int(BI[bk.H_L])
    order = BI[BI[bk.H_ORDER]: BI[bk.H_ORDER] + nl]
    pa = BI[BI[bk.H_PA]: BI[bk.H_PA] + P]
    pb = BI[BI[bk.H_PB]: BI[bk.H_PB] + P]
    W, RI = bk.block_workspace(BI)
    dead = np.zeros(8, dtype=np.int64)
    n = odd_robot.num_joints
    seen_world = seen_self = 0
    for _ in range(40):
        a, b = odd_robot.random_configuration(rng), odd_robot.random_configuration(rng)
        Q = np.linspace(a, b, 8)  # lanes crossing contact boundaries
        hits = np.zeros((8, nl + P), dtype=bool)
        for k in range(8):
            D = checker.pair_distances(Q[k], world).D
            hits[k, :nl] = (D[order, L:] < 0.0).any(axis=1)
            hits[k, nl:] = np.minimum(D[pa, pb], D[pb, pa]) < 0.0
        W[: 8 * n] = Q.T.ravel()
        ref = bk.block_valid(BF, BI, W, RI, 255, True, False)
        for first in (0, int(rng.integers(1, nl + P)), nl):
            alive = bk.block_valid_from(BF, BI, W, RI, 255, True, first, dead)
            if first == 0:
                assert alive == ref
            for k in range(8):
                later = np.flatnonzero(hits[k, first:]) + first
                assert bool((alive >> k) & 1) == (len(later) == 0), (k, first, later)
                if len(later):
                    assert dead[k] == later[0], (k, first, dead[k], later)
                    seen_world += int(later[0] < nl)
                    seen_self += int(later[0] >= nl)
    assert seen_world > 10 and seen_self > 10
