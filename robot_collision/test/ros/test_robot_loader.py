"""RobotLoader on a real node and topic: a running node keeps its model when a bad description
(NaN limit, entity hidden by UTF-7, over a cap) arrives on robot_description, and takes the next
good one; load notes do not stop a sloppy robot from loading."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest

from robot_collision import RobotModel, default_robot_paths
from robot_collision.load_limits import LoadLimits
from robot_collision.ros.robot_loader import RobotLoader, build_robot_model

pytestmark = pytest.mark.ros

URDF = default_robot_paths()[0].read_text(encoding="utf-8")
NAN_URDF = URDF.replace('velocity="2.175"', 'velocity="nan"', 1)
SLOPPY_URDF = URDF.replace('velocity="2.175"', 'velocity="0"', 1)


def _utf7_entity_urdf() -> str:
    """The issue's attack: the DOCTYPE hidden from a text search by a UTF-7 declaration, with
    an entity that renames the robot."""
    hidden = base64.b64encode('<!DOCTYPE robot [<!ENTITY n "evil">]>'.encode("utf-16-be"))
    return (
        '<?xml version="1.0" encoding="UTF-7"?>+' + hidden.decode().rstrip("=") + "-"
        + URDF.split("?>", 1)[1].replace('<robot name="rc_arm"', '<robot name="&n;"', 1)
    )


def test_build_robot_model_refuses_bad_descriptions() -> None:
    from robot_collision.errors import RobotCollisionError

    assert '<robot name="rc_arm"' in URDF
    for bad in (NAN_URDF, _utf7_entity_urdf()):
        with pytest.raises(RobotCollisionError) as info:
            build_robot_model(bad)
        assert "evil" not in str(info.value)
    # as bytes (a file), the declared UTF-7 is decoded and the DOCTYPE found in the parsed tree
    doc = _utf7_entity_urdf()
    head = doc[: doc.index("-\n") + 1]  # the declaration and the hidden DOCTYPE
    with pytest.raises(RobotCollisionError, match="DOCTYPE"):
        RobotModel.from_urdf((head + '<robot name="&n;"><link name="a"/></robot>').encode())
    with pytest.raises(RobotCollisionError, match="max_urdf_bytes"):
        build_robot_model(URDF, limits=LoadLimits(max_urdf_bytes=100))
    model, srdf_error = build_robot_model(SLOPPY_URDF)
    assert srdf_error is None and model.velocity_limits[0] == 1.0
    assert len(model.load_report.notes) == 1


def test_running_node_keeps_its_model_on_bad_descriptions(ros: Any) -> None:
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    ns = ros.namespace()
    node = ros.helper(ns)
    models: list[RobotModel] = []
    seen = threading.Event()

    def on_model(model: RobotModel, source: str) -> None:
        models.append(model)
        seen.set()

    loader = RobotLoader(node, on_model, limits=LoadLimits(max_urdf_bytes=len(URDF) + 100))
    loader.start()
    pub_node = ros.helper(ns)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = pub_node.create_publisher(String, "robot_description", latched)
    try:
        assert ros.wait_for_subscribers(pub)
        pub.publish(String(data=URDF))
        assert ros.wait_until(lambda: len(models) == 1)
        first = loader.model
        assert first is not None and first.name == "rc_arm"
        oversized = URDF.replace("</robot>", "<!--" + "x" * 200 + "--></robot>")
        for bad in (NAN_URDF, _utf7_entity_urdf(), oversized):
            pub.publish(String(data=bad))
            ros.wait_until(lambda: len(models) > 1, timeout=1.0)
            assert loader.model is first and len(models) == 1
        pub.publish(String(data=SLOPPY_URDF))  # loads, with a logged note
        assert ros.wait_until(lambda: len(models) == 2)
        assert loader.model is models[1] and loader.model.velocity_limits[0] == 1.0
    finally:
        ros.remove_node(pub_node)
        ros.remove_node(node)


def test_description_topics_are_subscribed_only_while_usable(ros: Any) -> None:
    """A robot from the parameters: no subscription to robot_description (a huge description
    there cost every node seconds of DDS reception before being refused); cleared parameters:
    the topic is subscribed again and its description loads."""
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    urdf_path, srdf_path = default_robot_paths()
    ns = ros.namespace()
    node = ros.add_node(__import__("rclpy").create_node(
        "loader_host", context=ros.context, namespace=ns, parameter_overrides=[
            Parameter("urdf_path", value=str(urdf_path)),
            Parameter("srdf_path", value=str(srdf_path))]))
    models: list[RobotModel] = []
    loader = RobotLoader(node, lambda model, source: models.append(model))
    loader.start()
    pub_node = ros.helper(ns)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    urdf_pub = pub_node.create_publisher(String, "robot_description", latched)
    srdf_pub = pub_node.create_publisher(String, "robot_description_semantic", latched)
    try:
        assert len(models) == 1
        assert not ros.wait_until(lambda: urdf_pub.get_subscription_count() > 0, timeout=1.0)
        assert srdf_pub.get_subscription_count() == 0
        urdf_pub.publish(String(data=URDF.replace('name="rc_arm"', 'name="from_topic"', 1)))
        node.set_parameters([Parameter("urdf_path", value=""), Parameter("srdf_path", value="")])
        assert ros.wait_until(lambda: urdf_pub.get_subscription_count() > 0
                              and srdf_pub.get_subscription_count() > 0)
        assert ros.wait_until(lambda: loader.model is not None
                              and loader.model.name == "from_topic")
    finally:
        ros.remove_node(pub_node)
        ros.remove_node(node)


def test_load_limits_parameter_caps_the_robot_and_the_world(ros: Any) -> None:
    """The node parameter load_limits ('name=value') reaches the loader and the world model:
    a URDF over the lowered max_urdf_bytes is refused like an oversized file."""
    import rclpy
    from rclpy.parameter import Parameter

    from robot_collision.ros.world import WorldModel

    urdf_path, _ = default_robot_paths()
    models: list[RobotModel] = []
    for entries, loads in ((["max_urdf_bytes=100"], False), ([], True)):
        node = ros.add_node(rclpy.create_node(
            "loader_limits", namespace=ros.namespace(), context=ros.context,
            parameter_overrides=[Parameter("urdf_path", value=str(urdf_path)),
                                 Parameter("load_limits", value=entries or [""])]))
        loader = RobotLoader(node, lambda m, s: models.append(m))
        world = WorldModel(limits=loader.limits)
        assert loader.limits is not None and world.limits is loader.limits
        if entries:
            assert loader.limits.max_urdf_bytes == 100
        loader.start()
        assert (loader.model is not None) == loads
        ros.remove_node(node)
