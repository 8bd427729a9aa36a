"""Fixtures for the ROS tests: one rclpy context per test module, spun by a background
``SingleThreadedExecutor``; helpers to collect messages and wait with a timeout.

Isolation: discovery stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) and every
test puts its nodes in a fresh namespace (``ros.namespace()``), so concurrent test runs on the
same machine and domain do not see each other's topics.

Executor: a SingleThreadedExecutor by default (rclpy's MultiThreadedExecutor was measured to
starve the other threads of a process: joint states arrived in bursts with gaps up to 0.9 s,
which made timing-sensitive tests flaky in a fresh CI clone); a module that sets
``ROS_EXECUTOR = "multi"`` gets a MultiThreadedExecutor (4 threads).

Teardown order (see shared/docs/ros2-from-pypi.md): ``rclpy.try_shutdown`` → join the spin
thread → ``executor.shutdown()``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOG_DIR", os.path.join(tempfile.gettempdir(), "robot_collision_roslog"))

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("robot_collision_interfaces.msg")


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, period: float = 0.01) -> bool:
    """Poll ``predicate`` until it is truthy or ``timeout`` s pass; returns the last result."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(period)


class Collector:
    """Subscription that stores every message; ``wait(n)`` blocks until n have arrived."""

    def __init__(self, node: Any, msg_type: Any, topic: str, qos: Any = 10) -> None:
        self.messages: list[Any] = []
        self.stamps: list[float] = []  # time.monotonic() of each arrival
        self._cond = threading.Condition()
        self.sub = node.create_subscription(msg_type, topic, self._on_msg, qos)

    def _on_msg(self, msg: Any) -> None:
        with self._cond:
            self.messages.append(msg)
            self.stamps.append(time.monotonic())
            self._cond.notify_all()

    def wait(self, count: int = 1, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float = 10.0) -> Optional[Any]:
        """First message (already received or arriving within ``timeout``) matching."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for msg in self.messages[seen:]:
                    if predicate(msg):
                        return msg
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def clear(self) -> None:
        with self._cond:
            self.messages.clear()
            self.stamps.clear()

    @property
    def last(self) -> Any:
        with self._cond:
            return self.messages[-1] if self.messages else None

    def __len__(self) -> int:
        with self._cond:
            return len(self.messages)


class RosHarness:
    """A context, a background executor and a helper node, for one test module."""

    def __init__(self, executor: str = "single") -> None:
        from rclpy.executors import (
            ExternalShutdownException,
            MultiThreadedExecutor,
            SingleThreadedExecutor,
        )

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        if executor == "single":
            self.executor: Any = SingleThreadedExecutor(context=self.context)
        else:
            self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self._nodes: list[Any] = []
        self.node = self.add_node(rclpy.create_node(
            f"test_helper_{uuid.uuid4().hex[:8]}", context=self.context,
            namespace=self.namespace()))

        def spin() -> None:
            # spin_once in a loop (not spin()): a node destroyed by a test while the executor
            # waits raises InvalidHandle once, and at shutdown rclpy may raise RCLError
            # ("context is not valid") instead of ExternalShutdownException; neither may kill
            # the harness thread.
            while self.context.ok():
                try:
                    self.executor.spin_once(timeout_sec=0.05)
                except ExternalShutdownException:
                    break
                except Exception:
                    if not self.context.ok():
                        break

        self._thread = threading.Thread(target=spin, name="ros_test_spin", daemon=True)
        self._thread.start()

    @staticmethod
    def namespace() -> str:
        """A fresh namespace, unique to this call."""
        return f"/t_{uuid.uuid4().hex[:10]}"

    def add_node(self, node: Any) -> Any:
        self.executor.add_node(node)
        self._nodes.append(node)
        return node

    def remove_node(self, node: Any) -> None:
        with contextlib.suppress(Exception):
            self.executor.remove_node(node)
        with contextlib.suppress(Exception):
            node.destroy_node()
        if node in self._nodes:
            self._nodes.remove(node)

    def helper(self, namespace: str) -> Any:
        """A plain node in ``namespace`` (for publishers, subscriptions and clients)."""
        return self.add_node(rclpy.create_node(
            f"helper_{uuid.uuid4().hex[:8]}", context=self.context, namespace=namespace))

    # helpers reachable through the fixture (test modules do not import conftest)
    wait_until = staticmethod(wait_until)

    def collect(self, node: Any, msg_type: Any, topic: str, qos: Any = 10) -> Collector:
        return Collector(node, msg_type, topic, qos)

    def call(self, node: Any, srv_type: Any, name: str, request: Any, timeout: float = 10.0) -> Any:
        return call_service(node, srv_type, name, request, timeout)

    def wait_for_subscribers(self, publisher: Any, count: int = 1, timeout: float = 10.0) -> bool:
        return wait_for_subscribers(publisher, count, timeout)

    def in_executor(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """``fn()`` run in the spinning thread; its return value. ActionClient calls go through
        here: rclpy files a goal's sequence number after sending it, and a reply taken by the
        spinning thread before that is dropped (ros2/rclpy#1123)."""
        task = self.executor.create_task(fn)
        assert wait_until(task.done, timeout, period=0.001), "the executor did not run the call"
        return task.result()

    def shutdown(self) -> None:
        rclpy.try_shutdown(context=self.context)
        self._thread.join(timeout=10.0)
        self.executor.shutdown()
        for node in list(self._nodes):
            with contextlib.suppress(Exception):
                node.destroy_node()


@pytest.fixture(scope="module")
def ros(request: pytest.FixtureRequest) -> Iterator[RosHarness]:
    """The module's harness: a SingleThreadedExecutor, or a MultiThreadedExecutor with 4
    threads when the module sets ``ROS_EXECUTOR = "multi"``."""
    harness = RosHarness(getattr(request.module, "ROS_EXECUTOR", "single"))
    try:
        yield harness
    finally:
        harness.shutdown()


def wait_for_subscribers(publisher: Any, count: int = 1, timeout: float = 10.0) -> bool:
    return wait_until(lambda: publisher.get_subscription_count() >= count, timeout)


def call_service(node: Any, srv_type: Any, name: str, request: Any, timeout: float = 10.0) -> Any:
    """Synchronous call from a test thread (the background executor spins the client)."""
    client = node.create_client(srv_type, name)
    try:
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        future = client.call_async(request)
        assert wait_until(future.done, timeout), f"service {name} did not answer"
        return future.result()
    finally:
        node.destroy_client(client)
