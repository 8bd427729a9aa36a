"""The ``planner`` node's execution side: timing a planned path into a trajectory and
densifying it for display (the worker thread that runs goals lives in the node)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from ..collision.checker import CollisionChecker
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from ..planning.trajectory import TimedTrajectory, time_parameterize

__all__ = ["time_parameterize_path", "densify"]


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
