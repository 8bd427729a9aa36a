"""ros.message_timing.LatencyRecord against a deque with maxlen (the oracle), and its memory."""

from __future__ import annotations

import tracemalloc
from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from robot_collision.ros.message_timing import LatencyRecord


@given(st.integers(1, 7), st.lists(st.one_of(st.floats(0, 1), st.none()), max_size=40))
def test_record_matches_a_bounded_deque(capacity: int, ops: list[float | None]) -> None:
    rec, ref = LatencyRecord(capacity), deque(maxlen=capacity)  # type: deque[float]
    for op in ops:  # None = clear()
        if op is None:
            rec.clear()
            ref.clear()
        else:
            rec.append(op)
            ref.append(op)
        assert len(rec) == len(ref) and list(rec) == list(ref)


def test_appending_allocates_nothing() -> None:
    rec = LatencyRecord(1000)
    for i in range(1000):
        rec.append(i * 1e-3)
    tracemalloc.start()
    for i in range(10_000):
        rec.append(i * 1e-3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4096  # bytes
