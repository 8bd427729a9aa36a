"""The demo's four steps, each a sequence of phases of the client, and their verdicts."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from .client import (
    CommandFn,
    DemoClient,
    DoneFn,
    Held,
    Settled,
    finite_median,
    fmt_mm,
    is_live,
    upper_quartile,
)
from .settings import (
    CAMERA_OBSTACLE,
    CAMERA_PUSH_START,
    CLEARANCE_TOLERANCE,
    END_EFFECTOR,
    FINAL_ERROR_TOLERANCE,
    FOLD_GROUP,
    FOLD_JOINT,
    FULL_SPEED_FRACTION,
    GOAL_BEHIND_POST,
    GOAL_IN_COLLISION,
    GOAL_PAST_CAMERA_BOX,
    SENSED_SURFACE_BAND,
    STILL_TOLERANCE,
    STOP_DISTANCE_BAND,
    STOPPED_FRACTION,
    TELEOP_OBSTACLE,
    UNREACHABLE_REGION,
    DemoAborted,
    StepResult,
)


class DemoScenario(DemoClient):
    """The scenario's steps, run by :meth:`run_scenario` (see the package docstring)."""

    def _begin(self, key: str, title: str) -> StepResult:
        self._step_key = key
        step = StepResult(key, title, t_start=self.now())
        self.steps.append(step)
        self.progress.line(f"step {key}: {title}")
        return step

    def _end(self, step: StepResult) -> None:
        step.t_end = self.now()
        step.duration = step.t_end - step.t_start
        step.passed = not step.failures
        mark = "ok" if step.passed else "FAILED: " + "; ".join(step.failures)
        self.progress.line(f"  -> {step.result}  {step.details}  [{mark}]")

    def _min_over(self, samples: list[dict[str, Any]], key: str) -> float:
        vals = [s[key] for s in samples if math.isfinite(s[key])]
        return min(vals) if vals else math.inf

    def step_plan_and_execute(self) -> None:
        step = self._begin("1", "plan around the post and execute through the filter")
        step.clearance_kind = "env"
        q0 = self.q
        result = self.plan(self.joint_goal(GOAL_BEHIND_POST), "to the goal behind the post")
        code = int(result.error_code)
        step.metrics.update(error_code=self.code_name(code), message=str(result.message),
                            planning_time_s=float(result.planning_time),
                            iterations=int(result.iterations))
        if code != self._PlanMotion.Result.SUCCESS:
            step.result = self.code_name(code)
            step.fail(f"planning failed: {result.message}")
            self._end(step)
            return
        straight_ok = self.checker.is_motion_valid(q0, np.array(GOAL_BEHIND_POST), self.world)
        joint_len, tcp_len = self.path_lengths(result.trajectory)
        waited = self.last_plan_wall_time - float(result.planning_time)
        step.metrics.update(path_length_rad=joint_len, tool_path_length_m=tcp_len,
                            straight_line_collision_free=bool(straight_ok),
                            request_to_result_s=self.last_plan_wall_time)
        note = f" (after {waited:.1f} s waiting for the planner's start-up)" if waited > 1 else ""
        self.progress.line(
            f"  planned in {result.planning_time:.2f} s{note}, {result.iterations} iterations: "
            f"{joint_len:.2f} rad, tool path {tcp_len:.2f} m; executing ...")
        m = self.execute(result.trajectory, "executing")
        step.metrics.update(m)
        samples = self.phase_samples("1", "execute")
        dmin = self._min_over(samples, "env_clearance")
        smin = self._min_over(samples, "self_clearance")
        step.min_clearance = dmin
        step.metrics.update(min_env_clearance_m=dmin, min_self_clearance_m=smin)
        step.result = "SUCCESS, executed"
        step.details = (f"plan {result.planning_time:.2f} s, path {joint_len:.2f} rad / "
                        f"{tcp_len:.2f} m, ran {m['execution_time_s']:.1f} s, final error "
                        f"{m['final_joint_error_rad'] * 1e3:.1f} mrad")
        if dmin < self.safety_env - CLEARANCE_TOLERANCE:
            step.fail(f"came {dmin * 1e3:.1f} mm from the world (safety distance "
                      f"{self.safety_env * 1e3:.0f} mm)")
        if smin < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"self clearance {smin * 1e3:.1f} mm < {self.safety_self * 1e3:.0f} mm")
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"final joint error {m['final_joint_error_rad']:.4f} rad > "
                      f"{FINAL_ERROR_TOLERANCE} rad")
        self._end(step)

    def step_teleop(self) -> None:
        step = self._begin("2", f"teleop: push the tool at the {TELEOP_OBSTACLE}, then pull back")
        self._push_and_pull(step, TELEOP_OBSTACLE)

    def _push_and_pull(self, step: StepResult, obstacle: str, sensed: bool = False) -> None:
        """Push the body closest to ``obstacle`` straight at it through the filter until it
        stops at the safety distance, then pull back at full speed; the step's verdicts.

        ``obstacle`` is judged by its true shape (the client knows it). A ``sensed`` one is
        known to the filter only as balls around a camera's points on its surface (radius from
        the pixel spacing, robot_collision.ros.point_clouds): the stop comes up to
        ``SENSED_SURFACE_BAND`` farther out, and "stopped" means
        stopped *approaching* (the closing speed). The balls' normals vary from point to point
        and from cloud to cloud, so a push along the face's normal presses partly along the
        sensed surface, and the filter, which only forbids approach, lets the tool slide
        (the tool speed is reported, not judged). Against a primitive the push is along the
        normal of the surface the filter sees: the filter's answer is to stand still, and the
        tool speed is judged too."""
        step.clearance_kind = "env"
        d0, _, body = self.pair_clearance(self.q, obstacle)
        speed = self.settings.teleop_speed
        band = STOP_DISTANCE_BAND + (SENSED_SURFACE_BAND if sensed else 0.0)
        step.metrics.update(closing_speed_m_s=speed, start_distance_m=d0, body=body,
                            sensed=sensed, stop_band_m=band)
        self.progress.line(f"  {body} is {d0 * 1e3:.0f} mm from the {obstacle}: pushing "
                           f"straight at it, closing at {speed:.2f} m/s")
        self._watch = obstacle

        def straight_at(sign: float) -> CommandFn:
            """Joint velocity along the distance gradient of the robot body closest to the
            obstacle: the most direct way into it (sign -1) or away from it (+1), at a closing
            (opening) speed of ``speed``."""
            def command(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
                _, J, _ = self.pair_row(q, obstacle)
                v: NDArray[np.float64] = sign * speed * J / max(float(J @ J), 1e-12)
                norm = float(np.linalg.norm(v))
                return v if norm <= 1.0 else v / norm  # at most 1 rad/s

            return command

        hold = self.settings.stop_hold
        slow = STOPPED_FRACTION * speed
        near = self.safety_env + band

        def still(window: list[dict[str, Any]]) -> tuple[float, float]:
            """(closing, tool) speeds (m/s) that three quarters of the window's ticks stay
            below: a tick or two of a twitch neither make nor break "stopped", an approach
            that is still slowing down does not pass for one."""
            return (upper_quartile([-s["watch_rate"] for s in window]),
                    upper_quartile([s["tcp_speed"] for s in window]))

        def stopped_in(window: list[dict[str, Any]]) -> bool:
            closing, tool = still(window)
            return bool(closing < slow and (sensed or tool < slow)
                        and window[-1]["watch_distance"] < near)

        stopped = Settled(self.samples, stopped_in, hold)

        def status(t: float) -> str:
            s = self.samples[-1]
            return (f"pushing: {s['watch_pair']} {fmt_mm(s['watch_distance'])}, closing at "
                    f"{-s['watch_rate']:.3f} m/s (commanded {speed:.2f})")

        reach = max(0.0, d0 - self.safety_env) / speed
        push_time = self.run_phase("push", 4.0 * reach + hold + 15.0, straight_at(-1.0), stopped,
                                   min_time=0.3, status=status)
        # judged on the window the phase ended on (or the last one, if it ran out of time)
        tail = stopped.window or self.phase_samples(step.key, "push")[-1:]
        end_dist, _, end_body = self.pair_clearance(self.q, obstacle)
        hold_closing = finite_median([-s["watch_rate"] for s in tail])
        hold_cmd = finite_median([-s["watch_rate_cmd"] for s in tail])
        hold_tool = finite_median([s["tcp_speed"] for s in tail])
        hold_scaling = finite_median([s["filter_scaling"] for s in tail])
        quartile_closing, quartile_tool = still(tail)
        active = sorted({c for s in tail for c in s["active_constraints"].split() if c})
        self.progress.line(f"  stopped {end_dist * 1e3:.1f} mm from the {obstacle} "
                           f"({end_body}) while commanded to close at {hold_cmd:.2f} m/s; "
                           "pulling back")

        moving = Held(self.samples, lambda s: True, self.settings.away_time)
        self.run_phase("away", self.settings.away_time + 10.0, straight_at(1.0), moving,
                       status=lambda t: f"pulling back: opening at "
                       f"{self.samples[-1]['watch_rate']:.3f} m/s")
        self.hold("stop", 0.15)
        self._watch = ""
        away = [s for s in self.phase_samples(step.key, "away", after=0.1) if is_live(s)]
        away_rate = finite_median([s["watch_rate"] for s in away])
        away_scaling = finite_median([s["filter_scaling"] for s in away])
        after, _, _ = self.pair_clearance(self.q, obstacle)
        dmin = self._min_over(self.phase_samples(step.key), "env_clearance")
        step.min_clearance = dmin
        step.metrics.update(
            push_time_s=push_time, stop_distance_m=end_dist, stop_body=end_body,
            min_env_clearance_m=dmin, pushing_commanded_closing_speed_m_s=hold_cmd,
            pushing_closing_speed_m_s=hold_closing, pushing_tool_speed_m_s=hold_tool,
            pushing_filter_scaling=hold_scaling, active_constraints_while_pushing=active,
            away_opening_speed_m_s=away_rate, away_speed_fraction=away_rate / speed,
            away_filter_scaling=away_scaling, distance_after_away_m=after)
        step.metrics.update(pushing_closing_speed_quartile_m_s=quartile_closing,
                            pushing_tool_speed_quartile_m_s=quartile_tool)
        step.result = "stopped, then full speed away"
        step.details = (f"stopped {end_dist * 1e3:.1f} mm from the {obstacle} (closing "
                        f"{hold_closing * 1e3:.1f} mm/s, tool {hold_tool * 1e3:.1f} mm/s while "
                        f"pushing at {speed * 1e3:.0f}); away at {100 * away_rate / speed:.0f}% "
                        "speed")
        if dmin < self.safety_env - CLEARANCE_TOLERANCE:
            step.fail(f"came {dmin * 1e3:.1f} mm from the world, below the safety distance "
                      f"{self.safety_env * 1e3:.0f} mm")
        if not quartile_closing <= slow:
            step.fail(f"did not stop approaching: closing faster than {slow:.3f} m/s in more "
                      f"than a quarter of the last {hold:g} s (median {hold_closing:.3f} m/s)")
        if not (sensed or quartile_tool <= slow):
            step.fail(f"did not stop: the tool moved faster than {slow:.3f} m/s in more than a "
                      f"quarter of the last {hold:g} s (median {hold_tool:.3f} m/s)")
        if not end_dist <= near:
            step.fail(f"stopped {end_dist * 1e3:.1f} mm from the {obstacle}, not at the "
                      f"safety distance {self.safety_env * 1e3:.0f} mm (+ {band * 1e3:.0f} mm)")
        if not away_rate >= FULL_SPEED_FRACTION * speed:
            step.fail(f"moving away at {away_rate:.3f} m/s, below "
                      f"{FULL_SPEED_FRACTION:.0%} of the commanded {speed:.2f} m/s")
        if not after > end_dist:
            step.fail("pulling back did not increase the distance")
        self._end(step)

    def set_protection(self, group: str, enabled: bool, command: Optional[CommandFn]) -> str:
        req = self._SetProtection.Request()
        req.group = group
        req.enabled = enabled
        fut = self._protection_client.call_async(req)
        if not self.wait_for("protection", fut.done, 30.0, command):
            raise RuntimeError("set_protection did not answer within 30 s")
        res = fut.result()
        if res is None or not res.success:
            raise RuntimeError(f"set_protection({group!r}, {enabled}) failed: "
                               f"{getattr(res, 'message', 'no response')}")
        return str(res.message)

    def move_home(self, step: StepResult) -> bool:
        home = self.robot.home_configuration()
        self.progress.line("  moving home with the planner first")
        result = self.plan(self.joint_goal(home), "home")
        if int(result.error_code) != self._PlanMotion.Result.SUCCESS:
            step.fail(f"planning home failed: {self.code_name(int(result.error_code))}: "
                      f"{result.message}")
            return False
        m = self.execute(result.trajectory, "moving home")
        step.metrics["move_home"] = m
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"did not reach home (error {m['final_joint_error_rad']:.3f} rad)")
            return False
        return True

    def step_self_collision(self) -> None:
        step = self._begin("3a", "self-collision: fold the wrist, protection on")
        step.clearance_kind = "self"
        if not self.move_home(step):
            step.result = "not home"
            self._end(step)
            return
        self._step_key = "3a"
        j = self.robot.joint_index(FOLD_JOINT)
        fold = np.zeros(self.n)
        fold[j] = -self.settings.fold_speed

        def fold_cmd(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
            return fold

        lower = float(self.robot.lower[j])
        band = self.safety_self + STOP_DISTANCE_BAND

        def still(window: float, where: Callable[[dict[str, Any]], bool]) -> DoneFn:
            return Held(self.samples, lambda s: bool(abs(s["qd"][j]) < 0.05 and where(s)),
                         window)

        def status(t: float) -> str:
            s = self.samples[-1]
            return (f"{FOLD_JOINT} {s['q'][j]:+.2f} rad, {s['self_pair']} "
                    f"{fmt_mm(s['self_clearance'])}")

        self.progress.line(f"  folding {FOLD_JOINT} at {-self.settings.fold_speed:+.1f} rad/s "
                           "into the forearm")
        self.run_phase("fold", self.settings.fold_max_time, fold_cmd,
                       still(0.4, lambda s: bool(s["self_clearance"] < band)), min_time=0.5,
                       status=status)
        on = self.phase_samples("3a", "fold")
        on_min = self._min_over(on, "self_clearance")
        on_end = on[-1]["self_clearance"]
        step.min_clearance = on_min
        step.metrics.update(min_self_clearance_m=on_min, stop_self_clearance_m=on_end,
                            pair=on[-1]["self_pair"], fold_joint_position=float(on[-1]["q"][j]))
        step.result = "stopped"
        step.details = (f"{on[-1]['self_pair']} stopped at {on_end * 1e3:.1f} mm, "
                        f"{FOLD_JOINT} {on[-1]['q'][j]:+.2f} rad")
        if on_min < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"self clearance {on_min * 1e3:.1f} mm below the safety distance "
                      f"{self.safety_self * 1e3:.0f} mm")
        if on_end > self.safety_self + STOP_DISTANCE_BAND:
            step.fail(f"stopped at {on_end * 1e3:.1f} mm, not at the safety distance")
        self._end(step)

        step = self._begin("3b", f"  protection off for the '{FOLD_GROUP}' group")
        step.clearance_kind = "self"
        msg = self.set_protection(FOLD_GROUP, False, fold_cmd)
        self.progress.line(f"  {msg}")
        self.run_phase("fold", self.settings.off_time + 10.0, fold_cmd,
                       still(0.3, lambda s: bool(s["q"][j] < lower + 0.01)),
                       min_time=self.settings.off_time, status=status)
        off = self.phase_samples("3b")
        off_min = self._min_over(off, "self_clearance")
        disabled = any(FOLD_GROUP in s["disabled_groups"].split() for s in off)
        step.min_clearance = off_min
        step.metrics.update(min_self_clearance_m=off_min, status_reports_disabled=disabled,
                            fold_joint_position=float(off[-1]["q"][j]),
                            closer_than_protected_by_m=on_min - off_min)
        step.result = "in contact" if off_min <= 0 else "closer"
        step.details = (f"{off[-1]['self_pair']} reached {off_min * 1e3:.1f} mm "
                        f"({(on_min - off_min) * 1e3:.0f} mm closer than protected)")
        if not off_min < min(self.safety_self - CLEARANCE_TOLERANCE, on_min - 0.005):
            step.fail(f"unprotected, the pair came only to {off_min * 1e3:.1f} mm (protected: "
                      f"{on_min * 1e3:.1f} mm): no visible difference")
        if not disabled:
            step.fail(f"the filter status never listed '{FOLD_GROUP}' as disabled")
        self._end(step)

        step = self._begin("3c", "  protection on again")
        step.clearance_kind = "self"
        msg = self.set_protection(FOLD_GROUP, True, fold_cmd)
        self.progress.line(f"  {msg}; still commanding the fold")
        out_again = Held(self.samples, lambda s: bool(
            s["self_clearance"] >= self.safety_self - CLEARANCE_TOLERANCE
            and abs(s["qd"][j]) < 0.05), 0.3)
        self.run_phase("recover", self.settings.recover_time + 10.0, fold_cmd, out_again,
                       min_time=self.settings.recover_time, status=status)
        rec = self.phase_samples("3c", "recover")
        tail = [s for s in rec if s["t"] >= rec[-1]["t"] - 0.2 and is_live(s)] or rec[-1:]
        recovered = finite_median([s["self_clearance"] for s in tail])
        self.progress.line(f"  pushed back out to {recovered * 1e3:.1f} mm; unfolding")
        home = self.robot.home_configuration()

        def unfold(t: float, q: NDArray[np.float64]) -> NDArray[np.float64]:
            v: NDArray[np.float64] = np.clip(3.0 * (home - q), -1.0, 1.0)
            return v

        self.run_phase("unfold", self.settings.unfold_max_time, unfold,
                       lambda t: float(np.max(np.abs(home - self.q))) < 0.01, status=status)
        self.hold("stop", 0.15)
        end_disabled = self.samples[-1]["disabled_groups"].split()
        step.min_clearance = recovered
        step.metrics.update(recovered_self_clearance_m=recovered,
                            disabled_groups_at_end=end_disabled,
                            home_error_rad=float(np.max(np.abs(home - self.q))))
        step.result = "pushed back out"
        step.details = (f"the filter separated the pair to {recovered * 1e3:.1f} mm against the "
                        "folding command, then unfolded")
        if recovered < self.safety_self - CLEARANCE_TOLERANCE:
            step.fail(f"protection on again: the pair stayed at {recovered * 1e3:.1f} mm, below "
                      f"the safety distance {self.safety_self * 1e3:.0f} mm")
        if end_disabled:
            step.fail(f"groups still disabled at the end: {end_disabled}")
        self._end(step)

    def step_errors(self) -> None:
        step = self._begin("4a", "goal in collision")
        self.come_to_rest()
        before = self.q
        q_goal = np.array(GOAL_IN_COLLISION)
        pairs = self.checker.check(q_goal, self.world, exhaustive=True).colliding_pairs
        step.metrics["colliding_pairs_core"] = [f"{a}={b}" for a, b in pairs]
        result = self.plan(self.joint_goal(q_goal), "to a goal inside the crate")
        self.run_phase("idle", 0.2)
        code = self.code_name(int(result.error_code))
        message = str(result.message)
        step.result = code
        step.metrics.update(error_code=code, message=message,
                            trajectory_points=len(result.trajectory.points))
        step.details = f"\"{message[:90]}{'...' if len(message) > 90 else ''}\""
        if code != "GOAL_IN_COLLISION":
            step.fail(f"expected GOAL_IN_COLLISION, got {code}: {message}")
        if not any(a in message and b in message for a, b in pairs):
            step.fail(f"the message names none of the colliding pairs "
                      f"{step.metrics['colliding_pairs_core']}")
        if len(result.trajectory.points):
            step.fail("a failed plan came with a trajectory")
        self._check_still(step, before)
        self._end(step)

        step = self._begin("4b", "unreachable goal region")
        before = self.q
        goal = self._PlanMotion.Goal()
        goal.use_goal_region = True
        goal.end_effector = END_EFFECTOR
        goal.reference_pose.orientation.w = 1.0
        goal.end_effector_offset_pose.orientation.w = 1.0
        bounds = [v for row in UNREACHABLE_REGION for v in row] + [-math.pi, math.pi] * 3
        goal.goal_region_bounds = bounds
        goal.time_limit = self.settings.plan_time_limit
        result = self.plan(goal, "to a region 1.6 m away")
        self.run_phase("idle", 0.2)
        code = self.code_name(int(result.error_code))
        message = str(result.message)
        step.result = code
        step.metrics.update(error_code=code, message=message)
        step.details = f"\"{message[:90]}{'...' if len(message) > 90 else ''}\""
        if code != "GOAL_UNREACHABLE":
            step.fail(f"expected GOAL_UNREACHABLE, got {code}: {message}")
        self._check_still(step, before)
        self._end(step)

    def _check_still(self, step: StepResult, before: NDArray[np.float64]) -> None:
        moved = float(np.max(np.abs(self.q - before)))
        step.metrics["joint_motion_rad"] = moved
        if moved > STILL_TOLERANCE:
            step.fail(f"the arm moved by {moved:.5f} rad")

    def move_to(self, step: StepResult, q: NDArray[np.float64], label: str) -> bool:
        """Plan to ``q`` and execute (a transfer move of a step); False (and a failure) if
        either goes wrong."""
        self.progress.line(f"  moving to {label} with the planner first")
        result = self.plan(self.joint_goal(q), label)
        if int(result.error_code) != self._PlanMotion.Result.SUCCESS:
            step.fail(f"planning to {label} failed: {self.code_name(int(result.error_code))}: "
                      f"{result.message}")
            return False
        m = self.execute(result.trajectory, f"moving to {label}")
        step.metrics[f"move_to_{label}"] = m
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"did not reach {label} (error {m['final_joint_error_rad']:.3f} rad)")
            return False
        return True

    def step_camera(self) -> None:
        """A box only the camera sees: the filter and the planner know it from its clouds
        only. The camera sees the faces that face it, so the push comes from that side."""
        ready = self.robot.named_configuration("ready")
        step = self._begin("5a", f"teleop: push the arm at the {CAMERA_OBSTACLE}, which only "
                                 "the camera sees, then pull back")
        if not self.move_to(step, np.array(CAMERA_PUSH_START), "above the box"):
            step.result = "not at ready"
            self._end(step)
        else:
            self._step_key = "5a"
            step.metrics["sensed_points"] = self.sensed_point_count()
            self._push_and_pull(step, CAMERA_OBSTACLE, sensed=True)
        step = self._begin("5b", f"plan past the {CAMERA_OBSTACLE} (known from point clouds "
                                 "only) and execute")
        step.clearance_kind = "env"
        if not self.move_to(step, ready, "ready"):
            step.result = "not at ready"
            self._end(step)
            return
        self._step_key = "5b"
        q0 = self.q
        straight_ok = self.checker.is_motion_valid(q0, np.array(GOAL_PAST_CAMERA_BOX),
                                                   self.world)
        result = self.plan(self.joint_goal(GOAL_PAST_CAMERA_BOX),
                           f"past the {CAMERA_OBSTACLE}")
        code = int(result.error_code)
        step.metrics.update(error_code=self.code_name(code), message=str(result.message),
                            straight_line_collision_free=bool(straight_ok),
                            sensed_points=self.sensed_point_count())
        if code != self._PlanMotion.Result.SUCCESS:
            step.result = self.code_name(code)
            step.fail(f"planning failed: {result.message}")
            self._end(step)
            return
        self._watch = CAMERA_OBSTACLE
        m = self.execute(result.trajectory, "executing")
        self._watch = ""
        step.metrics.update(m)
        samples = self.phase_samples("5b", "execute")
        dmin = self._min_over(samples, "watch_distance")
        step.min_clearance = dmin
        step.metrics.update(min_camera_box_clearance_m=dmin)
        step.result = "SUCCESS, executed"
        step.details = (f"{self.sensed_point_count()} sensed points; the path kept "
                        f"{fmt_mm(dmin)} from the {CAMERA_OBSTACLE} (the straight motion "
                        f"{'misses' if straight_ok else 'goes through'} it)")
        if straight_ok:
            step.fail(f"the straight motion misses the {CAMERA_OBSTACLE}: nothing to show")
        # Judged against the real box and the safety distance: each sensed point stands for
        # the surface around it and the space behind it (robot_collision.ros.point_clouds), so
        # the safety distance holds against the box, not only its points.
        if dmin < self.safety_env - CLEARANCE_TOLERANCE:
            step.fail(f"came {dmin * 1e3:.1f} mm from the {CAMERA_OBSTACLE}, below the safety "
                      f"distance {self.safety_env * 1e3:.0f} mm")
        if m["final_joint_error_rad"] > FINAL_ERROR_TOLERANCE:
            step.fail(f"final joint error {m['final_joint_error_rad']:.4f} rad > "
                      f"{FINAL_ERROR_TOLERANCE} rad")
        self._end(step)

    def run_scenario(self) -> None:
        """Readiness, then every step (a failing step does not stop the later ones)."""
        self.wait_ready()
        for step_fn in (self.step_plan_and_execute, self.step_teleop, self.step_self_collision,
                        self.step_errors, self.step_camera):
            try:
                step_fn()
            except DemoAborted as exc:
                if self.steps and not self.steps[-1].t_end:
                    step = self.steps[-1]
                    step.result = step.result or "aborted"
                    step.fail(f"aborted: {exc}")
                    self._end(step)
                raise
            except Exception as exc:
                step = self.steps[-1] if self.steps else self._begin("?", step_fn.__name__)
                step.fail(f"{type(exc).__name__}: {exc}")
                if not step.result:
                    step.result = "error"
                self._end(step)
                with contextlib.suppress(DemoAborted):
                    self.hold("stop", 0.2)
        self._step_key = "end"
