"""Compiled per-tick kernels of :class:`~robot_collision.control.velocity_filter.VelocityFilter`:
the joint-position, velocity and acceleration boxes (with the braking curves), the speed bound
of a link's bounding sphere, and the assembly of the QP's constraint rows (which also decides
when the box-clipped command already solves it). Units: m, rad, s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ..model.kinematics import REVOLUTE, point_jacobian_into

if TYPE_CHECKING:
    pass


_INF = 1e30  # DAQP's "no bound"
_ZERO_ROW = 1e-9  # rows with ‖J‖ below this (m/rad) cannot be influenced and are dropped


# ---------------------------------------------------------------------- compiled helpers
_CMD_OK = 0  # the (box-clipped) command is the QP's solution: no solver call
_NEED_QP = 1
_NONFINITE = 2


@njit(cache=True, boundscheck=False)
def _joint_box(q, lower, upper, vbar, has_damper, dgain, margin, dt, lo, hi):  # type: ignore[no-untyped-def]
    """Joint-velocity box (2) into ``lo``/``hi`` (n,); see the module docstring."""
    for i in range(q.shape[0]):
        sp = upper[i] - q[i]  # room to the upper limit (inf when unbounded)
        sm = q[i] - lower[i]
        if sp < 0.0:
            sp = 0.0
        if sm < 0.0:
            sm = 0.0
        h = min(vbar[i], sp / dt)
        lw = max(-vbar[i], -sm / dt)
        if has_damper[i]:
            if sp < margin:
                h = min(h, dgain[i] * sp)
            if sm < margin:
                lw = max(lw, -dgain[i] * sm)
        hi[i] = h
        lo[i] = lw


@njit(cache=True, boundscheck=False)
def _v_brake(g, a, dt):  # type: ignore[no-untyped-def]
    """Largest speed v (m/s or rad/s) that, applied for this tick and then lowered by ``a dt``
    every tick of ``dt`` s, covers at most ``g`` before stopping: D(v) ≤ g with
    D(v) = dt Σ_j max(v − j a dt, 0) (piecewise linear, inverted exactly: with
    x = g / (a dt²), k = ⌊(√(8x + 1) − 1) / 2⌋, v = (k / 2 + x / (k + 1)) a dt). Following it
    never needs more than ``a dt`` per tick: D(v) = v dt + D(v − a dt). inf when ``a`` is."""
    if not a < np.inf:
        return np.inf
    if not g > 0.0:
        return 0.0
    step = a * dt
    x = g / (step * dt)
    k = np.floor((np.sqrt(8.0 * x + 1.0) - 1.0) / 2.0)
    while (k + 1.0) * (k + 2.0) / 2.0 <= x:  # rounding of the square root
        k += 1.0
    while k > 0.0 and k * (k + 1.0) / 2.0 > x:
        k -= 1.0
    return (0.5 * k + x / (k + 1.0)) * step


@njit(cache=True, boundscheck=False)
def _acceleration_box(q, lower, upper, vbar, has_damper, dgain, margin, prev, acc, dt,  # type: ignore[no-untyped-def]
                      wdt, lo, hi):
    """The box (3) into ``lo``/``hi`` for the joints with an acceleration limit (the others
    keep (2)): stop before each position limit at the acceleration limit (ticks of ``dt``);
    the limit damper never asks to brake harder than that; change by at most ``acc wdt``
    from ``prev``. Where that window misses the box, its nearest end point (the position
    limits win)."""
    for i in range(q.shape[0]):
        a = acc[i]
        if not a < np.inf:
            continue
        sp = max(upper[i] - q[i], 0.0)
        sm = max(q[i] - lower[i], 0.0)
        h = min(vbar[i], sp / dt, _v_brake(sp, a, dt))
        lw = max(-vbar[i], -sm / dt, -_v_brake(sm, a, dt))
        if has_damper[i]:
            if sp < margin:
                h = min(h, max(dgain[i] * sp, prev[i] - a * wdt))
            if sm < margin:
                lw = max(lw, min(-dgain[i] * sm, prev[i] + a * wdt))
        wl = prev[i] - a * wdt
        wh = prev[i] + a * wdt
        if wl > h:
            lw = h
        elif wh < lw:
            h = lw
        else:
            lw = max(lw, wl)
            h = min(h, wh)
        lo[i] = lw
        hi[i] = h


@njit(cache=True, boundscheck=False)
def _link_motion_bounds(T, bcen, brad, parent, jtype, axis, qidx, scale, w, out):  # type: ignore[no-untyped-def]
    """Per link (L,) into ``out``: a bound on how far (m) any point of the link's geometry moves
    when every joint i moves by at most ``w[i]`` (rad, m), or on its speed (m/s) for joint
    speeds ``w`` (rad/s, m/s): Σ_i w_i (‖∂c/∂q_i‖ + r [revolute]) for its enclosing sphere
    (centre c, radius r), to first order in ``w``; 0 for links without geometry."""
    L = T.shape[0]
    n = w.shape[0]
    J3 = np.zeros((3, n))
    c = np.empty(3)
    for lk in range(L):
        out[lk] = 0.0
        if brad[lk] < 0.0:
            continue
        for a in range(3):
            c[a] = (T[lk, a, 0] * bcen[lk, 0] + T[lk, a, 1] * bcen[lk, 1]
                    + T[lk, a, 2] * bcen[lk, 2] + T[lk, a, 3])
        J3[:, :] = 0.0
        point_jacobian_into(T, lk, c, parent, jtype, axis, qidx, scale, 1.0, J3)
        u = 0.0
        for i in range(n):
            u += w[i] * np.sqrt(J3[0, i] ** 2 + J3[1, i] ** 2 + J3[2, i] ** 2)
        i = lk
        while i > 0:
            if jtype[i] == REVOLUTE:
                u += w[qidx[i]] * abs(scale[i]) * brad[lk]
            i = parent[i]
        out[lk] = u


@njit(cache=True, boundscheck=False)
def _speed_bound(T, bcen, brad, parent, jtype, axis, qidx, scale, w):  # type: ignore[no-untyped-def]
    """Bound (m/s) on the speed of any point of any robot link with geometry when every joint
    i moves at most ``w[i]`` (rad/s, m/s): the largest of :func:`_link_motion_bounds`."""
    out = np.empty(T.shape[0])
    _link_motion_bounds(T, bcen, brad, parent, jtype, axis, qidx, scale, w, out)
    best = 0.0
    for lk in range(T.shape[0]):
        best = max(best, out[lk])
    return best


@njit(cache=True, boundscheck=False)
def _build_qp(phi, kinds, jac, exact, hold, pidx, q, cmd, lower, upper, vbar,  # type: ignore[no-untyped-def]
              has_damper, dgain, params, dt, prev, acc, use_acc, wdt):
    """Rows (1) and box (2) of the QP over the protected joints ``pidx`` (p,).

    Rows from ``exact`` on are remembered witnesses (:class:`_WitnessMemory`): they never
    demand a separation (b ≤ 0), the pair's current row does that. Rows with ``hold[r]`` never
    demand one either (pairs whose safety distance cannot be reached: held where they are).
    ``params[5]`` (the recovery speed) scales every separation demand; 0 lets any motion that
    brings no pair closer through. With ``use_acc`` the box has
    the acceleration terms (3) around ``prev`` (a window of ± acc ``wdt``) and the rows the
    stopping-distance bound (4).

    Returns ``(status, A (m, p), blower (p + m,), bupper (p + m,), out (n,), sel (m,))``:
    ``sel`` are the clearance-table rows kept; ``out`` is the command clipped to the box, the
    final answer when ``status == _CMD_OK`` (the clipped command satisfies every row and, when
    there are rows, no protected joint was clipped).
    """
    n = q.shape[0]
    p = pidx.shape[0]
    R = phi.shape[0]
    di_s, ds_s, di_e, ds_e, gain, vrec, margin, eta = (
        params[0], params[1], params[2], params[3], params[4], params[5], params[6], params[7])
    lo = np.empty(n)
    hi = np.empty(n)
    _joint_box(q, lower, upper, vbar, has_damper, dgain, margin, dt, lo, hi)
    if use_acc:
        _acceleration_box(q, lower, upper, vbar, has_damper, dgain, margin, prev, acc, dt, wdt,
                          lo, hi)
    out = np.empty(n)
    for i in range(n):
        out[i] = min(max(cmd[i], lo[i]), hi[i])
    keep = np.empty(R, dtype=np.int64)
    bvals = np.empty(R)
    m = 0
    for r in range(R):
        if kinds[r] == 0:
            di, ds = di_s, ds_s
        else:
            di, ds = di_e, ds_e
        d = phi[r]
        if d != d:
            return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
        if not d < di and not use_acc:
            continue
        if not d > -1e300:
            return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
        big = 0.0
        for k in range(p):
            v = jac[r, pidx[k]]
            if not abs(v) < 1e300:
                return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
            big = max(big, abs(v))
        if big <= _ZERO_ROW:
            continue  # the protected joints cannot change this distance
        if not use_acc:
            b = min(gain * (ds - d) / (di - ds), vrec)
            if r >= exact or hold[r]:
                b = min(b, 0.0)
        else:
            # the pair's braking deceleration (4) and its largest approach speed this tick
            ar = 0.0
            reach = 0.0
            sep = 0.0
            for k in range(p):
                aj = abs(jac[r, pidx[k]])
                if aj > 0.0:
                    ar += aj * acc[pidx[k]]
                reach += aj * max(abs(lo[pidx[k]]), abs(hi[pidx[k]]))
                sep += jac[r, pidx[k]] * prev[pidx[k]]
            ar *= eta
            g = d - ds
            if g > 0.0:
                # the damper, but never asking to brake harder than ar; the stopping distance
                # is kept either way
                allow = _v_brake(g, ar, dt)
                if d < di:
                    allow = min(allow, max(gain * g / (di - ds), -sep - ar * wdt))
                if not allow < reach:
                    continue  # cannot bind this tick
                b = -allow
            else:
                b = min(gain * (ds - d) / (di - ds), vrec)
                if r >= exact or hold[r]:
                    b = min(b, 0.0)
                # no faster separation than reachable this tick, and never closer (if the pair
                # is still approaching, the acceleration limits give way)
                b = max(min(b, sep + ar * wdt), 0.0)
        keep[m] = r
        bvals[m] = b
        m += 1
    A = np.empty((m, p))
    bl = np.empty(p + m)
    bu = np.empty(p + m)
    feasible = True
    for k in range(p):
        i = pidx[k]
        bl[k] = max(lo[i], -_INF)
        bu[k] = min(hi[i], _INF)
        if m > 0 and out[i] != cmd[i]:
            feasible = False
    for j in range(m):
        r = keep[j]
        s = 0.0
        for k in range(p):
            a = jac[r, pidx[k]]
            A[j, k] = a
            s += a * cmd[pidx[k]]
        bl[p + j] = bvals[j]
        bu[p + j] = _INF
        if not s >= bvals[j]:
            feasible = False
    return (_CMD_OK if feasible else _NEED_QP), A, bl, bu, out, keep[:m]

