"""WorldModel registry and world files (no ROS needed beyond message stand-ins)."""

from __future__ import annotations

import threading
from pathlib import Path
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
    data_path,
    default_robot_paths,
)
from robot_collision.errors import RobotCollisionError
from robot_collision.geometry.transforms import pose_from_xyz_rpy
from robot_collision.ros.conversions import ADD, APPEND, MOVE, REMOVE, WorldUpdate
from robot_collision.ros.world import (
    WorldConfigError,
    WorldModel,
    load_world_file,
    parse_world_config,
    resolve_resource_path,
)

DEMO = data_path("config", "demo_world.yaml")


def _T(x: float = 0.0, y: float = 0.0, z: float = 0.0, yaw: float = 0.0) -> np.ndarray:
    return pose_from_xyz_rpy([x, y, z], [0.0, 0.0, yaw])


def test_add_move_remove_and_version() -> None:
    w = WorldModel()
    assert w.version == 0 and w.objects() == ()
    w.add("box", Box(0.1, 0.1, 0.1), _T(1.0))
    w.add_object(WorldObject(Sphere(0.2), _T(0, 1.0), "ball"))
    assert w.ids() == ["box", "ball"] and w.version == 2
    objs = w.objects()
    assert [o.name for o in objs] == ["box", "ball"]
    assert w.objects() is objs  # unchanged world: same tuple (the checker's cache key)
    w.move("box", _T(2.0))
    assert w.objects() is not objs and w.objects()[0].pose[0, 3] == 2.0
    assert w.remove("box") and not w.remove("box")
    assert w.ids() == ["ball"]
    with pytest.raises(RobotCollisionError, match="no world object 'box'"):
        w.move("box", _T())
    with pytest.raises(WorldConfigError, match="non-empty"):
        w.add("", Sphere(0.1))
    with pytest.raises(WorldConfigError, match="orthonormal"):
        w.add("skew", Sphere(0.1), np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(WorldConfigError, match="no shapes"):
        w.add("none", [])
    w.clear()
    assert len(w) == 0


def test_multi_shape_objects_and_apply() -> None:
    w = WorldModel(frame_ids=["base_link"])
    shapes = [(Box(0.4, 0.3, 0.02), _T(z=0.1)), (Box(0.4, 0.3, 0.02), _T(z=0.3))]
    assert "added" in w.apply(WorldUpdate(ADD, "shelf", shapes, _T(1.0, yaw=np.pi / 2)))
    assert [o.name for o in w.objects()] == ["shelf#0", "shelf#1"]
    np.testing.assert_allclose(w.objects()[1].pose[:3, 3], [1.0, 0.0, 0.3], atol=1e-12)
    w.apply(WorldUpdate(APPEND, "shelf", [(Sphere(0.05), _T(x=0.1))]))
    assert len(w.objects()) == 3
    np.testing.assert_allclose(w.objects()[2].pose[:3, 3], [1.0, 0.1, 0.0], atol=1e-12)
    w.apply(WorldUpdate(MOVE, "shelf", pose=_T(2.0), frame_id="/base_link"))
    np.testing.assert_allclose(w.objects()[0].pose[:3, 3], [2.0, 0.0, 0.1], atol=1e-12)
    with pytest.raises(WorldConfigError, match="frame 'camera'"):
        w.apply(WorldUpdate(ADD, "cam", [(Sphere(0.1), _T())], frame_id="camera"))
    with pytest.raises(WorldConfigError, match="cannot MOVE"):
        w.apply(WorldUpdate(MOVE, "ghost", pose=_T()))
    w.apply(WorldUpdate(APPEND, "new", [(Sphere(0.05), _T())], _T(z=1.0)))
    assert w.objects()[-1].pose[2, 3] == 1.0
    assert "removed all 2" in w.apply(WorldUpdate(REMOVE, ""))
    assert len(w) == 0


def test_apply_collision_object_stand_in() -> None:
    pytest.importorskip("shape_msgs.msg")
    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive

    prim = SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[0.1])
    # operation and constants are bytes, as rclpy gives them (moveit_msgs declares them byte)
    obj = SimpleNamespace(ADD=b"\x00", REMOVE=b"\x01", APPEND=b"\x02", MOVE=b"\x03", id="ball",
                          operation=b"\x00",
                          header=SimpleNamespace(frame_id=""), pose=Pose(), primitives=[prim],
                          primitive_poses=[Pose()], meshes=[], mesh_poses=[], planes=[],
                          plane_poses=[])
    w = WorldModel()
    w.apply_collision_object(obj)
    assert w.ids() == ["ball"]
    obj.operation = b"\x01"
    w.apply_collision_object(obj)
    assert w.ids() == []


