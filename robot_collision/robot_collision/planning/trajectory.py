"""Time parameterization of joint-space paths (trajectory_msgs/JointTrajectory semantics).

Units: rad, rad/s, rad/s^2 for revolute/continuous joints (m, m/s, m/s^2 for prismatic ones), s
for times. A path is a (k, n) array of waypoints, columns in ``RobotModel.joint_names`` order;
the result holds samples (K, n) of positions, velocities and accelerations with their
``times`` (K,) from the start, like ``JointTrajectoryPoint.time_from_start``. It starts and
ends at rest and passes through every waypoint (each waypoint is a sample; see
``waypoint_indices``).

Methods:

- ``"toppra"`` (default): time-optimal parameterization (TOPP-RA, the ``toppra`` package) of a
  cubic spline through the waypoints under per-joint velocity and acceleration limits. The spline
  may leave the straight segments between waypoints; with a ``checker`` the spline is densely
  collision-checked and, where it collides, the path is refined (midpoints inserted on the
  offending segments) and re-timed, falling back to ``"linear"`` if that does not help (or if
  the straight segment itself touches an obstacle at that density).

With ``edge_validation="certified"`` (default) these checks are certified over the whole
motion (:mod:`robot_collision.collision.certified`): each cubic piece between two samples is
proven free as its chord widened by a tube that bounds its distance from the chord
(``h^2 / 8`` times the piece's largest acceleration, per joint), with ``min_clearance`` (m) to
spare, and so are the straight segments the fallback follows. ``"discrete"`` checks
configurations every ``resolution`` (joint-space L2): a motion may then graze an obstacle
between two checked configurations (sub-millimetre at 1/32 rad for an arm of ~1 m reach).
- ``"linear"``: straight segments with a synchronised trapezoidal velocity profile on each,
  stopping at every waypoint. Follows exactly the path the planner checked.

Limits hold at every returned sample, also by finite differences of the positions: after
parameterizing, time is stretched uniformly by the smallest factor that brings every sampled
velocity and acceleration (analytic and finite-difference) within the limits.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..collision.certified import first_uncertified
from ..errors import ConfigurationError
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from .paths import _first_invalid

__all__ = [
    "TimedTrajectory",
    "time_parameterize",
    "DEFAULT_ACCELERATION_LIMIT",
    "MAX_SAMPLES",
    "DEFAULT_VELOCITY_LIMIT",
]

DEFAULT_ACCELERATION_LIMIT = 2.0
"""Acceleration limit (rad/s^2 or m/s^2) of every joint when none is given (URDF has none)."""
DEFAULT_VELOCITY_LIMIT = 1.0
"""Velocity limit (rad/s or m/s) for joints whose URDF velocity limit is missing (0) or not
finite."""
MAX_SAMPLES = 100_000
"""Default most samples of a timed trajectory (1000 s at the default 10 ms sample period)."""

Method = Literal["toppra", "linear"]


@dataclass(frozen=True)
class TimedTrajectory:
    """A time-parameterized path: ``positions``, ``velocities``, ``accelerations`` (K, n) at
    ``times`` (K,) s from the start; ``waypoint_indices`` (k,) are the samples at the input
    waypoints; ``method`` the method that produced it."""

    joint_names: list[str]
    positions: NDArray[np.float64]
    velocities: NDArray[np.float64]
    accelerations: NDArray[np.float64]
    times: NDArray[np.float64]
    waypoint_indices: NDArray[np.int64]
    method: str = "toppra"

    @property
    def duration(self) -> float:
        """Total time, s."""
        return float(self.times[-1]) if len(self.times) else 0.0

    def __len__(self) -> int:
        return len(self.times)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def _limits(
    robot: RobotModel,
    velocity_scaling: float,
    acceleration_limits: Union[float, ArrayLike, None],
    acceleration_scaling: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    n = robot.num_joints
    for name, v in (("velocity_scaling", velocity_scaling),
                    ("acceleration_scaling", acceleration_scaling)):
        if not (np.isfinite(v) and 0.0 < v <= 1.0):
            raise ConfigurationError(f"{name} must be in (0, 1], got {v!r}")
    vl = np.asarray(robot.velocity_limits, dtype=float).copy()
    vl[~(np.isfinite(vl) & (vl > 0))] = DEFAULT_VELOCITY_LIMIT
    if acceleration_limits is None:
        al = np.full(n, DEFAULT_ACCELERATION_LIMIT)
    else:
        al = np.broadcast_to(np.asarray(acceleration_limits, dtype=float), (n,)).copy() \
            if np.ndim(acceleration_limits) in (0, 1) else np.zeros(0)
        if al.shape != (n,) or not np.all(np.isfinite(al) & (al > 0)):
            raise ConfigurationError(
                f"acceleration_limits must be a positive number or {n} positive numbers "
                f"(rad/s^2 or m/s^2), got {acceleration_limits!r}"
            )
    return vl * velocity_scaling, al * acceleration_scaling


def _check_duration(P: NDArray[np.float64], vl: NDArray[np.float64], al: NDArray[np.float64],
                    sample_period: float, max_samples: int, velocity_scaling: float,
                    acceleration_scaling: float) -> None:
    """Raise ``ConfigurationError`` when the trajectory through ``P`` must last longer than
    ``max_samples`` samples: every joint needs at least travel / v and, from rest to rest,
    2 sqrt(travel / a) for its total travel."""
    travel = np.abs(np.diff(P, axis=0)).sum(axis=0) if len(P) > 1 else np.zeros(P.shape[1])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        need = np.maximum(travel / vl, 2.0 * np.sqrt(travel / al))
        need = np.where(travel > 0, need, 0.0)
        t_min = float(np.max(need)) if need.size else 0.0
    if not t_min / sample_period <= max_samples:
        raise ConfigurationError(
            f"the trajectory would last at least {t_min:.3g} s at velocity_scaling "
            f"{velocity_scaling:g} and acceleration_scaling {acceleration_scaling:g}: more than "
            f"max_samples={max_samples:,} samples of {sample_period:g} s; use larger scalings "
            "(or a longer sample_period)")


def _prepare_path(path: ArrayLike, robot: RobotModel) -> NDArray[np.float64]:
    P = np.array(path, dtype=float, copy=True)
    n = robot.num_joints
    if P.ndim != 2 or P.shape[1] != n or len(P) < 1:
        raise ConfigurationError(f"path must be a (k, {n}) array with k >= 1, got {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ConfigurationError("path has non-finite values")
    cont = robot.is_continuous
    if cont.any():  # unwrap continuous joints: no 2 pi jumps between waypoints
        for i in range(1, len(P)):
            d = P[i] - P[i - 1]
            d = np.where(cont, d - 2 * np.pi * np.floor((d + np.pi) / (2 * np.pi)), d)
            P[i] = P[i - 1] + d
    return P


def _dedupe(P: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Drop repeated consecutive waypoints; returns (kept, index of the kept one for each)."""
    keep = [0]
    owner = [0]
    for i in range(1, len(P)):
        if np.linalg.norm(P[i] - P[keep[-1]]) > 1e-12:
            keep.append(i)
        owner.append(len(keep) - 1)
    return P[keep], np.asarray(owner, dtype=np.int64)


