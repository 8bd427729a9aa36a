"""Inverse kinematics (damped least squares) and workspace goal regions.

Units: rad for revolute/continuous joints, m for prismatic joints and positions; poses are
(4, 4) homogeneous matrices in the robot base frame. Configurations are (n,) arrays in
``RobotModel.joint_names`` order.

:func:`solve_ik` finds a configuration whose end-effector body frame reaches a target pose:
Levenberg-Marquardt damped least squares on the 6-D pose error (position error in m, rotation
error as a rotation vector in rad, both in the base frame) with joint-limit clamping and random
restarts, optionally rejecting configurations that collide (self and world).

:class:`WorkspaceGoalRegion` (MATLAB ``workspaceGoalRegion`` semantics) describes a set of
end-effector poses: ``reference_pose @ Tw @ end_effector_offset_pose`` with ``Tw`` any pose whose
translation (x, y, z, m) and intrinsic z-y-x Euler angles (rad) lie within ``bounds`` (6, 2).

The compiled helpers here (a seedable splitmix64 random stream kept in a (1,) uint64 array and a
monotonic clock readable from nopython code) are shared with :mod:`robot_collision.planning.rrt`.
They
keep compiled planners reproducible and thread-safe: each caller owns its random state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..collision.kernels import _valid_at
from ..collision.scene_packing import unpack_scene
from ..errors import ConfigurationError, UnknownNameError
from ..geometry.shapes import WorldObject
from ..geometry.transforms import euler_zyx_to_matrix, matrix_to_euler_zyx
from ..model.kinematics import REVOLUTE, fk_into, point_jacobian_into
from ..model.robot_model import RobotModel

__all__ = [
    "WorkspaceGoalRegion",
    "solve_ik",
    "pose_error",
    "new_rng_state",
]

RNGLike = Union[np.random.Generator, int, None]

_TWO_PI = 2.0 * np.pi

FASTMATH = {"nsz", "arcp", "contract", "afn"}
"""LLVM fast-math flags of the planning kernels: no ``reassoc`` (vectorised reductions would
sum in an alignment-dependent order, so seeded runs would differ in the last bit) and no
``nnan``/``ninf`` (infinities are meaningful)."""


# ------------------------------------------------------------------------------------------
# compiled utilities: random stream
# ------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _next_u64(state):  # type: ignore[no-untyped-def]
    """splitmix64 step on ``state`` (1,) uint64."""
    s = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = s
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def rand01(state):  # type: ignore[no-untyped-def]
    """Uniform float in [0, 1) from the random stream ``state``."""
    return np.float64(_next_u64(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def new_rng_state(seed: Optional[int] = None) -> tuple[NDArray[np.uint64], int]:
    """A (1,) uint64 random state for the compiled helpers and the seed it came from
    (fresh OS entropy when ``seed`` is None)."""
    if seed is None:
        seed = int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF  # type: ignore[arg-type]
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    return np.array([s], dtype=np.uint64), s


def _seed_from(rng: RNGLike) -> int:
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63 - 1))
    if rng is None:
        return new_rng_state(None)[1]
    return int(rng)


# ------------------------------------------------------------------------------------------
# compiled pose algebra
# ------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _rotation_log(R, out, o):  # type: ignore[no-untyped-def]
    """Rotation vector (axis * angle, rad) of the 3x3 rotation ``R`` into ``out[o:o+3]``."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    c = 0.5 * (tr - 1.0)
    if c > 1.0:
        c = 1.0
    elif c < -1.0:
        c = -1.0
    th = np.arccos(c)
    vx = R[2, 1] - R[1, 2]
    vy = R[0, 2] - R[2, 0]
    vz = R[1, 0] - R[0, 1]
    if th < 1e-7:
        out[o] = 0.5 * vx
        out[o + 1] = 0.5 * vy
        out[o + 2] = 0.5 * vz
        return
    if th > np.pi - 1e-4:
        # R ~ 2 a a^T - I: take the axis from the largest diagonal entry
        i = 0
        if R[1, 1] > R[i, i]:
            i = 1
        if R[2, 2] > R[i, i]:
            i = 2
        a = np.empty(3)
        ai = np.sqrt(max(0.5 * (R[i, i] + 1.0), 1e-30))
        for j in range(3):
            a[j] = ai if j == i else 0.25 * (R[i, j] + R[j, i]) / ai
        # keep the sign consistent with the skew part when it is informative
        if a[0] * vx + a[1] * vy + a[2] * vz < 0.0:
            for j in range(3):
                a[j] = -a[j]
        nrm = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
        for j in range(3):
            out[o + j] = th * a[j] / nrm
        return
    k = th / (2.0 * np.sin(th))
    out[o] = k * vx
    out[o + 1] = k * vy
    out[o + 2] = k * vz


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _pose_error_into(Tc, Tt, e, Rtmp):  # type: ignore[no-untyped-def]
    """``e`` (6,) = (target - current position, log(R_target R_current^T)), base frame."""
    for a in range(3):
        e[a] = Tt[a, 3] - Tc[a, 3]
    for a in range(3):
        for b in range(3):
            Rtmp[a, b] = Tt[a, 0] * Tc[b, 0] + Tt[a, 1] * Tc[b, 1] + Tt[a, 2] * Tc[b, 2]
    _rotation_log(Rtmp, e, 3)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _matmul4(A, B, out):  # type: ignore[no-untyped-def]
    for a in range(4):
        for b in range(4):
            out[a, b] = (A[a, 0] * B[0, b] + A[a, 1] * B[1, b] + A[a, 2] * B[2, b]
                         + A[a, 3] * B[3, b])


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _jacobian6(T, link, parent, jtype, axis, qidx, scale, J):  # type: ignore[no-untyped-def]
    """Geometric Jacobian (6, n) of ``link``'s frame origin: rows 0-2 linear velocity, rows 3-5
    angular velocity, base frame."""
    n = J.shape[1]
    for a in range(6):
        for j in range(n):
            J[a, j] = 0.0
    point = np.empty(3)
    for a in range(3):
        point[a] = T[link, a, 3]
    point_jacobian_into(T, link, point, parent, jtype, axis, qidx, scale, 1.0, J[:3])
    i = link
    while i > 0:
        if jtype[i] == REVOLUTE:
            col = qidx[i]
            k = scale[i]
            for a in range(3):
                J[3 + a, col] += k * (T[i, a, 0] * axis[i, 0] + T[i, a, 1] * axis[i, 1]
                                      + T[i, a, 2] * axis[i, 2])
        i = parent[i]


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _solve_spd6(A, b, y):  # type: ignore[no-untyped-def]
    """Solve ``A y = b`` for a symmetric positive definite (6, 6) ``A`` (Cholesky, in place)."""
    m = 6
    for j in range(m):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s <= 1e-300:
            s = 1e-300
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, m):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / d
    for i in range(m):
        t = b[i]
        for k in range(i):
            t -= A[i, k] * y[k]
        y[i] = t / A[i, i]
    for i in range(m - 1, -1, -1):
        t = y[i]
        for k in range(i + 1, m):
            t -= A[k, i] * y[k]
        y[i] = t / A[i, i]


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _ik_dls(target, link, q, lo, hi, cont, parent, jtype, origin, axis, qidx, scale, offset,  # type: ignore[no-untyped-def]
            max_iter, tol_p, tol_r, T, J, A, e, qn, y, Rtmp):
    """Levenberg-Marquardt damped least squares from ``q`` (updated in place) towards the pose
    ``target`` (4, 4) of body ``link``; joints clamped into [lo, hi] (continuous joints free).
    Returns True when position error < tol_p (m) and rotation error < tol_r (rad)."""
    n = q.shape[0]
    fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
    _pose_error_into(T[link], target, e, Rtmp)
    err = 0.0
    for a in range(6):
        err += e[a] * e[a]
    mu = 1e-2
    for _ in range(max_iter):
        ep = e[0] * e[0] + e[1] * e[1] + e[2] * e[2]
        er = e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
        if ep < tol_p * tol_p and er < tol_r * tol_r:
            return True
        _jacobian6(T, link, parent, jtype, axis, qidx, scale, J)
        for a in range(6):
            for b in range(a + 1):
                s = 0.0
                for j in range(n):
                    s += J[a, j] * J[b, j]
                A[a, b] = s
                A[b, a] = s
            A[a, a] += mu
        _solve_spd6(A, e, y)
        step = 0.0
        for j in range(n):
            s = 0.0
            for a in range(6):
                s += J[a, j] * y[a]
            qn[j] = s
            step += s * s
        if step > 0.25:  # at most 0.5 rad (L2) per step
            f = 0.5 / np.sqrt(step)
            for j in range(n):
                qn[j] *= f
        for j in range(n):
            v = q[j] + qn[j]
            if not cont[j]:
                if v < lo[j]:
                    v = lo[j]
                elif v > hi[j]:
                    v = hi[j]
            qn[j] = v
        fk_into(qn, parent, jtype, origin, axis, qidx, scale, offset, T)
        _pose_error_into(T[link], target, y, Rtmp)  # y reused as trial error
        err_new = 0.0
        for a in range(6):
            err_new += y[a] * y[a]
        if err_new < err:
            for j in range(n):
                q[j] = qn[j]
            for a in range(6):
                e[a] = y[a]
            err = err_new
            mu = max(mu * 0.3, 1e-7)
        else:
            mu *= 10.0
            if mu > 1e4:
                break
            fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
    ep = e[0] * e[0] + e[1] * e[1] + e[2] * e[2]
    er = e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
    return ep < tol_p * tol_p and er < tol_r * tol_r


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _wrap_continuous(q, cont):  # type: ignore[no-untyped-def]
    for j in range(q.shape[0]):
        if cont[j]:
            q[j] -= 2.0 * np.pi * np.floor((q[j] + np.pi) / (2.0 * np.pi))


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _random_config(slo, shi, rng, out):  # type: ignore[no-untyped-def]
    for j in range(out.shape[0]):
        out[j] = slo[j] + rand01(rng) * (shi[j] - slo[j])


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _euler_zyx_into(a, b, c, out):  # type: ignore[no-untyped-def]
    """Top-left 3x3 of ``out`` = Rz(a) Ry(b) Rx(c)."""
    ca, sa = np.cos(a), np.sin(a)
    cb, sb = np.cos(b), np.sin(b)
    cc, sc = np.cos(c), np.sin(c)
    out[0, 0] = ca * cb
    out[0, 1] = ca * sb * sc - sa * cc
    out[0, 2] = ca * sb * cc + sa * sc
    out[1, 0] = sa * cb
    out[1, 1] = sa * sb * sc + ca * cc
    out[1, 2] = sa * sb * cc - ca * sc
    out[2, 0] = -sb
    out[2, 1] = cb * sc
    out[2, 2] = cb * cc


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def wgr_sample_into(ref, bounds, off, rng, Tw, tmp, out):  # type: ignore[no-untyped-def]
    """Sample a pose of the region (``ref @ Tw @ off``) into ``out`` (4, 4)."""
    v = np.empty(6)
    for k in range(6):
        v[k] = bounds[k, 0] + rand01(rng) * (bounds[k, 1] - bounds[k, 0])
    _euler_zyx_into(v[3], v[4], v[5], Tw)
    for a in range(3):
        Tw[a, 3] = v[a]
        Tw[3, a] = 0.0
    Tw[3, 3] = 1.0
    _matmul4(ref, Tw, tmp)
    _matmul4(tmp, off, out)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _ik_solve_kernel(target, link, q_seed, use_seed, lo, hi, cont, slo, shi, parent, jtype,  # type: ignore[no-untyped-def]
                     origin, axis, qidx, scale, offset, F, I, use_checker, check_self,
                     max_attempts, max_iter, tol_p, tol_r, rng, out):
    """Restarted DLS IK. Returns (status, attempts): status 1 = solution in ``out``,
    0 = no convergence, 2 = converged only in collision."""
    n = q_seed.shape[0]
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    J = np.empty((6, n))
    A = np.empty((6, 6))
    e = np.empty(6)
    y = np.empty(6)
    qn = np.empty(n)
    Rtmp = np.empty((3, 3))
    q = np.empty(n)
    collided = False
    if use_checker:
        _kin, rs, ws, pr = unpack_scene(F, I)
        S = rs.kind.shape[0]
    else:
        S = 1
    SP = np.empty((S, 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    for att in range(max_attempts):
        if att == 0 and use_seed:
            for j in range(n):
                q[j] = q_seed[j]
        else:
            _random_config(slo, shi, rng, q)
        ok = _ik_dls(target, link, q, lo, hi, cont, parent, jtype, origin, axis, qidx, scale,
                     offset, max_iter, tol_p, tol_r, T, J, A, e, qn, y, Rtmp)
        if not ok:
            continue
        _wrap_continuous(q, cont)
        if use_checker:
            fk_into(q, parent, jtype, origin, axis, qidx, scale, offset, T)
            if not _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
                collided = True
                continue
        for j in range(n):
            out[j] = q[j]
        return 1, att + 1
    return (2 if collided else 0), max_attempts


# ------------------------------------------------------------------------------------------
# Python API
# ------------------------------------------------------------------------------------------
def pose_error(current: ArrayLike, target: ArrayLike) -> tuple[float, float]:
    """(position error in m, rotation angle error in rad) between two (4, 4) poses."""
    Tc = np.ascontiguousarray(current, dtype=float)
    Tt = np.ascontiguousarray(target, dtype=float)
    e = np.empty(6)
    _pose_error_into(Tc, Tt, e, np.empty((3, 3)))
    return float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:]))


