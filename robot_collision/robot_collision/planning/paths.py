"""Path tools of the planner: joint-space differences and lengths, the first colliding
configuration of a sequence, and the compiled random shortcutting behind
:meth:`~robot_collision.planning.rrt.BiRRT.shorten`.

Units: rad (revolute/continuous joints), m (prismatic joints). Paths are (k, n) arrays,
columns in ``RobotModel.joint_names`` order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..collision.certified import cert_workspace, edge_certified
from ..collision.checker import CollisionChecker
from ..collision.kernels import _valid_at
from ..collision.scene_packing import unpack_scene
from ..errors import ConfigurationError
from ..geometry.shapes import WorldObject
from ..jitcall import call_or as _call_or
from ..model.kinematics import fk_into
from .ik import FASTMATH, rand01
from .rrt_kernels import _NSTATE, _block_workspace, _diff_into, _edge_free, _edge_free_blocked

__all__ = ["path_length", "joint_difference", "first_collision"]


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _shortcut(F, I, BF, BI, path, k, iterations, cont, vd, check_self, rng, certified,  # type: ignore[no-untyped-def]
              clearance):
    """Random partial shortcutting of the unwrapped ``path[:k]`` in place (capacity
    k + 2 * iterations).

    Two random points pa, pb on different segments i < jj are joined when the edges
    path[i] -> pa, pa -> pb and pb -> path[jj + 1] are all valid and the path gets shorter.
    pa and pb sit on their segment's check grid (``k / steps``), so the two shortened end
    segments are checked at configurations already known to be valid; their check is skipped
    when their own grid (``ceil(length / vd)`` steps) is that same grid. With ``certified``
    every new edge must also be certified over its whole segment with ``clearance`` (m) to spare
    (:func:`~robot_collision.planning.certified.edge_certified`; no edge is skipped then).
    Returns the new number of waypoints.
    """
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    n = path.shape[1]
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    W, RI = _block_workspace(BI)
    use_block = BI.shape[0] > 0
    has_cont = False
    for j in range(n):
        if cont[j]:
            has_cont = True
    istate = np.zeros(_NSTATE, dtype=np.int64)
    flag = np.zeros(1, dtype=np.int64)
    Tc, SPc, readyc, fwc, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                             pr.self_a.shape[0])
    tube0 = np.zeros(n)
    cum = np.empty(path.shape[0])
    seglen = np.empty(path.shape[0])
    pa = np.empty(n)
    pb = np.empty(n)
    d = np.empty(n)
    shift = np.empty(n)
    q = np.empty(n)
    never = np.iinfo(np.int64).max
    for _ in range(iterations):
        if k < 3:
            break
        cum[0] = 0.0
        for i in range(k - 1):
            s = 0.0
            for j in range(n):
                t = path[i + 1, j] - path[i, j]
                s += t * t
            seglen[i] = np.sqrt(s)
            cum[i + 1] = cum[i] + seglen[i]
        total = cum[k - 1]
        s1 = rand01(rng) * total
        s2 = rand01(rng) * total
        if s1 > s2:
            s1, s2 = s2, s1
        i = 0
        while i < k - 2 and cum[i + 1] <= s1:
            i += 1
        jj = i
        while jj < k - 2 and cum[jj + 1] <= s2:
            jj += 1
        if jj <= i:
            continue
        li = seglen[i]
        lj = seglen[jj]
        # snap both points to their segment's check grid (k / steps): the configurations the
        # shortened end segments are checked at are then ones already found valid
        steps_i = max(1, int(np.ceil(li / vd)))
        steps_j = max(1, int(np.ceil(lj / vd)))
        m_i = min(steps_i, int(np.floor((s1 - cum[i]) / li * steps_i + 0.5))) if li > 0.0 else 0
        m_j = min(steps_j, int(np.floor((s2 - cum[jj]) / lj * steps_j + 0.5))) if lj > 0.0 else 0
        ti = m_i / steps_i
        tj = m_j / steps_j
        for j in range(n):
            pa[j] = path[i, j] + (path[i + 1, j] - path[i, j]) * ti
            pb[j] = path[jj, j] + (path[jj + 1, j] - path[jj, j]) * tj
        dab = _diff_into(pa, pb, cont, has_cont, d)
        if dab >= (cum[jj] + tj * lj) - (cum[i] + ti * li) - 1e-9:
            continue
        # pa -> pb follows the shortest difference d; what comes after pb shifts by a multiple
        # of 2 pi on continuous joints so that the path stays unwrapped
        for j in range(n):
            shift[j] = (pa[j] + d[j]) - pb[j] if cont[j] else 0.0
        steps = max(1, int(np.ceil(dab / vd)))
        if use_block:
            ok = _call_or(_edge_free_blocked, 0, pa, d, steps, BF, BI, W, RI, check_self, istate,
                          never, flag) == 1
        else:
            ok = _edge_free(pa, d, steps, q, parent, jtype, origin, axis, qidx, scale, offset, rs,
                            ws, pr, check_self, T, SP, ready, buf, istate, never, flag) == 1
        if ok and certified:
            ok = _call_or(edge_certified, 0, pa, d, tube0, kin, rs, ws, pr, check_self, clearance,
                          Tc, SPc, readyc, fwc, istate, 0, never, flag) == 1
        if ok:
            s = 0.0
            for j in range(n):
                d[j] = pa[j] - path[i, j]
                s += d[j] * d[j]
            s = np.sqrt(s)
            steps = max(1, int(np.ceil(s / vd)))
            if s > 1e-12 and (certified or steps != m_i):  # (steps == m_i: the grid points
                # already checked; certified: every new edge is certified)
                if use_block:
                    ok = _call_or(_edge_free_blocked, 0, path[i], d, steps, BF, BI, W, RI,
                                   check_self, istate, never, flag) == 1
                else:
                    ok = _edge_free(path[i], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, never, flag) == 1
                if ok and certified:
                    ok = _call_or(edge_certified, 0, path[i], d, tube0, kin, rs, ws, pr,
                                  check_self, clearance, Tc, SPc, readyc, fwc, istate, 0, never,
                                  flag) == 1
        if ok:
            s = 0.0
            for j in range(n):
                d[j] = path[jj + 1, j] - pb[j]
                s += d[j] * d[j]
            s = np.sqrt(s)
            steps = max(1, int(np.ceil(s / vd)))
            if s > 1e-12 and (certified or steps != steps_j - m_j):
                if use_block:
                    ok = _call_or(_edge_free_blocked, 0, pb, d, steps, BF, BI, W, RI,
                                   check_self, istate, never, flag) == 1
                else:
                    ok = _edge_free(pb, d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, never, flag) == 1
                if ok and certified:
                    ok = _call_or(edge_certified, 0, pb, d, tube0, kin, rs, ws, pr, check_self,
                                  clearance, Tc, SPc, readyc, fwc, istate, 0, never, flag) == 1
        if not ok:
            continue
        # splice: path[:i+1], pa, pb, path[jj+1:k] (+ shift)
        tail = k - (jj + 1)
        newk = i + 3 + tail
        if newk > k:  # (only when jj == i + 1): move the tail right, from its end
            for r in range(tail - 1, -1, -1):
                for j in range(n):
                    path[i + 3 + r, j] = path[jj + 1 + r, j] + shift[j]
        else:
            for r in range(tail):
                for j in range(n):
                    path[i + 3 + r, j] = path[jj + 1 + r, j] + shift[j]
        for j in range(n):
            path[i + 1, j] = pa[j]
            path[i + 2, j] = pb[j] + shift[j]
        k = newk
    # drop repeated waypoints (zero-length edges), keeping both endpoints
    w = 1
    for r in range(1, k):
        s = 0.0
        for j in range(n):
            t = path[r, j] - path[w - 1, j]
            s += t * t
        if s > 1e-24:
            for j in range(n):
                path[w, j] = path[r, j]
            w += 1
        elif r == k - 1:
            if w == 1:
                w += 1
            for j in range(n):
                path[w - 1, j] = path[r, j]
    return w


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _first_invalid(F, I, Q, check_self):  # type: ignore[no-untyped-def]
    """Index of the first colliding configuration of ``Q`` (N, n), or -1 (serial, early exit)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    for k in range(Q.shape[0]):
        fk_into(Q[k], parent, jtype, origin, axis, qidx, scale, offset, T)
        if not _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
            return k
    return -1


