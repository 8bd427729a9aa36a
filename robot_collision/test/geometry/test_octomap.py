"""OctoMap binary OcTree streams (robot_collision.geometry.octomap).

Oracles: the OctoMap library itself (test/data/octomap: a tree built, pruned and written by
cmeel-octomap's C++, make_fixture.cpp, with its occupied leaves from the library's iterator);
and a reference encoder written here from the format's specification (OcTree::
writeBinaryNode: two bytes per node, two bits per child, ``11`` inner / ``01`` occupied /
``10`` free / ``00`` none, children recursed in order; child ``i`` on the positive side along
x, y, z for bits 0, 1, 2 of ``i``; leaf keys mapped to ``(key - 2**15 + 0.5) * resolution``),
fed with known voxel sets, pruning eight equal siblings into their parent as OctoMap does.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision.geometry.octomap import (
    OctomapError,
    decode_binary_octree,
    occupied_leaves,
)

DEPTH = 16


def _tree(voxels: dict[tuple[int, int, int], bool], prune: bool) -> Optional[dict]:
    """Nested dict tree of level-16 keys -> occupied? (None where unknown)."""
    root: dict = {}
    for key, occ in voxels.items():
        node = root
        for level in range(DEPTH):
            bit = DEPTH - 1 - level
            i = ((key[0] >> bit) & 1) | (((key[1] >> bit) & 1) << 1) | (((key[2] >> bit) & 1) << 2)
            if level == DEPTH - 1:
                node[i] = occ
            else:
                node = node.setdefault(i, {})

    def prune_node(node: dict) -> object:
        for i in list(node):
            if isinstance(node[i], dict):
                node[i] = prune_node(node[i])
        vals = list(node.values())
        if prune and len(vals) == 8 and all(isinstance(v, bool) for v in vals) \
                and len(set(vals)) == 1:
            return vals[0]
        return node

    out = prune_node(root) if root else None
    return out if isinstance(out, dict) or out is None else {i: out for i in range(8)}


def _encode(node: dict) -> bytes:
    """OcTree::writeBinaryNode, from the specification."""
    lo = hi = 0
    for i in range(8):
        child = node.get(i)
        if child is None:
            code = 0
        elif isinstance(child, dict):
            code = 3  # bits 2i and 2i+1 set
        elif child:
            code = 2  # bit 2i+1 set: occupied
        else:
            code = 1  # bit 2i set: free
        if i < 4:
            lo |= code << (2 * i)
        else:
            hi |= code << (2 * (i - 4))
    out = bytes([lo, hi])
    for i in range(8):
        if isinstance(node.get(i), dict):
            out += _encode(node[i])
    return out


def _expected(voxels: dict[tuple[int, int, int], bool], res: float) -> np.ndarray:
    keys = np.array([k for k, occ in voxels.items() if occ], dtype=float).reshape(-1, 3)
    return (keys - 2.0**15 + 0.5) * res


def _expand(centres: np.ndarray, sides: np.ndarray, res: float) -> np.ndarray:
    """Leaf cubes back to their level-16 voxel centres."""
    out = []
    for c, s in zip(centres, sides):
        n = round(float(s) / res)
        g = (np.arange(n) - 0.5 * (n - 1)) * res
        X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
        out.append(c + np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 3))


def _sorted(P: np.ndarray) -> np.ndarray:
    return P[np.lexsort(P.T[::-1])] if len(P) else P


keys = st.tuples(*[st.integers(2**15 - 6, 2**15 + 5)] * 3)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys, st.booleans(), max_size=60), st.sampled_from([0.01, 0.05, 0.1]))
def test_decoded_leaves_are_the_encoded_voxels(voxels: dict, res: float) -> None:
    tree = _tree(voxels, prune=False)
    data = _encode(tree) if tree else b""
    centres, sides = decode_binary_octree(data, res)
    np.testing.assert_allclose(sides, res)
    np.testing.assert_allclose(_sorted(centres), _sorted(_expected(voxels, res)), atol=1e-9)


def test_pruned_blocks_decode_to_large_leaves() -> None:
    """Eight occupied siblings are one leaf of twice the side (twice again for 64)."""
    res = 0.05
    base = 2**15 + 8
    voxels = {(base + x, base + y, base + z): True
              for x in range(4) for y in range(4) for z in range(4)}
    voxels[(2**15 - 3, 2**15, 2**15 + 1)] = True
    voxels[(2**15 - 3, 2**15 + 1, 2**15 + 1)] = False
    tree = _tree(voxels, prune=True)
    assert tree is not None
    data = _encode(tree)
    centres, sides = decode_binary_octree(np.frombuffer(data, dtype=np.int8), res)
    assert sorted(np.round(sides / res).astype(int).tolist()) == [1, 4]
    big = centres[np.argmax(sides)]
    np.testing.assert_allclose(big, (base + 2.0 - 2.0**15) * res)
    np.testing.assert_allclose(_sorted(_expand(centres, sides, res)),
                               _sorted(_expected(voxels, res)), atol=1e-9)


def test_message_fields_and_malformed_streams_raise_typed_errors() -> None:
    tree = _tree({(2**15, 2**15, 2**15): True}, prune=False)
    assert tree is not None
    data = _encode(tree)
    msg = SimpleNamespace(binary=True, id="OcTree", resolution=0.02,
                          data=list(np.frombuffer(data, dtype=np.int8)))
    centres, _ = occupied_leaves(msg)
    np.testing.assert_allclose(centres, [[0.01, 0.01, 0.01]])
    with pytest.raises(OctomapError, match="non-binary"):
        occupied_leaves(SimpleNamespace(binary=False, id="OcTree", resolution=0.02, data=data))
    with pytest.raises(OctomapError, match="not an OcTree"):
        occupied_leaves(SimpleNamespace(binary=True, id="OccupancyOcTreeBase", resolution=0.02,
                                        data=data))
    with pytest.raises(OctomapError, match="truncated"):
        decode_binary_octree(data[:-3], 0.02)
    with pytest.raises(OctomapError, match="after the tree"):
        decode_binary_octree(data + b"\x00\x00", 0.02)
    with pytest.raises(OctomapError, match="deeper"):
        decode_binary_octree(b"\xff\xff" * 40, 0.02)
    with pytest.raises(OctomapError, match="resolution"):
        decode_binary_octree(data, math.nan)
    with pytest.raises(OctomapError, match="occupied leaves"):
        decode_binary_octree(_encode({i: True for i in range(8)}), 0.02, max_leaves=4)
    assert decode_binary_octree(b"", 0.02)[0].shape == (0, 3)


FIXTURE = Path(__file__).resolve().parents[1] / "data" / "octomap"


@pytest.mark.parametrize("name", ["tree.bt", "tree_header.bt"])
def test_the_octomap_librarys_own_stream_decodes_to_its_leaves(name: str) -> None:
    """tree.bt: writeBinaryData (octomap_msgs::binaryMapToMsg); tree_header.bt: the .bt file
    with its header (binaryMapToMsgData)."""
    data = (FIXTURE / name).read_bytes()
    expected = np.loadtxt(FIXTURE / "leaves.txt")
    centres, sides = decode_binary_octree(data, 0.05)
    got = np.column_stack([centres, sides])
    assert len(got) == len(expected) == 300
    np.testing.assert_allclose(_sorted(got), _sorted(expected), atol=2e-6)
    assert sorted(set(np.round(sides, 6))) == [0.05, 0.4]  # one pruned 8 x 8 x 8 block
    msg = SimpleNamespace(binary=True, id="OcTree", resolution=0.05,
                          data=np.frombuffer(data, dtype=np.int8))
    np.testing.assert_allclose(occupied_leaves(msg)[0], centres)
    bad = data.replace(b"id OcTree", b"id OcTreeX") if name == "tree_header.bt" else None
    if bad is not None:
        with pytest.raises(OctomapError, match="tree type"):
            decode_binary_octree(bad, 0.05)
