"""List parameters as ``ros2 param`` hands them over: ``ros2 param set /velocity_filter
acceleration_limits '[5.0]'`` arrives as ``array('d', [5.0])``; an empty list parameter must
describe and dump as a typed empty list (not a byte array, not null) so that a dumped parameter
file can be edited and reused."""

from __future__ import annotations

import array
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from robot_collision.ros import checker_node, filter_settings, planner_settings
from robot_collision.ros.wiring import (
    NUMBER_LIST_PARAMETERS,
    declare_parameter_table,
    parameter_values,
    plain_value,
)

rclpy = pytest.importorskip("rclpy")
Parameter = pytest.importorskip("rclpy.parameter").Parameter


@pytest.fixture()
def node() -> Iterator[Any]:
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    n = rclpy.create_node(f"parameter_types_{uuid.uuid4().hex[:8]}", context=ctx)
    try:
        yield n
    finally:
        n.destroy_node()
        rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize("table", [checker_node.PARAMETERS, filter_settings.PARAMETERS,
                                   planner_settings.PARAMETERS],
                         ids=["collision_checker", "velocity_filter", "planner"])
def test_empty_lists_are_typed(node: Any, table: Any) -> None:
    declare_parameter_table(node, table, read_only=set(table))  # read-only ones too
    empty = [n for n, (d, _, _) in table.items() if isinstance(d, (list, tuple)) and not d]
    assert empty
    for name in empty:
        p = node.get_parameter(name)
        want = (Parameter.Type.DOUBLE_ARRAY if name in NUMBER_LIST_PARAMETERS
                else Parameter.Type.STRING_ARRAY)
        assert p.type_ == want, (name, p.type_)
        assert list(p.value) == []
        # what `ros2 param get/dump` receives: a typed empty array; `describe`: its type
        msg = p.get_parameter_value()
        assert msg.type == want.value
        assert node.describe_parameter(name).type == want.value, name
    # and the node's settings accept them as they come back from rclpy
    values = parameter_values(node, table)
    module = {id(checker_node.PARAMETERS): checker_node, id(filter_settings.PARAMETERS):
              filter_settings, id(planner_settings.PARAMETERS): planner_settings}[id(table)]
    _, errors = module.settings_from_values(values, strict=False)
    assert errors == []


def test_number_lists_from_ros2_param_set(node: Any) -> None:
    """`ros2 param set /velocity_filter acceleration_limits '[5.0]'` and `weights`."""
    declare_parameter_table(node, filter_settings.PARAMETERS)
    # as the parameter service receives them (a ParameterValue message: arrays become array('d'))
    result = node.set_parameters([Parameter.from_parameter_msg(p.to_parameter_msg()) for p in (
        Parameter("acceleration_limits", Parameter.Type.DOUBLE_ARRAY, [5.0]),
        Parameter("weights", Parameter.Type.DOUBLE_ARRAY, [1.0] * 7),
    )])
    assert all(r.successful for r in result)
    values = {p: node.get_parameter(p).value for p in ("acceleration_limits", "weights")}
    assert isinstance(values["acceleration_limits"], array.array)  # what rclpy hands over
    settings, errors = filter_settings.settings_from_values(values, strict=False)
    assert errors == []
    assert settings.acceleration_limits == (5.0,)
    assert settings.weights == (1.0,) * 7
    # integers typed by a user (`'[5]'`) arrive as array('q')
    settings, errors = filter_settings.settings_from_values(
        {"acceleration_limits": array.array("q", [5])}, strict=False)
    assert errors == [] and settings.acceleration_limits == (5.0,)
    # a string list is still refused, naming the parameter
    _, errors = filter_settings.settings_from_values({"acceleration_limits": ["a"]},
                                                     strict=False)
    assert errors and "acceleration_limits" in errors[0]


def test_plain_value() -> None:
    assert plain_value(array.array("d", [1.5])) == [1.5]
    assert plain_value(b"") == []
    assert plain_value(["a"]) == ["a"]
    assert plain_value(3.0) == 3.0


def test_mesh_outside_the_ament_index_gets_parameter_advice() -> None:
    """A node's error for a package:// mesh of a package outside the ament index names the
    package_dirs parameter (file, launch argument, ros2 param set), not Python syntax."""
    from robot_collision import MeshError, RobotModel
    from robot_collision.ros.robot_loader import node_advice

    urdf = ('<robot name="r"><link name="base"><collision><geometry><mesh '
            'filename="package://no_such_pkg_xyz/meshes/a.stl"/></geometry></collision></link>'
            '</robot>')
    with pytest.raises(MeshError) as info:
        RobotModel.from_urdf(urdf)
    text = node_advice(str(info.value))
    assert "package_dirs={" not in text
    assert "package_dirs: [" in text and "package_dirs:=" in text and "ros2 param set" in text
    assert "'no_such_pkg_xyz'" in text
    assert node_advice("other error") == "other error"


def test_robot_loader_lists_are_typed(node: Any) -> None:
    """package_dirs and load_limits (every node that loads a robot) are string arrays."""
    from robot_collision.ros.robot_loader import RobotLoader

    RobotLoader(node, lambda model, source: None)
    for name in ("package_dirs", "load_limits"):
        p = node.get_parameter(name)
        assert p.type_ == Parameter.Type.STRING_ARRAY, (name, p.type_)
        assert node.describe_parameter(name).type == Parameter.Type.STRING_ARRAY.value
