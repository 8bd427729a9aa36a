"""Collision layer: robot-vs-robot and robot-vs-world queries on a model and its world.

Owns the packed scene arrays (:mod:`.scene`), the compiled validity/distance kernels
(:mod:`.kernels`), :class:`~.checker.CollisionChecker` (MATLAB ``checkCollision`` semantics,
batches, motions) and clearance tables with their Jacobians (:mod:`.clearance`). May import the
model and geometry layers and the foundation modules; never planning, control or ROS.
"""
