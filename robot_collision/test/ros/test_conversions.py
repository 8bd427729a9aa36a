"""Message ↔ core conversions and marker building (no node, no spinning)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robot_collision import (
    Box,
    Capsule,
    CollisionChecker,
    Cylinder,
    Mesh,
    RobotModel,
    Sphere,
    WorldObject,
    default_robot_paths,
)
from robot_collision.geometry.transforms import pose_from_xyz_rpy

pytest.importorskip("rclpy")

from geometry_msgs.msg import Point, Pose
from sensor_msgs.msg import JointState
from shape_msgs.msg import Mesh as MeshMsg
from shape_msgs.msg import MeshTriangle, Plane, SolidPrimitive
from visualization_msgs.msg import Marker

from robot_collision.ros.conversions import (
    ADD,
    APPEND,
    MOVE,
    REMOVE,
    ConversionError,
    JointStateMapper,
    check_result_to_response,
    clearance_table_from_msg,
    clearance_table_to_msg,
    collision_object_to_update,
    collision_object_to_world_objects,
    matrix_to_pose,
    mesh_msg_to_shape,
    pose_to_matrix,
    shape_to_solid_primitive,
    solid_primitive_to_shape,
    world_object_to_msg,
    world_update_from_msg,
)
from robot_collision.ros.markers import ClearanceMarkers, clearance_color
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg
from robot_collision_interfaces.srv import CheckCollision

NAMES = [f"joint{i + 1}" for i in range(7)]
Q = np.array([0.1, 0.8, -0.2, 1.8, 0.3, 0.8, -0.4])


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    urdf, srdf = default_robot_paths()
    return RobotModel.from_urdf(urdf, srdf=srdf)


def _js(names: list[str], positions: list[float]) -> Any:
    msg = JointState()
    msg.name = names
    msg.position = positions
    return msg


def _pose(xyz: Any = (0, 0, 0), quat: Any = (0, 0, 0, 1)) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in xyz)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in quat)
    return p


def _prim(kind: int, dims: list[float]) -> SolidPrimitive:
    p = SolidPrimitive()
    p.type = kind
    p.dimensions = dims
    return p


# --------------------------------------------------------------------------- joint states
def test_joint_state_mapping_by_name() -> None:
    m = JointStateMapper(NAMES)
    order = [3, 0, 6, 1, 5, 2, 4]
    msg = _js([NAMES[i] for i in order] + ["finger"], [float(Q[i]) for i in order] + [math.nan])
    np.testing.assert_array_equal(m.from_msg(msg), Q)
    np.testing.assert_array_equal(m.from_msg(msg), Q)  # cached layout
    # fallback fills missing joints
    q = m.positions(["joint2"], [0.5], fallback=np.zeros(7))
    np.testing.assert_array_equal(q, [0, 0.5, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(m.positions([], [], fallback=Q), Q)


@pytest.mark.parametrize(
    ("names", "positions", "text"),
    [
        (NAMES, [0.0] * 6, "7 joint names but 6 positions"),
        (NAMES[:6], [0.0] * 6, "lacks joints ['joint7']"),
        (NAMES, [0, 0, math.nan, 0, 0, 0, 0], "non-finite positions for joints ['joint3']"),
        (NAMES, [0, 0, 0, 0, 0, 0, math.inf], "non-finite positions for joints ['joint7']"),
        ([], [], "empty"),
        ([*NAMES, "joint1"], [0.0] * 8, "named twice"),
        (["a", "b"], [0.0, 1.0], "lacks joints"),
    ],
)
def test_joint_state_errors(names: list[str], positions: list[float], text: str) -> None:
    with pytest.raises(ConversionError, match=None) as info:
        JointStateMapper(NAMES).from_msg(_js(names, positions))
    assert text in str(info.value)


def test_errors_and_the_layout_cache_do_not_grow_with_the_message() -> None:
    """A 100,000-character name (the fuzz's long_name) was copied whole into every error text
    and log line; distinct long name lists were kept in the layout cache."""
    m = JointStateMapper(NAMES)
    long_name = "j" * 100_000
    cases = [([*NAMES[:6], long_name], [0.0] * 7), ([long_name, long_name], [0.0, 0.0]),
             ([f"{i}{long_name}" for i in range(40)], [0.0] * 40)]
    for names, positions in cases:
        with pytest.raises(ConversionError) as info:
            m.positions(names, positions, allow_unknown=False)
        assert len(str(info.value)) < 2000
        with pytest.raises(ConversionError) as info:
            m.positions(names, positions)
        assert len(str(info.value)) < 2000
    assert sum(len(n) for key in m._layouts for n in key) <= 32 * JointStateMapper._MAX_CACHED_CHARS
    assert all(long_name not in key for key in m._layouts)


def test_unknown_names_strict() -> None:
    m = JointStateMapper(NAMES)
    with pytest.raises(ConversionError, match="unknown joint names \\['elbow'\\]"):
        m.positions([*NAMES, "elbow"], [0.0] * 8, allow_unknown=False)
    assert m.positions([*NAMES, "elbow"], [0.0] * 8).shape == (7,)


# --------------------------------------------------------------------------- poses
def test_pose_round_trip() -> None:
    T = pose_from_xyz_rpy([0.1, -0.2, 0.3], [0.4, -0.5, 2.9])
    np.testing.assert_allclose(pose_to_matrix(matrix_to_pose(T)), T, atol=1e-12)
    # non-normalised quaternions are normalised
    np.testing.assert_allclose(pose_to_matrix(_pose(quat=(0, 0, 0, 2.0))), np.eye(4))


@pytest.mark.parametrize(
    ("pose", "text"),
    [
        (_pose(quat=(0, 0, 0, 0)), "zero quaternion"),
        (_pose(xyz=(math.nan, 0, 0)), "non-finite"),
        (_pose(quat=(0, math.inf, 0, 1)), "non-finite"),
    ],
)
def test_bad_poses(pose: Pose, text: str) -> None:
    with pytest.raises(ConversionError, match=text):
        pose_to_matrix(pose)


# --------------------------------------------------------------------------- clearance
def test_clearance_table_round_trip(robot: RobotModel) -> None:
    world = [WorldObject(Box(0.8, 1.2, 0.05), pose_from_xyz_rpy([0.75, 0, -0.025], [0, 0, 0]),
                         "table")]
    checker = CollisionChecker(robot)
    table = checker.clearance(Q, world, 0.3)
    assert len(table) > 3
    stamp = SimpleNamespace(sec=12, nanosec=34)
    from builtin_interfaces.msg import Time

    msg = clearance_table_to_msg(table, Time(sec=stamp.sec, nanosec=stamp.nanosec), "base_link")
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 34)
    assert msg.header.frame_id == "base_link"
    assert len(msg.jacobian) == len(table) * 7
    np.testing.assert_array_equal(np.asarray(msg.jacobian).reshape(len(table), 7),
                                  table.jacobians)
    assert msg.min_distance == table.min_distance
    back = clearance_table_from_msg(msg, robot.link_names)
    assert back.robot_bodies == table.robot_bodies
    assert back.other_bodies == table.other_bodies
    for name in ("kinds", "distances", "witness_robot", "witness_other", "normals", "jacobians",
                 "robot_links", "other_links"):
        np.testing.assert_array_equal(getattr(back, name), getattr(table, name), err_msg=name)
    # empty table: +inf, not in collision, empty jacobian
    empty = checker.clearance(np.zeros(7), [], 1e-6)
    msg = clearance_table_to_msg(empty)
    assert msg.rows == [] and math.isinf(msg.min_distance) and not msg.in_collision
    assert len(clearance_table_from_msg(msg)) == 0
    msg.jacobian = [1.0, 2.0]
    msg.rows = clearance_table_to_msg(table).rows[:1]
    with pytest.raises(ConversionError, match="jacobian has 2 values"):
        clearance_table_from_msg(msg)


def test_check_result_to_response(robot: RobotModel) -> None:
    world = [WorldObject(Sphere(0.1), pose_from_xyz_rpy([0, 0, 1.2], [0, 0, 0]), "ball")]
    res = CollisionChecker(robot).check(np.zeros(7), world, exhaustive=True)
    resp = check_result_to_response(res, CheckCollision.Response())
    R, C = res.separation.shape
    assert resp.success and resp.is_world_colliding and "ball" in resp.message
    assert list(resp.column_names) == [*robot.body_names, "base_link", "ball"]
    np.testing.assert_array_equal(np.asarray(resp.separation).reshape(R, C), res.separation)
    np.testing.assert_array_equal(np.asarray(resp.witness).reshape(R, C, 2, 3), res.witness)
    assert all("=" in p for p in resp.colliding_pairs)


# --------------------------------------------------------------------------- shapes
def test_primitives() -> None:
    assert solid_primitive_to_shape(_prim(SolidPrimitive.BOX, [0.1, 0.2, 0.3])) == Box(
        0.1, 0.2, 0.3)
    assert solid_primitive_to_shape(_prim(SolidPrimitive.SPHERE, [0.1])) == Sphere(0.1)
    cyl = _prim(SolidPrimitive.CYLINDER, [0.5, 0.05])  # [height, radius]
    assert solid_primitive_to_shape(cyl) == Cylinder(0.05, 0.5)
    assert solid_primitive_to_shape(cyl, cylinder_is_capsule=True) == Capsule(0.05, 0.5)
    for shape in (Box(0.1, 0.2, 0.3), Sphere(0.2), Cylinder(0.05, 0.5), Capsule(0.05, 0.5)):
        prim, capsule = shape_to_solid_primitive(shape)
        assert solid_primitive_to_shape(prim, capsule) == shape


@pytest.mark.parametrize(
    ("prim", "text"),
    [
        (_prim(SolidPrimitive.CONE, [0.2, 0.1]), "CONE is not supported"),
        (_prim(9, [0.2]), "type 9 is not supported"),
        (_prim(SolidPrimitive.BOX, [0.1, 0.2]), "BOX needs 3 dimensions"),
        (_prim(SolidPrimitive.SPHERE, []), "SPHERE needs 1 dimensions"),
        (_prim(SolidPrimitive.SPHERE, [-0.1]), "radius must be a finite positive"),
        (_prim(SolidPrimitive.BOX, [0.1, math.nan, 0.1]), "finite positive"),
    ],
)
def test_bad_primitives(prim: SolidPrimitive, text: str) -> None:
    with pytest.raises(ConversionError, match=text):
        solid_primitive_to_shape(prim)


def _mesh_msg(points: list[tuple[float, float, float]]) -> MeshMsg:
    m = MeshMsg()
    m.vertices = [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in points]
    tri = MeshTriangle()
    tri.vertex_indices = [0, 1, 2]
    m.triangles = [tri]
    return m


def test_mesh_conversion() -> None:
    tet = [(0, 0, 0), (0.2, 0, 0), (0, 0.2, 0), (0, 0, 0.2), (0.05, 0.05, 0.05)]
    shape = mesh_msg_to_shape(_mesh_msg(tet))
    assert isinstance(shape, Mesh) and shape.vertices().shape == (4, 3)  # hull drops the inner
    with pytest.raises(ConversionError, match="mesh"):
        mesh_msg_to_shape(_mesh_msg([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]))  # flat
    with pytest.raises(ConversionError, match="at least 4"):
        mesh_msg_to_shape(_mesh_msg([(0, 0, 0)]))


# --------------------------------------------------------------------------- world updates
def test_world_object_messages() -> None:
    T = pose_from_xyz_rpy([0.5, 0.1, 0.2], [0.0, 0.3, 0.1])
    for shape in (Box(0.1, 0.2, 0.3), Sphere(0.1), Cylinder(0.05, 0.4), Capsule(0.03, 0.2),
                  Mesh(np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]]))):
        msg = world_object_to_msg(WorldObject(shape, T, "thing"))
        upd = world_update_from_msg(msg)
        assert (upd.operation, upd.object_id) == (ADD, "thing")
        (obj,) = upd.world_objects()
        assert obj.name == "thing"
        np.testing.assert_allclose(obj.pose, T, atol=1e-12)
        if isinstance(shape, Mesh):
            np.testing.assert_allclose(np.sort(obj.shape.vertices(), axis=0),
                                       np.sort(shape.vertices(), axis=0))
        else:
            assert obj.shape == shape
    msg = WorldObjectMsg(id="thing", operation=WorldObjectMsg.REMOVE)
    assert world_update_from_msg(msg).operation == REMOVE
    msg = WorldObjectMsg(id="thing", operation=WorldObjectMsg.MOVE, pose=matrix_to_pose(T))
    upd = world_update_from_msg(msg)
    assert upd.operation == MOVE and np.allclose(upd.pose, T)
    for bad, text in (
        (WorldObjectMsg(id="", operation=WorldObjectMsg.ADD), "non-empty"),
        (WorldObjectMsg(id="x", operation=7), "unknown operation 7"),
        (WorldObjectMsg(id="x", operation=WorldObjectMsg.ADD), "type 0 is not supported"),
    ):
        with pytest.raises(ConversionError, match=text):
            world_update_from_msg(bad)


class _CollisionObject(SimpleNamespace):
    """Stand-in for moveit_msgs/CollisionObject: same fields, and like the real message in
    ROS 2 Python the operation and its constants are ``bytes`` (the field is ``byte``)."""

    ADD = b"\x00"
    REMOVE = b"\x01"
    APPEND = b"\x02"
    MOVE = b"\x03"


def _co(**fields: Any) -> _CollisionObject:
    base: dict[str, Any] = dict(
        header=SimpleNamespace(frame_id="base_link"), id="shelf", operation=b"\x00",
        pose=_pose((1.0, 0.0, 0.0), (0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4))),
        primitives=[], primitive_poses=[], meshes=[], mesh_poses=[], planes=[], plane_poses=[],
        subframe_names=[], subframe_poses=[],
    )
    base.update(fields)
    return _CollisionObject(**base)


def test_moveit_collision_object_add() -> None:
    obj = _co(
        primitives=[_prim(SolidPrimitive.BOX, [0.4, 0.3, 0.02]),
                    _prim(SolidPrimitive.CYLINDER, [0.3, 0.01])],
        primitive_poses=[_pose((0, 0, 0.1)), _pose((0.1, 0, 0))],
        meshes=[_mesh_msg([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)])],
        mesh_poses=[_pose((0, 0.2, 0))],
    )
    objs = collision_object_to_world_objects(obj)
    assert [o.name for o in objs] == ["shelf#0", "shelf#1", "shelf#2"]
    assert isinstance(objs[0].shape, Box) and isinstance(objs[1].shape, Cylinder)
    assert isinstance(objs[2].shape, Mesh)
    # primitive poses are relative to the object pose (1, 0, 0) rotated 90° about z
    np.testing.assert_allclose(objs[0].pose[:3, 3], [1.0, 0.0, 0.1], atol=1e-12)
    np.testing.assert_allclose(objs[1].pose[:3, 3], [1.0, 0.1, 0.0], atol=1e-12)
    np.testing.assert_allclose(objs[2].pose[:3, 3], [0.8, 0.0, 0.0], atol=1e-12)
    upd = collision_object_to_update(obj)
    assert upd.operation == ADD and upd.frame_id == "base_link"
    # a single shape keeps the bare id; an object without `pose` (old MoveIt) is at identity
    single = _co(primitives=[_prim(SolidPrimitive.SPHERE, [0.1])],
                 primitive_poses=[_pose((0, 0, 1))])
    del single.pose
    (o,) = collision_object_to_world_objects(single)
    assert o.name == "shelf" and np.allclose(o.pose[:3, 3], [0, 0, 1])


@pytest.mark.parametrize("code", [bytes, int], ids=["bytes", "int"])
def test_moveit_collision_object_other_operations(code: Any) -> None:
    """Operations as rclpy gives them (bytes) and as ints (hand-made messages, other bindings)."""
    def op(n: int) -> Any:
        return bytes([n]) if code is bytes else n

    assert collision_object_to_update(_co(operation=op(1))).operation == REMOVE
    assert collision_object_to_update(_co(operation=op(1), id="")).object_id == ""  # remove all
    upd = collision_object_to_update(_co(operation=op(3)))
    assert upd.operation == MOVE and np.allclose(upd.pose[:3, 3], [1, 0, 0])
    upd = collision_object_to_update(_co(
        operation=op(2), primitives=[_prim(SolidPrimitive.SPHERE, [0.1])],
        primitive_poses=[_pose()]))
    assert upd.operation == APPEND and len(upd.shapes) == 1
    upd = collision_object_to_update(_co(
        operation=op(0), primitives=[_prim(SolidPrimitive.SPHERE, [0.1])],
        primitive_poses=[_pose()]))
    assert upd.operation == ADD
    # a plane z = 0.05 (normal +z) becomes a thick box whose top face is the plane
    plane = Plane()
    plane.coef = [0.0, 0.0, 2.0, -0.1]
    (o,) = collision_object_to_world_objects(_co(pose=_pose(), planes=[plane],
                                                 plane_poses=[_pose()]))
    top = o.pose @ np.array([0, 0, o.shape.z / 2, 1.0])
    assert top[2] == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"primitives": [_prim(SolidPrimitive.CONE, [0.1, 0.1])], "primitive_poses": [_pose()]},
         r"primitives\[0\]: SolidPrimitive CONE is not supported"),
        ({"primitives": [_prim(SolidPrimitive.BOX, [0.1, 0.1, 0.1])], "primitive_poses": []},
         "1 primitives but 0 primitive_poses"),
        ({}, "ADD needs at least one primitive"),
        ({"id": ""}, "non-empty"),
        ({"operation": b"\x09"}, "unknown operation 9"),
        ({"operation": 9}, "unknown operation 9"),
        ({"operation": b"\x00\x01"}, "must be a single byte"),
        ({"operation": "ADD"}, "must be an int or a single byte"),
        ({"operation": 256}, "within 0..255"),
        ({"pose": _pose(quat=(0, 0, 0, 0))}, "zero quaternion"),
    ],
)
def test_moveit_collision_object_errors(fields: dict[str, Any], text: str) -> None:
    with pytest.raises(ConversionError, match=text):
        collision_object_to_update(_co(**fields))


def _wire(msg: Any) -> Any:
    """``msg`` after a serialization round trip: exactly what a subscriber receives."""
    from rclpy.serialization import deserialize_message, serialize_message

    return deserialize_message(serialize_message(msg), type(msg))


def test_real_moveit_collision_object_round_trip() -> None:
    """The real moveit_msgs/CollisionObject (its operation and constants are bytes in ROS 2
    Python), as received over the wire, for every operation."""
    moveit = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed")
    CollisionObject = moveit.CollisionObject
    assert isinstance(CollisionObject.ADD, bytes)  # what the conversion has to cope with
    obj = CollisionObject()
    obj.header.frame_id = "base_link"
    obj.id = "shelf"
    obj.pose = _pose((1.0, 0.0, 0.0))
    obj.primitives = [_prim(SolidPrimitive.BOX, [0.4, 0.3, 0.02])]
    obj.primitive_poses = [_pose((0.0, 0.0, 0.1))]
    obj.operation = CollisionObject.ADD
    upd = collision_object_to_update(_wire(obj))
    assert (upd.operation, upd.object_id, upd.frame_id) == (ADD, "shelf", "base_link")
    (o,) = upd.world_objects()
    assert isinstance(o.shape, Box) and (o.shape.x, o.shape.y, o.shape.z) == (0.4, 0.3, 0.02)
    np.testing.assert_allclose(o.pose[:3, 3], [1.0, 0.0, 0.1], atol=1e-12)
    for const, expected in ((CollisionObject.APPEND, APPEND), (CollisionObject.MOVE, MOVE),
                            (CollisionObject.REMOVE, REMOVE)):
        obj.operation = const
        assert collision_object_to_update(_wire(obj)).operation == expected


def test_real_moveit_planning_scene() -> None:
    moveit = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed")
    from robot_collision.ros.conversions import planning_scene_to_updates

    scene = moveit.PlanningScene()
    scene.is_diff = True
    add = moveit.CollisionObject(id="a", operation=moveit.CollisionObject.ADD)
    add.primitives = [_prim(SolidPrimitive.SPHERE, [0.1])]
    add.primitive_poses = [_pose((0.5, 0.0, 0.5))]
    remove = moveit.CollisionObject(id="b", operation=moveit.CollisionObject.REMOVE)
    scene.world.collision_objects = [add, remove]
    is_diff, updates = planning_scene_to_updates(_wire(scene))
    assert is_diff and [(u.operation, u.object_id) for u in updates] == [(ADD, "a"), (REMOVE, "b")]
    bad = moveit.CollisionObject(id="c", operation=moveit.CollisionObject.ADD)  # no geometry
    scene.world.collision_objects = [add, bad]
    with pytest.raises(ConversionError, match=r"collision_objects\[1\].*ADD needs"):
        planning_scene_to_updates(_wire(scene))


def test_planning_scene_stand_in() -> None:
    from robot_collision.ros.conversions import planning_scene_to_updates

    scene = SimpleNamespace(is_diff=False, world=SimpleNamespace(collision_objects=[
        _co(primitives=[_prim(SolidPrimitive.SPHERE, [0.1])], primitive_poses=[_pose()])]))
    is_diff, updates = planning_scene_to_updates(scene)
    assert not is_diff and [u.operation for u in updates] == [ADD]
    assert planning_scene_to_updates(SimpleNamespace(is_diff=True)) == (True, [])


# --------------------------------------------------------------------------- markers
def test_clearance_colors() -> None:
    assert clearance_color(0.5, 0.3)[:3] == (0.1, 0.8, 0.1)
    assert clearance_color(math.inf, 0.3)[:3] == (0.1, 0.8, 0.1)
    assert clearance_color(-0.01, 0.3)[:3] == (1.0, 0.0, 0.0)
    assert clearance_color(0.0, 0.3)[:3] == (1.0, 0.0, 0.0)
    r1, g1, _, _ = clearance_color(0.05, 0.3)
    r2, g2, _, _ = clearance_color(0.25, 0.3)
    assert r1 > r2 and g1 < g2


def test_markers_shapes_and_deletes(robot: RobotModel) -> None:
    builder = ClearanceMarkers(robot)
    T = pose_from_xyz_rpy([0.5, 0, 0.5], [0, 0, 0])
    world = [
        WorldObject(Capsule(0.05, 0.3), T, "bar"),
        WorldObject(Mesh(np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]])), T, "tet"),
    ]
    checker = CollisionChecker(robot)
    table = checker.clearance(Q, world, 0.3)
    poses = robot.link_transforms(Q)
    arr = builder.build(poses, table, world, 0.3)
    by_ns: dict[str, list[Any]] = {}
    for m in arr.markers:
        by_ns.setdefault(m.ns, []).append(m)
        assert m.header.frame_id == "base_link" and m.action == Marker.ADD
    assert [m.type for m in by_ns["world/bar"]] == [Marker.CYLINDER, Marker.SPHERE, Marker.SPHERE]
    assert [m.id for m in by_ns["world/bar"]] == [0, 1, 2]
    (tet,) = by_ns["world/tet"]
    assert tet.type == Marker.TRIANGLE_LIST and len(tet.points) == 3 * 4
    for ns in table.pair_names():
        assert sorted(m.type for m in by_ns[ns]) == [Marker.LINE_LIST, Marker.SPHERE_LIST]
    robot_ns = {f"robot/{n}" for n in [robot.base_name, *robot.body_names]
                if robot.collision_geometry(n)}
    assert robot_ns <= set(by_ns)
    # same again: nothing to delete; then without the world and far away: DELETEs
    again = builder.build(poses, table, world, 0.3)
    assert not [m for m in again.markers if m.action == Marker.DELETE]
    gone = builder.build(robot.link_transforms(np.zeros(7)), checker.clearance(
        np.zeros(7), [], 0.3), [], 0.3)
    deleted = {(m.ns, m.id) for m in gone.markers if m.action == Marker.DELETE}
    assert {("world/bar", 0), ("world/bar", 1), ("world/bar", 2), ("world/tet", 0)} <= deleted
    assert any(ns.endswith("=bar") for ns, _ in deleted)
    cleared = builder.delete_all()
    assert cleared.markers and all(m.action == Marker.DELETE for m in cleared.markers)
    assert builder.delete_all().markers == []
