"""Convex hulls of meshes and the vertex data the compiled support function reads.

A mesh collides as the convex hull of its vertices (MATLAB semantics). The support function of
GJK/EPA (:mod:`.distance`) needs the hull vertex farthest along a direction. Scanning every
vertex costs ``k`` dot products per call, which dominated checks of real robots whose hulls have
hundreds to thousands of vertices (issue 13: Kinova 800-1500, Z1 6877). For those the kernel
reads a *support block* instead of the plain ``(k, 3)`` vertex array and climbs the hull's edge
graph: on a convex polytope a vertex with no better neighbour is a global maximum, and from the
previous answer (GJK's directions change little between iterations) it takes a step or two.

Support block of a hull with ``k`` vertices (float64, ``(R, 3)``, rows read as a flat array of
``3 R`` numbers where indices are stored as exactly representable floats):

- rows ``0 .. k-1``: the hull vertices (local frame, m), as in the plain array;
- flat ``3k .. 3k + C - 1`` (``C`` = :data:`START_CELLS`): the starting vertex of a climb for
  each cell of a cube map of directions (:func:`start_directions`): the vertex extreme along the
  cell's centre direction, a step or two from the answer for any direction in the cell;
- flat ``3k + C .. 3k + C + k``: ``k + 1`` offsets (flat indices into the block) of each
  vertex's neighbour list;
- then the neighbour lists (vertex indices), padded to a whole row;
- last row: ``(SUPPORT_BLOCK_MARK, k, 0)``; the mark (1e300) tells a block from a plain vertex
  array, whose coordinates are below :data:`MAX_COORDINATE`. (Not NaN: kernels compiled with
  fastmath may inline the test and fold a NaN check away.)

Hulls of at most :data:`SUPPORT_BLOCK_MIN_VERTICES` vertices stay plain arrays: scanning them is
faster than climbing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import MeshError

__all__ = [
    "MAX_COORDINATE",
    "SUPPORT_BLOCK_MARK",
    "SUPPORT_BLOCK_MIN_VERTICES",
    "START_CELLS",
    "START_GRID",
    "convex_hull",
    "start_directions",
    "support_block",
]

SUPPORT_BLOCK_MIN_VERTICES = 32
"""Hulls with more vertices than this get a support block (hill-climbing support)."""
START_GRID = 8
"""Cube-map resolution of the climb's cold starts: each face of the direction cube is split into
``START_GRID`` x ``START_GRID`` cells, each storing the hull vertex extreme along its centre
direction (see :func:`start_directions`)."""
START_CELLS = 6 * START_GRID * START_GRID
SUPPORT_BLOCK_MARK = 1e300
"""First entry of a support block's last row."""
MAX_COORDINATE = 1e9
"""Largest accepted mesh vertex coordinate (m); larger ones are a unit or scale error."""


def convex_hull(
    points: NDArray[np.float64], source: str
) -> tuple[NDArray[np.float64], list[NDArray[np.int64]]]:
    """Hull vertices ``(k, 3)`` of ``points`` and each vertex's neighbours on the hull (indices
    into the returned vertices). Raises :class:`MeshError` for fewer than 4 points, non-finite
    or flat input."""
    from scipy.spatial import ConvexHull, QhullError

    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 4:
        raise MeshError(f"mesh {source} needs at least 4 vertices as a (k, 3) array")
    if not np.all(np.isfinite(pts)):
        raise MeshError(f"mesh {source} has non-finite vertices")
    if np.max(np.abs(pts)) >= MAX_COORDINATE:
        raise MeshError(
            f"mesh {source} has vertices beyond {MAX_COORDINATE:g} m; check its units and scale"
        )
    try:
        hull = ConvexHull(pts)
    except QhullError as exc:
        raise MeshError(
            f"mesh {source} is flat or degenerate (no 3-D convex hull): {exc}".splitlines()[0]
        ) from exc
    index = np.full(len(pts), -1, dtype=np.int64)
    index[hull.vertices] = np.arange(len(hull.vertices))
    tri = index[hull.simplices]  # (m, 3) triangles over hull vertex indices
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    edges = np.concatenate([edges, edges[:, ::-1]])
    k = len(hull.vertices)
    # unique directed edges sorted by (first, second) vertex, as one int64 key each: a 1-D
    # unique, 10x faster than np.unique(axis=0) on the 1.8 M edges of a 300 k-vertex hull
    key = np.sort(edges[:, 0].astype(np.int64) * k + edges[:, 1])
    key = key[np.concatenate(([True], key[1:] != key[:-1]))] if len(key) else key
    first, second = np.divmod(key, k)
    splits = np.searchsorted(first, np.arange(1, k))
    nbrs = np.split(second, splits)
    return np.ascontiguousarray(pts[hull.vertices]), nbrs


