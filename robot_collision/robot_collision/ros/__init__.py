"""ROS 2 layer of robot_collision: nodes, message conversions, world registry, markers.

The core package never imports rclpy; everything ROS lives here. Modules:

- :mod:`.conversions`: messages ↔ core types (joint states, clearance tables, shapes, world
  objects, MoveIt collision objects, poses, trajectories);
- :mod:`.cdr`: ``ClearanceTable`` messages written directly as serialized bytes (the
  checker node's publishing path);
- :mod:`.wiring`: what every node shares: parameter tables (declare, read, validate), start-up
  settings and world file, the collision settings and :func:`~.wiring.make_checker`;
- :mod:`.world`: :class:`~.world.WorldModel`, the thread-safe world-object registry with YAML
  world files;
- :mod:`.robot_loader`: robot model from parameters or the ``robot_description`` topic;
- :mod:`.message_timing`: callbacks with the message info, arrival times of messages;
- :mod:`.markers`: RViz marker arrays (shapes coloured by clearance, planned paths);
- nodes: :mod:`.checker_node` (``collision_checker``), :mod:`.filter_node`
  (``velocity_filter``; its parameters in :mod:`.filter_settings`), :mod:`.planner_node`
  (``planner``; its parameters in :mod:`.planner_settings`, goal validation in
  :mod:`.planner_goals`, the planning thread and path timing in :mod:`.planner_execution`),
  :mod:`.mock_arm` (``mock_arm``); nodes never import each other;
- :mod:`.bringup`: ``robot_collision_bringup``, all nodes in one process (no launch_ros needed);
- :mod:`.demo`: ``make demo``, a ROS client of the running system;
- :mod:`.reference`: the README's node reference, generated from the nodes.

Importing this package imports nothing from ROS; import the submodules you need.
"""

from __future__ import annotations

__all__ = [
    "bringup",
    "cdr",
    "checker_node",
    "conversions",
    "filter_node",
    "markers",
    "message_timing",
    "mock_arm",
    "planner_node",
    "robot_loader",
    "wiring",
    "world",
]
