"""Self-filtering of sensed points: drop the points that lie on the robot itself.

A camera that sees the arm reports points on its links; left in the scene they would put the
robot in collision with itself. As MoveIt's self filter does, :func:`robot_filter` removes every
point whose signed distance to the robot's collision geometry at configuration ``q`` is below
``padding`` (m), i.e. the points inside the geometry inflated by the padding (choose it to
cover the model's error plus the sensor noise, e.g. 1-3 cm).

Compiled: forward kinematics, then per point a test against the robot's overall box and each
link's bounding sphere before any shape; shapes by their exact point distances (spheres,
capsules, boxes, cylinders in closed form, mesh hulls by GJK after a box bound).
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import Union

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError
from ..geometry.cloud_index import _checked_points, _point_shape_lb, shape_aux
from ..geometry.distance import shape_distance
from ..geometry.shapes import MESH, SPHERE
from ..model.kinematics import fk_into
from ..model.robot_model import RobotModel
from .kernels import all_shape_poses
from .scene import RobotArrays, robot_arrays

__all__ = ["robot_filter", "robot_filter_mask"]


@njit(cache=True, boundscheck=False, nogil=True)  # clouds are processed off the executor
def _filter_mask(P, q, kin, rs, pad, keep):  # type: ignore[no-untyped-def]
    L = rs.link_start.shape[0] - 1
    S = rs.kind.shape[0]
    T = np.empty((L, 4, 4))
    fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T)
    SP = np.empty((S, 4, 4))
    all_shape_poses(T, rs.link_start, rs.kind, rs.local, SP)
    for s in range(S):  # complete the sphere poses (centre only on the fast path)
        if rs.kind[s] == SPHERE:
            for a in range(3):
                for b in range(3):
                    SP[s, a, b] = 1.0 if a == b else 0.0
            SP[s, 3, 0] = 0.0
            SP[s, 3, 1] = 0.0
            SP[s, 3, 2] = 0.0
            SP[s, 3, 3] = 1.0
    aux = np.empty((S, 7))
    for s in range(S):
        shape_aux(rs.kind[s], rs.params[s], rs.verts[rs.vstart[s] : rs.vstart[s] + rs.vcount[s]],
                  aux[s])
    # link bounding spheres (base frame) and the box around all of them, inflated by pad
    cen = np.empty((L, 3))
    rad = np.empty(L)
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for l in range(L):
        rad[l] = rs.bound_radius[l] + pad
        for a in range(3):
            cen[l, a] = (T[l, a, 0] * rs.bound_center[l, 0] + T[l, a, 1] * rs.bound_center[l, 1]
                         + T[l, a, 2] * rs.bound_center[l, 2] + T[l, a, 3])
        if rs.bound_radius[l] >= 0.0:
            for a in range(3):
                lo[a] = min(lo[a], cen[l, a] - rad[l])
                hi[a] = max(hi[a], cen[l, a] + rad[l])
    scratch = np.empty((4, 4))
    zero = np.zeros(4)
    w = np.empty((3, 3))
    removed = 0
    for i in range(P.shape[0]):
        x = P[i, 0]
        y = P[i, 1]
        z = P[i, 2]
        keep[i] = True
        if x < lo[0] or x > hi[0] or y < lo[1] or y > hi[1] or z < lo[2] or z > hi[2]:
            continue
        for l in range(L):
            if rs.bound_radius[l] < 0.0:
                continue
            dx = x - cen[l, 0]
            dy = y - cen[l, 1]
            dz = z - cen[l, 2]
            if dx * dx + dy * dy + dz * dz >= rad[l] * rad[l]:
                continue
            for s in range(rs.link_start[l], rs.link_start[l + 1]):
                k = rs.kind[s]
                d = _point_shape_lb(k, rs.params[s], SP[s], aux[s], x, y, z)
                if d < pad and k == MESH:
                    for a in range(4):
                        for b in range(4):
                            scratch[a, b] = 1.0 if a == b else 0.0
                    scratch[0, 3] = x
                    scratch[1, 3] = y
                    scratch[2, 3] = z
                    d = shape_distance(
                        MESH, rs.params[s], SP[s],
                        rs.verts[rs.vstart[s] : rs.vstart[s] + rs.vcount[s]], SPHERE, zero,
                        scratch, rs.verts[0:0], w[0], w[1], w[2],
                    )
                if d < pad:
                    keep[i] = False
                    break
            if not keep[i]:
                removed += 1
                break
    return removed


_ARRAYS: weakref.WeakKeyDictionary[RobotModel, tuple[int, RobotArrays]] = (
    weakref.WeakKeyDictionary()
)
_ARRAYS_LOCK = threading.Lock()


def _robot_arrays(robot: RobotModel) -> RobotArrays:
    """The robot's flattened geometry, cached per robot and geometry version."""
    with _ARRAYS_LOCK:
        cached = _ARRAYS.get(robot)
        if cached is None or cached[0] != robot.geometry_version:
            cached = (robot.geometry_version, robot_arrays(robot))
            _ARRAYS[robot] = cached
        return cached[1]


def robot_filter_mask(
    robot: RobotModel, points: ArrayLike, q: ArrayLike, padding: float = 0.0
) -> NDArray[np.bool_]:
    """(N,) bool: True for the points of ``points`` (N, 3), base frame (m), that are NOT on the
    robot at ``q``, i.e. whose signed distance to its geometry is at least ``padding`` (m)."""
    P = _checked_points(points)
    qa = robot.validate_configuration(q)
    pad = float(padding)
    if not (math.isfinite(pad) and pad >= 0.0):
        raise ConfigurationError(f"padding must be a finite non-negative number of metres, "
                                 f"got {padding!r}")
    keep = np.empty(len(P), dtype=np.bool_)
    if len(P):
        _filter_mask(P, qa, robot.kin, _robot_arrays(robot), pad, keep)
    return keep


def robot_filter(
    robot: RobotModel, points: ArrayLike, q: ArrayLike, padding: Union[float, int] = 0.0
) -> NDArray[np.float64]:
    """The points of ``points`` (N, 3), base frame (m), that do not lie on the robot at
    configuration ``q`` (its collision geometry inflated by ``padding`` m); order kept."""
    P = _checked_points(points)
    return P[robot_filter_mask(robot, P, q, float(padding))]
