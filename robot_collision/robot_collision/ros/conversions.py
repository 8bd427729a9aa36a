"""Conversions between ROS 2 messages and the core types of robot_collision.

Everything here works on message *objects* by attribute name (duck typing), so it converts real
messages and stand-ins with the same fields alike; message classes are imported lazily and only
where a message is built. Nothing here touches a node.

- ``sensor_msgs/JointState`` → configuration vector, by joint name (:class:`JointStateMapper`).
- core :class:`~robot_collision.collision.clearance.ClearanceTable` ↔
  ``robot_collision_interfaces/ClearanceTable`` (Jacobian flattened row-major).
- core :class:`~robot_collision.collision.checker.CheckResult` → ``CheckCollision`` response.
- ``geometry_msgs/Pose`` ↔ (4, 4) homogeneous matrix.
- ``shape_msgs/SolidPrimitive`` / ``shape_msgs/Mesh`` ↔ core shapes.
- ``robot_collision_interfaces/WorldObject``, MoveIt's ``moveit_msgs/CollisionObject`` and the
  world objects of a ``moveit_msgs/PlanningScene`` → :class:`WorldUpdate` (what
  :class:`robot_collision.ros.world.WorldModel` applies).

Every function raises :class:`ConversionError` (a ``ValueError``) with a message that says what
is wrong with the input; shape errors from the core (:class:`~robot_collision.errors.ShapeError`,
:class:`~robot_collision.errors.MeshError`) are re-raised as :class:`ConversionError` too.
"""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..collision.checker import CheckResult
from ..collision.clearance import ClearanceTable
from ..errors import RobotCollisionError
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject
from ..geometry.transforms import matrix_to_quat_xyzw, quat_xyzw_to_matrix
from ..planning.trajectory import TimedTrajectory

__all__ = [
    "trajectory_to_msg",
    "ConversionError",
    "JointStateMapper",
    "joint_positions",
    "pose_to_matrix",
    "matrix_to_pose",
    "stamp_to_seconds",
    "clearance_table_to_msg",
    "clearance_table_from_msg",
    "check_result_to_response",
    "solid_primitive_to_shape",
    "shape_to_solid_primitive",
    "mesh_msg_to_shape",
    "shape_to_mesh_msg",
    "hull_triangles",
    "WorldUpdate",
    "world_update_from_msg",
    "world_object_to_msg",
    "collision_object_to_update",
    "collision_object_to_world_objects",
    "operation_code",
    "planning_scene_to_updates",
    "ADD",
    "REMOVE",
    "MOVE",
    "APPEND",
]

# Operations of a WorldUpdate (strings, so that the two message conventions cannot be mixed up:
# robot_collision_interfaces/WorldObject has ADD=0 REMOVE=1 MOVE=2, moveit_msgs/CollisionObject
# has ADD=0 REMOVE=1 APPEND=2 MOVE=3).
ADD = "add"
REMOVE = "remove"
MOVE = "move"
APPEND = "append"

# shape_msgs/SolidPrimitive constants (identical in Humble and Jazzy; Jazzy adds PRISM = 5).
_BOX, _SPHERE, _CYLINDER, _CONE, _PRISM = 1, 2, 3, 4, 5
_PRIMITIVE_NAMES = {_BOX: "BOX", _SPHERE: "SPHERE", _CYLINDER: "CYLINDER", _CONE: "CONE",
                    _PRISM: "PRISM"}

# A MoveIt plane (infinite) becomes a box this large, its top face on the plane.
PLANE_BOX_SIZE = 20.0
PLANE_BOX_THICKNESS = 1.0


class ConversionError(RobotCollisionError, ValueError):
    """A message cannot be converted: the text says which field is wrong and why."""


