"""Tests for robot_collision.tools.plotting: pictures of every shape kind render to real PNGs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robot_collision.geometry.shapes import Box, Capsule, Cylinder, Mesh, Shape, Sphere, WorldObject
from robot_collision.tools.plotting import draw_shape, plot_collision_scene, save_collision_picture

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
URDF_DIR = Path(__file__).resolve().parents[2] / "urdf"


def _pose(xyz=(0.0, 0.0, 0.0), yaw: float = 0.0, pitch: float = 0.0) -> np.ndarray:
    cz, sz, cy, sy = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    rz = np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
    T = np.eye(4)
    T[:3, :3] = rz @ ry
    T[:3, 3] = xyz
    return T


class StandInRobot:
    """Minimal object with the attributes plot_collision_scene uses (no RobotModel needed).

    A base with a box plate and a cylinder column, then a chain of three bodies: a capsule arm
    that pitches with q[0], a sphere joint, and a convex-mesh hand.
    """

    base_name = "base"
    body_names = ["arm", "elbow", "hand"]

    def __init__(self) -> None:
        tetra = np.array(
            [[0.0, 0.0, 0.0], [0.12, 0.0, 0.0], [0.0, 0.12, 0.0], [0.0, 0.0, 0.12], [0.1, 0.1, 0.1]]
        )
        self._geometry: dict[str, list[tuple[Shape, np.ndarray]]] = {
            "base": [
                (Box(0.4, 0.3, 0.04), _pose((0.0, 0.0, 0.02), yaw=0.4)),
                (Cylinder(0.06, 0.2), _pose((0.0, 0.0, 0.14))),
            ],
            "arm": [(Capsule(0.05, 0.4), _pose((0.0, 0.0, 0.2)))],
            "elbow": [(Sphere(0.07), np.eye(4))],
            "hand": [(Mesh(tetra), np.eye(4))],
        }

    def link_transforms(self, q):
        q = np.asarray(q, dtype=float)
        base = np.eye(4)
        arm = _pose((0.0, 0.0, 0.24), pitch=q[0])
        elbow = arm @ _pose((0.0, 0.0, 0.4))
        hand = elbow @ _pose((0.0, 0.0, 0.08), yaw=q[1])
        return {"base": base, "arm": arm, "elbow": elbow, "hand": hand}

    def collision_geometry(self, name):
        return list(self._geometry[name])


WORLD = [
    WorldObject(Box(0.2, 0.3, 0.25), _pose((0.45, 0.1, 0.3), yaw=0.6), "crate"),
    WorldObject(Sphere(0.06), _pose((-0.3, -0.2, 0.5)), "ball"),
    WorldObject(Capsule(0.04, 0.3), _pose((0.0, 0.4, 0.3), pitch=1.2), "pipe"),
]


def _read_png(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    img = mpimg.imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    return np.asarray(img[..., :3], dtype=float)


def _reddish(img: np.ndarray) -> int:
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return int(np.count_nonzero((r - g > 0.25) & (r - b > 0.25)))


def test_save_picture_every_shape_kind(tmp_path: Path) -> None:
    robot = StandInRobot()
    out = tmp_path / "scene.png"
    save_collision_picture(
        out,
        robot,
        [0.7, 0.3],
        world=WORLD,
        highlight=("hand", "crate"),
        witness=[[0.3, 0.05, 0.6], [0.4, 0.1, 0.45]],
        title="stand-in robot",
    )
    assert out.is_file()
    data = out.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 10_000
    img = _read_png(out)
    # not a single colour, and plenty of non-white pixels (the shapes)
    assert float(img.std()) > 0.05
    assert np.count_nonzero(img.min(axis=-1) < 0.9) > 5_000
    assert _reddish(img) > 200  # the highlighted pair is red


def test_highlight_adds_red(tmp_path: Path) -> None:
    robot = StandInRobot()
    blue = {n: "#1f77b4" for n in ["base", *robot.body_names]}
    plain = plot_collision_scene(robot, [0.0, 0.0], world=WORLD, colors=blue)
    marked = plot_collision_scene(robot, [0.0, 0.0], world=WORLD, colors=blue,
                                  highlight=("arm", "ball"))
    plain.savefig(tmp_path / "plain.png")
    marked.savefig(tmp_path / "marked.png")
    red_plain = _reddish(_read_png(tmp_path / "plain.png"))
    assert _reddish(_read_png(tmp_path / "marked.png")) > red_plain + 200


def test_plot_returns_figure_with_equal_axes() -> None:
    from matplotlib.figure import Figure

    fig = plot_collision_scene(StandInRobot(), [0.0, 0.0], title="t")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    spans = [np.diff(lim)[0] for lim in (ax.get_xlim(), ax.get_ylim(), ax.get_zlim())]
    assert np.allclose(spans, spans[0])
    assert ax.get_xlabel() == "x [m]" and ax.get_zlabel() == "z [m]"
    assert ax.get_title() == "t"


def test_draw_on_given_axes(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    for k, shape in enumerate(
        [Sphere(0.1), Capsule(0.05, 0.2), Box(0.1, 0.2, 0.3), Cylinder(0.05, 0.2),
         Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]) * 0.2)]
    ):
        draw_shape(ax, shape, _pose((0.3 * k, 0.0, 0.0), yaw=0.3 * k), "C0")
    out = plot_collision_scene(StandInRobot(), [0.2, 0.0], ax=ax)
    assert out is fig
    fig.savefig(tmp_path / "axes.png")
    assert (tmp_path / "axes.png").stat().st_size > 10_000


def test_bad_inputs_raise() -> None:
    robot = StandInRobot()
    with pytest.raises(ValueError):
        plot_collision_scene(robot, [0.0, 0.0], witness=[[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError):
        plot_collision_scene(robot, [0.0, 0.0], witness=[[0.0, 0.0, np.nan], [1.0, 0.0, 0.0]])
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    with pytest.raises(ValueError):
        draw_shape(fig.add_subplot(projection="3d"), Sphere(0.1), np.eye(3), "C0")


def test_creates_parent_folders(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "scene.png"
    save_collision_picture(out, StandInRobot(), [0.0, 0.0])
    assert out.is_file() and out.read_bytes()[:8] == PNG_SIGNATURE


def test_default_arm_picture(tmp_path: Path) -> None:
    model = pytest.importorskip("robot_collision.model.robot_model")
    robot = model.RobotModel.from_urdf(str(URDF_DIR / "default_arm.urdf"))
    out = tmp_path / "default_arm.png"
    save_collision_picture(out, robot, np.zeros(robot.num_joints), highlight=("link7", "tool"),
                           title="rc_arm home")
    assert out.stat().st_size > 10_000
