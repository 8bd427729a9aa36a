"""Certified straight joint-space motions: conservative advancement (issue 23).

A discrete edge check knows the motion ``q(t) = q0 + t * d``, t in [0, 1], to be free only *at*
its samples. :func:`edge_certified` proves it free over the whole segment, every t, and with
``clearance`` (m) to spare:

- **Motion bound.** For each link ``l`` and the edge direction ``d``, ``M[l]`` (m per unit of
  t) bounds how far any point of the link's bounding sphere moves: a revolute joint ``k`` above
  ``l`` turning by ``|scale_k * d_k| * dt`` moves a point at distance ``rho`` from its axis by at
  most the chord ``rho * |dangle|``, and ``rho`` is bounded for every configuration by the
  distance from the joint's frame origin: the lengths of the joint origins below ``k`` down to
  ``l``, plus ``|bounding-sphere centre| + bounding radius`` of ``l``, plus the largest
  extension reached on the edge by each prismatic joint in between (a prismatic joint moves
  every point by ``|scale_k * d_k| * dt``, 1 m per metre). FK at the middle of the edge
  tightens each joint's share: the point's distance from k's axis there (plus its bounding
  radius) plus half the motion of the joints between k and l, which are all that change that
  distance; the smaller of the two bounds is used (:func:`_motion_bounds`). For a self pair, the
  joints above both links (the lowest common ancestor and up) move them rigidly together and
  are left out.
- **Motion bound from the evaluated configuration.** At an evaluated configuration FK gives
  more. A link against the world: the velocity field of its bounding sphere, ``|v_c| +
  bound radius * |omega|`` (``v_c = sum_k theta'_k w_k x (c - p_k)``, ``omega = sum_k theta'_k
  w_k`` over the revolute joints above, prismatic ones add ``theta'_k w_k`` to ``v_c``): the
  vector sums, so joints whose motions cancel at the link count as little as they move it
  (measured on 40 sphere-Panda MBM paths: 217 -> 123 configurations per path, the world pairs
  being what sets the configurations). It changes along the edge at most at ``BV[l] = sum_k
  |theta'_k| (2 Om_k R_k + sum_{j from k down to l} M_jl) + bound radius * sum_k |theta'_k|
  Om_k`` (``Om_k``: the joint speeds above k, which turn k's axis and carry ``c - p_k``;
  ``R_k``: the chain bound of ``|c - p_k|`` above; ``M_jl``: joint j's motion bound of
  l), so a point moves at most ``A dt + BV dt^2 / 2`` either way of the evaluated t. A self
  pair: the distance of each link's bounding sphere from each joint axis below their common
  ancestor (per joint, growing at most at the static rate of the joints below it); the vector
  sum did not cut its evaluations (they are set by the scheduling below, not the step).
  Whichever bound gives the longer step is used; the second is computed only when the static
  step does not already reach t = 1 and back, and for a self pair only for the joints below the
  common ancestor. Where the time of certifying a path goes now (48 sphere-Panda MBM paths, one
  process): 0.19 ms median per path, 0.13 ms without the self pairs. The self pairs' share comes
  with their evaluations after the first (exact distances, configuration bounds, the
  configurations they add): were every self pair done at its first evaluation, a tenth of that
  share would remain. The sphere arithmetic is not it: skipping the square root of sphere pairs
  beyond the best bound so far changed nothing measurable.
- **Distance lower bound.** At an evaluated configuration every pair (link, world object) and
  every checked self pair gets a lower bound of its padded signed distance, the cheapest that is
  good enough: the link's bounding sphere against the object's enclosing box (or the other
  link's bounding sphere), then per shape (a sphere shape against the box), and the exact
  distance (closed forms, GJK, the cloud search) only for shapes that are near; less
  ``CERT_TOL`` for round-off.
- **Advancement, both ways.** A pair whose bound exceeds ``clearance`` by ``s`` at ``t``
  stays clear (by at least ``clearance``) on ``[t - s / M_pair, t + s / M_pair]``: the motion
  bounds hold in either direction of the segment. Each pair keeps ``h``, the end of the interval
  ``[0, h]`` proven clear, and is next evaluated beyond it, at ``h`` plus 0.8 times its last
  step, so that the evaluation reaches back to ``h`` and ahead as far (about half the
  evaluations of advancing forward only); an evaluation that does not reach back keeps the
  interval it proved, the next tries the middle of the gap, and the one after that evaluates
  at ``h`` itself (which always progresses). FK is computed per evaluated configuration,
  distances only for the pairs due there: those whose next evaluation is at most 0.7 of their
  planned advance ahead (measured on 24 of the sphere Panda's MBM paths: 5400 configurations
  instead of 8500 when waiting for each pair's own point, and a quarter less time). The edge is
  certified when every pair's ``[0, h]`` covers t = 1; it is refused as soon as a pair's bound
  is not above ``clearance`` + ``CERT_MIN_SLACK``, or after ``CERT_MAX_EVALS`` configurations
  (a motion grazing an obstacle within nanometres).
- **Inflated samples first.** Before advancement, the edge is cut into intervals of t and the
  middle of each is checked with the *boolean* validity kernels, every link's padding raised by
  ``M[l]`` times the interval's half-width (the most any of its points moves within it), every
  self pair's by its own bound: valid so inflated, the whole interval is clear. An interval that
  is not is halved, ``SWEPT_LEVELS`` times at most; an edge still not covered then goes to
  advancement, which decides it. The boolean kernels cull and stop early where advancement
  computes distance bounds. On the blocked kernels (sphere robots, 8 intervals per pass:
  :func:`edge_certified_blocked`, :func:`first_uncertified_blocked`), measured on 239
  discrete-planner paths of the sphere Panda (MotionBenchMaker, one process): 0.23 -> 0.09-0.11
  ms per path; on the scalar kernels, 0.19 -> 0.09-0.12 ms per path of the default arm and
  0.93 -> 0.68-0.93 ms of the mesh Panda, while for the sphere Panda the scalar stage was
  slower than advancement alone (0.33 ms), so :func:`edge_certified` skips it for sphere robots.
  Both stages refused and certified the same paths. A path's edges go through the blocked
  stage together, their intervals packed 8 per pass whatever their edge, each pass padded by
  the largest inflation its intervals need (17 % fewer passes than edge by edge).

``tube`` (n,) widens the motion to every configuration within ``|q - q(t)|_j <= tube_j`` of the
segment (each joint's deviation adds its axis-distance bound times ``tube_j``): the trajectory
checks use it for the cubic pieces between two samples, which stay within a known distance of
their chord.

Units: rad / m. Everything here is compiled. Used by the planner
(:mod:`robot_collision.planning.rrt`), its shortcutter and trajectory checks, and
``CollisionChecker.is_motion_valid``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..clock import now_ns
from ..geometry.cloud_index import cloud_distance
from ..geometry.point_cloud import POINT_CLOUD
from ..geometry.shapes import SPHERE
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or
from ..model.kinematics import FIXED, PRISMATIC, REVOLUTE, fk_into
from ..simd import LANES
from .block_kernels import H_L, H_N, H_NF, H_P, H_PPAD, H_S, H_W, H_WPAD, _offsets, block_valid_from
from .kernels import (
    _box_signed,
    _full_sphere_pose,
    _pair_distance,
    _sphere_exact,
    _valid_at,
    link_shape_poses,
)
from .scene import PairArrays
from .scene_packing import unpack_scene_borrowed

__all__ = [
    "CERT_TOL",
    "CERT_MIN_SLACK",
    "CERT_MAX_EVALS",
    "edge_certified",
    "motion_certified_packed",
    "cert_workspace",
    "edges_certified_packed",
    "first_uncertified",
    "first_uncertified_counted",
    "first_uncertified_blocked",
    "edge_certified_blocked",
    "swept_copies",
    "swept_certified_packed",
    "swept_path_certified_packed",
    "motion_bounds_packed",
]

CERT_TOL = 1e-8
"""Subtracted (m) from every computed distance: covers the round-off of the closed forms and
FK (~1e-15 m) and GJK's tolerance with cylinders (~3e-10 m)."""
CERT_MIN_SLACK = 1e-9
"""A pair must clear ``clearance`` by more than this (m) at an evaluated configuration."""
CERT_MAX_EVALS = 100_000
"""Most configurations evaluated for one edge before it is refused (never reached by a motion
that keeps more than a micrometre from every obstacle)."""