def _sample_times(knots: NDArray[np.float64], dt: float) -> tuple[NDArray[np.float64],
                                                                  NDArray[np.int64]]:
    """Sample times every ``dt`` plus every knot time; returns (times, index of each knot)."""
    T = float(knots[-1])
    uniform = np.arange(0.0, T, dt) if T > 0 else np.zeros(1)
    # drop uniform samples closer than dt/100 to a knot (no near-zero intervals)
    j = np.clip(np.searchsorted(knots, uniform), 1, len(knots) - 1) if len(knots) > 1 else None
    if j is not None:
        gap = np.minimum(np.abs(uniform - knots[j - 1]), np.abs(uniform - knots[j]))
        uniform = uniform[gap >= dt * 1e-2]
    ts = np.union1d(uniform, knots)
    idx = np.searchsorted(ts, knots)
    return ts, idx.astype(np.int64)


def _finite_differences(P: NDArray[np.float64], t: NDArray[np.float64]) -> tuple[
        NDArray[np.float64], NDArray[np.float64]]:
    """(first differences (K-1, n), second divided differences x 2 (K-2, n))."""
    if len(t) < 2:
        return np.zeros((0, P.shape[1])), np.zeros((0, P.shape[1]))
    h = np.diff(t)[:, None]
    v = np.diff(P, axis=0) / h
    if len(t) < 3:
        return v, np.zeros((0, P.shape[1]))
    a = 2.0 * (v[1:] - v[:-1]) / (h[1:] + h[:-1])
    return v, a


