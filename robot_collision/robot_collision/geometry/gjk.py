"""GJK on the support functions of the shapes' cores (compiled): support functions of
spheres, capsules, boxes, cylinders and mesh hulls, and the GJK distance loop. Conventions as in
:mod:`robot_collision.geometry.distance`, which documents the algorithm and its tolerances."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..jitcall import borrowed_flat, stack_matrix
from ..jitcall import nothrow as _nothrow
from .hull import START_CELLS, START_GRID, SUPPORT_BLOCK_MARK
from .pair_closed_forms import _clamp01
from .shapes import BOX, CAPSULE, CYLINDER, MESH

__all__ = ["CONTACT_TOL", "GJK_ABS_TOL", "GJK_MAX_ITERATIONS", "GJK_REL_TOL", "mesh_vertex_count"]

GJK_MAX_ITERATIONS = 128
"""Maximum GJK iterations (measured: at most 7 for polytopes, 39 with a cylinder)."""
GJK_ABS_TOL = 1e-12
"""Absolute GJK duality-gap tolerance (m)."""
GJK_REL_TOL = 1e-10
"""GJK duality-gap tolerance relative to the current distance."""
CONTACT_TOL = 1e-10
"""Core distance (m) below which the cores count as touching/overlapping and EPA runs."""


# --------------------------------------------------------------------------------------------
# Calling convention: calls made from a function holding arrays go through ``_nothrow``
# (see :mod:`robot_collision.jitcall` for why).
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Support functions of the cores
# --------------------------------------------------------------------------------------------


def _rows_flat(V):  # type: ignore[no-untyped-def]
    """``V`` (2-D) read as one flat array (Python fallback; compiled: see the overload)."""
    return np.ascontiguousarray(V).reshape(-1)


@overload(_rows_flat)
def _rows_flat_compiled(V):  # type: ignore[no-untyped-def]
    """Compiled :func:`_rows_flat`: a borrowed flat view of a C-ordered ``V`` (no copy, no
    reference counting), a flat copy of any other layout (never seen: the kernels slice
    C-ordered vertex arrays)."""
    if isinstance(V, types.Array) and V.layout == "C":
        return lambda V: borrowed_flat(V)
    return lambda V: np.ascontiguousarray(V).reshape(-1)


@njit(cache=True)
def mesh_vertex_count(V):  # type: ignore[no-untyped-def]
    """Number of hull vertices in a mesh's kernel vertex data ``V``: its rows, or the ``k`` of
    a support block (whose first ``k`` rows are the vertices; see :mod:`.hull`)."""
    m = V.shape[0]
    if m > 0 and V[m - 1, 0] == SUPPORT_BLOCK_MARK:
        return int(V[m - 1, 1])
    return m


@njit(cache=True)
def _mesh_support(V, lx, ly, lz, hint):  # type: ignore[no-untyped-def]
    """Hull vertex of ``V`` farthest along ``l`` (local frame) and its index.

    ``V`` is a plain ``(k, 3)`` vertex array (scanned) or a support block (see
    :mod:`.hull`), climbed along hull edges from the vertex stored for the cube-map cell of
    ``l`` or from vertex ``hint`` (the previous answer; -1: none) if that one is better: on a
    convex polytope a vertex with no better neighbour is a global maximum."""
    m = V.shape[0]
    if m == 0:
        return 0.0, 0.0, 0.0, -1
    if V[m - 1, 0] == SUPPORT_BLOCK_MARK:
        # the block read as one flat array (vertex i at 3 i): indexing it is ~30% cheaper than
        # V[f // 3, f % 3] (measured: 114 -> 81 ns per support on UR5's hulls, 105 -> 75 ns on
        # Panda's, same answers)
        F = _rows_flat(V)
        k = int(F[3 * m - 2])
        base = 3 * k
        # start: the vertex stored for the direction's cube-map cell (see hull.start_directions)
        ax = abs(lx)
        ay = abs(ly)
        az = abs(lz)
        if ax >= ay and ax >= az:
            f, u, v, den = (0 if lx >= 0.0 else 1), ly, lz, ax
        elif ay >= az:
            f, u, v, den = (2 if ly >= 0.0 else 3), lx, lz, ay
        else:
            f, u, v, den = (4 if lz >= 0.0 else 5), lx, ly, az
        if den > 0.0:
            i = min(max(int((u / den + 1.0) * (0.5 * START_GRID)), 0), START_GRID - 1)
            j = min(max(int((v / den + 1.0) * (0.5 * START_GRID)), 0), START_GRID - 1)
        else:
            i = 0
            j = 0
        bi = int(F[base + (f * START_GRID + i) * START_GRID + j])
        b3 = 3 * bi
        best = F[b3] * lx + F[b3 + 1] * ly + F[b3 + 2] * lz
        if 0 <= hint < k:  # the previous answer, when it is better
            b3 = 3 * hint
            dh = F[b3] * lx + F[b3 + 1] * ly + F[b3 + 2] * lz
            if dh > best:
                best = dh
                bi = hint
        for _ in range(k):  # each step strictly improves: at most k steps
            nb = bi
            f1 = int(F[base + START_CELLS + 1 + bi])
            for f in range(int(F[base + START_CELLS + bi]), f1):
                j = int(F[f])
                j3 = 3 * j
                dd = F[j3] * lx + F[j3 + 1] * ly + F[j3 + 2] * lz
                if dd > best:
                    best = dd
                    nb = j
            if nb == bi:
                break
            bi = nb
        b3 = 3 * bi
        return F[b3], F[b3 + 1], F[b3 + 2], bi
    best = V[0, 0] * lx + V[0, 1] * ly + V[0, 2] * lz
    bi = 0
    for i in range(1, m):
        dd = V[i, 0] * lx + V[i, 1] * ly + V[i, 2] * lz
        if dd > best:
            best = dd
            bi = i
    return V[bi, 0], V[bi, 1], V[bi, 2], bi


@njit(cache=True)
def _support(kind, P, V, dx, dy, dz, hint):  # type: ignore[no-untyped-def]
    """Support point (common frame) in direction ``d`` of the core of a posed shape packed as
    ``P = (p0, p1, p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz)`` (params and
    the top three rows of its pose); ``V``: hull vertex data (meshes only). Returns the point
    and, for meshes, the vertex index (a ``hint`` for the next call in a nearby direction;
    -1 for other shapes)."""
    p0, p1, p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz = P
    lx = r00 * dx + r10 * dy + r20 * dz
    ly = r01 * dx + r11 * dy + r21 * dz
    lz = r02 * dx + r12 * dy + r22 * dz
    idx = -1
    if kind == MESH:
        sx, sy, sz, idx = _nothrow(_mesh_support, V, lx, ly, lz, hint)
    elif kind == BOX:
        sx = p0 if lx >= 0.0 else -p0
        sy = p1 if ly >= 0.0 else -p1
        sz = p2 if lz >= 0.0 else -p2
    elif kind == CAPSULE:
        sx, sy, sz = 0.0, 0.0, (p1 if lz >= 0.0 else -p1)
    elif kind == CYLINDER:
        sz = p1 if lz >= 0.0 else -p1
        s = math.sqrt(lx * lx + ly * ly)
        if s > 0.0:
            sx = p0 * lx / s
            sy = p0 * ly / s
        else:  # axial direction: centre of the cap
            sx, sy = 0.0, 0.0
    else:  # SPHERE
        sx, sy, sz = 0.0, 0.0, 0.0
    return (
        r00 * sx + r01 * sy + r02 * sz + tx,
        r10 * sx + r11 * sy + r12 * sz + ty,
        r20 * sx + r21 * sy + r22 * sz + tz,
        idx,
    )


# --------------------------------------------------------------------------------------------
# GJK
# --------------------------------------------------------------------------------------------
# Simplex scratch S (9, 10): rows 0-3 the simplex, rows 4-7 a backup; columns 0:3 Minkowski
# point w = a - b, 3:6 support point a of A, 6:9 support point b of B, 9 barycentric weight.
# Row 8: S[8, 0] / S[8, 1] the last mesh support vertex of A / B (-1: none), the starting point
# of the next support search (see _mesh_support).


@njit(cache=True)
def _seg_t(ax, ay, az, bx, by, bz):  # type: ignore[no-untyped-def]
    """Parameter of the point of segment [a, b] closest to the origin."""
    ex = bx - ax
    ey = by - ay
    ez = bz - az
    e2 = ex * ex + ey * ey + ez * ez
    if e2 <= 0.0:
        return 0.0
    return _clamp01(-(ax * ex + ay * ey + az * ez) / e2)


@njit(cache=True)
def _edge(ax, ay, az, bx, by, bz):  # type: ignore[no-untyped-def]
    """Parameter ``t`` of the point of segment [a, b] closest to the origin and that point's
    squared norm."""
    t = _seg_t(ax, ay, az, bx, by, bz)
    px = ax + t * (bx - ax)
    py = ay + t * (by - ay)
    pz = az + t * (bz - az)
    return t, px * px + py * py + pz * pz


@njit(cache=True)
def _tri_lambdas(ax, ay, az, bx, by, bz, cx, cy, cz):  # type: ignore[no-untyped-def]
    """Barycentric weights of the point of triangle abc closest to the origin.

    The projection of the origin onto the plane is used when it falls inside (weights from
    sub-triangle areas); otherwise, and whenever an edge is at least as close, the best edge.
    Curved shapes make GJK build slivers with nearly coincident vertices: this formulation never
    returns a point farther than the best edge, so GJK keeps making progress on them."""
    tab, dab = _edge(ax, ay, az, bx, by, bz)
    tac, dac = _edge(ax, ay, az, cx, cy, cz)
    tbc, dbc = _edge(bx, by, bz, cx, cy, cz)
    return _tri_from_edges(ax, ay, az, bx, by, bz, cx, cy, cz, tab, dab, tac, dac, tbc, dbc)


@njit(cache=True)
def _tri_from_edges(  # type: ignore[no-untyped-def]
    ax, ay, az, bx, by, bz, cx, cy, cz, tab, dab, tac, dac, tbc, dbc
):
    """:func:`_tri_lambdas` given its three edges' :func:`_edge` results (ab, ac, bc)."""
    best = dab
    la, lb, lc = 1.0 - tab, tab, 0.0
    if dac < best:
        best = dac
        la, lb, lc = 1.0 - tac, 0.0, tac
    if dbc < best:
        best = dbc
        la, lb, lc = 0.0, 1.0 - tbc, tbc
    abx = bx - ax
    aby = by - ay
    abz = bz - az
    acx = cx - ax
    acy = cy - ay
    acz = cz - az
    nx = aby * acz - abz * acy
    ny = abz * acx - abx * acz
    nz = abx * acy - aby * acx
    n2 = nx * nx + ny * ny + nz * nz
    if n2 > 0.0:
        s = (nx * ax + ny * ay + nz * az) / n2
        px = s * nx
        py = s * ny
        pz = s * nz
        # twice the signed areas of the sub-triangles p-b-c, p-c-a, p-a-b along n
        ux = by - py
        uy = bz - pz
        ux0 = bx - px
        vx0 = cx - px
        vx = cy - py
        vy = cz - pz
        u = nx * (ux * vy - uy * vx) + ny * (uy * vx0 - ux0 * vy) + nz * (ux0 * vx - ux * vx0)
        wx0 = ax - px
        wx = ay - py
        wy = az - pz
        v = nx * (vx * wy - vy * wx) + ny * (vy * wx0 - vx0 * wy) + nz * (vx0 * wx - vx * wx0)
        w = nx * (wx * uy - wy * ux) + ny * (wy * ux0 - wx0 * uy) + nz * (wx0 * ux - wx * ux0)
        if u >= 0.0 and v >= 0.0 and w >= 0.0:
            dd = s * s * n2
            tot = u + v + w
            if dd < best and tot > 0.0:
                return u / tot, v / tot, w / tot
    return la, lb, lc