_FAR = 2.0  # horizon beyond the end of the edge (t = 1)
_AHEAD = 0.8  # next evaluation of a pair this far beyond its horizon, in its last step
_EARLY = 0.3  # a pair is evaluated at a configuration this far (in its pn) beyond its horizon
SWEPT_LEVELS = 8
"""Levels of the inflated-sample stage (halvings of its first intervals) before an edge goes
to conservative advancement."""
SWEPT_FIRST_INFLATION = 0.04
"""Largest inflation (m) of a link at the inflated-sample stage's first samples."""
_SWEPT_MAX_BF = 65536  # the blocked stage copies the block scene: not one larger than this
_SWEPT_MAX_FIRST = 4096  # more first intervals than this: straight to conservative advancement
# stages of _edge_certified: the inflated samples then conservative advancement, conservative
# advancement alone, the inflated samples alone
_SWEPT_THEN_CA, _CA_ONLY, _SWEPT_ONLY = 1, 2, 3


@njit(cache=True, fastmath=False, boundscheck=False)
def _world_lb(l, o, need, T, cen, SP, ready, rs, ws, pad, wa, wb, n):  # type: ignore[no-untyped-def]
    """Lower bound (m) of the padded signed distance of link ``l`` to world object ``o``; stops
    refining once the bound reaches ``need``. Single exit, helpers through ``call_or`` (a
    failed helper gives -inf: "not certified"), see :mod:`robot_collision.jitcall`."""
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts = rs.vstart, rs.vcount, rs.verts
    wbox, wkinds, wparams, wpose = ws.box, ws.kind, ws.params, ws.pose
    wvstart, wvcount, wverts = ws.vstart, ws.vcount, ws.verts
    wcloud, wcf, wci = ws.cloud, ws.cloud_f, ws.cloud_i
    lb = _inline_call_or(_box_signed, -np.inf, cen[l, 0], cen[l, 1], cen[l, 2], wbox, o)
    lb -= rs.bound_radius[l] + pad + CERT_TOL
    if lb < need:
        ok = True
        if not ready[l]:
            ok = _inline_call_or(link_shape_poses, False, l, T, link_start, kind, local, SP)
            ready[l] = True
        best = np.inf if ok else -np.inf
        wkind = wkinds[o]
        for s in range(link_start[l], link_start[l + 1]):
            if not ok:
                break
            if kind[s] == SPHERE:
                slb = _inline_call_or(_box_signed, -np.inf, SP[s, 0, 3], SP[s, 1, 3],
                                      SP[s, 2, 3], wbox, o)
                slb -= params[s, 0] + pad + CERT_TOL
                if slb >= best or slb >= need:
                    best = min(best, slb)
                    continue
            d = np.nan
            if wkind == POINT_CLOUD:
                _call_or(_full_pose_ok, False, kind, SP, s)
                bound = min(best, need) + pad + CERT_TOL
                d = _call_or(cloud_distance, -np.inf, kind[s], params[s], SP[s],
                             verts[vstart[s]: vstart[s] + vcount[s]], wcf, wci, wcloud[o, 0],
                             wcloud[o, 1], wpose[o], bound, wa, wb, n)
                if d == np.inf:
                    d = bound  # nothing nearer than the bound searched
            elif kind[s] == SPHERE:
                d = _inline_call_or(_sphere_exact, -np.inf, SP[s, 0, 3], SP[s, 1, 3], SP[s, 2, 3],
                                    params[s, 0], wkind, wparams, wpose, o, wa, wb, n)
            elif wkind == SPHERE:
                d = _inline_call_or(_sphere_exact, -np.inf, wpose[o, 0, 3], wpose[o, 1, 3],
                                    wpose[o, 2, 3], wparams[o, 0], kind[s], params, SP, s, wb,
                                    wa, n)
            if np.isnan(d):
                d = _call_or(_pair_distance, -np.inf, kind, params, SP, vstart, vcount, verts, s,
                             wkinds, wparams, wpose, wvstart, wvcount, wverts, o, wa, wb, n)
            best = min(best, d - pad - CERT_TOL)
        lb = best
    held = (T.shape[0] + cen.shape[0] + SP.shape[0] + ready.shape[0] + wa.shape[0]
            + wb.shape[0] + n.shape[0] + link_start.shape[0] + kind.shape[0] + params.shape[0]
            + local.shape[0] + vstart.shape[0] + vcount.shape[0] + verts.shape[0]
            + wbox.shape[0] + wkinds.shape[0] + wparams.shape[0] + wpose.shape[0]
            + wvstart.shape[0] + wvcount.shape[0] + wverts.shape[0] + wcloud.shape[0]
            + wcf.shape[0] + wci.shape[0])
    return lb if held >= 0 else -np.inf


@njit(cache=True, fastmath=False, boundscheck=False)
def _full_pose_ok(kind, SP, s):  # type: ignore[no-untyped-def]
    _full_sphere_pose(kind, SP, s)
    return True


@njit(cache=True, fastmath=False, boundscheck=False)
def _self_lb(a, b, need, T, cen, SP, ready, rs, pad, wa, wb, n):  # type: ignore[no-untyped-def]
    """Lower bound (m) of the padded signed distance of links ``a`` and ``b`` (single exit,
    helpers through ``call_or`` as :func:`_world_lb`)."""
    link_start, kind, params, local = rs.link_start, rs.kind, rs.params, rs.local
    vstart, vcount, verts, brad = rs.vstart, rs.vcount, rs.verts, rs.bound_radius
    dx = cen[a, 0] - cen[b, 0]
    dy = cen[a, 1] - cen[b, 1]
    dz = cen[a, 2] - cen[b, 2]
    lb = np.sqrt(dx * dx + dy * dy + dz * dz) - brad[a] - brad[b] - pad - CERT_TOL
    if lb < need:
        ok = True
        if not ready[a]:
            ok = _inline_call_or(link_shape_poses, False, a, T, link_start, kind, local, SP)
            ready[a] = True
        if not ready[b]:
            ok = ok and _inline_call_or(link_shape_poses, False, b, T, link_start, kind, local,
                                        SP)
            ready[b] = True
        best = np.inf if ok else -np.inf
        for s in range(link_start[a], link_start[a + 1]):
            if not ok:
                break
            if kind[s] == SPHERE:
                ex = SP[s, 0, 3] - cen[b, 0]
                ey = SP[s, 1, 3] - cen[b, 1]
                ez = SP[s, 2, 3] - cen[b, 2]
                slb = np.sqrt(ex * ex + ey * ey + ez * ez) - params[s, 0] - brad[b] - pad
                slb -= CERT_TOL
                if slb >= best or slb >= need:
                    best = min(best, slb)
                    continue
            for t in range(link_start[b], link_start[b + 1]):
                d = np.nan
                if kind[s] == SPHERE and kind[t] == SPHERE:
                    ex = SP[s, 0, 3] - SP[t, 0, 3]
                    ey = SP[s, 1, 3] - SP[t, 1, 3]
                    ez = SP[s, 2, 3] - SP[t, 2, 3]
                    d = np.sqrt(ex * ex + ey * ey + ez * ez) - params[s, 0] - params[t, 0]
                elif kind[s] == SPHERE:
                    d = _inline_call_or(_sphere_exact, -np.inf, SP[s, 0, 3], SP[s, 1, 3],
                                        SP[s, 2, 3], params[s, 0], kind[t], params, SP, t, wa,
                                        wb, n)
                elif kind[t] == SPHERE:
                    d = _inline_call_or(_sphere_exact, -np.inf, SP[t, 0, 3], SP[t, 1, 3],
                                        SP[t, 2, 3], params[t, 0], kind[s], params, SP, s, wb,
                                        wa, n)
                if np.isnan(d):
                    d = _call_or(_pair_distance, -np.inf, kind, params, SP, vstart, vcount,
                                 verts, s, kind, params, SP, vstart, vcount, verts, t, wa, wb, n)
                best = min(best, d - pad - CERT_TOL)
        lb = best
    held = (T.shape[0] + cen.shape[0] + SP.shape[0] + ready.shape[0] + wa.shape[0]
            + wb.shape[0] + n.shape[0] + link_start.shape[0] + kind.shape[0] + params.shape[0]
            + local.shape[0] + vstart.shape[0] + vcount.shape[0] + verts.shape[0]
            + brad.shape[0])
    return lb if held >= 0 else -np.inf


