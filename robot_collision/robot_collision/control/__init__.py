"""Control layer: the collision-avoiding velocity filter.

Owns :class:`~.velocity_filter.VelocityFilter`, the per-tick QP that keeps commanded joint
velocities as close to the request as possible while no monitored pair closes below its
safety distance. May import the collision, model and geometry layers and the foundation
modules; never planning or ROS.
"""
