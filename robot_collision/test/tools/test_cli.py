"""The ``robot_collision`` command line: ``check-model`` on robots built so that what it must
print (counts, dropped entries, colliding pairs at home) is known by construction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from robot_collision.tools.cli import build_parser, main

# base -> a (revolute) -> b (revolute) -> c (fixed). At home, a's box reaches b's sphere's
# neighbour c: a and c overlap (1 cm), a-b and b-c are parent pairs (skipped).
URDF = """<robot name="toy">
  <link name="base"/>
  <link name="a"><collision><origin xyz="0 0 0.25"/><geometry><box size="0.1 0.1 0.5"/>
    </geometry></collision></link>
  <link name="b"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="c"><collision><geometry><capsule radius="0.05" length="0.1"/></geometry>
    </collision><collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.02" length="0.1"/>
    </geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" velocity="0" effort="0"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.6"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" velocity="2" effort="1"/></joint>
  <joint name="weld" type="fixed"><parent link="b"/><child link="c"/>
    <origin xyz="0 0 -0.14"/></joint>
</robot>"""

SRDF = """<robot name="toy">
  <disable_collisions link1="base" link2="c" reason="Never"/>
  <disable_collisions link1="c" link2="gripper" reason="Never"/>
</robot>"""


@pytest.fixture()
def toy(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "toy.urdf").write_text(URDF)
    (tmp_path / "toy.srdf").write_text(SRDF)
    return tmp_path / "toy.urdf", tmp_path / "toy.srdf"


def test_check_model_reports_loaded_dropped_and_colliding(
    toy: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    urdf, srdf = toy
    assert main(["check-model", str(urdf), "--srdf", str(srdf)]) == 0
    out = capsys.readouterr().out
    assert "robot 'toy'" in out
    assert "links: 4 (base 'base'); joints: 3 (1 fixed, 2 revolute); configuration: 2 joints" in out
    assert "collision shapes: 4 on 3 links (1 box, 1 capsule, 1 cylinder, 1 sphere)" in out
    assert "1 disabled pairs" in out
    assert "dropped or defaulted: 2" in out
    assert "[defaulted] URDF: joint 'j1' (revolute) gives no velocity limit" in out
    assert "[dropped] SRDF: disable_collisions of 'c' and 'gripper'" in out
    # a (box up to z = 0.5) and c (capsule centred at z = 0.46, reaching 0.46 - 0.1 = 0.36)
    assert "self-colliding pairs at home q = [0. 0.]: 1" in out
    assert "  c -- a  (penetration 0.1000 m)" in out or "  a -- c  (penetration" in out


def test_check_model_on_mesh_robot_lists_vertex_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tet.obj").write_text(
        "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    )
    (tmp_path / "m.urdf").write_text(
        '<robot name="m"><link name="base"><collision><geometry><mesh filename="tet.obj"/>'
        "</geometry></collision></link></robot>"
    )
    assert main(["check-model", str(tmp_path / "m.urdf")]) == 0
    out = capsys.readouterr().out
    assert "base        4 v       4 f     4 hull  tet.obj" in out
    assert "dropped or defaulted: nothing" in out
    assert "self-colliding pairs at home q = []: none" in out


def test_check_model_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.urdf").write_text('<robot name="r"><link name="a"/><joint name="j"/></robot>')
    assert main(["check-model", str(tmp_path / "bad.urdf")]) == 1
    assert "error: URDFError: joint" in capsys.readouterr().err
    assert main(["check-model", str(tmp_path / "missing.urdf")]) == 1


def test_bad_arguments_exit_2_and_subcommands_are_listed() -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "check-model" in build_parser().format_help()


def test_runs_as_a_module(toy: tuple[Path, Path]) -> None:
    urdf, _ = toy
    proc = subprocess.run(
        [sys.executable, "-m", "robot_collision.tools.cli", "check-model", str(urdf)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "self-colliding pairs at home" in proc.stdout


DEMO = Path(__file__).resolve().parents[1] / "data" / "demo_checkout"


def test_check_model_expands_xacro_with_package_dir_name_path(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21 items 2, 3 and 8: NAME:=VALUE xacro arguments, --package-dir NAME=PATH for a
    checkout whose folder is not named like the package, progress lines on stderr."""
    pytest.importorskip("xacro")
    urdf = DEMO / "urdf" / "demo.urdf.xacro"
    srdf = DEMO / "srdf" / "demo.srdf.xacro"
    rc = main(["check-model", str(urdf), "arm_length:=0.4", "base_type:=planar",
               "--srdf", str(srdf), "--package-dir", f"demo_description={DEMO}"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "links: 6 (base 'world')" in captured.out  # 4 links + 2 virtual ones
    assert "base_joint (planar): base_joint/x, base_joint/y, base_joint/theta" in captured.out
    assert "virtual_joint 'odom' (planar)" in captured.out
    assert "block.stl" in captured.out
    assert "loading " in captured.err and "loaded in" in captured.err
    assert "checked in" in captured.err and "kernels loaded from the cache" in captured.err
    # the SRDF's planar virtual joint as MoveIt adds it
    assert main(["check-model", str(urdf), "arm_length:=0.4", "--srdf", str(srdf),
                 "--package-dir", f"demo_description={DEMO}", "--virtual-joints", "-q"]) == 0
    assert "odom (planar): odom/x, odom/y, odom/theta" in capsys.readouterr().out
    # missing argument: exit 1 with the argument's name
    assert main(["check-model", str(urdf), "--package-dir", f"demo_description={DEMO}",
                 "-q"]) == 1
    assert "arm_length" in capsys.readouterr().err


def test_xacro_document_never_loads_as_garbage(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r.urdf").write_text('<robot name="$(arg name)"><link name="$(arg name)"/></robot>')
    import sys as _sys

    saved = _sys.modules.get("xacro")
    _sys.modules["xacro"] = None  # type: ignore[assignment]
    try:
        assert main(["check-model", str(tmp_path / "r.urdf"), "-q"]) == 1
    finally:
        if saved is None:
            del _sys.modules["xacro"]
        else:
            _sys.modules["xacro"] = saved
    assert "unexpanded xacro" in capsys.readouterr().err


def test_help_texts_print_single_percent_signs() -> None:
    """Issue 21 item 10: 'generate-srdf --help' printed '95%%'."""
    proc = subprocess.run(
        [sys.executable, "-m", "robot_collision.tools.cli", "generate-srdf", "--help"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "95 %" not in proc.stdout
    assert ">= 95%" in proc.stdout and "%%" not in proc.stdout
    assert "%%" not in build_parser().format_help()