@njit(cache=True)
def _face_others(l):  # type: ignore[no-untyped-def]
    """The three tetrahedron vertex indices other than ``l``, increasing."""
    if l == 0:
        return 1, 2, 3
    if l == 1:
        return 0, 2, 3
    if l == 2:
        return 0, 1, 3
    return 0, 1, 2


@njit(cache=True)
def _tetra_lambdas(S):  # type: ignore[no-untyped-def]
    """Weights of the point of tetrahedron ``S[0:4]`` closest to the origin into ``S[:, 9]``.
    Returns True (weights untouched) when the origin is strictly inside.

    Every face containing the new vertex ``S[3]`` is evaluated (not only those facing the
    origin): on the slivers that curved shapes produce, the side tests are unreliable, while the
    minimum over the faces is not. The face ``S[0:3]`` (the previous simplex) is only
    side-tested: its closest point is GJK's current ``v``, computed by the same arithmetic in
    the previous step, so it can never give progress -- when it would be the minimum, every
    other face is at least as far and GJK's no-progress exit keeps the previous simplex, as
    it did when this face was evaluated too (bit-identical results, ~12 % faster GJK on go1's
    box-cylinder pairs)."""
    e1x = S[1, 0] - S[0, 0]
    e1y = S[1, 1] - S[0, 1]
    e1z = S[1, 2] - S[0, 2]
    e2x = S[2, 0] - S[0, 0]
    e2y = S[2, 1] - S[0, 1]
    e2z = S[2, 2] - S[0, 2]
    e3x = S[3, 0] - S[0, 0]
    e3y = S[3, 1] - S[0, 1]
    e3z = S[3, 2] - S[0, 2]
    vol = e1x * (e2y * e3z - e2z * e3y) + e1y * (e2z * e3x - e2x * e3z) + e1z * (
        e2x * e3y - e2y * e3x
    )
    l1 = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
    l2 = math.sqrt(e2x * e2x + e2y * e2y + e2z * e2z)
    l3 = math.sqrt(e3x * e3x + e3y * e3y + e3z * e3z)
    # A flatter tetrahedron is never reported as containing the origin: the origin is then
    # within ~1e-10 * size of a face, i.e. the shapes touch and the distance goes below
    # CONTACT_TOL anyway.
    inside = abs(vol) > 1e-10 * l1 * l2 * l3
    # each of the six edges once (every edge borders two faces): same answers as calling
    # _tri_lambdas per face, ~half its segment work (GJK on curved shapes spends most
    # iterations here)
    T = stack_matrix(4, 4)  # T[i, j] (i < j): t of edge ij; T[j, i]: its squared distance
    for i in range(3):
        for j in range(i + 1, 4):
            T[i, j], T[j, i] = _nothrow(
                _edge, S[i, 0], S[i, 1], S[i, 2], S[j, 0], S[j, 1], S[j, 2]
            )
    best = np.inf
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    b3 = 0.0
    for l in range(4):
        i, j, k = _nothrow(_face_others, l)
        if inside:
            ux = S[j, 0] - S[i, 0]
            uy = S[j, 1] - S[i, 1]
            uz = S[j, 2] - S[i, 2]
            vx = S[k, 0] - S[i, 0]
            vy = S[k, 1] - S[i, 1]
            vz = S[k, 2] - S[i, 2]
            nx = uy * vz - uz * vy
            ny = uz * vx - ux * vz
            nz = ux * vy - uy * vx
            so = -(nx * S[i, 0] + ny * S[i, 1] + nz * S[i, 2])
            sl = nx * (S[l, 0] - S[i, 0]) + ny * (S[l, 1] - S[i, 1]) + nz * (S[l, 2] - S[i, 2])
            inside = so * sl > 0.0  # origin on the same side of the face as the 4th vertex
        if l == 3:
            break  # the previous simplex: no progress possible (see the docstring)
        li, lj, lk = _nothrow(
            _tri_from_edges,
            S[i, 0], S[i, 1], S[i, 2], S[j, 0], S[j, 1], S[j, 2], S[k, 0], S[k, 1], S[k, 2],
            T[i, j], T[j, i], T[i, k], T[k, i], T[j, k], T[k, j],
        )
        px = li * S[i, 0] + lj * S[j, 0] + lk * S[k, 0]
        py = li * S[i, 1] + lj * S[j, 1] + lk * S[k, 1]
        pz = li * S[i, 2] + lj * S[j, 2] + lk * S[k, 2]
        dd = px * px + py * py + pz * pz
        if dd < best:
            best = dd
            if l == 0:
                b0, b1, b2, b3 = 0.0, li, lj, lk
            elif l == 1:
                b0, b1, b2, b3 = li, 0.0, lj, lk
            elif l == 2:
                b0, b1, b2, b3 = li, lj, 0.0, lk
            else:
                b0, b1, b2, b3 = li, lj, lk, 0.0
    if inside:
        return True
    S[0, 9] = b0
    S[1, 9] = b1
    S[2, 9] = b2
    S[3, 9] = b3
    return False


