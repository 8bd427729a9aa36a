"""The demo's outputs: per-tick CSV, the figure (clearances, speeds, geometry at the closest
approaches) and the summary table."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from ...collision.checker import CollisionChecker
from ...geometry.shapes import WorldObject
from ...model.robot_model import RobotModel
from .client import fmt_mm
from .settings import StepResult

# ----------------------------------------------------------------------------- outputs
_CSV_SCALARS = ("tcp_speed_cmd", "tcp_speed_filtered", "tcp_speed", "env_clearance", "env_pair",
                "self_clearance", "self_pair", "filter_ok", "filter_fault", "filter_scaling",
                "filter_min_distance", "active_constraints", "disabled_groups",
                "checker_min_distance", "state_age", "watch_pair", "watch_distance",
                "watch_rate_cmd", "watch_rate_filtered", "watch_rate")


def write_csv(path: Path, samples: Sequence[dict[str, Any]], joint_names: Sequence[str]) -> None:
    """One row per control tick: time (s), step, phase, joint positions / measured velocities /
    commanded / filtered velocities (rad, rad/s), tool speeds (m/s), clearances (m), filter
    status."""
    header = ["t", "step", "phase"]
    for prefix in ("q", "qd", "cmd", "filtered"):
        header += [f"{prefix}_{j}" for j in joint_names]
    header += list(_CSV_SCALARS)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in samples:
            row: list[Any] = [f"{s['t']:.4f}", s["step"], s["phase"]]
            for key in ("q", "qd", "cmd", "filtered"):
                row += [f"{v:.6g}" for v in s[key]]
            for key in _CSV_SCALARS:
                v = s[key]
                row.append(f"{v:.6g}" if isinstance(v, float) else v)
            w.writerow(row)


def _closest(samples: Sequence[dict[str, Any]], key: str,
             steps: Sequence[str]) -> Optional[dict[str, Any]]:
    cand = [s for s in samples if s["step"] in steps and math.isfinite(s[key])]
    return min(cand, key=lambda s: s[key]) if cand else None


def _pair_witness(checker: CollisionChecker, q: NDArray[np.float64],
                  world: Sequence[WorldObject], pair: str) -> Optional[NDArray[np.float64]]:
    """Witness points (2, 3) of the clearance row ``"robot=other"`` at ``q``."""
    tab = checker.clearance(q, world)
    for i, name in enumerate(tab.pair_names()):
        if name == pair:
            return np.stack([tab.witness_robot[i], tab.witness_other[i]])
    return None


def _cube_limits(ax: Any, centre: Sequence[float], half: float, zoom: float = 1.0) -> None:
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0), zoom=zoom)


def write_figure(path: Path, samples: Sequence[dict[str, Any]], steps: Sequence[StepResult],
                 robot: RobotModel, world: Sequence[WorldObject], safety_env: float,
                 safety_self: float) -> None:
    """The demo figure: clearance over time (safety distances dashed, step spans shaded),
    commanded vs filtered tool speed, and the collision geometry at the closest approach to the
    world and (protection on) to itself, with the closest pair highlighted and its witness line.

    ``samples`` need ``t``, ``step``, ``q``, ``cmd``, ``env_clearance``, ``env_pair``,
    ``self_clearance``, ``self_pair``, ``tcp_speed_cmd``, ``tcp_speed_filtered``, ``tcp_speed``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ...tools.plotting import plot_collision_scene

    fig = Figure(figsize=(15.0, 8.4), dpi=100)
    FigureCanvasAgg(fig)
    ax_c = fig.add_axes((0.055, 0.555, 0.555, 0.335))
    ax_v = fig.add_axes((0.055, 0.075, 0.555, 0.39), sharex=ax_c)
    t = np.array([s["t"] for s in samples])
    env = np.array([s["env_clearance"] for s in samples]) * 1e3
    slf = np.array([s["self_clearance"] for s in samples]) * 1e3
    vc = np.array([s["tcp_speed_cmd"] for s in samples])
    vf = np.array([s["tcp_speed_filtered"] for s in samples])
    vm = np.array([s["tcp_speed"] for s in samples])
    sending = np.isfinite(vc)

    # step spans
    colors = {"1": "#e8f1fb", "2": "#fdf0e1", "3": "#eaf6ea", "4": "#f3ecf8", "5": "#fbeaea"}
    labels = {"1": "1  plan + execute", "2": "2  teleop", "3": "3  home, self-collision",
              "4": "4  bad goals", "5": "5  box seen by the camera only"}
    spans: dict[str, list[float]] = {}
    for st in steps:
        k = st.key[:1]
        if k in colors:
            lo, hi = spans.get(k, [st.t_start, st.t_end])
            spans[k] = [min(lo, st.t_start), max(hi, st.t_end)]
    for k, (lo, hi) in spans.items():
        for ax in (ax_c, ax_v):
            ax.axvspan(lo, hi, color=colors[k], zorder=0, lw=0)
        ax_c.text(0.5 * (lo + hi), 1.015, labels[k], transform=ax_c.get_xaxis_transform(),
                  ha="center", va="bottom", fontsize=9, color="#333333")
    # sub-steps of step 3: fold with protection, wrist protection off, on again
    marks = []
    fold = [s["t"] for s in samples if s["step"] == "3a" and s["phase"] == "fold"]
    if fold:
        marks.append((fold[0], "fold,\nprotected", 0.97))
    marks += [(st.t_start, text, y) for st in steps for key, text, y in (
        ("3b", "wrist\nunprotected", 0.80), ("3c", "protected\nagain", 0.97)) if st.key == key]
    for x, text, y in marks:
        for ax in (ax_c, ax_v):
            ax.axvline(x, color="#8a8a8a", lw=0.8, ls=":", zorder=1)
        ax_v.text(x, y, " " + text.replace("\n", "\n "), fontsize=7.5, va="top",
                  transform=ax_v.get_xaxis_transform(), color="#555555")

    ymax = 170.0
    ax_c.plot(t, np.clip(env, -50, ymax + 50), color="#1f77b4", lw=1.7,
              label="robot–world, closest pair")
    ax_c.plot(t, np.clip(slf, -50, ymax + 50), color="#9467bd", lw=1.7,
              label="robot–robot, closest pair")
    ax_c.axhline(safety_env * 1e3, color="#1f77b4", ls="--", lw=1.1,
                 label=f"safety distance, world ({safety_env * 1e3:.0f} mm)")
    ax_c.axhline(safety_self * 1e3, color="#9467bd", ls="--", lw=1.1,
                 label=f"safety distance, self ({safety_self * 1e3:.0f} mm)")
    ax_c.axhline(0.0, color="#d62728", lw=0.9, alpha=0.7)
    lowest = float(np.nanmin(np.r_[env, slf, 0.0]))
    ax_c.set_ylim(min(-15.0, lowest - 14.0), ymax)
    ax_c.set_ylabel("clearance [mm]")
    ax_c.legend(loc="upper right", fontsize=8, framealpha=0.92, ncol=2)
    ax_c.grid(alpha=0.3)
    fig.text(0.055, 0.925, "Clearance of every joint state (independent check) and the "
             "filter's safety distances", fontsize=11)

    # the closest approach to the world over every step that moves near it (1, 2, 5a, 5b:
    # the camera box is judged by its true shape), each step's own minimum marked
    env_steps = ("1", "2", "5a", "5b")
    ce = _closest(samples, "env_clearance", env_steps)
    cs = _closest(samples, "self_clearance", ("3a",))
    co = _closest(samples, "self_clearance", ("3b",))
    marks_env = [(_closest(samples, "env_clearance", (k,)), f"{k}: ") for k in env_steps]
    for c, key, color, text in ([(c, "env_clearance", "#1f77b4", label)
                                 for c, label in marks_env]
                                + [(cs, "self_clearance", "#9467bd", "stopped at"),
                                   (co, "self_clearance", "#d62728", "unprotected:")]):
        if c is None:
            continue
        y = c[key] * 1e3
        ax_c.plot([c["t"]], [y], "o", ms=6, mfc="white", mec=color, mew=1.8, zorder=5)
        ax_c.annotate(f"{text}{y:.1f} mm", (c["t"], y),
                      xytext=(7, 4 if key == "env_clearance" else -12),
                      textcoords="offset points", fontsize=8, color=color)

    ax_v.plot(t, np.where(sending, vc, np.nan), color="#7f7f7f", lw=2.6, alpha=0.5,
              label="commanded (into the filter)")
    ax_v.plot(t, vm, color="#2ca02c", lw=0.9, alpha=0.9, zorder=2,
              label="measured (joint states)")
    ax_v.plot(t, np.where(sending, vf, np.nan), color="#ff7f0e", lw=1.2, ls=(0, (4, 2)),
              zorder=3, label="filtered (out to the arm)")
    ax_v.set_ylabel("tool centre speed [m/s]")
    ax_v.set_xlabel("time since start [s]")
    ax_v.legend(loc="upper left", fontsize=8, framealpha=0.92)
    ax_v.grid(alpha=0.3)
    fig.text(0.055, 0.478, "Tool speed: what the client commanded vs what the filter let "
             "through", fontsize=11)
    top = float(np.nanmax(np.r_[vc[sending], vm, 0.1]))
    ax_v.set_ylim(0.0, top * 1.12)
    if len(t):
        ax_v.set_xlim(max(0.0, float(t[0]) - 0.3), float(t[-1]) + 0.3)

    checker = CollisionChecker(robot)
    panels = (
        (ce, "env", "Closest approach to the world (every step)", (0.625, 0.485, 0.375, 0.45),
         (0.22, -0.3, 0.32), 0.52, (26.0, -62.0)),
        (cs, "self", "Wrist folded into the forearm, protection on",
         (0.625, 0.0, 0.375, 0.45), (0.06, 0.0, 1.08), 0.24, (10.0, -72.0)),
    )
    for c, key, title, rect, centre, half, view in panels:
        ax3: Any = fig.add_axes(rect, projection="3d")
        if c is None:
            ax3.set_axis_off()
            continue
        pair_name = str(c[f"{key}_pair"])
        witness = _pair_witness(checker, c["q"], world, pair_name)
        plot_collision_scene(robot, c["q"], world, highlight=pair_name.split("="),
                             witness=witness, ax=ax3)
        _cube_limits(ax3, centre, half, zoom=1.15)
        ax3.view_init(elev=view[0], azim=view[1])
        ax3.set_title(f"{title}\n{pair_name.replace('=', ' – ')}: "
                      f"{c[f'{key}_clearance'] * 1e3:.1f} mm at t = {c['t']:.1f} s",
                      fontsize=10, pad=0)
        for axis in (ax3.xaxis, ax3.yaxis, ax3.zaxis):
            axis.set_ticklabels([])
            axis.label.set_text("")
    passed = sum(s.passed for s in steps)
    fig.text(0.055, 0.965, f"robot_collision demo, default arm + demo world: {passed}/"
             f"{len(steps)} steps as expected", fontsize=13, weight="bold")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=fig.dpi)


def format_summary(steps: Sequence[StepResult]) -> str:
    """The summary table (one line per step)."""
    rows = [("step", "", "result", "min clearance", "time", "")]
    for s in steps:
        kind = f" ({s.clearance_kind})" if s.clearance_kind and s.min_clearance is not None \
            and math.isfinite(s.min_clearance) else ""
        rows.append((s.key, s.title.strip(), ("PASS " if s.passed else "FAIL ") + s.result,
                     fmt_mm(s.min_clearance) + kind, f"{s.duration:5.1f} s",
                     s.details if s.passed else "; ".join(s.failures)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(5)) + "  " + r[5])
        if k == 0:
            lines.append("-" * (sum(widths) + 2 * 5 + 10))
    return "\n".join(line.rstrip() for line in lines)


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value
