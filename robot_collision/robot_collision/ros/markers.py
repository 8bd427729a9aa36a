"""RViz markers (``visualization_msgs/MarkerArray``) of the robot's and the world's collision
shapes coloured by clearance, and of the witness points of close pairs.

Namespaces (one RViz checkbox each):

- ``robot/<link>``: the collision shapes of a robot link (base included);
- ``world/<object>``: a world object's shape;
- ``<robot_body>=<other_body>`` (as MoveIt names contact markers): id 0 a LINE_LIST between
  the two witness points, id 1 a SPHERE_LIST of the two points, for each clearance row (rows
  exist only under the influence distance).

Shapes map to SPHERE, CUBE and CYLINDER markers; a capsule is a CYLINDER plus two SPHEREs; a mesh
is a TRIANGLE_LIST of its convex hull. Colours: green at or beyond the influence distance, through
yellow to red as the clearance shrinks, full red (and opaque) when in contact or penetrating.
:class:`ClearanceMarkers` remembers what it published and sends DELETE for every
(namespace, id) that is no longer present, so RViz never shows stale markers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from ..collision.clearance import ClearanceTable
from ..geometry.point_cloud import PointCloud
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject
from ..geometry.transforms import matrix_to_quat_xyzw
from ..model.robot_model import RobotModel
from .conversions import hull_triangles

__all__ = ["ClearanceMarkers", "PlannedPathMarkers", "clearance_color", "body_clearances"]

RGBA = tuple[float, float, float, float]


MAX_CLOUD_MARKER_POINTS = 20_000
"""Most points a point-cloud marker carries (a cloud with more is shown every k-th point)."""


def clearance_color(distance: float, influence_distance: float, alpha: float = 0.5) -> RGBA:
    """Colour of a clearance: green (>= influence) → yellow → red (0); red and opaque below 0."""
    if not math.isfinite(distance) or distance >= influence_distance:
        return (0.1, 0.8, 0.1, alpha)
    if distance <= 0.0:
        return (1.0, 0.0, 0.0, max(alpha, 0.9))
    t = distance / influence_distance if influence_distance > 0 else 1.0
    if t < 0.5:
        return (1.0, 2.0 * t, 0.0, alpha)  # red → yellow
    return (2.0 * (1.0 - t), 1.0, 0.0, alpha)  # yellow → green


def body_clearances(table: Optional[ClearanceTable]) -> dict[str, float]:
    """Smallest row distance per body name (robot links and world objects)."""
    out: dict[str, float] = {}
    if table is None:
        return out
    for a, b, d in zip(table.robot_bodies, table.other_bodies, table.distances.tolist()):
        if d < out.get(a, math.inf):
            out[a] = d
        if d < out.get(b, math.inf):
            out[b] = d
    return out


def _translate_z(T: NDArray[np.float64], dz: float) -> NDArray[np.float64]:
    out = T.copy()
    out[:3, 3] += dz * T[:3, 2]
    return out


class ClearanceMarkers:
    """Builds marker arrays for one robot; keeps track of published ids for DELETE.

    Not thread-safe: use it from one thread (a timer callback) at a time.
    """

    def __init__(
        self,
        robot: RobotModel,
        frame_id: str = "",
        alpha: float = 0.5,
        line_width: float = 0.004,
        point_diameter: float = 0.012,
    ) -> None:
        self.robot = robot
        self.frame_id = frame_id or robot.base_name
        self.alpha = float(alpha)
        self.line_width = float(line_width)
        self.point_diameter = float(point_diameter)
        self._published: set[tuple[str, int]] = set()
        self._hull_points: dict[int, tuple[Shape, list[tuple[float, float, float]]]] = {}

    # ------------------------------------------------------------------ helpers
    def _new(self, ns: str, mid: int, mtype: int, stamp: Any) -> Any:
        from visualization_msgs.msg import Marker

        m = Marker()
        m.header.frame_id = self.frame_id
        if stamp is not None:
            m.header.stamp = stamp
        m.ns = ns
        m.id = mid
        m.type = mtype
        m.action = Marker.ADD
        m.pose.orientation.w = 1.0
        return m

    @staticmethod
    def _set_pose(m: Any, T: NDArray[np.float64]) -> None:
        x, y, z, w = matrix_to_quat_xyzw(T[:3, :3]).tolist()
        p = m.pose.position
        p.x, p.y, p.z = (float(v) for v in T[:3, 3])
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = x, y, z, w

    @staticmethod
    def _set_color(m: Any, rgba: RGBA) -> None:
        c = m.color
        c.r, c.g, c.b, c.a = (float(v) for v in rgba)

    def _hull(self, shape: Mesh) -> list[tuple[float, float, float]]:
        hit = self._hull_points.get(id(shape))
        if hit is not None and hit[0] is shape:
            return hit[1]
        verts = shape.vertices()
        pts: list[tuple[float, float, float]] = [
            (float(verts[i, 0]), float(verts[i, 1]), float(verts[i, 2]))
            for tri in hull_triangles(verts) for i in tri
        ]
        if len(self._hull_points) > 256:
            self._hull_points.clear()
        self._hull_points[id(shape)] = (shape, pts)
        return pts

    def shape_markers(
        self, ns: str, shape: Shape, T: NDArray[np.float64], rgba: RGBA, stamp: Any, first_id: int
    ) -> list[Any]:
        """Markers of one shape at pose ``T`` (ids from ``first_id``)."""
        from geometry_msgs.msg import Point
        from visualization_msgs.msg import Marker

        out = []
        if isinstance(shape, Sphere):
            m = self._new(ns, first_id, Marker.SPHERE, stamp)
            d = 2.0 * shape.radius
            m.scale.x = m.scale.y = m.scale.z = d
            self._set_pose(m, T)
            out.append(m)
        elif isinstance(shape, Box):
            m = self._new(ns, first_id, Marker.CUBE, stamp)
            m.scale.x, m.scale.y, m.scale.z = shape.x, shape.y, shape.z
            self._set_pose(m, T)
            out.append(m)
        elif isinstance(shape, (Cylinder, Capsule)):
            m = self._new(ns, first_id, Marker.CYLINDER, stamp)
            m.scale.x = m.scale.y = 2.0 * shape.radius
            m.scale.z = max(shape.length, 1e-4)
            self._set_pose(m, T)
            out.append(m)
            if isinstance(shape, Capsule):
                for k, dz in enumerate((-0.5 * shape.length, 0.5 * shape.length)):
                    s = self._new(ns, first_id + 1 + k, Marker.SPHERE, stamp)
                    s.scale.x = s.scale.y = s.scale.z = 2.0 * shape.radius
                    self._set_pose(s, _translate_z(T, dz))
                    out.append(s)
        elif isinstance(shape, PointCloud):
            # sensed points: one POINTS marker, thinned to MAX_CLOUD_MARKER_POINTS for RViz
            m = self._new(ns, first_id, Marker.POINTS, stamp)
            m.scale.x = m.scale.y = max(2.0 * shape.radius, 0.006)
            P = shape.points
            if len(P) > MAX_CLOUD_MARKER_POINTS:
                P = P[:: -(-len(P) // MAX_CLOUD_MARKER_POINTS)]
            m.points = [Point(x=a, y=b, z=c) for a, b, c in P.tolist()]
            self._set_pose(m, T)
            out.append(m)
        elif isinstance(shape, Mesh):
            m = self._new(ns, first_id, Marker.TRIANGLE_LIST, stamp)
            m.scale.x = m.scale.y = m.scale.z = 1.0
            m.points = [Point(x=a, y=b, z=c) for a, b, c in self._hull(shape)]
            self._set_pose(m, T)
            out.append(m)
        for m in out:
            self._set_color(m, rgba)
        return out

    def _witness_markers(self, table: ClearanceTable, influence: float, stamp: Any) -> list[Any]:
        from geometry_msgs.msg import Point
        from visualization_msgs.msg import Marker

        out = []
        wr = table.witness_robot.tolist()
        wo = table.witness_other.tolist()
        for i, (ns, d) in enumerate(zip(table.pair_names(), table.distances.tolist())):
            a, b = wr[i], wo[i]
            if not (all(map(math.isfinite, a)) and all(map(math.isfinite, b))):
                continue
            rgba = clearance_color(d, influence, 1.0)
            line = self._new(ns, 0, Marker.LINE_LIST, stamp)
            line.scale.x = self.line_width
            line.points = [Point(x=a[0], y=a[1], z=a[2]), Point(x=b[0], y=b[1], z=b[2])]
            self._set_color(line, rgba)
            pts = self._new(ns, 1, Marker.SPHERE_LIST, stamp)
            pts.scale.x = pts.scale.y = pts.scale.z = self.point_diameter
            pts.points = [Point(x=a[0], y=a[1], z=a[2]), Point(x=b[0], y=b[1], z=b[2])]
            self._set_color(pts, rgba)
            out += [line, pts]
        return out

    # ------------------------------------------------------------------ public
    def build(
        self,
        link_poses: Mapping[str, NDArray[np.float64]],
        table: Optional[ClearanceTable],
        world: Sequence[WorldObject],
        influence_distance: float,
        stamp: Any = None,
    ) -> Any:
        """MarkerArray for the robot at ``link_poses`` (name → (4, 4), base frame), the world
        objects and the clearance rows; includes DELETE markers for anything published before
        and absent now."""
        from visualization_msgs.msg import MarkerArray

        clear = body_clearances(table)
        markers: list[Any] = []
        for link in [self.robot.base_name, *self.robot.body_names]:
            geom = self.robot.collision_geometry(link)
            if not geom or link not in link_poses:
                continue
            rgba = clearance_color(clear.get(link, math.inf), influence_distance, self.alpha)
            ns = f"robot/{link}"
            T_link = link_poses[link]
            next_id = 0
            for shape, local in geom:
                made = self.shape_markers(ns, shape, T_link @ local, rgba, stamp, next_id)
                next_id += len(made)
                markers += made
        for k, obj in enumerate(world):
            name = obj.name or f"object{k}"
            rgba = clearance_color(clear.get(name, math.inf), influence_distance, self.alpha)
            markers += self.shape_markers(f"world/{name}", obj.shape, obj.pose, rgba, stamp, 0)
        if table is not None and len(table):
            markers += self._witness_markers(table, influence_distance, stamp)
        current = {(m.ns, m.id) for m in markers}
        markers += self._deletes(self._published - current, stamp)
        self._published = current
        out = MarkerArray()
        out.markers = markers
        return out

    def take_over(self, other: ClearanceMarkers) -> None:
        """Treat what ``other`` published as published here (the next :meth:`build` deletes
        whatever of it is not drawn again), e.g. when the robot model or frame changes."""
        self._published |= set(other._published)

    def delete_all(self, stamp: Any = None) -> Any:
        """MarkerArray that deletes everything published so far (e.g. on robot change)."""
        from visualization_msgs.msg import MarkerArray

        out = MarkerArray()
        out.markers = self._deletes(self._published, stamp)
        self._published = set()
        return out

    def _deletes(self, keys: set[tuple[str, int]], stamp: Any) -> list[Any]:
        from visualization_msgs.msg import Marker

        out = []
        for ns, mid in sorted(keys):
            m = self._new(ns, mid, Marker.SPHERE, stamp)
            m.action = Marker.DELETE
            out.append(m)
        return out


# --------------------------------------------------------------------------- markers
class PlannedPathMarkers:
    """MarkerArrays of a planned path: the end-effector LINE_STRIP (``end_effector_path``) and
    ghost copies of the robot's collision shapes (``ghost_<k>``). Remembers what it published
    and DELETEs markers that are gone. Not thread-safe."""

    LINE_NS = "end_effector_path"
    MAX_LINE_POINTS = 2000

    def __init__(self, robot: RobotModel, frame_id: str, line_width: float = 0.006) -> None:
        self.robot = robot
        self.frame_id = frame_id or robot.base_name
        self.line_width = float(line_width)
        self._shapes = ClearanceMarkers(robot, self.frame_id)
        self._published: set[tuple[str, int]] = set()

    def _deletes(self, keys: set[tuple[str, int]], stamp: Any) -> list[Any]:
        from visualization_msgs.msg import Marker

        out = []
        for ns, mid in sorted(keys):
            m = Marker()
            m.header.frame_id = self.frame_id
            if stamp is not None:
                m.header.stamp = stamp
            m.ns, m.id, m.action = ns, mid, Marker.DELETE
            out.append(m)
        return out

    def build(
        self, dense_path: NDArray[np.float64], end_effector: str, ghosts: int, stamp: Any = None
    ) -> Any:
        """MarkerArray of the (K, n) path (K >= 1) with ``ghosts`` robot poses (start, goal and
        evenly spaced between, by path index)."""
        from geometry_msgs.msg import Point
        from visualization_msgs.msg import Marker, MarkerArray

        P = np.asarray(dense_path, dtype=float)
        if len(P) > self.MAX_LINE_POINTS:
            idx = np.unique(np.r_[np.linspace(0, len(P) - 1, self.MAX_LINE_POINTS).astype(int)])
            P_line = P[idx]
        else:
            P_line = P
        ee = self.robot.link_index(end_effector)
        poses = self.robot.link_poses_batch(P_line)
        markers: list[Any] = []
        line = Marker()
        line.header.frame_id = self.frame_id
        if stamp is not None:
            line.header.stamp = stamp
        line.ns, line.id, line.type, line.action = self.LINE_NS, 0, Marker.LINE_STRIP, Marker.ADD
        line.pose.orientation.w = 1.0
        line.scale.x = self.line_width
        line.color.r, line.color.g, line.color.b, line.color.a = 1.0, 0.55, 0.0, 1.0
        line.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in poses[:, ee, :3, 3]]
        markers.append(line)
        if ghosts > 0:
            count = min(ghosts, len(P))
            picks = np.unique(np.round(np.linspace(0, len(P) - 1, count)).astype(int))
            for g, i in enumerate(picks.tolist()):
                frac = g / max(1, len(picks) - 1)
                rgba = (0.2 + 0.6 * frac, 0.4, 1.0 - 0.6 * frac, 0.25)
                T = self.robot.link_poses(P[i])
                ns = f"ghost_{g}"
                next_id = 0
                for li, link in enumerate(self.robot.link_names):
                    for shape, local in self.robot.collision_geometry(link):
                        made = self._shapes.shape_markers(ns, shape, T[li] @ local, rgba, stamp,
                                                          next_id)
                        next_id += len(made)
                        markers += made
        current = {(m.ns, m.id) for m in markers}
        markers += self._deletes(self._published - current, stamp)
        self._published = current
        out = MarkerArray()
        out.markers = markers
        return out

    def clear(self, stamp: Any = None) -> Any:
        """MarkerArray that DELETEs everything published so far."""
        from visualization_msgs.msg import MarkerArray

        out = MarkerArray()
        out.markers = self._deletes(self._published, stamp)
        self._published = set()
        return out
