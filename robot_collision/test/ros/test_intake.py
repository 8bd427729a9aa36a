"""Message intake caps (robot_collision.ros.intake), checked against rclpy's own serializer.

Messages are built as objects, serialized with ``rclpy.serialization.serialize_message`` and
handed to the intake as bytes. The oracle for "over a cap" is the longest sequence of the message
object, measured in Python on the object (not on the bytes); the oracle for "well formed" is
that ``decode`` returns a message equal to the original. Truncated and random bytes must give a
:class:`MessageRejectedError` (never another exception, never a different message).
"""

from __future__ import annotations

import contextlib
import time
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("rclpy")

from geometry_msgs.msg import Point
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from shape_msgs.msg import Mesh, MeshTriangle
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from robot_collision.ros.intake import (
    MessageLimits,
    MessageRejectedError,
    check_serialized,
    decode,
)
from robot_collision_interfaces.msg import ClearanceRow, ClearanceTable
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg

pytestmark = pytest.mark.ros

names = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def joint_states(draw: Any) -> JointState:
    m = JointState()
    m.header.frame_id = draw(names)
    m.header.stamp.sec = draw(st.integers(0, 2**31 - 1))
    m.name = draw(st.lists(names, max_size=30))
    m.position = draw(st.lists(floats, max_size=30))
    m.velocity = draw(st.lists(floats, max_size=30))
    m.effort = draw(st.lists(floats, max_size=30))
    return m


@st.composite
def commands(draw: Any) -> Float64MultiArray:
    m = Float64MultiArray()
    m.layout.dim = [MultiArrayDimension(label=draw(names), size=draw(st.integers(0, 99)),
                                        stride=draw(st.integers(0, 99)))
                    for _ in range(draw(st.integers(0, 4)))]
    m.layout.data_offset = draw(st.integers(0, 2**32 - 1))
    m.data = draw(st.lists(floats, max_size=40))
    return m


@st.composite
def world_objects(draw: Any) -> WorldObjectMsg:
    m = WorldObjectMsg()
    m.id = draw(names)
    m.operation = draw(st.integers(0, 255))
    m.primitive.type = draw(st.integers(0, 5))
    m.primitive.dimensions = draw(st.lists(floats, max_size=3))  # a bounded sequence
    pts = draw(st.lists(st.tuples(floats, floats, floats), max_size=40))
    m.mesh = Mesh(vertices=[Point(x=a, y=b, z=c) for a, b, c in pts],
                  triangles=[MeshTriangle(vertex_indices=[0, 1, 2])
                             for _ in range(draw(st.integers(0, 20)))])
    m.use_mesh = draw(st.booleans())
    m.pose.position.x = draw(floats)
    m.pose.orientation.w = draw(floats)
    m.header.frame_id = draw(names)
    return m


@st.composite
def clearance_tables(draw: Any) -> ClearanceTable:
    m = ClearanceTable()
    m.joint_names = draw(st.lists(names, max_size=8))
    m.rows = [ClearanceRow(robot_body=draw(names), other_body=draw(names),
                           kind=draw(st.integers(0, 255)), distance=draw(floats))
              for _ in range(draw(st.integers(0, 6)))]
    m.jacobian = draw(st.lists(floats, max_size=40))
    m.min_distance = draw(floats)
    return m


def _longest(msg: Any, mesh: bool) -> int:
    """Longest sequence of a message object: mesh vertex/triangle lists when ``mesh``, every
    other sequence otherwise (walked on the Python objects)."""
    best = 0
    for name, kind in msg.get_fields_and_field_types().items():
        value = getattr(msg, name)
        if hasattr(value, "get_fields_and_field_types"):
            best = max(best, _longest(value, mesh))
        elif kind.startswith("sequence<"):
            if (name in ("vertices", "triangles")) == mesh:
                best = max(best, len(value))
            for item in value:
                if hasattr(item, "get_fields_and_field_types"):
                    best = max(best, _longest(item, mesh))
    return best


def _same(a: Any, b: Any) -> bool:
    """Message equality with NaN == NaN (messages compare floats with ==)."""
    return repr(a) == repr(b)


