"""Mesh files: every format against a hand-written file of known geometry, Collada against
pinocchio's loader (coal/assimp) on the robots of example-robot-data, and the size caps."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from robot_corpus import collision_mesh_files

from robot_collision import Mesh, MeshError, ShapeError
from robot_collision.geometry.mesh_io import load_mesh
from robot_collision.load_limits import LoadLimits

# a tetrahedron with one face split into two triangles (5 distinct vertices, 5 triangles)
TET_V = np.array([[0, 0, 0], [0.3, 0, 0], [0, 0.2, 0], [0, 0, 0.1], [0.1, 0.1, 0.0]])
TET_F = np.array([[0, 2, 4], [0, 4, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])


def _tri_set(V: np.ndarray, F: np.ndarray) -> set[tuple[tuple[float, ...], ...]]:
    """Triangles as sets of rounded corner coordinates (independent of vertex order)."""
    return {tuple(sorted(tuple(np.round(V[i], 9)) for i in f)) for f in F}  # type: ignore[misc]


def _xyz(v: np.ndarray) -> str:
    return " ".join(f"{float(x):.17g}" for x in v)


def _binary_stl(V: np.ndarray, F: np.ndarray) -> bytes:
    out = [b"\0" * 80, struct.pack("<I", len(F))]
    for f in F:
        out.append(struct.pack("<3f", 0, 0, 0))
        for i in f:
            out.append(struct.pack("<3f", *V[i]))
        out.append(b"\0\0")
    return b"".join(out)


def _ascii_stl(V: np.ndarray, F: np.ndarray) -> str:
    lines = ["solid tet"]
    for f in F:
        lines += ["facet normal 0 0 0", "outer loop"]
        lines += ["vertex " + _xyz(V[i]) for i in f]
        lines += ["endloop", "endfacet"]
    return "\n".join([*lines, "endsolid tet", ""])


def _obj(V: np.ndarray, F: np.ndarray) -> str:
    return "".join(f"v {_xyz(v)}\n" for v in V) + "".join(
        "f " + " ".join(str(i + 1) for i in f) + "\n" for f in F
    )


def _ply(V: np.ndarray, F: np.ndarray) -> str:
    head = [
        "ply", "format ascii 1.0", f"element vertex {len(V)}", "property double x",
        "property double y", "property double z", f"element face {len(F)}",
        "property list uchar int vertex_indices", "end_header",
    ]
    body = [_xyz(v) for v in V] + ["3 " + " ".join(map(str, f)) for f in F]
    return "\n".join(head + body) + "\n"


def _dae(V: np.ndarray, F: np.ndarray, unit: float = 1.0, extra_node: str = "") -> str:
    """A Collada document: the mesh instanced by a node translated by (1, 2, 3) units."""
    pos = _xyz(V.reshape(-1))
    idx = " ".join(str(int(i)) for i in F.reshape(-1))
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="u" meter="{unit!r}"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries><geometry id="g" name="g"><mesh>
    <source id="g-pos"><float_array id="g-pos-array" count="{V.size}">{pos}</float_array>
      <technique_common><accessor source="#g-pos-array" count="{len(V)}" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="g-vtx"><input semantic="POSITION" source="#g-pos"/></vertices>
    <triangles count="{len(F)}"><input semantic="VERTEX" source="#g-vtx" offset="0"/>
      <p>{idx}</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s">
    <node id="n1"><translate>1 2 3</translate><instance_geometry url="#g"/></node>{extra_node}
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


@pytest.mark.parametrize("fmt", ["binary.stl", "ascii.stl", "obj", "ply", "STL"])
def test_formats_read_the_written_triangles(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"tet.{fmt}"
    if fmt in ("binary.stl", "STL"):
        path.write_bytes(_binary_stl(TET_V, TET_F))
    else:
        writer = {"ascii.stl": _ascii_stl, "obj": _obj, "ply": _ply}[fmt]
        path.write_text(writer(TET_V, TET_F))
    m = load_mesh(path)
    tol = 1e-7 if "stl" in fmt.lower() else 0.0  # STL stores float32
    assert m.vertices.shape == (5, 3) and m.faces.shape == (5, 3)  # duplicates merged
    assert m.faces.dtype == np.int64 and m.vertices.dtype == np.float64
    got = {tuple(sorted(tuple(np.round(m.vertices[i], 6)) for i in f)) for f in m.faces}
    want = {tuple(sorted(tuple(np.round(TET_V[i], 6)) for i in f)) for f in TET_F}
    assert got == want
    np.testing.assert_allclose(np.sort(m.vertices, axis=0), np.sort(TET_V, axis=0), atol=tol)


def test_scale_per_axis_and_mirror(tmp_path: Path) -> None:
    path = tmp_path / "tet.obj"
    path.write_text(_obj(TET_V, TET_F))
    m = load_mesh(path, scale=[2.0, -1.0, 0.5])
    assert _tri_set(m.vertices, m.faces) == _tri_set(TET_V * [2.0, -1.0, 0.5], TET_F)
    with pytest.raises(MeshError, match="scale"):
        load_mesh(path, scale=[1.0, 0.0, 1.0])
    with pytest.raises(ShapeError, match="scale"):
        Mesh(path, scale=float("nan"))


def test_obj_polygons_are_triangulated_and_bare_points_load(tmp_path: Path) -> None:
    quad = tmp_path / "quad.obj"
    quad.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nf 1 2 3 4\nf 1 2 5\n")
    m = load_mesh(quad)
    assert m.faces.shape == (3, 3)
    pts = tmp_path / "points.obj"
    pts.write_text(_obj(TET_V, TET_F[:0]))
    m = load_mesh(pts)
    assert m.faces.shape == (0, 3) and len(m.vertices) == 5
    assert Mesh(pts).vertices().shape == (4, 3)  # (0.1, 0.1, 0) lies inside the base triangle


def test_collada_node_transform_and_unit(tmp_path: Path) -> None:
    path = tmp_path / "tet.dae"
    second = '<node id="n2"><scale>2 2 2</scale><instance_geometry url="#g"/></node>'
    path.write_text(_dae(TET_V, TET_F, unit=0.01, extra_node=second))
    m = load_mesh(path, scale=[1.0, 1.0, 3.0])
    first = (TET_V + np.array([1, 2, 3])) * 0.01 * [1, 1, 3]
    doubled = TET_V * 2 * 0.01 * [1, 1, 3]
    want = _tri_set(first, TET_F) | _tri_set(doubled, TET_F)
    assert _tri_set(m.vertices, m.faces) == want
    assert len(m.vertices) == 10  # two disjoint instances of 5 vertices


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('<!DOCTYPE c [<!ENTITY x "1">]><COLLADA/>', "DOCTYPE"),
        ("<COLLADA><asset/></COLLADA>", "no <scene>"),
        ("<robot/>", "not a Collada document"),
        ("PK\x03\x04 zipped", "well-formed"),
    ],
)
def test_collada_refused(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.dae"
    path.write_text(content)
    with pytest.raises(MeshError, match=match):
        load_mesh(path)


def test_collada_with_utf7_hidden_doctype_is_refused(tmp_path: Path) -> None:
    import base64

    hidden = base64.b64encode('<!DOCTYPE c [<!ENTITY x "1">]>'.encode("utf-16-be"))
    data = b'<?xml version="1.0" encoding="UTF-7"?>+' + hidden.rstrip(b"=") + b"-"
    data += _dae(TET_V, TET_F).split("?>", 1)[1].encode()
    assert b"<!DOCTYPE" not in data and b"<!ENTITY" not in data
    path = tmp_path / "hidden.dae"
    path.write_bytes(data)
    with pytest.raises(MeshError, match="DOCTYPE"):
        load_mesh(path)


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("missing.stl", None, "does not exist"),
        ("empty.stl", b"", "empty"),
        ("mesh.3ds", b"x", "unsupported format"),
        ("garbage.obj", b"hello\n", "no vertices"),
        ("nan.obj", b"v 0 0 0\nv nan 0 0\nv 0 1 0\nv 0 0 1\n", "non-finite"),
        ("bad.ply", b"ply\nformat ascii 1.0\nelement vertex 2000000000\nend_header\n", "header"),
        ("flat.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n", "flat or degenerate"),
    ],
)
def test_bad_mesh_files_give_mesh_errors(
    tmp_path: Path, name: str, content: bytes | None, match: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(MeshError, match=match) as info:
        Mesh(path)
    assert str(info.value)


def test_three_gigabyte_sparse_mesh_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.stl"
    with open(path, "wb") as f:
        f.truncate(3 * 2**30)  # sparse: takes no disk space, stat says 3 GiB
    t0 = time.perf_counter()
    with pytest.raises(MeshError, match=r"3\.0 GiB, above the limit of 64\.0 MiB") as info:
        Mesh(path)
    assert "LoadLimits(max_mesh_bytes=" in str(info.value)
    assert time.perf_counter() - t0 < 1.0
    # raising the cap lets the size check pass (the content is then read; here: zeros)
    small = tmp_path / "small.stl"
    small.write_bytes(_binary_stl(TET_V, TET_F))
    with pytest.raises(MeshError, match="max_mesh_bytes"):
        load_mesh(small, limits=LoadLimits(max_mesh_bytes=100))
    assert len(load_mesh(small, limits=LoadLimits(max_mesh_bytes=os.path.getsize(small)))[0]) == 5


def test_vertex_and_face_caps(tmp_path: Path) -> None:
    path = tmp_path / "tet.stl"
    path.write_bytes(_binary_stl(TET_V, TET_F))
    with pytest.raises(MeshError, match=r"binary STL header\) face count is 5.*max_mesh_faces"):
        load_mesh(path, limits=LoadLimits(max_mesh_faces=4))
    with pytest.raises(MeshError, match="max_mesh_vertices"):
        load_mesh(path, limits=LoadLimits(max_mesh_vertices=14))  # 15 as stored, 5 unique
    obj = tmp_path / "tet.obj"
    obj.write_text(_obj(TET_V, TET_F))
    with pytest.raises(MeshError, match=r"parsed\) vertex count is 5"):
        load_mesh(obj, limits=LoadLimits(max_mesh_vertices=4))
    with pytest.raises(MeshError, match="max_mesh_vertices"):
        Mesh(np.zeros((10, 3)), limits=LoadLimits(max_mesh_vertices=9))


# --------------------------------------------------------------------------- oracle: coal
def test_collada_meshes_of_the_corpus_match_pinocchios_loader() -> None:
    """Every Collada collision mesh of example-robot-data: the same vertex set as coal's
    assimp-based loader (which pinocchio uses), within float32 rounding."""
    coal = pytest.importorskip("coal")
    from scipy.spatial import cKDTree

    files = [f for f in collision_mesh_files() if f.suffix.lower() == ".dae"]
    if not files:
        pytest.skip("example-robot-data is not installed")
    for f in files:
        ours = load_mesh(f).vertices
        ref = np.asarray(coal.MeshLoader().load(str(f), np.ones(3)).vertices())
        d_ours, _ = cKDTree(ref).query(ours)
        d_ref, _ = cKDTree(ours).query(ref)
        scale = max(1.0, float(np.abs(ref).max()))
        assert d_ours.max() < 1e-6 * scale and d_ref.max() < 1e-6 * scale, f


# --------------------------------------------------------------------------- vertex merging
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e-300, 3.0e7]), min_size=3, max_size=60),
    st.integers(0, 2**32 - 1),
)
def test_merge_duplicate_vertices_is_exact(values: list[float], seed: int) -> None:
    from robot_collision.geometry import mesh_io

    rng = np.random.default_rng(seed)
    V = np.array(values[: len(values) // 3 * 3], dtype=float).reshape(-1, 3)
    V = V[rng.integers(0, len(V), 3 * len(V))]  # many exact repeats
    U, inv = mesh_io.merge_duplicate_vertices(V)
    np.testing.assert_array_equal(U[inv], V)  # -0.0 == 0.0 for array_equal
    assert len({tuple(r) for r in (U + 0.0).tolist()}) == len(U)  # no duplicate left
    assert len(U) == len({tuple(r) for r in (V + 0.0).tolist()})


def test_merge_falls_back_on_hash_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    from robot_collision.geometry import mesh_io

    monkeypatch.setattr(mesh_io, "_mix", lambda x: np.zeros_like(x))  # every row collides
    V = np.array([[1.0, 2, 3], [0, 0, 0], [1, 2, 3], [0, 0, 1], [0, 0, 0]])
    U, inv = mesh_io.merge_duplicate_vertices(V)
    np.testing.assert_array_equal(U[inv], V)
    assert len(U) == 3


def test_hull_input_cap_refuses_before_the_hull(tmp_path: Path) -> None:
    """Issue 21: a binary STL within the file caps whose distinct vertices all lie on a sphere
    (every one a hull vertex) had taken 136 s and 9 GiB. Distinct vertices above
    max_hull_points are refused after the parse and merge, before the hull is computed; the
    duplicates of an STL (3 per triangle) do not count."""
    rng = np.random.default_rng(0)
    P = rng.normal(size=(3000, 3))
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    F = np.arange(3000).reshape(-1, 3)
    path = tmp_path / "sphere.stl"
    path.write_bytes(_binary_stl(P, F))
    with pytest.raises(MeshError, match=r"distinct vertices.*3,000.*max_hull_points"):
        Mesh(path, limits=LoadLimits(max_hull_points=2999))
    tet = tmp_path / "tet.stl"
    tet.write_bytes(_binary_stl(TET_V, TET_F))  # 15 stored, 5 distinct
    assert len(load_mesh(tet, limits=LoadLimits(max_hull_points=5)).vertices) == 5
    assert len(Mesh(path, limits=LoadLimits(max_hull_points=3000)).hull) == 3000