@njit(cache=True, fastmath=False, boundscheck=False)
def cert_workspace(L, S, W, K):  # type: ignore[no-untyped-def]
    """Scratch of :func:`edge_certified` for L links, S shapes, W world objects, K self pairs:
    ``(T, SP, ready, fw, iw)``."""
    P = L + K
    T = np.empty((L, 4, 4))
    SP = np.empty((S, 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    # fw: cen (3L) | cm (L*L) | ce (L*L) | Mp (P) | Ep (P) | h (P) | q (n <= L)
    #     | wa, wb, n (9) | bb (W) | cg (L*L) | ca (L*L) | Om (L) | aready (L) | pn, ilo, ihi (3P)
    #     | BV (L) | per level of the inflated samples: world pads (L*W), self pads (P), set (1)
    #     | buf (3 (L + 3)) | jw (4L)
    fw = np.empty(o_cg_end(L, P, W))
    iw = np.empty(0, dtype=np.int64)
    return T, SP, ready, fw, iw


@njit(cache=True, inline="always")
def o_cg_end(L, P, W):  # type: ignore[no-untyped-def]
    """Size of the float workspace of :func:`edge_certified` (its layout, see
    :func:`cert_workspace`)."""
    return (3 * L + 2 * L * L + 3 * P + L + 9 + W + 2 * L * L + 2 * L + 3 * P + L
            + SWEPT_LEVELS * (L * W + P + 1) + 3 * (L + 3) + 4 * L)


@njit(cache=True, fastmath=False, boundscheck=False)
def _rates(l, top, T, cen, axis, jtype, qidx, scale, parent, d, brad, ca, aready):  # type: ignore[no-untyped-def]
    """``ca[k, l]``: how fast (per unit t, here) the points of link ``l``'s bounding sphere move
    through joint ``k``: ``|scale_k * d_k|`` times their largest distance from k's axis in this
    configuration (revolute), or times 1 (prismatic); for the joints ``k > top`` of l's chain,
    i.e. below its ancestor ``top`` (a self pair needs those below the common ancestor). Each
    once per configuration: ``aready[l]`` is the last one computed (0: none yet)."""
    k = l if aready[l] == 0.0 else parent[int(aready[l])]
    while k > top:
        aready[l] = k
        jt = jtype[k]
        ca[k, l] = 0.0
        if jt != FIXED:
            v = abs(scale[k] * d[qidx[k]])
            if jt == REVOLUTE and v > 0.0:
                wx = T[k, 0, 0] * axis[k, 0] + T[k, 0, 1] * axis[k, 1] + T[k, 0, 2] * axis[k, 2]
                wy = T[k, 1, 0] * axis[k, 0] + T[k, 1, 1] * axis[k, 1] + T[k, 1, 2] * axis[k, 2]
                wz = T[k, 2, 0] * axis[k, 0] + T[k, 2, 1] * axis[k, 1] + T[k, 2, 2] * axis[k, 2]
                vx = cen[l, 0] - T[k, 0, 3]
                vy = cen[l, 1] - T[k, 1, 3]
                vz = cen[l, 2] - T[k, 2, 3]
                cx = wy * vz - wz * vy
                cy = wz * vx - wx * vz
                cz = wx * vy - wy * vx
                # (|w| = 1 up to round-off: 1e-9 relative margin)
                perp = np.sqrt(cx * cx + cy * cy + cz * cz) * (1.0 + 1e-9) + 1e-12
                v *= perp + brad[l]
            ca[k, l] = v
        k = parent[k]
    return True


@njit(cache=True, fastmath=False, boundscheck=False)
def _velocity_bound(l, T, cen, axis, jtype, qidx, scale, parent, d, brad):  # type: ignore[no-untyped-def]
    """Speed bound (per unit t) of the points of link ``l``'s bounding sphere in this
    configuration: |velocity of its centre| + bounding radius * |angular velocity|."""
    vx = 0.0
    vy = 0.0
    vz = 0.0
    ox = 0.0
    oy = 0.0
    oz = 0.0
    k = l
    while k > 0:
        jt = jtype[k]
        if jt != FIXED:
            v = scale[k] * d[qidx[k]]
            wx = T[k, 0, 0] * axis[k, 0] + T[k, 0, 1] * axis[k, 1] + T[k, 0, 2] * axis[k, 2]
            wy = T[k, 1, 0] * axis[k, 0] + T[k, 1, 1] * axis[k, 1] + T[k, 1, 2] * axis[k, 2]
            wz = T[k, 2, 0] * axis[k, 0] + T[k, 2, 1] * axis[k, 1] + T[k, 2, 2] * axis[k, 2]
            if jt == REVOLUTE:
                rx = cen[l, 0] - T[k, 0, 3]
                ry = cen[l, 1] - T[k, 1, 3]
                rz = cen[l, 2] - T[k, 2, 3]
                vx += v * (wy * rz - wz * ry)
                vy += v * (wz * rx - wx * rz)
                vz += v * (wx * ry - wy * rx)
                ox += v * wx
                oy += v * wy
                oz += v * wz
            else:
                vx += v * wx
                vy += v * wy
                vz += v * wz
        k = parent[k]
    return ((np.sqrt(vx * vx + vy * vy + vz * vz) + brad[l] * np.sqrt(ox * ox + oy * oy + oz * oz))
            * (1.0 + 1e-9) + 1e-12)


@njit(cache=True, inline="always")
def _below_common_ancestor(a, b, parent, X, Y):  # type: ignore[no-untyped-def]
    """``(sum X, sum Y)`` over the joints below the lowest common ancestor of links ``a`` and
    ``b``: ``X[k, a]`` for those on a's side, ``X[k, b]`` on b's (the same for ``Y``)."""
    x = a
    y = b
    sx = 0.0
    sy = 0.0
    while x != y:
        if x > y:
            sx += X[x, a]
            sy += Y[x, a]
            x = parent[x]
        else:
            sx += X[y, b]
            sy += Y[y, b]
            y = parent[y]
    return sx, sy


@njit(cache=True, fastmath=False, boundscheck=False)
def _motion_bounds(q0, d, tube, kin, brad, bcen, self_a, self_b, K, T, q, cen, cm, ce, jw, Mp,  # type: ignore[no-untyped-def]
                   Ep, growth, Om, cg, BV):
    """Motion bounds of the edge ``q0 + t * d``, t in [0, 1]: ``Mp[l]`` (m per unit t) of the
    points of link ``l``'s bounding sphere, ``Mp[L + k]`` of self pair ``k`` relative to each
    other (the joints below their common ancestor), ``Ep`` of the ``tube`` the same way;
    ``cm[k, l]`` / ``ce[k, l]``: joint k's share. Scratch: ``T`` (L, 4, 4), ``q`` (n), ``cen``
    (L, 3), ``jw`` (L, 4). With ``growth``, also the growth bounds of conservative advancement
    (per unit t^2, given ``Om[k]``, the angular speed bound of k's axis): ``cg[k, l]``, of joint
    k's share of l's speed at a configuration (k's speed times the motion through the joints
    below it), and ``BV[l]``, of l's velocity-field bound (see the module docstring).

    Joint k's share of link l is ``|scale_k * d_k|`` times a bound of the distance of l's points
    from k's axis on the whole edge (1 for a prismatic joint): the smaller of the chain length
    (the joint origins from k down to l, the bounding sphere, prismatic extensions) and, from FK
    at t = 1/2, the axis distance there plus half the motion through the joints between k and l
    (their own shares; the distance from k's axis does not change through k and the joints
    above). The latter made the inflated-sample stage need 19 % fewer intervals on the sphere
    Panda's MotionBenchMaker paths."""
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    L = parent.shape[0]
    for j in range(q0.shape[0]):
        q[j] = q0[j] + 0.5 * d[j]
    fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
    # per joint: its origin's length, its axis in the base frame at t = 1/2
    for k in range(1, L):
        jw[k, 0] = np.sqrt(origin[k, 0, 3] ** 2 + origin[k, 1, 3] ** 2 + origin[k, 2, 3] ** 2)
        for c in range(3):
            jw[k, 1 + c] = (T[k, c, 0] * axis[k, 0] + T[k, c, 1] * axis[k, 1]
                            + T[k, c, 2] * axis[k, 2])
    for l in range(L):
        Mp[l] = 0.0
        Ep[l] = 0.0
        bo = 0.0
        for k in range(L):
            cm[k, l] = 0.0
            ce[k, l] = 0.0
        if growth:
            BV[l] = 0.0
            for k in range(L):
                cg[k, l] = 0.0
        if brad[l] < 0.0:
            continue
        for c in range(3):
            cen[l, c] = (T[l, c, 0] * bcen[l, 0] + T[l, c, 1] * bcen[l, 1]
                         + T[l, c, 2] * bcen[l, 2] + T[l, c, 3])
        acc = np.sqrt(bcen[l, 0] ** 2 + bcen[l, 1] ** 2 + bcen[l, 2] ** 2) + brad[l]
        below = 0.0  # motion bound (per unit t) from the joints between k and l
        k = l
        while k > 0:
            jt = jtype[k]
            if jt != FIXED:
                j = qidx[k]
                s = abs(scale[k])
                mv = s * abs(d[j])
                ev = s * tube[j]
                if growth:
                    if jt == REVOLUTE:
                        # the distance of l's points from k's axis grows at most at rate
                        # ``below``; the velocity field's d/dt of mv * w_k x (c - p_k) is at most
                        # mv * (2 Om_k |c - p_k| + the motion through k and below)
                        cg[k, l] = mv * below
                        BV[l] += mv * (2.0 * Om[k] * acc + below + mv * acc)
                        bo += mv * Om[k]
                    else:
                        BV[l] += mv * Om[k]
                if jt == REVOLUTE:
                    r = acc
                    if mv > 0.0:
                        vx = cen[l, 0] - T[k, 0, 3]
                        vy = cen[l, 1] - T[k, 1, 3]
                        vz = cen[l, 2] - T[k, 2, 3]
                        cx = jw[k, 2] * vz - jw[k, 3] * vy
                        cy = jw[k, 3] * vx - jw[k, 1] * vz
                        cz = jw[k, 1] * vy - jw[k, 2] * vx
                        # (|w| = 1 up to round-off: 1e-9 relative margin)
                        perp = np.sqrt(cx * cx + cy * cy + cz * cz) * (1.0 + 1e-9) + 1e-12
                        r = min(acc, (perp + brad[l] + 0.5 * below) * (1.0 + 1e-12))
                    mv *= r
                    ev *= acc
                cm[k, l] = mv
                ce[k, l] = ev
                Mp[l] += mv
                Ep[l] += ev
                below += mv
                if jt == PRISMATIC:
                    v0 = scale[k] * q0[j] + offset[k]
                    v1 = scale[k] * (q0[j] + d[j]) + offset[k]
                    acc += max(abs(v0), abs(v1)) + s * tube[j]
            acc += jw[k, 0]
            k = parent[k]
        if growth:
            BV[l] += brad[l] * bo
    for kk in range(K):
        Mp[L + kk], Ep[L + kk] = _below_common_ancestor(self_a[kk], self_b[kk], parent, cm, ce)
    return True


@njit(cache=True, fastmath=False, boundscheck=False)
def _swept(q0, d, kin, rs, ws, pr, check_self, clearance, Mp, Ep, T, SP, ready, q, wpl, spl,  # type: ignore[no-untyped-def]
           have, buf, counter, ci, deadline, flag):
    """The inflated-sample stage of :func:`edge_certified`: 1 when it certifies the edge, 0 when
    it cannot (conservative advancement decides then), -1 on ``deadline`` / ``flag``.

    The edge is cut into intervals of t; at the middle of one of half-width ``w`` every link
    ``l`` is checked with the boolean validity kernel, its padding against the world raised by
    ``Mp[l] * w + Ep[l]`` (the most any point of it moves within the interval, and the tube)
    plus ``clearance`` and ``CERT_TOL``, and every self pair's by its own bound: a configuration
    valid so inflated proves the whole interval clear. An interval that is not is halved, down
    to ``SWEPT_LEVELS`` levels. The first intervals are as many as make the largest inflation
    ``SWEPT_FIRST_INFLATION``. Each check is a boolean one (culling, early exit) where
    conservative advancement computes distance bounds: measured on the MotionBenchMaker paths,
    it certifies most edges at a fraction of the cost."""
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    self_a, self_b, self_pad, world_pad = pr.self_a, pr.self_b, pr.self_pad, pr.world_pad
    L = parent.shape[0]
    W = world_pad.shape[1]
    K = self_a.shape[0] if check_self else 0
    nq = q0.shape[0]
    mx = 0.0
    for p in range(L + K):
        mx = max(mx, Mp[p])
    n0 = int(np.ceil(mx / (2.0 * SWEPT_FIRST_INFLATION))) if mx > 0.0 else 1
    if n0 > _SWEPT_MAX_FIRST or n0 < 1:
        return 0
    # pairs of links fixed to the base are skipped as the scene found them, at their padding:
    # with a clearance on top, every pair is checked
    skip = pr.world_skip if clearance <= 0.0 else np.zeros((L, W), dtype=np.int64)
    for lv in range(SWEPT_LEVELS):
        have[lv] = 0.0
    stk = np.empty(2 * SWEPT_LEVELS + 2, dtype=np.int64)
    r = 1
    evals = 0
    for i0 in range(n0):
        stk[0] = 0
        stk[1] = i0
        sp = 1
        while sp > 0 and r == 1:
            sp -= 1
            lv = stk[2 * sp]
            i = stk[2 * sp + 1]
            w = 1.0 / (n0 * (1 << lv))
            if have[lv] == 0.0:
                hw = 0.5 * w
                for l in range(L):
                    e = Mp[l] * hw + Ep[l] + clearance + CERT_TOL
                    for o in range(W):
                        wpl[lv, l, o] = world_pad[l, o] + e
                for k in range(K):
                    spl[lv, k] = self_pad[k] + Mp[L + k] * hw + Ep[L + k] + clearance + CERT_TOL
                have[lv] = 1.0
            t = (i + 0.5) * w
            for j in range(nq):
                q[j] = q0[j] + d[j] * t
            fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
            prl = PairArrays(self_a, self_b, spl[lv], wpl[lv], pr.tab_i, pr.tab_f, pr.tab_data,
                             skip)
            evals += 1
            counter[ci] += 1
            if _valid_at(T, rs, ws, prl, SP, ready, check_self, buf):
                continue
            if lv + 1 >= SWEPT_LEVELS:
                r = 0
                break
            stk[2 * sp] = lv + 1
            stk[2 * sp + 1] = 2 * i + 1
            stk[2 * sp + 2] = lv + 1
            stk[2 * sp + 3] = 2 * i
            sp += 2
            if (evals & 63) == 0 and (flag[0] != 0 or now_ns() > deadline):
                r = -1
        if r != 1:
            break
    return r


@njit(cache=True, fastmath=False, boundscheck=False)
def edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready, fw,  # type: ignore[no-untyped-def]
                   counter, ci, deadline, flag):
    """Certify the straight motion ``q0 + t * d``, t in [0, 1] (see the module docstring).

    Returns 1 (every configuration of the segment, and of its ``tube``, keeps every checked
    pair's padded signed distance at least ``clearance``), 0 (not certified: a collision, or a
    pair closer than that somewhere) or -1 (``deadline`` in ns passed, or ``flag[0]`` set).
    ``counter[ci]`` counts the evaluated configurations. ``T``, ``SP``, ``ready``, ``fw`` come
    from :func:`cert_workspace`. The inflated-sample stage (:func:`_swept`) runs first for
    robots with shapes other than spheres; for sphere robots conservative advancement alone
    is faster (measured on the MotionBenchMaker paths: 0.23 vs 0.33 ms per path), unless the
    blocked kernels run that stage (:func:`first_uncertified_blocked`)."""
    kind = rs.kind
    stage = _CA_ONLY
    for s in range(kind.shape[0]):
        if kind[s] != SPHERE:
            stage = _SWEPT_THEN_CA
    return _edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready,
                           fw, counter, ci, deadline, flag, stage)