def _stretch(traj: TimedTrajectory, vl: NDArray[np.float64], al: NDArray[np.float64]) -> \
        TimedTrajectory:
    """Uniform time scaling so that every sampled and finite-difference velocity and
    acceleration is within the limits."""
    P, t = traj.positions, traj.times
    if len(t) < 2:
        return traj
    vfd, afd = _finite_differences(P, t)
    rv = max(float(np.max(np.abs(traj.velocities) / vl)), float(np.max(np.abs(vfd) / vl)))
    ra = float(np.max(np.abs(traj.accelerations) / al))
    if len(afd):
        ra = max(ra, float(np.max(np.abs(afd) / al)))
    f = max(1.0, rv, np.sqrt(ra))
    if f <= 1.0:
        return traj
    f *= 1.0 + 1e-9
    return TimedTrajectory(traj.joint_names, P, traj.velocities / f, traj.accelerations / f**2,
                           t * f, traj.waypoint_indices, traj.method)


# ------------------------------------------------------------------------------------------
# linear (stop at waypoints)
# ------------------------------------------------------------------------------------------
def _linear(P: NDArray[np.float64], vl: NDArray[np.float64], al: NDArray[np.float64], dt: float,
            names: list[str]) -> TimedTrajectory:
    n = P.shape[1]
    if len(P) == 1:
        z = np.zeros((1, n))
        return TimedTrajectory(names, P.copy(), z, z.copy(), np.zeros(1), np.zeros(1, np.int64),
                               "linear")
    seg_T = []
    profiles = []
    for a, b in itertools.pairwise(P):
        d = b - a
        ad = np.abs(d)
        m = ad > 0
        vs = float(np.min(vl[m] / ad[m]))  # path speed limit (s in [0, 1] per second)
        acs = float(np.min(al[m] / ad[m]))
        if vs * vs / acs >= 1.0:  # triangle: never reaches vs
            tp = np.sqrt(1.0 / acs)
            vpk = acs * tp
            Tseg = 2.0 * tp
            tc = 0.0
        else:
            tp = vs / acs
            vpk = vs
            tc = (1.0 - vs * tp) / vs
            Tseg = 2.0 * tp + tc
        seg_T.append(Tseg)
        profiles.append((tp, tc, vpk, acs))
    knots = np.concatenate([[0.0], np.cumsum(seg_T)])
    ts, widx = _sample_times(knots, dt)
    pos = np.empty((len(ts), n))
    vel = np.empty((len(ts), n))
    acc = np.empty((len(ts), n))
    seg = np.clip(np.searchsorted(knots, ts, side="right") - 1, 0, len(seg_T) - 1)
    for i, t in enumerate(ts):
        k = int(seg[i])
        tp, tc, vpk, acs = profiles[k]
        tau = min(max(t - knots[k], 0.0), seg_T[k])
        if tau < tp:
            s, sd, sdd = 0.5 * acs * tau * tau, acs * tau, acs
        elif tau <= tp + tc:
            s, sd, sdd = 0.5 * acs * tp * tp + vpk * (tau - tp), vpk, 0.0
        else:
            r = seg_T[k] - tau
            s, sd, sdd = 1.0 - 0.5 * acs * r * r, acs * r, -acs
        d = P[k + 1] - P[k]
        pos[i] = P[k] + d * s
        vel[i] = d * sd
        acc[i] = d * sdd
    pos[widx] = P  # exact waypoints
    vel[widx] = 0.0
    vel[-1] = 0.0
    return TimedTrajectory(names, pos, vel, acc, ts, widx, "linear")


