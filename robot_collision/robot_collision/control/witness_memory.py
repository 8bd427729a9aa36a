"""The velocity filter's witness memory: witness points of recent ticks re-evaluated at the
current configuration as extra clearance rows of the QP (see :class:`_WitnessMemory`), with its
compiled kernel. Units: m, rad."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..collision.clearance import ClearanceTable
from ..model.kinematics import KinematicArrays, point_jacobian_into

if TYPE_CHECKING:
    pass



_MEMORY_CAPACITY = 64  # remembered witnesses in all (the oldest go first)
_MEMORY_PER_PAIR = 4  # remembered witnesses per body pair
_MEMORY_DRIFT = 0.2  # rad (m): a witness is forgotten once any joint moved this far since
_MEMORY_SLIDE = 0.01  # m: ... or once its robot point moved this far relative to the other body
_SAME_WITNESS = 1e-3  # m: a current witness this close to a remembered one replaces it
_PLAUSIBLE = 5e-4  # m: a remembered witness estimated this far below the pair's minimum is wrong


class _WitnessMemory:
    """Witness points of recent ticks, re-evaluated at the current configuration as extra rows.

    A clearance row is the *closest* shape pair (and closest features) of a body pair, so the
    row's distance is a minimum of smooth functions: where two witnesses are about equally close
    (two fingers of a gripper against a wall, two corners of a box, two spheres of a link) it has
    a kink, and the row's Jacobian is the gradient of one of them only. Projected onto that one
    gradient the command pushes the other witness in; next tick that one is closest, and the
    output flips sign every tick (measured: ±0.1 rad/s on four joints at 500 Hz, and the pair
    settled 2.4 mm below the safety distance by the switching overshoot). Remembering the
    witnesses seen recently gives the QP the gradients of every nearly-active witness at once,
    so it finds the velocity that keeps all of them (at rest: zero).

    A remembered witness is a pair of material points, one on each body (stored in the body's
    frame; a world object's in the base frame), with the unit normal fixed to the other body:
    at q its row is ϕ = n·(p_O − p_R) − pad with Jacobian nᵀ(J_O(p_O) − J_R(p_R)), exact while
    the witness is a vertex against a face (the gripper and box cases) and a first-order
    approximation otherwise (two spheres sliding past each other: the error grows with the square
    of the slide, 0.5 mm after 1 cm for 5 cm spheres). It is forgotten when its robot point slid
    more than ``_MEMORY_SLIDE`` relative to the other body or a joint moved more than
    ``_MEMORY_DRIFT`` since it was seen, when its estimate falls below the pair's (exact)
    minimum by ``_PLAUSIBLE``, when its pair leaves the table, or when the current witness of
    the pair is within ``_SAME_WITNESS`` of it (the current row replaces it). Extra rows only add
    constraints on real points of the robot; the current rows (exact) keep the guarantee.

    Across a refresh of a sensed object (``set_world(..., keep_witnesses=True)``: the next
    cloud of a camera) a remembered point of the old cloud stands for the same surface,
    measured again, and stays under the same rules. One closer than every point of the new
    cloud (the surface moved away, or it was noise) fails the plausibility test at once; one
    that no longer exists but is farther than the new closest point can only hold the robot
    back, never push it, until the robot point moved ``_MEMORY_SLIDE``, four newer witnesses
    of the pair displaced it, or the pair left the table.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.clear()

    def clear(self) -> None:
        n, c = self.n, _MEMORY_CAPACITY
        self.links = np.zeros((c, 2), dtype=np.int64)  # robot link, other link (-1 - k world)
        self.kinds = np.zeros(c, dtype=np.int64)
        # p_R (robot link frame), p_O, n (other body frame), padding, p_R then (other body frame)
        self.geom = np.zeros((c, 13))
        self.q = np.zeros((c, n))
        self.count = 0

    def rows(self, q: NDArray[np.float64], tab: ClearanceTable, T: NDArray[np.float64],
             kin: KinematicArrays, limit: float) -> tuple[
            NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """(ϕ, kinds, J, table row) of the table's rows followed by the remembered witnesses
        still valid at ``q`` (link poses ``T``); remembers the table's rows closer than
        ``limit`` (m)."""
        phi, kinds, jac, src, count = _recall_witnesses(
            q, T, tab.distances, tab.kinds, tab.jacobians, tab.robot_links, tab.other_links,
            tab.witness_robot, tab.witness_other, tab.normals,
            self.links, self.kinds, self.geom, self.q, self.count, float(limit),
            _MEMORY_DRIFT, _MEMORY_SLIDE, _SAME_WITNESS, _MEMORY_PER_PAIR,
            kin.parent, kin.jtype, kin.axis, kin.qidx, kin.scale)
        self.count = int(count)
        return phi, kinds, jac, src


@njit(cache=True, boundscheck=False)
def _to_local(T, link, p, out):  # type: ignore[no-untyped-def]
    """``out`` = point ``p`` (3,) of the base frame in the frame of ``link`` (base if < 0)."""
    if link < 0:
        for a in range(3):
            out[a] = p[a]
        return
    for a in range(3):
        out[a] = (T[link, 0, a] * (p[0] - T[link, 0, 3]) + T[link, 1, a] * (p[1] - T[link, 1, 3])
                  + T[link, 2, a] * (p[2] - T[link, 2, 3]))


@njit(cache=True, boundscheck=False)
def _to_base(T, link, p, point, out):  # type: ignore[no-untyped-def]
    """``out`` = ``p`` (3,) given in the frame of ``link`` (base if < 0) in the base frame;
    ``point``: a point (rotation and translation) or a direction (rotation only)."""
    if link < 0:
        for a in range(3):
            out[a] = p[a]
        return
    for a in range(3):
        out[a] = T[link, a, 0] * p[0] + T[link, a, 1] * p[1] + T[link, a, 2] * p[2]
        if point:
            out[a] += T[link, a, 3]


@njit(cache=True, boundscheck=False)
def _recall_witnesses(q, T, phi, kinds, jac, rlink, olink, w_robot, w_other, normal,  # type: ignore[no-untyped-def]
                      m_links, m_kinds, m_geom, m_q, count, limit, drift, slide, same, per_pair,
                      parent, jtype, axis, qidx, scale):
    """Rows of the table followed by the remembered witnesses still valid at ``q``, and the
    memory updated in place (see :class:`_WitnessMemory`); returns ``(phi, kinds, jac, src,
    count)`` with ``src`` the table row of every row (its pair's name)."""
    R = phi.shape[0]
    n = q.shape[0]
    C = m_kinds.shape[0]
    # the table's witnesses in body frames (to compare with and to remember)
    G = m_geom.shape[1]
    cur = np.empty((R, G))
    for r in range(R):
        o = olink[r]
        _to_local(T, rlink[r], w_robot[r], cur[r, 0:3])
        _to_local(T, o, w_other[r], cur[r, 3:6])
        _to_local(T, o, w_robot[r], cur[r, 10:13])
        if o < 0:
            for a in range(3):
                cur[r, 6 + a] = normal[r, a]
        else:
            for a in range(3):
                cur[r, 6 + a] = (T[o, 0, a] * normal[r, 0] + T[o, 1, a] * normal[r, 1]
                                 + T[o, 2, a] * normal[r, 2])
        gap = 0.0
        for a in range(3):
            gap += normal[r, a] * (w_other[r, a] - w_robot[r, a])
        cur[r, 9] = gap - phi[r]  # the padding
    keep = np.empty(count, dtype=np.int64)
    est = np.empty(count)
    row_of = np.empty(count, dtype=np.int64)
    ejac = np.zeros((count, n))
    J3 = np.zeros((3, n))
    pr = np.empty(3)
    po = np.empty(3)
    nb = np.empty(3)
    e = 0
    for j in range(count):
        moved = 0.0
        for i in range(n):
            moved = max(moved, abs(q[i] - m_q[j, i]))
        if not moved <= drift:
            continue
        row = -1
        for r in range(R):
            if rlink[r] == m_links[j, 0] and olink[r] == m_links[j, 1]:
                row = r
                break
        if row < 0 or not phi[row] < limit:
            continue  # the pair is no longer close
        d2 = 0.0
        for a in range(6):
            d2 += (cur[row, a] - m_geom[j, a]) ** 2
        if d2 <= 2.0 * same * same:
            continue  # the current witness is this one
        rl = m_links[j, 0]
        ol = m_links[j, 1]
        _to_base(T, rl, m_geom[j, 0:3], True, pr)
        _to_local(T, ol, pr, nb)
        moved = 0.0
        for a in range(3):
            moved += (nb[a] - m_geom[j, 10 + a]) ** 2
        if not moved <= slide * slide:
            continue  # slid too far along the other body for its normal to hold
        _to_base(T, ol, m_geom[j, 3:6], True, po)
        _to_base(T, ol, m_geom[j, 6:9], False, nb)
        v = -m_geom[j, 9]
        for a in range(3):
            v += nb[a] * (po[a] - pr[a])
        J3[:, :] = 0.0
        point_jacobian_into(T, rl, pr, parent, jtype, axis, qidx, scale, -1.0, J3)
        if ol >= 0:
            point_jacobian_into(T, ol, po, parent, jtype, axis, qidx, scale, 1.0, J3)
        for i in range(n):
            ejac[e, i] = nb[0] * J3[0, i] + nb[1] * J3[1, i] + nb[2] * J3[2, i]
        if v < phi[row] - _PLAUSIBLE:
            continue  # below the pair's (exact) minimum: the estimate no longer holds
        keep[e] = j
        est[e] = max(v, phi[row])
        row_of[e] = row
        e += 1
    out_phi = np.empty(R + e)
    out_kinds = np.empty(R + e, dtype=np.int64)
    out_jac = np.empty((R + e, n))
    src = np.empty(R + e, dtype=np.int64)
    for r in range(R):
        out_phi[r] = phi[r]
        out_kinds[r] = kinds[r]
        src[r] = r
        for i in range(n):
            out_jac[r, i] = jac[r, i]
    for k in range(e):
        out_phi[R + k] = est[k]
        out_kinds[R + k] = m_kinds[keep[k]]
        src[R + k] = row_of[k]
        for i in range(n):
            out_jac[R + k, i] = ejac[k, i]
    # new memory, newest first: this tick's close rows, then the kept witnesses (at most
    # per_pair per pair, C in all); the kept entries are copied before being overwritten
    old_links = m_links[keep[:e]].copy()
    old_kinds = m_kinds[keep[:e]].copy()
    old_geom = m_geom[keep[:e]].copy()
    old_q = m_q[keep[:e]].copy()
    c = 0
    for r in range(R):
        if c >= C:
            break
        if not phi[r] < limit:
            continue
        m_links[c, 0] = rlink[r]
        m_links[c, 1] = olink[r]
        m_kinds[c] = kinds[r]
        for a in range(G):
            m_geom[c, a] = cur[r, a]
        for i in range(n):
            m_q[c, i] = q[i]
        c += 1
    for k in range(e):
        if c >= C:
            break
        same_pair = 0
        for j in range(c):
            if m_links[j, 0] == old_links[k, 0] and m_links[j, 1] == old_links[k, 1]:
                same_pair += 1
        if same_pair >= per_pair:
            continue
        m_links[c, 0] = old_links[k, 0]
        m_links[c, 1] = old_links[k, 1]
        m_kinds[c] = old_kinds[k]
        for a in range(G):
            m_geom[c, a] = old_geom[k, a]
        for i in range(n):
            m_q[c, i] = old_q[k, i]
        c += 1
    return out_phi, out_kinds, out_jac, src, c
