"""OctoMap's binary OcTree stream (``octomap_msgs/Octomap`` with ``binary: true``, MoveIt's
``PlanningScene.world.octomap``) decoded into its occupied leaves.

The stream (``OcTree::writeBinaryData``; no file header) is the tree depth first from the
root (a ``.bt`` file's text header before it, as ``octomap_msgs::binaryMapToMsgData`` writes,
is skipped): every node is two bytes, children 0-3 then 4-7, two bits per child (bit ``2 i`` and
``2 i + 1`` of its byte, least significant first): ``00`` no child (unknown space), ``10``
(bit ``2 i`` set) a free leaf, ``01`` an occupied leaf, ``11`` an inner node, whose own two
bytes follow (after the bytes of the inner children before it). Child ``i`` lies on the
positive side of its parent's centre along x when bit 0 of ``i`` is set, y bit 1, z bit 2. The
tree is 16 levels deep: the root cube is centred on the map's origin with side
``resolution * 2**16``; a leaf at level ``d`` (root = 0) is a cube of side
``resolution * 2**(16 - d)`` (pruned leaves are larger than ``resolution``).

Decoded here rather than by a binding: the OctoMap Python bindings (octomap-python, pyoctomap)
are compiled extensions, a new binary dependency per Python/numpy version for a ~50-line
stream walk (cmeel-octomap, installed with pinocchio, is the C++ library without Python
bindings). The walk is sequential (numba).
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import RobotCollisionError

__all__ = ["OCTREE_DEPTH", "OctomapError", "decode_binary_octree", "occupied_leaves"]

OCTREE_DEPTH = 16
"""Levels of an OctoMap tree below the root (its keys are 16 bits)."""

MAX_LEAVES = 2_000_000
"""Most occupied leaves decoded from one map (bounded memory; more raise OctomapError)."""


class OctomapError(RobotCollisionError, ValueError):
    """An octomap cannot be read: the text says what is wrong with it and what to send."""


_OK, _TRUNCATED, _TOO_DEEP, _TOO_MANY, _TRAILING = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True, boundscheck=False)
def _walk(data, max_leaves):  # type: ignore[no-untyped-def]
    """(keys (n, 3) int64 of the occupied leaves' lower corners in units of the leaf size at
    level 16, levels (n,) int64, status) of the binary stream ``data`` (uint8)."""
    cap = min(max_leaves, 4 * data.shape[0])
    keys = np.empty((cap, 3), dtype=np.int64)
    levels = np.empty(cap, dtype=np.int64)
    n = 0
    if data.shape[0] == 0:
        return keys[:0], levels[:0], _OK
    if data.shape[0] < 2:
        return keys[:0], levels[:0], _TRUNCATED
    codes = np.zeros((OCTREE_DEPTH + 1, 8), dtype=np.int64)
    corner = np.zeros((OCTREE_DEPTH + 1, 3), dtype=np.int64)  # lower corner, level-16 units
    nxt = np.zeros(OCTREE_DEPTH + 1, dtype=np.int64)
    for i in range(8):
        codes[0, i] = (data[i // 4] >> (2 * (i % 4))) & 3
    pos = 2
    level = 0
    while level >= 0:
        if nxt[level] == 8:
            level -= 1
            continue
        i = nxt[level]
        nxt[level] += 1
        code = codes[level, i]
        if code == 0 or code == 1:  # unknown / free
            continue
        half = 1 << (OCTREE_DEPTH - level - 1)  # the child's side, level-16 units
        c0 = corner[level, 0] + (half if i & 1 else 0)
        c1 = corner[level, 1] + (half if i & 2 else 0)
        c2 = corner[level, 2] + (half if i & 4 else 0)
        if code == 2:  # occupied leaf
            if n >= cap:
                return keys[:n], levels[:n], _TOO_MANY
            keys[n, 0], keys[n, 1], keys[n, 2] = c0, c1, c2
            levels[n] = level + 1
            n += 1
            continue
        if level + 1 >= OCTREE_DEPTH:
            return keys[:n], levels[:n], _TOO_DEEP
        if pos + 2 > data.shape[0]:
            return keys[:n], levels[:n], _TRUNCATED
        for j in range(8):
            codes[level + 1, j] = (data[pos + j // 4] >> (2 * (j % 4))) & 3
        pos += 2
        corner[level + 1, 0], corner[level + 1, 1], corner[level + 1, 2] = c0, c1, c2
        nxt[level + 1] = 0
        level += 1
    if pos != data.shape[0]:
        return keys[:n], levels[:n], _TRAILING
    return keys[:n], levels[:n], _OK


BT_HEADER = b"# Octomap OcTree binary file"


def _without_header(buf: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """The tree stream of ``buf``: a ``.bt`` file's header (``writeBinaryConst``, which
    ``octomap_msgs::binaryMapToMsgData`` puts in the message) is skipped, up to its ``data``
    line."""
    if bytes(buf[:len(BT_HEADER)]) != BT_HEADER:
        return buf
    head = bytes(buf[:4096])
    end = head.find(b"\ndata\n")
    if end < 0:
        raise OctomapError("octomap data starts with a .bt header without its 'data' line: "
                           "send the OcTree's binary stream (octomap_msgs::binaryMapToMsg)")
    for line in head[:end].split(b"\n"):
        if line.startswith(b"id ") and line[3:].strip() not in (b"OcTree", b"ColorOcTree"):
            raise OctomapError(f"octomap .bt header names tree type {line[3:].strip()!r}, not "
                               "an OcTree")
    return buf[end + len(b"\ndata\n"):]


def decode_binary_octree(
    data: Union[bytes, NDArray[np.generic]], resolution: float, max_leaves: int = MAX_LEAVES,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Occupied leaves of a binary OcTree stream (module docstring): ``(centres (n, 3) m in
    the map's frame, sides (n,) m)``. ``data``: the message's ``int8[]`` (any 8-bit sequence).
    Raises :class:`OctomapError` for a malformed stream or more than ``max_leaves`` leaves."""
    r = float(resolution)
    if not (math.isfinite(r) and r > 0.0):
        raise OctomapError(f"octomap resolution must be a positive number of metres, got "
                           f"{resolution!r}")
    if isinstance(data, (bytes, bytearray, memoryview)):
        buf = np.frombuffer(bytes(data), dtype=np.uint8)
    else:  # int8 (rclpy's array('b')) or 0..255 values: the same bytes
        buf = np.ascontiguousarray(np.asarray(data).astype(np.int64).astype(np.uint8))
        if buf.ndim != 1:
            raise OctomapError(f"octomap data must be a flat byte sequence, got shape "
                               f"{buf.shape}")
    buf = _without_header(buf)
    keys, levels, status = _walk(buf, int(max_leaves))
    if status == _TRUNCATED:
        raise OctomapError(f"octomap data ends inside the tree ({len(buf)} bytes): the stream is "
                           "truncated; send the whole binary OcTree")
    if status == _TOO_DEEP:
        raise OctomapError(f"octomap tree is deeper than {OCTREE_DEPTH} levels: not a binary "
                           "OcTree stream (wrong id or a non-binary map?)")
    if status == _TRAILING:
        raise OctomapError(f"octomap data has bytes after the tree ({len(buf)} bytes): not a "
                           "binary OcTree stream (wrong id or a non-binary map?)")
    if status == _TOO_MANY:
        raise OctomapError(f"octomap has more than {max_leaves} occupied leaves: send a "
                           "coarser map (or prune it)")
    side = (1 << (OCTREE_DEPTH - levels)).astype(np.float64)  # level-16 units
    half_tree = float(1 << (OCTREE_DEPTH - 1))
    centres = (keys.astype(np.float64) + 0.5 * side[:, None] - half_tree) * r
    return centres, side * r


def occupied_leaves(msg: object) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Occupied leaves ``(centres (n, 3), sides (n,))`` (m, the map's frame) of an
    ``octomap_msgs/Octomap`` (read duck-typed: ``binary``, ``id``, ``resolution``, ``data``).
    Only binary maps of an OcTree (``OcTree``, ``ColorOcTree``: the same binary stream) are
    read; anything else raises :class:`OctomapError`."""
    binary = bool(getattr(msg, "binary", False))
    kind = str(getattr(msg, "id", ""))
    if not binary:
        raise OctomapError(f"octomap {kind!r} is a full (non-binary) map: only binary octomaps "
                           "are read; publish it with octomap_msgs::binaryMapToMsg")
    if kind not in ("OcTree", "ColorOcTree"):
        raise OctomapError(f"octomap id {kind!r} is not an OcTree: only 'OcTree' (or "
                           "'ColorOcTree') binary maps are read")
    return decode_binary_octree(getattr(msg, "data", b""), getattr(msg, "resolution", 0.0))