def _as_pose(value: ArrayLike, what: str) -> NDArray[np.float64]:
    T = np.ascontiguousarray(value, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ConfigurationError(f"{what} must be a finite (4, 4) homogeneous transform")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise ConfigurationError(f"{what} must have a proper rotation (orthonormal, det +1)")
    return T


def _angle_in(a: float, lo: float, hi: float, tol: float) -> bool:
    """Whether some a + 2 pi k lies in [lo - tol, hi + tol]."""
    k = np.ceil((lo - tol - a) / _TWO_PI)
    return bool(a + k * _TWO_PI <= hi + tol)


@dataclass(frozen=True, eq=False)
class WorkspaceGoalRegion:
    """A set of goal poses for body ``end_effector``.

    ``bounds`` (6, 2) rows: x, y, z (m) and z, y, x Euler angles (rad, intrinsic z-y-x: Rz Ry
    Rx) of the sampled frame ``Tw`` relative to ``reference_pose`` (4, 4, base frame); the
    end-effector body frame must equal ``reference_pose @ Tw @ end_effector_offset_pose``.
    Angle bounds are at most 2 pi wide. Defaults: identity reference and offset, zero bounds
    (a single pose).
    """

    end_effector: str
    reference_pose: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))
    bounds: NDArray[np.float64] = field(default_factory=lambda: np.zeros((6, 2)))
    end_effector_offset_pose: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))

    def __post_init__(self) -> None:
        if not isinstance(self.end_effector, str) or not self.end_effector:
            raise ConfigurationError("end_effector must be the name of a robot body")
        ref = _as_pose(self.reference_pose, "reference_pose")
        off = _as_pose(self.end_effector_offset_pose, "end_effector_offset_pose")
        b = np.ascontiguousarray(self.bounds, dtype=float)
        if b.shape != (6, 2) or not np.all(np.isfinite(b)):
            raise ConfigurationError(
                "bounds must be a finite (6, 2) array: rows x, y, z (m), rot z, rot y, rot x "
                f"(rad), columns (min, max); got shape {b.shape}"
            )
        if np.any(b[:, 0] > b[:, 1]):
            raise ConfigurationError(f"bounds need min <= max in every row, got {b.tolist()}")
        if np.any(b[3:, 1] - b[3:, 0] > _TWO_PI + 1e-9):
            raise ConfigurationError("angle bounds must be at most 2*pi wide")
        for name, v in (("reference_pose", ref), ("bounds", b), ("end_effector_offset_pose", off)):
            v.setflags(write=False)
            object.__setattr__(self, name, v)

    def sample_pose(self, rng: RNGLike = None) -> NDArray[np.float64]:
        """A random end-effector body pose (4, 4) of the region (uniform in ``bounds``)."""
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        v = gen.uniform(self.bounds[:, 0], self.bounds[:, 1])
        Tw = np.eye(4)
        Tw[:3, :3] = euler_zyx_to_matrix([float(x) for x in v[3:]])
        Tw[:3, 3] = v[:3]
        out: NDArray[np.float64] = self.reference_pose @ Tw @ self.end_effector_offset_pose
        return out

    def region_coordinates(self, pose: ArrayLike) -> NDArray[np.float64]:
        """(x, y, z, rot z, rot y, rot x) of ``Tw`` for an end-effector body pose (4, 4)."""
        T = np.asarray(pose, dtype=float)
        Tw = np.linalg.inv(self.reference_pose) @ T @ np.linalg.inv(self.end_effector_offset_pose)
        return np.r_[Tw[:3, 3], matrix_to_euler_zyx(Tw[:3, :3])]

    def contains(self, pose: ArrayLike, tol: float = 1e-6) -> bool:
        """Whether the end-effector body pose (4, 4) lies in the region (``tol`` in m and rad;
        angles compared modulo 2 pi, both z-y-x Euler solutions tried)."""
        c = self.region_coordinates(pose)
        b = self.bounds
        if np.any(c[:3] < b[:3, 0] - tol) or np.any(c[:3] > b[:3, 1] + tol):
            return False
        a, p, r = c[3:]
        for sol in ((a, p, r), (a + np.pi, np.pi - p, r + np.pi)):
            if all(_angle_in(float(sol[k]), b[3 + k, 0], b[3 + k, 1], tol) for k in range(3)):
                return True
        return False

    def packed(self) -> NDArray[np.float64]:
        """(44,) float array: reference pose (16), bounds (12), offset pose (16)."""
        parts = (self.reference_pose, self.bounds, self.end_effector_offset_pose)
        return np.concatenate([p.ravel() for p in parts])


