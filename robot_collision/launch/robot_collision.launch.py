"""Launch the robot_collision nodes on a ROS 2 install (Humble or later).

    ros2 launch robot_collision robot_collision.launch.py
    ros2 launch robot_collision robot_collision.launch.py urdf:=/path/arm.urdf srdf:=/path/arm.srdf
    ros2 launch robot_collision robot_collision.launch.py use_mock_hardware:=true
    ros2 launch robot_collision robot_collision.launch.py use_mock_hardware:=true \
        use_robot_state_publisher:=false    # where robot_state_publisher is not installed
    ros2 launch robot_collision robot_collision.launch.py urdf:=/path/arm.urdf \
        package_dirs:=$HOME/ws/src world_file:=/path/world.yaml \
        point_cloud_topics:=/camera/depth/points

Starts collision_checker, velocity_filter and planner with config/robot_collision.yaml (or
params_file:=...), robot_state_publisher for TF (use_robot_state_publisher:=false to leave it
out), with use_mock_hardware:=true the mock_arm simulated arm and with use_mock_camera:=true the
mock_camera simulated depth camera. The URDF (plain URDF, not
xacro) and SRDF are read here and passed as robot_description / robot_description_semantic.
Without launch_ros (e.g. a venv with ROS from PyPI), `robot_collision_bringup` starts the same
nodes with the same parameter file in one process.
"""

from typing import Any

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

PACKAGE = "robot_collision"


def _read(path: str) -> str:
    if not path:
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def _entries(text: str) -> list[str]:
    """'a,b c' -> ['a', 'b', 'c'] (launch arguments are strings; lists are comma- or
    space-separated)."""
    return [e for e in text.replace(",", " ").split() if e]


def _overrides(context: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(parameters for every node that loads the robot, parameters for the nodes that take the
    world and clouds): only the launch arguments that were given, so that the parameter file's
    values stay in force otherwise."""
    robot: dict[str, Any] = {}
    world: dict[str, Any] = {}
    package_dirs = _entries(LaunchConfiguration("package_dirs").perform(context))
    if package_dirs:
        robot["package_dirs"] = package_dirs
    world_file = LaunchConfiguration("world_file").perform(context).strip()
    if world_file:
        world["world_file"] = "" if world_file == "none" else world_file
    topics = LaunchConfiguration("point_cloud_topics").perform(context).strip()
    if topics:
        world["point_cloud_topics"] = [] if topics == "none" else _entries(topics)
    return robot, world


def _nodes(context: Any, *args: Any, **kwargs: Any) -> list[Any]:
    params_file = LaunchConfiguration("params_file").perform(context)
    robot_overrides, world_overrides = _overrides(context)
    urdf = LaunchConfiguration("urdf").perform(context)
    srdf = LaunchConfiguration("srdf").perform(context)
    robot = {
        "robot_description": _read(urdf),
        "robot_description_semantic": _read(srdf),
        **robot_overrides,
    }
    world = [world_overrides] if world_overrides else []
    use_mock = LaunchConfiguration("use_mock_hardware")
    use_camera = LaunchConfiguration("use_mock_camera")
    use_rsp = LaunchConfiguration("use_robot_state_publisher")
    return [
        Node(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            name="robot_state_publisher",
            output="screen",
            parameters=[{"robot_description": robot["robot_description"]}],
            condition=IfCondition(use_rsp),
        ),
        Node(
            package=PACKAGE,
            executable="mock_arm",
            name="mock_arm",
            output="screen",
            parameters=[params_file, robot],
            condition=IfCondition(use_mock),
        ),
        Node(
            package=PACKAGE,
            executable="mock_camera",
            name="mock_camera",
            output="screen",
            parameters=[params_file],
            condition=IfCondition(use_camera),
        ),
        Node(
            package=PACKAGE,
            executable="collision_checker",
            name="collision_checker",
            output="screen",
            parameters=[params_file, robot, *world],
        ),
        Node(
            package=PACKAGE,
            executable="velocity_filter",
            name="velocity_filter",
            output="screen",
            parameters=[params_file, robot, *world],
        ),
        Node(
            package=PACKAGE,
            executable="planner",
            name="planner",
            output="screen",
            parameters=[params_file, robot, *world],
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf",
            default_value=PathJoinSubstitution(
                [FindPackageShare(PACKAGE), "urdf", "default_arm.urdf"]),
            description="Robot URDF file (plain URDF; read and passed as robot_description).",
        ),
        DeclareLaunchArgument(
            "srdf",
            default_value=PathJoinSubstitution(
                [FindPackageShare(PACKAGE), "urdf", "default_arm.srdf"]),
            description="Robot SRDF file (disabled collision pairs, joint groups; empty "
            "for none).",
        ),
        DeclareLaunchArgument(
            "params_file",
            default_value=PathJoinSubstitution(
                [FindPackageShare(PACKAGE), "config", "robot_collision.yaml"]),
            description="ROS 2 parameter file for the robot_collision nodes.",
        ),
        DeclareLaunchArgument(
            "use_mock_hardware",
            default_value="false",
            description="Start mock_arm, a simulated arm publishing joint_states, in place "
            "of the hardware.",
        ),
        DeclareLaunchArgument(
            "use_mock_camera",
            default_value="false",
            description="Start mock_camera, a simulated depth camera publishing point clouds "
            "(set the nodes' point_cloud_topics and camera_poses to use them).",
        ),
        DeclareLaunchArgument(
            "use_robot_state_publisher",
            default_value="true",
            description="Start robot_state_publisher (the arm's TF, for RViz); false where "
            "it is not installed or another one already runs.",
        ),
        DeclareLaunchArgument(
            "package_dirs",
            default_value="",
            description="Folders that contain the packages of the robot's package:// mesh URIs "
            "when those packages are not in the ament index, comma-separated (e.g. "
            "$HOME/ws/src); empty = the parameter file's package_dirs.",
        ),
        DeclareLaunchArgument(
            "world_file",
            default_value="",
            description="World objects YAML (path or package://pkg/path) for collision_checker, "
            "velocity_filter and planner; empty = the parameter file's world_file, none = no "
            "world objects.",
        ),
        DeclareLaunchArgument(
            "point_cloud_topics",
            default_value="",
            description="PointCloud2 topics of depth cameras for collision_checker, "
            "velocity_filter and planner, comma-separated (e.g. /camera/depth/points); their "
            "frames come from tf2 (or camera_poses in the parameter file); empty = the "
            "parameter file's point_cloud_topics, none = no clouds.",
        ),
        OpaqueFunction(function=_nodes),
    ])
