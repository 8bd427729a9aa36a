"""Real-time (``SCHED_FIFO``) scheduling of a node's control threads, as ros2_control's
controller manager does for its update loop.

A thread at ``SCHED_FIFO`` runs as soon as it is woken, ahead of every normal thread on its core
(a camera driver, a cloud worker, a compiler). Measured with ``benchmarks/run.py cloud_delivery``
(1 M-point clouds at 10 Hz into the velocity filter, 2 cores): see the README's benchmark rows.
Linux only; it needs the permission to use real-time priorities (``rtprio`` in
``/etc/security/limits.conf`` for the user, e.g. ``@realtime - rtprio 98``, or ``CAP_SYS_NICE``).
Where it is refused, the thread keeps its normal priority and the reason is logged once.

The kernel's real-time throttling (``/proc/sys/kernel/sched_rt_runtime_us``, 0.95 s per second
by default) still leaves the other tasks 5 % of a core should such a thread never sleep.
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["ThreadPriority", "set_thread_priority"]


def set_thread_priority(priority: int) -> str:
    """The calling thread (not its process) at ``SCHED_FIFO`` ``priority`` (1-99), or back to
    normal scheduling for 0; returns ``""`` or why it could not."""
    setter = getattr(os, "sched_setscheduler", None)
    if setter is None:
        return "this platform has no sched_setscheduler (Linux only)"
    try:
        if priority > 0:
            setter(0, os.SCHED_FIFO, os.sched_param(int(priority)))  # 0: the calling thread
        else:
            setter(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


class ThreadPriority:
    """Keeps each thread that calls :meth:`ensure` at the priority asked (applied when it
    changes, so a call per control tick costs a dictionary lookup); logs each change and
    each refusal once through ``logger`` (an rclpy logger)."""

    def __init__(self, logger: Any, what: str) -> None:
        self._logger = logger
        self._what = what
        # the priority asked last, per thread: thread-local, so that a new thread that the
        # kernel gives an ended thread's id starts at "nothing asked"
        self._local = threading.local()
        # for reports, by native thread id; entries of ended threads are dropped on changes
        self._applied: dict[int, int] = {}  # priority asked last
        self._refused: dict[int, str] = {}  # why it was refused

    @property
    def refused(self) -> str:
        """Why live threads are not at the priority last asked of them ("" when every one
        is)."""
        return "; ".join(list(self._refused.values()))

    def ensure(self, priority: int, thread_name: str = "") -> None:
        if getattr(self._local, "priority", 0) == priority:
            return
        self._local.priority = priority
        tid = threading.get_native_id()
        live = {t.native_id for t in threading.enumerate()}
        for d in (self._applied, self._refused):
            for k in list(d):
                if k not in live:
                    d.pop(k, None)
        self._applied[tid] = priority
        name = thread_name or threading.current_thread().name
        err = set_thread_priority(priority)
        if err:
            self._refused[tid] = err
            self._logger.warning(
                f"realtime_priority {priority} not applied to {self._what}'s {name} thread "
                f"({err}): it runs at normal priority. Allow real-time priorities for this "
                "user ('rtprio' in /etc/security/limits.conf, or CAP_SYS_NICE), or set "
                "realtime_priority 0")
        else:
            self._refused.pop(tid, None)
            if priority > 0:
                self._logger.info(
                    f"{self._what}'s {name} thread at SCHED_FIFO priority {priority}")
            else:
                self._logger.info(f"{self._what}'s {name} thread back at normal priority")

    def applied(self) -> dict[int, int]:
        """``{native thread id: priority}`` as asked of each live thread (refused ones
        included; threads that ended are dropped at the next change)."""
        return dict(self._applied)
