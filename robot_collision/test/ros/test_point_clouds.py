"""Point clouds in the ROS layer: PointCloud2 conversion, the per-topic cloud tracker, and the
mock_camera feeding the collision_checker and velocity_filter nodes over real topics.

Oracles: messages built byte by byte with numpy (any layout the format allows); the tracker's
clouds against the core (transform by hand, ``robot_filter``); the nodes' tables against a
core ``CollisionChecker`` given the same sensed cloud.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robot_collision import RobotModel, default_robot_paths
from robot_collision.geometry.transforms import pose_from_position_quat

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState, PointCloud2, PointField  # noqa: E402

from robot_collision.ros.checker_node import CollisionCheckerNode  # noqa: E402
from robot_collision.ros.filter_node import VelocityFilterNode  # noqa: E402
from robot_collision.ros.mock_camera import MockCameraNode  # noqa: E402
from robot_collision.ros.point_clouds import (  # noqa: E402
    CloudError,
    CloudSettings,
    SensedClouds,
    pointcloud2_to_points,
    pointcloud2_to_valid_grid,
    points_to_pointcloud2,
    validate_cloud_parameter,
)
from robot_collision_interfaces.msg import ClearanceTable, FilterStatus  # noqa: E402

URDF, SRDF = default_robot_paths()
CAMERA = (1.4, 0.0, 0.8, -0.5979, -0.5979, 0.37751, 0.37751)


def _msg(P: np.ndarray, dtype: str = "<f4", step_pad: int = 4, row_pad: int = 8,
         height: int = 1, dense: bool = True, frame: str = "base_link") -> PointCloud2:
    """An organised cloud with padding in every point and every row."""
    big = dtype.startswith(">")
    size = int(dtype[-1])
    step = 3 * size + step_pad
    width = len(P) // height
    row = width * step + row_pad
    data = bytearray(row * height)
    for k, p in enumerate(P):
        r, c = divmod(k, width)
        off = r * row + c * step + step_pad  # x, y, z after the padding
        data[off: off + 3 * size] = np.asarray(p, dtype=dtype).tobytes()
    msg = PointCloud2()
    msg.header.frame_id = frame
    msg.height, msg.width = height, width
    dt = PointField.FLOAT32 if size == 4 else PointField.FLOAT64
    msg.fields = [PointField(name=a, offset=step_pad + i * size, datatype=dt, count=1)
                  for i, a in enumerate("xyz")]
    msg.is_bigendian = big
    msg.point_step, msg.row_step = step, row
    msg.is_dense = dense
    msg.data = bytes(data)
    return msg


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f8", ">f8"])
def test_pointcloud2_layouts(dtype: str) -> None:
    P = np.random.default_rng(0).uniform(-2, 2, (12, 3)).astype(dtype[1:]).astype(float)
    got = pointcloud2_to_points(_msg(P, dtype, height=3))
    np.testing.assert_array_equal(got, P)
    back = pointcloud2_to_points(points_to_pointcloud2(P, "f"))
    np.testing.assert_allclose(back, P, rtol=1e-6)


@pytest.mark.parametrize("dtype,step_pad", [("<f4", 4), ("<f4", 0), ("<f4", 6), (">f4", 4),
                                            ("<f8", 4)])
@pytest.mark.parametrize("height,width,max_pixels", [(1, 40, 0), (6, 7, 0), (6, 7, 12),
                                                     (9, 13, 20), (10, 10, 1)])
def test_pointcloud2_to_grid_decimates_every_layout(dtype: str, step_pad: int, height: int,
                                                    width: int, max_pixels: int) -> None:
    """Against the points the message was built from (``_msg``, padding in every point and
    row): every k-th row and column, NaN pixels kept as NaN, whichever path reads the layout
    (float32 little-endian 4-aligned: the compiled gather; the others: numpy); the valid-pixel
    mask and count against numpy's ``isfinite`` of those points."""
    from robot_collision.ros.point_clouds import pointcloud2_to_grid, pointcloud2_to_valid_grid

    rng = np.random.default_rng(height * 100 + width)
    P = rng.uniform(-3, 3, (height * width, 3)).astype(dtype[1:]).astype(float)
    P[rng.random(len(P)) < 0.2] = np.nan
    P[rng.random(len(P)) < 0.1, rng.integers(0, 3)] = np.inf  # one coordinate only
    msg = _msg(P, dtype, step_pad=step_pad, height=height, dense=False)
    G, k, valid, count = pointcloud2_to_valid_grid(msg, max_pixels=max_pixels)
    np.testing.assert_array_equal(pointcloud2_to_grid(msg, max_pixels=max_pixels)[0], G)
    want = P.reshape(height, width, 3)[::k, ::k]
    if height > 1 and max_pixels:
        assert want.shape[0] * want.shape[1] <= max_pixels and (k == 1 or (
            -(-height // (k - 1))) * (-(-width // (k - 1))) > max_pixels)
    else:
        assert k == 1
    np.testing.assert_array_equal(G, want.reshape(G.shape))
    finite = np.isfinite(want).all(axis=-1).reshape(G.shape[:2])
    np.testing.assert_array_equal(valid, finite)
    assert count == int(finite.sum())


def test_pointcloud2_rejections() -> None:
    P = np.zeros((4, 3))
    P[1, 2] = np.nan
    assert len(pointcloud2_to_points(_msg(P, dense=False))) == 3  # organised gaps dropped
    with pytest.raises(CloudError, match="is_dense"):
        pointcloud2_to_points(_msg(P, dense=True))
    with pytest.raises(CloudError, match="is_dense but 1 of its points"):  # the nodes' path
        pointcloud2_to_valid_grid(_msg(P, dense=True))
    G, _, valid, count = pointcloud2_to_valid_grid(_msg(P, dense=False))
    assert count == 3 and valid.tolist() == [[True, False, True, True]] and G.shape == (1, 4, 3)
    with pytest.raises(CloudError, match="cloud_max_points"):
        pointcloud2_to_points(_msg(np.zeros((4, 3))), max_points=3)
    m = _msg(np.zeros((4, 3)))
    m.fields = m.fields[:2]
    with pytest.raises(CloudError, match="no z field"):
        pointcloud2_to_points(m)
    m = _msg(np.zeros((4, 3)))
    m.fields[0].datatype = PointField.UINT16
    with pytest.raises(CloudError, match="FLOAT32"):
        pointcloud2_to_points(m)
    m = _msg(np.zeros((4, 3)))
    m.fields[2].offset = m.point_step
    with pytest.raises(CloudError, match="does not fit"):
        pointcloud2_to_points(m)
    m = _msg(np.zeros((4, 3)))
    m.data = m.data[:-20]
    with pytest.raises(CloudError, match="fewer than"):
        pointcloud2_to_points(m)
    m = _msg(np.zeros((4, 3)))
    m.width = 1_000_000
    m.height = 1_000_000  # 10^12 points declared: rejected before any data is touched
    with pytest.raises(CloudError, match="more than"):
        pointcloud2_to_points(m)
    with pytest.raises(Exception, match="camera_poses entry"):
        validate_cloud_parameter("camera_poses", ["points=1 2 3"])


def test_tracker_transforms_self_filters_and_expires() -> None:
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    settings = CloudSettings(point_cloud_topics=("cam",),
                             camera_poses=(("cam", CAMERA),), cloud_resolution=0.0,
                             cloud_padding=0.02, cloud_max_age=1.0, cloud_min_points=1,
                             cloud_occlusion_depth=0.0)
    clouds = SensedClouds(settings)
    clouds.set_robot(robot, {"base_link"})
    T = pose_from_position_quat(CAMERA[:3], CAMERA[3:])
    q0 = robot.home_configuration()
    q1 = robot.named_configuration("ready")
    link = robot.link_poses(q1)[robot.link_index("link6")][:3, 3]  # a point on the arm at q1
    obstacle = np.array([[0.5, 0.4, 0.2], [0.55, 0.4, 0.2]])
    world_pts = np.vstack([obstacle, link])
    cam_pts = (world_pts - T[:3, 3]) @ T[:3, :3]  # into the camera frame
    with pytest.raises(CloudError, match="joint state"):
        clouds.on_message("cam", points_to_pointcloud2(cam_pts, "camera"), 10.0)
    clouds.joints.add(9.0, q0)
    clouds.joints.add(10.02, q1)  # nearest to the stamp 10.0: the arm covers `link`
    clouds.on_message("cam", points_to_pointcloud2(cam_pts, "camera"), 10.0)
    (obj,) = clouds.objects(10.5)
    assert obj.name == "cam#r0.0mm" and obj.shape.radius == 0.0  # unorganised, radius 0
    np.testing.assert_allclose(np.sort(obj.shape.points, axis=0), np.sort(obstacle, axis=0),
                               atol=1e-6)  # float32 on the wire
    assert clouds.missing(10.5) == [] and clouds.objects(11.5) == []
    assert clouds.missing(11.5) == ["cam"]
    with pytest.raises(CloudError, match="camera_poses"):  # a frame without any transform
        SensedClouds(CloudSettings(point_cloud_topics=("x",)))._pose("x", "camera", 0.0)
    # a newer cloud replaces the topic's previous one
    clouds.on_message("cam", points_to_pointcloud2(cam_pts[:1], "camera"), 10.6)
    assert len(clouds.objects(10.7)[0].shape.points) == 1


# ----------------------------------------------------------------------------- nodes
def _world_file(tmp_path: Path) -> Path:
    """A box only the camera knows, in front of the arm."""
    path = tmp_path / "camera_world.yaml"
    path.write_text(
        "objects:\n"
        "  - id: hidden_crate\n"
        "    type: box\n"
        "    dimensions: [0.2, 0.3, 0.3]\n"
        "    position: [0.6, 0.0, 0.15]\n")
    return path


def _camera(ros: Any, ns: str, tmp_path: Path, **extra: Any) -> Any:
    params = {"world_file": str(_world_file(tmp_path)), "rate": 20.0, "width": 64,
              "height": 48, "camera_pose": list(CAMERA), **extra}
    return ros.add_node(MockCameraNode(context=ros.context, namespace=ns, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()]))


def _cloud_params(ns: str) -> dict[str, Any]:
    return {"point_cloud_topics": [f"{ns}/mock_camera/points"],
            "camera_poses": [f"{ns}/mock_camera/points=" + " ".join(map(str, CAMERA))],
            "cloud_max_age": 2.0}


def _joint_states(ros: Any, ns: str, q: np.ndarray) -> SimpleNamespace:
    helper = ros.helper(ns)
    pub = helper.create_publisher(JointState, "joint_states", 10)
    names = [f"joint{i}" for i in range(1, 8)]

    def send() -> None:
        msg = JointState()
        msg.header.stamp = helper.get_clock().now().to_msg()
        msg.name = names
        msg.position = [float(v) for v in q]
        pub.publish(msg)

    timer = helper.create_timer(0.02, send)
    return SimpleNamespace(helper=helper, pub=pub, timer=timer)


def test_camera_cloud_reaches_the_checker(ros: Any, tmp_path: Path) -> None:
    """The checker knows the crate only from the camera: a clearance row names the cloud's
    topic, at the distance a core checker computes for the same sensed cloud."""
    ns = ros.namespace()
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    q = robot.named_configuration("ready")
    _camera(ros, ns, tmp_path)
    params = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "influence_distance": 0.5,
              **_cloud_params(ns)}
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    js = _joint_states(ros, ns, q)
    topic = f"{ns}/mock_camera/points"
    tables = ros.collect(js.helper, ClearanceTable, f"{ns}/collision_checker/clearance")
    msg = tables.wait_for(lambda m: any(r.other_body.startswith(topic + "#r") for r in m.rows),
                          timeout=30.0)
    assert msg is not None, node.clouds.last_error
    world = node.world_objects()
    clouds = [o for o in world if o.name.startswith(topic + "#r")]  # one per radius class
    assert sum(c.shape.num_points for c in clouds) > 100
    from robot_collision import CollisionChecker

    ref = CollisionChecker(robot).clearance(q, clouds, 0.5)
    for row in msg.rows:
        if row.other_body.startswith(topic + "#r"):
            k = [i for i, (b, o) in enumerate(zip(ref.robot_bodies, ref.other_bodies))
                 if b == row.robot_body and o == row.other_body]
            assert k and abs(ref.distances[k[0]] - row.distance) < 1e-6
    # the balls are where the crate is: within the box grown by the occlusion depth behind
    # its seen faces (0.1 m) and the ball's radius
    box_lo, box_hi = np.array([0.5, -0.15, 0.0]), np.array([0.7, 0.15, 0.3])
    for c in clouds:
        P = c.shape.points
        grow = 0.1 + c.shape.radius + 1e-6
        assert np.all(np.abs(P - 0.5 * (box_lo + box_hi)) < 0.5 * (box_hi - box_lo) + grow)
    js.helper.destroy_timer(js.timer)


def test_filter_stops_without_a_current_cloud(ros: Any, tmp_path: Path) -> None:
    """cloud_timeout_action 'stop': zeros and a 'stale cloud' fault until the camera runs;
    'ignore' filters without it."""
    ns = ros.namespace()
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    params = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "rate": 50.0,
              "command_timeout": 0.0, **_cloud_params(ns)}
    node = ros.add_node(VelocityFilterNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    js = _joint_states(ros, ns, robot.named_configuration("ready"))
    status = ros.collect(js.helper, FilterStatus, f"{ns}/velocity_filter/status")
    assert status.wait_for(lambda m: "stale cloud" in m.fault, timeout=30.0) is not None
    _camera(ros, ns, tmp_path)
    assert ros.wait_until(lambda: not node.clouds.missing(
        node.get_clock().now().nanoseconds * 1e-9), timeout=30.0), node.clouds.last_error
    assert status.wait_for(lambda m: "stale cloud" not in m.fault, timeout=30.0) is not None
    node.set_parameters([Parameter("cloud_timeout_action", value="ignore")])
    assert node.settings.cloud_timeout_action == "ignore"
    js.helper.destroy_timer(js.timer)


def test_oversized_clouds_are_refused_before_deserializing(ros: Any, tmp_path: Path) -> None:
    """Clouds take the nodes' message caps like every other input: with max_message_bytes below
    a camera cloud's size the checker counts each cloud as rejected and never holds one."""
    ns = ros.namespace()
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    _camera(ros, ns, tmp_path)
    params = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "max_message_bytes": 1000,
              **_cloud_params(ns)}
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    js = _joint_states(ros, ns, robot.named_configuration("ready"))
    assert ros.wait_until(lambda: node.clouds.stats["rejected"] >= 2, 30.0), node.clouds.stats
    assert node.clouds.stats["accepted"] == 0 and node.clouds.stats["received"] == 0
    assert not node.clouds.objects(node.get_clock().now().nanoseconds * 1e-9)
    js.helper.destroy_timer(js.timer)


