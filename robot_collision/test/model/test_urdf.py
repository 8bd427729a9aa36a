"""URDF/SRDF parsing: typed errors for malformed input (non-finite numbers above all) and the
lenient, reported handling of sloppy-but-safe input (velocity="0", unknown SRDF names, mimic of
a missing joint)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from robot_collision import ModelError, RobotModel, SRDFError, URDFError
from robot_collision.errors import ModelLoadWarning
from robot_collision.load_limits import LoadLimits
from robot_collision.model.load_report import DEFAULTED, DROPPED, INDEPENDENT

from ..conftest import URDF_DIR


def _arm(limit: str = 'lower="-2" upper="2" velocity="1.5" effort="10"', joint2: str = "") -> str:
    """Two revolute joints base -> a -> b; ``limit`` is joint j1's <limit> attributes."""
    return f"""<robot name="arm">
  <link name="base"/>
  <link name="a"><collision><geometry><box size="0.1 0.1 0.3"/></geometry></collision></link>
  <link name="b"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit {limit}/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" velocity="2" effort="5"/>{joint2}</joint>
</robot>"""


# --------------------------------------------------------------------------- non-finite numbers
@pytest.mark.parametrize("attr", ["velocity", "effort", "lower", "upper"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_non_finite_limit_is_a_typed_error(attr: str, value: str) -> None:
    limits = {"lower": "-2", "upper": "2", "velocity": "1.5", "effort": "10"}
    limits[attr] = value
    text = _arm(" ".join(f'{k}="{v}"' for k, v in limits.items()))
    with pytest.raises(URDFError, match=f"joint 'j1' limit attribute '{attr}' must be a finite"):
        RobotModel.from_urdf(text)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ('<origin xyz="0 0 0.3"/>', '<origin xyz="0 nan 0.3"/>', "origin xyz"),
        ('<origin xyz="0 0 0.3"/>', '<origin xyz="0 0 0.3" rpy="inf 0 0"/>', "origin rpy"),
        ('<axis xyz="0 1 0"/>', '<axis xyz="0 nan 0"/>', "axis"),
        ('<box size="0.1 0.1 0.3"/>', '<box size="0.1 inf 0.3"/>', "box size"),
        ('<sphere radius="0.05"/>', '<sphere radius="nan"/>', "radius"),
        ('<sphere radius="0.05"/>', '<mesh filename="x.stl" scale="1 nan 1"/>', "mesh scale"),
        ('<sphere radius="0.05"/>', '<mesh filename="x.stl" scale="1 0 1"/>', "non-zero"),
    ],
)
def test_non_finite_geometry_is_a_typed_error(old: str, new: str, match: str) -> None:
    text = _arm()
    assert old in text
    with pytest.raises(URDFError, match=match):
        RobotModel.from_urdf(text.replace(old, new, 1))


@pytest.mark.parametrize("attr", ["multiplier", "offset"])
def test_non_finite_mimic_is_a_typed_error(attr: str) -> None:
    text = _arm(joint2=f'<mimic joint="j1" {attr}="nan"/>')
    with pytest.raises(URDFError, match=f"mimic attribute '{attr}' must be a finite"):
        RobotModel.from_urdf(text)


@pytest.mark.parametrize(
    ("limit", "match"),
    [
        ('lower="-2" upper="2" velocity="-1" effort="1"', "velocity limit must be positive"),
        ('lower="-2" upper="2" velocity="1" effort="-1"', "effort limit must be positive"),
        ('lower="2" upper="-2" velocity="1" effort="1"', "lower limit"),
        ('lower="-2" upper="2" velocity="fast" effort="1"', "must be a number"),
    ],
)
def test_malformed_limits_stay_errors(limit: str, match: str) -> None:
    with pytest.raises(URDFError, match=match):
        RobotModel.from_urdf(_arm(limit))


def test_revolute_without_limit_stays_an_error() -> None:
    text = _arm().replace('<limit lower="-2" upper="2" velocity="1.5" effort="10"/>', "")
    with pytest.raises(URDFError, match="needs a <limit"):
        RobotModel.from_urdf(text)


