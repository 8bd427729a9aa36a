"""The compiled monotonic clock reads Python's ``time.monotonic_ns`` clock."""

from __future__ import annotations

import time

from robot_collision.clock import now_ns


def test_now_ns_is_the_monotonic_clock() -> None:
    now_ns()  # compiled or loaded before timing
    for _ in range(100):
        before = time.monotonic_ns()
        t = now_ns()
        after = time.monotonic_ns()
        assert before <= t <= after