@njit(cache=True)
def _compact(S, ns):  # type: ignore[no-untyped-def]
    """Drop simplex vertices of zero weight; returns the new size and the closest point."""
    m = 0
    for i in range(ns):
        if S[i, 9] > 0.0:
            if m != i:
                for c in range(10):
                    S[m, c] = S[i, c]
            m += 1
    if m == 0:
        S[0, 9] = 1.0
        m = 1
    vx = 0.0
    vy = 0.0
    vz = 0.0
    for i in range(m):
        lam = S[i, 9]
        vx += lam * S[i, 0]
        vy += lam * S[i, 1]
        vz += lam * S[i, 2]
    return m, vx, vy, vz


@njit(cache=True)
def _add_point(S, i, ka, PA, va, kb, PB, vb, dx, dy, dz, H):  # type: ignore[no-untyped-def]
    """Row ``i`` of ``S`` := support point of A - B in direction ``d`` (with its parts).
    ``H[8, 0:2]`` holds the support hints of A and B (the GJK scratch layout), updated."""
    ax, ay, az, ha = _nothrow(_support, ka, PA, va, dx, dy, dz, int(H[8, 0]))
    bx, by, bz, hb = _nothrow(_support, kb, PB, vb, -dx, -dy, -dz, int(H[8, 1]))
    H[8, 0] = ha
    H[8, 1] = hb
    S[i, 0] = ax - bx
    S[i, 1] = ay - by
    S[i, 2] = az - bz
    S[i, 3] = ax
    S[i, 4] = ay
    S[i, 5] = az
    S[i, 6] = bx
    S[i, 7] = by
    S[i, 8] = bz
    # keep va and vb alive up to here so that all three arrays are released in one block: the
    # refcount pruning then removes their increfs/decrefs (see "Calling convention")
    return va.shape[0] + vb.shape[0] + H.shape[0]


