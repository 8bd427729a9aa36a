"""Geometry layer: collision shapes, rigid transforms, mesh I/O and the compiled pair-distance
kernels.

Owns everything that is true of shapes alone, with no robot in sight: :mod:`.shapes` (primitives,
meshes, :class:`~.shapes.WorldObject`), :mod:`.transforms` (poses, quaternions, Euler angles),
:mod:`.distance` (signed distance between any two shapes, numba: the closed forms in
:mod:`.pair_closed_forms`, GJK in :mod:`.gjk`, EPA in :mod:`.epa`). May import only
numpy/scipy/numba and the foundation modules :mod:`robot_collision.errors` and
:mod:`robot_collision.jitcall`; never the model, collision, planning, control or ROS layers.
"""

from ..kernel_cache import ensure_fresh_kernel_caches

ensure_fresh_kernel_caches()  # before any of this layer's kernels loads from the cache