# --------------------------------------------------------------------------- joint states
def _shown(value: Any, limit: int = 64) -> str:
    """``repr`` of a name from a message, cut to ``limit`` characters (error texts and logs
    must not grow with what a sender puts in a message)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown_list(names: Sequence[Any], most: int = 12) -> str:
    shown = ", ".join(_shown(n) for n in list(names)[:most])
    return f"[{shown}{', ...' if len(names) > most else ''}] ({len(names)} names)"


def named_values(names: tuple[Any, ...], values: ArrayLike, what: str,
                 field: str = "positions") -> NDArray[np.float64]:
    """``values`` as a float array (k,) matching ``names`` (k,); ConversionError otherwise."""
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ConversionError(f"{what} {field} must be numbers: {exc}") from None
    if len(names) != arr.shape[0]:
        raise ConversionError(
            f"{what} has {len(names)} joint names but {arr.shape[0]} {field}; "
            "they must have the same length"
        )
    return arr


class JointStateMapper:
    """Maps joint-state (names, positions) onto a model's configuration vector by name.

    Extra names in a message are ignored (a joint-state topic usually carries gripper or other
    joints); missing model joints, duplicate names, mismatched lengths and non-finite positions
    of model joints raise :class:`ConversionError`. The index mapping of each distinct name list
    is cached, so a stream of messages with the same layout costs one dictionary look-up (at
    most 32 name lists of at most 64 KiB of names each: the cache cannot be used to hold on to
    large messages).
    """

    _MAX_LAYOUTS = 32
    _MAX_CACHED_CHARS = 65536

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names: list[str] = list(joint_names)
        self._model_index = {n: i for i, n in enumerate(self.joint_names)}
        self._layouts: dict[tuple[str, ...], tuple[NDArray[np.int64], NDArray[np.int64]]] = {}

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    def _layout(
        self, names: tuple[str, ...], allow_unknown: bool
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(model indices, message indices) of the model joints present in ``names``."""
        key = names if allow_unknown else ("\0strict", *names)
        hit = self._layouts.get(key)
        if hit is not None:
            return hit
        seen: set[str] = set()
        model_idx: list[int] = []
        msg_idx: list[int] = []
        unknown: list[str] = []
        for k, name in enumerate(names):
            if not isinstance(name, str):
                raise ConversionError(f"joint name #{k} is not a string: {_shown(name)}")
            if name in seen:
                raise ConversionError(f"joint {_shown(name)} is named twice")
            seen.add(name)
            i = self._model_index.get(name)
            if i is None:
                unknown.append(name)
                continue
            model_idx.append(i)
            msg_idx.append(k)
        if unknown and not allow_unknown:
            raise ConversionError(
                f"unknown joint names {_shown_list(unknown)}; the robot model's joints are "
                f"{', '.join(self.joint_names)}"
            )
        out = (np.asarray(model_idx, dtype=np.int64), np.asarray(msg_idx, dtype=np.int64))
        if sum(len(name) for name in names) <= self._MAX_CACHED_CHARS:
            if len(self._layouts) >= self._MAX_LAYOUTS:
                self._layouts.clear()
            self._layouts[key] = out
        return out

    def positions(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        fallback: Optional[ArrayLike] = None,
        allow_unknown: bool = True,
        what: str = "JointState",
    ) -> NDArray[np.float64]:
        """Configuration (n,) from parallel ``names`` / ``positions``.

        ``fallback`` (n,) supplies the joints the message does not name (without it a missing
        joint is an error); ``allow_unknown=False`` makes names outside the model an error.
        """
        names_t = tuple(names)
        pos = named_values(names_t, positions, what)
        if not names_t and fallback is None:
            raise ConversionError(f"{what} is empty (no joint names, no positions)")
        model_idx, msg_idx = self._layout(names_t, allow_unknown)
        n = self.num_joints
        if model_idx.shape[0] == n:
            q = np.empty(n)
        elif fallback is not None:
            q = np.array(fallback, dtype=float).reshape(-1)
            if q.shape != (n,):
                raise ConversionError(f"fallback configuration must have {n} values")
        else:
            have = set(model_idx.tolist())
            missing = [j for i, j in enumerate(self.joint_names) if i not in have]
            raise ConversionError(
                f"{what} lacks joints {missing} of the robot model "
                f"(it names {_shown_list(names_t)})"
            )
        q[model_idx] = pos[msg_idx]
        if not np.all(np.isfinite(q)):
            bad = [self.joint_names[i] for i in np.flatnonzero(~np.isfinite(q))]
            raise ConversionError(f"{what} has non-finite positions for joints {bad}")
        return q

    def from_msg(self, msg: Any, fallback: Optional[ArrayLike] = None) -> NDArray[np.float64]:
        """Configuration from a ``sensor_msgs/JointState`` (fields ``name``, ``position``)."""
        return self.positions(msg.name, msg.position, fallback=fallback)


