"""The collision_checker node, in-process over real topics and services.

Each test starts a CollisionCheckerNode in its own namespace, publishes real JointState
messages and compares what the node publishes or answers with the core API's values.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robot_collision import CollisionChecker, RobotModel, data_path, default_robot_paths
from robot_collision.ros.world import WorldModel

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import Pose  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from shape_msgs.msg import SolidPrimitive  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from robot_collision.ros.checker_node import CollisionCheckerNode  # noqa: E402
from robot_collision_interfaces.msg import ClearanceRow, ClearanceTable  # noqa: E402
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg  # noqa: E402
from robot_collision_interfaces.srv import CheckCollision  # noqa: E402

URDF, SRDF = default_robot_paths()
WORLD_FILE = data_path("config", "demo_world.yaml")
INFLUENCE = 0.3
Q_HOME = np.zeros(7)
Q_NEAR = np.array([0.0, 0.8, 0.0, 1.8, 0.0, 0.8, 0.0])  # tool 5.5 cm above the table
Q_HIT = np.array([0.0, 1.2, 0.0, 1.2, 0.0, 0.8, 0.0])  # tool into the table


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    return RobotModel.from_urdf(URDF, srdf=SRDF)


@pytest.fixture(scope="module")
def world() -> WorldModel:
    w = WorldModel()
    w.use_file(WORLD_FILE)
    return w


@pytest.fixture(scope="module")
def core(robot: RobotModel) -> CollisionChecker:
    return CollisionChecker(robot)


def _params(**extra: Any) -> list[Parameter]:
    values: dict[str, Any] = {
        "urdf_path": str(URDF),
        "srdf_path": str(SRDF),
        "world_file": str(WORLD_FILE),
        "influence_distance": INFLUENCE,
        "marker_rate": 20.0,
    }
    values.update(extra)
    return [Parameter(k, value=v) for k, v in values.items()]


def _start(ros: Any, **params: Any) -> SimpleNamespace:
    ns = ros.namespace()
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns, parameter_overrides=_params(**params)))
    helper = ros.helper(ns)
    pub = helper.create_publisher(JointState, "joint_states", 10)
    tables = ros.collect(helper, ClearanceTable, f"{ns}/collision_checker/clearance")
    assert ros.wait_for_subscribers(pub), "checker did not subscribe to joint_states"
    assert ros.wait_until(lambda: node._clearance_pub.get_subscription_count() > 0)
    return SimpleNamespace(ns=ns, node=node, helper=helper, pub=pub, tables=tables, stamp=[0],
                           ros_wait=ros.wait_until)


@pytest.fixture()
def setup(ros: Any) -> Iterator[SimpleNamespace]:
    s = _start(ros)
    yield s
    ros.remove_node(s.node)
    ros.remove_node(s.helper)


def _joint_state(s: SimpleNamespace, names: Sequence[str], positions: Sequence[float]) -> Any:
    s.stamp[0] += 1
    msg = JointState()
    msg.header.stamp.sec = 1000
    msg.header.stamp.nanosec = s.stamp[0]
    msg.name = list(names)
    msg.position = [float(v) for v in positions]
    return msg


def _send(s: SimpleNamespace, q: Sequence[float], names: Sequence[str] = ()) -> int:
    """Publish a joint state; returns its stamp nanosec (unique per message)."""
    names = list(names) or [f"joint{i + 1}" for i in range(7)]
    msg = _joint_state(s, names, q)
    s.pub.publish(msg)
    return int(msg.header.stamp.nanosec)


def _table_for(s: SimpleNamespace, nanosec: int, timeout: float = 10.0) -> Any:
    msg = s.tables.wait_for(lambda m: m.header.stamp.nanosec == nanosec, timeout)
    assert msg is not None, f"no ClearanceTable for joint state #{nanosec}"
    return msg


def _assert_table_matches(msg: Any, core: CollisionChecker, world: WorldModel, q: Any) -> None:
    ref = core.clearance(q, world.objects(), INFLUENCE)
    assert list(msg.joint_names) == ref.joint_names
    assert msg.header.frame_id == "base_link"
    got = {(r.robot_body, r.other_body): k for k, r in enumerate(msg.rows)}
    want = {(a, b): k for k, (a, b) in enumerate(zip(ref.robot_bodies, ref.other_bodies))}
    assert set(got) == set(want)
    n = len(ref.joint_names)
    J = np.asarray(msg.jacobian).reshape(len(msg.rows), n)
    for pair, k in want.items():
        row = msg.rows[got[pair]]
        assert row.distance == pytest.approx(ref.distances[k], abs=1e-9)
        assert row.kind == int(ref.kinds[k])
        wr = [row.witness_robot.x, row.witness_robot.y, row.witness_robot.z]
        wo = [row.witness_other.x, row.witness_other.y, row.witness_other.z]
        nn = [row.normal.x, row.normal.y, row.normal.z]
        np.testing.assert_allclose(wr, ref.witness_robot[k], atol=1e-9)
        np.testing.assert_allclose(wo, ref.witness_other[k], atol=1e-9)
        np.testing.assert_allclose(nn, ref.normals[k], atol=1e-9)
        np.testing.assert_allclose(J[got[pair]], ref.jacobians[k], atol=1e-9)
    assert msg.min_distance == pytest.approx(ref.min_distance, abs=1e-9)
    assert msg.in_collision == bool(len(ref) and ref.min_distance <= 0)


# --------------------------------------------------------------------------- clearance
def test_clearance_matches_core(setup: SimpleNamespace, core: CollisionChecker,
                                world: WorldModel) -> None:
    for q in (Q_HOME, Q_NEAR, Q_HIT):
        stamp = _send(setup, q)
        msg = _table_for(setup, stamp)
        assert msg.header.stamp.sec == 1000
        _assert_table_matches(msg, core, world, q)
    hit = setup.tables.last
    assert hit.in_collision and hit.min_distance < 0
    rows = {(r.robot_body, r.other_body): r for r in hit.rows}
    assert rows[("tool", "table")].kind == ClearanceRow.ENVIRONMENT
    assert rows[("tool", "table")].distance < 0


def test_joint_states_by_name_with_extra_joints(setup: SimpleNamespace, core: CollisionChecker,
                                                world: WorldModel) -> None:
    names = [f"joint{i + 1}" for i in range(7)]
    order = [6, 2, 0, 5, 1, 4, 3]
    shuffled = [names[i] for i in order] + ["gripper_finger", "conveyor"]
    values = [float(Q_NEAR[i]) for i in order] + [0.04, float("nan")]  # NaN on an extra joint
    stamp = _send(setup, values, shuffled)
    _assert_table_matches(_table_for(setup, stamp), core, world, Q_NEAR)


def test_best_effort_joint_state_publisher(setup: SimpleNamespace, core: CollisionChecker,
                                           world: WorldModel) -> None:
    """A driver publishing joint states with the sensor-data profile (best effort) is heard."""
    from rclpy.qos import qos_profile_sensor_data

    pub = setup.helper.create_publisher(JointState, "joint_states", qos_profile_sensor_data)
    try:
        assert setup.ros_wait(lambda: pub.get_subscription_count() > 0)
        msg = _joint_state(setup, [f"joint{i + 1}" for i in range(7)], Q_NEAR)
        got = None
        for _ in range(20):  # best effort: publish until one table answers
            pub.publish(msg)
            got = setup.tables.wait_for(
                lambda m: m.header.stamp.nanosec == msg.header.stamp.nanosec, 0.5)
            if got is not None:
                break
        assert got is not None, "no ClearanceTable for a best-effort joint state"
        _assert_table_matches(got, core, world, Q_NEAR)
    finally:
        setup.helper.destroy_publisher(pub)


def test_malformed_joint_states_publish_nothing(setup: SimpleNamespace) -> None:
    names = [f"joint{i + 1}" for i in range(7)]
    bad = [
        _joint_state(setup, names, [0.0, float("nan"), 0, 0, 0, 0, 0]),  # NaN
        _joint_state(setup, names, [0.0, float("inf"), 0, 0, 0, 0, 0]),  # Inf
        _joint_state(setup, names, [0.0] * 6),  # fewer positions than names
        _joint_state(setup, names[:6], [0.0] * 7),  # more positions than names
        _joint_state(setup, [*names, "joint3"], [0.0] * 8),  # a joint named twice
        # not refused (joints are merged from every publisher) but no table either: the other
        # joints' states have not arrived, or it names none of the model's
        _joint_state(setup, names[:6], [0.0] * 6),  # a missing joint
        _joint_state(setup, ["elbow", "wrist"], [0.1, 0.2]),  # only unknown names
        _joint_state(setup, [], []),  # empty
    ]
    bad_stamps = {m.header.stamp.nanosec for m in bad}
    for msg in bad:
        setup.pub.publish(msg)
    good = _send(setup, Q_HOME)
    _table_for(setup, good)
    assert not [m for m in setup.tables.messages if m.header.stamp.nanosec in bad_stamps]
    assert setup.node.stats["rejected"] == len(bad) - 3
    assert setup.node.stats["errors"] == 0
    # still alive and correct afterwards
    _table_for(setup, _send(setup, Q_NEAR))


# --------------------------------------------------------------------------- service
def _check(ros: Any, s: SimpleNamespace, names: Sequence[str], positions: Sequence[float],
           exhaustive: bool = True, ignore_self: bool = False) -> Any:
    req = CheckCollision.Request()
    req.joint_names = list(names)
    req.positions = [float(v) for v in positions]
    req.exhaustive = exhaustive
    req.ignore_self = ignore_self
    return ros.call(s.helper, CheckCollision, f"{s.ns}/collision_checker/check_collision", req)


def _assert_response_matches(resp: Any, ref: Any) -> None:
    assert resp.success, resp.message
    R, C = ref.separation.shape
    assert list(resp.row_names) == ref.row_names
    assert list(resp.column_names) == ref.column_names
    np.testing.assert_array_equal(np.asarray(resp.separation).reshape(R, C), ref.separation)
    np.testing.assert_array_equal(np.asarray(resp.signed_distance).reshape(R, C), ref.signed)
    np.testing.assert_array_equal(np.asarray(resp.witness).reshape(R, C, 2, 3), ref.witness)
    assert resp.is_self_colliding == ref.is_self_colliding
    assert resp.is_world_colliding == ref.is_world_colliding
    assert list(resp.colliding_pairs) == [f"{a}={b}" for a, b in ref.colliding_pairs]


def test_service_returns_core_matrices(ros: Any, setup: SimpleNamespace,
                                       core: CollisionChecker, world: WorldModel) -> None:
    names = [f"joint{i + 1}" for i in range(7)]
    for q in (Q_HOME, Q_HIT):
        resp = _check(ros, setup, names, q)
        _assert_response_matches(resp, core.check(q, world.objects(), exhaustive=True))
    assert "tool=table" in resp.colliding_pairs and resp.is_world_colliding
    resp = _check(ros, setup, names, Q_HIT, ignore_self=True)
    _assert_response_matches(
        resp, core.check(Q_HIT, world.objects(), exhaustive=True, ignore_self=True))


def test_service_follows_the_conventions_its_srv_documents(
        ros: Any, setup: SimpleNamespace, robot: RobotModel) -> None:
    """CheckCollision.srv (MATLAB checkCollision's layout): rows are every body then the base;
    a skipped pair has +Inf separation and +Inf witness points, a colliding pair NaN (the .srv
    said NaN witnesses for skipped pairs and rows of links with geometry only)."""
    resp = _check(ros, setup, [f"joint{i + 1}" for i in range(7)], Q_HIT)
    assert list(resp.row_names) == [*robot.body_names, robot.base_name]
    rows, cols = list(resp.row_names), list(resp.column_names)
    assert cols[: len(rows)] == rows
    sep = np.asarray(resp.separation).reshape(len(rows), len(cols))
    wit = np.asarray(resp.witness).reshape(len(rows), len(cols), 2, 3)
    skipped = (rows.index("link1"), cols.index(robot.base_name))  # a body and its parent
    assert sep[skipped] == math.inf and np.all(wit[skipped] == math.inf)
    assert np.all(np.isinf(np.diagonal(sep)))
    hit = (rows.index("tool"), cols.index("table"))
    assert math.isnan(sep[hit]) and np.all(np.isnan(wit[hit]))


def test_service_fills_missing_joints_from_joint_state(
        ros: Any, setup: SimpleNamespace, core: CollisionChecker, world: WorldModel) -> None:
    req_without_state = _check(ros, setup, ["joint2"], [1.2])
    assert not req_without_state.success
    assert "joint" in req_without_state.message and "no joint state" in req_without_state.message
    _table_for(setup, _send(setup, Q_HIT))
    resp = _check(ros, setup, ["joint2", "joint4"], [0.0, 0.0])
    q = Q_HIT.copy()
    q[1] = q[3] = 0.0
    _assert_response_matches(resp, core.check(q, world.objects(), exhaustive=True))
    resp = _check(ros, setup, [], [])  # the current state
    _assert_response_matches(resp, core.check(Q_HIT, world.objects(), exhaustive=True))


def test_service_rejects_bad_requests(ros: Any, setup: SimpleNamespace) -> None:
    names = [f"joint{i + 1}" for i in range(7)]
    cases = [
        (names, [0.0] * 6, "same length"),
        ([*names[:6], "elbow"], [0.0] * 7, "unknown joint"),
        (names, [0.0, math.nan, 0, 0, 0, 0, 0], "non-finite"),
        ([], [], "no joint state"),
    ]
    for req_names, positions, text in cases:
        resp = _check(ros, setup, req_names, positions)
        assert not resp.success
        assert text in resp.message, resp.message
    assert _check(ros, setup, names, [0.0] * 7).success  # still serving


# --------------------------------------------------------------------------- world
def _world_msg(oid: str, op: int, xyz: Sequence[float] = (0.0, 0.0, 0.0),
               prim_type: int = SolidPrimitive.BOX, dims: Sequence[float] = (0.1, 0.1, 0.1),
               frame: str = "") -> Any:
    msg = WorldObjectMsg()
    msg.id = oid
    msg.operation = op
    msg.header.frame_id = frame
    msg.primitive.type = prim_type
    msg.primitive.dimensions = [float(v) for v in dims]
    msg.pose = Pose()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in xyz)
    return msg


def test_world_objects_topic(ros: Any, setup: SimpleNamespace) -> None:
    pub = setup.helper.create_publisher(WorldObjectMsg, "collision_checker/world_objects", 10)
    assert ros.wait_for_subscribers(pub)
    node = setup.node
    start = node.world.version
    # ADD a box 0.1 m in front of the arm at shoulder height
    pub.publish(_world_msg("probe", WorldObjectMsg.ADD, (0.2, 0.0, 0.5)))
    assert ros.wait_until(lambda: "probe" in node.world)
    msg = _table_for(setup, _send(setup, Q_HOME))
    assert any(r.other_body == "probe" for r in msg.rows)
    # MOVE it out of the influence distance
    pub.publish(_world_msg("probe", WorldObjectMsg.MOVE, (2.0, 2.0, 0.5)))
    assert ros.wait_until(lambda: node.world.get("probe").pose[0, 3] == 2.0)
    msg = _table_for(setup, _send(setup, Q_HOME))
    assert not any(r.other_body == "probe" for r in msg.rows)
    # invalid updates: a cone, a foreign frame, MOVE of an unknown id, an empty id
    for bad in (
        _world_msg("cone", WorldObjectMsg.ADD, prim_type=SolidPrimitive.CONE, dims=(0.2, 0.1)),
        _world_msg("far", WorldObjectMsg.ADD, frame="camera_link"),
        _world_msg("ghost", WorldObjectMsg.MOVE),
        _world_msg("", WorldObjectMsg.ADD),
        _world_msg("flat", WorldObjectMsg.ADD, dims=(0.1, 0.1)),
    ):
        pub.publish(bad)
    # REMOVE
    pub.publish(_world_msg("probe", WorldObjectMsg.REMOVE))
    assert ros.wait_until(lambda: "probe" not in node.world)
    assert set(node.world.ids()) == {"table", "crate", "post"}
    assert node.world.version == start + 3  # ADD, MOVE, REMOVE; the invalid ones changed nothing
    _table_for(setup, _send(setup, Q_HOME))


# --------------------------------------------------------------------------- markers
def test_markers(ros: Any, setup: SimpleNamespace) -> None:
    markers = ros.collect(setup.helper, MarkerArray, "collision_checker/markers")
    assert ros.wait_until(lambda: setup.node._marker_pub.get_subscription_count() > 0)
    _table_for(setup, _send(setup, Q_NEAR))

    def has_ns(ns: str) -> Any:
        return lambda m: any(k.ns == ns and k.action == Marker.ADD for k in m.markers)

    arr = markers.wait_for(has_ns("tool=table"))
    assert arr is not None, "no witness marker for tool=table"
    by_ns: dict[str, list[Any]] = {}
    for m in arr.markers:
        by_ns.setdefault(m.ns, []).append(m)
        assert m.header.frame_id == "base_link"
    assert {"world/table", "world/crate", "world/post", "robot/tool", "robot/base_link"} <= set(
        by_ns)
    assert by_ns["world/table"][0].type == Marker.CUBE
    assert by_ns["world/post"][0].type == Marker.CYLINDER
    line = next(m for m in by_ns["tool=table"] if m.type == Marker.LINE_LIST)
    assert len(line.points) == 2
    # the tool is 5.5 cm from the table: orange-red
    tool = by_ns["robot/tool"][0]
    assert tool.color.r == pytest.approx(1.0) and tool.color.g < 0.5
    # move away: the pair namespace must be deleted
    _table_for(setup, _send(setup, Q_HOME))
    arr = markers.wait_for(
        lambda m: any(k.ns == "tool=table" and k.action == Marker.DELETE for k in m.markers))
    assert arr is not None, "stale tool=table marker not deleted"
    assert not any(k.ns == "tool=table" and k.action == Marker.ADD for k in arr.markers)
    near_green = tool.color.g
    tool = next(k for k in arr.markers if k.ns == "robot/tool")
    assert tool.color.g > near_green + 0.3  # greener (its closest pair is now link5, 10 cm)
    post = next(k for k in arr.markers if k.ns == "world/post")
    assert (post.color.r, post.color.g) == pytest.approx((0.1, 0.8))  # beyond influence


# --------------------------------------------------------------------------- parameters
def test_parameter_validation_at_run_time(setup: SimpleNamespace, core: CollisionChecker,
                                          world: WorldModel) -> None:
    node = setup.node
    before = node.settings
    for name, value in (
        ("skip_rule", "neighbours"),
        ("skip_pairs", ["link1=nowhere"]),
        ("skip_pairs", ["link1-link3"]),
        ("pair_padding", ["tool=table:lots"]),
        ("influence_distance", -1.0),
        ("influence_distance", "far"),
        ("publish_rate", -5.0),
        ("use_srdf", "yes"),
        ("world_file", "/nonexistent/world.yaml"),
    ):
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful, (name, value)
        assert result.reason
        assert node.settings == before
    # a valid change takes effect on the next table
    assert node.set_parameters([Parameter("influence_distance", value=0.06)])[0].successful
    msg = _table_for(setup, _send(setup, Q_NEAR))
    assert all(r.distance < 0.06 for r in msg.rows)
    assert {(r.robot_body, r.other_body) for r in msg.rows} == {("tool", "table")}
    assert node.set_parameters([Parameter("pair_padding", value=["tool=table:0.1"])])[0].successful
    msg = _table_for(setup, _send(setup, Q_NEAR))
    row = next(r for r in msg.rows if (r.robot_body, r.other_body) == ("tool", "table"))
    ref = core.clearance(Q_NEAR, world.objects(), 1.0)
    k = ref.pair_names().index("tool=table")
    assert row.distance == pytest.approx(ref.distances[k] - 0.1, abs=1e-9)
    assert msg.in_collision


def test_world_file_changes_at_run_time(setup: SimpleNamespace, robot: RobotModel,
                                        tmp_path: Any) -> None:
    """A new world_file replaces the previous file's objects (not objects added otherwise) and
    shows in the next table; an empty one removes them."""
    from robot_collision import Sphere

    node = setup.node
    x, y, z = robot.link_transforms(Q_NEAR)["tool"][:3, 3] + [0.0, 0.0, 0.12]
    ball = tmp_path / "ball.yaml"
    ball.write_text(
        f"objects: [{{id: ball, type: sphere, radius: 0.02, position: [{x}, {y}, {z}]}}]")
    far = np.eye(4)
    far[:3, 3] = [2.0, 0.0, 0.5]
    node.world.add("manual", Sphere(0.05), far)
    assert node.set_parameters([Parameter("world_file", value=str(ball))])[0].successful
    assert node.settings.world_file == str(ball)
    assert node.world.ids() == ["manual", "ball"]  # the demo file's table, crate and post went
    msg = _table_for(setup, _send(setup, Q_NEAR))
    env = {r.other_body for r in msg.rows if r.kind == ClearanceRow.ENVIRONMENT}
    assert "ball" in env and not env & {"table", "crate", "post"}
    assert node.set_parameters([Parameter("world_file", value="")])[0].successful
    assert node.world.ids() == ["manual"]


def test_falls_back_to_message_objects_when_the_rmw_disagrees(
    ros: Any, core: CollisionChecker, world: WorldModel, monkeypatch: Any
) -> None:
    from robot_collision.ros.cdr import ClearanceTableWriter

    monkeypatch.setattr(ClearanceTableWriter, "agrees_with_rmw", lambda *a, **k: False)
    s = _start(ros)
    try:
        msg = _table_for(s, _send(s, Q_NEAR))
        assert s.node._writer is None
        _assert_table_matches(msg, core, world, Q_NEAR)
    finally:
        ros.remove_node(s.node)
        ros.remove_node(s.helper)


def test_invalid_start_parameters_fall_back_to_defaults(ros: Any) -> None:
    s = _start(ros, skip_rule="sideways", influence_distance=-2.0, publish_rate="fast",
               pair_padding=["bad"], world_file="/nonexistent.yaml", skip_pairs=["link1=mars"])
    try:
        st = s.node.settings
        assert st.skip_rule == "parent" and st.influence_distance == 0.3
        assert st.publish_rate == 0.0 and st.pair_padding == () and st.world_file == ""
        assert st.skip_pairs == ()  # unknown link: dropped when the robot loaded
        assert s.node.robot is not None
        assert len(s.node.world) == 0
        _table_for(s, _send(s, Q_HOME))
    finally:
        ros.remove_node(s.node)
        ros.remove_node(s.helper)


def test_publish_rate_limit_coalesces(ros: Any) -> None:
    import time

    s = _start(ros, publish_rate=20.0)
    try:
        t0 = time.monotonic()
        sent = []
        for k in range(50):
            sent.append(_send(s, Q_HOME + 0.001 * k))
            time.sleep(0.004)
        elapsed = time.monotonic() - t0
        _table_for(s, sent[-1], timeout=5.0)  # the newest sample is always published (late)
        assert 2 <= len(s.tables) <= elapsed * 20.0 + 3, (len(s.tables), elapsed)
        assert s.node.stats["coalesced"] > 0
    finally:
        ros.remove_node(s.node)
        ros.remove_node(s.helper)


# --------------------------------------------------------------------------- robot description
def test_robot_description_topic(ros: Any, core: CollisionChecker, world: WorldModel) -> None:
    ns = ros.namespace()
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter("world_file", value=str(WORLD_FILE)),
                             Parameter("influence_distance", value=INFLUENCE)]))
    helper = ros.helper(ns)
    try:
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        desc = helper.create_publisher(String, "robot_description", latched)
        sem = helper.create_publisher(String, "robot_description_semantic", latched)
        assert node.robot is None
        desc.publish(String(data="<robot name='broken'><link name='a'></robot"))
        assert ros.wait_for_subscribers(desc)
        ros.wait_until(lambda: node.robot is not None, timeout=1.0)
        assert node.robot is None  # malformed: logged, still waiting
        desc.publish(String(data=URDF.read_text()))
        assert ros.wait_until(lambda: node.robot is not None)
        assert node.robot.srdf is None
        sem.publish(String(data=SRDF.read_text()))
        assert ros.wait_until(lambda: node.robot is not None and node.robot.srdf is not None)
        s = SimpleNamespace(ns=ns, node=node, helper=helper, stamp=[0],
                            pub=helper.create_publisher(JointState, "joint_states", 10),
                            tables=ros.collect(helper, ClearanceTable,
                                               "collision_checker/clearance"))
        assert ros.wait_for_subscribers(s.pub)
        assert ros.wait_until(lambda: node._clearance_pub.get_subscription_count() > 0)
        _assert_table_matches(_table_for(s, _send(s, Q_NEAR)), core, world, Q_NEAR)
        # a broken update keeps the working model
        desc.publish(String(data="not xml at all"))
        desc.publish(String(data=""))
        _table_for(s, _send(s, Q_HOME))
        assert node.robot is not None and node.robot.name == "rc_arm"
    finally:
        ros.remove_node(node)
        ros.remove_node(helper)


def test_bad_urdf_parameter_keeps_node_alive(ros: Any) -> None:
    ns = ros.namespace()
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter("robot_description", value="<robot name='x'><joint/>")]))
    try:
        assert node.robot is None
        # a bad change is refused with the parser's reason; a good one loads
        res = node.set_parameters([Parameter("robot_description", value="<robot")])[0]
        assert not res.successful and "not well-formed" in res.reason
        res = node.set_parameters([Parameter("robot_description", value=URDF.read_text())])[0]
        assert res.successful, res.reason
        assert node.robot is not None and node.robot.name == "rc_arm"
    finally:
        ros.remove_node(node)


def _box_object(cls: Any, object_id: str, op: Any) -> Any:
    """A CollisionObject (``cls``: the real message or a stand-in) with a 0.1 m box at
    (0.2, 0, 0.5) in base_link, near the home pose's upper arm."""
    obj = cls()
    obj.id = object_id
    obj.operation = op
    obj.header.frame_id = "base_link"
    obj.pose = Pose()
    obj.pose.position.x = 0.2
    obj.pose.position.z = 0.5
    obj.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.1, 0.1])]
    obj.primitive_poses = [Pose()]
    return obj