@njit(cache=True, fastmath=False, boundscheck=False)
def _edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready, fw,  # type: ignore[no-untyped-def]
                    counter, ci, deadline, flag, stage):
    """:func:`edge_certified` by stage: ``_SWEPT_THEN_CA``, ``_CA_ONLY``, ``_SWEPT_ONLY``
    (0 when ``fw`` is not of this layout)."""
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    brad, bcen = rs.bound_radius, rs.bound_center
    wbox = ws.box
    self_a, self_b, self_pad, world_pad = pr.self_a, pr.self_b, pr.self_pad, pr.world_pad
    L = parent.shape[0]
    W = ws.kind.shape[0]
    K = self_a.shape[0] if check_self else 0
    P = L + K  # horizons: one per link against the whole world, one per self pair
    nq = q0.shape[0]
    o_cen = 0
    o_cm = 3 * L
    o_ce = o_cm + L * L
    o_Mp = o_ce + L * L
    o_Ep = o_Mp + P
    o_h = o_Ep + P
    o_q = o_h + P
    o_w = o_q + L
    if fw.shape[0] < o_cg_end(L, P, W) or nq > L:
        # a workspace of another layout (a caller compiled against another version of this
        # module, e.g. a stale numba cache): not certified, and nothing written out of bounds
        return 0
    cen = fw[o_cen: o_cen + 3 * L].reshape((L, 3))
    cm = fw[o_cm: o_cm + L * L].reshape((L, L))
    ce = fw[o_ce: o_ce + L * L].reshape((L, L))
    Mp = fw[o_Mp: o_Mp + P]
    Ep = fw[o_Ep: o_Ep + P]
    h = fw[o_h: o_h + P]
    q = fw[o_q: o_q + nq]
    wa = fw[o_w: o_w + 3]
    wb = fw[o_w + 3: o_w + 6]
    nn = fw[o_w + 6: o_w + 9]
    bb = fw[o_w + 9: o_w + 9 + W]
    o_cg = o_w + 9 + W
    cg = fw[o_cg: o_cg + L * L].reshape((L, L))
    ca = fw[o_cg + L * L: o_cg + 2 * L * L].reshape((L, L))
    Om = fw[o_cg + 2 * L * L: o_cg + 2 * L * L + L]
    aready = fw[o_cg + 2 * L * L + L: o_cg + 2 * L * L + 2 * L]
    o_pn = o_cg + 2 * L * L + 2 * L
    pn = fw[o_pn: o_pn + P]
    ilo = fw[o_pn + P: o_pn + 2 * P]
    ihi = fw[o_pn + 2 * P: o_pn + 3 * P]
    BV = fw[o_pn + 3 * P: o_pn + 3 * P + L]
    # Om[k]: bound of the angular speed (per unit t) of joint k's axis: the revolute joints
    # above k
    Om[0] = 0.0
    for k in range(1, L):
        j = parent[k]
        Om[k] = Om[j]
        if j > 0 and jtype[j] == REVOLUTE:
            Om[k] += abs(scale[j] * d[qidx[j]])
    # ---- scratch of the inflated samples
    o_sw = o_pn + 3 * P + L
    wpl = fw[o_sw: o_sw + SWEPT_LEVELS * L * W].reshape((SWEPT_LEVELS, L, W))
    o_sw += SWEPT_LEVELS * L * W
    spl = fw[o_sw: o_sw + SWEPT_LEVELS * P].reshape((SWEPT_LEVELS, P))
    o_sw += SWEPT_LEVELS * P
    have = fw[o_sw: o_sw + SWEPT_LEVELS]
    o_sw += SWEPT_LEVELS
    buf = fw[o_sw: o_sw + 3 * (L + 3)].reshape((L + 3, 3))
    jw = fw[o_sw + 3 * (L + 3): o_sw + 3 * (L + 3) + 4 * L].reshape((L, 4))
    # ---- motion bounds of the links and self pairs, and of the tube; growth bounds of the
    # links' speeds, for the steps of advancement from a configuration's own speed
    _motion_bounds(q0, d, tube, kin, brad, bcen, self_a, self_b, K, T, q, cen, cm, ce,
                   jw, Mp, Ep, True, Om, cg, BV)
    # ---- horizons start at 0 (every pair evaluated at t = 0)
    for l in range(L):
        h[l] = 0.0 if (brad[l] >= 0.0 and W > 0) else _FAR
    for kk in range(K):
        h[L + kk] = 0.0 if (brad[self_a[kk]] >= 0.0 and brad[self_b[kk]] >= 0.0) else _FAR
    if stage in (_SWEPT_THEN_CA, _SWEPT_ONLY):
        r = _swept(q0, d, kin, rs, ws, pr, check_self, clearance, Mp, Ep, T, SP, ready, q, wpl,
                   spl, have, buf, counter, ci, deadline, flag)
        if r != 0 or stage == _SWEPT_ONLY:
            return r
    # ---- conservative advancement, both ways: h[p] = the pair is proven clear on [0, h[p]];
    # its next evaluation is at h[p] + pn[p] (pn: the reach expected back from there, so one
    # evaluation covers both sides); a pair that did not reach back keeps the interval it
    # proved, [ilo[p], ihi[p]], until [0, h[p]] joins it
    for p in range(P):
        pn[p] = 0.0
        ilo[p] = -1.0
        ihi[p] = -1.0
    t = 0.0
    r = 1
    evals = 0
    while True:
        for j in range(nq):
            q[j] = q0[j] + d[j] * t
        fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
        for l in range(L):
            ready[l] = False
            aready[l] = 0.0
            for c in range(3):
                cen[l, c] = (T[l, c, 0] * bcen[l, 0] + T[l, c, 1] * bcen[l, 1]
                             + T[l, c, 2] * bcen[l, 2] + T[l, c, 3])
        evals += 1
        counter[ci] += 1
        tnext = _FAR
        for p in range(P):
            if h[p] < 1.0 and (h[p] + _EARLY * pn[p] <= t or t >= 1.0):
                # the bound that would carry this pair past the end of the edge and back to h
                need = Mp[p] * max(1.0 - t, t - h[p]) + Ep[p] + clearance + 1e-6
                if p < L:
                    # link p against the world: the link's bounding sphere against every
                    # object's enclosing box (cheap, inline), then the shapes against the
                    # nearest object first, and against another only while its box bound is
                    # below the best bound found so far (branch and bound)
                    l = p
                    lb = need
                    for o in range(W):
                        bb[o] = _inline_call_or(_box_signed, -np.inf, cen[l, 0], cen[l, 1],
                                                cen[l, 2], wbox, o) - brad[l] - world_pad[l, o]
                        bb[o] -= CERT_TOL
                    floor = clearance + Ep[p] + CERT_MIN_SLACK
                    while lb > floor:
                        o = -1
                        lo = lb
                        for oo in range(W):
                            if bb[oo] < lo:
                                lo = bb[oo]
                                o = oo
                        if o < 0:
                            break
                        bb[o] = np.inf
                        lo = _inline_call_or(_world_lb, -np.inf, l, o, lb, T, cen, SP, ready,
                                             rs, ws, world_pad[l, o], wa, wb, nn)
                        if lo < lb:
                            lb = lo
                else:
                    # the cheapest bound first, inline: the links' bounding spheres; their
                    # shapes only when that is not enough
                    kk = p - L
                    a = self_a[kk]
                    b = self_b[kk]
                    pad = self_pad[kk]
                    dx = cen[a, 0] - cen[b, 0]
                    dy = cen[a, 1] - cen[b, 1]
                    dz = cen[a, 2] - cen[b, 2]
                    lb = np.sqrt(dx * dx + dy * dy + dz * dz) - brad[a] - brad[b] - pad - CERT_TOL
                    if lb < need:
                        lb = _inline_call_or(_self_lb, -np.inf, a, b, need, T, cen, SP, ready,
                                             rs, pad, wa, wb, nn)
                slack = lb - clearance - Ep[p]
                if not slack > CERT_MIN_SLACK:
                    r = 0
                    break
                if Mp[p] > 0.0:
                    # the static bound, or a bound from this configuration (speed A, growing
                    # at most at rate Bq): the longer step of the two; the latter only when
                    # the static step does not already reach the end of the edge and back to
                    # h[p] (the result is the same, without the cost of that bound)
                    step = slack / Mp[p]
                    ok = step < max(1.0 - t, t - h[p])
                    A = np.inf
                    Bq = 0.0
                    if ok and p < L:
                        # a link against the world: the velocity field of its bounding sphere
                        # (never above the sum over the joints of the axis-distance bound)
                        A = _inline_call_or(_velocity_bound, np.inf, p, T, cen, axis, jtype,
                                            qidx, scale, parent, d, brad)
                        ok = np.isfinite(A)
                        Bq = BV[p]
                    elif ok:
                        # a self pair: the joint axes' distances of both links (below their
                        # common ancestor)
                        kk = p - L
                        a = self_a[kk]
                        b = self_b[kk]
                        x = a
                        y = b
                        while x != y:
                            if x > y:
                                x = parent[x]
                            else:
                                y = parent[y]
                        ok = _inline_call_or(_rates, False, a, x, T, cen, axis, jtype, qidx,
                                             scale, parent, d, brad, ca, aready)
                        ok = _inline_call_or(_rates, False, b, x, T, cen, axis, jtype, qidx,
                                             scale, parent, d, brad, ca, aready) and ok
                        A, Bq = _below_common_ancestor(a, b, parent, ca, cg)
                    if ok:  # (a failed helper: the static bound alone)
                        step2 = 2.0 * slack / (A + np.sqrt(A * A + 2.0 * Bq * slack))
                        step = max(step, step2)
                else:
                    step = _FAR
                # the pair is clear on [t - step, t + step] (the bounds hold both ways)
                if t - step <= h[p]:
                    h[p] = max(h[p], t + step)
                    if ilo[p] >= 0.0 and h[p] >= ilo[p]:
                        h[p] = max(h[p], ihi[p])
                        ilo[p] = -1.0
                    pn[p] = 0.5 * (ilo[p] - h[p]) if ilo[p] >= 0.0 else _AHEAD * step
                elif ilo[p] < 0.0:
                    ilo[p] = t - step
                    ihi[p] = t + step
                    pn[p] = 0.5 * (ilo[p] - h[p])
                else:
                    if t + step >= ilo[p]:
                        ilo[p] = t - step
                        ihi[p] = max(ihi[p], t + step)
                    pn[p] = 0.0  # next time one-sided: from h[p], always progresses
            if h[p] < 1.0 and h[p] + pn[p] < tnext:
                tnext = min(1.0, h[p] + pn[p])
        if r == 0 or tnext >= _FAR:
            break
        if evals >= CERT_MAX_EVALS:
            r = 0
            break
        if (evals & 7) == 0 and (flag[0] != 0 or now_ns() > deadline):
            r = -1
            break
        t = tnext
    return r


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def motion_certified_packed(q0, d, tube, F, I, check_self, clearance):  # type: ignore[no-untyped-def]
    """:func:`edge_certified` on a packed scene (no deadline); returns ``(code, evaluations)``."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = kin.parent.shape[0]
    T, SP, ready, fw, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                         pr.self_a.shape[0])
    counter = np.zeros(1, dtype=np.int64)
    flag = np.zeros(1, dtype=np.int64)
    r = edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready, fw,
                       counter, 0, np.iinfo(np.int64).max, flag)
    return r, counter[0]


@njit(cache=True, fastmath=False, boundscheck=False)
def _certify_edges(Q0, D, TUBE, F, I, BF, BI, check_self, clearance, out, stop):  # type: ignore[no-untyped-def]
    """``out[k]`` = 1 when the motion ``Q0[k] + t * D[k]`` (widened by ``TUBE[k]``) is
    certified, else 0: with a block scene ``BF`` / ``BI`` small enough to copy, the edges
    through the blocked inflated-sample stage together and advancement for those it leaves;
    else :func:`edge_certified` edge by edge. With ``stop``, edges after the first uncertified
    one are not looked at (left 0). Returns the evaluated configurations."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = kin.parent.shape[0]
    T, SP, ready, fw, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                         pr.self_a.shape[0])
    counter = np.zeros(1, dtype=np.int64)
    flag = np.zeros(1, dtype=np.int64)
    never = np.iinfo(np.int64).max
    E = Q0.shape[0]
    BF2, BI2, Wb, RIb = swept_copies(BF, BI, True)
    done = np.zeros(E, dtype=np.bool_)
    if BF2.shape[0] > 0 and E > 0:
        _swept_path_blocked(Q0, D, TUBE, kin, rs, ws, pr, check_self, clearance, T, SP, ready,
                            fw, counter, 0, never, flag, BF, BI, BF2, BI2, Wb, RIb, done)
    for k in range(E):
        out[k] = 0
    for k in range(E):
        if done[k]:
            out[k] = 1
        elif BF2.shape[0] > 0:
            out[k] = _edge_certified(Q0[k], D[k], TUBE[k], kin, rs, ws, pr, check_self,
                                     clearance, T, SP, ready, fw, counter, 0, never, flag,
                                     _CA_ONLY)
        else:
            out[k] = edge_certified(Q0[k], D[k], TUBE[k], kin, rs, ws, pr, check_self,
                                    clearance, T, SP, ready, fw, counter, 0, never, flag)
        if stop and out[k] != 1:
            break
    return counter[0]


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def edges_certified_packed(Q0, D, F, I, BF, BI, check_self, clearance, out):  # type: ignore[no-untyped-def]
    """``out[k]`` = :func:`edge_certified_blocked` of ``Q0[k] + t * D[k]`` (one thread; block
    scene ``BF`` / ``BI``, or empty arrays); returns the evaluated configurations (benchmarks,
    batch checks). With a block scene the edges go through the inflated-sample stage together,
    as a path's do (:func:`first_uncertified_blocked`), and advancement decides the rest."""
    return _certify_edges(Q0, D, np.zeros(Q0.shape), F, I, BF, BI, check_self, clearance, out,
                          False)


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def first_uncertified(Q0, D, TUBE, F, I, check_self, clearance):  # type: ignore[no-untyped-def]
    """Index of the first motion ``Q0[k] + t * D[k]`` (widened by ``TUBE[k]``) that
    :func:`edge_certified` does not certify, or -1 (one thread, stops at the first)."""
    return first_uncertified_counted(Q0, D, TUBE, F, I, check_self, clearance)[0]


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def first_uncertified_counted(Q0, D, TUBE, F, I, check_self, clearance):  # type: ignore[no-untyped-def]
    """:func:`first_uncertified` and the number of configurations evaluated."""
    return first_uncertified_blocked(Q0, D, TUBE, F, I, np.empty(0), np.empty(0, dtype=np.int64),
                                     check_self, clearance)