# ------------------------------------------------------------------------------------------
# toppra (spline through the waypoints)
# ------------------------------------------------------------------------------------------
def _toppra(P: NDArray[np.float64], vl: NDArray[np.float64], al: NDArray[np.float64], dt: float,
            names: list[str], grid_per_segment: int) -> Optional[TimedTrajectory]:
    import toppra  # heavy import, only when used
    import toppra.algorithm
    import toppra.constraint

    logging.getLogger("toppra").setLevel(logging.ERROR)
    n = P.shape[1]
    ss_w = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
    path = toppra.SplineInterpolator(ss_w, P, bc_type="clamped")
    # gridpoints: every waypoint plus a uniform subdivision of each segment
    grid = [np.linspace(ss_w[i], ss_w[i + 1], grid_per_segment + 1)[:-1]
            for i in range(len(ss_w) - 1)]
    gridpoints = np.concatenate([*grid, ss_w[-1:]])
    pc_v = toppra.constraint.JointVelocityConstraint(np.stack([-vl, vl], axis=1))
    pc_a = toppra.constraint.JointAccelerationConstraint(np.stack([-al, al], axis=1))
    algo = toppra.algorithm.TOPPRA([pc_v, pc_a], path, gridpoints=gridpoints,
                                   parametrizer="ParametrizeConstAccel")
    algo.compute_parameterization(0.0, 0.0)
    data = algo.problem_data
    if data.return_code != toppra.algorithm.ParameterizationReturnCode.Ok or data.sd_vec is None:
        return None
    sd = np.maximum(np.asarray(data.sd_vec, dtype=float), 0.0)
    ss = gridpoints
    ds = np.diff(ss)
    denom = sd[:-1] + sd[1:]
    if np.any(denom <= 0):
        return None
    t_grid = np.concatenate([[0.0], np.cumsum(2.0 * ds / denom)])
    u = (sd[1:] ** 2 - sd[:-1] ** 2) / (2.0 * ds)  # constant path acceleration per interval
    wp_grid = np.searchsorted(ss, ss_w)
    ts, widx = _sample_times(t_grid[wp_grid], dt)
    k = np.clip(np.searchsorted(t_grid, ts, side="right") - 1, 0, len(ds) - 1)
    tau = ts - t_grid[k]
    s = np.minimum(ss[k] + sd[k] * tau + 0.5 * u[k] * tau * tau, ss[-1])
    sdot = np.maximum(sd[k] + u[k] * tau, 0.0)
    s[widx] = ss_w
    sdot[widx[[0, -1]]] = 0.0
    q = path(s)
    qs = path(s, 1)
    qss = path(s, 2)
    pos = np.asarray(q, dtype=float).reshape(len(ts), n)
    vel = np.asarray(qs, dtype=float).reshape(len(ts), n) * sdot[:, None]
    acc = (np.asarray(qss, dtype=float).reshape(len(ts), n) * (sdot**2)[:, None]
           + np.asarray(qs, dtype=float).reshape(len(ts), n) * u[k][:, None])
    pos[widx] = P
    vel[widx[[0, -1]]] = 0.0
    return TimedTrajectory(names, pos, vel, acc, ts, widx, "toppra")


Scene = tuple[NDArray[np.float64], NDArray[np.int64], bool]
Certify = Optional[float]  # None: discrete checks; else certified with this clearance (m)


def _certified(scene: Scene, Q0: NDArray[np.float64], D: NDArray[np.float64],
               tube: NDArray[np.float64], clearance: float) -> bool:
    """Every motion ``Q0[k] + t * D[k]`` (and its ``tube``) certified free."""
    F, I, check_self = scene
    c = np.ascontiguousarray
    return bool(first_uncertified(c(Q0, dtype=float), c(D, dtype=float), c(tube, dtype=float),
                                  F, I, check_self, float(clearance)) < 0)


def _piece_tubes(t: NDArray[np.float64], pos: NDArray[np.float64],
                 vel: NDArray[np.float64]) -> NDArray[np.float64]:
    """(m - 1, n) per-joint bound of how far each cubic Hermite piece between samples k and k + 1
    strays from its chord: the deviation e vanishes at both ends and e'' = q'' is linear on the
    piece, so |e| <= h^2 / 8 * max(|q''(0)|, |q''(h)|); a relative 1e-9 + 1e-12 rad for
    round-off."""
    h = np.diff(t)[:, None]
    dp = np.diff(pos, axis=0)
    v0, v1 = vel[:-1], vel[1:]
    hs = np.where(h > 0, h, 1.0)
    a0 = (6.0 * dp / hs - 4.0 * v0 - 2.0 * v1) / hs
    a1 = (-6.0 * dp / hs + 2.0 * v0 + 4.0 * v1) / hs
    dev = h * h / 8.0 * np.maximum(np.abs(a0), np.abs(a1))
    return dev * (1.0 + 1e-9) + 1e-12


def _collides(scene: Scene, Q: NDArray[np.float64]) -> bool:
    F, I, check_self = scene
    return bool(_first_invalid(F, I, np.ascontiguousarray(Q, dtype=float), check_self) >= 0)


