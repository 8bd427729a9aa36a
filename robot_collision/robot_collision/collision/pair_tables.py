"""Joint-space distance tables for self pairs that only one or two joints move apart (issue 22).

A link pair such as a wrist link and the hand (the Panda's link5 and link7/hand/fingers) is
near in every configuration: bounding spheres and sphere covers cannot tell it clear, and the
exact narrow phase (GJK on two hulls) runs on every check. When the pair's relative pose depends
on at most two revolute joints ``j1``, ``j2`` (one link is the other's ancestor and the path
between them has one or two moving joints), its signed distance ``d(θ1, θ2)`` is a function on
the torus. At load it is computed (the kernels' own exact narrow phase) at the centres of an
``N x N`` grid of cells of half width ``h = π / N`` rad; inside a cell the descendant link's
points move by at most ``δ = ρ1 h + ρ2 h`` relative to the ancestor (``ρk`` bounds the distance
of its points from joint k's axis: a rotation by ``ε`` moves a point at distance ``ρ`` by at most
``ρ ε``), and the signed distance of two convex sets changes by at most the largest
displacement. So at a configuration in the cell:

- ``d_c - δ - TABLE_TOL >= pad``: the pair is certainly clear;
- ``d_c + δ + TABLE_TOL < pad``: certainly colliding (EPA's depth is a lower bound);
- otherwise the exact narrow phase runs as without the table.

The joint angles are read back from the link poses (``Rot = O^T R_parent^T R_child``, angle
from its trace and skew part), so the kernels need no configuration; the validity kernel reads
each joint's angle once per configuration (tables sharing joints, such as the Panda's four wrist
tables over two joints, reuse it: mesh Panda, 0.70 -> 0.62 us per check). ``TABLE_TOL`` covers GJK's
distance tolerance and round-off. Pairs with prismatic or mimic joints in between, or more than
two moving joints, get no table.

Layout (per evaluated self pair k): ``tab_i[k]`` = (data offset or -1, N1, N2, parent link of
j1, child link of j1, parent link of j2, child link of j2 (-1 if none), 0); ``tab_f[k]`` =
(O1 rotation row-major (9), axis u1 (3), O2 rotation (9), axis u2 (3), δ (m), 0, 0, 0);
``data`` the tables one after the other, row-major over (θ1, θ2) cells.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from ..geometry.distance import shape_distance
from ..model.kinematics import FIXED, REVOLUTE, KinematicArrays, forward_kinematics_batch
from .scene import RobotArrays

__all__ = ["TABLE_CELLS", "TABLE_TOL", "PairTables", "pair_tables", "no_pair_tables"]

TABLE_CELLS = 128
"""Cells per joint (``N``): half width ``π / N`` rad."""
TABLE_TOL = 1e-6
"""Metres of slack on both verdicts of a table (GJK tolerance, round-off)."""
TAB_I = 8
TAB_F = 28


class PairTables(NamedTuple):
    """Tables of the evaluated self pairs (see the module docstring)."""

    tab_i: NDArray[np.int64]  # (K, 8)
    tab_f: NDArray[np.float64]  # (K, 28)
    data: NDArray[np.float64]  # (D,) m


def no_pair_tables(K: int) -> PairTables:
    """Tables for ``K`` pairs, none in use."""
    ti = np.zeros((K, TAB_I), dtype=np.int64)
    ti[:, 0] = -1
    return PairTables(ti, np.zeros((K, TAB_F)), np.zeros(0))


def _chain(kin: KinematicArrays, a: int, b: int) -> tuple[int, int, list[int]] | None:
    """(ancestor, descendant, moving joints' child links from the ancestor down) or None."""
    parent = np.asarray(kin.parent)
    for lo, hi in ((a, b), (b, a)):
        moving: list[int] = []
        x = hi
        while x != lo and x > 0:
            if kin.jtype[x] != FIXED:
                moving.append(x)
            x = int(parent[x])
        if x == lo:
            return lo, hi, moving[::-1]
    return None


_CACHE: dict[str, tuple[NDArray[np.float64], float]] = {}


_GRID_CHUNKS = 64


@njit(cache=True, parallel=True)
def _grid_distances(Trel, lo_shapes, hi_shapes, kind, params, local, vstart, vcount, verts):  # type: ignore[no-untyped-def]
    """(G,) smallest signed distance between the ancestor's shapes (its frame) and the
    descendant's posed by ``Trel[g]`` (G, 4, 4) in that frame (cells in parallel chunks)."""
    G = Trel.shape[0]
    out = np.empty(G)
    for c in prange(_GRID_CHUNKS):
        wa = np.empty(3)
        wb = np.empty(3)
        n = np.empty(3)
        for g in range(c * G // _GRID_CHUNKS, (c + 1) * G // _GRID_CHUNKS):
            best = np.inf
            for s in lo_shapes:
                for t in hi_shapes:
                    Tb = Trel[g] @ local[t]
                    d = shape_distance(kind[s], params[s], local[s],
                                       verts[vstart[s]:vstart[s] + vcount[s]], kind[t],
                                       params[t], Tb, verts[vstart[t]:vstart[t] + vcount[t]],
                                       wa, wb, n)
                    if d < best:
                        best = d
            out[g] = best
    return out


def _chain_arrays(kin: KinematicArrays, lo: int, hi: int,
                  moving: list[int]) -> tuple[KinematicArrays, list[int]]:
    """The chain ``lo`` -> ``hi`` as a tree of its own: root ``lo`` (identity pose), then the
    path's links, the moving joints driven by angles ``q[0]`` (``moving[0]``) and ``q[1]`` (the
    joint angle itself: scale 1, offset 0). Its forward kinematics gives ``T_lo^-1 T_x`` for
    each path link ``x``. Also returns the chain's links (robot link indices, ``lo`` first)."""
    parent = np.asarray(kin.parent)
    path: list[int] = []
    x = hi
    while x != lo:
        path.append(x)
        x = int(parent[x])
    links = [lo, *path[::-1]]
    L = len(links)
    jtype = np.full(L, FIXED, dtype=np.int64)
    qidx = np.full(L, -1, dtype=np.int64)
    origin = np.empty((L, 4, 4))
    origin[0] = np.eye(4)
    axis = np.zeros((L, 3))
    for i, x in enumerate(links[1:], 1):
        origin[i] = kin.origin[x]
        if x in moving:
            jtype[i] = REVOLUTE
            qidx[i] = moving.index(x)
            axis[i] = kin.axis[x]
    chain = KinematicArrays(np.arange(-1, L - 1, dtype=np.int64), jtype, origin, axis, qidx,
                            np.ones(L), np.zeros(L))
    return chain, links


def pair_tables(kin: KinematicArrays, rs: RobotArrays, self_a: NDArray[np.int64],
                self_b: NDArray[np.int64], cells: int = TABLE_CELLS) -> PairTables:
    """The :class:`PairTables` of the evaluated self pairs ``(self_a[k], self_b[k])``."""
    K = len(self_a)
    tabs = no_pair_tables(K)
    ti, tf = tabs.tab_i, tabs.tab_f
    chunks: list[NDArray[np.float64]] = []
    off = 0
    qidx = np.asarray(kin.qidx)
    ls = np.asarray(rs.link_start)
    for k in range(K):
        ch = _chain(kin, int(self_a[k]), int(self_b[k]))
        if ch is None:
            continue
        lo, hi, moving = ch
        if not 1 <= len(moving) <= 2:
            continue
        ok = True
        for c in moving:
            u = np.asarray(kin.axis[c])
            if (kin.jtype[c] != REVOLUTE or abs(np.linalg.norm(u) - 1.0) > 1e-12
                    or kin.scale[c] == 0 or np.count_nonzero(qidx == qidx[c]) != 1):
                ok = False
        lo_sh = np.arange(ls[lo], ls[lo + 1])
        hi_sh = np.arange(ls[hi], ls[hi + 1])
        if not ok or len(lo_sh) == 0 or len(hi_sh) == 0:
            continue
        N1 = cells
        N2 = cells if len(moving) == 2 else 1
        centres = np.linspace(-np.pi, np.pi, cells, endpoint=False) + np.pi / cells
        # T_lo^-1 T_hi at every cell centre from the chain alone (no whole-robot FK: a
        # TIAGo's 91 tables took 5.6 s of FK and inverses)
        chain, links = _chain_arrays(kin, lo, hi, moving)
        grid = np.stack(np.meshgrid(centres, centres[:N2], indexing="ij"), -1).reshape(-1, 2)
        poses = forward_kinematics_batch(grid, *chain)
        Trel = np.ascontiguousarray(poses[:, -1])
        key = hashlib.sha1(b"".join(np.ascontiguousarray(x).tobytes() for x in (
            Trel[:: max(1, len(Trel) // 64)], rs.kind[lo_sh], rs.kind[hi_sh], rs.params[lo_sh],
            rs.params[hi_sh], rs.local[lo_sh], rs.local[hi_sh], np.int64(len(Trel)),
            rs.verts[rs.vstart[lo_sh[0]]:rs.vstart[hi_sh[-1]] + rs.vcount[hi_sh[-1]]],
        ))).hexdigest()
        # ρ: distance of the descendant's points from each joint's frame origin (on its axis),
        # from the first cell's poses (the joint's own rotation leaves its frame origin fixed)
        T0 = poses[0]
        first, last = links.index(moving[0]), links.index(moving[-1])
        Xc = np.linalg.inv(T0[last]) @ T0[-1]  # the last moving joint's frame -> the descendant's
        rad = float(rs.bound_radius[hi])
        rho_last = float(np.linalg.norm(Xc[:3, :3] @ rs.bound_center[hi] + Xc[:3, 3])) + rad
        if len(moving) == 2:
            rho_first = float(np.linalg.norm(T0[last, :3, 3] - T0[first, :3, 3])) + rho_last
            delta = (rho_first + rho_last) * np.pi / cells
        else:
            delta = rho_last * np.pi / cells
        got = _CACHE.get(key)
        if got is None:
            d = _grid_distances(Trel, lo_sh, hi_sh, rs.kind, rs.params, rs.local, rs.vstart,
                                rs.vcount, rs.verts)
            if not np.all(np.isfinite(d)):
                continue
            got = (d, delta)
            _CACHE[key] = got
        ti[k] = (off, N1, N2, int(kin.parent[moving[0]]), moving[0],
                 int(kin.parent[moving[-1]]) if N2 > 1 else -1, moving[-1] if N2 > 1 else -1, 0)
        for j, c in enumerate(moving):
            tf[k, 12 * j:12 * j + 9] = np.asarray(kin.origin[c])[:3, :3].reshape(9)
            tf[k, 12 * j + 9:12 * j + 12] = kin.axis[c]
        tf[k, 24] = delta
        chunks.append(got[0])
        off += len(got[0])
    data = np.concatenate(chunks) if chunks else np.zeros(0)
    return PairTables(ti, tf, data)
