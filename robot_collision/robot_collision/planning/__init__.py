"""Planning layer: collision-free joint-space motion.

Owns the bidirectional RRT (:mod:`.rrt` the planner, :mod:`.rrt_options` its options and
results, :mod:`.rrt_kernels` its compiled loop and edge checks, :mod:`.paths` path length,
first collision and shortcutting), inverse kinematics and workspace goal regions (:mod:`.ik`)
and time parameterization of paths (:mod:`.trajectory`). May import the
collision, model and geometry layers and the foundation modules; never control or ROS.
"""

from ..kernel_cache import ensure_fresh_kernel_caches

ensure_fresh_kernel_caches()  # before any of this layer's kernels loads from the cache
