"""``realtime_priority``: the velocity filter's control threads at SCHED_FIFO, read back from the
kernel (``os.sched_getscheduler`` of each thread), never the code's own record.

Where this machine refuses real-time priorities (no rtprio, no CAP_SYS_NICE) the tests check the
refusal instead: a reason, a warning, the thread left at normal priority.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import pytest

from robot_collision import default_robot_paths
from robot_collision.errors import ConfigurationError
from robot_collision.ros.filter_settings import settings_from_values
from robot_collision.ros.realtime import ThreadPriority, set_thread_priority

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from robot_collision.ros.filter_node import VelocityFilterNode  # noqa: E402

pytestmark = [pytest.mark.ros,
              pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux only")]
URDF, SRDF = default_robot_paths()


def _in_thread(fn: Any) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(10.0)
    return out[0]


def _policy(tid: int = 0) -> tuple[int, int]:
    return os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority


ALLOWED = _in_thread(lambda: set_thread_priority(1)) == ""


class _Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))


def test_the_calling_thread_only_and_back() -> None:
    main = _policy()

    def run() -> tuple[str, tuple[int, int], str, tuple[int, int]]:
        err = set_thread_priority(30)
        during = _policy()
        back = set_thread_priority(0)
        return err, during, back, _policy()

    err, during, back, after = _in_thread(run)
    if ALLOWED:
        assert err == "" and during == (os.SCHED_FIFO, 30)
    else:
        assert err and during == main
    assert back == "" and after == (os.SCHED_OTHER, 0)
    assert _policy() == main  # the process and its other threads are untouched


def test_thread_priority_applies_on_change_and_logs_once() -> None:
    log = _Log()
    prio = ThreadPriority(log, "node")

    def run() -> tuple[tuple[int, int], str]:
        for _ in range(5):
            prio.ensure(20, "tick")
        policy = _policy()
        refused = prio.refused
        prio.ensure(0, "tick")
        return policy, refused

    policy, refused = _in_thread(run)
    assert len(log.lines) == 2, log.lines
    if ALLOWED:
        assert policy == (os.SCHED_FIFO, 20) and not refused
        assert log.lines[0] == ("info", "node's tick thread at SCHED_FIFO priority 20")
    else:
        assert policy[0] == os.SCHED_OTHER and refused
        assert log.lines[0][0] == "warning" and "rtprio" in log.lines[0][1]
    assert not prio.refused  # normal priority, asked last, is what the thread has


def test_thread_priority_is_per_thread_and_forgets_ended_threads() -> None:
    """A thread's priority is asked of it once whatever other threads asked (the state is the
    thread's own: a new thread that reuses an ended one's native id is asked again); the
    reports (applied, refused) keep only live threads."""
    log = _Log()
    prio = ThreadPriority(log, "node")

    def ask() -> int:
        prio.ensure(20, "worker")
        prio.ensure(20, "worker")
        return threading.get_native_id()

    _in_thread(ask)
    second = _in_thread(ask)
    assert len(log.lines) == 2, log.lines  # one change per thread, each logged once
    assert list(prio.applied().items()) == [(second, 20)]  # (the first thread has ended)
    if not ALLOWED:
        assert prio.refused and len(prio.refused.split("; ")) == 1  # the live thread's only


@pytest.mark.parametrize("value", [-1, 100, 2.5, True, "50"])
def test_invalid_priorities_are_refused(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="realtime_priority"):
        settings_from_values({"realtime_priority": value})


def _start(ctx: Any, executor: Any, **params: Any) -> VelocityFilterNode:
    values = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "rate": 100.0, **params}
    node = VelocityFilterNode(context=ctx, namespace=f"/rt_{os.getpid()}_{time.monotonic_ns()}",
                              parameter_overrides=[Parameter(k, value=v)
                                                   for k, v in values.items()])
    executor.add_node(node)
    return node


def _threads(node: VelocityFilterNode, timeout: float = 10.0) -> dict[str, int]:
    """{thread name: native id} of the node's threads that were asked for a priority."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = {tid: name for tid, name in
                 ((t.native_id, t.name) for t in threading.enumerate())}
        got = {names.get(tid, "executor"): tid for tid in node._priority.applied()}
        if len(got) >= 2:
            return got
        time.sleep(0.05)
    return {names.get(tid, "executor"): tid for tid in node._priority.applied()}


@pytest.mark.parametrize("own_executor", [True, False])
def test_filter_node_threads(own_executor: bool) -> None:
    """Own SingleThreadedExecutor: its thread and the watchdog at SCHED_FIFO 30, both back to
    normal when the parameter goes to 0. An executor shared with another node: the watchdog
    only, and a warning names why."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    node = other = None
    spin = threading.Thread(target=lambda: _spin(executor), name="test_spin", daemon=True)
    try:
        node = _start(ctx, executor, realtime_priority=30)
        if not own_executor:
            other = rclpy.create_node("other", context=ctx)
            executor.add_node(other)
        spin.start()
        threads = _threads(node)
        watchdog = next(tid for name, tid in threads.items() if name.endswith("_watchdog"))
        want = (os.SCHED_FIFO, 30) if ALLOWED else (os.SCHED_OTHER, 0)
        assert _policy(watchdog) == want
        assert _policy(spin.native_id) == (want if own_executor else (os.SCHED_OTHER, 0))
        if not own_executor:
            assert spin.native_id not in node._priority.applied()
        [res] = node.set_parameters([Parameter("realtime_priority", value=0)])
        assert res.successful
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and (
                _policy(watchdog)[0] != os.SCHED_OTHER
                or _policy(spin.native_id)[0] != os.SCHED_OTHER):
            time.sleep(0.05)
        assert _policy(watchdog) == (os.SCHED_OTHER, 0)
        assert _policy(spin.native_id) == (os.SCHED_OTHER, 0)
    finally:
        rclpy.try_shutdown(context=ctx)
        spin.join(5.0)
        executor.shutdown()
        for n in (node, other):
            if n is not None:
                n.destroy_node()


def _spin(executor: Any) -> None:
    with contextlib.suppress(Exception):  # ExternalShutdownException at the end
        executor.spin()