def solve_ik(
    robot: RobotModel,
    target_pose: ArrayLike,
    end_effector: str,
    q_seed: Optional[ArrayLike] = None,
    *,
    checker: Optional[object] = None,
    world: Sequence[WorldObject] = (),
    ignore_self: bool = False,
    max_attempts: int = 20,
    max_iterations: int = 150,
    position_tolerance: float = 1e-5,
    orientation_tolerance: float = 1e-4,
    rng: RNGLike = None,
) -> Optional[NDArray[np.float64]]:
    """A configuration (n,) whose body ``end_effector`` is at ``target_pose`` (4, 4, base frame)
    within the tolerances (m, rad), inside the joint limits and, with a ``checker``
    (:class:`~robot_collision.collision.checker.CollisionChecker` of the same robot), collision-free
    against ``world``; None when ``max_attempts`` restarts (the first from ``q_seed`` if given,
    then uniform random configurations) all fail. Continuous joints come back in [-pi, pi).
    """
    T = _as_pose(target_pose, "target_pose")
    link = robot.link_index(end_effector)
    if link == 0:
        raise UnknownNameError(f"end_effector {end_effector!r} is the base; choose a moving body")
    n = robot.num_joints
    use_seed = q_seed is not None
    seed = robot.validate_configuration(q_seed, "q_seed") if q_seed is not None else np.zeros(n)
    if max_attempts < 1 or max_iterations < 1:
        raise ConfigurationError("max_attempts and max_iterations must be >= 1")
    if checker is not None:
        if getattr(checker, "robot", None) is not robot:
            raise ConfigurationError("checker must be a CollisionChecker of the same robot model")
        F, I = checker.packed(world)  # type: ignore[attr-defined]
    else:
        F, I = np.zeros(1), np.zeros(1, dtype=np.int64)
    state, _ = new_rng_state(_seed_from(rng))
    slo, shi = robot.sampling_bounds()
    k = robot.kin
    out = np.empty(n)
    status, _att = _ik_solve_kernel(
        T, link, seed, use_seed, robot.lower, robot.upper, robot.is_continuous, slo, shi,
        k.parent, k.jtype, k.origin, k.axis, k.qidx, k.scale, k.offset, F, I, checker is not None,
        not ignore_self, int(max_attempts), int(max_iterations), float(position_tolerance),
        float(orientation_tolerance), state, out,
    )
    return out if status == 1 else None

