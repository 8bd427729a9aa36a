"""EPA, the penetration depth of overlapping cores (compiled), and the GJK + EPA pair
distance built on it. Conventions as in :mod:`robot_collision.geometry.distance`, which
documents the algorithm and its tolerances."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..jitcall import nothrow as _nothrow
from ..jitcall import stack_matrix
from .gjk import CONTACT_TOL, _add_point, _face_others, _gjk, _support, _tri_lambdas
from .pair_closed_forms import _any_perpendicular
from .shapes import CAPSULE, MESH, SPHERE

__all__ = ["EPA_ABS_TOL", "EPA_MAX_MESH_VERTICES", "EPA_MAX_VERTICES", "EPA_REL_TOL"]

EPA_MAX_VERTICES = 128
"""Vertex budget of the EPA polytope; with meshes it grows to ``2 * (k_a + k_b) + 32`` (at most
``EPA_MAX_MESH_VERTICES``) so that finely tessellated hulls still converge."""
EPA_MAX_MESH_VERTICES = 1024
"""Upper limit of the EPA vertex budget for meshes."""
EPA_ABS_TOL = 1e-11
"""Absolute EPA convergence tolerance (m)."""
EPA_REL_TOL = 1e-9
"""EPA convergence tolerance relative to the penetration depth."""

_EPA_VISIBLE_EPS = 1e-13
_EXPAND_EPS = 1e-9


# --------------------------------------------------------------------------------------------
# Calling convention: calls made from a function holding arrays go through ``_nothrow``
# (see :mod:`robot_collision.jitcall` for why).
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# EPA
# --------------------------------------------------------------------------------------------
# Vertex table V (vertex budget, 9): w, a, b as in the GJK scratch. Faces F (m, 3): vertex
# indices, counter-clockwise seen from outside. FN (m, 4): outward unit normal and plane offset
# (distance of the plane from the origin, positive when the origin is inside).


@njit(cache=True)
def _expand_simplex(V, nv, ka, PA, va, kb, PB, vb, H):  # type: ignore[no-untyped-def]
    """Grow the GJK simplex (origin on or inside it) into a non-degenerate tetrahedron.
    Returns the number of vertices reached (4 on success). ``H``: support hints (GJK scratch)."""
    for _ in range(12):
        if nv == 4:
            e1x = V[1, 0] - V[0, 0]
            e1y = V[1, 1] - V[0, 1]
            e1z = V[1, 2] - V[0, 2]
            e2x = V[2, 0] - V[0, 0]
            e2y = V[2, 1] - V[0, 1]
            e2z = V[2, 2] - V[0, 2]
            mx = e1y * e2z - e1z * e2y
            my = e1z * e2x - e1x * e2z
            mz = e1x * e2y - e1y * e2x
            mm = math.sqrt(mx * mx + my * my + mz * mz)
            h = 0.0
            if mm > 0.0:
                h = (
                    abs(
                        mx * (V[3, 0] - V[0, 0])
                        + my * (V[3, 1] - V[0, 1])
                        + mz * (V[3, 2] - V[0, 2])
                    )
                    / mm
                )
            if h > _EXPAND_EPS:
                return 4
            nv = 3
        elif nv == 3:
            e1x = V[1, 0] - V[0, 0]
            e1y = V[1, 1] - V[0, 1]
            e1z = V[1, 2] - V[0, 2]
            e2x = V[2, 0] - V[0, 0]
            e2y = V[2, 1] - V[0, 1]
            e2z = V[2, 2] - V[0, 2]
            mx = e1y * e2z - e1z * e2y
            my = e1z * e2x - e1x * e2z
            mz = e1x * e2y - e1y * e2x
            mm = math.sqrt(mx * mx + my * my + mz * mz)
            if mm <= _EXPAND_EPS * _EXPAND_EPS:
                nv = 2
                continue
            mx /= mm
            my /= mm
            mz /= mm
            found = False
            for sgn in (1.0, -1.0):
                _nothrow(
                    _add_point, V, 3, ka, PA, va, kb, PB, vb,
                    sgn * mx, sgn * my, sgn * mz, H,
                )
                h = sgn * (
                    mx * (V[3, 0] - V[0, 0]) + my * (V[3, 1] - V[0, 1]) + mz * (V[3, 2] - V[0, 2])
                )
                if h > _EXPAND_EPS:
                    found = True
                    break
            return 4 if found else 3
        elif nv == 2:
            ux = V[1, 0] - V[0, 0]
            uy = V[1, 1] - V[0, 1]
            uz = V[1, 2] - V[0, 2]
            ul = math.sqrt(ux * ux + uy * uy + uz * uz)
            if ul <= _EXPAND_EPS:
                nv = 1
                continue
            ux /= ul
            uy /= ul
            uz /= ul
            e1x, e1y, e1z = _nothrow(_any_perpendicular, ux, uy, uz)
            e2x = uy * e1z - uz * e1y
            e2y = uz * e1x - ux * e1z
            e2z = ux * e1y - uy * e1x
            found = False
            for k in range(6):
                c = math.cos(k * math.pi / 3.0)
                s = math.sin(k * math.pi / 3.0)
                _nothrow(
                    _add_point, V, 2, ka, PA, va, kb, PB, vb,
                    c * e1x + s * e2x, c * e1y + s * e2y, c * e1z + s * e2z, H,
                )
                rx = V[2, 0] - V[0, 0]
                ry = V[2, 1] - V[0, 1]
                rz = V[2, 2] - V[0, 2]
                cx = ry * uz - rz * uy
                cy = rz * ux - rx * uz
                cz = rx * uy - ry * ux
                if cx * cx + cy * cy + cz * cz > _EXPAND_EPS * _EXPAND_EPS:
                    found = True
                    break
            if not found:
                return 2
            nv = 3
        else:
            found = False
            for k in range(6):
                sgn = 1.0 if k < 3 else -1.0
                dx = sgn if k % 3 == 0 else 0.0
                dy = sgn if k % 3 == 1 else 0.0
                dz = sgn if k % 3 == 2 else 0.0
                _nothrow(_add_point, V, 1, ka, PA, va, kb, PB, vb, dx, dy, dz, H)
                rx = V[1, 0] - V[0, 0]
                ry = V[1, 1] - V[0, 1]
                rz = V[1, 2] - V[0, 2]
                if rx * rx + ry * ry + rz * rz > _EXPAND_EPS * _EXPAND_EPS:
                    found = True
                    break
            if not found:
                return 1
            nv = 2
    return nv


@njit(cache=True)
def _make_face(V, F, FN, f, i, j, k, cx, cy, cz):  # type: ignore[no-untyped-def]
    """Store face (i, j, k) in slot ``f``, wound so that its normal points away from the
    interior point ``c``."""
    ux = V[j, 0] - V[i, 0]
    uy = V[j, 1] - V[i, 1]
    uz = V[j, 2] - V[i, 2]
    vx = V[k, 0] - V[i, 0]
    vy = V[k, 1] - V[i, 1]
    vz = V[k, 2] - V[i, 2]
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    if nx * (cx - V[i, 0]) + ny * (cy - V[i, 1]) + nz * (cz - V[i, 2]) > 0.0:
        nx = -nx
        ny = -ny
        nz = -nz
        j, k = k, j
    F[f, 0] = i
    F[f, 1] = j
    F[f, 2] = k
    ln = math.sqrt(nx * nx + ny * ny + nz * nz)
    if ln > 0.0:
        nx /= ln
        ny /= ln
        nz /= ln
        FN[f, 0] = nx
        FN[f, 1] = ny
        FN[f, 2] = nz
        FN[f, 3] = nx * V[i, 0] + ny * V[i, 1] + nz * V[i, 2]
    else:  # zero-area sliver: never selected, never visible
        FN[f, 0] = 0.0
        FN[f, 1] = 0.0
        FN[f, 2] = 0.0
        FN[f, 3] = np.inf


@njit(cache=True)
def _refine_depth(ka, PA, va, kb, PB, vb, f0, nx, ny, nz):  # type: ignore[no-untyped-def]
    """Local minimum of ``h_D(u) = h_A(u) + h_B(-u)`` over unit ``u`` near ``n``, where
    ``f0 = h_D(n)``: a pattern search in the tangent plane of ``n`` (16 directions, shrinking
    steps, restarted once with turned directions). ``min h_D`` is the penetration depth; every
    value found is an upper bound of it."""
    e1x, e1y, e1z = _nothrow(_any_perpendicular, nx, ny, nz)
    e2x = ny * e1z - nz * e1y
    e2y = nz * e1x - nx * e1z
    e2z = nx * e1y - ny * e1x
    s = 0.0
    t = 0.0
    fbest = f0
    ha = -1
    hb = -1
    for rnd in range(2):
        step = 0.05 if rnd == 0 else 1e-3
        turn = 0.0 if rnd == 0 else math.pi / 16.0
        for _ in range(500):
            bs = s
            bt = t
            for k in range(16):
                ang = turn + 0.125 * math.pi * k
                cs = s + step * math.cos(ang)
                ct = t + step * math.sin(ang)
                ux = nx + cs * e1x + ct * e2x
                uy = ny + cs * e1y + ct * e2y
                uz = nz + cs * e1z + ct * e2z
                ul = math.sqrt(ux * ux + uy * uy + uz * uz)
                ux /= ul
                uy /= ul
                uz /= ul
                ax, ay, az, ha = _nothrow(_support, ka, PA, va, ux, uy, uz, ha)
                bx, by, bz, hb = _nothrow(_support, kb, PB, vb, -ux, -uy, -uz, hb)
                fv = ux * (ax - bx) + uy * (ay - by) + uz * (az - bz)
                if fv < fbest:
                    fbest = fv
                    bs = cs
                    bt = ct
            if bs != s or bt != t:
                s = bs
                t = bt
            else:
                step *= 0.25
                if step < 1e-11:
                    break
    ux = nx + s * e1x + t * e2x
    uy = ny + s * e1y + t * e2y
    uz = nz + s * e1z + t * e2z
    ul = math.sqrt(ux * ux + uy * uy + uz * uz)
    return fbest, ux / ul, uy / ul, uz / ul


@njit(cache=True)
def _epa(ka, PA, va, kb, PB, vb, S, ns):  # type: ignore[no-untyped-def]
    """Penetration of the cores, starting from the GJK simplex ``S[:ns]`` (origin on/inside).
    Returns ``(depth, nx, ny, nz, ax, ay, az, bx, by, bz)``: depth of the origin inside the
    Minkowski difference A - B (slightly negative if just outside), its outward normal ``n`` (the
    direction to move B) and core witness points with ``a - b = depth * n``."""
    vcap = EPA_MAX_VERTICES
    if ka == MESH or kb == MESH:
        vcap = max(vcap, min(EPA_MAX_MESH_VERTICES, 2 * (va.shape[0] + vb.shape[0]) + 32))
    fcap = 2 * vcap + 16  # a closed triangulated polytope has 2 V - 4 faces
    V = np.empty((vcap, 9))
    for i in range(ns):
        for c in range(9):
            V[i, c] = S[i, c]
    nv = _nothrow(_expand_simplex, V, ns, ka, PA, va, kb, PB, vb, S)
    if nv < 4:
        # flat Minkowski difference (impossible for the pairs routed here): report contact at
        # the simplex's mean point of A
        lam = 1.0 / ns
        ax = 0.0
        ay = 0.0
        az = 0.0
        for i in range(ns):
            ax += lam * S[i, 3]
            ay += lam * S[i, 4]
            az += lam * S[i, 5]
        return 0.0, 0.0, 0.0, 1.0, ax, ay, az, ax, ay, az
    cx = 0.25 * (V[0, 0] + V[1, 0] + V[2, 0] + V[3, 0])
    cy = 0.25 * (V[0, 1] + V[1, 1] + V[2, 1] + V[3, 1])
    cz = 0.25 * (V[0, 2] + V[1, 2] + V[2, 2] + V[3, 2])
    F = np.empty((fcap, 3), np.int64)
    FN = np.empty((fcap, 4))
    E = np.empty((3 * fcap, 2), np.int64)
    for l in range(4):
        i, j, k = _nothrow(_face_others, l)
        _nothrow(_make_face, V, F, FN, l, i, j, k, cx, cy, cz)
    nf = 4
    bi = 0
    bj = 1
    bk = 2
    bnx = 0.0
    bny = 0.0
    bnz = 1.0
    bd = 0.0
    converged = False
    ub = np.inf  # best upper bound of the depth: min over the queried normals of h_D
    unx = 0.0
    uny = 0.0
    unz = 1.0
    for _ in range(vcap):
        f = 0
        for q in range(1, nf):
            if FN[q, 3] < FN[f, 3]:
                f = q
        bi = F[f, 0]
        bj = F[f, 1]
        bk = F[f, 2]
        bnx = FN[f, 0]
        bny = FN[f, 1]
        bnz = FN[f, 2]
        bd = FN[f, 3]
        if nv >= vcap or not math.isfinite(bd):
            break
        _nothrow(_add_point, V, nv, ka, PA, va, kb, PB, vb, bnx, bny, bnz, S)
        wx = V[nv, 0]
        wy = V[nv, 1]
        wz = V[nv, 2]
        hw = bnx * wx + bny * wy + bnz * wz
        if hw < ub:
            ub = hw
            unx = bnx
            uny = bny
            unz = bnz
        if hw - bd <= max(EPA_ABS_TOL, EPA_REL_TOL * abs(bd)):
            converged = True
            break  # the closest face lies on the boundary (within tolerance)
        nv += 1
        # remove every face that sees w; the unmatched edges of the removed faces form the horizon
        ne = 0
        q = 0
        while q < nf:
            if FN[q, 0] * wx + FN[q, 1] * wy + FN[q, 2] * wz - FN[q, 3] > _EPA_VISIBLE_EPS:
                for e in range(3):
                    p0 = F[q, e]
                    p1 = F[q, (e + 1) % 3]
                    hit = -1
                    for g in range(ne):
                        if E[g, 0] == p1 and E[g, 1] == p0:
                            hit = g
                            break
                    if hit >= 0:
                        ne -= 1
                        E[hit, 0] = E[ne, 0]
                        E[hit, 1] = E[ne, 1]
                    else:
                        E[ne, 0] = p0
                        E[ne, 1] = p1
                        ne += 1
                nf -= 1
                for c in range(3):
                    F[q, c] = F[nf, c]
                for c in range(4):
                    FN[q, c] = FN[nf, c]
            else:
                q += 1
        if ne == 0 or nf + ne > fcap:
            break  # cannot grow any further: keep the last closest face
        for g in range(ne):
            _nothrow(_make_face, V, F, FN, nf, E[g, 0], E[g, 1], nv - 1, cx, cy, cz)
            nf += 1
    if not converged and math.isfinite(ub):
        # Out of vertices before converging: a curved closest set (e.g. the side of a cylinder
        # equidistant from the origin), which a polytope resolves only slowly. Minimise h_D
        # directly from the best normal so far; the witnesses are where the ray along the final
        # normal leaves the polytope, moved along it onto the two supporting planes.
        # h_D may have several local minima (e.g. a cap and the side of a cylinder): start from
        # the best queried normal and from the normal of the closest face (lower-bound region)
        depth, ux, uy, uz = _nothrow(_refine_depth, ka, PA, va, kb, PB, vb, ub, unx, uny, unz)
        if math.isfinite(bd):
            ax, ay, az, _ = _nothrow(_support, ka, PA, va, bnx, bny, bnz, int(S[8, 0]))
            bx, by, bz, _ = _nothrow(_support, kb, PB, vb, -bnx, -bny, -bnz, int(S[8, 1]))
            f1 = bnx * (ax - bx) + bny * (ay - by) + bnz * (az - bz)
            d2, vx, vy, vz = _nothrow(_refine_depth, ka, PA, va, kb, PB, vb, f1, bnx, bny, bnz)
            if d2 < depth:
                depth, ux, uy, uz = d2, vx, vy, vz
        tb = np.inf
        fq = -1
        for q in range(nf):
            c = FN[q, 0] * ux + FN[q, 1] * uy + FN[q, 2] * uz
            if c > 1e-12 and math.isfinite(FN[q, 3]) and FN[q, 3] < tb * c:
                tb = FN[q, 3] / c
                fq = q
        if fq >= 0:
            i = F[fq, 0]
            j = F[fq, 1]
            k = F[fq, 2]
            xx = tb * ux
            xy = tb * uy
            xz = tb * uz
            li, lj, lk = _nothrow(
                _tri_lambdas,
                V[i, 0] - xx, V[i, 1] - xy, V[i, 2] - xz, V[j, 0] - xx, V[j, 1] - xy,
                V[j, 2] - xz, V[k, 0] - xx, V[k, 1] - xy, V[k, 2] - xz,
            )
            ax = li * V[i, 3] + lj * V[j, 3] + lk * V[k, 3]
            ay = li * V[i, 4] + lj * V[j, 4] + lk * V[k, 4]
            az = li * V[i, 5] + lj * V[j, 5] + lk * V[k, 5]
            bx = li * V[i, 6] + lj * V[j, 6] + lk * V[k, 6]
            by = li * V[i, 7] + lj * V[j, 7] + lk * V[k, 7]
            bz = li * V[i, 8] + lj * V[j, 8] + lk * V[k, 8]
            # move each point along u onto its shape's supporting plane (exact support values)
            sx, sy, sz, _ = _nothrow(_support, ka, PA, va, ux, uy, uz, int(S[8, 0]))
            ha = ux * (sx - ax) + uy * (sy - ay) + uz * (sz - az)
            sx, sy, sz, _ = _nothrow(_support, kb, PB, vb, -ux, -uy, -uz, int(S[8, 1]))
            hb = ux * (bx - sx) + uy * (by - sy) + uz * (bz - sz)
            ax += ha * ux
            ay += ha * uy
            az += ha * uz
            bx -= hb * ux
            by -= hb * uy
            bz -= hb * uz
            # a - b = depth * u up to a small tangential residual (the ray point's barycentric
            # weights); remove it from the shape(s) not reduced to a point core
            rx = ax - bx - depth * ux
            ry = ay - by - depth * uy
            rz = az - bz - depth * uz
            wa_share = 0.5
            if ka == SPHERE or (ka == CAPSULE and PA[1] == 0.0):
                wa_share = 0.0
            elif kb == SPHERE or (kb == CAPSULE and PB[1] == 0.0):
                wa_share = 1.0
            ax -= wa_share * rx
            ay -= wa_share * ry
            az -= wa_share * rz
            bx += (1.0 - wa_share) * rx
            by += (1.0 - wa_share) * ry
            bz += (1.0 - wa_share) * rz
            return depth, ux, uy, uz, ax, ay, az, bx, by, bz
    if not math.isfinite(bd):
        bd = 0.0
    # Witnesses: the origin's projection onto the closest plane may lie in a coplanar neighbour
    # of the selected face (flat sides of boxes and meshes are split into several triangles),
    # so take, among the faces coplanar with it, the one whose triangle is nearest the origin.
    li = 1.0
    lj = 0.0
    lk = 0.0
    best = np.inf
    dlim = bd + 1e-6
    cnx = bnx
    cny = bny
    cnz = bnz
    for q in range(nf):
        if FN[q, 3] <= dlim and FN[q, 0] * cnx + FN[q, 1] * cny + FN[q, 2] * cnz > 1.0 - 1e-9:
            i = F[q, 0]
            j = F[q, 1]
            k = F[q, 2]
            ui, uj, uk = _nothrow(
                _tri_lambdas,
                V[i, 0], V[i, 1], V[i, 2], V[j, 0], V[j, 1], V[j, 2], V[k, 0], V[k, 1], V[k, 2],
            )
            px = ui * V[i, 0] + uj * V[j, 0] + uk * V[k, 0]
            py = ui * V[i, 1] + uj * V[j, 1] + uk * V[k, 1]
            pz = ui * V[i, 2] + uj * V[j, 2] + uk * V[k, 2]
            dd = px * px + py * py + pz * pz
            if dd < best:
                best = dd
                bi, bj, bk = i, j, k
                li, lj, lk = ui, uj, uk
                bnx = FN[q, 0]
                bny = FN[q, 1]
                bnz = FN[q, 2]
                bd = FN[q, 3]
    ax = li * V[bi, 3] + lj * V[bj, 3] + lk * V[bk, 3]
    ay = li * V[bi, 4] + lj * V[bj, 4] + lk * V[bk, 4]
    az = li * V[bi, 5] + lj * V[bj, 5] + lk * V[bk, 5]
    bx = li * V[bi, 6] + lj * V[bj, 6] + lk * V[bk, 6]
    by = li * V[bi, 7] + lj * V[bj, 7] + lk * V[bk, 7]
    bz = li * V[bi, 8] + lj * V[bj, 8] + lk * V[bk, 8]
    return bd, bnx, bny, bnz, ax, ay, az, bx, by, bz


@njit(cache=True)
def _gjk_epa(ka, pa, Ta, va, kb, pb, Tb, vb):  # type: ignore[no-untyped-def]
    """General pair by GJK (+ EPA on core contact); returns the 10-tuple result."""
    PA = (
        pa[0], pa[1], pa[2], Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[0, 3],
        Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[1, 3], Ta[2, 0], Ta[2, 1], Ta[2, 2], Ta[2, 3],
    )
    PB = (
        pb[0], pb[1], pb[2], Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[0, 3],
        Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[1, 3], Tb[2, 0], Tb[2, 1], Tb[2, 2], Tb[2, 3],
    )
    ra = pa[0] if ka in (SPHERE, CAPSULE) else 0.0
    rb = pb[0] if kb in (SPHERE, CAPSULE) else 0.0
    S = stack_matrix(9, 10)  # GJK scratch, on the stack (see stack_matrix)
    S[8, 0] = -1.0
    S[8, 1] = -1.0
    overlap, ns = _nothrow(_gjk, ka, PA, va, kb, PB, vb, S, 0.0)
    if overlap:
        depth, nx, ny, nz, ax, ay, az, bx, by, bz = _nothrow(
            _epa, ka, PA, va, kb, PB, vb, S, ns
        )
        dcore = -depth
    else:
        ax = 0.0
        ay = 0.0
        az = 0.0
        bx = 0.0
        by = 0.0
        bz = 0.0
        for i in range(ns):
            lam = S[i, 9]
            ax += lam * S[i, 3]
            ay += lam * S[i, 4]
            az += lam * S[i, 5]
            bx += lam * S[i, 6]
            by += lam * S[i, 7]
            bz += lam * S[i, 8]
        dx = bx - ax
        dy = by - ay
        dz = bz - az
        dcore = math.sqrt(dx * dx + dy * dy + dz * dz)  # >= CONTACT_TOL > 0
        nx = dx / dcore
        ny = dy / dcore
        nz = dz / dcore
    return (
        dcore - ra - rb,
        ax + ra * nx, ay + ra * ny, az + ra * nz,
        bx - rb * nx, by - rb * ny, bz - rb * nz,
        nx, ny, nz,
    )


@njit(cache=True)
def _gjk_within(ka, pa, Ta, va, kb, pb, Tb, vb, pad):  # type: ignore[no-untyped-def]
    """True when the signed distance of the pair is below ``pad`` (m), by GJK with early exits
    and no EPA (see ``_gjk``'s ``margin``); the full computation when ``pad`` plus the radii is
    negative (a penetration depth must be compared). Cores closer than ``CONTACT_TOL`` count as
    overlapping, as in :func:`shape_distance`."""
    ra = pa[0] if ka in (SPHERE, CAPSULE) else 0.0
    rb = pb[0] if kb in (SPHERE, CAPSULE) else 0.0
    margin = pad + ra + rb
    if margin < 0.0:
        r = _nothrow(_gjk_epa, ka, pa, Ta, va, kb, pb, Tb, vb)
        return r[0] < pad
    margin = max(margin, CONTACT_TOL)
    PA = (
        pa[0], pa[1], pa[2], Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[0, 3],
        Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[1, 3], Ta[2, 0], Ta[2, 1], Ta[2, 2], Ta[2, 3],
    )
    PB = (
        pb[0], pb[1], pb[2], Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[0, 3],
        Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[1, 3], Tb[2, 0], Tb[2, 1], Tb[2, 2], Tb[2, 3],
    )
    S = stack_matrix(9, 10)  # GJK scratch, on the stack (see stack_matrix)
    S[8, 0] = -1.0
    S[8, 1] = -1.0
    overlap, _ = _nothrow(_gjk, ka, PA, va, kb, PB, vb, S, margin)
    return overlap


