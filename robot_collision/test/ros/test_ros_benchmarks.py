"""Small versions of the fuzz and soak benchmarks (``benchmarks/bench_fuzz.py``,
``benchmarks/bench_soak.py``): the four nodes as separate processes with the package's
parameter file, as ``ros2 launch`` starts them. The long versions are
``benchmarks/run.py fuzz`` and ``benchmarks/run.py soak --minutes N``.

Fuzz: after each burst of bad messages (huge ones included) every node that takes the kind
does its normal work again within 1 s of good input, no node dies, the filter never outputs a
non-finite value, a value over a velocity limit or a non-zero value on a fault, malformed
goals end INVALID_GOAL (never INTERNAL_ERROR) and malformed collision checks fail.
Soak: a short run of normal traffic logs no error, keeps every filter output within its
promises and leaves the idle planner at no more than 2 % of a core.
"""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("psutil")

import bench_fuzz
import bench_soak

pytestmark = pytest.mark.ros

RECOVERY_S = 1.0  # issue 10: each node resumes normal work within 1 s of good input


def _no_violations(outputs: dict[str, int]) -> None:
    assert outputs["checked"] > 0
    bad = {k: v for k, v in outputs.items() if k != "checked" and v}
    assert not bad, f"filter outputs broke its promises: {bad}"


def test_fuzz_small() -> None:
    r = bench_fuzz.fuzz(per_kind=40, huge_count=2, goal_count=100, settle=1.0)
    assert "error" not in r, r
    assert r["all_alive"], {n: v["alive"] for n, v in r["nodes"].items()}
    _no_violations(r["filter_outputs"])
    slow = {(kind, node): rec for kind, v in r["kinds"].items()
            for node, rec in v["recovery_s"].items() if rec is None or rec > RECOVERY_S}
    attempts = {kind: v["planner_attempts"] for kind, v in r["kinds"].items()
                if (kind, "planner") in slow}
    assert not slow, (f"recovery after a burst above {RECOVERY_S} s: {slow}; planner goals "
                      f"[s after the burst: sent, accepted, answered; code, message]: "
                      f"{attempts} (logs in {r['log_dir']})")
    assert r["goals"]["internal_error"] == 0, r["goals"]["codes"]
    assert not r["goals"]["unexpected"], r["goals"]["unexpected"]
    assert r["goals"]["recovery_s"] is not None
    assert not r["check_requests"]["succeeded_on_bad_input"], r["check_requests"]
    assert set(r["exit_codes"].values()) == {0}, r["exit_codes"]


def test_soak_small() -> None:
    r = bench_soak.soak(minutes=0.25, idle=4.0, warmup=3.0, sample_period=2.0)
    assert "error" not in r, r
    assert r["all_alive"]
    _no_violations(r["filter_outputs"])
    assert r["errors_logged"] == 0, {n: v["errors_logged"] for n, v in r["nodes"].items()}
    assert r["outputs_matched"] >= 0.8 * r["commands_sent"], r
    assert r["goals_succeeded"] == r["goals_sent"] >= 1
    assert r["nodes"]["planner"]["idle_cpu_pct"] <= 2.0, r["nodes"]["planner"]
    assert set(r["exit_codes"].values()) == {0}, r["exit_codes"]


def test_realstate_small() -> None:
    """Issue 18 (``benchmarks/run.py realstate``): the filter and the planner as processes fed
    a lagging, split, stopped and foreign robot state over real topics; judged against the mock
    arm's own (true) positions and the wall primitive."""
    import bench_realstate

    r = bench_realstate.realstate(lags=(250,), push_s=2.5, split_s=2.5, escapes=60,
                                  panda=False, stale_s=1.5, kills=0, pushes=1)
    assert "error" not in r, r
    lag = r["lag"]["250ms"]
    assert lag["min_true_clearance_mm"] >= lag["margin_mm"] - 3.0, lag
    for mode, v in r["split"].items():
        # (the old filter: 0 % with two publishers, 72-82 flips with a gripper publisher. A
        # starved CI machine can delay states past state_timeout now and then, and zeros are
        # then right: once one "stale state" of ~0.3 s in 2.5 s gave 0.871 with 1 flip. The
        # relay is this process: outputs while it kept up are judged on their own too)
        assert v["nonzero_output_fraction"] >= 0.75 and v["ok_to_fault_flips"] <= 3, (mode, v)
        assert v["nonzero_fraction_relay_fresh"] >= 0.9, (mode, v)
    assert r["escapes"]["default_arm"]["escapes_zeroed"] == 0, r["escapes"]
    goal = r["stale_goal"]
    assert goal["error_code"] == "INVALID_GOAL" and "stale" in goal["message"], goal
    desc = r["foreign_description"]
    assert desc["output_sizes_before"] == [7] and desc["output_sizes_after"] == [7], desc
    assert desc["refusal_logged"], desc
