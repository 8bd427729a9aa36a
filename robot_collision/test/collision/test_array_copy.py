"""``array_copy.concatenate`` against ``np.concatenate`` (the oracle), around the size at which
parts are copied without the interpreter's lock, for the dtypes a scene packs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision.collision.array_copy import NOGIL_MIN_ELEMENTS, _copy_into, concatenate

_SIZES = st.sampled_from([0, 1, 7, NOGIL_MIN_ELEMENTS - 1, NOGIL_MIN_ELEMENTS,
                          NOGIL_MIN_ELEMENTS + 3, 3 * NOGIL_MIN_ELEMENTS])
_DTYPES = st.sampled_from([np.float64, np.int64, np.int32, np.bool_, np.float32])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_SIZES, _DTYPES, st.booleans()), max_size=5),
       st.sampled_from([np.float64, np.int64]), st.integers(0, 2**31 - 1))
def test_same_as_numpy(parts: list[tuple[int, type, bool]], dtype: type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = []
    for n, dt, strided in parts:
        a = (rng.random(2 * n) * 1000).astype(dt)
        arrays.append(a[::2] if strided else a[:n])  # non-contiguous parts too
    got = concatenate(arrays, dtype)
    want = (np.concatenate([a.ravel() for a in arrays]).astype(dtype) if arrays
            else np.zeros(0, dtype))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_multidimensional_parts_are_raveled() -> None:
    a = np.arange(3 * NOGIL_MIN_ELEMENTS, dtype=np.float64).reshape(-1, 3)
    b = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.testing.assert_array_equal(concatenate([a, b], np.float64),
                                  np.concatenate([a.ravel(), b.ravel().astype(float)]))


def test_large_copies_are_compiled_without_the_lock() -> None:
    """The copy kernel is compiled ``nogil`` (a timing test of the lock would be flaky on a
    loaded CI machine; numba's option is what releases it)."""
    assert _copy_into.targetoptions.get("nogil") is True