def joint_positions(
    msg: Any, joint_names: Sequence[str], fallback: Optional[ArrayLike] = None
) -> NDArray[np.float64]:
    """Configuration in the order of ``joint_names`` from a JointState-like message."""
    return JointStateMapper(joint_names).from_msg(msg, fallback)


# --------------------------------------------------------------------------- poses, stamps
def _finite(values: Sequence[float], what: str) -> list[float]:
    out = [float(v) for v in values]
    if not all(math.isfinite(v) for v in out):
        raise ConversionError(f"{what} has non-finite values {out}")
    return out


def pose_to_matrix(pose: Any, what: str = "pose") -> NDArray[np.float64]:
    """(4, 4) matrix from a ``geometry_msgs/Pose`` (the quaternion is normalised).

    Raises :class:`ConversionError` for non-finite values or a zero quaternion.
    """
    p, o = pose.position, pose.orientation
    xyz = _finite((p.x, p.y, p.z), f"{what} position")
    quat = _finite((o.x, o.y, o.z, o.w), f"{what} orientation")
    norm = math.sqrt(sum(v * v for v in quat))
    if norm < 1e-9:
        raise ConversionError(
            f"{what} orientation is the zero quaternion; use w=1 for no rotation"
        )
    T = np.eye(4)
    T[:3, :3] = quat_xyzw_to_matrix(np.asarray(quat) / norm)
    T[:3, 3] = xyz
    return T


def matrix_to_pose(T: ArrayLike, pose: Any = None) -> Any:
    """``geometry_msgs/Pose`` of a (4, 4) matrix (fills ``pose`` when given)."""
    M = np.asarray(T, dtype=float)
    if M.shape != (4, 4):
        raise ConversionError(f"pose matrix must be (4, 4), got {M.shape}")
    if pose is None:
        from geometry_msgs.msg import Pose

        pose = Pose()
    x, y, z, w = matrix_to_quat_xyzw(M[:3, :3]).tolist()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in M[:3, 3])
    pose.orientation.x, pose.orientation.y = x, y
    pose.orientation.z, pose.orientation.w = z, w
    return pose


def stamp_to_seconds(stamp: Any) -> float:
    """``builtin_interfaces/Time`` to float seconds."""
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


