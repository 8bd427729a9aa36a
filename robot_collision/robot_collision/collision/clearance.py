"""Clearance table: signed distances of monitored pairs and their joint-space Jacobians.

For a robot body R and another body O (a robot body, the base, or a world object) with
witness points p_R (on R) and p_O (on O) and unit normal n pointing from R towards O, the
padded signed distance is ϕ = n·(p_O − p_R) − padding. Treating the witness points as material
points of their bodies (exact for the derivative of the distance between smooth convex bodies),

    ∂ϕ/∂q = nᵀ (J_O(p_O) − J_R(p_R))          (1, n)

where J_X(p) (3, n) is the translational Jacobian of point p rigidly attached to body X (zero
for world objects). Self pairs therefore use the relative Jacobian of both bodies. Everything
is in the base frame; distances in m, Jacobian rows in m/rad (m/m for prismatic joints).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..model.kinematics import point_jacobian_into
from ..model.robot_model import RobotModel
from .results import PairDistances

__all__ = ["PairKind", "ClearanceRow", "ClearanceTable", "clearance_table", "clearance_jacobians"]


class PairKind(IntEnum):
    """Kind of a clearance row: robot-robot (SELF) or robot-world (ENVIRONMENT)."""

    SELF = 0
    ENVIRONMENT = 1


_SELF = int(PairKind.SELF)  # plain ints for the compiled code
_ENVIRONMENT = int(PairKind.ENVIRONMENT)


@dataclass(frozen=True)
class ClearanceRow:
    """One (robot body, other body) row; points in the base frame, distance in m."""

    robot_body: str
    other_body: str
    kind: PairKind
    distance: float
    witness_robot: NDArray[np.float64]
    witness_other: NDArray[np.float64]
    normal: NDArray[np.float64]
    jacobian: NDArray[np.float64]


@dataclass(frozen=True)
class ClearanceTable:
    """Column arrays of the clearance rows (R rows, n joints)."""

    joint_names: list[str]
    robot_bodies: list[str]
    other_bodies: list[str]
    kinds: NDArray[np.int64]  # (R,) PairKind values
    distances: NDArray[np.float64]  # (R,) padded signed distance ϕ, m
    witness_robot: NDArray[np.float64]  # (R, 3)
    witness_other: NDArray[np.float64]  # (R, 3)
    normals: NDArray[np.float64]  # (R, 3) unit, from robot body towards other body
    jacobians: NDArray[np.float64]  # (R, n) ∂ϕ/∂q
    robot_links: NDArray[np.int64]  # (R,) link index of the robot body
    other_links: NDArray[np.int64]  # (R,) link index of the other body, -1 - k for world object k

    def __len__(self) -> int:
        return int(self.distances.shape[0])

    @property
    def rows(self) -> list[ClearanceRow]:
        return [self[i] for i in range(len(self))]

    def __getitem__(self, i: int) -> ClearanceRow:
        return ClearanceRow(
            self.robot_bodies[i],
            self.other_bodies[i],
            PairKind(int(self.kinds[i])),
            float(self.distances[i]),
            self.witness_robot[i],
            self.witness_other[i],
            self.normals[i],
            self.jacobians[i],
        )

    @property
    def min_distance(self) -> float:
        return float(self.distances.min()) if len(self) else float("inf")

    def pair_names(self) -> list[str]:
        """``"robot=other"`` per row (the marker namespace convention)."""
        return [f"{a}={b}" for a, b in zip(self.robot_bodies, self.other_bodies)]


@njit(cache=True, fastmath=True, boundscheck=False)
def clearance_jacobians(  # type: ignore[no-untyped-def]
    T, robot_link, other_link, w_robot, w_other, normal, parent, jtype, axis, qidx, scale, n_joints
):
    """Rows ``nᵀ (J_O(p_O) − J_R(p_R))`` (R, n); ``other_link < 0`` means a world object."""
    R = robot_link.shape[0]
    out = np.zeros((R, n_joints))
    Jr = np.zeros((3, n_joints))
    Jo = np.zeros((3, n_joints))
    for r in range(R):
        Jr[:, :] = 0.0
        Jo[:, :] = 0.0
        point_jacobian_into(T, robot_link[r], w_robot[r], parent, jtype, axis, qidx, scale, 1.0, Jr)
        if other_link[r] >= 0:
            point_jacobian_into(
                T, other_link[r], w_other[r], parent, jtype, axis, qidx, scale, 1.0, Jo
            )
        for c in range(n_joints):
            out[r, c] = (
                normal[r, 0] * (Jo[0, c] - Jr[0, c])
                + normal[r, 1] * (Jo[1, c] - Jr[1, c])
                + normal[r, 2] * (Jo[2, c] - Jr[2, c])
            )
    return out


@njit(cache=True, boundscheck=False)
def _select_rows(D, WA, WB, NN, E, influence, L):  # type: ignore[no-untyped-def]
    """Rows of the evaluated pairs with ``D < influence`` from the link-indexed pair results
    (see ``CollisionChecker.pair_distances``), row-major order: ``(robot_link, other_link,
    kind, distance, witness_robot, witness_other, normal)``. Self pairs are stored at [a, b]
    with a < b; the deeper link b is the robot body (witnesses swapped, normal negated); world
    object k is other_link -1 - k."""
    R = 0
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            if E[i, j] and D[i, j] < influence:
                R += 1
    r_link = np.empty(R, dtype=np.int64)
    o_link = np.empty(R, dtype=np.int64)
    kinds = np.empty(R, dtype=np.int64)
    dist = np.empty(R)
    w_robot = np.empty((R, 3))
    w_other = np.empty((R, 3))
    normal = np.empty((R, 3))
    r = 0
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            if not (E[i, j] and D[i, j] < influence):
                continue
            dist[r] = D[i, j]
            if j < L:
                r_link[r] = j
                o_link[r] = i
                kinds[r] = _SELF
                for c in range(3):
                    w_robot[r, c] = WB[i, j, c]
                    w_other[r, c] = WA[i, j, c]
                    normal[r, c] = -NN[i, j, c]
            else:
                r_link[r] = i
                o_link[r] = -1 - (j - L)
                kinds[r] = _ENVIRONMENT
                for c in range(3):
                    w_robot[r, c] = WA[i, j, c]
                    w_other[r, c] = WB[i, j, c]
                    normal[r, c] = NN[i, j, c]
            r += 1
    return r_link, o_link, kinds, dist, w_robot, w_other, normal


def clearance_table(
    robot: RobotModel, pd: PairDistances, influence_distance: float = float("inf")
) -> ClearanceTable:
    """Rows for every pair of ``pd`` (one evaluation of ``robot``) with padded signed distance
    below ``influence_distance`` (m)."""
    L = len(robot.link_names)
    r_link, o_link, kinds, dist, w_robot, w_other, normal = _select_rows(
        pd.D, pd.WA, pd.WB, pd.NN, pd.E, float(influence_distance), L
    )
    k = robot.kin
    J = clearance_jacobians(
        pd.T,
        r_link,
        o_link,
        w_robot,
        w_other,
        normal,
        k.parent,
        k.jtype,
        k.axis,
        k.qidx,
        k.scale,
        robot.num_joints,
    )
    names = robot.link_names
    wnames = pd.world_names
    return ClearanceTable(
        joint_names=list(robot.joint_names),
        robot_bodies=[names[i] for i in r_link.tolist()],
        other_bodies=[names[o] if o >= 0 else wnames[-1 - o] for o in o_link.tolist()],
        kinds=kinds,
        distances=dist,
        witness_robot=w_robot,
        witness_other=w_other,
        normals=normal,
        jacobians=J,
        robot_links=r_link,
        other_links=o_link,
    )
