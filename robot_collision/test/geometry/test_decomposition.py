"""Convex decomposition (CoACD) of concave meshes: coverage, caching, URDF and world hooks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robot_collision import CollisionChecker, MeshError, RobotModel, Sphere, UnknownNameError
from robot_collision.errors import ModelError
from robot_collision.geometry import decomposition as dec
from robot_collision.geometry.decomposition import (
    DecompositionOptions,
    decompose,
    mesh_world_objects,
)
from robot_collision.geometry.distance import distance
from robot_collision.geometry.mesh_io import TriangleMesh
from robot_collision.geometry.shapes import Mesh, WorldObject

S = 0.1  # m per unit of the L below


def _extruded_l(ring: np.ndarray) -> TriangleMesh:
    """The L-shaped outline ``ring`` (6, 2), starting at its inner-free corner (0, 0),
    extruded by S."""
    v = np.vstack([np.c_[ring, np.zeros(6)], np.c_[ring, np.full(6, S)]])
    faces = []
    for k in range(1, 5):  # caps: fans from (0, 0), which sees every vertex of the L
        faces.append([0, k + 1, k])
        faces.append([6, 6 + k, 6 + k + 1])
    for k in range(6):  # sides
        a, b = k, (k + 1) % 6
        faces += [[a, b, 6 + b], [a, 6 + b, 6 + a]]
    return TriangleMesh(v, np.array(faces, dtype=np.int64))


def l_prism() -> TriangleMesh:
    """An L-shaped prism: the L (0,0) (2,0) (2,1) (1,1) (1,2) (0,2) (x S) extruded by S."""
    ring = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], dtype=float) * S
    return _extruded_l(ring)


def write_obj(mesh: TriangleMesh, path: Path) -> Path:
    lines = [f"v {x} {y} {z}" for x, y, z in mesh.vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in mesh.faces]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture()
def opts(tmp_path: Path) -> DecompositionOptions:
    return DecompositionOptions(cache_dir=str(tmp_path / "cache"))


def test_l_shape_parts_cover_it_and_clear_the_notch(opts: DecompositionOptions) -> None:
    mesh = l_prism()
    parts = decompose(mesh, opts)
    assert len(parts) >= 2
    shapes = [Mesh(p) for p in parts]
    probe = Sphere(0.01)
    # the notch point (1.3, 1.3) x S lies inside the hull but outside the L: the parts leave it free
    notch = np.eye(4)
    notch[:3, 3] = [1.3 * S, 1.3 * S, 0.5 * S]
    hull_d = distance(Mesh(mesh.vertices), np.eye(4), probe, notch)[0]
    part_d = min(distance(m, np.eye(4), probe, notch)[0] for m in shapes)
    assert hull_d < 0 < part_d
    # every point of the L (vertices and face centres) lies in some part
    pts = np.vstack([mesh.vertices, mesh.vertices[mesh.faces].mean(axis=1)])
    for p in pts:
        T = np.eye(4)
        T[:3, 3] = p
        assert min(distance(m, np.eye(4), Sphere(1e-6), T)[0] for m in shapes) < 1e-6


def test_cache_is_used_keyed_and_repaired(
    opts: DecompositionOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    mesh = l_prism()
    first = decompose(mesh, opts)
    files = list(Path(str(opts.cache_dir)).glob("*.npz"))
    assert len(files) == 1

    import coacd

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("CoACD ran although the result is cached")

    monkeypatch.setattr(coacd, "run_coacd", boom)
    again = decompose(mesh, opts)
    assert len(again) == len(first) and all(np.array_equal(a, b) for a, b in zip(first, again))
    # other options or another mesh: another key, so CoACD would run
    other = DecompositionOptions(threshold=0.2, cache_dir=opts.cache_dir)
    with pytest.raises(MeshError, match="decomposition failed"):
        decompose(mesh, other)
    with pytest.raises(MeshError, match="decomposition failed"):
        decompose(TriangleMesh(mesh.vertices * 2.0, mesh.faces), opts)
    monkeypatch.undo()
    # a damaged cache file is recomputed and rewritten
    files[0].write_bytes(b"not a cache file")
    repaired = decompose(mesh, opts)
    assert len(repaired) == len(first)
    assert dec._read_cache(files[0]) is not None


def test_cache_directory_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROBOT_COLLISION_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dec.cache_directory() == tmp_path / "xdg" / "robot_collision" / "decomposition"
    monkeypatch.setenv("ROBOT_COLLISION_CACHE_DIR", str(tmp_path / "env"))
    assert dec.cache_directory() == tmp_path / "env"
    assert dec.cache_directory(DecompositionOptions(cache_dir="/x")) == Path("/x")


def _cube(lo: float, hi: float) -> np.ndarray:
    return np.array([[x, y, z] for x in (lo, hi) for y in (lo, hi) for z in (lo, hi)], float)


def _cube_mesh(lo: float, hi: float) -> TriangleMesh:
    import trimesh

    box = trimesh.creation.box(extents=[hi - lo] * 3)
    return TriangleMesh(np.asarray(box.vertices) + (lo + hi) / 2, np.asarray(box.faces))


def test_parts_are_fitted_to_the_mesh() -> None:
    mesh = _cube_mesh(0.0, 1.0)

    def rows(a: np.ndarray) -> np.ndarray:
        return a[np.lexsort(np.round(a, 9).T)]

    fitted = dec._fit_to_mesh(
        [_cube(-0.1, 1.1), _cube(0.2, 0.4), _cube(0.5, 1.5), _cube(2.0, 3.0)], mesh
    )
    # a part bulging out of the mesh on all sides (as a remeshed surface does) -> the cube
    assert np.allclose(rows(fitted[0]), rows(_cube(0.0, 1.0)))
    # a part inside the mesh, not touching its surface: its corners are inside -> unchanged
    assert np.allclose(rows(fitted[1]), rows(_cube(0.2, 0.4)))
    # a corner inside the mesh (where two cuts meet) is kept: [0.5, 1]^3, not the hull of the
    # three surface squares alone
    assert np.allclose(rows(fitted[2]), rows(_cube(0.5, 1.0)))
    # nothing of the mesh in the part: kept as it is (never loses coverage)
    assert np.array_equal(fitted[3], _cube(2.0, 3.0))
    # a mesh without an inside: parts unchanged
    hole = TriangleMesh(mesh.vertices, mesh.faces[1:])
    assert dec.needs_remeshing(hole) and not dec.needs_remeshing(mesh)
    assert np.array_equal(dec._fit_to_mesh([_cube(-0.1, 1.1)], hole)[0], _cube(-0.1, 1.1))


def test_l_shape_parts_stay_in_its_hull(opts: DecompositionOptions) -> None:
    pts = np.vstack(decompose(l_prism(), opts)) / S
    eps = 1e-9
    # hull of the L (closed form): 0 <= x, y <= 2, x + y <= 3, 0 <= z <= 1
    assert np.all(pts >= -eps) and np.all(pts[:, :2] <= 2 + eps) and np.all(pts[:, 2] <= 1 + eps)
    assert np.all(pts[:, 0] + pts[:, 1] <= 3 + eps)


def test_options_are_checked() -> None:
    with pytest.raises(MeshError):
        DecompositionOptions(threshold=0.0)
    with pytest.raises(MeshError):
        DecompositionOptions(preprocess="maybe")
    with pytest.raises(MeshError, match="faces"):
        decompose(TriangleMesh(l_prism().vertices, np.zeros((0, 3), dtype=np.int64)))


URDF = """<robot name="bracket">
  <link name="base"/>
  <link name="l_link">
    <collision><geometry><mesh filename="{mesh}" scale="1 1 1"/></geometry></collision>
  </link>
  <link name="other">
    <collision><geometry><mesh filename="{mesh}"/></geometry></collision>
  </link>
  <joint name="j" type="revolute">
    <parent link="base"/><child link="l_link"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" velocity="1" effort="1"/>
  </joint>
  <joint name="f" type="fixed"><parent link="l_link"/><child link="other"/></joint>
