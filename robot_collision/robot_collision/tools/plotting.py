"""Pictures of collision geometry: the robot's shapes, world objects and a closest pair.

All coordinates are metres in the robot base frame (the root link's frame). A shape is drawn
at ``pose`` (``(4, 4)`` homogeneous, base frame) exactly as the checker sees it: a capsule is
its segment along local z plus hemispherical caps, a box and a cylinder are centred on the
local origin, a mesh is drawn as its convex hull.

matplotlib is imported lazily, inside the functions, so importing this module costs nothing.
Figures are created without pyplot and rendered with the Agg canvas, so plotting works on
headless machines and never touches the global pyplot state or backend.

``robot`` is any object with ``body_names`` (``list[str]``), ``base_name`` (``str``),
``link_transforms(q) -> dict[str, (4, 4)]`` and ``collision_geometry(name) ->
list[(Shape, (4, 4) pose in the link frame)]``, e.g.
:class:`robot_collision.model.robot_model.RobotModel`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..geometry.point_cloud import PointCloud
from ..geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CollisionRobot", "draw_shape", "plot_collision_scene", "save_collision_picture"]

Color = Union[str, Sequence[float]]

_N_AROUND = 28  # facets around a round shape
_N_ALONG = 14  # facets from pole to pole of a sphere
_HIGHLIGHT = "#d62728"
_WORLD = "#8c8c8c"
_BASE = "#4d4d4d"
_WITNESS = "#111111"
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#17becf",
    "#bcbd22",
    "#8c564b",
    "#e377c2",
    "#98df8a",
    "#aec7e8",
)


class CollisionRobot(Protocol):
    """What :func:`plot_collision_scene` needs from a robot model."""

    body_names: list[str]
    base_name: str

    def link_transforms(self, q: Any) -> Mapping[str, NDArray[np.float64]]: ...

    def collision_geometry(self, name: str) -> list[tuple[Shape, NDArray[np.float64]]]: ...


# ---------------------------------------------------------------------------- surfaces
def _transform(points: NDArray[np.float64], pose: NDArray[np.float64]) -> NDArray[np.float64]:
    """Apply ``pose`` (4, 4) to points (..., 3)."""
    return points @ pose[:3, :3].T + pose[:3, 3]


def _revolved(radius: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Surface grid (len(z), _N_AROUND + 1, 3) revolving the profile ``radius(z)`` about z."""
    u = np.linspace(0.0, 2.0 * np.pi, _N_AROUND + 1)
    x = radius[:, None] * np.cos(u)[None, :]
    y = radius[:, None] * np.sin(u)[None, :]
    zz = np.broadcast_to(z[:, None], x.shape)
    return np.stack([x, y, zz], axis=-1)


def _sphere_grid(r: float) -> NDArray[np.float64]:
    v = np.linspace(0.0, np.pi, _N_ALONG + 1)
    return _revolved(r * np.sin(v), r * np.cos(v))