@njit(cache=True, fastmath=False, boundscheck=False)
def _swept_path_blocked(Q0, D, TUBE, kin, rs, ws, pr, check_self, clearance, T, SP, ready, fw,  # type: ignore[no-untyped-def]
                        counter, ci, deadline, flag, BF, BI, BF2, BI2, Wb, RIb, done):
    """The inflated-sample stage on the blocked kernels for the edges ``Q0[e] + t * D[e]``
    (widened by ``TUBE[e]``) together: ``done[e]`` set for each edge it certifies; returns -1
    on ``deadline`` / ``flag``, else 0. ``BF2, BI2, Wb, RIb``: :func:`swept_copies` of the block
    scene ``BF`` / ``BI`` (``BF2`` longer by one set of paddings, L * W + P, which each block
    writes and points ``BI2`` at).

    Every edge's first intervals are as many as make its largest inflation
    ``SWEPT_FIRST_INFLATION``; level by level, the intervals of all edges still open are packed
    8 per pass, and a pass pads every link and self pair by the largest inflation any of its 8
    intervals needs (each interval's own bound: its edge's motion bound times its half-width,
    plus the tube), so that an interval valid there is clear. Failing intervals are halved; an
    edge with one failing at the last level is left to conservative advancement. The halves
    of an interval skip the tests it passed (links and self pairs before the one that failed,
    in :func:`block_valid_from`'s order): they hold for the halves too, with less inflation.
    (Packing the edges of a path together: 17 % fewer passes than edge by edge on the sphere
    Panda's MotionBenchMaker paths, for the same number of intervals.)"""
    E = Q0.shape[0]
    n = Q0.shape[1]
    L = kin.parent.shape[0]
    K = pr.self_a.shape[0] if check_self else 0
    P = L + K
    Wn = BI[H_W]
    Pb = BI[H_P]
    base = BF.shape[0]
    ow = BI[H_WPAD]
    op = BI[H_PPAD]
    if n > L:
        return 0  # (more joint values than links: not this robot's edges)
    # scratch in one float and two int allocations (this runs once per edge in the planner's
    # loop): the edges' bounds, then _motion_bounds' scratch, then the paddings of a pass
    fb = np.empty(2 * E * P + n + 3 * L + 2 * L * L + 4 * L + P)
    MP = fb[:E * P].reshape((E, P))
    EP = fb[E * P: 2 * E * P].reshape((E, P))
    o = 2 * E * P
    q = fb[o: o + n]
    cen = fb[o + n: o + n + 3 * L].reshape((L, 3))
    o += n + 3 * L
    cm = fb[o: o + L * L].reshape((L, L))
    cem = fb[o + L * L: o + 2 * L * L].reshape((L, L))
    jw = fb[o + 2 * L * L: o + 2 * L * L + 4 * L].reshape((L, 4))
    emax = fb[o + 2 * L * L + 4 * L:]
    none1 = fb[:0]  # (no growth bounds here)
    none2 = none1.reshape((0, 0))
    N0 = np.zeros(E, dtype=np.int64)
    tot = 0
    for e in range(E):
        done[e] = False
        _motion_bounds(Q0[e], D[e], TUBE[e], kin, rs.bound_radius, rs.bound_center, pr.self_a,
                       pr.self_b, K, T, q, cen, cm, cem, jw, MP[e], EP[e], False, none1, none2,
                       none1)
        mx = 0.0
        for p in range(P):
            mx = max(mx, MP[e, p])
        n0 = int(np.ceil(mx / (2.0 * SWEPT_FIRST_INFLATION))) if mx > 0.0 else 1
        if 1 <= n0 <= _SWEPT_MAX_FIRST:
            N0[e] = n0
            tot += n0
    cap = 4 * tot + 64
    # the open intervals: edge, index at this level and first test position (see below), now
    # and next
    iv = np.empty(6 * cap + E + LANES, dtype=np.int64)
    ie = iv[:cap]
    ix = iv[cap: 2 * cap]
    ifr = iv[2 * cap: 3 * cap]
    ne = iv[3 * cap: 4 * cap]
    nx = iv[4 * cap: 5 * cap]
    nfr = iv[5 * cap: 6 * cap]
    failed = iv[6 * cap: 6 * cap + E]
    dead = iv[6 * cap + E:]
    ncur = 0
    for e in range(E):
        failed[e] = 1 if N0[e] == 0 else 0
        for i in range(N0[e]):
            ie[ncur] = e
            ix[ncur] = i
            ifr[ncur] = 0
            ncur += 1
    BI2[H_WPAD] = base
    BI2[H_PPAD] = base + L * Wn
    for lv in range(SWEPT_LEVELS):
        nn = 0
        for b0 in range(0, ncur, LANES):
            m = min(LANES, ncur - b0)
            for p in range(P):
                emax[p] = 0.0
            for kk in range(m):
                e = ie[b0 + kk]
                hw = 0.5 / (N0[e] * (1 << lv))
                for p in range(P):
                    emax[p] = max(emax[p], MP[e, p] * hw + EP[e, p])
            for l in range(L):
                pad = emax[l] + clearance + CERT_TOL
                for o in range(Wn):
                    BF2[base + l * Wn + o] = BF[ow + l * Wn + o] + pad
            for k in range(Pb):
                pad = 0.0
                if k < K:
                    pad = emax[L + k] + clearance + CERT_TOL
                BF2[base + L * Wn + k] = BF[op + k] + pad
            first = ifr[b0]
            for kk in range(LANES):
                c = b0 + min(kk, m - 1)
                e = ie[c]
                first = min(first, ifr[c])
                t = (ix[c] + 0.5) / (N0[e] * (1 << lv))
                for j in range(n):
                    Wb[j * LANES + kk] = Q0[e, j] + D[e, j] * t
            alive = block_valid_from(BF2, BI2, Wb, RIb, (1 << m) - 1, check_self, first, dead)
            counter[ci] += m
            for kk in range(m):
                if (alive >> kk) & 1 == 0:
                    e = ie[b0 + kk]
                    if lv + 1 >= SWEPT_LEVELS or nn + 2 > cap:
                        failed[e] = 1
                    else:
                        # The tests before the one that failed passed (those before the
                        # interval's own first position passed for its parent, with a larger
                        # padding): its halves, inside it, start there.
                        fr = max(ifr[b0 + kk], dead[kk])
                        ne[nn] = e
                        nx[nn] = 2 * ix[b0 + kk]
                        nfr[nn] = fr
                        ne[nn + 1] = e
                        nx[nn + 1] = 2 * ix[b0 + kk] + 1
                        nfr[nn + 1] = fr
                        nn += 2
        ncur = 0
        for c in range(nn):  # (the intervals of failed edges are dropped)
            if failed[ne[c]] == 0:
                ie[ncur] = ne[c]
                ix[ncur] = nx[c]
                ifr[ncur] = nfr[c]
                ncur += 1
        if ncur == 0:
            break
        if flag[0] != 0 or now_ns() > deadline:
            return -1
    for e in range(E):
        done[e] = failed[e] == 0
    return 0


