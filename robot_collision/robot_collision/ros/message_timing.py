"""When a message arrived: subscription callbacks with rclpy's message info, on the monotonic clock.

A node that ages its inputs (the velocity filter's ``state_timeout`` and ``command_timeout``,
the mock arm's ``command_timeout``) must count from the message's arrival, not from the
moment its callback runs: an executor that is busy or starved of CPU runs callbacks late, and a
message that waited 80 ms in the queue would otherwise look 80 ms fresher than it is. rclpy
(Iron and later) passes the message info (DDS ``source_timestamp`` / ``received_timestamp``,
ns of the system clock) to callbacks that take two arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

__all__ = ["LatencyRecord", "arrival_time", "with_message_info"]

_MAX_DELAY = 10.0  # s: a larger (or negative) queueing delay means the wall clock jumped


def with_message_info(callback: Callable[[Any, Optional[dict[str, Any]]], None]) -> Any:
    """``callback(msg, info)`` as a subscription callback: rclpy passes the message info where
    it can (Iron and later: callbacks taking two arguments), else ``info`` is None."""
    from rclpy.subscription import Subscription

    if hasattr(Subscription, "CallbackType"):
        return lambda msg, info: callback(msg, info)
    return lambda msg: callback(msg, None)


def arrival_time(info: Optional[dict[str, Any]]) -> float:
    """Monotonic time (s, ``time.monotonic()``) the message arrived: now minus the time since
    its DDS receive stamp, where the info has one and the wall clock did not jump; else now."""
    now = time.monotonic()
    received = int(info.get("received_timestamp") or 0) if info else 0
    if received > 0:
        delay = (time.time_ns() - received) * 1e-9
        if 0.0 <= delay < _MAX_DELAY:
            return now - delay
    return now


class LatencyRecord:
    """The newest ``capacity`` latencies (s) of a node, in memory allocated once.

    A node that runs for days must not grow: a ``deque`` of Python floats costs 32 bytes per
    entry as it fills (the velocity filter's 200,000 command latencies grew its process by
    0.19 MB a minute for the 33 minutes they took to fill, at 100 commands/s). Here the samples
    live in one float64 array written in full at construction (its pages are resident from the
    start). ``append`` / ``clear`` / ``len`` / iteration (oldest first) as a deque.
    """

    def __init__(self, capacity: int) -> None:
        import numpy as np

        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._buf = np.full(int(capacity), np.nan)
        self._count = 0  # samples appended since the last clear()

    def append(self, seconds: float) -> None:
        self._buf[self._count % len(self._buf)] = seconds
        self._count += 1

    def clear(self) -> None:
        self._count = 0

    def __len__(self) -> int:
        return min(self._count, len(self._buf))

    def __iter__(self) -> Iterator[float]:
        n, cap = len(self), len(self._buf)
        start = self._count - n
        return iter([float(self._buf[(start + i) % cap]) for i in range(n)])
