"""Compiled robot-link-versus-point-cloud validity test used by the validity kernel.

The cloud of world object ``o`` lives in ``WorldArrays.cloud_f`` / ``cloud_i`` at the offsets
``WorldArrays.cloud[o]`` (see :mod:`robot_collision.geometry.cloud_index`); its pose is
``WorldArrays.pose[o]``. Link shape poses ``SP`` come from ``kernels.link_shape_poses`` (spheres:
centre only).

Performance notes (see :mod:`robot_collision.jitcall`): :func:`cloud_link_hits` runs once per
(link, cloud) pair that the link's bounding sphere does not clear, i.e. on most links of a
configuration near a sensed scene. It has a single exit, releases its arrays in one block and
calls its helpers through ``inline_call_or`` / ``call_or``, so that numba prunes the reference
counting of its ~10 arrays (measured: ~150 ns per call otherwise). Spheres are decided by the
index's constant-time grid test inlined here; the rest (undecided spheres, other shape kinds)
walk the hierarchy in non-inlined helpers. A helper that fails counts as a collision.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.cloud_index import (
    F_RADIUS,
    cloud_shape_hits,
    cloud_sphere_exact,
    cloud_sphere_maybe,
    rigid_inverse_mul,
    shape_aux,
)
from ..geometry.shapes import SPHERE
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or

__all__ = ["cloud_link_hits"]


@njit(cache=True, boundscheck=False)
def _general_hits(SP, s, kind, params, vstart, vcount, verts, cf, ci, fo, io, Tc, pad, x, y, z):  # type: ignore[no-untyped-def]
    """Shape ``s`` (not a sphere; full pose ``SP[s]``) against the cloud posed by ``Tc``; ``(x,
    y, z)`` is the shape's origin in the cloud frame."""
    v = verts[vstart[s] : vstart[s] + vcount[s]]
    aux = np.empty(7)
    shape_aux(kind[s], params[s], v, aux)
    # the ball about the shape's origin that encloses it decides most shapes at once
    if cloud_sphere_maybe(cf, ci, fo, io, x, y, z, aux[6] + pad) == 0:
        return False
    Tl = np.empty((4, 4))
    rigid_inverse_mul(Tc, SP[s], Tl)
    return cloud_shape_hits(
        cf, ci, fo, io, kind[s], params[s], Tl, v, aux, pad + cf[fo + F_RADIUS], np.empty((8, 4))
    )


@njit(cache=True, fastmath=True, boundscheck=False)
def cloud_link_hits(  # type: ignore[no-untyped-def]
    SP, l, link_start, kind, params, vstart, vcount, verts, cf, ci, fo, io, wpose, o, pad
):
    """True when a shape of link ``l`` (poses ``SP``, base frame) comes closer than ``pad`` (m)
    to the cloud of world object ``o``."""
    t0, t1, t2 = wpose[o, 0, 3], wpose[o, 1, 3], wpose[o, 2, 3]
    r00, r01, r02 = wpose[o, 0, 0], wpose[o, 0, 1], wpose[o, 0, 2]
    r10, r11, r12 = wpose[o, 1, 0], wpose[o, 1, 1], wpose[o, 1, 2]
    r20, r21, r22 = wpose[o, 2, 0], wpose[o, 2, 1], wpose[o, 2, 2]
    hit = False
    for s in range(link_start[l], link_start[l + 1]):
        # the shape's origin in the cloud frame
        dx = SP[s, 0, 3] - t0
        dy = SP[s, 1, 3] - t1
        dz = SP[s, 2, 3] - t2
        x = r00 * dx + r10 * dy + r20 * dz
        y = r01 * dx + r11 * dy + r21 * dz
        z = r02 * dx + r12 * dy + r22 * dz
        if kind[s] == SPHERE:
            r = params[s, 0] + pad
            m = _inline_call_or(cloud_sphere_maybe, -1, cf, ci, fo, io, x, y, z, r)
            if m == 1 or (
                m < 0 and _call_or(cloud_sphere_exact, True, cf, ci, fo, io, x, y, z, r)
            ):
                hit = True
                break
        elif _call_or(
            _general_hits, True, SP, s, kind, params, vstart, vcount, verts, cf, ci, fo, io,
            wpose[o], pad, x, y, z,
        ):
            hit = True
            break
    # final use of every array (released in this one block, see the module docstring)
    held = (
        SP.shape[0] + link_start.shape[0] + kind.shape[0] + params.shape[0] + vstart.shape[0]
        + vcount.shape[0] + verts.shape[0] + cf.shape[0] + ci.shape[0] + wpose.shape[0]
    )
    return hit and held >= 0
