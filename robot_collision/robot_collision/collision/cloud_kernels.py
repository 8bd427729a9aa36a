"""Compiled robot-link-versus-point-cloud validity test used by the validity kernel.

The cloud of world object ``o`` lives in ``WorldArrays.cloud_f`` / ``cloud_i`` at the offsets
``WorldArrays.cloud[o]`` (see :mod:`robot_collision.geometry.cloud_index`); its pose is
``WorldArrays.pose[o]``. Link shape poses ``SP`` come from ``kernels.link_shape_poses`` (spheres:
centre only).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.cloud_index import (
    F_RADIUS,
    cloud_shape_hits,
    cloud_sphere_hits,
    cloud_sphere_maybe,
    rigid_inverse_mul,
    shape_aux,
)
from ..geometry.shapes import SPHERE

__all__ = ["cloud_link_hits"]


@njit(cache=True, boundscheck=False)
def cloud_link_hits(  # type: ignore[no-untyped-def]
    SP, l, link_start, kind, params, vstart, vcount, verts, cf, ci, fo, io, wpose, o, pad
):
    """True when a shape of link ``l`` (poses ``SP``, base frame) comes closer than ``pad`` (m)
    to the cloud of world object ``o``."""
    Tc = wpose[o]
    hit = False
    Tl = np.empty((0, 0))
    aux = np.empty(0)
    scratch = np.empty((0, 0))
    for s in range(link_start[l], link_start[l + 1]):
        # the shape's reference point in the cloud frame
        dx = SP[s, 0, 3] - Tc[0, 3]
        dy = SP[s, 1, 3] - Tc[1, 3]
        dz = SP[s, 2, 3] - Tc[2, 3]
        x = Tc[0, 0] * dx + Tc[1, 0] * dy + Tc[2, 0] * dz
        y = Tc[0, 1] * dx + Tc[1, 1] * dy + Tc[2, 1] * dz
        z = Tc[0, 2] * dx + Tc[1, 2] * dy + Tc[2, 2] * dz
        if kind[s] == SPHERE:
            if cloud_sphere_hits(cf, ci, fo, io, x, y, z, params[s, 0] + pad):
                hit = True
                break
            continue
        if Tl.shape[0] == 0:
            Tl = np.empty((4, 4))
            aux = np.empty(7)
            scratch = np.empty((8, 4))
        v = verts[vstart[s] : vstart[s] + vcount[s]]
        shape_aux(kind[s], params[s], v, aux)
        # the ball about the shape's origin that encloses it decides most shapes at once
        m = cloud_sphere_maybe(cf, ci, fo, io, x, y, z, aux[6] + pad)
        if m == 0:
            continue
        rigid_inverse_mul(Tc, SP[s], Tl)
        if cloud_shape_hits(cf, ci, fo, io, kind[s], params[s], Tl, v, aux,
                            pad + cf[fo + F_RADIUS], scratch):
            hit = True
            break
    return hit
