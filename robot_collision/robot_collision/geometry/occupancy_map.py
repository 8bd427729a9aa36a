"""Seen surfaces persist: successive depth clouds fused into a voxel map with decay.

:class:`FusedOccupancy` keeps the voxels (side ``resolution`` m, a lattice fixed in the frame
the points are given in, normally the robot base frame) in which a cloud had a point, each
with the time it was last seen occupied. A voxel is dropped

- ``persistence`` s after it was last seen (time decay), or
- earlier, when a newer cloud's ray passes through it (free-space carving): the segment from
  the sensor origin to ``carve_stop`` before the ray's hit is sampled at a quarter voxel,
  and every stored voxel containing a sample that was last seen before that cloud is cleared.
  A voxel a ray only grazes is cleared although part of it may still hold something: such a
  remainder is in view of the same cloud (or hidden behind what the cloud sees, which stays),
  and the cloud's own points re-mark their voxels after carving (same stamp: occupied wins).

The map holds at most ``max_voxels`` voxels: beyond, the ones seen longest ago are dropped
(the newest observations are the ones a moving scene needs). Memory: two arrays, a sorted
int64 key and a float64 time per voxel.

Each voxel is an obstacle of radius half its diagonal around its centre
(:class:`~.point_cloud.OccupancyMap`): it covers the whole voxel, so a point anywhere in it
is covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import ConfigurationError

__all__ = ["FusedOccupancy", "FusionOptions"]

_BITS = 21
_OFFSET = 1 << (_BITS - 1)  # keys span +-2**20 voxels per axis (+-21 km at 2 cm)


@dataclass(frozen=True)
class FusionOptions:
    """Options of :class:`FusedOccupancy`.

    ``resolution``: voxel side (m). ``persistence``: how long (s) a voxel stays occupied after
    it was last seen. ``max_voxels``: memory cap (oldest dropped first). ``carve``: clear the
    voxels newer rays pass through. ``carve_stop``: rays carve only up to this far (m) before
    their hit (at least one voxel diagonal is always kept)."""

    resolution: float = 0.02
    persistence: float = 5.0
    max_voxels: int = 500_000
    carve: bool = True
    carve_stop: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.resolution) and self.resolution > 0.0):
            raise ConfigurationError(
                f"FusionOptions.resolution must be a positive number of metres, got "
                f"{self.resolution!r}")
        if not (math.isfinite(self.persistence) and self.persistence >= 0.0):
            raise ConfigurationError(
                f"FusionOptions.persistence must be >= 0 s, got {self.persistence!r}")
        if self.max_voxels < 1:
            raise ConfigurationError(
                f"FusionOptions.max_voxels must be >= 1, got {self.max_voxels!r}")
        if not (math.isfinite(self.carve_stop) and self.carve_stop >= 0.0):
            raise ConfigurationError(
                f"FusionOptions.carve_stop must be >= 0 m, got {self.carve_stop!r}")


def _keys(P: NDArray[np.float64], resolution: float) -> NDArray[np.int64]:
    """Packed int64 voxel keys of the points ``P`` (N, 3)."""
    k = np.floor(P / resolution).astype(np.int64) + _OFFSET
    k = np.clip(k, 0, (1 << _BITS) - 1)
    out: NDArray[np.int64] = (k[:, 0] << (2 * _BITS)) | (k[:, 1] << _BITS) | k[:, 2]
    return out


def _centres(keys: NDArray[np.int64], resolution: float) -> NDArray[np.float64]:
    mask = (1 << _BITS) - 1
    k = np.stack([(keys >> (2 * _BITS)) & mask, (keys >> _BITS) & mask, keys & mask], axis=1)
    out: NDArray[np.float64] = (k - _OFFSET + 0.5) * resolution
    return out


@njit(cache=True, nogil=True, boundscheck=False)
def _carved(keys, times, origin, P, stamp, res, keep_back):  # type: ignore[no-untyped-def]
    """(len(keys),) bool: stored voxels (sorted ``keys``, last seen ``times``) older than
    ``stamp`` that a ray from ``origin`` to a point of ``P`` passes through, up to
    ``keep_back`` m before the point (the segment sampled at res / 4)."""
    out = np.zeros(keys.shape[0], dtype=np.bool_)
    if keys.shape[0] == 0:
        return out
    step = 0.25 * res
    mask = (1 << _BITS) - 1
    for i in range(P.shape[0]):
        d0 = P[i, 0] - origin[0]
        d1 = P[i, 1] - origin[1]
        d2 = P[i, 2] - origin[2]
        L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        reach = L - keep_back
        if reach <= 0.0:
            continue
        n = int(reach / step) + 1
        last = np.int64(-1)
        for j in range(n + 1):
            t = min(j * step, reach) / L
            k0 = np.int64(math.floor((origin[0] + t * d0) / res)) + _OFFSET
            k1 = np.int64(math.floor((origin[1] + t * d1) / res)) + _OFFSET
            k2 = np.int64(math.floor((origin[2] + t * d2) / res)) + _OFFSET
            if k0 < 0 or k1 < 0 or k2 < 0 or k0 > mask or k1 > mask or k2 > mask:
                continue
            key = (k0 << (2 * _BITS)) | (k1 << _BITS) | k2
            if key == last:
                continue
            last = key
            a = np.searchsorted(keys, key)
            if a < keys.shape[0] and keys[a] == key and times[a] < stamp:
                out[a] = True
    return out


class FusedOccupancy:
    """Voxels seen occupied within the last ``persistence`` s (see the module docstring).
    Not thread-safe: one owner feeds and reads it."""

    def __init__(self, options: Optional[FusionOptions] = None) -> None:
        self.options = options or FusionOptions()
        self._keys = np.zeros(0, dtype=np.int64)
        self._times = np.zeros(0)

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        self._keys = np.zeros(0, dtype=np.int64)
        self._times = np.zeros(0)

    def insert(self, points: NDArray[np.float64], stamp: float,
               origin: Optional[NDArray[np.float64]] = None) -> None:
        """Fuse one cloud: ``points`` (N, 3) m, measured at ``stamp`` s from ``origin`` (3,)
        (the sensor's position, same frame; None: no carving). Voxels older than
        ``persistence`` before ``stamp`` are dropped first."""
        o = self.options
        P = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        P = P[np.isfinite(P).all(axis=1)]
        keep = self._times >= stamp - o.persistence
        keys, times = self._keys[keep], self._times[keep]
        if o.carve and origin is not None and len(P) and len(keys):
            back = max(o.carve_stop, math.sqrt(3.0) * o.resolution)
            gone = _carved(keys, times, np.asarray(origin, dtype=np.float64), P, float(stamp),
                           o.resolution, back)
            keys, times = keys[~gone], times[~gone]
        new = np.unique(_keys(P, o.resolution))
        allk = np.concatenate([keys, new])
        allt = np.concatenate([times, np.full(len(new), float(stamp))])
        order = np.lexsort((-allt, allk))  # by key, newest first
        allk, allt = allk[order], allt[order]
        first = np.ones(len(allk), dtype=bool)
        first[1:] = allk[1:] != allk[:-1]
        keys, times = allk[first], allt[first]
        if len(keys) > o.max_voxels:
            cut = np.sort(np.argsort(-times, kind="stable")[:o.max_voxels])
            keys, times = keys[cut], times[cut]
        self._keys, self._times = keys, times

    def voxels(self, now: float, seen_before: Optional[float] = None
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(centres (M, 3) m, last seen (M,) s) of the voxels still occupied at ``now`` (seen
        within ``persistence``); with ``seen_before``, only those last seen before it."""
        ok = self._times >= now - self.options.persistence
        if seen_before is not None:
            ok &= self._times < seen_before
        return _centres(self._keys[ok], self.options.resolution), self._times[ok]