# --------------------------------------------------------------------------- clearance
def _f64(values: NDArray[np.float64]) -> array.array:
    """``array('d')`` of a float array, without a Python-level loop."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def clearance_table_to_msg(
    table: ClearanceTable,
    stamp: Any = None,
    frame_id: str = "",
    msg: Any = None,
) -> Any:
    """``robot_collision_interfaces/ClearanceTable`` of a core clearance table.

    ``stamp`` (a ``builtin_interfaces/Time``) is copied into the header; ``jacobian`` is the
    (R, n) matrix flattened row-major; ``min_distance`` is +Inf without rows; ``in_collision``
    is true when any row's distance is <= 0.
    """
    from robot_collision_interfaces.msg import ClearanceRow
    from robot_collision_interfaces.msg import ClearanceTable as ClearanceTableMsg

    out = ClearanceTableMsg() if msg is None else msg
    if stamp is not None:
        out.header.stamp = stamp
    out.header.frame_id = frame_id
    out.joint_names = list(table.joint_names)
    R = len(table)
    d = table.distances.tolist()
    wr = table.witness_robot.tolist()
    wo = table.witness_other.tolist()
    nn = table.normals.tolist()
    kinds = table.kinds.tolist()
    rows = []
    for i in range(R):
        row = ClearanceRow()
        row.robot_body = table.robot_bodies[i]
        row.other_body = table.other_bodies[i]
        row.kind = int(kinds[i])
        row.distance = d[i]
        a, b, c = wr[i], wo[i], nn[i]
        p = row.witness_robot
        p.x, p.y, p.z = a[0], a[1], a[2]
        p = row.witness_other
        p.x, p.y, p.z = b[0], b[1], b[2]
        v = row.normal
        v.x, v.y, v.z = c[0], c[1], c[2]
        rows.append(row)
    out.rows = rows
    out.jacobian = _f64(table.jacobians.reshape(-1)) if R else array.array("d")
    out.min_distance = float(min(d)) if R else math.inf
    out.in_collision = bool(R and min(d) <= 0.0)
    return out


def clearance_table_from_msg(
    msg: Any, link_names: Optional[Sequence[str]] = None
) -> ClearanceTable:
    """Core clearance table of a ``ClearanceTable`` message.

    With ``link_names`` (the robot's links in tree order) the ``robot_links``/``other_links``
    indices are filled in as the core does (world object k → -1 - k, in order of first
    appearance); without it they are -1 for robot bodies and other bodies alike.
    """
    rows = list(msg.rows)
    R = len(rows)
    names = list(msg.joint_names)
    n = len(names)
    jac = np.asarray(msg.jacobian, dtype=float)
    if jac.size == 0:
        J = np.zeros((R, n))
    elif jac.size != R * n:
        raise ConversionError(
            f"ClearanceTable jacobian has {jac.size} values; expected rows x joints = {R} x {n}"
        )
    else:
        J = jac.reshape(R, n).copy()
    index = {ln: i for i, ln in enumerate(link_names)} if link_names is not None else None
    world_index: dict[str, int] = {}
    r_links, o_links = [], []
    for r in rows:
        if index is None:
            r_links.append(-1)
            o_links.append(-1)
            continue
        r_links.append(index.get(r.robot_body, -1))
        if int(r.kind) == 0 and r.other_body in index:
            o_links.append(index[r.other_body])
        else:
            o_links.append(-1 - world_index.setdefault(r.other_body, len(world_index)))

    def pts(attr: str) -> NDArray[np.float64]:
        return np.array([[getattr(r, attr).x, getattr(r, attr).y, getattr(r, attr).z]
                         for r in rows], dtype=float).reshape(R, 3)

    return ClearanceTable(
        joint_names=names,
        robot_bodies=[r.robot_body for r in rows],
        other_bodies=[r.other_body for r in rows],
        kinds=np.array([int(r.kind) for r in rows], dtype=np.int64),
        distances=np.array([float(r.distance) for r in rows], dtype=float),
        witness_robot=pts("witness_robot"),
        witness_other=pts("witness_other"),
        normals=pts("normal"),
        jacobians=J,
        robot_links=np.array(r_links, dtype=np.int64),
        other_links=np.array(o_links, dtype=np.int64),
    )


def check_result_to_response(result: CheckResult, response: Any, message: str = "") -> Any:
    """Fill a ``CheckCollision.Response`` from a core :class:`CheckResult` (row-major arrays)."""
    response.success = True
    response.is_self_colliding = bool(result.is_self_colliding)
    response.is_world_colliding = bool(result.is_world_colliding)
    response.row_names = list(result.row_names)
    response.column_names = list(result.column_names)
    response.separation = _f64(result.separation.reshape(-1))
    response.signed_distance = _f64(result.signed.reshape(-1))
    response.witness = _f64(result.witness.reshape(-1))
    response.colliding_pairs = [f"{a}={b}" for a, b in result.colliding_pairs]
    if not message:
        if result.colliding_pairs:
            shown = ", ".join(response.colliding_pairs[:5])
            more = len(result.colliding_pairs) - 5
            message = f"in collision: {shown}" + (f" and {more} more" if more > 0 else "")
        else:
            message = "collision-free"
    response.message = message
    return response


# --------------------------------------------------------------------------- shapes
def _dims(prim: Any, count: int, names: str) -> list[float]:
    dims = [float(v) for v in prim.dimensions]
    kind = _PRIMITIVE_NAMES.get(int(prim.type), str(prim.type))
    if len(dims) < count:
        raise ConversionError(
            f"SolidPrimitive {kind} needs {count} dimensions ({names}), got {dims}"
        )
    return dims[:count]


def solid_primitive_to_shape(prim: Any, cylinder_is_capsule: bool = False) -> Shape:
    """Core shape of a ``shape_msgs/SolidPrimitive``.

    BOX [x, y, z] → :class:`Box`; SPHERE [radius] → :class:`Sphere`; CYLINDER [height, radius]
    → :class:`Cylinder`, or a :class:`Capsule` (segment of ``height``, caps beyond it) when
    ``cylinder_is_capsule``. CONE and PRISM are refused.
    """
    kind = int(prim.type)
    try:
        if kind == _BOX:
            x, y, z = _dims(prim, 3, "x, y, z")
            return Box(x, y, z)
        if kind == _SPHERE:
            (r,) = _dims(prim, 1, "radius")
            return Sphere(r)
        if kind == _CYLINDER:
            h, r = _dims(prim, 2, "height, radius")
            return Capsule(r, h) if cylinder_is_capsule else Cylinder(r, h)
    except RobotCollisionError as exc:
        if isinstance(exc, ConversionError):
            raise
        raise ConversionError(f"SolidPrimitive: {exc}") from None
    if kind == _CONE:
        raise ConversionError(
            "SolidPrimitive CONE is not supported; use a CYLINDER of the cone's height and base "
            "radius (conservative) or a mesh"
        )
    if kind == _PRISM:
        raise ConversionError("SolidPrimitive PRISM is not supported; send it as a mesh")
    raise ConversionError(
        f"SolidPrimitive type {kind} is not supported; use BOX (1), SPHERE (2) or CYLINDER (3)"
    )


def shape_to_solid_primitive(shape: Shape) -> tuple[Any, bool]:
    """(``SolidPrimitive``, cylinder_is_capsule) of an analytic core shape (not a mesh)."""
    from shape_msgs.msg import SolidPrimitive

    prim = SolidPrimitive()
    if isinstance(shape, Box):
        prim.type, dims, capsule = _BOX, [shape.x, shape.y, shape.z], False
    elif isinstance(shape, Sphere):
        prim.type, dims, capsule = _SPHERE, [shape.radius], False
    elif isinstance(shape, Cylinder):
        prim.type, dims, capsule = _CYLINDER, [shape.length, shape.radius], False
    elif isinstance(shape, Capsule):
        prim.type, dims, capsule = _CYLINDER, [shape.length, shape.radius], True
    else:
        raise ConversionError(f"{type(shape).__name__} has no SolidPrimitive; send it as a mesh")
    prim.dimensions = [float(v) for v in dims]
    return prim, capsule


def mesh_msg_to_shape(mesh: Any) -> Mesh:
    """Core :class:`Mesh` (convex hull of the vertices) of a ``shape_msgs/Mesh``."""
    verts = np.array([[p.x, p.y, p.z] for p in mesh.vertices], dtype=float).reshape(-1, 3)
    try:
        return Mesh(verts)
    except RobotCollisionError as exc:
        raise ConversionError(f"mesh: {exc}") from None


def hull_triangles(vertices: NDArray[np.float64]) -> NDArray[np.int64]:
    """Outward-facing triangles (k, 3) (indices into ``vertices``) of their convex hull."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(vertices)
    tris = np.asarray(hull.simplices, dtype=np.int64).copy()
    centre = vertices.mean(axis=0)
    for t in tris:
        a, b, c = vertices[t]
        if np.dot(np.cross(b - a, c - a), a - centre) < 0:
            t[1], t[2] = t[2], t[1]
    return tris


def shape_to_mesh_msg(shape: Mesh) -> Any:
    """``shape_msgs/Mesh`` of a core mesh's hull (outward-facing triangles)."""
    from geometry_msgs.msg import Point
    from shape_msgs.msg import Mesh as MeshMsg
    from shape_msgs.msg import MeshTriangle

    verts = shape.vertices()
    out = MeshMsg()
    out.vertices = [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in verts.tolist()]
    tris = []
    for t in hull_triangles(verts).tolist():
        tri = MeshTriangle()
        tri.vertex_indices = [int(i) for i in t]
        tris.append(tri)
    out.triangles = tris
    return out


# --------------------------------------------------------------------------- world updates
def operation_code(value: Any, what: str = "operation") -> int:
    """An ``operation`` field or constant as an int.

    ``moveit_msgs/CollisionObject.operation`` and its constants are declared ``byte`` (IDL
    ``octet``): rclpy gives them as ``bytes`` of length 1 (``b'\\x00'``), while ``uint8``
    fields (``robot_collision_interfaces/WorldObject.operation``) are ``int``. Both are
    accepted, as are numpy integers; anything else raises :class:`ConversionError`.
    """
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 1:
            raise ConversionError(f"{what} must be a single byte, got {bytes(value)!r}")
        return int(value[0])
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        code = int(value)
        if 0 <= code <= 255:
            return code
        raise ConversionError(f"{what} must be within 0..255, got {code}")
    raise ConversionError(
        f"{what} must be an int or a single byte, got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class WorldUpdate:
    """One change to the world model, independent of the message it came from.

    ``shapes``: (shape, (4, 4) pose relative to the object frame) for ADD/APPEND; ``pose``:
    the object frame in ``frame_id`` (identity when not given; required for MOVE).
    ``frame_id`` empty means the robot base frame. An empty ``object_id`` with REMOVE means
    "remove every object" (MoveIt's convention).
    """

    operation: str
    object_id: str
    shapes: list[tuple[Shape, NDArray[np.float64]]] = field(default_factory=list)
    pose: Optional[NDArray[np.float64]] = None
    frame_id: str = ""

    def world_objects(self) -> list[WorldObject]:
        """Core world objects of the shapes (one per shape; names ``id`` or ``id#k``)."""
        T = np.eye(4) if self.pose is None else self.pose
        multi = len(self.shapes) > 1
        return [
            WorldObject(s, T @ local, f"{self.object_id}#{k}" if multi else self.object_id)
            for k, (s, local) in enumerate(self.shapes)
        ]


def _header_frame(msg: Any) -> str:
    header = getattr(msg, "header", None)
    return str(getattr(header, "frame_id", "") or "") if header is not None else ""


def world_update_from_msg(msg: Any) -> WorldUpdate:
    """:class:`WorldUpdate` of a ``robot_collision_interfaces/WorldObject`` message."""
    object_id = str(msg.id)
    if not object_id.strip():
        raise ConversionError("WorldObject id must be a non-empty name")
    op = operation_code(msg.operation, f"WorldObject {object_id!r} operation")
    frame = _header_frame(msg)
    if op == 1:
        return WorldUpdate(REMOVE, object_id, frame_id=frame)
    if op not in (0, 2):
        raise ConversionError(
            f"WorldObject {object_id!r}: unknown operation {op}; use ADD (0), REMOVE (1), MOVE (2)"
        )
    pose = pose_to_matrix(msg.pose, f"WorldObject {object_id!r} pose")
    if op == 2:
        return WorldUpdate(MOVE, object_id, pose=pose, frame_id=frame)
    try:
        if msg.use_mesh:
            shape: Shape = mesh_msg_to_shape(msg.mesh)
        else:
            shape = solid_primitive_to_shape(msg.primitive, bool(msg.cylinder_is_capsule))
    except ConversionError as exc:
        raise ConversionError(f"WorldObject {object_id!r}: {exc}") from None
    return WorldUpdate(ADD, object_id, [(shape, np.eye(4))], pose, frame)


def world_object_to_msg(
    obj: WorldObject, operation: Optional[int] = None, frame_id: str = "", object_id: str = ""
) -> Any:
    """``robot_collision_interfaces/WorldObject`` (ADD unless ``operation``) of a core object."""
    from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg

    msg = WorldObjectMsg()
    msg.id = object_id or obj.name
    msg.operation = WorldObjectMsg.ADD if operation is None else int(operation)
    msg.header.frame_id = frame_id
    matrix_to_pose(obj.pose, msg.pose)
    if isinstance(obj.shape, Mesh):
        msg.use_mesh = True
        msg.mesh = shape_to_mesh_msg(obj.shape)
    else:
        msg.primitive, msg.cylinder_is_capsule = shape_to_solid_primitive(obj.shape)
    return msg


def _plane_box(coef: Sequence[float], what: str) -> tuple[Shape, NDArray[np.float64]]:
    """A thick box whose top face is the plane a x + b y + c z + d = 0 (normal side free)."""
    a, b, c, d = _finite(list(coef)[:4], f"{what} coefficients")
    n = np.array([a, b, c])
    k = float(np.linalg.norm(n))
    if k < 1e-12:
        raise ConversionError(f"{what} has a zero normal (a, b, c)")
    n /= k
    point = -(d / k) * n
    z = n
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, y, z])
    T[:3, 3] = point - 0.5 * PLANE_BOX_THICKNESS * z
    return Box(PLANE_BOX_SIZE, PLANE_BOX_SIZE, PLANE_BOX_THICKNESS), T


