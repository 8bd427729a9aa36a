"""Model layer: the robot as a kinematic tree with collision geometry.

Owns URDF/SRDF parsing (:mod:`.urdf`), :class:`~.robot_model.RobotModel` (links, joints, limits,
groups, disabled pairs) and the compiled forward kinematics and Jacobians (:mod:`.kinematics`).
May import the geometry layer and the foundation modules; never collision, planning, control
or ROS.
"""

from ..kernel_cache import ensure_fresh_kernel_caches

ensure_fresh_kernel_caches()  # before any of this layer's kernels loads from the cache