</robot>"""


def test_urdf_mesh_mode(opts: DecompositionOptions, tmp_path: Path) -> None:
    path = write_obj(l_prism(), tmp_path / "l.obj")
    xml = URDF.format(mesh=path)
    hull = RobotModel.from_urdf(xml)
    assert len(hull.collision_geometry("l_link")) == 1
    full = RobotModel.from_urdf(xml, mesh_mode="decomposition", decomposition=opts)
    n = len(full.collision_geometry("l_link"))
    assert n >= 2 and len(full.collision_geometry("other")) == n
    one = RobotModel.from_urdf(
        xml, mesh_mode={"l_link": "decomposition"}, decomposition=opts
    )
    assert len(one.collision_geometry("l_link")) == n
    assert len(one.collision_geometry("other")) == 1
    # the notch is free with the decomposition and blocked with the hull
    probe = WorldObject(Sphere(0.01), _at(1.3 * S, 1.3 * S, 0.5 * S), "probe")
    assert not CollisionChecker(hull, skip=[("l_link", "other")]).is_valid(
        [0.0], [probe], ignore_self=True
    )
    assert CollisionChecker(full).is_valid([0.0], [probe], ignore_self=True)
    assert not CollisionChecker(one).is_valid([0.0], [probe], ignore_self=True)  # "other"
    with pytest.raises(UnknownNameError):
        RobotModel.from_urdf(xml, mesh_mode={"nope": "decomposition"}, decomposition=opts)
    with pytest.raises(ModelError):
        RobotModel.from_urdf(xml, mesh_mode="exact")


def _at(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = [x, y, z]
    return T


def test_world_objects_from_a_mesh(opts: DecompositionOptions, tmp_path: Path) -> None:
    path = write_obj(l_prism(), tmp_path / "l.obj")
    pose = _at(1.0, 0.0, 0.0)
    (hull,) = mesh_world_objects(path, pose, "bracket")
    assert hull.name == "bracket" and isinstance(hull.shape, Mesh)
    parts = mesh_world_objects(path, pose, "bracket", mode="decomposition", options=opts)
    assert len(parts) >= 2
    assert [p.name for p in parts] == [f"bracket#{k}" for k in range(len(parts))]
    assert all(np.allclose(p.pose[:3, :3], np.eye(3)) for p in parts)  # translated only
    with pytest.raises(MeshError):
        mesh_world_objects(path, pose, "bracket", mode="voxels")


# ------------------------------------------------------------------ mesh_mode="auto" (issue 22)


def thin_l_prism() -> TriangleMesh:
    """An L of arms 0.4 wide in a 2 x 2 square (x S), extruded by S: 47 % of its hull is
    outside it (area 1.44 of 2.72)."""
    ring = np.array([[0, 0], [2, 0], [2, 0.4], [0.4, 0.4], [0.4, 2], [0, 2]], dtype=float) * S
    return _extruded_l(ring)


def box_mesh(size: float = 0.2) -> TriangleMesh:
    """A closed, outward-oriented cube of side ``size``."""
    v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) * size
    faces = [
        [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
        [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],
    ]
    return TriangleMesh(v, np.array(faces, dtype=np.int64))


def _surface_points(mesh: TriangleMesh, n: int, seed: int = 0) -> np.ndarray:
    """``n`` points on the mesh's triangles (uniform barycentric) plus its vertices."""
    rng = np.random.default_rng(seed)
    tris = mesh.vertices[mesh.faces]
    t = tris[rng.integers(len(tris), size=n)]
    a, b = rng.random((2, n, 1))
    flip = (a + b) > 1
    a, b = np.where(flip, 1 - a, a), np.where(flip, 1 - b, b)
    return np.vstack([mesh.vertices, t[:, 0] + a * (t[:, 1] - t[:, 0]) + b * (t[:, 2] - t[:, 0])])


