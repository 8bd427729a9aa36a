"""Node processes give large freed buffers back to the operating system.

A node takes every message as serialized bytes (:mod:`robot_collision.ros.intake`); an
oversized one is refused, but its bytes were allocated first (by the middleware and by rclpy's
copy). glibc's malloc serves a large block with its own ``mmap`` (returned to the system when
freed) only above a threshold that it *raises* to the size of each such block freed, up to
32 MiB: after a burst of 16 MB messages every later one comes from the heap, which keeps the
pages. Measured (one subscriber, 20 JointStates of 10⁶ names then normal traffic): private
memory 196 MB afterwards, 96 MB with the threshold fixed at 1 MiB; the rest is the
middleware's own buffers. So node processes fix it (:func:`release_large_allocations`, called
by :func:`robot_collision.ros.bringup.run_nodes`).
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["LARGE_ALLOCATION", "release_large_allocations"]

LARGE_ALLOCATION = 1 << 20
"""Bytes from which an allocation gets its own mapping, returned to the system when freed."""

_M_MMAP_THRESHOLD = -3  # glibc <malloc.h>


def release_large_allocations(threshold: int = LARGE_ALLOCATION) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process (no dynamic raise);
    True when applied (Linux with glibc), False elsewhere (nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