def start_directions() -> NDArray[np.float64]:
    """(START_CELLS, 3) unit directions at the centres of the cube-map cells, in the order the
    kernel indexes them: cell ``(f * G + i) * G + j`` (``G = START_GRID``) of face ``f`` =
    ``2 a + (direction[a] < 0)`` (``a`` the dominant axis) has the other two components, in
    axis order and divided by ``|direction[a]|``, in the ``i``-th and ``j``-th of ``G`` equal
    bins of [-1, 1]."""
    G = START_GRID
    c = (np.arange(G) + 0.5) / G * 2.0 - 1.0
    out = np.empty((6, G, G, 3))
    for f in range(6):
        a = f // 2
        others = [b for b in range(3) if b != a]
        out[f, :, :, a] = -1.0 if f % 2 else 1.0
        out[f, :, :, others[0]] = c[:, None]
        out[f, :, :, others[1]] = c[None, :]
    flat = out.reshape(-1, 3)
    return flat / np.linalg.norm(flat, axis=1, keepdims=True)


def _extreme_vertices(
    directions: NDArray[np.float64], vertices: NDArray[np.float64], chunk: int = 8192
) -> NDArray[np.int64]:
    """Index of the vertex farthest along each direction (first on ties), in chunks of
    ``chunk`` vertices: memory ``len(directions) * chunk`` floats instead of a (C, k) matrix
    (9 GiB for the 3.1 M hull vertices of a 50 MB STL)."""
    best = np.full(len(directions), -np.inf)
    arg = np.zeros(len(directions), dtype=np.int64)
    for lo in range(0, len(vertices), chunk):
        proj = directions @ vertices[lo : lo + chunk].T
        j = np.argmax(proj, axis=1)
        val = proj[np.arange(len(directions)), j]
        better = val > best
        best[better] = val[better]
        arg[better] = lo + j[better]
    return arg


def support_block(
    vertices: NDArray[np.float64], neighbours: list[NDArray[np.int64]]
) -> NDArray[np.float64]:
    """The kernel's vertex data for a hull (see the module docstring): the plain ``vertices``
    for small hulls, else the support block."""
    k = len(vertices)
    if k <= SUPPORT_BLOCK_MIN_VERTICES:
        return np.ascontiguousarray(vertices, dtype=float)
    starts = _extreme_vertices(start_directions(), np.asarray(vertices, dtype=float))
    counts = np.fromiter((len(n) for n in neighbours), dtype=np.int64, count=k)
    first = 3 * k + START_CELLS + k + 1  # flat index of the first neighbour list
    offsets = first + np.concatenate([[0], np.cumsum(counts)])
    flat = np.concatenate(
        [
            np.asarray(vertices, dtype=float).reshape(-1),
            starts.astype(float),
            offsets.astype(float),
            np.concatenate(neighbours).astype(float) if k else np.zeros(0),
        ]
    )
    pad = (-len(flat)) % 3
    flat = np.concatenate([flat, np.zeros(pad), [SUPPORT_BLOCK_MARK, float(k), 0.0]])
    return np.ascontiguousarray(flat.reshape(-1, 3))
