"""Every URDF of example-robot-data (69 real robots) loads as pinocchio loads it: same links,
moving joints and limits (pinocchio), same collision elements (ElementTree), with each
lenient fix reported; the one file pinocchio rejects (ur3.urdf, no links) is a URDFError."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import robot_corpus as corpus

from robot_collision import CollisionChecker, RobotModel, URDFError
from robot_collision.model.load_report import DEFAULTED, DROPPED, INDEPENDENT

pytestmark = pytest.mark.skipif(not corpus.available(), reason="example-robot-data not installed")

NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}  # an xacro stub without links: pinocchio fails too


def _load(urdf: Path, srdf: bool = False) -> RobotModel:
    return RobotModel.from_urdf(
        urdf,
        srdf=corpus.srdf_for(urdf) if srdf else None,
        package_dirs=corpus.package_dirs(),
        warn=False,
    )


def _collision_counts(urdf: Path) -> dict[str, int]:
    """link -> number of <collision> elements, by the standard library's parser."""
    root = ET.parse(urdf).getroot()
    return {ln.get("name", ""): len(ln.findall("collision")) for ln in root.findall("link")}


def test_corpus_is_complete() -> None:
    names = [corpus.name(u) for u in corpus.urdf_files()]
    assert len(names) == 69, names


@pytest.mark.parametrize(
    "urdf", corpus.urdf_files(), ids=[corpus.name(u) for u in corpus.urdf_files()]
)
def test_loads_like_pinocchio(urdf: Path) -> None:
    pin = pytest.importorskip("pinocchio")
    if corpus.name(urdf) in NOT_A_ROBOT:
        with pytest.raises(URDFError, match="no <link>"):
            _load(urdf)
        with pytest.raises(ValueError):
            pin.buildModelFromUrdf(str(urdf))
        return
    robot = _load(urdf)
    ref = pin.buildModelFromUrdf(str(urdf))  # mimic joints as independent joints (default)
    # links: one pinocchio BODY frame per URDF link
    bodies = [f.name for f in ref.frames if f.type == pin.FrameType.BODY]
    assert sorted(robot.link_names) == sorted(bodies)
    # moving joints (pinocchio counts a mimic joint as a joint of its own)
    moving = robot.joint_names + robot.mimic_joint_names
    assert sorted(moving) == sorted(list(ref.names)[1:])
    # collision elements
    counts = _collision_counts(urdf)
    for link in robot.link_names:
        assert len(robot.collision_geometry(link)) == counts[link], link
    # limits of the configuration joints
    for j in robot.joints:
        jid = ref.getJointId(j.name)
        iq, iv = ref.joints[jid].idx_q, ref.joints[jid].idx_v
        if j.type != "continuous":  # pinocchio stores (cos, sin) for continuous joints
            assert j.lower == pytest.approx(ref.lowerPositionLimit[iq], abs=1e-12)
            assert j.upper == pytest.approx(ref.upperPositionLimit[iq], abs=1e-12)
        v = float(ref.velocityLimit[iv])
        assert math.isfinite(j.velocity) and j.velocity > 0
        if 0 < v < math.inf:
            assert j.velocity == pytest.approx(v)
        else:  # "no limit given" (pinocchio: 0, or inf without <limit>): default and a note
            assert j.velocity == 1.0
            assert any(n.element == f"joint {j.name!r}" and n.action == DEFAULTED
                       for n in robot.load_report.notes)


def test_lenient_fixes_on_the_corpus_are_reported() -> None:
    """The sloppy corpus files named in issue 13 load, each fix noted."""
    r = corpus.robots_dir()
    alex = _load(r / "alex_description/urdf/alex_psyonic_hands.urdf")
    assert {n.action for n in alex.load_report.notes} >= {INDEPENDENT}
    pend = _load(r / "double_pendulum_description/urdf/double_pendulum.urdf")
    assert [n.action for n in pend.load_report.notes] == [DEFAULTED, DEFAULTED]
    assert pend.velocity_limits.tolist() == [1.0, 1.0]
    iris = _load(r / "iris_description/robots/iris_simple.urdf")  # velocity="0" on fixed joints
    assert iris.load_report.notes == []


def test_srdfs_naming_missing_links_keep_their_other_entries() -> None:
    pin = pytest.importorskip("pinocchio")
    with_drops = 0
    for urdf in corpus.urdf_files():
        srdf = corpus.srdf_for(urdf)
        if srdf is None or corpus.name(urdf) in NOT_A_ROBOT:
            continue
        robot = _load(urdf, srdf=True)
        dropped = [n for n in robot.load_report.by_action(DROPPED)
                   if n.element.startswith("disable_collisions")]
        with_drops += bool(dropped)
        entries = ET.parse(srdf).getroot().findall("disable_collisions")
        assert len(robot.disabled_pairs()) + len(dropped) == len(entries), corpus.name(urdf)
        # the kept pairs are exactly pinocchio's (which also drops pairs of unknown links)
        model = pin.buildModelFromUrdf(str(urdf))
        links = {f.name for f in model.frames if f.type == pin.FrameType.BODY}
        kept = {frozenset((e.get("link1"), e.get("link2"))) for e in entries
                if e.get("link1") in links and e.get("link2") in links}
        assert {frozenset(p) for p in robot.disabled_pairs()} == kept
    assert with_drops >= 1


@pytest.mark.parametrize(
    "name", ["ur_description/urdf/ur5_robot.urdf", "kinova_description/robots/kinova.urdf",
             "tiago_description/robots/tiago.urdf"]
)
def test_mesh_robots_check(name: str) -> None:
    """Robots with STL and Collada meshes build a checker and answer queries."""
    robot = _load(corpus.robots_dir() / name, srdf=True)
    checker = CollisionChecker(robot)
    q = robot.random_configuration(np.random.default_rng(1))
    assert isinstance(checker.is_valid(q), bool)
    assert len(robot.load_report.meshes) >= 5