def _spline_collisions(traj: TimedTrajectory, P: NDArray[np.float64], scene: Scene,
                       resolution: float, certify: Certify = None) -> NDArray[np.bool_]:
    """Per input segment: does the timed motion collide (checked every ``resolution``; or, with
    ``certify``, not certified free piece by piece)?"""
    import scipy.interpolate

    bad = np.zeros(len(P) - 1, dtype=bool)
    t, pos, vel = traj.times, traj.positions, traj.velocities
    if certify is not None:
        tubes = _piece_tubes(t, pos, vel)
        for i in range(len(P) - 1):
            a, b = traj.waypoint_indices[i], traj.waypoint_indices[i + 1]
            if b > a and not _certified(scene, pos[a:b], np.diff(pos[a : b + 1], axis=0),
                                        tubes[a:b], certify):
                bad[i] = True
        return bad
    spl = scipy.interpolate.CubicHermiteSpline(t, pos, vel)
    for i in range(len(P) - 1):
        a, b = traj.waypoint_indices[i], traj.waypoint_indices[i + 1]
        seg = pos[a : b + 1]
        length = float(np.linalg.norm(np.diff(seg, axis=0), axis=1).sum())
        m = max(2, int(np.ceil(2.0 * length / resolution)) + 1)
        Q = spl(np.linspace(t[a], t[b], m))
        Q = np.vstack([Q, seg])
        if _collides(scene, Q):
            bad[i] = True
    return bad


def _straight_collides(P: NDArray[np.float64], bad: NDArray[np.bool_], scene: Scene,
                       resolution: float, certify: Certify = None) -> bool:
    """Whether a straight segment flagged ``bad`` collides at the spline check's density (with
    ``certify``: is not certified free)."""
    if certify is not None:
        idx = np.flatnonzero(bad)
        return not _certified(scene, P[idx], P[idx + 1] - P[idx], np.zeros((len(idx), P.shape[1])),
                              certify)
    for i in np.flatnonzero(bad):
        d = P[i + 1] - P[i]
        m = max(2, int(np.ceil(2.0 * float(np.linalg.norm(d)) / resolution)) + 1)
        Q = P[i] + d * np.linspace(0.0, 1.0, m)[:, None]
        if _collides(scene, Q):
            return True
    return False


# ------------------------------------------------------------------------------------------
# public entry point
# ------------------------------------------------------------------------------------------
def _samples_valid(
    positions: NDArray[np.float64],
    checker: object,
    world: Sequence[object],
    resolution: float,
    ignore_self: bool,
    scene: Optional[Scene] = None,
    certify: Certify = None,
) -> bool:
    """Independent check of what a controller will see: every sample and the straight
    joint-space lines between consecutive samples, at ``resolution`` (rad, L2); with
    ``certify`` the lines are certified free instead."""
    if certify is not None and scene is not None:
        return _certified(scene, positions[:-1], np.diff(positions, axis=0),
                          np.zeros((len(positions) - 1, positions.shape[1])), certify)
    pts = [positions[:1]]
    for a, b in itertools.pairwise(positions):
        k = max(1, int(np.ceil(float(np.linalg.norm(b - a)) / resolution)))
        t = np.arange(1, k + 1)[:, None] / k
        pts.append(a + t * (b - a))
    dense = np.ascontiguousarray(np.concatenate(pts))
    ok = checker.is_valid_batch(dense, world, ignore_self=ignore_self)  # type: ignore[attr-defined]
    return bool(np.all(ok))