@njit(cache=True, inline="always")
def _copyable(BF):  # type: ignore[no-untyped-def]
    """Whether the blocked inflated-sample stage takes the block scene ``BF`` (one to copy, and
    not too large)."""
    return 0 < BF.shape[0] <= _SWEPT_MAX_BF


@njit(cache=True, fastmath=False, boundscheck=False)
def swept_copies(BF, BI, want):  # type: ignore[no-untyped-def]
    """Scratch of the blocked inflated-sample stage for block scene ``BF`` / ``BI``:
    ``(BF2, BI2, Wb, RIb)``, all empty when not ``want``ed, when there is no block scene or
    it is too large to copy (then the stage runs on the scalar kernels, or not at all for
    sphere robots)."""
    if want and _copyable(BF):
        nb = BF.shape[0]
        BF2 = np.empty(nb + BI[H_L] * BI[H_W] + BI[H_P])
        BF2[:nb] = BF
        BI2 = BI.copy()
        Wb = np.zeros(_offsets(BI[H_N], BI[H_NF], BI[H_S], BI[H_L])[4])
        RIb = np.zeros(BI[H_L], dtype=np.int64)
    else:
        BF2 = np.empty(0)
        BI2 = np.empty(0, dtype=np.int64)
        Wb = np.empty(0)
        RIb = np.empty(0, dtype=np.int64)
    return BF2, BI2, Wb, RIb