# --------------------------------------------------------------------------------------------
# Closed-form shortcuts against a cylinder
# --------------------------------------------------------------------------------------------
# GJK converges only linearly on the curved rim and side of a cylinder (measured: ~10
# iterations for go1's box-cylinder pairs, against ~2.4 for box-box), and two of the contacts
# it converges to have a closed form: a single point of the other shape (a box or hull vertex)
# against the cylinder, and a box face against the cylinder. When the simplex's points on the
# other shape show such a feature, _shortcut puts the closed-form pair of points into the
# simplex if it is closer than GJK's current point; GJK then goes on as usual, so its
# termination test (the duality gap) still certifies the distance, and a wrong guess costs one
# comparison.


@njit(cache=True)
def _cyl_closest(P, x, y, z):  # type: ignore[no-untyped-def]
    """Point of the posed cylinder ``P`` (packed as in :func:`_support`) closest to the point
    ``(x, y, z)``, and False when that point is inside the cylinder."""
    p0, p1, _p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz = P
    dx = x - tx
    dy = y - ty
    dz = z - tz
    lx = r00 * dx + r10 * dy + r20 * dz
    ly = r01 * dx + r11 * dy + r21 * dz
    lz = r02 * dx + r12 * dy + r22 * dz
    rho = math.sqrt(lx * lx + ly * ly)
    outside = False
    if rho > p0:
        lx = lx * (p0 / rho)
        ly = ly * (p0 / rho)
        outside = True
    if lz > p1:
        lz = p1
        outside = True
    elif lz < -p1:
        lz = -p1
        outside = True
    return (
        r00 * lx + r01 * ly + r02 * lz + tx,
        r10 * lx + r11 * ly + r12 * lz + ty,
        r20 * lx + r21 * ly + r22 * lz + tz,
        outside,
    )