# ----------------------------------------------------------------------------- issue 19
def _grid_msg(G: np.ndarray, frame: str = "camera") -> PointCloud2:
    return points_to_pointcloud2(G, frame)


def test_blinded_and_future_stamped_clouds_are_a_faulty_sensor() -> None:
    """An all-NaN or empty cloud after a good one, and a cloud stamped ahead of the clock, are
    refused and the topic counts as without a current cloud at once (the filter's
    cloud_timeout_action applies), while the last good cloud stays in objects() until it
    expires; a good cloud clears the fault."""
    from robot_collision.tools.depth_camera import DepthCamera, render_grid

    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    settings = CloudSettings(point_cloud_topics=("cam",), camera_poses=(("cam", CAMERA),),
                             cloud_max_age=1.0)
    clouds = SensedClouds(settings)
    clouds.set_robot(robot, {"base_link"})
    clouds.joints.add(0.0, robot.home_configuration())
    from robot_collision import Box, WorldObject, make_pose

    box = WorldObject(Box(0.2, 0.3, 0.3), make_pose(np.eye(3), [0.6, 0.0, 0.15]), "crate")
    T = pose_from_position_quat(CAMERA[:3], CAMERA[3:])
    G = render_grid(DepthCamera(64, 48), T, [box])
    assert "radius classes" in clouds.on_message("cam", _grid_msg(G), 10.0, 10.0)
    assert clouds.missing(10.1) == [] and clouds.objects(10.1)
    for bad in (np.full_like(G, np.nan), np.zeros((0, 3))):
        with pytest.raises(CloudError, match="faulty sensor"):
            clouds.on_message("cam", _grid_msg(bad), 10.2, 10.2)
        assert clouds.missing(10.3) == ["cam"]
        assert "blinded" in clouds.problems(10.3)["cam"]
        assert clouds.objects(10.3)  # what was seen is still avoided (cloud_timeout 'ignore')
        clouds.on_message("cam", _grid_msg(G), 10.4, 10.4)
        assert clouds.missing(10.5) == []
    with pytest.raises(CloudError, match="ahead of the node's clock"):
        clouds.on_message("cam", _grid_msg(G), 20.5, 10.5)  # 10 s in the future
    assert clouds.missing(10.6) == ["cam"]
    # within the tolerance it is accepted, and ages from its stamp
    clouds.on_message("cam", _grid_msg(G), 10.65, 10.6)
    assert clouds.missing(11.6) == [] and clouds.missing(11.7) == ["cam"]
    # every sensed ball set covers the crate's faces seen by the camera, and the occlusion
    # shell: each ball centre is within the box grown by 0.1 m + its radius
    for o in clouds.objects(10.7):
        P = o.shape.points
        assert np.all(np.abs(P - [0.6, 0.0, 0.15]) <= np.array([0.1, 0.15, 0.15]) + 0.1
                      + o.shape.radius + 1e-6)