def collision_object_to_update(obj: Any) -> WorldUpdate:
    """:class:`WorldUpdate` of a ``moveit_msgs/CollisionObject`` (or any object with its fields).

    Uses ``id``, ``operation`` (ADD=0, REMOVE=1, APPEND=2, MOVE=3, read from the object's own
    constants when it has them; ``bytes`` of length 1 as in ROS 2 Python, where the field is an
    ``octet``, or ``int``), ``header.frame_id``, ``pose`` (the object frame; identity when
    the field is absent, as in old MoveIt versions), ``primitives``/``primitive_poses`` and
    ``meshes``/``mesh_poses`` (relative to ``pose``) and ``planes``/``plane_poses`` (each plane
    becomes a 20 m x 20 m x 1 m box under it). REMOVE with an empty id removes every object.
    """
    object_id = str(getattr(obj, "id", "") or "")
    what = f"CollisionObject {object_id!r}"
    op_add = operation_code(getattr(obj, "ADD", 0), f"{what} ADD constant")
    op_remove = operation_code(getattr(obj, "REMOVE", 1), f"{what} REMOVE constant")
    op_append = operation_code(getattr(obj, "APPEND", 2), f"{what} APPEND constant")
    op_move = operation_code(getattr(obj, "MOVE", 3), f"{what} MOVE constant")
    op = operation_code(getattr(obj, "operation", op_add), f"{what} operation")
    frame = _header_frame(obj)
    if op == op_remove:
        return WorldUpdate(REMOVE, object_id, frame_id=frame)
    if not object_id.strip():
        raise ConversionError("CollisionObject id must be a non-empty name")
    pose_msg = getattr(obj, "pose", None)
    pose = pose_to_matrix(pose_msg, f"{what} pose") if pose_msg is not None else np.eye(4)
    if op == op_move:
        return WorldUpdate(MOVE, object_id, pose=pose, frame_id=frame)
    if op not in (op_add, op_append):
        raise ConversionError(
            f"{what}: unknown operation {op}; use ADD ({op_add}), REMOVE ({op_remove}), "
            f"APPEND ({op_append}) or MOVE ({op_move})"
        )
    shapes: list[tuple[Shape, NDArray[np.float64]]] = []

    def poses_for(kind: str, items: list, poses: list) -> list[NDArray[np.float64]]:
        if len(poses) != len(items):
            raise ConversionError(
                f"{what} has {len(items)} {kind}s but {len(poses)} {kind}_poses; they must match"
            )
        return [pose_to_matrix(p, f"{what} {kind}_poses[{k}]") for k, p in enumerate(poses)]

    prims = list(getattr(obj, "primitives", []) or [])
    for k, (prim, T) in enumerate(
        zip(prims, poses_for("primitive", prims, list(getattr(obj, "primitive_poses", []) or [])))
    ):
        try:
            shapes.append((solid_primitive_to_shape(prim), T))
        except ConversionError as exc:
            raise ConversionError(f"{what} primitives[{k}]: {exc}") from None
    meshes = list(getattr(obj, "meshes", []) or [])
    for k, (mesh, T) in enumerate(
        zip(meshes, poses_for("mesh", meshes, list(getattr(obj, "mesh_poses", []) or [])))
    ):
        try:
            shapes.append((mesh_msg_to_shape(mesh), T))
        except ConversionError as exc:
            raise ConversionError(f"{what} meshes[{k}]: {exc}") from None
    planes = list(getattr(obj, "planes", []) or [])
    for k, (plane, T) in enumerate(
        zip(planes, poses_for("plane", planes, list(getattr(obj, "plane_poses", []) or [])))
    ):
        box, local = _plane_box(list(plane.coef), f"{what} planes[{k}]")
        shapes.append((box, T @ local))
    if not shapes and op == op_add:
        raise ConversionError(f"{what}: ADD needs at least one primitive, mesh or plane")
    return WorldUpdate(ADD if op == op_add else APPEND, object_id, shapes, pose, frame)


