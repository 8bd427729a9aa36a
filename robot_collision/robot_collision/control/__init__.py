"""Control layer: the collision-avoiding velocity filter.

Owns :class:`~.velocity_filter.VelocityFilter`, the per-tick QP that keeps commanded joint
velocities as close to the request as possible while no monitored pair closes below its
safety distance (options in :mod:`.filter_options`, compiled boxes and QP assembly in
:mod:`.filter_kernels`, remembered witnesses in :mod:`.witness_memory`). May import the
collision, model and geometry layers and the foundation modules; never planning or ROS.
"""

from ..kernel_cache import ensure_fresh_kernel_caches

ensure_fresh_kernel_caches()  # before any of this layer's kernels loads from the cache