def test_filter_stops_on_a_blinded_camera(ros: Any, tmp_path: Path) -> None:
    """Over real topics: the filter node gets good clouds from a publisher, then all-NaN ones
    (a covered lens): its status turns to the 'stale cloud' fault naming the blinded sensor
    within a cloud period, although the last good cloud is younger than cloud_max_age."""
    from robot_collision.tools.depth_camera import DepthCamera, render_grid

    ns = ros.namespace()
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    topic = f"{ns}/cam/points"
    params = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "rate": 50.0,
              "command_timeout": 0.0, "point_cloud_topics": [topic],
              "camera_poses": [f"{topic}=" + " ".join(map(str, CAMERA))],
              "cloud_max_age": 5.0}
    ros.add_node(VelocityFilterNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    js = _joint_states(ros, ns, robot.named_configuration("ready"))
    from robot_collision import Box, WorldObject, make_pose

    box = WorldObject(Box(0.2, 0.3, 0.3), make_pose(np.eye(3), [0.6, 0.0, 0.15]), "crate")
    G = render_grid(DepthCamera(64, 48), pose_from_position_quat(CAMERA[:3], CAMERA[3:]), [box])
    pub = js.helper.create_publisher(PointCloud2, topic, 2)
    blind = {"on": False}

    def send() -> None:
        msg = _grid_msg(np.full_like(G, np.nan) if blind["on"] else G)
        msg.header.stamp = js.helper.get_clock().now().to_msg()
        pub.publish(msg)

    timer = js.helper.create_timer(0.1, send)
    status = ros.collect(js.helper, FilterStatus, f"{ns}/velocity_filter/status")
    assert status.wait_for(lambda m: "stale cloud" not in m.fault, timeout=30.0) is not None
    blind["on"] = True
    m = status.wait_for(lambda m: "blinded" in m.fault, timeout=5.0)
    assert m is not None and not m.ok, [x.fault for x in status.messages[-3:]]
    js.helper.destroy_timer(timer)
    js.helper.destroy_timer(js.timer)


def test_checker_scene_prepared_ahead_is_adopted_not_rebuilt() -> None:
    """The cloud worker's CollisionChecker.prepare: the next call on exactly that world adopts
    the scene built ahead (the filter's tick packs nothing), with the same distances as a
    checker that builds it itself; another world (or order) is built as before."""
    from robot_collision.collision.checker import CollisionChecker
    from robot_collision.geometry.point_cloud import PointCloud
    from robot_collision.geometry.shapes import WorldObject

    robot = RobotModel.from_urdf(URDF, SRDF)
    rng = np.random.default_rng(3)
    world = [WorldObject(PointCloud(rng.uniform(-1, 1, (5000, 3)) + np.array([0.8, 0, 0.5]), 0.01),
                         np.eye(4), f"cloud{k}") for k in range(2)]
    q = np.array([0.0, 0.3, 0.0, 1.2, 0.0, 0.8, 0.0])
    ahead, plain = CollisionChecker(robot), CollisionChecker(robot)
    ahead.pair_distances(q, world[:1])
    ahead.prepare(world)
    built = ahead._prebuilt[-1]
    d = ahead.pair_distances(q, world, exhaustive=True)
    assert ahead._scene is built
    np.testing.assert_array_equal(d.D, plain.pair_distances(q, world, exhaustive=True).D)
    assert ahead.world_names == ["cloud0", "cloud1"]
    d = ahead.pair_distances(q, world[::-1], exhaustive=True)
    assert ahead._scene is not built and ahead.world_names == ["cloud1", "cloud0"]


@pytest.mark.parametrize("dtype", ["<f4", ">f8"])
def test_pointcloud2_view_reads_what_rclpy_deserializes(dtype: str) -> None:
    """The worker reads clouds in place (pointcloud2_view): every attribute the cloud code
    uses equals rclpy's deserialized message, the grids agree; truncated bytes are refused."""
    from rclpy.serialization import serialize_message

    from robot_collision.ros.intake import MessageLimits, MessageRejectedError
    from robot_collision.ros.point_clouds import pointcloud2_to_grid, pointcloud2_view

    rng = np.random.default_rng(1)
    P = rng.normal(size=(12, 3))
    P[5] = np.nan
    msg = _msg(P, dtype, height=3, dense=False, frame="camera_õptical")
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_700_000_123, 456_789
    raw = serialize_message(msg)
    v = pointcloud2_view(raw, MessageLimits())
    assert (v.header.frame_id, v.header.stamp.sec, v.header.stamp.nanosec) == (
        msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec)
    for a in ("height", "width", "is_bigendian", "point_step", "row_step", "is_dense"):
        assert getattr(v, a) == getattr(msg, a), a
    assert [(f.name, f.offset, f.datatype, f.count) for f in v.fields] == [
        (f.name, f.offset, f.datatype, f.count) for f in msg.fields]
    assert bytes(v.data) == bytes(msg.data)
    np.testing.assert_array_equal(pointcloud2_to_grid(v)[0], pointcloud2_to_grid(msg)[0])
    with pytest.raises(MessageRejectedError):
        pointcloud2_view(raw[:-7], MessageLimits())


# ----------------------------------------------------------------------------- large clouds
def test_serialized_taker_takes_the_newest_cloud(ros: Any) -> None:
    """The cloud worker's reader (rcl's take through ctypes, into one reused buffer): the bytes
    are the newest of the clouds waiting, the older ones are counted and dropped, nothing
    waiting gives (None, 0); rclpy's take (the fallback) reads the same."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message

    from robot_collision.ros.intake import OnDemandSubscription
    from robot_collision.ros.point_clouds import SerializedTaker, _CloudReader

    ns = ros.namespace()
    helper = ros.helper(ns)
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    pub = helper.create_publisher(PointCloud2, "points", qos)
    assert SerializedTaker.available()
    reader = OnDemandSubscription(helper, PointCloud2, f"{ns}/points", qos)
    taker = SerializedTaker(reader.subscription)
    fallback = _CloudReader(helper, f"{ns}/points", qos, rcl_take=False)
    assert ros.wait_until(lambda: pub.get_subscription_count() == 2, 10.0)
    assert taker.take() == (None, 0) and fallback.take() == (None, 0)
    rng = np.random.default_rng(5)
    msgs = [points_to_pointcloud2(rng.normal(size=(1000 * (k + 1), 3)), "camera")
            for k in range(3)]
    seen: list[Any] = []
    helper.create_subscription(PointCloud2, "points", seen.append, qos)
    assert ros.wait_until(lambda: pub.get_subscription_count() == 3, 10.0)
    for m in msgs:
        pub.publish(m)
    assert ros.wait_until(lambda: len(seen) == 3, 10.0)
    time.sleep(0.2)  # (the readers of one participant get the samples together)
    raw, n = taker.take()
    # (compared deserialized: CDR padding bytes are not defined)
    assert n == 3 and deserialize_message(bytes(raw), PointCloud2) == msgs[-1]
    assert taker.take() == (None, 0)
    old, k = fallback.take()
    assert k == 3 and deserialize_message(old, PointCloud2) == msgs[-1]
    taker.close()
    assert taker.take() == (None, 0)


def test_cloud_reader_falls_back_to_rclpy(ros: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An rclpy whose subscription handle has no ``pointer`` (or an rcl error): the reader
    goes on with rclpy's take and still returns the newest cloud."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message

    from robot_collision.ros.point_clouds import SerializedTaker, _CloudReader

    def broken(self: Any) -> Any:
        raise AttributeError("'Subscription' object has no attribute 'pointer'")

    monkeypatch.setattr(SerializedTaker, "take", broken)
    ns = ros.namespace()
    helper = ros.helper(ns)
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    pub = helper.create_publisher(PointCloud2, "points", qos)
    reader = _CloudReader(helper, f"{ns}/points", qos)
    assert reader.through_rcl
    assert ros.wait_until(lambda: pub.get_subscription_count() == 1, 10.0)
    msg = points_to_pointcloud2(np.random.default_rng(2).normal(size=(500, 3)), "camera")
    pub.publish(msg)
    got: list[Any] = []
    assert ros.wait_until(lambda: got.append(reader.take()) or got[-1][1] > 0, 10.0)
    assert not reader.through_rcl
    assert deserialize_message(bytes(got[-1][0]), PointCloud2) == msg


def test_clouds_from_best_effort_and_reliable_publishers(ros: Any, tmp_path: Path) -> None:
    """A cloud topic's reader follows its publishers: best-effort ones are read (a reliable
    reader would not match them), and once every publisher is reliable the reader is reliable
    (large clouds then arrive whole); clouds are used either way."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    ns = ros.namespace()
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    topic = f"{ns}/points"
    params = {"urdf_path": str(URDF), "srdf_path": str(SRDF), "point_cloud_topics": [topic],
              "camera_poses": [f"{topic}=" + " ".join(map(str, CAMERA))],
              "cloud_max_age": 2.0}
    node = ros.add_node(CollisionCheckerNode(
        context=ros.context, namespace=ns,
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
    js = _joint_states(ros, ns, robot.named_configuration("ready"))
    u = np.linspace(-0.3, 0.3, 40)
    U, V = np.meshgrid(u, u)
    wall = np.stack([U, V, np.full(U.shape, 1.2)], -1)

    helper = ros.helper(ns)

    def publish_with(reliability: Any) -> tuple[Any, Any]:
        pub = helper.create_publisher(PointCloud2, "points",
                                      QoSProfile(depth=1, reliability=reliability))

        def send() -> None:
            pub.publish(points_to_pointcloud2(wall, "camera", helper.get_clock().now().to_msg()))

        return pub, helper.create_timer(0.05, send)

    subs = node._cloud_subs
    pub, timer = publish_with(ReliabilityPolicy.BEST_EFFORT)
    assert ros.wait_until(lambda: subs.reliability(topic) == "best_effort"
                          and node.clouds.stats["accepted"] >= 3, 30.0), node.clouds.last_error
    helper.destroy_timer(timer)
    helper.destroy_publisher(pub)
    pub, timer = publish_with(ReliabilityPolicy.RELIABLE)
    assert ros.wait_until(lambda: subs.reliability(topic) == "reliable", 30.0)
    n = node.clouds.stats["accepted"]
    assert ros.wait_until(lambda: node.clouds.stats["accepted"] >= n + 3, 30.0), \
        node.clouds.last_error
    helper.destroy_timer(timer)
    js.helper.destroy_timer(js.timer)
