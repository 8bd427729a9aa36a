"""ros.log_throttle.LogThrottle: once per period per key (against a list of allowed times,
the oracle), never after the rclpy context is shut down."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import rclpy
from rclpy.context import Context

from robot_collision.ros.log_throttle import LogThrottle


@pytest.fixture
def context() -> Iterator[Context]:
    ctx = Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


def test_once_per_period_per_key(context: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    throttle = LogThrottle(context)
    seen = []
    for step in range(40):  # 0.25 s apart; period 2 s -> true at 0, 2, 4, ... s per key
        clock[0] = 100.0 + 0.25 * step
        seen.append((throttle("a"), throttle("b", 1.0)))
    assert [i for i, (a, _) in enumerate(seen) if a] == list(range(0, 40, 8))
    assert [i for i, (_, b) in enumerate(seen) if b] == list(range(0, 40, 4))


def test_silent_once_the_context_is_shut_down(context: Context) -> None:
    throttle = LogThrottle(context)
    rclpy.shutdown(context=context)
    assert not throttle("a") and not throttle("a", 0.0)
