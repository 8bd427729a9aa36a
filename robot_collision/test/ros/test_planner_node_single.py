"""The planner's action server on a SingleThreadedExecutor (as bring-up runs it): the same tests,
so cancel, preemption and feedback must not depend on executor threads."""

from __future__ import annotations

from test_planner_node import *  # noqa: F403

ROS_EXECUTOR = "single"