def _rows_with(s: SimpleNamespace, body: str) -> int:
    return sum(r.other_body == body for r in _table_for(s, _send(s, Q_HOME)).rows)


def test_moveit_world_topics_real_messages(ros: Any) -> None:
    """With moveit_msgs installed (the real-ROS tier), the node takes CollisionObject ADD and
    REMOVE (operation as bytes, as rclpy delivers it) on collision_object and PlanningScene
    diffs and full scenes on planning_scene, over real topics; a bad message changes nothing."""
    moveit = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed")
    s = _start(ros)
    try:
        co_pub = s.helper.create_publisher(moveit.CollisionObject, "collision_object", 10)
        ps_pub = s.helper.create_publisher(moveit.PlanningScene, "planning_scene", 10)
        assert ros.wait_for_subscribers(co_pub) and ros.wait_for_subscribers(ps_pub)
        co = moveit.CollisionObject
        co_pub.publish(_box_object(co, "mv_box", co.ADD))
        assert ros.wait_until(lambda: "mv_box" in s.node.world)
        assert _rows_with(s, "mv_box") > 0
        co_pub.publish(_box_object(co, "mv_box", co.REMOVE))
        assert ros.wait_until(lambda: "mv_box" not in s.node.world)
        assert _rows_with(s, "mv_box") == 0
        # a diff adds one object; a full scene replaces the message objects, keeps the file's
        scene = moveit.PlanningScene(is_diff=True)
        scene.world.collision_objects = [_box_object(co, "scene_box", co.ADD)]
        ps_pub.publish(scene)
        assert ros.wait_until(lambda: "scene_box" in s.node.world)
        assert _rows_with(s, "scene_box") > 0
        full = moveit.PlanningScene(is_diff=False)
        full.world.collision_objects = [_box_object(co, "other_box", co.ADD)]
        ps_pub.publish(full)
        assert ros.wait_until(lambda: "other_box" in s.node.world)
        assert "scene_box" not in s.node.world and "table" in s.node.world
        # bad messages change nothing (a scene with one bad object is rejected as a whole)
        version = s.node.world.version
        bad = _box_object(co, "bad", co.ADD)
        bad.primitive_poses = []  # 1 primitive, 0 poses
        co_pub.publish(bad)
        bad_scene = moveit.PlanningScene(is_diff=True)
        bad_scene.world.collision_objects = [_box_object(co, "ok", co.ADD), bad]
        ps_pub.publish(bad_scene)
        co_pub.publish(_box_object(co, "last", co.ADD))  # arrives after the bad ones
        assert ros.wait_until(lambda: "last" in s.node.world)
        assert "bad" not in s.node.world and "ok" not in s.node.world
        assert s.node.world.version == version + 1
    finally:
        ros.remove_node(s.node)
        ros.remove_node(s.helper)