def planning_scene_to_updates(scene: Any) -> tuple[bool, list[WorldUpdate]]:
    """(is_diff, updates) of a ``moveit_msgs/PlanningScene``: one :class:`WorldUpdate` per
    ``world.collision_objects`` entry, in order (see :func:`collision_object_to_update`).

    Only the world's collision objects are read; the robot state (attached objects), allowed
    collision matrix, link padding/scale, colours and ``world.octomap`` are ignored. With
    ``is_diff`` false the message is a full scene: the caller replaces the objects that came
    from messages by these (MoveIt clears its world first). Raises :class:`ConversionError`
    naming the offending entry; no update is returned then.
    """
    world = getattr(scene, "world", None)
    objects = list(getattr(world, "collision_objects", []) or []) if world is not None else []
    updates = []
    for k, obj in enumerate(objects):
        try:
            updates.append(collision_object_to_update(obj))
        except ConversionError as exc:
            raise ConversionError(f"PlanningScene world.collision_objects[{k}]: {exc}") from None
    return bool(getattr(scene, "is_diff", False)), updates


def collision_object_to_world_objects(obj: Any) -> list[WorldObject]:
    """Core world objects of an ADD/APPEND ``CollisionObject`` (one per shape, base frame)."""
    upd = collision_object_to_update(obj)
    if upd.operation not in (ADD, APPEND):
        raise ConversionError(
            f"CollisionObject {upd.object_id!r}: {upd.operation.upper()} carries no geometry"
        )
    return upd.world_objects()


# --------------------------------------------------------------------------- trajectories
def _duration(seconds: float) -> Any:
    """``builtin_interfaces/Duration`` of ``seconds`` (negative = 0)."""
    from builtin_interfaces.msg import Duration

    ns = round(max(0.0, seconds) * 1e9)
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def trajectory_to_msg(traj: TimedTrajectory, frame_id: str, stamp: Any = None) -> Any:
    """``trajectory_msgs/JointTrajectory`` of a timed path (stamp None = zero)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    msg.joint_names = list(traj.joint_names)
    points = []
    for k in range(len(traj.times)):
        pt = JointTrajectoryPoint()
        pt.positions = [float(v) for v in traj.positions[k]]
        pt.velocities = [float(v) for v in traj.velocities[k]]
        pt.accelerations = [float(v) for v in traj.accelerations[k]]
        pt.time_from_start = _duration(float(traj.times[k]))
        points.append(pt)
    msg.points = points
    return msg
