"""ClearanceTableWriter against rclpy's own serializer (the oracle): same bytes outside the
alignment padding, and the bytes deserialize to the message built field by field."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_collision import Box, CollisionChecker, RobotModel, WorldObject, default_robot_paths
from robot_collision.collision.clearance import ClearanceTable
from robot_collision.geometry.transforms import pose_from_xyz_rpy

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message

from robot_collision.ros.cdr import ClearanceTableWriter
from robot_collision.ros.conversions import clearance_table_to_msg
from robot_collision_interfaces.msg import ClearanceTable as ClearanceTableMsg

# names as URDF/SRDF and world files allow them: any text without NUL, ASCII or not
NAMES = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                max_size=11)
FLOATS = st.floats(-1e3, 1e3, allow_nan=False)


def _assert_same_wire(table: ClearanceTable, sec: int, nanosec: int, frame_id: str,
                      writer: ClearanceTableWriter) -> None:
    ours = writer.serialize(table, sec, nanosec, frame_id)
    msg = clearance_table_to_msg(table, Time(sec=sec, nanosec=nanosec), frame_id)
    theirs = serialize_message(msg)
    assert len(ours) == len(theirs)
    assert deserialize_message(ours, ClearanceTableMsg) == msg
    a = np.frombuffer(ours, np.uint8)
    b = np.frombuffer(theirs, np.uint8)
    differ = np.nonzero(a != b)[0]
    # rclpy leaves alignment padding uninitialised; ours is zero there and nowhere else differs
    assert np.all(a[differ] == 0), f"bytes differ at {differ[a[differ] != 0][:10]}"


@st.composite
def tables(draw: st.DrawFn) -> ClearanceTable:
    n = draw(st.integers(0, 8))
    R = draw(st.integers(0, 6))
    arr = st.lists(FLOATS, min_size=R * 3, max_size=R * 3)

    def mat(cols: int) -> np.ndarray:
        return np.array(draw(st.lists(FLOATS, min_size=R * cols, max_size=R * cols)),
                        dtype=float).reshape(R, cols)

    return ClearanceTable(
        joint_names=draw(st.lists(NAMES, min_size=n, max_size=n)),
        robot_bodies=draw(st.lists(NAMES, min_size=R, max_size=R)),
        other_bodies=draw(st.lists(NAMES, min_size=R, max_size=R)),
        kinds=np.array(draw(st.lists(st.integers(0, 1), min_size=R, max_size=R)),
                       dtype=np.int64),
        distances=np.array(draw(st.lists(FLOATS, min_size=R, max_size=R)), dtype=float),
        witness_robot=np.array(draw(arr), dtype=float).reshape(R, 3),
        witness_other=mat(3),
        normals=mat(3),
        jacobians=mat(n),
        robot_links=np.zeros(R, dtype=np.int64),
        other_links=np.zeros(R, dtype=np.int64),
    )


@settings(max_examples=150, deadline=None)
@given(table=tables(), frame_id=NAMES, sec=st.integers(-2**31, 2**31 - 1),
       nanosec=st.integers(0, 999_999_999))
def test_random_tables_match_rclpy(table: ClearanceTable, frame_id: str, sec: int,
                                   nanosec: int) -> None:
    _assert_same_wire(table, sec, nanosec, frame_id, ClearanceTableWriter())


def test_one_writer_over_changing_tables_frames_and_names() -> None:
    """The caches (model prefix, encoded names, buffer) follow changes between calls."""
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    checker = CollisionChecker(robot)
    writer = ClearanceTableWriter()
    rng = np.random.default_rng(7)
    for k in range(30):
        world = [WorldObject(Box(0.8, 1.2, 0.05),
                             pose_from_xyz_rpy([0.6, 0, 0.1 * (k % 5)], [0, 0, 0]),
                             "t" * (1 + k % 9))]
        q = robot.random_configuration(rng)
        table = checker.clearance(q, world, influence_distance=[0.05, 0.3, math.inf][k % 3])
        _assert_same_wire(table, k, 10 * k, "frame"[: k % 6], writer)
    empty = checker.clearance(robot.home_configuration(), [], influence_distance=1e-9)
    assert len(empty) == 0
    out = deserialize_message(writer.serialize(empty, 1, 2, "base"), ClearanceTableMsg)
    assert out.rows == [] and math.isinf(out.min_distance) and not out.in_collision


def test_rmw_agreement_check() -> None:
    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    table = CollisionChecker(robot).clearance(robot.home_configuration())
    assert len(table) > 5
    writer = ClearanceTableWriter()
    assert writer.agrees_with_rmw(table, "base_link")

    class Misaligned(ClearanceTableWriter):
        def serialize(self, table: ClearanceTable, sec: int, nanosec: int,
                      frame_id: str = "") -> bytes:
            data = super().serialize(table, sec, nanosec, frame_id)
            return data[:-9] + b"\x00" + data[-9:-1]  # in_collision moved into the last float

    assert not Misaligned().agrees_with_rmw(table, "base_link")
