"""Planning layer: collision-free joint-space motion.

Owns the bidirectional RRT (:mod:`.rrt`, compiled), inverse kinematics and workspace goal
regions (:mod:`.ik`) and time parameterization of paths (:mod:`.trajectory`). May import the
collision, model and geometry layers and the foundation modules; never control or ROS.
"""
