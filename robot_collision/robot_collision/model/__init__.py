"""Model layer: the robot as a kinematic tree with collision geometry.

Owns URDF/SRDF parsing (:mod:`.urdf`), :class:`~.robot_model.RobotModel` (links, joints, limits,
groups, disabled pairs) and the compiled forward kinematics and Jacobians (:mod:`.kinematics`).
May import the geometry layer and the foundation modules; never collision, planning, control
or ROS.
"""
