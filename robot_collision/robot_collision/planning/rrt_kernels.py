"""Compiled kernels of the bidirectional RRT (:mod:`robot_collision.planning.rrt`): joint-space
differences, the SIMD nearest-neighbour scan, edge validation (scalar and 8-configuration
kernels), tree storage, the chunked planning loop, goal-region sampling and path extraction.

They call each other (and the collision kernels) from nopython code, so they live together;
the Python driver :class:`~robot_collision.planning.rrt.BiRRT` only calls them. Units: rad / m.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..clock import now_ns
from ..collision import block_kernels as _bk
from ..collision.certified import cert_workspace, edge_certified_blocked, swept_copies
from ..collision.kernels import _valid_at, packed_valid
from ..collision.scene_packing import unpack_scene
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or
from ..jitcall import nothrow as _nothrow
from ..model.kinematics import fk_into
from ..simd import LANES as _LANES
from ..simd import lane as _lane
from ..simd import load as _load
from ..simd import select as _select
from ..simd import splat as _splat
from ..simd import vfloor as _vfloor
from .ik import (
    FASTMATH,
    _ik_dls,
    _random_config,
    _wrap_continuous,
    rand01,
    wgr_sample_into,
)

# chunk return codes
_YIELD = 0
_SUCCESS = 1
_MAX_ITER = 2
_NEED_GROW = 3
_INTERRUPTED = 4
# istate layout
_I_ITER = 0  # completed iterations
_I_ACTIVE = 1  # tree extended in the next iteration (0 = start tree, 1 = goal tree)
_I_CONN0 = 2  # start-tree node of the connecting edge
_I_CONN1 = 3  # goal-tree node of the connecting edge
_I_CHECKS = 4  # configurations collision-checked
_I_GOAL_TRIES = 5  # goal-region IK attempts
_I_GOAL_ROOTS = 6  # goal-tree roots (goal configurations)
_I_DIRECT = 7  # direct start-goal edge tried (2: it succeeded, certified as one segment)
_NSTATE = 8

# how far (rad or m, per joint) the greedy nodes of the direct connect may lie off the straight
# start-goal segment certified for them: round-off only (~1e-15 per node), taken very wide
_DIRECT_TUBE = 1e-9
# configurations of the direct start-goal motion checked before it is certified (at most)
_DIRECT_PRECHECK = 16
# "no radius yet" (finite: compiled with fastmath, which assumes no infinities)
_NO_RADIUS = 1e300
# most consecutive dynamic-domain rejections before a sample is used anyway
_DD_MAX_REJECTS = 1000
# the goal-region parameters of a run towards a configuration (read only)
_NO_REGION = np.zeros(44)
# lane numbers 0..LANES-1 (read only)
_IOTA = np.arange(_LANES, dtype=np.float64)

# ------------------------------------------------------------------------------------------
# compiled kernels
# ------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FASTMATH, boundscheck=False, inline="always")
def _wrap(d):  # type: ignore[no-untyped-def]
    return d - 2.0 * np.pi * np.floor((d + np.pi) / (2.0 * np.pi))


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _diff_into(a, b, cont, has_cont, out):  # type: ignore[no-untyped-def]
    """out = b - a (continuous joints: shortest angular difference); returns |out|."""
    s = 0.0
    for j in range(a.shape[0]):
        d = b[j] - a[j]
        if has_cont and cont[j]:
            d = _wrap(d)
        out[j] = d
        s += d * d
    return np.sqrt(s)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, error_model="numpy")
def _nearest(treeT, m, q, cont, has_cont):  # type: ignore[no-untyped-def]
    """Index of the node nearest to ``q`` among the first ``m`` of a tree stored joint-major in
    ``treeT`` (n * cap,): joint j of node i at ``j * cap + i``, cap a multiple of
    ``simd.LANES``: that many nodes per step in SIMD lanes; ties go to the lowest index."""
    n = q.shape[0]
    cap = treeT.shape[0] // n
    iota = _load(_IOTA, 0)
    best = _splat(_NO_RADIUS)
    bidx = _splat(0.0)
    for i0 in range(0, m, _LANES):
        acc = _splat(0.0)
        for j in range(n):
            d = q[j] - _load(treeT, j * cap + i0)
            if has_cont and cont[j]:
                d = d - 2.0 * np.pi * _vfloor((d + np.pi) * (0.5 / np.pi))
            acc = acc + d * d
        idx = iota + i0
        better = (acc < best) & (idx < m)
        best = _select(better, acc, best)
        bidx = _select(better, idx, bidx)
    bd = _NO_RADIUS
    bi = 0
    for k in range(_LANES):
        dk = _lane(best, k)
        ik = int(_lane(bidx, k))
        if dk < bd or (dk == bd and ik < bi):
            bd = dk
            bi = ik
    return bi


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, error_model="numpy")
def _edge_free_blocked(q0, d, steps, BF, BI, W, RI, check_self, istate, deadline, flag):  # type: ignore[no-untyped-def]
    """:func:`_edge_free` with the 8-configuration kernel, pass by pass in VAMP's strided order
    (:func:`~robot_collision.collision.block_kernels.edge_pass`).

    Called once per edge from the planner's loop (through ``call_or``: a failure counts as a
    collision). It has a single exit and calls its helpers through ``inline_call_or`` (see
    :mod:`robot_collision.jitcall`), so that numba drops the reference counting of its arrays;
    the scene reaches it as the two block-scene arrays, not as the scalar kernels' tuples of ~30
    arrays, each of which a call increfs and decrefs (~0.7 us per edge, measured)."""
    m = (steps + _bk.LANES - 1) // _bk.LANES
    r = 1
    for j in range(m):
        c = _inline_call_or(_bk.edge_pass, -1, q0, d, steps, 1, m, j, BF, BI, W, RI, check_self)
        istate[_I_CHECKS] += abs(c)
        if c < 0:
            r = 0
            break
        if flag[0] != 0 or ((j & 7) == 7 and _inline_call_or(now_ns, 0) > deadline):
            r = -1
            break
    held = (q0.shape[0] + d.shape[0] + BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0]
            + istate.shape[0] + flag.shape[0])
    return r if held >= 0 else 0


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _fk_ok(q, parent, jtype, origin, axis, qidx, scale, offset, T):  # type: ignore[no-untyped-def]
    """:func:`fk_into` returning True (a value for ``call_or``)."""
    _nothrow(fk_into, q, parent, jtype, origin, axis, qidx, scale, offset, T)
    return True


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _edge_free(q0, d, steps, q, parent, jtype, origin, axis, qidx, scale, offset, rs, ws, pr,  # type: ignore[no-untyped-def]
               check_self, T, SP, ready, buf, istate, deadline, flag):
    """Check ``q0 + d * k / steps`` for k = steps, then the other k >= 1 coarse-to-fine
    Returns 1 (free), 0 (collision) or -1 (``deadline`` in ns passed or ``flag[0]`` set).
    (Scenes with a block scene use :func:`_edge_free_blocked` instead.)

    Called once per edge with the scene's ~30 arrays: a single exit, helpers through
    ``call_or`` (a failure counts as a collision) and a final use of every array in one block
    let numba drop their reference counting (~0.7 us per call otherwise; see
    :mod:`robot_collision.jitcall`)."""
    n = q0.shape[0]
    k = steps
    stride = 1
    while stride < steps:
        stride *= 2
    half = stride  # the first pass visits only k = steps
    r = 1
    while True:
        t = k / steps
        for j in range(n):
            q[j] = q0[j] + d[j] * t
        istate[_I_CHECKS] += 1
        if not (_inline_call_or(_fk_ok, False, q, parent, jtype, origin, axis, qidx, scale,
                                offset, T)
                and _call_or(_valid_at, False, T, rs, ws, pr, SP, ready, check_self, buf)):
            r = 0
            break
        if (istate[_I_CHECKS] & 3) == 0 and (flag[0] != 0
                                             or _inline_call_or(now_ns, 0) > deadline):
            r = -1
            break
        k += 2 * half
        last = False
        while k >= steps:
            if half <= 1:
                last = True
                break
            half //= 2
            k = half
        if last:
            break
    held = (
        q0.shape[0] + d.shape[0] + q.shape[0] + parent.shape[0] + jtype.shape[0]
        + origin.shape[0] + axis.shape[0] + qidx.shape[0] + scale.shape[0] + offset.shape[0]
        + T.shape[0] + SP.shape[0] + ready.shape[0] + buf.shape[0] + istate.shape[0]
        + flag.shape[0]
        + rs.link.shape[0] + rs.kind.shape[0] + rs.params.shape[0] + rs.local.shape[0]
        + rs.vstart.shape[0] + rs.vcount.shape[0] + rs.verts.shape[0] + rs.link_start.shape[0]
        + rs.bound_center.shape[0] + rs.bound_radius.shape[0]
        + ws.kind.shape[0] + ws.params.shape[0] + ws.pose.shape[0] + ws.vstart.shape[0]
        + ws.vcount.shape[0] + ws.verts.shape[0] + ws.box.shape[0] + ws.cloud.shape[0]
        + ws.cloud_f.shape[0] + ws.cloud_i.shape[0]
        + pr.self_a.shape[0] + pr.self_b.shape[0] + pr.self_pad.shape[0]
        + pr.world_pad.shape[0] + pr.world_skip.shape[0]
    )
    return r if held >= 0 else 0


@njit(cache=True)
def _block_workspace(BI):  # type: ignore[no-untyped-def]
    """Scratch for the blocked kernel (empty when the scene has none, ``BI`` empty)."""
    if BI.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    size = _bk._offsets(BI[_bk.H_N], BI[_bk.H_NF], BI[_bk.H_S], BI[_bk.H_L])[4]
    return np.zeros(size), np.zeros(BI[_bk.H_L], dtype=np.int64)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _add_node(nodes, nodesT, parents, radii, size, t, q, par, cont):  # type: ignore[no-untyped-def]
    """Append ``q`` (continuous joints wrapped) to tree ``t`` under ``par``; returns its index.
    ``nodesT`` (2, n * cap) is the joint-major copy that :func:`_nearest` scans."""
    i = size[t]
    cap = nodes.shape[1]
    for j in range(q.shape[0]):
        v = q[j]
        if cont[j]:
            v = _wrap(v)
        nodes[t, i, j] = v
        nodesT[t, j * cap + i] = v
    parents[t, i] = par
    radii[t, i] = _NO_RADIUS
    size[t] = i + 1
    return i


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _rrt_chunk(F, I, BF, BI, nodes, nodesT, parents, radii, size, istate, rng, slo, shi, cont,  # type: ignore[no-untyped-def]
               fpar, ipar, wgr, soft_deadline, hard_deadline, flag):
    """Run RRT-Connect iterations until success, the iteration limit, a full tree, the soft
    deadline (checked between iterations) or the hard deadline (iteration rolled back)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    # extensions are a hair shorter than max_connection_distance: a length that is an exact
    # multiple of vd would make ceil(length / vd) (the edge's check grid) depend on rounding
    max_dist = fpar[0] * (1.0 - 1e-9)
    vd = fpar[1]
    bias = fpar[2]
    tol_p = fpar[3]
    tol_r = fpar[4]
    dd_radius = fpar[5]
    dd_alpha = fpar[6]
    dd_min = fpar[7]
    max_iter = ipar[0]
    heuristic = ipar[1] != 0
    check_self = ipar[2] != 0
    wgr_mode = ipar[3] != 0
    ee = ipar[4]
    ik_iter = ipar[5]
    max_roots = ipar[6]
    max_add = ipar[7]
    balance = ipar[8] != 0
    dynamic_domain = ipar[9] != 0
    certified = ipar[10] != 0
    # lazy certified runs: the direct start-goal motion is certified first, as one segment
    direct_first = ipar[11] != 0
    clearance = fpar[8]
    n = nodes.shape[2]
    cap = nodes.shape[1]
    has_cont = False
    for j in range(n):
        if cont[j]:
            has_cont = True
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    W, RI = _block_workspace(BI)
    use_block = BI.shape[0] > 0
    # certified edges (ipar[10]): conservative advancement after the discrete check passed
    Tc, SPc, readyc, fwc, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                             pr.self_a.shape[0])
    # (their inflated samples on the blocked kernels: scratch only when an edge is certified)
    BF2, BI2, Wb2, RIb2 = swept_copies(BF, BI, certified or direct_first)
    tube0 = np.zeros(n)
    tube_direct = np.full(n, _DIRECT_TUBE)
    q = np.empty(n)
    qr = np.empty(n)
    qnew = np.empty(n)
    d = np.empty(n)
    # IK scratch (goal regions)
    ref = wgr[0:16].reshape((4, 4))
    bounds = wgr[16:28].reshape((6, 2))
    off = wgr[28:44].reshape((4, 4))
    target = np.empty((4, 4))
    Tw = np.empty((4, 4))
    tmp4 = np.empty((4, 4))
    J = np.empty((6, n))
    A = np.empty((6, 6))
    e = np.empty(6)
    y = np.empty(6)
    Rtmp = np.empty((3, 3))
    qik = np.empty(n)
    saved = istate.copy()
    first = True
    while True:
        if istate[_I_ITER] >= max_iter:
            return _MAX_ITER
        if not first and now_ns() > soft_deadline:
            return _YIELD
        first = False
        if size[0] + max_add > cap or size[1] + max_add > cap:
            return _NEED_GROW
        for k in range(_NSTATE):
            saved[k] = istate[k]
        s0 = size[0]
        s1 = size[1]
        rng0 = rng[0]
        near_saved = -1
        a_saved = 0
        r_saved = 0.0
        status = 0  # 0 continue, 1 success, -1 interrupted
        if istate[_I_DIRECT] == 0:
            # the start tree connects towards the goal (first goal root) before any sampling:
            # one straight edge with the connect heuristic, else greedy steps of at most
            # max_connection_distance kept as nodes (like any connect), so that every edge of a
            # path respects max_connection_distance unless the heuristic is on
            cur = 0
            # Lazy certified runs: when the straight motion from the start to the goal is
            # certified free (whole segment, min_clearance; `tube` covers the round-off of the
            # greedy nodes below, which lie on it), so is every configuration the greedy
            # connect would check: it then runs without discrete checks, and the driver skips
            # certifying the path's edges (istate[_I_DIRECT] = 2).
            # A few configurations of the segment are checked first (most blocked motions
            # collide at one of them), so that certifying a blocked motion, which costs more
            # than finding the collision, is rarely attempted.
            free_line = 0
            if direct_first:
                dist = _diff_into(nodes[0, 0], nodes[1, 0], cont, has_cont, d)
                steps = min(_DIRECT_PRECHECK, max(1, int(np.ceil(dist / vd))))
                if use_block:
                    free_line = _call_or(_edge_free_blocked, 0, nodes[0, 0], d, steps, BF, BI,
                                         W, RI, check_self, istate, hard_deadline, flag)
                else:
                    free_line = _edge_free(nodes[0, 0], d, steps, q, parent, jtype, origin,
                                           axis, qidx, scale, offset, rs, ws, pr, check_self, T,
                                           SP, ready, buf, istate, hard_deadline, flag)
                if free_line == 1:
                    free_line = _call_or(edge_certified_blocked, 0, nodes[0, 0], d, tube_direct,
                                         kin, rs, ws, pr, check_self, clearance, Tc, SPc, readyc,
                                         fwc, istate, _I_CHECKS, hard_deadline, flag, BF, BI,
                                         BF2, BI2, Wb2, RIb2)
                if free_line == -1:
                    for k in range(_NSTATE):
                        istate[k] = saved[k]
                    return _INTERRUPTED
            while True:
                dist = _diff_into(nodes[0, cur], nodes[1, 0], cont, has_cont, d)
                reach = heuristic or dist <= max_dist
                if not reach:
                    f = max_dist / dist
                    dist = 0.0
                    for j in range(n):
                        d[j] *= f
                        dist += d[j] * d[j]
                    dist = np.sqrt(dist)
                steps = max(1, int(np.ceil(dist / vd)))
                if free_line == 1:
                    r = 1
                elif use_block:
                    r = _call_or(_edge_free_blocked, 0, nodes[0, cur], d, steps, BF, BI, W, RI,
                                 check_self, istate, hard_deadline, flag)
                else:
                    r = _edge_free(nodes[0, cur], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, hard_deadline, flag)
                if certified and r == 1:
                    r = _call_or(edge_certified_blocked, 0, nodes[0, cur], d, tube0, kin, rs, ws,
                                 pr, check_self, clearance, Tc, SPc, readyc, fwc, istate,
                                 _I_CHECKS, hard_deadline, flag, BF, BI, BF2, BI2, Wb2, RIb2)
                if r == -1:
                    for k in range(_NSTATE):
                        istate[k] = saved[k]
                    size[0] = s0
                    return _INTERRUPTED
                if r == 0:
                    break
                if reach:
                    istate[_I_CONN0] = cur
                    istate[_I_CONN1] = 0
                    if free_line == 1:
                        istate[_I_DIRECT] = 2
                    return _SUCCESS
                for j in range(n):
                    qnew[j] = nodes[0, cur, j] + d[j]
                cur = _add_node(nodes, nodesT, parents, radii, size, 0, qnew, cur, cont)
            istate[_I_DIRECT] = 1
            continue
        a = istate[_I_ACTIVE]
        if balance and size[0] != size[1]:
            a = 0 if size[0] < size[1] else 1
        # ---- sample (a new goal configuration of the region, or uniform)
        sampled = False
        if wgr_mode and istate[_I_GOAL_ROOTS] < max_roots and rand01(rng) < bias:
            a = 0  # the start tree extends towards the new goal
            istate[_I_GOAL_TRIES] += 1
            wgr_sample_into(ref, bounds, off, rng, Tw, tmp4, target)
            _random_config(slo, shi, rng, qik)
            if _ik_dls(target, ee, qik, slo, shi, cont, parent, jtype, origin, axis, qidx, scale,
                       offset, ik_iter, tol_p, tol_r, T, J, A, e, qnew, y, Rtmp):
                _wrap_continuous(qik, cont)
                fk_into(qik, parent, jtype, origin, axis, qidx, scale, offset, T)
                istate[_I_CHECKS] += 1
                if _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
                    _add_node(nodes, nodesT, parents, radii, size, 1, qik, -1, cont)
                    istate[_I_GOAL_ROOTS] += 1
                    for j in range(n):
                        qr[j] = qik[j]
                    sampled = True
        b = 1 - a
        if sampled:
            near = _nearest(nodesT[a], size[a], qr, cont, has_cont)
            dist = _diff_into(nodes[a, near], qr, cont, has_cont, d)
        else:
            # uniform sample; with dynamic domain, resample (a bounded number of times) while
            # the sample lies outside its nearest node's radius
            for tries in range(_DD_MAX_REJECTS):
                _random_config(slo, shi, rng, qr)
                near = _nearest(nodesT[a], size[a], qr, cont, has_cont)
                dist = _diff_into(nodes[a, near], qr, cont, has_cont, d)
                if not dynamic_domain or dist <= radii[a, near]:
                    break
                if (tries & 15) == 15 and (flag[0] != 0 or now_ns() > hard_deadline):
                    status = -1
                    break
        # ---- extend tree a towards qr
        added = -1
        rnear = radii[a, near]
        near_saved = near
        a_saved = a
        r_saved = rnear
        if dist > 1e-12 and status == 0:
            if dist > max_dist:
                f = max_dist / dist
                dist = 0.0
                for j in range(n):
                    d[j] *= f
                    dist += d[j] * d[j]
                dist = np.sqrt(dist)
            for j in range(n):
                qnew[j] = nodes[a, near, j] + d[j]
            steps = max(1, int(np.ceil(dist / vd)))
            if use_block:
                r = _call_or(_edge_free_blocked, 0, nodes[a, near], d, steps, BF, BI, W, RI,
                               check_self, istate, hard_deadline, flag)
            else:
                r = _edge_free(nodes[a, near], d, steps, q, parent, jtype, origin, axis, qidx,
                               scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                               istate, hard_deadline, flag)
            if certified and r == 1:
                r = _call_or(edge_certified_blocked, 0, nodes[a, near], d, tube0, kin, rs, ws,
                             pr, check_self, clearance, Tc, SPc, readyc, fwc, istate,
                             _I_CHECKS, hard_deadline, flag, BF, BI, BF2, BI2, Wb2, RIb2)
            if r == 1:
                added = _add_node(nodes, nodesT, parents, radii, size, a, qnew, near, cont)
                if dynamic_domain and rnear < _NO_RADIUS:
                    radii[a, near] = rnear * (1.0 + dd_alpha)
            elif r == -1:
                status = -1
            elif dynamic_domain:
                radii[a, near] = dd_radius if rnear >= _NO_RADIUS else max(rnear * (1.0 - dd_alpha),
                                                                       dd_min)
        # ---- connect tree b towards the new node
        if added >= 0:
            cur = _nearest(nodesT[b], size[b], nodes[a, added], cont, has_cont)
            while True:
                dist = _diff_into(nodes[b, cur], nodes[a, added], cont, has_cont, d)
                reach = heuristic or dist <= max_dist
                if not reach:
                    f = max_dist / dist
                    dist = 0.0
                    for j in range(n):
                        d[j] *= f
                        dist += d[j] * d[j]
                    dist = np.sqrt(dist)
                steps = max(1, int(np.ceil(dist / vd)))
                if use_block:
                    r = _call_or(_edge_free_blocked, 0, nodes[b, cur], d, steps, BF, BI, W, RI,
                                   check_self, istate, hard_deadline, flag)
                else:
                    r = _edge_free(nodes[b, cur], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, hard_deadline, flag)
                if certified and r == 1:
                    r = _call_or(edge_certified_blocked, 0, nodes[b, cur], d, tube0, kin, rs, ws,
                                 pr, check_self, clearance, Tc, SPc, readyc, fwc, istate,
                                 _I_CHECKS, hard_deadline, flag, BF, BI, BF2, BI2, Wb2, RIb2)
                if r == -1:
                    status = -1
                    break
                if r == 0:
                    break
                if reach:
                    status = 1
                    if a == 0:
                        istate[_I_CONN0] = added
                        istate[_I_CONN1] = cur
                    else:
                        istate[_I_CONN0] = cur
                        istate[_I_CONN1] = added
                    break
                for j in range(n):
                    qnew[j] = nodes[b, cur, j] + d[j]
                cur = _add_node(nodes, nodesT, parents, radii, size, b, qnew, cur, cont)
        if status == -1:
            # roll back the partial iteration; the next chunk redoes it identically
            for k in range(_NSTATE):
                istate[k] = saved[k]
            size[0] = s0
            size[1] = s1
            rng[0] = rng0
            if near_saved >= 0:
                radii[a_saved, near_saved] = r_saved
            return _INTERRUPTED
        istate[_I_ITER] += 1
        istate[_I_ACTIVE] = b
        if status == 1:
            return _SUCCESS


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _goal_samples(F, I, wgr, ee, slo, shi, cont, check_self, attempts, ik_iter, tol_p, tol_r,  # type: ignore[no-untyped-def]
                  rng, out):
    """Look for a collision-free IK solution of a random region pose, ``attempts`` times.
    Returns (found, converged-but-colliding count, attempts used)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    n = out.shape[0]
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    ref = wgr[0:16].reshape((4, 4))
    bounds = wgr[16:28].reshape((6, 2))
    off = wgr[28:44].reshape((4, 4))
    target = np.empty((4, 4))
    Tw = np.empty((4, 4))
    tmp4 = np.empty((4, 4))
    J = np.empty((6, n))
    A = np.empty((6, 6))
    e = np.empty(6)
    y = np.empty(6)
    Rtmp = np.empty((3, 3))
    qn = np.empty(n)
    colliding = 0
    for att in range(attempts):
        wgr_sample_into(ref, bounds, off, rng, Tw, tmp4, target)
        _random_config(slo, shi, rng, out)
        if not _ik_dls(target, ee, out, slo, shi, cont, parent, jtype, origin, axis, qidx, scale,
                       offset, ik_iter, tol_p, tol_r, T, J, A, e, qn, y, Rtmp):
            continue
        _wrap_continuous(out, cont)
        fk_into(out, parent, jtype, origin, axis, qidx, scale, offset, T)
        if _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
            return True, colliding, att + 1
        colliding += 1
    return False, colliding, attempts



@njit(cache=True, boundscheck=False)
def _config_status(q, lower, upper):  # type: ignore[no-untyped-def]
    """0 when ``q`` is finite and within [lower - 1e-9, upper + 1e-9] (then clipped into the
    limits in place), else 1 (the caller raises the detailed error)."""
    for j in range(q.shape[0]):
        v = q[j]
        if not np.isfinite(v) or v < lower[j] - 1e-9 or v > upper[j] + 1e-9:
            return 1
    for j in range(q.shape[0]):
        q[j] = min(max(q[j], lower[j]), upper[j])
    return 0


@njit(cache=True, boundscheck=False, nogil=True)
def _ends_status(q_start, q_goal, lower, upper, F, I, BF, BI, check_self):  # type: ignore[no-untyped-def]
    """0 when both ends are finite, within the joint limits (then clipped into them in place)
    and collision-free; else which check failed first, in the order the detailed Python checks
    run (1 start limits, 2 start collision, 3 goal limits, 4 goal collision)."""
    if _config_status(q_start, lower, upper) != 0:
        return 1
    if not _end_free(q_start, F, I, BF, BI, check_self):
        return 2
    if _config_status(q_goal, lower, upper) != 0:
        return 3
    if not _end_free(q_goal, F, I, BF, BI, check_self):
        return 4
    return 0


@njit(cache=True, boundscheck=False)
def _end_free(q, F, I, BF, BI, check_self):  # type: ignore[no-untyped-def]
    if BI.shape[0] > 0:
        return _bk.single_valid_blocked(q, BF, BI, check_self) == 1
    return packed_valid(q, F, I, check_self) == 1


@njit(cache=True, boundscheck=False)
def _new_trees(cap, q_start, q_goal, cont, goal_tries):  # type: ignore[no-untyped-def]
    """Tree storage (nodes, parents, radii, size, istate) with the start and goal roots
    (continuous joints wrapped)."""
    n = q_start.shape[0]
    nodes = np.empty((2, cap, n))
    nodesT = np.empty((2, n * cap))
    parents = np.full((2, cap), -1, dtype=np.int64)
    radii = np.full((2, cap), _NO_RADIUS)
    size = np.zeros(2, dtype=np.int64)
    _add_node(nodes, nodesT, parents, radii, size, 0, q_start, -1, cont)
    _add_node(nodes, nodesT, parents, radii, size, 1, q_goal, -1, cont)
    istate = np.zeros(_NSTATE, dtype=np.int64)
    istate[_I_GOAL_ROOTS] = 1
    istate[_I_GOAL_TRIES] = goal_tries
    return nodes, nodesT, parents, radii, size, istate


@njit(cache=True, boundscheck=False)
def _extract_path(nodes, parents, c0, c1, q_start, cont, has_cont):  # type: ignore[no-untyped-def]
    """Waypoints (k, n) root of the start tree -> node c0, then node c1 of the goal tree ->
    its root. Without continuous joints they are the tree nodes bit for bit; with them the path
    is unwrapped from ``q_start``."""
    n = nodes.shape[2]
    k0 = 0
    i = c0
    while i >= 0:
        k0 += 1
        i = parents[0, i]
    k1 = 0
    i = c1
    while i >= 0:
        k1 += 1
        i = parents[1, i]
    out = np.empty((k0 + k1, n))
    i = c0
    for r in range(k0 - 1, -1, -1):
        out[r] = nodes[0, i]
        i = parents[0, i]
    i = c1
    for r in range(k0, k0 + k1):
        out[r] = nodes[1, i]
        i = parents[1, i]
    if has_cont:
        d = np.empty(n)
        prev = out[0].copy()
        out[0] = q_start
        for r in range(1, k0 + k1):
            _diff_into(prev, out[r], cont, has_cont, d)
            for j in range(n):
                prev[j] = out[r, j]
                out[r, j] = out[r - 1, j] + d[j]
    return out


