"""Concatenating arrays without holding the interpreter's lock for the large copies.

A sensed cloud's indexes are several MB; packing them into a scene (:func:`.scene.world_arrays`,
:func:`.scene_packing.pack_scene`) with
``np.concatenate`` held the lock for ~1 ms per copy in a node's cloud worker thread, and the
velocity filter's control thread waited for it (``benchmarks/run.py cloud_delivery``). numpy does
not release the lock for these copies; the compiled copy below does (``nogil``), so only the
small parts are copied under the lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import DTypeLike, NDArray

__all__ = ["NOGIL_MIN_ELEMENTS", "concatenate"]

NOGIL_MIN_ELEMENTS = 1 << 15
"""Parts of at least this many elements (256 kB of float64) are copied without the lock;
smaller ones by numpy (a compiled call's dispatch costs more than their copy)."""


@njit(cache=True, nogil=True, boundscheck=False)
def _copy_into(out, start, src):  # type: ignore[no-untyped-def]
    """``out[start:start + len(src)] = src`` (1-D, same dtype)."""
    for i in range(src.shape[0]):
        out[start + i] = src[i]


def concatenate(parts: Sequence[NDArray[Any]], dtype: DTypeLike) -> NDArray[Any]:
    """``np.concatenate([p.ravel() for p in parts], dtype=dtype)``: the same array (values cast
    as numpy casts them), with every contiguous part of ``dtype`` and at least
    :data:`NOGIL_MIN_ELEMENTS` elements copied without the interpreter's lock."""
    dt = np.dtype(dtype)
    flat = [np.asarray(p).reshape(-1) for p in parts]
    out = np.empty(sum(p.shape[0] for p in flat), dtype=dt)
    k = 0
    for p in flat:
        n = p.shape[0]
        if n >= NOGIL_MIN_ELEMENTS and p.dtype == dt and p.flags.c_contiguous:
            _copy_into(out, k, p)
        elif n:
            out[k:k + n] = p
        k += n
    return out