def test_hull_excess_closed_open_and_cached(opts: DecompositionOptions) -> None:
    box = dec.hull_excess(box_mesh(), opts)
    assert box.exact and box.relative < 1e-9 and abs(box.hull_volume - 0.008) < 1e-12
    thin = dec.hull_excess(thin_l_prism(), opts)
    # independent oracle: the areas of the L and of its hull, times the height
    assert thin.exact and abs(thin.relative - (1 - 1.44 / 2.72)) < 1e-9
    assert abs(thin.volume - (2.72 - 1.44) * S**3) < 1e-12
    # the L without the end face of one arm (not closed): sampled occupancy, within a few %
    m = thin_l_prism()
    keep = [i for i in range(len(m.faces)) if i not in (10, 11)]  # side (2, 0)-(2, 0.4)
    open_l = TriangleMesh(m.vertices, m.faces[keep])
    assert dec.needs_remeshing(open_l)
    sampled = dec.hull_excess(open_l, opts)
    assert not sampled.exact and abs(sampled.relative - thin.relative) < 0.1
    assert len(list(Path(opts.cache_dir or "").glob("*.json"))) == 3
    assert dec.hull_excess(thin_l_prism(), opts) == thin  # read back from the cache


def test_auto_rule() -> None:
    o = DecompositionOptions()
    assert not dec.wants_decomposition(dec.HullExcess(1e-3, 1e-3, True), o)  # convex
    assert dec.wants_decomposition(dec.HullExcess(1e-3, 0.5e-3, True), o)  # 50 % of a litre
    assert not dec.wants_decomposition(dec.HullExcess(1e-6, 0.5e-6, True), o)  # 0.5 cm^3
    assert not dec.wants_decomposition(dec.HullExcess(1e-3, 0.7e-3, True), o)  # 30 %
    for bad in (
        {"auto_min_excess": 1.5},
        {"auto_min_excess_size": -1.0},
        {"workers": -1},
        {"mcts_iterations": 0},
        {"sampling_resolution": 0},
    ):
        with pytest.raises(MeshError):
            DecompositionOptions(**bad)  # type: ignore[arg-type]