# --------------------------------------------------------------------------- velocity defaults
@pytest.mark.parametrize(
    "limit", ['lower="-2" upper="2" velocity="0" effort="0"', 'lower="-2" upper="2"']
)
def test_moving_joint_without_velocity_gets_the_default_with_a_warning(limit: str) -> None:
    with pytest.warns(ModelLoadWarning, match="joint 'j1' .* no velocity limit"):
        robot = RobotModel.from_urdf(_arm(limit))
    assert robot.velocity_limits.tolist() == [1.0, 2.0]  # LoadLimits.default_velocity_limit
    assert robot.joints[0].effort == np.inf  # effort 0 / missing = not given
    notes = robot.load_report.notes
    assert [(n.element, n.action) for n in notes] == [("joint 'j1'", DEFAULTED)]
    custom = RobotModel.from_urdf(
        _arm(limit), limits=LoadLimits(default_velocity_limit=0.25), warn=False
    )
    assert custom.velocity_limits.tolist() == [0.25, 2.0]


def test_continuous_joint_without_limit_gets_the_default_and_fixed_joints_need_none() -> None:
    text = """<robot name="r"><link name="base"/><link name="a"/><link name="b"/>
      <joint name="spin" type="continuous"><parent link="base"/><child link="a"/></joint>
      <joint name="weld" type="fixed"><parent link="a"/><child link="b"/>
        <limit velocity="0" effort="0"/></joint></robot>"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = RobotModel.from_urdf(text)
    assert [str(w.message) for w in caught] == [str(n) for n in robot.load_report.notes]
    assert robot.velocity_limits.tolist() == [1.0]
    assert [n.element for n in robot.load_report.notes] == ["joint 'spin'"]  # not 'weld'


# --------------------------------------------------------------------------- mimic
def test_mimic_of_a_missing_joint_becomes_independent() -> None:
    text = _arm(joint2='<mimic joint="nope" multiplier="2"/>')
    with pytest.warns(ModelLoadWarning, match="mimics joint 'nope'.*independent"):
        robot = RobotModel.from_urdf(text)
    assert robot.joint_names == ["j1", "j2"] and robot.mimic_joint_names == []
    assert robot.load_report.by_action(INDEPENDENT)[0].element == "joint 'j2'"
    coupled = RobotModel.from_urdf(_arm(joint2='<mimic joint="j1" multiplier="2"/>'))
    assert coupled.joint_names == ["j1"] and coupled.mimic_joint_names == ["j2"]
    assert not coupled.load_report.notes


def test_mimic_of_a_fixed_joint_stays_an_error() -> None:
    text = _arm().replace('type="revolute"', 'type="fixed"', 1)
    text = text.replace("</joint>\n</robot>", '<mimic joint="j1"/></joint>\n</robot>')
    with pytest.raises(ModelError, match="mimics fixed joint"):
        RobotModel.from_urdf(text)


# --------------------------------------------------------------------------- SRDF
SRDF = """<robot name="arm">
  <group name="arm"><joint name="j1"/><joint name="ghost_joint"/><link name="ghost_link"/>
    <chain base_link="base" tip_link="ghost_tip"/></group>
  <group name="tip"><chain base_link="a" tip_link="b"/><group name="ghost_group"/></group>
  <group name="backwards"><chain base_link="b" tip_link="a"/></group>
  <group_state name="home" group="arm"><joint name="j1" value="0.5"/>
    <joint name="ghost_joint" value="1"/></group_state>
  <disable_collisions link1="base" link2="a" reason="Adjacent"/>
  <disable_collisions link1="a" link2="ghost_link" reason="Never"/>
  <disable_collisions link1="ghost_link" link2="b" reason="Never"/>
  <disable_collisions link1="a" link2="b" reason="Adjacent"/>
