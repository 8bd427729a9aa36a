"""The ``planner`` node's execution side: the planning thread and the book-keeping of a goal
(:class:`PlanningWorker`, :class:`GoalContext`), timing a planned path into a trajectory and
densifying it for display."""

from __future__ import annotations

import itertools
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import NDArray

from ..collision.checker import CollisionChecker
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from ..planning.trajectory import TimedTrajectory, time_parameterize
from .conversions import JointStateMapper
from .planner_goals import ErrorCode, PlanRequest, error_code_for
from .planner_settings import PlannerSettings

__all__ = [
    "GoalContext",
    "Job",
    "Pipeline",
    "PlanningWorker",
    "densify",
    "time_parameterize_path",
]


# --------------------------------------------------------------------------- timing
_warned_linear = False


def time_parameterize_path(
    path: NDArray[np.float64],
    robot: RobotModel,
    velocity_scaling: float,
    acceleration_scaling: float,
    acceleration_limit: float,
    method: str = "toppra",
    checker: Optional[CollisionChecker] = None,
    world: Sequence[WorldObject] = (),
    ignore_self: bool = False,
    resolution: float = 1.0 / 32.0,
    edge_validation: str = "certified",
    min_clearance: float = 0.0,
) -> TimedTrajectory:
    """Time a (k, n) path with :func:`robot_collision.planning.trajectory.time_parameterize`.

    With a ``checker`` the TOPP-RA spline is collision-checked every ``resolution`` against
    ``world`` (and refined, or replaced by straight segments, where it collides). Without the
    ``toppra`` package, ``"linear"`` (straight segments, stop at each waypoint) is used.
    """
    global _warned_linear
    kwargs: dict[str, Any] = {
        "acceleration_scaling": acceleration_scaling,
        "checker": checker,
        "world": world,
        "ignore_self": ignore_self,
        "resolution": resolution,
        "edge_validation": edge_validation,
        "min_clearance": min_clearance,
    }
    if method == "toppra":
        try:
            return time_parameterize(path, robot, velocity_scaling, acceleration_limit,
                                     method="toppra", **kwargs)
        except ImportError as exc:  # toppra not installed: straight segments
            if not _warned_linear:
                _warned_linear = True
                import logging

                logging.getLogger(__name__).warning(
                    f"toppra is not available ({exc}); timing paths with method 'linear'")
    return time_parameterize(path, robot, velocity_scaling, acceleration_limit,
                             method="linear", **kwargs)


def densify(path: NDArray[np.float64], step: float) -> NDArray[np.float64]:
    """(K, n) configurations along the straight edges of a (k, n) path, consecutive ones at
    most ``step`` apart (joint-space L2); every waypoint is kept."""
    P = np.asarray(path, dtype=float)
    out = [P[:1]]
    for a, b in itertools.pairwise(P):
        steps = max(1, math.ceil(float(np.linalg.norm(b - a)) / step))
        t = (np.arange(1, steps + 1) / steps)[:, None]
        out.append(a + (b - a) * t)
    return np.concatenate(out)


# --------------------------------------------------------------------------- goals
@dataclass
class Pipeline:
    """Everything derived from one robot model + settings (swapped atomically)."""

    robot: RobotModel
    settings: PlannerSettings
    checker: CollisionChecker  # used only under the node's planning lock
    mapper: JointStateMapper
    frame_id: str


@dataclass
class GoalContext:
    """Book-keeping of one accepted goal (shared by its execute callback and the worker)."""

    handle: Any
    key: bytes
    label: str
    request: Optional[PlanRequest] = None
    pipeline: Optional[Pipeline] = None
    error: Optional[tuple[int, str]] = None
    start: Optional[NDArray[np.float64]] = None
    stop: threading.Event = field(default_factory=threading.Event)
    stop_code: int = ErrorCode.CANCELLED
    stop_message: str = ""
    wake: threading.Event = field(default_factory=threading.Event)  # stop or worker done
    outcome: Any = None  # PlanMotion.Result from the worker
    done: threading.Event = field(default_factory=threading.Event)  # execute finished
    cancel_time: float = math.nan

    def request_stop(self, code: int, message: str) -> None:
        """First caller wins (a cancel during preemption stays a preemption)."""
        if not self.stop.is_set():
            self.stop_code, self.stop_message = code, message
            if code == ErrorCode.CANCELLED:
                self.cancel_time = time.monotonic()
            self.stop.set()
        self.wake.set()

Job = Union[GoalContext, Callable[[], None]]
"""A goal to plan, or a plain function (e.g. the warm-up) to run on the planning thread."""


class PlanningWorker:
    """The planning thread: runs jobs (goals, warm-up) one at a time, so that a planner's
    checker is never used concurrently and planning never competes with itself for CPU.

    ``run_goal(ctx)`` plans one goal and returns its ``PlanMotion.Result``; the worker stores it
    in ``ctx.outcome`` and sets ``ctx.wake``. An exception of a job is reported through
    ``on_error(text)`` (goals get a result from ``error_code_for``) and never ends the thread.
    """

    def __init__(self, run_goal: Callable[[GoalContext], Any], make_result: Callable[[], Any],
                 on_error: Callable[[str], None]) -> None:
        self._run_goal = run_goal
        self._make_result = make_result
        self._on_error = on_error
        self._jobs: queue.Queue[Optional[Job]] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="planner-worker", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job (runs after the ones queued before it)."""
        self._jobs.put(job)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float) -> bool:
        """Let the thread exit after its current job and wait up to ``timeout`` s (not when
        called from the thread itself). True when it has exited."""
        self._jobs.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if not isinstance(job, GoalContext):
                try:
                    job()
                except Exception as exc:
                    self._on_error(f"planner job failed: {type(exc).__name__}: {exc}")
                continue
            try:
                outcome = self._run_goal(job)
            except Exception as exc:
                outcome = self._make_result()
                outcome.error_code, outcome.message = error_code_for(exc)
            job.outcome = outcome
            job.wake.set()
