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
from collections.abc import Callable
from typing import Any, Optional

__all__ = ["with_message_info", "arrival_time"]

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