def time_parameterize(
    path: ArrayLike,
    robot: RobotModel,
    velocity_scaling: float = 1.0,
    acceleration_limits: Union[float, ArrayLike, None] = None,
    *,
    acceleration_scaling: float = 1.0,
    method: Method = "toppra",
    sample_period: float = 0.01,
    checker: Optional[object] = None,
    world: Sequence[WorldObject] = (),
    ignore_self: bool = False,
    resolution: float = 1.0 / 32.0,
    max_refinements: int = 4,
    grid_per_segment: int = 40,
    max_samples: int = MAX_SAMPLES,
    edge_validation: Literal["certified", "discrete"] = "certified",
    min_clearance: float = 0.0,
) -> TimedTrajectory:
    """Time-parameterize a (k, n) path within ``robot.velocity_limits * velocity_scaling`` and
    ``acceleration_limits * acceleration_scaling`` (scalar or (n,); default
    :data:`DEFAULT_ACCELERATION_LIMIT`).

    Samples come every ``sample_period`` s plus one at each waypoint. ``method``: ``"toppra"``
    or ``"linear"`` (module docstring). With ``checker`` (a ``CollisionChecker`` of ``robot``)
    and ``"toppra"``, the spline between waypoints is collision-checked against ``world`` and
    refined: certified free over the whole motion with ``min_clearance`` (m) to spare
    (``edge_validation="certified"``, default), or at configurations every ``resolution``
    (joint-space L2; ``"discrete"``); the returned ``method`` says which parameterization was
    kept. Continuous joints are unwrapped first.

    Before any sampling, a lower bound of the duration (each joint's travel at the scaled
    velocity and acceleration limits) is compared with ``max_samples`` samples: a longer
    trajectory (tiny scalings) is a ``ConfigurationError`` instead of an allocation that grows
    with 1 / scaling.
    """
    names = list(robot.joint_names)
    P0 = _prepare_path(path, robot)
    vl, al = _limits(robot, velocity_scaling, acceleration_limits, acceleration_scaling)
    if not (np.isfinite(sample_period) and sample_period > 0):
        raise ConfigurationError(f"sample_period must be a positive number of seconds, got "
                                 f"{sample_period!r}")
    if edge_validation not in ("certified", "discrete"):
        raise ConfigurationError(f"edge_validation must be 'certified' or 'discrete', got "
                                 f"{edge_validation!r}")
    if not (np.isfinite(min_clearance) and min_clearance >= 0.0) or (
            min_clearance > 0.0 and edge_validation != "certified"):
        raise ConfigurationError("min_clearance must be a finite number >= 0 (m), with "
                                 "edge_validation='certified'")
    certify: Certify = float(min_clearance) if edge_validation == "certified" else None
    if method not in ("toppra", "linear"):
        raise ConfigurationError(f"method must be 'toppra' or 'linear', got {method!r}")
    if checker is not None and getattr(checker, "robot", None) is not robot:
        raise ConfigurationError("checker must be a CollisionChecker of the same robot model")
    P, owner = _dedupe(P0)
    n = P.shape[1]
    _check_duration(P, vl, al, sample_period, max_samples, velocity_scaling,
                    acceleration_scaling)
    if len(P) == 1:
        z = np.zeros((1, n))
        traj = TimedTrajectory(names, P.copy(), z, z.copy(), np.zeros(1),
                               np.zeros(len(P0), dtype=np.int64), "linear")
        return traj

    def finish(tr: TimedTrajectory, Pused: NDArray[np.float64], orig_rows: NDArray[np.int64]) -> \
            TimedTrajectory:
        tr = _stretch(tr, vl, al)
        # map the input waypoints (repeated ones share a sample) to sample indices
        widx = tr.waypoint_indices[orig_rows][owner]
        return TimedTrajectory(tr.joint_names, tr.positions, tr.velocities, tr.accelerations,
                               tr.times, widx.astype(np.int64), tr.method)

    rows = np.arange(len(P), dtype=np.int64)  # where the deduplicated waypoints sit in Pcur
    scene: Optional[Scene] = None
    if checker is not None:
        F, I = checker.packed(world)  # type: ignore[attr-defined]
        scene = (F, I, not ignore_self)
    if method == "toppra":
        Pcur = P
        for _ in range(max(0, int(max_refinements)) + 1):
            tr = _toppra(Pcur, vl, al, sample_period, names, int(grid_per_segment))
            if tr is None:
                break
            tr = _stretch(tr, vl, al)
            if scene is None:
                return finish(tr, Pcur, rows)
            bad = _spline_collisions(tr, Pcur, scene, resolution, certify)
            if not bad.any():
                if _samples_valid(tr.positions, checker, world, resolution, ignore_self, scene,
                                  certify):
                    return finish(tr, Pcur, rows)
                break  # final guard: the emitted samples (and straight lines between them)
                # must be collision-free too; otherwise fall back to exact straight segments
            if _straight_collides(Pcur, bad, scene, resolution, certify):
                break  # the straight segment itself grazes an obstacle: refining cannot help
            # insert the midpoint of every colliding segment (and of its neighbours)
            grow = bad.copy()
            grow[1:] |= bad[:-1]
            grow[:-1] |= bad[1:]
            new_rows = []
            pts = [Pcur[0]]
            for i in range(len(Pcur) - 1):
                if grow[i]:
                    pts.append(0.5 * (Pcur[i] + Pcur[i + 1]))
                pts.append(Pcur[i + 1])
            Pnew = np.array(pts)
            # locate the original waypoints in the refined path
            j = 0
            for r in range(len(Pnew)):
                if j < len(P) and np.array_equal(Pnew[r], P[j]):
                    new_rows.append(r)
                    j += 1
            rows = np.asarray(new_rows, dtype=np.int64)
            Pcur = Pnew
    tr = _linear(P, vl, al, sample_period, names)
    return finish(tr, P, np.arange(len(P), dtype=np.int64))
