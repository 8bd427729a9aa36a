"""Typed errors raised by robot_collision.

Every error derives from :class:`RobotCollisionError`, and every message says what to fix.
"""

from __future__ import annotations

__all__ = [
    "RobotCollisionError",
    "ModelError",
    "URDFError",
    "SRDFError",
    "MeshError",
    "ShapeError",
    "UnknownNameError",
    "ConfigurationError",
    "PlanningError",
    "StartInCollisionError",
    "GoalInCollisionError",
    "OutsideLimitsError",
    "GoalUnreachableError",
    "NoPathFoundError",
    "PlanningCancelledError",
    "ModelLoadWarning",
]


class RobotCollisionError(Exception):
    """Base class of every error raised by this package."""


class ModelError(RobotCollisionError):
    """The robot model is inconsistent (bad tree, bad joint, bad limits)."""


class URDFError(ModelError):
    """The URDF text or file is malformed or unsafe."""


class SRDFError(ModelError):
    """The SRDF text or file is malformed or names unknown links."""


class MeshError(ModelError):
    """A mesh file is missing, unreadable, or not a usable convex solid."""


class ShapeError(RobotCollisionError):
    """A collision shape has invalid dimensions or pose."""


class UnknownNameError(RobotCollisionError, KeyError):
    """A body, joint, group or object name does not exist in the model."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ConfigurationError(RobotCollisionError, ValueError):
    """A joint configuration (or batch) has the wrong shape or non-finite values."""


class PlanningError(RobotCollisionError):
    """Base class of motion-planning failures."""


class StartInCollisionError(PlanningError):
    """The start configuration is in collision."""


class GoalInCollisionError(PlanningError):
    """The goal configuration is in collision."""


class OutsideLimitsError(PlanningError, ConfigurationError):
    """A start or goal configuration lies outside the joint limits."""


class GoalUnreachableError(PlanningError):
    """No valid goal configuration could be found for a workspace goal region."""


class NoPathFoundError(PlanningError):
    """The planner hit its iteration or time limit without connecting the trees."""


class PlanningCancelledError(PlanningError):
    """Planning was cancelled by the caller."""


class ModelLoadWarning(UserWarning):
    """A robot description loaded, but the loader dropped or defaulted something in it (an SRDF
    entry naming an unknown link, a joint without a velocity limit, ...). Each warning is also
    recorded in the model's :class:`~robot_collision.model.load_report.LoadReport`."""