@njit(cache=True)
def _box_face(P, S, o):  # type: ignore[no-untyped-def]
    """The face of the posed box ``P`` holding the three distinct points ``S[0:3, o:o + 3]``
    (box vertices): ``(k, s)`` for the face ``x_k = s * half_k`` (local frame), or ``k = -1``."""
    _p0, _p1, _p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz = P
    for i in range(3):
        for j in range(i + 1, 3):
            if S[i, o] == S[j, o] and S[i, o + 1] == S[j, o + 1] and S[i, o + 2] == S[j, o + 2]:
                return -1, 0.0
    fk = -1
    fs = 0.0
    for k in range(3):
        s0 = 0.0
        same = True
        for i in range(3):
            dx = S[i, o] - tx
            dy = S[i, o + 1] - ty
            dz = S[i, o + 2] - tz
            if k == 0:
                lk = r00 * dx + r10 * dy + r20 * dz
            elif k == 1:
                lk = r01 * dx + r11 * dy + r21 * dz
            else:
                lk = r02 * dx + r12 * dy + r22 * dz
            sg = 1.0 if lk > 0.0 else -1.0
            if i == 0:
                s0 = sg
            elif sg != s0:
                same = False
        if same:
            fk = k
            fs = s0
    return fk, fs


@njit(cache=True)
def _set_single(S, ax, ay, az, bx, by, bz):  # type: ignore[no-untyped-def]
    """The simplex := the single point ``a - b`` (with its parts), weight 1."""
    S[0, 0] = ax - bx
    S[0, 1] = ay - by
    S[0, 2] = az - bz
    S[0, 3] = ax
    S[0, 4] = ay
    S[0, 5] = az
    S[0, 6] = bx
    S[0, 7] = by
    S[0, 8] = bz
    S[0, 9] = 1.0


