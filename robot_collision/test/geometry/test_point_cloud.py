"""PointCloud / OccupancyMap shapes and point-cloud files (.ply, .pcd, .npy).

Oracles: PLY files written by trimesh (an independent writer); PCD files written here byte by
byte from the format's specification (PCL's ``io/pcd_io``: header, interleaved binary records,
and for ``binary_compressed`` the field-major block compressed with LZF, which this test
compresses with an independent greedy LZF encoder that emits back-references).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robot_collision import OccupancyMap, PointCloud, WorldObject
from robot_collision.errors import ShapeError
from robot_collision.geometry.point_cloud import load_point_cloud, read_pcd


def test_point_cloud_validation() -> None:
    P = np.random.default_rng(0).uniform(-1, 1, (50, 3))
    c = PointCloud(P, 0.01)
    assert c.num_points == 50 and c.radius == 0.01
    assert not c.points.flags.writeable
    np.testing.assert_array_equal(c.params(), [0.01, 0, 0, 0])
    centre, half = c.local_box()
    assert np.all(np.abs(P - centre) <= half - 0.01 + 1e-12)
    assert c.bounding_radius() >= np.linalg.norm(P, axis=1).max() + 0.01 - 1e-12
    WorldObject(c, np.eye(4), "cloud")  # usable as a world object
    with pytest.raises(ShapeError, match="non-finite"):
        PointCloud(np.array([[0.0, np.inf, 0.0]]))
    with pytest.raises(ShapeError, match="radius"):
        PointCloud(P, -0.1)
    with pytest.raises(ShapeError, match=r"\(N, 3\)"):
        PointCloud(np.zeros((5, 4)))
    assert PointCloud(np.zeros((0, 3))).num_points == 0
    with pytest.raises(ShapeError, match="voxel_size"):
        OccupancyMap(P, 0.0)


def test_downsampled_cloud_reuses_its_order() -> None:
    P = np.random.default_rng(1).uniform(0, 1, (30000, 3))
    c = PointCloud.downsampled(P, 0.02, radius=0.005)
    assert c.resolution == 0.02 and 0 < c.num_points < len(P)
    np.testing.assert_array_equal(c.index.order, np.arange(c.num_points))
    # every input point lies within a voxel diagonal of an output point
    from scipy.spatial import cKDTree

    assert cKDTree(c.points).query(P)[0].max() <= 0.02 * np.sqrt(3)


def _points(n: int = 400) -> np.ndarray:
    return np.random.default_rng(2).uniform(-2, 2, (n, 3)).astype(np.float32).astype(float)


def test_npy_plain_wide_and_structured(tmp_path: Path) -> None:
    P = _points()
    np.save(tmp_path / "a.npy", P)
    np.testing.assert_array_equal(load_point_cloud(tmp_path / "a.npy"), P)
    np.save(tmp_path / "b.npy", np.hstack([P, np.ones((len(P), 2))]))
    np.testing.assert_array_equal(load_point_cloud(tmp_path / "b.npy"), P)
    rec = np.zeros(len(P), dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("i", "<u1")])
    rec["x"], rec["y"], rec["z"] = P.T
    np.save(tmp_path / "c.npy", rec)
    np.testing.assert_array_equal(load_point_cloud(tmp_path / "c.npy"), P)
    np.save(tmp_path / "bad.npy", np.zeros((3, 2)))
    with pytest.raises(ShapeError, match="N, 3"):
        load_point_cloud(tmp_path / "bad.npy")


@pytest.mark.parametrize("encoding", ["ascii", "binary"])
def test_ply_written_by_trimesh(tmp_path: Path, encoding: str) -> None:
    import trimesh

    P = _points()
    path = tmp_path / "c.ply"
    path.write_bytes(trimesh.PointCloud(P).export(file_type="ply", encoding=encoding))
    got = load_point_cloud(path)
    np.testing.assert_allclose(got, P, atol=1e-6 if encoding == "ascii" else 0)
    c = PointCloud.from_file(path, radius=0.01, resolution=0.5)
    assert c.radius == 0.01 and c.num_points <= len(P)


def _lzf_compress(data: bytes) -> bytes:
    """Greedy LZF encoder (liblzf's format): literal runs and back-references of 3..264 bytes
    within 8 KiB."""
    out = bytearray()
    lit = bytearray()
    table: dict[bytes, int] = {}
    i = 0

    def flush() -> None:
        for k in range(0, len(lit), 32):
            chunk = lit[k : k + 32]
            out.append(len(chunk) - 1)
            out.extend(chunk)
        lit.clear()

    while i < len(data):
        key = data[i : i + 3]
        ref = table.get(key) if len(key) == 3 else None
        table[key] = i
        if ref is not None and 0 < i - ref <= 8192:
            n = 3
            while i + n < len(data) and n < 264 and data[ref + n] == data[i + n]:
                n += 1
            flush()
            off = i - ref - 1
            if n - 2 < 7:
                out.append(((n - 2) << 5) | (off >> 8))
            else:
                out.append((7 << 5) | (off >> 8))
                out.append(n - 2 - 7)
            out.append(off & 0xFF)
            i += n
        else:
            lit.append(data[i])
            i += 1
    flush()
    return bytes(out)


def _pcd_header(fields: str, size: str, typ: str, count: str, n: int, data: str) -> bytes:
    return (f"# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS {fields}\n"
            f"SIZE {size}\nTYPE {typ}\nCOUNT {count}\nWIDTH {n}\nHEIGHT 1\n"
            f"VIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA {data}\n").encode()


@pytest.mark.parametrize("data", ["ascii", "binary", "binary_compressed"])
def test_pcd_files(tmp_path: Path, data: str) -> None:
    P = np.round(_points(), 5)
    P[7] = np.nan  # organised clouds mark missing points with NaN
    n = len(P)
    rgb = np.arange(n, dtype=np.uint32)
    normal = np.ones((n, 3), dtype=np.float32)
    rec = np.zeros(n, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("rgb", "<u4"),
                             ("normal", "<f4", (3,))])
    rec["x"], rec["y"], rec["z"] = P.T
    rec["rgb"] = rgb
    rec["normal"] = normal
    head = _pcd_header("x y z rgb normal", "4 4 4 4 4", "F F F U F", "1 1 1 1 3", n, data)
    if data == "ascii":
        body = "\n".join(" ".join(f"{v:.5f}" for v in (*p, )) + f" {c} 1 1 1"
                         for p, c in zip(P, rgb)).encode() + b"\n"
    elif data == "binary":
        body = rec.tobytes()
    else:
        raw = b"".join(rec[name].tobytes() for name in ("x", "y", "z", "rgb", "normal"))
        comp = _lzf_compress(raw)
        assert len(comp) < len(raw)  # the encoder did use back-references
        body = np.array([len(comp), len(raw)], dtype="<u4").tobytes() + comp
    path = tmp_path / f"c_{data}.pcd"
    path.write_bytes(head + body)
    got = read_pcd(path)
    np.testing.assert_allclose(got, P.astype(np.float32), atol=1e-5, equal_nan=True)
    loaded = load_point_cloud(path)  # drops the NaN point
    assert len(loaded) == n - 1
    np.testing.assert_allclose(loaded, np.delete(P, 7, axis=0), atol=1e-5)


def test_bad_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match="does not exist"):
        load_point_cloud(tmp_path / "missing.pcd")
    (tmp_path / "a.xyz").write_text("1 2 3\n")
    with pytest.raises(ShapeError, match="unsupported format"):
        load_point_cloud(tmp_path / "a.xyz")
    (tmp_path / "nofield.pcd").write_bytes(_pcd_header("x y", "4 4", "F F", "1 1", 1, "ascii")
                                           + b"1 2\n")
    with pytest.raises(ShapeError, match="'z'"):
        load_point_cloud(tmp_path / "nofield.pcd")
    (tmp_path / "short.pcd").write_bytes(_pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 10,
                                                     "binary") + b"\0" * 12)
    with pytest.raises(ShapeError, match="shorter"):
        load_point_cloud(tmp_path / "short.pcd")
    (tmp_path / "corrupt.pcd").write_bytes(
        _pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 2, "binary_compressed")
        + np.array([3, 24], dtype="<u4").tobytes() + b"\xff\xff\xff")
    with pytest.raises(ShapeError, match="corrupt"):
        load_point_cloud(tmp_path / "corrupt.pcd")
    (tmp_path / "nohead.pcd").write_bytes(b"VERSION 0.7\nFIELDS x y z\n")
    with pytest.raises(ShapeError, match="header"):
        load_point_cloud(tmp_path / "nohead.pcd")


def test_load_limits_are_checked_before_parsing(tmp_path: Path) -> None:
    from robot_collision.load_limits import LoadLimits

    P = _points(50)
    np.save(tmp_path / "a.npy", P)
    with pytest.raises(ShapeError, match="max_cloud_points"):
        load_point_cloud(tmp_path / "a.npy", LoadLimits(max_cloud_points=49))
    with pytest.raises(ShapeError, match="max_cloud_bytes"):
        load_point_cloud(tmp_path / "a.npy", LoadLimits(max_cloud_bytes=100))
    # a PCD header that declares a billion points fails before any data is read
    (tmp_path / "huge.pcd").write_bytes(
        _pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 10**9, "binary"))
    with pytest.raises(ShapeError, match="max_cloud_points"):
        load_point_cloud(tmp_path / "huge.pcd")
    import trimesh

    (tmp_path / "c.ply").write_bytes(trimesh.PointCloud(P).export(file_type="ply"))
    with pytest.raises(ShapeError, match="max_cloud_points"):
        PointCloud.from_file(tmp_path / "c.ply", limits=LoadLimits(max_cloud_points=10))
    assert OccupancyMap.from_file(tmp_path / "c.ply", 0.1).num_points == len(P)