def test_moveit_world_topics_stand_in(ros: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without moveit_msgs (the venv), a stand-in module provides the types: the node subscribes
    collision_object and planning_scene, and its callbacks apply CollisionObject-like messages
    whose operation is bytes, as in ROS 2 Python."""
    import sys
    import types

    fake = types.ModuleType("moveit_msgs.msg")
    fake.CollisionObject = WorldObjectMsg  # type: ignore[attr-defined]  # any message type
    fake.PlanningScene = WorldObjectMsg  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "moveit_msgs", types.ModuleType("moveit_msgs"))
    monkeypatch.setitem(sys.modules, "moveit_msgs.msg", fake)
    s = _start(ros)
    try:
        subs = {sub.topic_name: sub for sub in s.node._moveit_subs}
        assert set(subs) == {f"{s.ns}/collision_object", f"{s.ns}/planning_scene"}
        on_object = subs[f"{s.ns}/collision_object"].callback
        on_scene = subs[f"{s.ns}/planning_scene"].callback

        def stand_in() -> SimpleNamespace:
            return SimpleNamespace(ADD=b"\x00", REMOVE=b"\x01", APPEND=b"\x02", MOVE=b"\x03",
                                   header=SimpleNamespace(frame_id=""), meshes=[], mesh_poses=[],
                                   planes=[], plane_poses=[])

        obj = _box_object(stand_in, "mv_box", b"\x00")
        on_object(obj)
        assert "mv_box" in s.node.world
        assert _rows_with(s, "mv_box") > 0
        obj.operation = b"\x01"
        on_object(obj)
        assert "mv_box" not in s.node.world
        on_object(SimpleNamespace(id="bad", operation=b"\x00"))  # no geometry: logged
        assert "bad" not in s.node.world
        on_scene(SimpleNamespace(is_diff=True, world=SimpleNamespace(
            collision_objects=[_box_object(stand_in, "scene_box", b"\x00")])))
        assert "scene_box" in s.node.world
    finally:
        ros.remove_node(s.node)
        ros.remove_node(s.helper)


def test_callbacks_cut_off_by_shutdown_log_no_error() -> None:
    """Ctrl-C on ``ros2 launch`` shuts the context down under a running callback, which then
    fails on destroyed handles (``RCLError: publisher's context is invalid``): that is the
    node stopping, not a fault, so nothing is logged as an error or counted as one."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = CollisionCheckerNode(context=ctx, namespace="/cut_off_by_shutdown",
                                parameter_overrides=_params(publish_rate=0.0))
    try:
        assert node._pipeline is not None
        logged: list[tuple[str, str]] = []
        logger = SimpleNamespace(**{lvl: (lambda text, lvl=lvl, **_: logged.append((lvl, text)))
                                    for lvl in ("debug", "info", "warning", "warn", "error")})
        node.get_logger = lambda: logger  # type: ignore[method-assign]
        msg = JointState(name=list(node._pipeline.robot.joint_names), position=[0.0] * 7)
        msg.header.stamp = node.get_clock().now().to_msg()
        rclpy.shutdown(context=ctx)
        node._on_joint_state(msg)
        node._pending = (node._pipeline, np.zeros(7), msg.header.stamp)
        node._on_rate_timer()
        node._on_marker_timer()
        assert [t for lvl, t in logged if lvl == "error"] == []
        assert node.stats["errors"] == 0
    finally:
        try:
            node.destroy_node()
        finally:
            if ctx.ok():
                rclpy.shutdown(context=ctx)
