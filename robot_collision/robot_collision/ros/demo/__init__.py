"""``make demo`` / ``robot_collision_demo``: the whole system on the default arm, scripted.

What it does
------------
1. Starts the bring-up (:mod:`robot_collision.ros.bringup`: ``mock_arm``, ``collision_checker``,
   ``velocity_filter``, ``planner`` in one process, one ``MultiThreadedExecutor``) as a child
   process with ``config/robot_collision.yaml`` and the demo world ``config/demo_world.yaml``,
   exactly as it would run next to a real arm, with the simulated arm in place of the hardware.
   Its log goes to ``<output>/bringup.log``.
2. Runs a scripted scenario in this process as a separate client node (:class:`DemoClient`),
   talking to the nodes only over their topics, services and action:

   1. plans with ``/planner/plan_motion`` to a joint goal behind the post (the straight joint
      motion would hit it) and executes the trajectory by streaming joint velocities through the
      velocity filter (a tracking controller, ``q̇ = q̇_ref(t) + Kp (q_ref(t) − q)``);
   2. "teleop": pushes the tool straight at the post at a constant Cartesian speed; the filter
      stops the arm at the safety distance. Then pulls back: full speed at once;
   3. moves home (planner again), then folds the wrist into the forearm (``joint6`` towards its
      limit, the link5-link7 pair) with protection on (stops at the self safety distance), off
      for the ``wrist`` group (the pair closes further, into contact) and on again (the filter
      pushes the pair back out), then unfolds;
   4. asks for a goal in collision and for an unreachable goal region: the planner answers
      ``GOAL_IN_COLLISION`` (naming the pair) and ``GOAL_UNREACHABLE``; nothing moves;
   5. a box that only the ``mock_camera`` knows (``config/demo_camera_world.yaml``; the other
      nodes take its point clouds from ``mock_camera/points``): pushes the tool down at it (the
      filter stops the arm at the safety distance from the sensed points) and pulls back, then
      plans past it (the straight joint motion goes through it) and executes; the figure
      shows the camera's points. The camera sees only the faces that face it: the verdict on
      the real box is the safety distance where it is seen and no contact elsewhere.

   Every verdict uses an independent clearance computation in this process (the core
   :class:`~robot_collision.collision.checker.CollisionChecker` on every received joint state), not
   the
   nodes' own reports.
3. Prints a summary table (one line per step: result, smallest clearance, time) and writes
   ``<output>/``: ``demo.png`` (clearance over time with the safety distances, commanded vs
   filtered tool speed, the collision geometry at the closest approaches), ``demo_data.csv``
   (one row per control tick), ``summary.json`` and ``demo_params.yaml`` (the parameter file the
   bring-up ran with).

Exit code 0 only when every step behaved as expected; 1 when a step did not; 2 when the system
did not come up or the run timed out; 130 on Ctrl-C. ``--fast`` shortens holds and motions (the
test suite runs it: ``test/test_demo.py``).

Run::

    make demo                                   # or: .venv/bin/robot_collision_demo
    make demo DEMO_ARGS="--fast --no-figure"

Modules: :mod:`.settings` (goals, tolerances, records), :mod:`.bringup_process` (the nodes as a
child process), :mod:`.client` (the client node and its phase runner), :mod:`.scenario` (the
steps and verdicts), :mod:`.figure` (CSV, figure, summary), :mod:`.run` (``main``).
"""

from __future__ import annotations

from .run import main

__all__ = ["main"]
