"""Issue 21 items 2-5 and 7: xacro files are expanded (or refused with how), never loaded as
garbage; ``NAME=PATH`` package folders; a package found without the file is reported as
such; SRDF ``<virtual_joint>`` recognised; MoveIt's default pose.

Test data: ``test/data/demo_checkout``, the package ``demo_description`` in a folder of another
name, with a xacro URDF (arguments, properties, math, a macro included through ``$(find)``, a
``package://`` mesh, the base joint type as an argument) and a xacro SRDF."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from robot_collision import MeshError, RobotModel, SRDFError, URDFError

DATA = Path(__file__).resolve().parents[1] / "data" / "demo_checkout"
URDF = DATA / "urdf" / "demo.urdf.xacro"
SRDF = DATA / "srdf" / "demo.srdf.xacro"
PKG = [f"demo_description={DATA}"]


def _xacro() -> object:
    return pytest.importorskip("xacro")


def _load(**xacro_args: str) -> RobotModel:
    return RobotModel.from_urdf(URDF, srdf=SRDF, package_dirs=PKG, warn=False,
                                xacro_args={"arm_length": "0.4", **xacro_args})


def test_xacro_urdf_and_srdf_expand_with_arguments() -> None:
    _xacro()
    robot = _load(prefix="l_")
    assert robot.link_names == ["world", "l_base", "l_upper", "l_fore"]
    assert robot.joint_names == ["l_upper_joint", "l_fore_joint"]
    # ${-pi/2} and the macro's math: the fore link hangs 0.4 m above the upper joint
    np.testing.assert_allclose(robot.lower, [-np.pi / 2, 0.2])
    T = robot.link_transforms(np.zeros(2))
    np.testing.assert_allclose(T["l_fore"][:3, 3], [0, 0, 0.05 + 0.05 + 0.4])
    (cyl, pose), = robot.collision_geometry("l_fore")
    assert cyl.length == pytest.approx(0.3) and pose[2, 3] == pytest.approx(0.15)
    (mesh, _), = robot.collision_geometry("l_base")  # package:// through NAME=PATH
    np.testing.assert_allclose(np.ptp(mesh.hull, axis=0), [0.3, 0.3, 0.1])
    # the SRDF: prefixed names, the group's chain, a named state, no dropped entries
    assert robot.disabled_pairs() == [("l_base", "l_upper"), ("l_upper", "l_fore")]
    assert robot.groups["arm"] == ["l_upper_joint", "l_fore_joint"]
    np.testing.assert_allclose(robot.named_configuration("folded"), [0.5, 1.5])
    assert not [n for n in robot.load_report.notes if n.source == "SRDF"]


def test_xacro_expansion_matches_the_xacro_command(tmp_path: Path) -> None:
    """The same document as ``xacro FILE name:=value`` (run as a separate process)."""
    _xacro()
    import os
    import subprocess
    import sys

    # the command resolves $(find) through the ament index: give it a prefix with the package
    share = tmp_path / "prefix" / "share"
    index = share / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "demo_description").write_text("")
    (share / "demo_description").symlink_to(DATA)

    env = dict(os.environ, AMENT_PREFIX_PATH=str(tmp_path / "prefix"))
    out = subprocess.run(
        [sys.executable, "-c", "import sys, xacro; sys.argv[0] = 'xacro'; xacro.main()",
         str(URDF), "arm_length:=0.4", "prefix:=r_"],
        capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0 and "ament_index_python" in out.stderr:
        pytest.skip("xacro's $(find) needs ament_index_python")
    assert out.returncode == 0, out.stderr
    ref = ET.fromstring(out.stdout)
    robot = _load(prefix="r_")
    assert [ln.get("name") for ln in ref.findall("link")] == robot.link_names
    limits = {j.get("name"): float(j.find("limit").get("upper"))  # type: ignore[union-attr]
              for j in ref.findall("joint") if j.find("limit") is not None}
    assert limits == dict(zip(robot.joint_names, robot.upper))


@pytest.mark.parametrize("base_type", ["planar", "floating"])
def test_xacro_argument_chooses_a_mobile_base(base_type: str) -> None:
    _xacro()
    robot = _load(base_type=base_type)
    n = 3 if base_type == "planar" else 6
    assert robot.num_joints == n + 2
    assert robot.multi_dof_joints["base_joint"][0] == base_type
    # the SRDF's group names the virtual joint: recognised, kept, no variable of its own
    assert robot.srdf is not None and robot.srdf.virtual_joints == [
        ("odom", "planar", "odom", "world")]
    assert "odom" in robot.srdf.groups["arm"]
    assert not [n for n in robot.load_report.notes if "odom" in n.message]


def test_missing_xacro_argument_says_which() -> None:
    _xacro()
    with pytest.raises(URDFError, match=r"arm_length.*name:=value"):
        RobotModel.from_urdf(URDF, package_dirs=PKG, warn=False)


def test_xacro_without_the_package_is_refused_with_how(
    monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "xacro", None)  # import xacro -> ImportError
    with pytest.raises(URDFError, match=r"unexpanded xacro.*pip install xacro.*name:=value"):
        RobotModel.from_urdf(URDF, package_dirs=PKG)
    with pytest.raises(SRDFError, match="unexpanded xacro"):
        RobotModel.from_urdf(DATA.parent.parent.parent / "urdf" / "default_arm.urdf",
                             srdf=SRDF)


@pytest.mark.parametrize("text", [
    '<robot name="$(arg name)"><link name="$(arg name)"/></robot>',
    '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"/></robot>',
    '<robot name="r"><link name="${prefix}a"/></robot>',
    '<robot name="r" xmlns:xacro="http://ros.org/wiki/xacro"><link name="a"/></robot>',  # ABB
    '<robot name="r"><x:include xmlns:x="http://wiki.ros.org/xacro/" filename="a"/></robot>',
])
def test_xacro_text_is_refused_not_loaded_as_garbage(text: str) -> None:
    """Issue 21: an unexpanded xacro loaded as one link named '$(arg name)', exit 0. Text
    (e.g. a robot_description parameter) has no folder for includes: refused, saying how."""
    with pytest.raises(URDFError, match=r"unexpanded xacro.*expand it first"):
        RobotModel.from_urdf(text)
    arm = DATA.parent.parent.parent / "urdf" / "default_arm.urdf"
    srdf = text.replace("<link", '<disable_collisions link1="a" link2="b"/><x')
    with pytest.raises(SRDFError, match="unexpanded xacro"):
        RobotModel.from_urdf(arm, srdf=srdf)


def test_plain_urdf_named_xacro_loads_without_xacro(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "xacro", None)
    path = tmp_path / "plain.urdf.xacro"
    path.write_text('<robot name="r"><link name="a"/></robot>')
    assert RobotModel.from_urdf(path).link_names == ["a"]


def _mesh_urdf(uri: str) -> str:
    return (f'<robot name="r"><link name="a"><collision><geometry><mesh filename="{uri}"/>'
            "</geometry></collision></link></robot>")


def test_package_found_but_file_missing_names_the_package_and_path() -> None:
    """Issue 21 item 4: reported as 'not in the ament index' before."""
    with pytest.raises(MeshError) as info:
        RobotModel.from_urdf(_mesh_urdf("package://demo_description/meshes/gone.stl"),
                             package_dirs=PKG)
    msg = str(info.value)
    assert "'demo_description' was found at" in msg and str(DATA) in msg
    assert "meshes/gone.stl" in msg and "ament index" not in msg
    with pytest.raises(MeshError, match="was found at"):  # a folder named like the package
        RobotModel.from_urdf(_mesh_urdf("package://demo_checkout/meshes/gone.stl"),
                             package_dirs=[str(DATA.parent)])


def test_unknown_package_says_how_to_pass_it() -> None:
    with pytest.raises(MeshError, match=r"--package-dir nowhere_pkg=/path/to/nowhere_pkg"):
        RobotModel.from_urdf(_mesh_urdf("package://nowhere_pkg/m.stl"), package_dirs=PKG)


def test_name_equals_path_entries_and_plain_folders_mix(tmp_path: Path) -> None:
    odd = tmp_path / "with=sign"  # an existing folder whose name has '=' is a folder
    odd.mkdir()
    (odd / "demo_description").symlink_to(DATA)
    uri = "package://demo_description/meshes/block.stl"
    for dirs in (PKG, [str(odd)], [str(tmp_path), *PKG], {"demo_description": DATA}):
        robot = RobotModel.from_urdf(_mesh_urdf(uri), package_dirs=dirs)
        assert len(robot.collision_geometry("a")) == 1


def test_default_pose_is_moveits() -> None:
    """0 when within the limits, else the middle of the range (MoveIt's default positions)."""
    text = """<robot name="r"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="in" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="2" velocity="1" effort="1"/></joint>
      <joint name="above" type="prismatic"><parent link="b"/><child link="c"/>
        <axis xyz="0 0 1"/><limit lower="0.2" upper="0.6" velocity="1" effort="1"/></joint>
      <joint name="below" type="revolute"><parent link="c"/><child link="d"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="-1" velocity="1" effort="1"/></joint>
    </robot>"""
    robot = RobotModel.from_urdf(text)
    np.testing.assert_allclose(robot.home_configuration(), [0.0, 0.4, -2.0])


def test_virtual_joint_of_an_unknown_or_non_root_link_is_dropped_with_a_note() -> None:
    arm = DATA.parent.parent.parent / "urdf" / "default_arm.urdf"
    srdf = """<robot name="arm">
      <virtual_joint name="v1" type="floating" parent_frame="odom" child_link="nowhere"/>
      <virtual_joint name="v2" type="fixed" parent_frame="odom" child_link="tool"/>
      <group name="g"><joint name="v1"/><joint name="v2"/></group>
    </robot>"""
    robot = RobotModel.from_urdf(arm, srdf=srdf, warn=False)
    notes = [n.message for n in robot.load_report.notes]
    assert any("'v1'" in m and "not a link of the URDF" in m for m in notes)
    assert any("'v2'" in m and "root link" in m for m in notes)
    with pytest.raises(SRDFError, match="fixed, planar, floating"):
        RobotModel.from_urdf(arm, srdf=srdf.replace('type="fixed"', 'type="spherical"'))