@njit(cache=True)
def _shortcut(ka, PA, va, kb, PB, vb, S, ns, vx, vy, vz):  # type: ignore[no-untyped-def]
    """GJK step against a cylinder (exactly one of A and B is one; see "Closed-form
    shortcuts"): the simplex ``S[:ns]`` with closest point ``v`` is replaced by a single closer
    point when its points on the other shape are one point (that point against the cylinder) or
    three vertices of one box face (the cylinder's support point towards that face against the
    face, when it projects inside). Returns the new ``ns`` and closest point."""
    o = 6 if ka == CYLINDER else 3  # columns of the other shape's points
    v2 = vx * vx + vy * vy + vz * vz
    single = True
    for i in range(1, ns):
        if S[i, o] != S[0, o] or S[i, o + 1] != S[0, o + 1] or S[i, o + 2] != S[0, o + 2]:
            single = False
    if single:
        px = S[0, o]
        py = S[0, o + 1]
        pz = S[0, o + 2]
        if kb == CYLINDER:
            qx, qy, qz, ok = _nothrow(_cyl_closest, PB, px, py, pz)
            ax, ay, az, bx, by, bz = px, py, pz, qx, qy, qz
        else:
            qx, qy, qz, ok = _nothrow(_cyl_closest, PA, px, py, pz)
            ax, ay, az, bx, by, bz = qx, qy, qz, px, py, pz
        ex = ax - bx
        ey = ay - by
        ez = az - bz
        if ok and ex * ex + ey * ey + ez * ez < v2:
            _nothrow(_set_single, S, ax, ay, az, bx, by, bz)
            return 1, ex, ey, ez
        return ns, vx, vy, vz
    if ns != 3 or (ka != BOX and kb != BOX):
        return ns, vx, vy, vz
    PX = PA if ka == BOX else PB
    fk, fs = _nothrow(_box_face, PX, S, o)
    if fk < 0:
        return ns, vx, vy, vz
    p0, p1, p2, r00, r01, r02, tx, r10, r11, r12, ty, r20, r21, r22, tz = PX
    if fk == 0:
        nx, ny, nz = fs * r00, fs * r10, fs * r20
    elif fk == 1:
        nx, ny, nz = fs * r01, fs * r11, fs * r21
    else:
        nx, ny, nz = fs * r02, fs * r12, fs * r22
    # the cylinder's point deepest towards the face (outward normal n)
    if ka == BOX:
        qx, qy, qz, _h = _nothrow(_support, kb, PB, vb, -nx, -ny, -nz, -1)
    else:
        qx, qy, qz, _h = _nothrow(_support, ka, PA, va, -nx, -ny, -nz, -1)
    dx = qx - tx
    dy = qy - ty
    dz = qz - tz
    m0 = r00 * dx + r10 * dy + r20 * dz
    m1 = r01 * dx + r11 * dy + r21 * dz
    m2 = r02 * dx + r12 * dy + r22 * dz
    if fk == 0:
        inside = abs(m1) <= p1 and abs(m2) <= p2
        m0 = fs * p0
    elif fk == 1:
        inside = abs(m0) <= p0 and abs(m2) <= p2
        m1 = fs * p1
    else:
        inside = abs(m0) <= p0 and abs(m1) <= p1
        m2 = fs * p2
    if not inside:
        return ns, vx, vy, vz
    # its projection onto the face
    px = r00 * m0 + r01 * m1 + r02 * m2 + tx
    py = r10 * m0 + r11 * m1 + r12 * m2 + ty
    pz = r20 * m0 + r21 * m1 + r22 * m2 + tz
    if ka == BOX:
        ax, ay, az, bx, by, bz = px, py, pz, qx, qy, qz
    else:
        ax, ay, az, bx, by, bz = qx, qy, qz, px, py, pz
    ex = ax - bx
    ey = ay - by
    ez = az - bz
    if ex * ex + ey * ey + ez * ez < v2:
        _nothrow(_set_single, S, ax, ay, az, bx, by, bz)
        return 1, ex, ey, ez
    return ns, vx, vy, vz