COVER_TOL = 1e-5  # m


def _covered(points: np.ndarray, shapes: list[tuple[Mesh, np.ndarray]], tol: float) -> bool:
    """Every point within ``tol`` of (or inside) one of the placed convex shapes."""
    from scipy.spatial import ConvexHull

    planes = []
    for m, T in shapes:
        eq = ConvexHull(m.vertices() @ T[:3, :3].T + T[:3, 3]).equations
        planes.append(eq)
    viol = np.min([np.max(points @ eq[:, :3].T + eq[:, 3], axis=1) for eq in planes], axis=0)
    return bool(np.all(viol <= tol))


def test_auto_picks_hull_for_convex_and_parts_for_concave(
    opts: DecompositionOptions, tmp_path: Path
) -> None:
    box = write_obj(box_mesh(), tmp_path / "box.obj")
    thin = write_obj(thin_l_prism(), tmp_path / "thin.obj")
    (box_obj,) = mesh_world_objects(box, None, "box", mode="auto", options=opts)
    assert isinstance(box_obj.shape, Mesh)
    parts = mesh_world_objects(thin, None, "l", mode="auto", options=opts)
    assert len(parts) >= 2
    # conservative: every point of the L's surface is inside the union of the parts (to
    # COVER_TOL: the fitted parts' corners are intersections of planes, exact to ~4 um here)
    pts = _surface_points(thin_l_prism(), 2000)
    assert _covered(pts, [(o.shape, o.pose) for o in parts], COVER_TOL)  # type: ignore[misc]
    # and the parts clear the notch the hull fills
    notch = np.array([[1.0 * S, 1.0 * S, 0.5 * S]])
    assert not _covered(notch, [(o.shape, o.pose) for o in parts], 0.0)  # type: ignore[misc]


def test_urdf_mesh_mode_auto(opts: DecompositionOptions, tmp_path: Path) -> None:
    xml = URDF.replace('{mesh}" scale="1 1 1"', '{thin}" scale="1 1 1"').format(
        thin=write_obj(thin_l_prism(), tmp_path / "thin.obj"),
        mesh=write_obj(box_mesh(0.05), tmp_path / "box.obj"),  # clear of the probe below
    )
    auto = RobotModel.from_urdf(xml, mesh_mode="auto", decomposition=opts)
    assert len(auto.collision_geometry("l_link")) >= 2  # concave: decomposed
    assert len(auto.collision_geometry("other")) == 1  # convex: its hull
    per_link = RobotModel.from_urdf(
        xml, mesh_mode={"*": "hull", "l_link": "auto"}, decomposition=opts
    )
    assert len(per_link.collision_geometry("l_link")) == len(auto.collision_geometry("l_link"))
    # conservative: the L's surface (in the link frame: no collision origin) is covered
    pts = _surface_points(thin_l_prism(), 2000)
    assert _covered(pts, auto.collision_geometry("l_link"), COVER_TOL)  # type: ignore[arg-type]
    probe = WorldObject(Sphere(0.01), _at(1.0 * S, 1.0 * S, 0.5 * S), "probe")
    assert CollisionChecker(auto, skip=[("l_link", "other")]).is_valid(
        [0.0], [probe], ignore_self=True
    )
    hull = RobotModel.from_urdf(xml)
    assert not CollisionChecker(hull, skip=[("l_link", "other")]).is_valid(
        [0.0], [probe], ignore_self=True
    )


def test_decompose_all_in_processes(tmp_path: Path) -> None:
    from dataclasses import replace

    opts = DecompositionOptions(cache_dir=str(tmp_path / "cache"), workers=2)
    out = dec.decompose_all([l_prism(), thin_l_prism(), l_prism()], opts)  # two processes
    assert len(out) == 3 and all(len(p) >= 2 for p in out)
    assert all(np.array_equal(a, b) for a, b in zip(out[0], out[2]))  # the same mesh: once
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2  # the children wrote the cache
    again = dec.decompose_all([thin_l_prism()], replace(opts, workers=1))  # read back
    assert all(np.array_equal(a, b) for a, b in zip(again[0], out[1]))