def test_apply_all_is_all_or_nothing(tmp_path: Path) -> None:
    world_file = tmp_path / "w.yaml"
    world_file.write_text("objects:\n  - {id: table, type: box, dimensions: [1, 1, 0.1]}\n")
    w = WorldModel()
    w.use_file(world_file)
    w.apply(WorldUpdate(ADD, "a", [(Sphere(0.1), _T())]))
    version, objects = w.snapshot()
    with pytest.raises(WorldConfigError, match="cannot MOVE"):
        w.apply_all([WorldUpdate(ADD, "b", [(Sphere(0.1), _T())]),
                     WorldUpdate(MOVE, "ghost", pose=_T())])
    assert w.ids() == ["table", "a"] and w.snapshot() == (version, objects)
    # replace: objects from messages go, the world file's stay
    what = w.apply_all([WorldUpdate(ADD, "c", [(Sphere(0.1), _T())])], replace=True)
    assert w.ids() == ["table", "c"] and "cleared 1" in what


def test_apply_planning_scene_stand_in() -> None:
    def co(object_id: str, op: bytes) -> SimpleNamespace:
        return SimpleNamespace(
            ADD=b"\x00", REMOVE=b"\x01", APPEND=b"\x02", MOVE=b"\x03", id=object_id,
            operation=op, header=SimpleNamespace(frame_id=""), primitives=[Sphere(0.1)],
            primitive_poses=[], meshes=[], mesh_poses=[], planes=[], plane_poses=[])

    w = WorldModel()
    w.add("kept", Sphere(0.1))
    scene = SimpleNamespace(is_diff=True, world=SimpleNamespace(
        collision_objects=[co("kept", b"\x01")]))
    assert "removed 'kept'" in w.apply_planning_scene(scene)
    bad = SimpleNamespace(is_diff=True, world=SimpleNamespace(collision_objects=[co("x", b"\x07")]))
    with pytest.raises(RobotCollisionError, match=r"collision_objects\[0\].*unknown operation 7"):
        w.apply_planning_scene(bad)
    assert len(w) == 0


def test_thread_safety() -> None:
    w = WorldModel()
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(200):
                w.add(f"o{k}_{i % 5}", Sphere(0.1), _T(i * 0.01))
                w.remove(f"o{k}_{(i + 2) % 5}")
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(500):
                _, objs = w.snapshot()
                assert len({o.name for o in objs}) == len(objs)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert w.version >= 3 * 200  # every add counted (removes of absent ids are not changes)


