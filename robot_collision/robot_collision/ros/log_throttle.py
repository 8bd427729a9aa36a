"""Throttled logging decisions for node callbacks: at most one log per reason and period, and
none once the node's context is shut down (Ctrl-C shuts the context down under running
callbacks, which then fail on destroyed handles: those failures are not worth a log)."""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["LogThrottle"]


class LogThrottle:
    """``throttle(key, period)`` is True at most once per ``period`` seconds (monotonic clock)
    per ``key``, and False while ``context`` (an ``rclpy`` context) is not ok. Used from
    several threads: a lost race logs once more, never less."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._last: dict[str, float] = {}

    def __call__(self, key: str, period: float = 2.0) -> bool:
        if not self._context.ok():
            return False
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) < period:
            return False
        self._last[key] = now
        return True