# ------------------------------------------------------------------------------------------
# Python helpers
# ------------------------------------------------------------------------------------------
def first_collision(
    checker: CollisionChecker,
    configurations: ArrayLike,
    world: Sequence[WorldObject] = (),
    ignore_self: bool = False,
) -> int:
    """Index of the first configuration of ``configurations`` (N, n) that collides, or -1.

    A serial compiled scan that stops at the first collision: faster than
    ``CollisionChecker.is_valid_batch`` when a yes/no answer is all that is needed."""
    Q = checker.robot.validate_batch(configurations)
    if len(Q) == 0:
        return -1
    F, I = checker.packed(world)
    return int(_first_invalid(F, I, Q, not ignore_self))


def joint_difference(a: ArrayLike, b: ArrayLike, is_continuous: ArrayLike) -> NDArray[np.float64]:
    """b - a (..., n), continuous joints taking the shortest angular difference in [-pi, pi)."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    c = np.asarray(is_continuous, dtype=bool)
    if c.any():
        d = np.where(c, d - 2.0 * np.pi * np.floor((d + np.pi) / (2.0 * np.pi)), d)
    return d


def path_length(path: ArrayLike, is_continuous: Optional[ArrayLike] = None) -> float:
    """Joint-space length (sum of L2 edge lengths) of a (k, n) path; continuous joints (mask
    ``is_continuous``) use the shortest angular difference."""
    P = np.asarray(path, dtype=float)
    if P.ndim != 2:
        raise ConfigurationError(f"path must be a (k, n) array, got shape {P.shape}")
    if len(P) < 2:
        return 0.0
    c = np.zeros(P.shape[1], dtype=bool) if is_continuous is None else is_continuous
    return float(np.linalg.norm(joint_difference(P[:-1], P[1:], c), axis=1).sum())