</robot>"""


def test_srdf_entries_naming_unknown_names_are_dropped_one_warning_each() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = RobotModel.from_urdf(_arm(), srdf=SRDF)
    assert robot.disabled_pairs() == [("base", "a"), ("a", "b")]  # the rest is kept
    assert robot.groups == {"arm": ["j1"], "tip": ["j2"], "backwards": []}
    np.testing.assert_array_equal(robot.named_configuration("home"), [0.5, 0.0])
    dropped = robot.load_report.by_action(DROPPED)
    assert sorted(n.element for n in dropped) == sorted([
        "disable_collisions 'a'-'ghost_link'",
        "disable_collisions 'ghost_link'-'b'",
        "group_state 'home' joint 'ghost_joint'",
        "group 'arm' joint 'ghost_joint'",
        "group 'arm' link 'ghost_link'",
        "group 'arm' chain 'base'-'ghost_tip'",
        "group 'tip' subgroup 'ghost_group'",
        "group 'backwards' chain 'b'-'a'",
    ])
    assert len(caught) == len(dropped) and all(n.source == "SRDF" for n in dropped)
    assert all(issubclass(w.category, ModelLoadWarning) for w in caught)


@pytest.mark.parametrize(
    ("srdf", "match"),
    [
        ("<robot><disable_collisions link1='a'/></robot>", "needs link1 and link2"),
        ("<robot><group_state name='s'><joint name='j1' value='x'/></group_state></robot>",
         "not a number"),
        ("<robot><group_state name='s'><joint name='j1' value='nan'/></group_state></robot>",
         "not finite"),
        ("<srdf/>", "root element"),
        ("<robot>", "well-formed"),
    ],
)
def test_malformed_srdf_stays_an_error(srdf: str, match: str) -> None:
    with pytest.raises(SRDFError, match=match):
        RobotModel.from_urdf(_arm(), srdf=srdf)


def test_default_robot_loads_without_notes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelLoadWarning)
        robot = RobotModel.from_urdf(
            URDF_DIR / "default_arm.urdf", srdf=URDF_DIR / "default_arm.srdf"
        )
    assert robot.load_report.notes == []


# --------------------------------------------------------------------------- XML safety
def _utf7(text: str) -> bytes:
    """``text`` as one UTF-7 base64 run: no '<' or '!' is visible to a byte or text search."""
    import base64

    return b"+" + base64.b64encode(text.encode("utf-16-be")).rstrip(b"=") + b"-"


DOCTYPE = '<!DOCTYPE robot [<!ENTITY n "evil">]>'
BODY = '<robot name="&n;"><link name="a"/></robot>'


def _hidden_doctype() -> bytes:
    """The issue's bypass: an encoding declaration hides the DOCTYPE from a text search, while
    libxml2 decodes it and expands the entity into the robot's name."""
    data = b'<?xml version="1.0" encoding="UTF-7"?>' + _utf7(DOCTYPE) + BODY.encode()
    assert b"<!DOCTYPE" not in data and b"<!ENTITY" not in data
    return data


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(_hidden_doctype(), id="utf7-bytes"),
        pytest.param(_hidden_doctype().decode("ascii"), id="utf7-text"),
        pytest.param((DOCTYPE + BODY).encode("utf-16"), id="utf16-bom"),
        pytest.param(('<?xml version="1.0" encoding="UTF-16"?>' + DOCTYPE + BODY)
                     .encode("utf-16-le"), id="utf16-declared-no-bom"),
        pytest.param(DOCTYPE + BODY, id="plain-text"),
        pytest.param((DOCTYPE + BODY).encode(), id="plain-bytes"),
        pytest.param("\n" * 5000 + DOCTYPE + BODY, id="doctype-after-4k"),
        pytest.param('<!DOCTYPE robot SYSTEM "http://example.invalid/x.dtd">'
                     '<robot name="r"><link name="a"/></robot>', id="external-dtd"),
    ],
)
def test_doctype_and_entities_are_refused_on_the_parsed_document(doc: str | bytes) -> None:
    with pytest.raises(URDFError, match=r"DOCTYPE|entit|not well-formed") as info:
        RobotModel.from_urdf(doc)
    assert "evil" not in str(info.value)
    with pytest.raises(SRDFError, match=r"DOCTYPE|entit|not well-formed"):
        RobotModel.from_urdf(_arm(), srdf=doc)


