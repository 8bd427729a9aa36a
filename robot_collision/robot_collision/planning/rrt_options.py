"""Options and results of :class:`~robot_collision.planning.rrt.BiRRT`: ``RRTOptions`` (with its
validation), ``PlanStats``, ``PlanResult``, ``ProgressInfo`` and the stop-hook type.

Units: rad (revolute/continuous joints), m (prismatic joints), s.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

import numpy as np
from numpy.typing import NDArray

from ..collision.checker import SkipRule
from ..errors import ConfigurationError

__all__ = [
    "MIN_VALIDATION_DISTANCE",
    "MAX_CONNECT_NODES",
    "RRTOptions",
    "ExitReason",
    "PlanStats",
    "PlanResult",
    "ProgressInfo",
    "StopHook",
    "EdgeValidation",
]


# ------------------------------------------------------------------------------------------
# options and results
# ------------------------------------------------------------------------------------------
MIN_VALIDATION_DISTANCE = 1e-6
"""Smallest ``RRTOptions.validation_distance`` (rad or m)."""
MAX_CONNECT_NODES = 100_000
"""Most nodes one greedy connect may add (bounds the tree storage; a smaller
``max_connection_distance`` is refused for the robot at hand)."""


EdgeValidation = Literal["certified", "discrete"]
"""How edges are validated: ``"certified"`` (whole segment, conservative advancement) or
``"discrete"`` (at samples every ``validation_distance``)."""


def _same_skip(a: SkipRule, b: SkipRule) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return {frozenset(p) for p in a} == {frozenset(p) for p in b}


@dataclass(frozen=True)
class RRTOptions:
    """Options of :class:`BiRRT` (units rad / m; distances are joint-space L2).

    Attributes:
        max_connection_distance: longest edge added by one extension (default 1.0 rad).
        validation_distance: edge checking resolution, the largest joint-space step between
            checked configurations (default 1/32 rad, i.e. >= 32 checks per radian). With
            certified edges, the trees of a plan's first run are checked at twice this step
            (their samples only steer the search; the path is certified over whole segments).
        max_iterations: extension iterations before ``NoPathFoundError`` (default 10000).
        enable_connect_heuristic: connect the other tree with one straight edge of any length
            instead of greedy ``max_connection_distance`` steps (default False); only then can
            an edge of a path (the first start-goal attempt included) be longer than
            ``max_connection_distance``.
        workspace_goal_region_bias: probability in [0, 1), on each iteration, of sampling a new
            goal configuration (IK of a random pose of the region) as the start tree's extension
            target (default 0.5; 1 would leave no uniform samples to explore with).
        ignore_self_collision: check only against the world (default False).
        skip: self-collision skip rule of the checker :class:`BiRRT` builds from a
            ``RobotModel``: ``"parent"``, ``"adjacent"`` or (body, body) pairs (default None =
            ``"parent"``). A ``CollisionChecker`` brings its own rules: giving one together
            with a different ``skip`` is a ``ConfigurationError``.
        seed: random seed; the same seed gives the same path (None = fresh entropy, recorded in
            ``PlanStats.seed``).
        unbounded_sample_range: half-width of the sampling box of joints with infinite limits
            (continuous joints: (-pi, pi] covers every angle; default pi).
        balance_trees: extend the smaller tree (alternate when equal) instead of strictly
            alternating (default True).
        dynamic_domain: dynamic-domain sampling (Yershova et al. 2005): a node whose extension
            failed gets a radius (``dynamic_domain_radius``, then shrunk by the factor
            1 - ``dynamic_domain_alpha`` per failure down to ``dynamic_domain_min_radius``,
            grown by 1 + alpha per success) and samples farther than that from their nearest
            node are drawn again (default True, 4.0 rad, 1e-4, 1.0 rad).
        max_goal_samples: most goal configurations kept for a goal region (default 32).
        goal_ik_attempts: IK restarts before ``GoalUnreachableError`` when looking for the first
            goal configuration of a region (default 200).
        ik_max_iterations: damped-least-squares iterations per IK attempt (default 100).
        ik_position_tolerance: IK position tolerance, m (default 1e-5).
        ik_orientation_tolerance: IK orientation tolerance, rad (default 1e-4).
        edge_validation: ``"certified"`` (default): an edge is valid only when it is proven
            collision-free over the whole segment by conservative advancement (distance lower
            bounds against motion bounds, :mod:`~robot_collision.planning.certified`): no
            contact between checked configurations, with ``min_clearance`` to spare.
            ``"discrete"``: valid when every configuration every ``validation_distance`` is
            collision-free (MATLAB ``ValidationDistance``, VAMP, MoveIt): the path may graze
            an obstacle between two checked configurations.
        min_clearance: certified edges keep every checked pair's padded signed distance at
            least this far apart (m, default 0.0; on top of the checker's padding). Only with
            ``edge_validation="certified"``.
    """

    max_connection_distance: float = 1.0
    validation_distance: float = 1.0 / 32.0
    max_iterations: int = 10000
    enable_connect_heuristic: bool = False
    workspace_goal_region_bias: float = 0.5
    ignore_self_collision: bool = False
    skip: Optional[SkipRule] = None
    seed: Optional[int] = None
    unbounded_sample_range: float = math.pi
    balance_trees: bool = True
    dynamic_domain: bool = True
    dynamic_domain_radius: float = 4.0
    dynamic_domain_alpha: float = 1e-4
    dynamic_domain_min_radius: float = 1.0
    max_goal_samples: int = 32
    goal_ik_attempts: int = 200
    ik_max_iterations: int = 100
    ik_position_tolerance: float = 1e-5
    ik_orientation_tolerance: float = 1e-4
    edge_validation: EdgeValidation = "certified"
    min_clearance: float = 0.0

    def __post_init__(self) -> None:
        def positive(name: str) -> None:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ConfigurationError(f"RRTOptions.{name} must be a positive number, got {v!r}")

        for name in ("max_connection_distance", "validation_distance", "unbounded_sample_range",
                     "ik_position_tolerance", "ik_orientation_tolerance", "dynamic_domain_radius",
                     "dynamic_domain_alpha", "dynamic_domain_min_radius"):
            positive(name)
        if self.validation_distance < MIN_VALIDATION_DISTANCE:
            raise ConfigurationError(
                f"RRTOptions.validation_distance must be at least {MIN_VALIDATION_DISTANCE:g} "
                f"(rad or m; finer checks are meaningless and their count overflows), got "
                f"{self.validation_distance!r}")
        for name in ("max_iterations", "max_goal_samples", "goal_ik_attempts", "ik_max_iterations"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigurationError(f"RRTOptions.{name} must be an integer >= 1, got {v!r}")
        b = self.workspace_goal_region_bias
        if not (isinstance(b, (int, float)) and 0.0 <= b < 1.0):
            raise ConfigurationError(f"workspace_goal_region_bias must be in [0, 1), got {b!r}")
        if self.edge_validation not in ("certified", "discrete"):
            raise ConfigurationError(
                f"RRTOptions.edge_validation must be 'certified' or 'discrete', got "
                f"{self.edge_validation!r}")
        c = self.min_clearance
        if not (isinstance(c, (int, float)) and math.isfinite(c) and c >= 0.0):
            raise ConfigurationError(
                f"RRTOptions.min_clearance must be a finite number >= 0 (m), got {c!r}")
        if c > 0.0 and self.edge_validation != "certified":
            raise ConfigurationError(
                "RRTOptions.min_clearance needs edge_validation='certified' (discrete edges "
                "are checked only at samples: use the checker's padding)")
        if self.seed is not None and not isinstance(self.seed, (int, np.integer)):
            raise ConfigurationError(f"seed must be an integer or None, got {self.seed!r}")


ExitReason = Literal["success", "max_iterations", "time_limit", "cancelled"]


@dataclass(frozen=True)
class PlanStats:
    """Statistics of one :meth:`BiRRT.plan` call (times in s)."""

    iterations: int
    start_tree_size: int
    goal_tree_size: int
    planning_time: float
    exit_reason: str
    collision_checks: int = 0
    goal_samples: int = 0
    seed: int = 0


@dataclass(frozen=True)
class PlanResult:
    """``waypoints`` (k, n) from start to goal (every edge validated); ``goal`` (n,) the goal
    configuration reached: the one given, or for a goal region the IK solution the path ends at
    (equal to ``waypoints[-1]``)."""

    waypoints: NDArray[np.float64]
    stats: PlanStats
    goal: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def success(self) -> bool:
        return self.stats.exit_reason == "success"


@dataclass(frozen=True)
class ProgressInfo:
    """Passed to the ``progress`` callback about every 50 ms (elapsed in s)."""

    iterations: int
    start_tree_size: int
    goal_tree_size: int
    elapsed: float


StopHook = Union[Callable[[], bool], threading.Event, None]
