"""The demo scenario's fixed choices (goals, obstacles, verdict tolerances) and its records."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from ...collision.clearance import PairKind

# ----------------------------------------------------------------------------- the scenario
GOAL_BEHIND_POST = (-1.0, 0.7, 0.0, 1.8, 0.0, math.pi - 2.5, 0.0)
"""Step 1 joint goal (rad, model order): the tool low beside the arm, behind the post as seen
from home; the straight joint motion from home would hit the post with link7."""
TCP_OFFSET = (0.0, 0.0, 0.10)
"""Tool centre point in the ``tool`` link frame (m): between the fingertips."""
END_EFFECTOR = "tool"
TELEOP_OBSTACLE = "post"
"""World object the step 2 teleop burst pushes the tool at."""
CAMERA_OBSTACLE = "camera_box"
"""Step 5: the object only the mock camera knows (config/demo_camera_world.yaml)."""
CAMERA_PUSH_START = (1.5708, 0.0, 0.0, 1.5, 0.0, 0.94, 0.0)
"""Step 5a start: the tool 19 cm above the box's top, which the camera sees (it sees only the
faces that face it); pushed down at the box, pulled back up into free space."""
GOAL_PAST_CAMERA_BOX = (2.2, 0.5, 0.0, 1.7, 0.0, 0.94, 0.0)
"""Step 5a joint goal: the SRDF state ``ready`` turned 2.2 rad to the left, past the camera box:
the straight joint motion from the ready side sweeps the tool through the box."""
FOLD_JOINT = "joint6"
FOLD_GROUP = "wrist"
"""Step 3 folds ``FOLD_JOINT`` towards its lower limit (link5-link7 collide near -2.09 rad) and
switches protection of ``FOLD_GROUP`` off and on."""
GOAL_IN_COLLISION = (0.55, 0.5, 0.0, 1.7, 0.0, 0.94, 0.0)
"""Step 4a joint goal: the SRDF state ``ready`` turned towards the crate: the tool is inside it."""
UNREACHABLE_REGION = ((1.55, 1.65), (-0.05, 0.05), (0.45, 0.55))
"""Step 4b goal region of the tool (x, y, z bounds in m, base frame, any orientation): 1.6 m
out, far beyond the arm's ~1.03 m reach."""

# ----------------------------------------------------------------------------- verdicts
CLEARANCE_TOLERANCE = 0.001
"""A pair may end up this much (m) below its safety distance (the filter's stated guarantee)."""
FINAL_ERROR_TOLERANCE = 0.01
"""Largest joint error (rad) left at the end of an executed trajectory."""
STOPPED_FRACTION = 0.1
"""Steps 2 and 5a: "stopped" = over the last ``stop_hold`` s of pushing, the median closing
speed (and in step 2, where the filter sees the true surface, the median tool speed) below this
fraction of the commanded speed."""
STOP_DISTANCE_BAND = 0.01
"""Steps 2, 3 and 5a: the stop must come within this much (m) above the safety distance (the
filter stopped the motion, not something else); in step 5a, measured from the true box, plus
``SENSED_SURFACE_BAND`` (the filter keeps its distance from the sensed surface's balls)."""
SENSED_SURFACE_BAND = 0.03
"""Step 5a: how far out of the true box top the sensed surface may lie: the balls that cover
the box top as the demo camera samples it (radius from the pixel spacing, 15-22 mm after
merging per 1 cm voxel, computed offline with the demo's camera and box) plus the depth noise
(2 mm)."""
FULL_SPEED_FRACTION = 0.9
"""Step 2: moving away must reach this fraction of the commanded speed."""
STILL_TOLERANCE = 1e-4
"""Step 4: largest joint motion (rad) that still counts as "nothing moved"."""
TRACK_ERROR_SLOW = 0.15
TRACK_ERROR_STOP = 0.5
"""Tracking errors (rad, largest joint) where the executed trajectory's time starts to slow
down, and where it stops advancing (see :meth:`DemoClient.execute`)."""
FEEDBACK_LIMIT = 0.6
"""Largest feedback velocity (rad/s per joint) of the tracking controller."""
STALL_TIMEOUT = 20.0
"""An execution whose reference has not advanced for this long (s) is given up."""

ENV_KIND = int(PairKind.ENVIRONMENT)
SELF_KIND = int(PairKind.SELF)


@dataclass(frozen=True)
class DemoSettings:
    """Timing of the scenario (s, Hz, rad/s, m/s); :meth:`for_mode` gives the two presets."""

    fast: bool = False
    control_rate: float = 100.0
    kp: float = 4.0
    velocity_scaling: float = 0.5
    plan_time_limit: float = 10.0
    plan_timeout: float = 60.0
    settle_timeout: float = 3.0
    settle_tolerance: float = 0.004
    teleop_speed: float = 0.2
    stop_hold: float = 0.8
    away_time: float = 1.0
    fold_speed: float = 1.5
    fold_max_time: float = 20.0
    off_time: float = 1.0
    recover_time: float = 1.0
    unfold_max_time: float = 15.0
    ready_timeout: float = 180.0
    total_timeout: float = 420.0

    @classmethod
    def for_mode(cls, fast: bool) -> DemoSettings:
        """Normal or fast (for tests: shorter holds and waits)."""
        if not fast:
            return cls()
        return cls(fast=True, settle_timeout=2.5, stop_hold=0.5,
                   away_time=0.6, off_time=0.5, recover_time=0.8,
                   ready_timeout=150.0, total_timeout=280.0)


@dataclass
class StepResult:
    """Outcome of one scenario step (or sub-step), one line of the summary table."""

    key: str
    title: str
    passed: bool = False
    result: str = ""
    min_clearance: Optional[float] = None  # m; the quantity the step is judged on
    clearance_kind: str = ""  # "env" | "self" | ""
    duration: float = 0.0
    details: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    t_start: float = 0.0
    t_end: float = 0.0

    def fail(self, message: str) -> None:
        self.failures.append(message)
        self.passed = False


class DemoAborted(Exception):
    """The run was interrupted (Ctrl-C, overall timeout, bring-up died): stop everything."""