# --------------------------------------------------------------------------- files
def test_world_file_schema(tmp_path: Path) -> None:
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "tet.obj").write_text(
        "v 0 0 0\nv 0.2 0 0\nv 0 0.2 0\nv 0 0 0.2\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    (tmp_path / "world.yaml").write_text(
        """
frame_id: base_link
objects:
  - {id: a, type: box, dimensions: [0.1, 0.2, 0.3], position: [1, 2, 3]}
  - {id: b, type: box, size: [0.1, 0.2, 0.3], orientation_rpy: [0, 0, 1.5707963267948966]}
  - {id: c, type: sphere, radius: 0.1, orientation_quat_xyzw: [0, 0, 0, 1]}
  - {id: d, type: cylinder, dimensions: [0.05, 0.8]}
  - {id: e, type: capsule, radius: 0.03, length: 0.5}
  - {id: f, type: mesh, file: meshes/tet.obj, scale: 2.0}
  - {id: g, type: mesh, vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], scale: [1, 1, 2]}
"""
    )
    entries = load_world_file(tmp_path / "world.yaml")
    objs = {e.object_id: e.world_objects()[0] for e in entries}
    assert objs["a"].shape == Box(0.1, 0.2, 0.3)
    np.testing.assert_allclose(objs["a"].pose[:3, 3], [1, 2, 3])
    assert objs["b"].shape == Box(0.1, 0.2, 0.3)
    np.testing.assert_allclose(objs["b"].pose[:3, 0], [0, 1, 0], atol=1e-12)
    assert objs["c"].shape == Sphere(0.1)
    assert objs["d"].shape == Cylinder(0.05, 0.8)
    assert objs["e"].shape == Capsule(0.03, 0.5)
    assert isinstance(objs["f"].shape, Mesh) and objs["f"].shape.vertices().max() == 0.4
    assert isinstance(objs["g"].shape, Mesh) and objs["g"].shape.vertices()[:, 2].max() == 2.0
    # a bare list is accepted too
    assert len(parse_world_config([{"id": "x", "type": "sphere", "dimensions": [0.1]}])) == 1
    assert parse_world_config(None) == []


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ({"objects": [{"type": "box", "dimensions": [1, 1, 1]}]}, "non-empty string 'id'"),
        ({"objects": [{"id": "a", "type": "cone", "dimensions": [1, 1]}]}, "type 'cone'"),
        ({"objects": [{"id": "a", "type": "box", "dimensions": [1, 1]}]}, "must have 3 numbers"),
        ({"objects": [{"id": "a", "type": "box"}]}, "needs dimensions"),
        ({"objects": [{"id": "a", "type": "sphere", "dimensions": [-1]}]}, "positive"),
        ({"objects": [{"id": "a", "type": "sphere", "dimensions": ["big"]}]}, "numbers"),
        ({"objects": [{"id": "a", "type": "sphere", "dimensions": [0.1], "colour": "red"}]},
         "unknown keys \\['colour'\\]"),
        ({"objects": [{"id": "a", "type": "sphere", "radius": 0.1},
                      {"id": "a", "type": "sphere", "radius": 0.1}]}, "used twice"),
        ({"objects": [{"id": "a", "type": "sphere", "radius": 0.1, "orientation_rpy": [0, 0, 0],
                       "orientation_quat_xyzw": [0, 0, 0, 1]}]}, "both orientation"),
        ({"objects": [{"id": "a", "type": "sphere", "radius": 0.1,
                       "orientation_quat_xyzw": [0, 0, 0, 0]}]}, "is zero"),
        ({"objects": [{"id": "a", "type": "sphere", "radius": 0.1, "position": [0, 0]}]},
         "position must have 3"),
        ({"objects": [{"id": "a", "type": "mesh", "vertices": [[0, 0, 0]]}]}, "at least 4"),
        ({"objects": [{"id": "a", "type": "mesh", "file": "nope.stl"}]}, "does not exist"),
        ({"objects": [{"id": "a", "type": "mesh"}]}, "exactly one of 'vertices' or 'file'"),
        ({"objects": {"id": "a"}}, "must be a list"),
        ({"obstacles": []}, "unknown top-level keys"),
    ],
)
def test_world_file_errors(data: Any, text: str) -> None:
    with pytest.raises(WorldConfigError, match=text):
        parse_world_config(data, source="w.yaml")


def test_world_file_io_errors(tmp_path: Path) -> None:
    with pytest.raises(WorldConfigError, match="does not exist"):
        load_world_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("objects: [unclosed")
    with pytest.raises(WorldConfigError, match="not valid YAML"):
        load_world_file(bad)
    w = WorldModel()
    w.add("keep", Sphere(0.1))
    with pytest.raises(WorldConfigError):
        w.use_file(bad)
    assert w.ids() == ["keep"]  # all-or-nothing


