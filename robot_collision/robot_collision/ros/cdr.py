"""``robot_collision_interfaces/ClearanceTable`` as serialized CDR bytes, for
``Publisher.publish(bytes)`` (rclpy publishes ``bytes`` as an already serialized message).

Why: filling the message's row objects in Python and converting them to C for publishing
costs ~140 us for 34 rows, the largest part of the checker node's work per joint state. This
writer produces the same bytes in ~10 us: the part that depends only on the model and frame
(header frame id, joint names) is cached, rows and the Jacobian block are written by a compiled
kernel, and body names come from a cache of their encoded forms.

Wire format: the CDR encoding every ROS 2 RMW uses for serialized messages (XCDR1): a 4-byte
encapsulation header ``00 01 00 00`` (little-endian CDR), then the fields in order; primitives
are aligned to their size (8 at most) relative to the first byte after the encapsulation header;
a string is a uint32 length including the terminating NUL, the bytes and the NUL; a sequence is
a uint32 count and its elements. Padding bytes are written as zeros. Tests compare the output
with ``rclpy.serialization.serialize_message`` of the same message, byte for byte outside the
padding (which rclpy leaves uninitialised).
"""

from __future__ import annotations

import struct
import sys

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..collision.clearance import ClearanceTable

__all__ = ["ClearanceTableWriter", "WIRE_FORMAT_SUPPORTED"]

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR, little-endian
WIRE_FORMAT_SUPPORTED = sys.byteorder == "little"
"""The kernel writes native-order numbers: only little-endian hosts (every ROS 2 tier-1
platform) use this writer; others keep publishing message objects."""


def _pad(offset: int, size: int) -> int:
    return (-offset) % size


def _cdr_string(text: str, offset: int) -> bytes:
    """Encoded string starting at payload ``offset`` (alignment padding included)."""
    raw = text.encode("utf-8") + b"\x00"
    return b"\x00" * _pad(offset, 4) + struct.pack("<I", len(raw)) + raw


@njit(cache=True, boundscheck=False)
def _align(o, size):  # type: ignore[no-untyped-def]
    return o + (-o) % size


@njit(cache=True, boundscheck=False)
def _write_u32(buf, o, v):  # type: ignore[no-untyped-def]
    buf[o] = v & 0xFF
    buf[o + 1] = (v >> 8) & 0xFF
    buf[o + 2] = (v >> 16) & 0xFF
    buf[o + 3] = (v >> 24) & 0xFF


