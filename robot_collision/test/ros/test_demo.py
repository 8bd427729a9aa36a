"""``make demo`` must not rot: run the demo end to end in ``--fast`` mode, as a user would
(a child process, real bring-up, real topics), and check its verdicts and outputs.

Deselect with ``-m "not slow"``. The run uses its own ROS domain id (not the one of the test
session) and its own namespace, so that it does not see the topics of other tests or of a demo
or bring-up running elsewhere on this machine.
"""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from robot_collision.ros.demo.settings import SENSED_SURFACE_BAND, STOP_DISTANCE_BAND

pytest.importorskip("rclpy")
pytest.importorskip("robot_collision_interfaces.msg")

ROOT = Path(__file__).resolve().parents[3]  # repository root
DEMO_TIMEOUT = 330.0  # s; the demo's own --fast limit is 280 s, typically it takes 25-60 s
EXPECTED_STEPS = ["1", "2", "3a", "3b", "3c", "4a", "4b", "5a", "5b"]


def _domain_id() -> str:
    taken = os.environ.get("ROS_DOMAIN_ID", "")
    choices = [str(i) for i in range(1, 102) if str(i) != taken]
    return random.choice(choices)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """(exit code, console output, output folder) of one ``--fast`` demo run."""
    out = tmp_path_factory.mktemp("demo") / "demo_output"
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=_domain_id(),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        ROS_LOG_DIR=str(out.parent / "ros_log"),
        PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT / "robot_collision"), env.get("PYTHONPATH", "")) if p),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "robot_collision.ros.demo", "--fast", "--output", str(out),
         "--namespace", f"demo_test_{os.getpid()}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=DEMO_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # the demo then stops its bring-up child
        try:
            output, _ = proc.communicate(timeout=40.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        pytest.fail(f"the demo did not finish within {DEMO_TIMEOUT:g} s:\n{output[-4000:]}")
    (out.parent / "console.txt").write_text(output, encoding="utf-8")
    return proc.returncode, output, out


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.timeout(420)
def test_demo_fast_passes(demo_run: tuple[int, str, Path]) -> None:
    code, output, _ = demo_run
    assert code == 0, f"demo exit code {code}:\n{output[-6000:]}"
    assert "every step behaved as expected" in output
    for key in EXPECTED_STEPS:  # the summary table
        assert any(line.startswith(f"{key} ") and " PASS " in line
                   for line in output.splitlines()), f"no PASS line for step {key}:\n{output}"


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.timeout(420)
def test_demo_summary_json(demo_run: tuple[int, str, Path]) -> None:
    _, output, out = demo_run
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["passed"] is True and summary["exit_code"] == 0, output[-6000:]
    assert summary["mode"] == "fast"
    assert summary["duration_s"] < 300
    steps = {s["key"]: s for s in summary["steps"]}
    assert list(steps) == EXPECTED_STEPS
    assert all(s["passed"] and not s["failures"] for s in steps.values())
    d_env = summary["safety_distance_env_m"]
    d_self = summary["safety_distance_self_m"]
    assert d_env > 0 and d_self > 0

    m1 = steps["1"]["metrics"]
    assert m1["error_code"] == "SUCCESS"
    assert m1["planning_time_s"] > 0 and m1["path_length_rad"] > 0
    assert not m1["straight_line_collision_free"]  # the goal really is behind an obstacle
    assert m1["min_env_clearance_m"] >= d_env - 0.001
    assert m1["final_joint_error_rad"] <= 0.01

    m2 = steps["2"]["metrics"]
    assert d_env - 0.001 <= m2["min_env_clearance_m"] <= m2["stop_distance_m"] <= d_env + 0.01
    assert m2["pushing_closing_speed_m_s"] <= 0.1 * m2["closing_speed_m_s"]
    assert m2["away_speed_fraction"] >= 0.9

    assert steps["3a"]["metrics"]["min_self_clearance_m"] >= d_self - 0.001
    assert steps["3b"]["metrics"]["min_self_clearance_m"] < d_self - 0.001
    assert steps["3b"]["metrics"]["status_reports_disabled"] is True
    assert steps["3c"]["metrics"]["recovered_self_clearance_m"] >= d_self - 0.001
    assert steps["3c"]["metrics"]["disabled_groups_at_end"] == []

    m4a, m4b = steps["4a"]["metrics"], steps["4b"]["metrics"]
    assert m4a["error_code"] == "GOAL_IN_COLLISION" and "crate" in m4a["message"]
    assert m4b["error_code"] == "GOAL_UNREACHABLE"
    assert m4a["joint_motion_rad"] <= 1e-4 and m4b["joint_motion_rad"] <= 1e-4

    # step 5: the box only the camera sees (judged against the real box by the client)
    m5a, m5b = steps["5a"]["metrics"], steps["5b"]["metrics"]
    assert m5a["sensed_points"] > 100
    assert d_env - 0.001 <= m5a["min_env_clearance_m"] <= m5a["stop_distance_m"]
    # + the sensed surface's balls (radius from the pixel spacing, see the demo's settings)
    assert m5a["stop_distance_m"] <= d_env + STOP_DISTANCE_BAND + SENSED_SURFACE_BAND
    assert m5b["error_code"] == "SUCCESS" and m5b["straight_line_collision_free"] is False
    # issue 19: the safety distance holds against the real box, not only its sensed points
    assert m5b["min_camera_box_clearance_m"] >= d_env - 0.001


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.timeout(420)
def test_demo_figure_and_data(demo_run: tuple[int, str, Path]) -> None:
    _, _, out = demo_run
    png = out / "demo.png"
    assert png.is_file() and png.stat().st_size > 50_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "demo_data.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) > 500
    for column in ("t", "step", "q_joint1", "cmd_joint1", "filtered_joint1", "env_clearance",
                   "self_clearance", "tcp_speed_cmd", "tcp_speed_filtered", "filter_scaling"):
        assert column in rows[0]
    assert {r["step"] for r in rows} >= set(EXPECTED_STEPS)
    assert (out / "demo_params.yaml").is_file() and (out / "bringup.log").is_file()
