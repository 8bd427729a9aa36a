"""``robot_collision generate-srdf`` (called through main, in process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from robot_collision import RobotModel, default_robot_paths
from robot_collision.tools.cli import main


def test_generate_srdf_writes_a_loadable_srdf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urdf, srdf = default_robot_paths()
    out = tmp_path / "arm.srdf"
    rc = main(["generate-srdf", str(urdf), "-o", str(out), "--samples", "2000", "--seed", "3"])
    assert rc == 0
    captured = capsys.readouterr()
    assert "sampling [" in captured.err and "2000/2000" in captured.err
    assert "disable_collisions added" in captured.out
    robot = RobotModel.from_urdf(urdf, srdf=out)
    assert robot.disabled_pairs() and 'reason="Never"' in out.read_text()
    # merged into the shipped SRDF: its groups stay, its own pairs are not repeated
    merged = tmp_path / "merged.srdf"
    args = ["generate-srdf", str(urdf), "-o", str(merged), "--samples", "500", "-q"]
    assert main([*args, "--srdf", str(srdf)]) == 0
    m = RobotModel.from_urdf(urdf, srdf=merged)
    assert set(m.groups) == set(RobotModel.from_urdf(urdf, srdf=srdf).groups)
    pairs = [frozenset(p) for p in m.disabled_pairs()]
    assert len(pairs) == len(set(pairs))


def test_generate_srdf_reports_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate-srdf", str(tmp_path / "none.urdf"), "-o", str(tmp_path / "x")]) == 1
    assert "does not exist" in capsys.readouterr().err
    urdf = default_robot_paths()[0]
    assert main(["generate-srdf", str(urdf), "-o", str(tmp_path / "x"), "--samples", "0"]) == 1
    assert "samples" in capsys.readouterr().err