def _capsule_grid(r: float, half: float) -> NDArray[np.float64]:
    """One closed surface: top cap, cylinder side (the segment), bottom cap."""
    v = np.linspace(0.0, 0.5 * np.pi, _N_ALONG // 2 + 1)
    top_r, top_z = r * np.sin(v), half + r * np.cos(v)
    bot_r, bot_z = top_r[::-1], -half - r * np.cos(v[::-1])
    return _revolved(np.concatenate([top_r, bot_r]), np.concatenate([top_z, bot_z]))


def _cylinder_grid(r: float, half: float) -> NDArray[np.float64]:
    """Closed surface: top disc, side, bottom disc (profile through the axis)."""
    radius = np.array([0.0, r, r, 0.0])
    z = np.array([half, half, -half, -half])
    return _revolved(radius, z)


def _box_faces(shape: Box) -> NDArray[np.float64]:
    """The six faces (6, 4, 3) of a box, local frame."""
    h = 0.5 * np.array([shape.x, shape.y, shape.z])
    corners = np.array(
        [[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float
    ) * h
    quads = [
        (0, 1, 3, 2),  # x-
        (4, 6, 7, 5),  # x+
        (0, 4, 5, 1),  # y-
        (2, 3, 7, 6),  # y+
        (0, 2, 6, 4),  # z-
        (1, 5, 7, 3),  # z+
    ]
    faces: NDArray[np.float64] = corners[np.array(quads)]
    return faces


def _hull_triangles(vertices: NDArray[np.float64]) -> NDArray[np.float64]:
    """Triangles (k, 3, 3) of the convex hull of ``vertices`` (local frame)."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(vertices)
    triangles: NDArray[np.float64] = vertices[np.asarray(hull.simplices, dtype=np.int64)]
    return triangles


def _shape_points(shape: Shape) -> tuple[str, NDArray[np.float64]]:
    """("grid", (m, n, 3) surface grid) or ("poly", (k, corners, 3) polygons), local frame."""
    if isinstance(shape, Sphere):
        return "grid", _sphere_grid(shape.radius)
    if isinstance(shape, Capsule):
        return "grid", _capsule_grid(shape.radius, 0.5 * shape.length)
    if isinstance(shape, Cylinder):
        return "grid", _cylinder_grid(shape.radius, 0.5 * shape.length)
    if isinstance(shape, Box):
        return "poly", _box_faces(shape)
    if isinstance(shape, Mesh) or shape.vertices().shape[0] >= 4:
        return "poly", _hull_triangles(np.asarray(shape.vertices(), dtype=float))
    raise TypeError(f"cannot draw shape of type {type(shape).__name__}")


def _check_pose(pose: ArrayLike) -> NDArray[np.float64]:
    T = np.asarray(pose, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError("pose must be a finite (4, 4) homogeneous transform")
    return T


def _draw(
    ax: Any, shape: Shape, pose: ArrayLike, color: Color, alpha: float
) -> NDArray[np.float64]:
    """Draw ``shape`` and return the drawn points (k, 3) in the base frame (for the limits)."""
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # type: ignore[import-untyped]

    T = _check_pose(pose)
    if isinstance(shape, PointCloud):  # sensed points: a scatter of at most 6000 of them
        P = shape.points[:: max(1, -(-shape.num_points // 6000))]
        P = P @ T[:3, :3].T + T[:3, 3]
        ax.scatter(P[:, 0], P[:, 1], P[:, 2], s=1.5, color=color, alpha=min(1.0, 2 * alpha),
                   depthshade=False)
        return np.asarray(P, dtype=float).reshape(-1, 3)
    kind, local = _shape_points(shape)
    pts = _transform(local, T)
    if kind == "grid":
        ax.plot_surface(
            pts[..., 0],
            pts[..., 1],
            pts[..., 2],
            color=color,
            alpha=alpha,
            linewidth=0.25,
            edgecolor=color,
            shade=True,
            antialiased=True,
        )
    else:
        poly = Poly3DCollection(
            list(pts), facecolors=color, edgecolors=color, linewidths=0.6, alpha=alpha
        )
        ax.add_collection3d(poly)
    return pts.reshape(-1, 3)


def draw_shape(ax: Any, shape: Shape, pose: ArrayLike, color: Color, alpha: float = 0.35) -> None:
    """Draw ``shape`` placed at ``pose`` ((4, 4), base frame, metres) on the 3-D axes ``ax``.

    Spheres, capsules and cylinders are drawn as shaded surfaces, boxes as six faces,
    meshes as the triangles of their convex hull and point clouds as dots. ``color`` is any
    matplotlib colour and ``alpha`` the face opacity.
    """
    _draw(ax, shape, pose, color, alpha)


# ---------------------------------------------------------------------------- scenes
def _body_color(
    name: str, index: int, robot: CollisionRobot, colors: Optional[Mapping[str, Color]]
) -> Color:
    if colors is not None and name in colors:
        return colors[name]
    if name == robot.base_name:
        return _BASE
    return _PALETTE[index % len(_PALETTE)]


def _set_equal_limits(ax: Any, points: NDArray[np.float64]) -> None:
    """Cube-shaped limits around ``points`` (k, 3) so one metre looks the same on every axis."""
    if points.size == 0:
        lo, hi = -np.ones(3) * 0.5, np.ones(3) * 0.5
    else:
        lo, hi = points.min(axis=0), points.max(axis=0)
    centre = 0.5 * (lo + hi)
    half = max(0.5 * float(np.max(hi - lo)) * 1.05, 0.05)
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0))


def _new_figure() -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 7.0), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def plot_collision_scene(
    robot: CollisionRobot,
    q: ArrayLike,
    world: Iterable[WorldObject] = (),
    highlight: Iterable[str] = (),
    witness: Optional[ArrayLike] = None,
    title: Optional[str] = None,
    ax: Any = None,
    colors: Optional[Mapping[str, Color]] = None,
) -> Figure:
    """Draw the robot's collision shapes at configuration ``q`` with the world objects.

    ``highlight`` names bodies (or the base) and world objects to draw in red, e.g. the
    closest pair. ``witness`` is an optional ``(2, 3)`` pair of points (base frame, m), drawn
    as a black line with markers and labelled with its length. World objects are grey.
    ``colors`` maps body names to colours (others get a palette colour). ``ax`` is an existing
    3-D axes to draw on; without it a new figure is made. Returns the figure.
    """
    if ax is None:
        fig = _new_figure()
        ax = fig.add_subplot(projection="3d")
    else:
        fig = ax.get_figure()
        if not hasattr(ax, "get_zlim"):
            raise ValueError("ax must be a 3-D axes (projection='3d')")
    marked = set(highlight)
    transforms = robot.link_transforms(q)
    drawn: list[NDArray[np.float64]] = []
    from matplotlib.patches import Patch

    legend: list[Patch] = []

    names = [robot.base_name] + [n for n in robot.body_names if n != robot.base_name]
    for index, name in enumerate(names):
        geometry = robot.collision_geometry(name)
        if not geometry:
            continue
        link_pose = np.asarray(transforms.get(name, np.eye(4)), dtype=float)
        hot = name in marked
        color = _HIGHLIGHT if hot else _body_color(name, index - 1, robot, colors)
        alpha = 0.55 if hot else 0.3
        for shape, local in geometry:
            drawn.append(_draw(ax, shape, link_pose @ np.asarray(local, dtype=float), color, alpha))
        if hot:
            legend.append(Patch(color=_HIGHLIGHT, label=name))

    world_drawn = False
    for k, obj in enumerate(world):
        label = obj.name or f"world[{k}]"
        hot = bool(obj.name) and obj.name in marked
        color = _HIGHLIGHT if hot else _WORLD
        drawn.append(_draw(ax, obj.shape, obj.pose, color, 0.55 if hot else 0.3))
        if hot:
            legend.append(Patch(color=_HIGHLIGHT, label=label))
        world_drawn = True
    if world_drawn:
        legend.append(Patch(color=_WORLD, label="world"))

    if witness is not None:
        w = np.asarray(witness, dtype=float)
        if w.shape != (2, 3) or not np.all(np.isfinite(w)):
            raise ValueError("witness must be a finite (2, 3) array of two points in metres")
        dist = float(np.linalg.norm(w[1] - w[0]))
        ax.plot(w[:, 0], w[:, 1], w[:, 2], color=_WITNESS, linewidth=2.0, marker="o",
                markersize=5, zorder=10)
        mid = w.mean(axis=0)
        ax.text(mid[0], mid[1], mid[2], f"  {dist:.3f} m", color=_WITNESS, fontsize=10,
                zorder=11)
        drawn.append(w)

    _set_equal_limits(ax, np.concatenate(drawn) if drawn else np.zeros((0, 3)))
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.view_init(elev=22.0, azim=-55.0)
    if legend:
        ax.legend(handles=legend, loc="upper left", fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def save_collision_picture(
    path: Union[str, os.PathLike[str]],
    robot: CollisionRobot,
    q: ArrayLike,
    world: Iterable[WorldObject] = (),
    highlight: Iterable[str] = (),
    witness: Optional[ArrayLike] = None,
    title: Optional[str] = None,
) -> None:
    """Render :func:`plot_collision_scene` to an image file (format from the suffix, e.g. PNG).

    Rendering uses the Agg canvas, so no display is needed. Missing parent folders are made.
    """
    fig = plot_collision_scene(robot, q, world=world, highlight=highlight, witness=witness,
                               title=title)
    out = os.fspath(path)
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fig.savefig(out, dpi=fig.dpi, bbox_inches="tight")