@njit(cache=True)
def _gjk(ka, PA, va, kb, PB, vb, S, margin):  # type: ignore[no-untyped-def]
    """GJK distance between the cores. Returns ``(overlap, ns)``; the simplex and its weights
    are left in ``S[:ns]``. ``overlap`` is True when the core distance is below ``CONTACT_TOL``
    (origin inside or on the simplex): EPA must take over.

    With ``margin > 0`` (m) it only decides whether the core distance is below ``margin``: it
    returns ``overlap`` True as soon as the simplex comes within ``margin`` of the origin (an
    upper bound of the distance) and False as soon as a support plane certifies a distance of
    at least ``margin`` (a lower bound); the simplex is then not the closest one."""
    # initial direction: between the shapes' centres (a mesh's params hold its centre)
    vx = PB[6] - PA[6]
    vy = PB[10] - PA[10]
    vz = PB[14] - PA[14]
    if kb == MESH:
        vx += PB[3] * PB[0] + PB[4] * PB[1] + PB[5] * PB[2]
        vy += PB[7] * PB[0] + PB[8] * PB[1] + PB[9] * PB[2]
        vz += PB[11] * PB[0] + PB[12] * PB[1] + PB[13] * PB[2]
    if ka == MESH:
        vx -= PA[3] * PA[0] + PA[4] * PA[1] + PA[5] * PA[2]
        vy -= PA[7] * PA[0] + PA[8] * PA[1] + PA[9] * PA[2]
        vz -= PA[11] * PA[0] + PA[12] * PA[1] + PA[13] * PA[2]
    if vx * vx + vy * vy + vz * vz < 1e-24:
        vx, vy, vz = 1.0, 0.0, 0.0
    _nothrow(_add_point, S, 0, ka, PA, va, kb, PB, vb, vx, vy, vz, S)
    S[0, 9] = 1.0
    ns = 1
    vx = S[0, 0]
    vy = S[0, 1]
    vz = S[0, 2]
    lim = max(CONTACT_TOL, margin)
    for _ in range(GJK_MAX_ITERATIONS):
        dist2 = vx * vx + vy * vy + vz * vz
        if dist2 <= lim * lim:
            return True, ns
        _nothrow(_add_point, S, ns, ka, PA, va, kb, PB, vb, -vx, -vy, -vz, S)
        wx = S[ns, 0]
        wy = S[ns, 1]
        wz = S[ns, 2]
        dist = math.sqrt(dist2)
        vw = vx * wx + vy * wy + vz * wz
        if margin > 0.0 and vw >= margin * dist:
            return False, ns  # the plane through w normal to v separates by >= margin
        gap = dist2 - vw
        if gap <= dist * max(GJK_ABS_TOL, GJK_REL_TOL * dist):
            break  # v is within tolerance of the closest point
        dup = False
        for i in range(ns):
            if S[i, 0] == wx and S[i, 1] == wy and S[i, 2] == wz:
                dup = True
        if dup:
            break
        for i in range(ns):  # back up the current simplex (rows 4-7)
            for c in range(10):
                S[4 + i, c] = S[i, c]
        ns_old = ns
        ns += 1
        if ns == 2:
            t = _nothrow(_seg_t, S[0, 0], S[0, 1], S[0, 2], S[1, 0], S[1, 1], S[1, 2])
            S[0, 9] = 1.0 - t
            S[1, 9] = t
        elif ns == 3:
            la, lb, lc = _nothrow(
                _tri_lambdas,
                S[0, 0], S[0, 1], S[0, 2], S[1, 0], S[1, 1], S[1, 2], S[2, 0], S[2, 1], S[2, 2],
            )
            S[0, 9] = la
            S[1, 9] = lb
            S[2, 9] = lc
        elif _nothrow(_tetra_lambdas, S):
            return True, 4
        ns, nvx, nvy, nvz = _nothrow(_compact, S, ns)
        if nvx * nvx + nvy * nvy + nvz * nvz >= dist2:
            # no progress (round-off): keep the previous simplex, whose point is the closer
            for i in range(ns_old):
                for c in range(10):
                    S[i, c] = S[4 + i, c]
            ns = ns_old
            break
        vx = nvx
        vy = nvy
        vz = nvz
        if (ka == CYLINDER) != (kb == CYLINDER):  # one cylinder (not two: no call overhead)
            ns, vx, vy, vz = _nothrow(_shortcut, ka, PA, va, kb, PB, vb, S, ns, vx, vy, vz)
    if vx * vx + vy * vy + vz * vz <= lim * lim:
        return True, ns
    return False, ns


