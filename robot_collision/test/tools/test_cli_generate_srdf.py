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


def _swing_urdf(arm_geometry: str) -> str:
    """base -> arm (revolute about z, limits +-pi) and base -> post (fixed). The arm, 0.5 m
    along x, passes through the 0.1 m post centred at x = 0.4 at q = 0 (the home pose): the
    pair arm/post is Default, and it collides for |q| below about 0.12-0.2 rad, i.e. in 3.5-8 %
    of uniform samples (closed-form bounds: the arm's axis crosses the post for |q| <=
    atan(0.05 / 0.45) = 0.11; its 0.02 m section cannot reach the post beyond
    atan(0.07 / 0.35) + 0.01 = 0.21)."""
    return f"""<robot name="swing">
  <link name="base"><collision><geometry><sphere radius="0.03"/></geometry></collision></link>
  <link name="arm"><collision><origin xyz="0.25 0 0"/><geometry>{arm_geometry}</geometry>
    </collision></link>
  <link name="post"><collision><origin xyz="0.4 0 0"/><geometry><box size="0.1 0.1 0.1"/>
    </geometry></collision></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-3.141592653589793" upper="3.141592653589793"
    velocity="1" effort="1"/></joint>
  <joint name="weld" type="fixed"><parent link="base"/><child link="post"/></joint>
</robot>"""


@pytest.mark.parametrize("mesh", [False, True])
def test_default_pair_colliding_in_samples_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mesh: bool
) -> None:
    """Issue 21 item 6: generate-srdf disabled Default pairs that collide in 7-9 % of the
    samples (Panda) without a word."""
    geometry = '<box size="0.5 0.02 0.02"/>'
    if mesh:
        corners = [(x, y, z) for x in (-0.25, 0.25) for y in (-0.01, 0.01) for z in (-0.01, 0.01)]
        (tmp_path / "bar.obj").write_text(
            "".join(f"v {x} {y} {z}\n" for x, y, z in corners)
            + "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n")
        geometry = '<mesh filename="bar.obj"/>'
    (tmp_path / "swing.urdf").write_text(_swing_urdf(geometry))
    out = tmp_path / "swing.srdf"
    rc = main(["generate-srdf", str(tmp_path / "swing.urdf"), "-o", str(out), "--samples",
               "4000", "-q"])
    assert rc == 0
    err = capsys.readouterr().err
    assert 'link1="arm" link2="post" reason="Default"' in out.read_text()
    line = next(ln for ln in err.splitlines() if ln.startswith("warning: arm / post"))
    share = float(line.split("colliding in ")[1].split(" %")[0])
    assert 3.0 < share < 8.5, line
    if mesh:
        assert "only for the hulls" in line and "--mesh-mode decomposition" in line
    else:
        assert "exact (no mesh)" in line


def test_generate_srdf_mesh_mode_option_is_accepted() -> None:
    from robot_collision.tools.cli import build_parser

    args = build_parser().parse_args(
        ["generate-srdf", "r.urdf", "-o", "r.srdf", "--mesh-mode", "decomposition"])
    assert args.mesh_mode == "decomposition"
    args = build_parser().parse_args(
        ["generate-srdf", "r.urdf", "-o", "r.srdf", "--mesh-mode", "auto"])
    assert args.mesh_mode == "auto"
