"""MoveIt's ``PlanningScene.world.octomap`` as an obstacle of the nodes' world
(robot_collision.ros.world.octomap_update, WorldModel.apply_planning_scene).

Oracle: the voxels encoded into the stream (the test's reference encoder, from the format's
specification: test/geometry/test_octomap.py), placed by the origin pose computed here with
scipy; coverage judged by brute force: every voxel's corners inside its leaf's ball.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_collision.geometry.octomap import OctomapError
from robot_collision.geometry.point_cloud import OccupancyMap
from robot_collision.ros.world import OCTOMAP_ID, WorldConfigError, WorldModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "geometry"))
from test_octomap import _encode, _expected, _tree

RES = 0.05
Q = Rotation.from_euler("xyz", [0.2, -0.3, 0.9])


def _pose(xyz: tuple[float, float, float]) -> SimpleNamespace:
    x, y, z, w = Q.as_quat()
    return SimpleNamespace(position=SimpleNamespace(x=xyz[0], y=xyz[1], z=xyz[2]),
                           orientation=SimpleNamespace(x=x, y=y, z=z, w=w))


def _scene(voxels: dict, is_diff: bool, frame: str = "base_link", kind: str = "OcTree",
           binary: bool = True) -> SimpleNamespace:
    tree = _tree(voxels, prune=True)
    data = list(np.frombuffer(_encode(tree), dtype=np.int8)) if tree else []
    octo = SimpleNamespace(binary=binary, id=kind, resolution=RES, data=data)
    wrapped = SimpleNamespace(header=SimpleNamespace(frame_id=frame),
                              origin=_pose((0.4, -0.1, 0.3)), octomap=octo)
    return SimpleNamespace(is_diff=is_diff, world=SimpleNamespace(collision_objects=[],
                                                                  octomap=wrapped))


def _voxels() -> dict:
    b = 2**15
    v = {(b + x, b + y, b + z): True for x in range(2) for y in range(2) for z in range(2)}
    v.update({(b - 4, b + 1, b): True, (b - 4, b + 2, b): False, (b + 3, b - 2, b + 1): True})
    return v


def test_octomap_leaves_become_conservative_obstacles_at_the_origin_pose() -> None:
    world = WorldModel(frame_ids=["base_link"])
    voxels = _voxels()
    world.apply_planning_scene(_scene(voxels, is_diff=True))
    assert OCTOMAP_ID in world
    objs = world.objects()
    assert all(isinstance(o.shape, OccupancyMap) for o in objs)
    # the true voxels (centres and corners) in the base frame
    C = Q.apply(_expected(voxels, RES)) + np.array([0.4, -0.1, 0.3])
    corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]) * RES / 2
    V = (C[:, None, :] + Q.apply(corners)[None]).reshape(-1, 3)
    inside = np.zeros(len(V), dtype=bool)
    for o in objs:
        P = o.shape.points @ o.pose[:3, :3].T + o.pose[:3, 3]
        d = np.linalg.norm(V[:, None, :] - P[None], axis=2)
        inside |= (d <= o.shape.radius + 1e-9).any(axis=1)
    assert inside.all()
    # no ball is centred away from a true voxel by more than the pruned block's half side
    for o in objs:
        P = o.shape.points @ o.pose[:3, :3].T + o.pose[:3, 3]
        assert np.linalg.norm(P[:, None] - C[None], axis=2).min(axis=1).max() <= RES + 1e-9


def test_octomap_diffs_full_scenes_and_bad_maps() -> None:
    world = WorldModel(frame_ids=["base_link"])
    world.apply_planning_scene(_scene(_voxels(), is_diff=True))
    v0 = world.version
    # a diff without octomap data leaves it; a full scene without one removes it
    world.apply_planning_scene(_scene({}, is_diff=True))
    assert OCTOMAP_ID in world and world.version == v0
    world.apply_planning_scene(_scene({}, is_diff=False))
    assert OCTOMAP_ID not in world
    # a map whose leaves are all free removes it
    world.apply_planning_scene(_scene(_voxels(), is_diff=True))
    b = 2**15
    world.apply_planning_scene(_scene({(b, b, b): False}, is_diff=True))
    assert OCTOMAP_ID not in world
    # unreadable maps and foreign frames: typed errors, the world unchanged
    world.apply_planning_scene(_scene(_voxels(), is_diff=True))
    v1 = world.version
    with pytest.raises(OctomapError, match="non-binary"):
        world.apply_planning_scene(_scene(_voxels(), is_diff=False, binary=False))
    with pytest.raises(OctomapError, match="not an OcTree"):
        world.apply_planning_scene(_scene(_voxels(), is_diff=True, kind="CountingOcTree"))
    with pytest.raises(WorldConfigError, match="frame"):
        world.apply_planning_scene(_scene(_voxels(), is_diff=True, frame="map"))
    assert world.version == v1 and OCTOMAP_ID in world


def test_real_planning_scene_octomap_over_the_wire() -> None:
    """The real moveit_msgs/PlanningScene with an octomap_msgs/Octomap (int8[] data as rclpy
    gives it), after a serialization round trip, holding the OctoMap library's own tree
    (test/data/octomap, see test/geometry/test_octomap.py)."""
    moveit = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed")
    from rclpy.serialization import deserialize_message, serialize_message

    fixture = Path(__file__).resolve().parents[1] / "data" / "octomap"
    scene = moveit.PlanningScene()
    scene.is_diff = True
    om = scene.world.octomap
    om.header.frame_id = "base_link"
    om.origin.position.x = 0.5
    om.origin.orientation.w = 1.0
    om.octomap.binary = True
    om.octomap.id = "OcTree"
    om.octomap.resolution = 0.05
    om.octomap.data = np.frombuffer((fixture / "tree.bt").read_bytes(), dtype=np.int8).tolist()
    wired = deserialize_message(serialize_message(scene), moveit.PlanningScene)
    world = WorldModel(frame_ids=["base_link"])
    world.apply_planning_scene(wired)
    leaves = np.loadtxt(fixture / "leaves.txt")
    centres = np.concatenate([o.shape.points + o.pose[:3, 3] for o in world.objects()])
    assert len(centres) == len(leaves)
    np.testing.assert_allclose(np.sort(centres[:, 0]), np.sort(leaves[:, 0] + 0.5), atol=2e-6)
