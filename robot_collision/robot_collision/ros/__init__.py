"""ROS 2 layer of robot_collision: nodes, message conversions, world registry, markers.

The core package never imports rclpy; everything ROS lives here. Modules:

- :mod:`.conversions`: messages ↔ core types (joint states, clearance tables, shapes, world
  objects, MoveIt collision objects, poses);
- :mod:`.cdr`: ``ClearanceTable`` messages written directly as serialized bytes (the
  checker node's publishing path);
- :mod:`.parameters`: the nodes' parameter tables (declare, read, validate, world file);
- :mod:`.world`: :class:`~.world.WorldModel`, the thread-safe world-object registry with YAML
  world files;
- :mod:`.robot_loader`: robot model from parameters or the ``robot_description`` topic;
- :mod:`.markers`: RViz marker arrays coloured by clearance;
- :mod:`.checker_node`: the ``collision_checker`` node;
- :mod:`.bringup`: ``robot_collision_bringup``, all nodes in one process (no launch_ros needed).

Importing this package imports nothing from ROS; import the submodules you need.
"""

from __future__ import annotations

__all__ = [
    "bringup",
    "cdr",
    "checker_node",
    "conversions",
    "markers",
    "parameters",
    "robot_loader",
    "world",
]