MESSAGES = st.one_of(joint_states(), commands(), world_objects(), clearance_tables())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msg=MESSAGES, cap=st.integers(1, 45), mesh_cap=st.integers(1, 45))
def test_caps_refuse_exactly_the_messages_with_a_longer_sequence(
        msg: Any, cap: int, mesh_cap: int) -> None:
    raw = serialize_message(msg)
    limits = MessageLimits(max_message_entries=cap, max_mesh_vertices=mesh_cap)
    over = _longest(msg, mesh=False) > cap or _longest(msg, mesh=True) > mesh_cap
    if over:
        with pytest.raises(MessageRejectedError, match="refused"):
            decode(raw, type(msg), limits)
    else:
        assert _same(decode(raw, type(msg), limits), msg)


@settings(max_examples=150, deadline=None)
@given(msg=MESSAGES, data=st.data())
def test_truncated_messages_are_refused_or_decode_to_the_original(msg: Any, data: Any) -> None:
    raw = serialize_message(msg)
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        out = decode(raw[:cut], type(msg))
    except MessageRejectedError:
        return
    assert _same(out, msg)  # only alignment padding at the end was cut


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=200), kind=st.sampled_from([b"\x00\x01", b"\x00\x00", b"\x07\x07"]),
       msg_type=st.sampled_from([JointState, Float64MultiArray, WorldObjectMsg, String]))
def test_random_bytes_never_raise_anything_but_a_refusal(body: bytes, kind: bytes,
                                                         msg_type: Any) -> None:
    with contextlib.suppress(MessageRejectedError):
        decode(kind + b"\x00\x00" + body, msg_type)


def test_byte_cap_and_string_message() -> None:
    msg = String(data="x" * 1000)
    raw = serialize_message(msg)
    assert decode(raw, String, MessageLimits(max_message_bytes=len(raw))).data == msg.data
    with pytest.raises(MessageRejectedError, match="max_message_bytes"):
        decode(raw, String, MessageLimits(max_message_bytes=len(raw) - 1))


@pytest.mark.parametrize("field", ["name", "position"])
def test_a_million_entries_are_refused_in_microseconds_without_allocating(field: str) -> None:
    msg = JointState()
    setattr(msg, field, ["j"] * 10**6 if field == "name" else [0.0] * 10**6)
    raw = serialize_message(msg)
    with pytest.raises(MessageRejectedError, match=f"{field} has 1,000,000 entries.*"
                       "max_message_entries"):
        check_serialized(raw, JointState)
    t0 = time.perf_counter()
    for _ in range(10):
        with pytest.raises(MessageRejectedError):
            check_serialized(raw, JointState)
    assert (time.perf_counter() - t0) / 10 < 0.005  # s (measured: about 50 us)
    tracemalloc.start()
    with pytest.raises(MessageRejectedError):
        check_serialized(raw, JointState)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024  # bytes: nothing grows with the 10^6 entries


def test_counts_claiming_more_than_the_bytes_hold_are_malformed() -> None:
    # a 24-byte JointState whose name sequence claims 5,000 entries (under the cap)
    raw = bytes.fromhex("00010000") + bytes(8) + (1).to_bytes(4, "little") + bytes(4) \
        + (5000).to_bytes(4, "little")
    with pytest.raises(MessageRejectedError, match="malformed"):
        decode(raw, JointState)



def test_byte_arrays_count_against_the_byte_cap_only() -> None:
    """A point cloud's data (uint8[], here 1.2 MB: 100,000 points) is not an 'entries' field:
    only max_message_bytes bounds it; its other sequences (fields) still have the entry cap."""
    from sensor_msgs.msg import PointCloud2, PointField

    msg = PointCloud2(height=1, width=100_000, point_step=12, row_step=1_200_000,
                      is_dense=True, data=bytes(1_200_000))
    msg.fields = [PointField(name=a, offset=4 * i, datatype=7, count=1)
                  for i, a in enumerate("xyz")]
    raw = serialize_message(msg)
    out = decode(raw, PointCloud2, MessageLimits(max_message_entries=10))
    assert out.width == 100_000 and len(out.data) == 1_200_000
    with pytest.raises(MessageRejectedError, match="max_message_bytes"):
        decode(raw, PointCloud2, MessageLimits(max_message_bytes=1_000_000))
    with pytest.raises(MessageRejectedError, match="fields has 3 entries"):
        decode(raw, PointCloud2, MessageLimits(max_message_entries=2))
