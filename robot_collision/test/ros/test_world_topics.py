"""One world, one set of topics, every node (issue 19, items 6 and 8).

The checker, the filter and the planner in one namespace over real topics: an object published
on the checker's ``~/world_objects`` reaches the filter too; a burst of 1000 ADDs ends with the
same world in every node (oracle: the set of ids published, and each node's content digest on
``~/world_version`` equal to a core ``WorldModel`` given the same updates); an absurdly large
box is refused by all of them.
"""

from __future__ import annotations

from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import Pose  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from shape_msgs.msg import SolidPrimitive  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from robot_collision import Box, default_robot_paths  # noqa: E402
from robot_collision.geometry.transforms import pose_from_position_quat  # noqa: E402
from robot_collision.load_limits import LoadLimits  # noqa: E402
from robot_collision.ros.checker_node import CollisionCheckerNode  # noqa: E402
from robot_collision.ros.filter_node import VelocityFilterNode  # noqa: E402
from robot_collision.ros.planner_node import PlannerNode  # noqa: E402
from robot_collision.ros.world import WorldModel  # noqa: E402
from robot_collision_interfaces.msg import WorldObject as WorldObjectMsg  # noqa: E402

URDF, SRDF = default_robot_paths()
N_BURST = 1000


def _msg(oid: str, x: float, size: float = 0.05) -> WorldObjectMsg:
    msg = WorldObjectMsg()
    msg.id = oid
    msg.operation = WorldObjectMsg.ADD
    msg.primitive.type = SolidPrimitive.BOX
    msg.primitive.dimensions = [size, size, size]
    msg.pose = Pose()
    msg.pose.position.x = x
    msg.pose.position.y = 1.5
    msg.pose.orientation.w = 1.0
    return msg


def test_one_world_every_node(ros: Any) -> None:
    ns = ros.namespace()
    params = [Parameter("urdf_path", value=str(URDF)), Parameter("srdf_path", value=str(SRDF)),
              Parameter("load_limits", value=["max_world_objects=2000"])]
    nodes = {
        "checker": ros.add_node(CollisionCheckerNode(context=ros.context, namespace=ns,
                                                     parameter_overrides=params)),
        "filter": ros.add_node(VelocityFilterNode(context=ros.context, namespace=ns,
                                                  parameter_overrides=params)),
        "planner": ros.add_node(PlannerNode(context=ros.context, namespace=ns,
                                            parameter_overrides=params)),
    }
    helper = ros.helper(ns)
    versions: dict[str, Any] = {
        name: ros.collect(helper, String, f"{ns}/{node.get_name()}/world_version",
                          QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                     durability=rclpy.qos.DurabilityPolicy.TRANSIENT_LOCAL))
        for name, node in nodes.items()}
    pub = helper.create_publisher(
        WorldObjectMsg, "collision_checker/world_objects",
        QoSProfile(depth=N_BURST, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.RELIABLE))
    assert ros.wait_for_subscribers(pub, 3, timeout=30.0)  # every node listens on it

    # item 8: published on the checker's topic, the object reaches the filter (and the planner)
    pub.publish(_msg("probe", 0.5))
    assert ros.wait_until(lambda: all("probe" in n.world for n in nodes.values()), 10.0)

    # item 6: a burst of 1000 ADDs, nothing lost, one world everywhere
    oracle = WorldModel(limits=LoadLimits(max_world_objects=2000))
    oracle.add("probe", Box(0.05, 0.05, 0.05), pose_from_position_quat([0.5, 1.5, 0], [0, 0, 0, 1]))
    for k in range(N_BURST):
        x = -3.0 + 6.0 * k / N_BURST
        pub.publish(_msg(f"o{k}", x))
        oracle.add(f"o{k}", Box(0.05, 0.05, 0.05),
                   pose_from_position_quat([x, 1.5, 0.0], [0, 0, 0, 1]))
    assert ros.wait_until(lambda: all(len(n.world) == N_BURST + 1 for n in nodes.values()),
                          60.0), {k: len(n.world) for k, n in nodes.items()}
    digest = oracle.digest()
    assert {k: n.world.digest() for k, n in nodes.items()} == dict.fromkeys(nodes, digest)
    for name, col in versions.items():
        assert col.wait_for(lambda m: f"digest={digest}" in m.data, timeout=10.0) is not None, (
            name, [m.data for m in col.messages][-2:])

    # an absurd box is refused by every node (the world stays the same)
    pub.publish(_msg("huge", 0.0, size=1e300))
    pub.publish(_msg("after", 0.7))
    assert ros.wait_until(lambda: all("after" in n.world for n in nodes.values()), 10.0)
    assert not any("huge" in n.world for n in nodes.values())