@njit(cache=True, boundscheck=False)
def _write_rows(  # type: ignore[no-untyped-def]
    buf, start, pool, name_off, rid, oid, kinds, dist, wr, wo, nn, jac, min_d, in_coll
):
    """Write rows, jacobian, min_distance and in_collision into the zeroed payload ``buf``
    (uint8, 8-aligned, payload offsets) from ``start``; returns the end offset.

    ``pool`` holds encoded names (uint32 length, bytes, NUL) at ``name_off[i]``;
    ``rid``/``oid`` (R,) name indices of each row's robot and other body."""
    f64 = buf.view(np.float64)
    R = dist.shape[0]
    o = _align(start, 4)
    _write_u32(buf, o, R)
    o += 4
    for r in range(R):
        for which in range(2):
            k = rid[r] if which == 0 else oid[r]
            a = name_off[k]
            b = name_off[k + 1]
            o = _align(o, 4)
            for i in range(a, b):
                buf[o] = pool[i]
                o += 1
        buf[o] = kinds[r]
        o = _align(o + 1, 8)
        i = o // 8
        f64[i] = dist[r]
        f64[i + 1] = wr[r, 0]
        f64[i + 2] = wr[r, 1]
        f64[i + 3] = wr[r, 2]
        f64[i + 4] = wo[r, 0]
        f64[i + 5] = wo[r, 1]
        f64[i + 6] = wo[r, 2]
        f64[i + 7] = nn[r, 0]
        f64[i + 8] = nn[r, 1]
        f64[i + 9] = nn[r, 2]
        o += 80
    o = _align(o, 4)
    _write_u32(buf, o, jac.shape[0])
    o += 4
    if jac.shape[0] > 0:
        o = _align(o, 8)
        i = o // 8
        for j in range(jac.shape[0]):
            f64[i + j] = jac[j]
        o += 8 * jac.shape[0]
    o = _align(o, 8)
    f64[o // 8] = min_d
    o += 8
    buf[o] = 1 if in_coll else 0
    return o + 1


class ClearanceTableWriter:
    """Serializes core :class:`~robot_collision.collision.clearance.ClearanceTable` objects as
    ``ClearanceTable`` messages (same content as
    :func:`~robot_collision.ros.conversions.clearance_table_to_msg`). One writer per thread."""

    def __init__(self) -> None:
        self._prefix_key: tuple[str, tuple[str, ...]] | None = None
        self._prefix = np.zeros(0, dtype=np.uint8)
        self._names: dict[str, int] = {}
        self._pool = np.zeros(0, dtype=np.uint8)
        self._name_off = np.zeros(1, dtype=np.int64)
        self._buf = np.zeros(0, dtype=np.uint8)

    def _prefix_for(self, frame_id: str, joint_names: tuple[str, ...]) -> NDArray[np.uint8]:
        """Payload bytes of header (zero stamp) and joint_names for this frame and model."""
        key = (frame_id, joint_names)
        if key != self._prefix_key:
            parts = [b"\x00" * 8]  # stamp: int32 sec, uint32 nanosec (patched per message)
            size = 8
            for chunk in [frame_id, None, *joint_names]:
                if chunk is None:  # the joint_names count
                    enc = b"\x00" * _pad(size, 4) + struct.pack("<I", len(joint_names))
                else:
                    enc = _cdr_string(chunk, size)
                parts.append(enc)
                size += len(enc)
            self._prefix = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
            self._prefix_key = key
        return self._prefix

    def _name_index(self, name: str) -> int:
        k = self._names.get(name)
        if k is None:
            raw = name.encode("utf-8") + b"\x00"
            enc = np.frombuffer(struct.pack("<I", len(raw)) + raw, dtype=np.uint8)
            self._pool = np.concatenate([self._pool, enc])
            self._name_off = np.append(self._name_off, self._pool.shape[0])
            k = len(self._names)
            self._names[name] = k
        return k

    def serialize(
        self, table: ClearanceTable, sec: int, nanosec: int, frame_id: str = ""
    ) -> bytes:
        """CDR bytes of the message for ``table`` stamped ``sec``/``nanosec``."""
        prefix = self._prefix_for(frame_id, tuple(table.joint_names))
        R = len(table)
        index = self._name_index
        rid = np.array([index(n) for n in table.robot_bodies], dtype=np.int64)
        oid = np.array([index(n) for n in table.other_bodies], dtype=np.int64)
        longest = int(np.max(np.diff(self._name_off))) if self._names else 0
        jac = np.ascontiguousarray(table.jacobians, dtype=np.float64).reshape(-1)
        # upper bound: prefix, per row two names (+3 pad each), kind + pad (8), 10 floats
        size = prefix.shape[0] + 16 + R * (2 * (longest + 3) + 8 + 80) + 8 * jac.shape[0] + 24
        size += (-size) % 8
        if self._buf.shape[0] < size:
            self._buf = np.zeros(2 * size, dtype=np.uint8)
        buf = self._buf
        buf[: size].fill(0)
        P = prefix.shape[0]
        buf[:P] = prefix
        buf[:8].view(np.int32)[0] = sec
        buf[:8].view(np.uint32)[1] = nanosec
        d = np.ascontiguousarray(table.distances, dtype=np.float64)
        end = _write_rows(
            buf,
            P,
            self._pool,
            self._name_off,
            rid,
            oid,
            np.ascontiguousarray(table.kinds, dtype=np.int64),
            d,
            np.ascontiguousarray(table.witness_robot, dtype=np.float64),
            np.ascontiguousarray(table.witness_other, dtype=np.float64),
            np.ascontiguousarray(table.normals, dtype=np.float64),
            jac,
            float(d.min()) if R else float("inf"),
            bool(R and d.min() <= 0.0),
        )
        return ENCAPSULATION + buf[:end].tobytes()

    def agrees_with_rmw(self, table: ClearanceTable, frame_id: str = "") -> bool:
        """Whether :meth:`serialize` gives the bytes the active RMW gives for the same message
        (outside the alignment padding) and they deserialize to it. A node checks this once
        before publishing bytes (the format is the RMW's; every RMW seen uses this one)."""
        from builtin_interfaces.msg import Time
        from rclpy.serialization import deserialize_message, serialize_message

        from robot_collision_interfaces.msg import ClearanceTable as ClearanceTableMsg

        from .conversions import clearance_table_to_msg

        msg = clearance_table_to_msg(table, Time(sec=1, nanosec=2), frame_id)
        ours = self.serialize(table, 1, 2, frame_id)
        theirs = serialize_message(msg)
        if len(ours) != len(theirs):
            return False
        a = np.frombuffer(ours, np.uint8)
        b = np.frombuffer(theirs, np.uint8)
        if np.any(a[a != b] != 0):  # ours holds zeros in the padding, theirs anything
            return False
        return bool(deserialize_message(ours, ClearanceTableMsg) == msg)