def _external_docs(target: str) -> list[bytes]:
    """Documents naming ``target`` as an external DTD or entity, in several encodings."""
    body = '<robot name="r"><link name="a"/></robot>'
    forms = [
        f'<!DOCTYPE robot SYSTEM "{target}">' + body,
        f'<!DOCTYPE robot PUBLIC "-//x//y" "{target}">' + body,
        f'<!DOCTYPE robot [<!ENTITY % p SYSTEM "{target}"> %p;]>' + body,
        f'<!DOCTYPE robot [<!ENTITY e SYSTEM "{target}">]><robot name="&e;"><link name="a"/>'
        "</robot>",
        f'<!DOCTYPE robot SYSTEM "{target}" [<!ENTITY e SYSTEM "{target}">]>'
        '<robot name="r">&e;<link name="a"/></robot>',
    ]
    docs = [f.encode() for f in forms]
    docs.append(('<?xml version="1.0" encoding="UTF-16"?>' + forms[0]).encode("utf-16"))
    docs.append(b'<?xml version="1.0" encoding="UTF-7"?>' + _utf7(forms[0][:-len(body)])
                + body.encode())
    return docs


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_named_external_resource_is_never_opened(tmp_path: Path) -> None:
    """Issue 21: a DOCTYPE naming a FIFO hung the parser (libxml2 opened the external subset).
    In a child process with a timeout (a hang fails instead of blocking the suite), every form
    is refused, and the FIFO is never opened: a writer opening it non-blocking finds no
    reader."""
    import subprocess
    import sys
    import textwrap

    fifo = tmp_path / "dtd.fifo"
    os.mkfifo(fifo)
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(d.hex() for d in _external_docs(str(fifo))))
    code = textwrap.dedent(f"""
        import sys
        from robot_collision import RobotModel, URDFError, SRDFError
        from robot_collision.safe_xml import parse_xml
        for line in open({str(docs)!r}).read().split():
            doc = bytes.fromhex(line)
            try:
                parse_xml(doc, "URDF", URDFError)
            except URDFError as exc:
                print("refused:", str(exc)[:100])
            else:
                print("ACCEPTED")
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=str(Path(__file__).parents[2]))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(_external_docs("x")) and all(ln.startswith("refused") for ln in
                                                          lines), out.stdout
    with pytest.raises(OSError):  # ENXIO: nobody has the FIFO open for reading
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_the_refusing_resolver_names_the_resource(tmp_path: Path) -> None:
    """The backstop: were libxml2 to ask for an external resource (lxml's collect_ids=False
    makes it fetch the external subset), the resolver refuses before any file is opened and the
    error names the resource."""
    from lxml import etree

    from robot_collision.safe_xml import _ExternalResource, _refusing_resolver

    target = tmp_path / "never.dtd"
    parser = etree.XMLParser(load_dtd=False, resolve_entities=False, collect_ids=False,
                             no_network=True)
    parser.resolvers.add(_refusing_resolver())
    with pytest.raises(_ExternalResource) as info:
        etree.fromstring(f'<!DOCTYPE robot SYSTEM "{target}"><robot/>'.encode(), parser)
    assert str(target) in info.value.url


def test_utf7_text_is_not_decoded_twice() -> None:
    """A str is already decoded: its encoding declaration is ignored, so the UTF-7 run stays
    text before the root (not well-formed) instead of becoming a DOCTYPE."""
    with pytest.raises(URDFError, match="not well-formed"):
        RobotModel.from_urdf(_hidden_doctype().decode("ascii"))


def test_billion_laughs_is_refused_fast() -> None:
    import time

    ents = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    doc = f'<?xml version="1.0"?><!DOCTYPE robot [{ents}]><robot name="&l9;"><link name="a"/>' \
          "</robot>"
    t0 = time.perf_counter()
    for d in (doc, doc.encode(), doc.encode("utf-16")):
        with pytest.raises(URDFError, match=r"DOCTYPE|entit"):
            RobotModel.from_urdf(d)
        with pytest.raises(SRDFError, match=r"DOCTYPE|entit"):
            RobotModel.from_urdf(_arm(), srdf=d)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-le"])
def test_encoded_documents_without_doctype_load(tmp_path: Path, encoding: str) -> None:
    decl = f'<?xml version="1.0" encoding="{encoding.upper().replace("-LE", "")}"?>\n'
    data = (decl + _arm()).encode(encoding)
    if encoding == "utf-16-le":
        data = (decl.replace("UTF-16", "UTF-16LE") + _arm()).encode(encoding)
    path = tmp_path / "arm.urdf"
    path.write_bytes(data)
    assert RobotModel.from_urdf(path).joint_names == ["j1", "j2"]
    assert RobotModel.from_urdf(data).joint_names == ["j1", "j2"]


# --------------------------------------------------------------------------- size caps
def test_urdf_and_srdf_byte_caps(tmp_path: Path) -> None:
    text = _arm()
    small = LoadLimits(max_urdf_bytes=len(text) - 1)
    with pytest.raises(URDFError, match=r"URDF text is .* \(LoadLimits.max_urdf_bytes\)"):
        RobotModel.from_urdf(text, limits=small)
    with pytest.raises(URDFError, match="max_urdf_bytes"):
        RobotModel.from_urdf(text.encode(), limits=small)
    assert RobotModel.from_urdf(text, limits=LoadLimits(max_urdf_bytes=len(text))).joint_names
    srdf = "<robot>" + " " * 100 + "</robot>"
    with pytest.raises(SRDFError, match="max_srdf_bytes"):
        RobotModel.from_urdf(text, srdf=srdf, limits=LoadLimits(max_srdf_bytes=100))


def test_huge_sparse_urdf_file_is_refused_before_reading(tmp_path: Path) -> None:
    import time

    path = tmp_path / "huge.urdf"
    with open(path, "wb") as f:
        f.write(b"<robot>")
        f.truncate(3 * 2**30)
    t0 = time.perf_counter()
    with pytest.raises(URDFError, match=r"3\.0 GiB, above the limit of 10\.0 MiB"):
        RobotModel.from_urdf(path)
    with pytest.raises(SRDFError, match="max_srdf_bytes"):
        RobotModel.from_urdf(_arm(), srdf=path)
    assert time.perf_counter() - t0 < 1.0


def test_link_and_joint_caps_are_checked_before_building(tmp_path: Path) -> None:
    """200,001 links (the issue's 20 MB URDF) are refused after parsing, before any shape is
    built: the mesh they name is never opened."""
    import time

    n = 200_000
    links = "".join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = "".join(
        f'<joint name="j{i}" type="fixed"><parent link="l{i}"/><child link="l{i + 1}"/></joint>'
        for i in range(n)
    )
    bomb = f'<robot name="big"><link name="m"><collision><geometry><mesh filename="{tmp_path}' \
           f'/never.stl"/></geometry></collision></link>{links}{joints}</robot>'
    big = LoadLimits(max_urdf_bytes=len(bomb))
    t0 = time.perf_counter()
    with pytest.raises(URDFError, match=r"<link> count is 200,002.*max_links"):
        RobotModel.from_urdf(bomb, limits=big)
    assert time.perf_counter() - t0 < 5.0
    with pytest.raises(URDFError, match=r"<joint> count is 2.*max_joints"):
        RobotModel.from_urdf(_arm(), limits=LoadLimits(max_joints=1))
    with pytest.raises(URDFError, match="max_urdf_bytes"):
        RobotModel.from_urdf(bomb)  # 10 MiB default
