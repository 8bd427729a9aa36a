"""Collision layer: robot-vs-robot and robot-vs-world queries on a model and its world.

Owns the scene arrays (:mod:`.scene`, flattened for compiled calls by :mod:`.scene_packing`),
the compiled validity/distance kernels (:mod:`.kernels`), :class:`~.checker.CollisionChecker`
(MATLAB ``checkCollision`` semantics, batches, motions) and clearance tables with their
Jacobians (:mod:`.clearance`). May import the model and geometry layers and the foundation
modules; never planning, control or ROS.
"""

from ..kernel_cache import ensure_fresh_kernel_caches

ensure_fresh_kernel_caches()  # before any of this layer's kernels loads from the cache