def test_use_file_replaces_the_previous_file_objects(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(
        "objects: [{id: a, type: sphere, radius: 0.1}, {id: b, type: sphere, radius: 0.1}]")
    two = tmp_path / "two.yaml"
    two.write_text("objects: [{id: c, type: sphere, radius: 0.1}]")
    bad = tmp_path / "bad.yaml"
    bad.write_text("objects: [{id: d, type: sphere}]")
    w = WorldModel()
    w.add("manual", Sphere(0.2))
    assert w.use_file(one) == ["a", "b"]
    w.remove("a")  # removed by a message meanwhile: replacing the file does not mind
    assert w.use_file(two) == ["c"]
    assert w.ids() == ["manual", "c"]
    version = w.version
    with pytest.raises(WorldConfigError):
        w.use_file(bad)
    assert w.ids() == ["manual", "c"] and w.version == version  # nothing changed
    assert w.use_file("") == []  # no world file: its objects go, the others stay
    assert w.ids() == ["manual"]


def test_resolve_resource_path() -> None:
    assert resolve_resource_path("package://robot_collision/config/demo_world.yaml") == DEMO
    assert resolve_resource_path(f"file://{DEMO}") == DEMO
    assert resolve_resource_path(str(DEMO)) == DEMO
    assert resolve_resource_path("config/demo_world.yaml").resolve() == DEMO.resolve()
    with pytest.raises(WorldConfigError, match="no_such_pkg"):
        resolve_resource_path("package://no_such_pkg_xyz/a.yaml")


def test_demo_world_is_collision_free_at_home() -> None:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    w = WorldModel()
    assert w.use_file(DEMO) == ["table", "crate", "post"]
    res = CollisionChecker(robot).check(robot.home_configuration(), w.objects(), exhaustive=True)
    assert not res.in_collision
    world_cols = res.signed[:, len(res.row_names):]
    assert np.min(world_cols) > 0.1  # a clear margin around the arm at home


# --------------------------------------------------------------------------- caps
def test_deeply_nested_world_file_is_a_typed_error_not_a_crash(tmp_path: Path) -> None:
    """50,000 nested lists: PyYAML's composer would raise RecursionError (pure Python) or crash
    the process (libyaml); the depth is refused on the event stream first."""
    import time

    from robot_collision.load_limits import LoadLimits

    path = tmp_path / "deep.yaml"
    path.write_text("objects: " + "[" * 50_000 + "]" * 50_000 + "\n")
    t0 = time.perf_counter()
    with pytest.raises(WorldConfigError, match=r"YAML nesting is 33.*max_world_depth"):
        load_world_file(path)
    w = WorldModel()
    with pytest.raises(WorldConfigError, match="max_world_depth"):
        w.use_file(path)
    assert len(w) == 0 and time.perf_counter() - t0 < 2.0
    shallow = tmp_path / "shallow.yaml"
    shallow.write_text("objects: [{id: a, type: sphere, radius: 0.1}]\n")
    with pytest.raises(WorldConfigError, match="max_world_depth"):
        load_world_file(shallow, LoadLimits(max_world_depth=2))
    assert [e.object_id for e in load_world_file(shallow, LoadLimits(max_world_depth=3))] == ["a"]


def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(WorldConfigError, match="aliases expand"):
        load_world_file(path)


def test_world_file_size_and_object_caps(tmp_path: Path) -> None:
    from robot_collision.load_limits import LoadLimits

    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(3 * 2**30)
    with pytest.raises(WorldConfigError, match=r"3\.0 GiB.*max_world_bytes"):
        load_world_file(huge)
    three = tmp_path / "three.yaml"
    three.write_text("objects: [{id: a, type: sphere, radius: 0.1}, {id: b, type: sphere, "
                     "radius: 0.1}, {id: c, type: sphere, radius: 0.1}]\n")
    with pytest.raises(WorldConfigError, match=r"object count is 3.*max_world_objects"):
        load_world_file(three, LoadLimits(max_world_objects=2))
    w = WorldModel(limits=LoadLimits(max_world_objects=3))
    assert w.use_file(three) == ["a", "b", "c"]
    with pytest.raises(WorldConfigError, match="max_world_objects"):
        w.add("d", Sphere(0.1))
    with pytest.raises(WorldConfigError, match="max_world_objects"):
        w.append("a", Sphere(0.1))
    w.add("a", Box(0.1, 0.1, 0.1))  # replacing keeps the count
    assert w.ids() == ["a", "b", "c"] and isinstance(w.get("a").shapes[0][0], Box)


def test_three_gigabyte_mesh_via_world_file_and_urdf_is_a_mesh_error(tmp_path: Path) -> None:
    from robot_collision.errors import MeshError

    mesh = tmp_path / "huge.stl"
    with open(mesh, "wb") as f:
        f.truncate(3 * 2**30)
    world = tmp_path / "world.yaml"
    world.write_text(f"objects: [{{id: m, type: mesh, file: {mesh}}}]\n")
    w = WorldModel()
    with pytest.raises(MeshError, match=r"objects\[0\] \('m'\).*3\.0 GiB.*max_mesh_bytes"):
        w.use_file(world)
    assert len(w) == 0
    urdf = (f'<robot name="r"><link name="a"><collision><geometry><mesh filename="{mesh}"/>'
            "</geometry></collision></link></robot>")
    with pytest.raises(MeshError, match=r"link 'a' collision #0.*3\.0 GiB.*max_mesh_bytes"):
        RobotModel.from_urdf(urdf)


# ----------------------------------------------------------------------------- issue 19
def test_absurd_extents_are_a_typed_error() -> None:
    """A 1e300 m box, or a box 1 km away, is refused (WorldExtentError, naming the parameter)
    by every way into the world; the world stays as it was."""
    from robot_collision.ros.world import WorldExtentError

    w = WorldModel()
    w.add("ok", Box(0.2, 0.2, 0.2), _T(0.5))
    v = w.version
    with pytest.raises(WorldExtentError, match="max_object_extent"):
        w.add("huge", Box(1e300, 1.0, 1.0))
    with pytest.raises(WorldExtentError, match="max_object_extent"):
        w.add("far", Sphere(0.1), _T(1000.0))
    with pytest.raises(WorldExtentError):
        w.move("ok", _T(500.0))
    with pytest.raises(WorldExtentError):
        w.append("ok", Box(0.1, 0.1, 0.1), _T(0.0))  # fine ...
        w.append("ok", [(Sphere(0.1), _T(200.0))])  # ... this one is not
    with pytest.raises(WorldExtentError):
        w.apply(WorldUpdate(ADD, "huge2", [(Box(300.0, 1.0, 1.0), _T())]))
    assert "huge" not in w and "far" not in w and "huge2" not in w
    np.testing.assert_allclose(w.get("ok").pose, _T(0.5))
    assert w.version >= v
    w.max_extent = 1e4  # the parameter raised: accepted
    w.add("far", Sphere(0.1), _T(1000.0))


def test_world_digest_is_the_content() -> None:
    """Two models holding the same objects (added in another order, with detours) have the same
    digest; any difference in id, pose or size changes it."""
    a, b = WorldModel(), WorldModel()
    a.add("x", Box(0.1, 0.2, 0.3), _T(0.5))
    a.add("y", Sphere(0.1), _T(0.0, 0.5))
    b.add("y", Sphere(0.2), _T(0.0, 0.5))
    b.add("z", Sphere(0.2))
    b.add("x", Box(0.1, 0.2, 0.3), _T(0.5))
    b.remove("z")
    assert a.digest() != b.digest()
    b.add("y", Sphere(0.1), _T(0.0, 0.5))
    assert a.digest() == b.digest() and len(a.digest()) == 16
    b.move("x", _T(0.5, 1e-9))
    assert a.digest() != b.digest()