@njit(cache=True, fastmath=False, boundscheck=False)
def edge_certified_blocked(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready,  # type: ignore[no-untyped-def]
                           fw, counter, ci, deadline, flag, BF, BI, BF2, BI2, Wb, RIb):
    """:func:`edge_certified` with its inflated-sample stage on the blocked kernels, 8 samples
    per pass (``BF2, BI2, Wb, RIb`` from :func:`swept_copies` of the block scene ``BF`` /
    ``BI``; empty: :func:`edge_certified` itself)."""
    if BF2.shape[0] == 0:
        return edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP,
                              ready, fw, counter, ci, deadline, flag)
    n = q0.shape[0]
    E3 = np.empty((3, 1, n))
    E3[0, 0] = q0
    E3[1, 0] = d
    E3[2, 0] = tube
    done = np.zeros(1, dtype=np.bool_)
    if _swept_path_blocked(E3[0], E3[1], E3[2], kin, rs, ws, pr, check_self, clearance, T, SP,
                           ready, fw, counter, ci, deadline, flag, BF, BI, BF2, BI2, Wb, RIb,
                           done) < 0:
        return -1
    if done[0]:
        return 1
    return _edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready,
                           fw, counter, ci, deadline, flag, _CA_ONLY)


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def first_uncertified_blocked(Q0, D, TUBE, F, I, BF, BI, check_self, clearance):  # type: ignore[no-untyped-def]
    """:func:`first_uncertified_counted` with the inflated-sample stage on the blocked kernels
    (8 samples per pass) when the block scene ``BF`` / ``BI`` is given (empty arrays: none) and
    small enough to copy; conservative advancement decides the edges it does not certify."""
    out = np.zeros(Q0.shape[0], dtype=np.int64)
    evals = _certify_edges(Q0, D, TUBE, F, I, BF, BI, check_self, clearance, out, True)
    for k in range(Q0.shape[0]):
        if out[k] != 1:
            return k, evals
    return -1, evals


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def swept_certified_packed(q0, d, tube, F, I, BF, BI, check_self, clearance):  # type: ignore[no-untyped-def]
    """The inflated-sample stage alone, without conservative advancement after it: 1 when it
    certifies ``q0 + t * d`` (widened by ``tube``), else 0; on the blocked kernels when the
    block scene ``BF`` / ``BI`` is given (empty arrays: the scalar kernels). For tests and
    benchmarks of that stage."""
    if not _copyable(BF):
        kin, rs, ws, pr = unpack_scene_borrowed(F, I)
        L = kin.parent.shape[0]
        T, SP, ready, fw, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                             pr.self_a.shape[0])
        return _edge_certified(q0, d, tube, kin, rs, ws, pr, check_self, clearance, T, SP, ready,
                               fw, np.zeros(1, dtype=np.int64), 0, np.iinfo(np.int64).max,
                               np.zeros(1, dtype=np.int64), _SWEPT_ONLY)
    done = np.zeros(1, dtype=np.bool_)
    swept_path_certified_packed(q0.reshape((1, q0.shape[0])), d.reshape((1, d.shape[0])),
                                tube.reshape((1, tube.shape[0])), F, I, BF, BI, check_self,
                                clearance, done)
    return 1 if done[0] else 0


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def swept_path_certified_packed(Q0, D, TUBE, F, I, BF, BI, check_self, clearance, done):  # type: ignore[no-untyped-def]
    """The blocked inflated-sample stage alone over the edges ``Q0[e] + t * D[e]`` together
    (as a path is certified): ``done[e]`` set for each edge it certifies. Needs a block scene
    ``BF`` / ``BI`` small enough to copy (else nothing is certified). For tests."""
    kin, rs, ws, pr = unpack_scene_borrowed(F, I)
    L = kin.parent.shape[0]
    T, SP, ready, fw, _ = cert_workspace(L, rs.kind.shape[0], ws.kind.shape[0],
                                         pr.self_a.shape[0])
    counter = np.zeros(1, dtype=np.int64)
    flag = np.zeros(1, dtype=np.int64)
    BF2, BI2, Wb, RIb = swept_copies(BF, BI, True)
    done[:] = False
    if BF2.shape[0] > 0 and Q0.shape[0] > 0:
        _swept_path_blocked(Q0, D, TUBE, kin, rs, ws, pr, check_self, clearance, T, SP, ready,
                            fw, counter, 0, np.iinfo(np.int64).max, flag, BF, BI, BF2, BI2, Wb,
                            RIb, done)
    return 0


@njit(cache=True, fastmath=False, boundscheck=False, nogil=True)
def motion_bounds_packed(q0, d, tube, F, I, check_self):  # type: ignore[no-untyped-def]
    """``(Mp, Ep)`` of :func:`_motion_bounds` for the edge ``q0 + t * d`` (widened by ``tube``):
    per link, then per checked self pair (m per unit t). For tests and diagnostics."""
    kin, rs, _, pr = unpack_scene_borrowed(F, I)
    L = kin.parent.shape[0]
    K = pr.self_a.shape[0] if check_self else 0
    Mp = np.zeros(L + K)
    Ep = np.zeros(L + K)
    _motion_bounds(q0, d, tube, kin, rs.bound_radius, rs.bound_center, pr.self_a, pr.self_b, K,
                   np.empty((L, 4, 4)), np.empty(q0.shape[0]), np.empty((L, 3)),
                   np.empty((L, L)), np.empty((L, L)), np.empty((L, 4)), Mp, Ep, False,
                   np.empty(L), np.empty((L, L)), np.empty(L))
    return Mp, Ep
