"""The packed scene: ``(kin, rs, ws, pr)`` (:mod:`.scene`, :mod:`robot_collision.model.kinematics`)
flattened into two arrays ``F`` (float64) and ``I`` (int64) and unpacked again inside compiled
code, so that a call from Python pays for unboxing 2 arrays instead of ~30 (the dominant cost of
a single check otherwise). The packed entry points of :mod:`.kernels` and the planner's kernels
take ``(F, I)``."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..jitcall import borrowed_view, flat_view
from ..model.kinematics import KinematicArrays
from .array_copy import concatenate
from .scene import PairArrays, RobotArrays, WorldArrays

__all__ = ["pack_scene", "unpack_scene", "unpack_scene_borrowed"]

_FIELDS = (
    # (tuple index, field index, ndim, is_int)
    (0, 0, 1, True),
    (0, 1, 1, True),
    (0, 2, 3, False),
    (0, 3, 2, False),
    (0, 4, 1, True),
    (0, 5, 1, False),
    (0, 6, 1, False),
    (1, 0, 1, True),
    (1, 1, 1, True),
    (1, 2, 2, False),
    (1, 3, 3, False),
    (1, 4, 1, True),
    (1, 5, 1, True),
    (1, 6, 2, False),
    (1, 7, 1, True),
    (1, 8, 2, False),
    (1, 9, 1, False),
    (2, 0, 1, True),
    (2, 1, 2, False),
    (2, 2, 3, False),
    (2, 3, 1, True),
    (2, 4, 1, True),
    (2, 5, 2, False),
    (2, 6, 2, False),
    (3, 0, 1, True),
    (3, 1, 1, True),
    (3, 2, 1, False),
    (3, 3, 2, False),
    # appended after the pairs so that the indices above stay put
    (2, 7, 2, True),
    (2, 8, 1, False),
    (2, 9, 1, True),
    (1, 10, 2, True),
    (1, 11, 2, False),
    (3, 4, 2, True),
    (3, 5, 2, False),
    (3, 6, 1, False),
    (3, 7, 2, True),
)
# the header index of PairArrays.world_skip (CollisionChecker rewrites it in a packed scene)
WORLD_SKIP_FIELD = 36
_HEADER = 4 * len(_FIELDS)


def pack_scene(kin, rs, ws, pr):  # type: ignore[no-untyped-def]
    """Flatten ``(kin, rs, ws, pr)`` into ``(F float64 (k,), I int64 (j,))`` for the packed
    kernels; ``I`` starts with a header of (offset, dim0, dim1, dim2) per field."""
    parts = (kin, rs, ws, pr)
    # (the header as a Python list and one concatenation per dtype: ~25 us a scene instead of
    # ~50 with numpy slice assignments and casts per field)
    header = [0] * _HEADER
    fl: list[np.ndarray] = []
    il: list[np.ndarray] = []
    foff = 0
    ioff = _HEADER
    for k, (t, f, ndim, is_int) in enumerate(_FIELDS):
        arr = np.asarray(parts[t][f])
        shape = arr.shape
        assert len(shape) == ndim
        if is_int:
            header[4 * k] = ioff
            il.append(arr.ravel())
            ioff += arr.size
        else:
            header[4 * k] = foff
            fl.append(arr.ravel())
            foff += arr.size
        for d in range(3):
            header[4 * k + 1 + d] = shape[d] if d < ndim else 1
    # (a cloud's indexes are MB: copied without the interpreter's lock, see array_copy)
    F = concatenate(fl, np.float64)
    I = concatenate([np.array(header, dtype=np.int64), *il], np.int64)
    return F, I


@njit(cache=True, inline="always")
def _i1(I, k):  # type: ignore[no-untyped-def]
    return flat_view(I, I[4 * k], (I[4 * k + 1],))


@njit(cache=True, inline="always")
def _i2(I, k):  # type: ignore[no-untyped-def]
    return flat_view(I, I[4 * k], (I[4 * k + 1], I[4 * k + 2]))


@njit(cache=True, inline="always")
def _f1(F, I, k):  # type: ignore[no-untyped-def]
    return flat_view(F, I[4 * k], (I[4 * k + 1],))


@njit(cache=True, inline="always")
def _f2(F, I, k):  # type: ignore[no-untyped-def]
    return flat_view(F, I[4 * k], (I[4 * k + 1], I[4 * k + 2]))


@njit(cache=True, inline="always")
def _f3(F, I, k):  # type: ignore[no-untyped-def]
    return flat_view(F, I[4 * k], (I[4 * k + 1], I[4 * k + 2], I[4 * k + 3]))


@njit(cache=True)
def unpack_scene(F, I):  # type: ignore[no-untyped-def]
    """Inverse of :func:`pack_scene` inside compiled code: ``(kin, rs, ws, pr)``."""
    kin = KinematicArrays(
        _i1(I, 0), _i1(I, 1), _f3(F, I, 2), _f2(F, I, 3), _i1(I, 4), _f1(F, I, 5), _f1(F, I, 6)
    )
    rs = RobotArrays(
        _i1(I, 7),
        _i1(I, 8),
        _f2(F, I, 9),
        _f3(F, I, 10),
        _i1(I, 11),
        _i1(I, 12),
        _f2(F, I, 13),
        _i1(I, 14),
        _f2(F, I, 15),
        _f1(F, I, 16),
        _i2(I, 31),
        _f2(F, I, 32),
    )
    ws = WorldArrays(
        _i1(I, 17),
        _f2(F, I, 18),
        _f3(F, I, 19),
        _i1(I, 20),
        _i1(I, 21),
        _f2(F, I, 22),
        _f2(F, I, 23),
        _i2(I, 28),
        _f1(F, I, 29),
        _i1(I, 30),
    )
    pr = PairArrays(_i1(I, 24), _i1(I, 25), _f1(F, I, 26), _f2(F, I, 27), _i2(I, 33),
                    _f2(F, I, 34), _f1(F, I, 35), _i2(I, 36))
    return kin, rs, ws, pr


@njit(cache=True, inline="always")
def _bi1(I, k):  # type: ignore[no-untyped-def]
    return borrowed_view(I, I[4 * k], (I[4 * k + 1],))


@njit(cache=True, inline="always")
def _bi2(I, k):  # type: ignore[no-untyped-def]
    return borrowed_view(I, I[4 * k], (I[4 * k + 1], I[4 * k + 2]))


@njit(cache=True, inline="always")
def _bf1(F, I, k):  # type: ignore[no-untyped-def]
    return borrowed_view(F, I[4 * k], (I[4 * k + 1],))


@njit(cache=True, inline="always")
def _bf2(F, I, k):  # type: ignore[no-untyped-def]
    return borrowed_view(F, I[4 * k], (I[4 * k + 1], I[4 * k + 2]))


@njit(cache=True, inline="always")
def _bf3(F, I, k):  # type: ignore[no-untyped-def]
    return borrowed_view(F, I[4 * k], (I[4 * k + 1], I[4 * k + 2], I[4 * k + 3]))


@njit(cache=True, inline="always")
def unpack_scene_borrowed(F, I):  # type: ignore[no-untyped-def]
    """:func:`unpack_scene` with views that hold no reference to ``F`` and ``I`` (see
    :func:`~robot_collision.jitcall.borrowed_view`): for compiled entry points that hold ``F``
    and ``I`` for the whole call and return none of the views. Saves ~0.3 us per call. Inlined
    (numba IR) into its callers: returning the ~30 views from a call costs as much again."""
    kin = KinematicArrays(
        _bi1(I, 0), _bi1(I, 1), _bf3(F, I, 2), _bf2(F, I, 3), _bi1(I, 4), _bf1(F, I, 5),
        _bf1(F, I, 6),
    )
    rs = RobotArrays(
        _bi1(I, 7),
        _bi1(I, 8),
        _bf2(F, I, 9),
        _bf3(F, I, 10),
        _bi1(I, 11),
        _bi1(I, 12),
        _bf2(F, I, 13),
        _bi1(I, 14),
        _bf2(F, I, 15),
        _bf1(F, I, 16),
        _bi2(I, 31),
        _bf2(F, I, 32),
    )
    ws = WorldArrays(
        _bi1(I, 17),
        _bf2(F, I, 18),
        _bf3(F, I, 19),
        _bi1(I, 20),
        _bi1(I, 21),
        _bf2(F, I, 22),
        _bf2(F, I, 23),
        _bi2(I, 28),
        _bf1(F, I, 29),
        _bi1(I, 30),
    )
    pr = PairArrays(_bi1(I, 24), _bi1(I, 25), _bf1(F, I, 26), _bf2(F, I, 27), _bi2(I, 33),
                    _bf2(F, I, 34), _bf1(F, I, 35), _bi2(I, 36))
    return kin, rs, ws, pr

