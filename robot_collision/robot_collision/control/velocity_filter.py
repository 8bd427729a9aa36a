"""Collision-avoiding velocity filter: a small QP on joint velocities, solved every control tick.

Each tick, for the configuration ``q`` (n,) (rad, or m for prismatic joints), the commanded joint
velocity ``q̇_cmd`` (n,) (rad/s or m/s) and the tick length ``dt`` (s), :class:`VelocityFilter`
returns the joint velocity closest to the command that keeps every monitored pair away from
collision and every joint inside its limits over the tick::

    minimise    Σ_i w_i (q̇_i − q̇_cmd,i)²                     (w = FilterOptions.weights, 1 default)
    subject to  J_ϕ,k q̇ ≥ b_k                for every clearance row k with ϕ_k < d_i     (1)
                lo_i ≤ q̇_i ≤ hi_i             for every protected joint i                  (2)

Everything geometric is in the robot base frame, distances in m, as in
:mod:`robot_collision.collision.clearance`: ϕ_k (m) is the padded signed distance of row k (one row
per
monitored body pair, the minimum over the bodies' shapes) and J_ϕ,k = ∂ϕ_k/∂q (1, n) its
Jacobian, so ϕ̇_k = J_ϕ,k q̇.

Velocity damper (1)
-------------------
The damper (Faverjon & Tournassoud) lets a pair approach at most at a speed that falls linearly
from ξ at the influence distance d_i to 0 at the safety distance d_s::

    −ϕ̇_k ≤ ξ (ϕ_k − d_s) / (d_i − d_s)   ⇔   J_ϕ,k q̇ ≥ b_k = ξ (d_s − ϕ_k) / (d_i − d_s)

Under it, ϕ_k(t) − d_s ≥ (ϕ_k(0) − d_s) exp(−ξ t / (d_i − d_s)): the safety distance is
approached exponentially and never crossed. Self pairs (kind SELF) use ``influence_distance_self``
and ``safety_distance_self``, robot-world pairs (kind ENVIRONMENT) the ``_env`` pair; rows at
ϕ ≥ d_i are not constraints at all. A pair already inside the safety distance (ϕ < d_s, e.g.
a start there) gets b_k > 0: it must separate, at ``min(b_k, recovery_speed)`` so that a deep
start does not fling the arm. Rows whose Jacobian over the protected joints is zero
(‖J‖ ≤ 1e-9, e.g. two bodies moved only by unprotected joints) cannot be influenced and are
dropped.

Discrete time: the controller integrates q ← q + q̇ dt. To first order
ϕ⁺ = ϕ + J_ϕ q̇ dt ≥ ϕ − ξ dt (ϕ − d_s)/(d_i − d_s), which stays above d_s whenever
ξ dt < d_i − d_s (with the defaults ξ dt / (d_i − d_s) ≈ 0.017 at dt = 2 ms). First order
misses the curvature of the witness-point motion (second order in q̇ dt) and the switch of a
row's closest shape pair (a second sphere of the same link pivoting in while the first one is
held). ``discrete_margin`` (m, default 1 mm) is added to both safety distances inside the QP to
absorb these. Measured by the adversarial loops of ``test/test_avoidance.py`` (10⁴ ticks at
2 ms, commands straight into obstacles and into self-collision): without the margin the lowest
pair was 0.03 mm below d_s (default arm) and 0.0 mm below (Panda); with it every pair that
started outside d_s stayed above d_s + 0.3 mm; at dt = 10 ms too. The premise is that no point
of the robot moves more than a small fraction of d_i − d_s in one tick: at dt = 20 ms and full
speed a body moves ~5 cm per tick, jumps from outside d_i to deep inside, and the same loop
lost 3 mm; slower loops need larger influence distances or a smaller ``velocity_scale``.

Several witnesses per pair
--------------------------
A row's distance is the minimum over the two bodies' shapes and features, so it has a kink
where two witnesses are equally close (the two fingers of a gripper against a wall, two spheres
of a link); its Jacobian is the gradient of the closest witness only. Projected onto one
gradient, a command pressing into the obstacle moves the other witness in, which is the closest
one next tick: the output flipped sign every tick (±0.1 rad/s at 500 Hz) and the pair settled
2.4 mm below d_s. The filter therefore remembers the witnesses of recent ticks as pairs of
material points and adds each one still close to the pair's minimum as an extra row
(``_WitnessMemory``: re-evaluated at the current q, never demanding separation, forgotten once
it slid 1 cm along the other body). With every nearly-active witness in the QP, a command
against an unreachable target settles at rest (zero output, no sign changes) and the pair stays
above d_s. A witness is learnt when it first becomes the closest, so while sliding along a
boundary a new one can still cause a single one-tick deviation.

Joint limits (2)
----------------
With v̄_i = velocity_scale × (URDF velocity limit of joint i) and the room left to the limits
s⁺_i = max(upper_i − q_i, 0), s⁻_i = max(q_i − lower_i, 0) (rad or m; 0 outside the limits, so
a joint outside its limits may only move back in, and q̇ = 0 is always inside the box)::

    hi_i = min( v̄_i,  s⁺_i / dt,  κ v̄_i s⁺_i / m  [only where s⁺_i < m] )
    lo_i = max(−v̄_i, −s⁻_i / dt, −κ v̄_i s⁻_i / m  [only where s⁻_i < m] )

The middle term keeps q + q̇ dt inside [lower, upper] over the tick; the last is a damper in the
margin zone m = ``joint_limit_margin`` near each limit that slows the joint linearly to 0 at the
limit (κ = ``joint_limit_gain``, dimensionless; κ = 1 makes the bound continuous at the zone
edge). Continuous joints (infinite limits) only have the velocity bounds; joints without a URDF
velocity limit only the position terms. Unprotected joints (see below) are clipped to the same
box: protection switches off collision avoidance, never the joint limits.

Acceleration limits (3) and stopping distances (4)
--------------------------------------------------
With ``acceleration_limits`` a (n,) (URDF has none: YAML / parameters) the output also changes
by at most a dt per tick, from the previous output v⁻ (the velocity the robot executes; the
filter's last output unless the caller passes it)::

    v⁻_i − a_i dt ≤ q̇_i ≤ v⁻_i + a_i dt,    hi_i ≤ V(s⁺_i; a_i),   lo_i ≥ −V(s⁻_i; a_i)      (3)

(dt in the window is min(dt, ``elapsed``) when the caller sends outputs more often than once per
tick and says how long ago the previous one went out.)
V(g; a) is the largest speed that, lowered by a dt every tick, stops within g (the exact
discrete braking curve: v² + a dt v = 2 a g at whole steps, piecewise linear in between), so a
joint is braked before its position limit at its acceleration limit, and one on the curve can
stay on it (V(g − v dt) = v − a dt). The limit damper never asks to brake harder than a.
For every pair, with a_k = η Σ_i |J_ϕ,k,i| a_i (its braking deceleration when every protected
joint brakes for it, η = ``braking_fraction`` leaving the rest for other pairs)::

    −J_ϕ,k q̇ ≤ min( V(ϕ_k − d_s; a_k),  max(damper of (1), −J_ϕ,k v⁻ − a_k dt) )          (4)

i.e. a pair is never approached faster than it can still be stopped at d_s, and the damper of
(1) never asks for more than a_k. (4) needs the pairs up to d_s + ū (T̄/η + dt) away, where ū
bounds the speed of any robot point this tick (per link Σ_i w_i (‖∂c/∂q_i‖ + r), w = the
reachable joint speeds) and T̄ = max_i w_i / a_i the longest stop; the clearance query grows to
that while the arm is fast (at rest it is the influence distance). A pair inside d_s may not
approach at all. If the rows and (3) cannot all hold (a pair still approaching inside d_s, or
several pairs braking against each other), the per-tick window is widened (×2, 4, 8, 16, then
none but the braking curves, then no acceleration terms): the clearance wins, and
``"acceleration:relaxed"`` is reported (also when a joint's window misses its position-limit
box, e.g. after such a tick: the position limits win). Measured
with the adversarial loops below at a = 10 rad/s²: 3-69 of 10⁴ ticks relaxed, every other tick
within a dt, 0 violations.

Moving away is never slowed
---------------------------
If q̇_cmd satisfies (1) and (2) it is the QP's unique minimiser, and the filter returns it
*bit-for-bit* without calling the solver (no solver tolerance can perturb it). A command that
does not decrease any ϕ (J_ϕ,k q̇_cmd ≥ 0) satisfies every row with ϕ_k ≥ d_s + discrete_margin
(there b_k ≤ 0), so inside the joint box it passes unchanged; only rows already inside the
(internal) safety distance (b_k > 0) can change a receding command, and then only to make it
recede faster, at b_k. Without
rows the QP is separable and its solution is the clip of q̇_cmd to the box, computed directly.

Protection groups
-----------------
Groups (SRDF groups or a mapping given to the filter, e.g. from YAML) can be unprotected with
:meth:`VelocityFilter.set_protection`. A joint is protected when every group that contains it
is enabled (so disabling a sub-group such as ``wrist`` unprotects its joints even while ``arm``
stays enabled). Unprotected joints are removed from the QP variables and pass through unchanged
(clipped to their joint-limit box only). The constraint rows keep only the protected joints'
columns: J_ϕ,k,P q̇_P ≥ b_k. The unprotected joints' contribution J_ϕ,k,U q̇_U is ignored, not
compensated: the protected joints never drive a pair closer than the damper allows, while the
unprotected joints may (that is what switching protection off asks for), and the protected
joints are not dragged around to make room for them.

Faults
------
:meth:`VelocityFilter.filter` never raises for bad numbers: it returns zero velocity with
``ok = False`` and a ``fault`` message starting with one of ``"wrong length"``,
``"non-finite state"``, ``"non-finite command"``, ``"bad dt"``, ``"stale state"``,
``"state out of limits"`` (farther than ``state_limit_tolerance`` outside a position limit),
``"clearance failed"``, ``"non-finite clearance"``, ``"infeasible QP"``, ``"solver failure"``.
A fault also resets the previous output to zero (the robot is told to stop).
The QP is solved with DAQP (dense dual active-set, MIT licence; a few µs for 7-20 variables).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import daqp
import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..collision.clearance import ClearanceTable, clearance_table
from ..errors import ConfigurationError, UnknownNameError
from ..geometry.shapes import WorldObject
from ..model.kinematics import REVOLUTE, KinematicArrays, fk_into, point_jacobian_into

if TYPE_CHECKING:
    from ..collision.checker import CollisionChecker

__all__ = ["FilterOptions", "FilterResult", "VelocityFilter"]

_INF = 1e30  # DAQP's "no bound"
_ZERO_ROW = 1e-9  # rows with ‖J‖ below this (m/rad) cannot be influenced and are dropped
_EXIT_OPTIMAL = 1
_EXIT_INFEASIBLE = -1


@dataclass(frozen=True)
class FilterOptions:
    """Settings of :class:`VelocityFilter` (each default is documented here, once).

    Distances are padded signed distances (m) as in the clearance table.

    - ``influence_distance_self`` = 0.08 m, ``safety_distance_self`` = 0.02 m: self pairs
      (robot-robot) become constraints below d_i and never get closer than d_s.
    - ``influence_distance_env`` = 0.12 m, ``safety_distance_env`` = 0.03 m: the same for
      robot-world pairs (larger: world models are less accurate than the robot's own).
    - ``gain`` ξ = 0.5 m/s: the approach speed allowed at the influence distance. At ξ the
      damper's time constant (d_i − d_s)/ξ is 0.12 s (self) / 0.18 s (world), i.e. braking from
      ξ at about 4 / 3 m/s², within what a 7-DoF arm delivers, and ξ dt/(d_i − d_s) ≈ 0.017 ≪ 1
      at 500 Hz keeps the discrete damper monotone; 0.5 m/s is also the order of collaborative
      tool speeds, so an arm at full speed is slowed without a jolt.
    - ``recovery_speed`` = 0.05 m/s: the largest separation speed demanded from a pair found
      inside its safety distance (0 only forbids it from getting closer).
    - ``discrete_margin`` = 0.001 m: added to both safety distances inside the QP to absorb the
      discrete-time effects described in the module docstring (the reported guarantee is
      ϕ ≥ d_s − 1 mm; the margin makes it ϕ ≳ d_s in practice).
    - ``joint_limit_margin`` = 0.1 rad (m for prismatic): width of the damper zone near each
      position limit.
    - ``joint_limit_gain`` κ = 1.0 (dimensionless): in the zone a joint may approach its limit at
      κ v̄ (room / margin); 1 makes the bound continuous with v̄ at the zone edge.
    - ``velocity_scale`` = 1.0: fraction (0, 1] of the URDF velocity limits used as bounds.
    - ``weights`` = None: per-joint weights w (n,) > 0 of the cost Σ w_i (q̇_i − q̇_cmd,i)²;
      None = all 1.
    - ``max_dt`` = 0.05 s: a tick longer than this is a fault (the state is too old to integrate
      over).
    - ``state_timeout`` = 0.1 s: a state older than this (``stamp_age``) is stale: fault.
    - ``state_limit_tolerance`` = 0.1 rad (m for prismatic joints): a state farther than this
      outside a joint's position limits is not the robot's (a wrong joint mapping, a wrapped
      encoder, another robot's model): fault. Inside the tolerance a joint may move back in.
    - ``acceleration_limits`` = None: joint acceleration limits (rad/s², m/s²), one value for
      every joint or one per joint in model order (``inf`` = that joint is not limited); None =
      no acceleration limits. URDF has none: they come from YAML / parameters. See
      "Acceleration limits" in the module docstring.
    - ``braking_fraction`` η = 0.5: with acceleration limits, the share (0, 1] of a pair's
      full braking deceleration (every protected joint at its limit) that its stopping distance
      is computed with; the rest is left for the other pairs and the joint limits.
    """

    influence_distance_self: float = 0.08
    safety_distance_self: float = 0.02
    influence_distance_env: float = 0.12
    safety_distance_env: float = 0.03
    gain: float = 0.5
    recovery_speed: float = 0.05
    discrete_margin: float = 0.001
    joint_limit_margin: float = 0.1
    joint_limit_gain: float = 1.0
    velocity_scale: float = 1.0
    weights: Optional[tuple[float, ...]] = None
    max_dt: float = 0.05
    state_timeout: float = 0.1
    state_limit_tolerance: float = 0.1
    acceleration_limits: Optional[tuple[float, ...]] = None
    braking_fraction: float = 0.5

    def __post_init__(self) -> None:
        def finite(name: str) -> float:
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise ConfigurationError(f"FilterOptions.{name} must be finite, got {v}")
            return v

        for kind in ("self", "env"):
            di = finite(f"influence_distance_{kind}")
            ds = finite(f"safety_distance_{kind}")
            if not di > ds + finite("discrete_margin"):
                raise ConfigurationError(
                    f"FilterOptions.influence_distance_{kind} ({di} m) must exceed "
                    f"safety_distance_{kind} + discrete_margin ({ds} m + {self.discrete_margin} m)"
                )
        for name in ("gain", "max_dt", "state_timeout", "joint_limit_gain",
                     "state_limit_tolerance"):
            if not finite(name) > 0.0:
                raise ConfigurationError(f"FilterOptions.{name} must be positive")
        for name in ("recovery_speed", "discrete_margin", "joint_limit_margin"):
            if not finite(name) >= 0.0:
                raise ConfigurationError(f"FilterOptions.{name} must be >= 0")
        if not 0.0 < finite("velocity_scale") <= 1.0:
            raise ConfigurationError("FilterOptions.velocity_scale must be in (0, 1]")
        if not 0.0 < finite("braking_fraction") <= 1.0:
            raise ConfigurationError("FilterOptions.braking_fraction must be in (0, 1]")
        if self.acceleration_limits is not None:
            a = np.asarray(self.acceleration_limits, dtype=float)
            if a.ndim != 1 or a.shape[0] == 0 or np.isnan(a).any() or not np.all(a > 0.0):
                raise ConfigurationError(
                    "FilterOptions.acceleration_limits must be positive numbers (rad/s^2 or "
                    f"m/s^2; inf = not limited), one for every joint or one per joint, got "
                    f"{self.acceleration_limits!r}")
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or not np.all(w > 0.0):
                raise ConfigurationError("FilterOptions.weights must be finite positive numbers")


@dataclass(frozen=True)
class FilterResult:
    """Output of one :meth:`VelocityFilter.filter` tick.

    ``velocity`` (n,) joint velocity to send (rad/s or m/s; zeros when not ``ok``); ``fault``
    "" when ok, else why the output is zero; ``active_constraints`` the constraints that changed
    the command (``"link5=box1"`` for a clearance row, ``"joint3:upper"`` / ``"joint3:lower"`` for
    a position-limit bound, ``"joint3:velocity"`` for a velocity bound); ``min_distance`` the
    smallest padded signed distance (m) among the clearance rows within the influence distance,
    including pairs no joint can move (inf when none, nan when not computed); ``scaling`` =
    |velocity| / |q̇_cmd| (1 when q̇_cmd = 0, 0 on a fault);
    ``solve_time`` (s) building and solving the QP; ``clearance_time`` (s) the clearance query
    (FK + distances + Jacobians); ``num_constraints`` the number of clearance rows in the QP.
    """

    velocity: NDArray[np.float64]
    ok: bool
    fault: str = ""
    active_constraints: list[str] = field(default_factory=list)
    min_distance: float = float("nan")
    scaling: float = 1.0
    solve_time: float = 0.0
    num_constraints: int = 0
    clearance_time: float = 0.0


class VelocityFilter:
    """Filters joint-velocity commands so that the robot keeps away from itself and the world.

    ``checker`` supplies the robot (limits, groups) and the clearance table; ``world`` the
    obstacles (base frame); ``groups`` maps group names to joint names (default: the robot's
    SRDF/user groups, ``checker.robot.groups``). See the module docstring for the math.
    """

    def __init__(
        self,
        checker: CollisionChecker,
        options: FilterOptions = FilterOptions(),  # frozen: a shared default is safe
        world: Sequence[WorldObject] = (),
        groups: Optional[Mapping[str, Sequence[str]]] = None,
    ) -> None:
        self.checker = checker
        self.options = options
        robot = checker.robot
        self.robot = robot
        n = robot.num_joints
        self._n = n
        self._names = list(robot.joint_names)
        o = options
        if o.weights is None:
            self._w = np.ones(n)
        else:
            self._w = np.asarray(o.weights, dtype=float)
            if self._w.shape != (n,):
                raise ConfigurationError(
                    f"FilterOptions.weights must have {n} values (joints {', '.join(self._names)})"
                )
        self._lower = np.asarray(robot.lower, dtype=float).copy()
        self._upper = np.asarray(robot.upper, dtype=float).copy()
        vel = np.asarray(robot.velocity_limits, dtype=float)
        self._vbar = np.where(np.isfinite(vel), vel * o.velocity_scale, np.inf)
        m = o.joint_limit_margin
        self._has_damper = np.isfinite(self._vbar) & (m > 0.0)
        self._dgain = np.where(self._has_damper,
                               o.joint_limit_gain * self._vbar / max(m, 1e-300), 0.0)
        src = robot.groups if groups is None else groups
        self._groups: dict[str, NDArray[np.int64]] = {}
        for g, joints in src.items():
            idx = [robot.joint_index(j) for j in joints]  # UnknownNameError for unknown joints
            self._groups[str(g)] = np.array(idx, dtype=np.int64)
        self._protection = {g: True for g in self._groups}
        self._d_infl = max(o.influence_distance_self, o.influence_distance_env)
        self._ds_max = max(o.safety_distance_self, o.safety_distance_env) + o.discrete_margin
        self._params = np.array([
            o.influence_distance_self, o.safety_distance_self + o.discrete_margin,
            o.influence_distance_env, o.safety_distance_env + o.discrete_margin,
            o.gain, o.recovery_speed, o.joint_limit_margin, o.braking_fraction,
        ])
        if o.acceleration_limits is None:
            self._acc = np.full(n, np.inf)
        else:
            acc = np.asarray(o.acceleration_limits, dtype=float)
            if acc.shape == (1,):
                acc = np.full(n, acc[0])
            if acc.shape != (n,):
                raise ConfigurationError(
                    f"FilterOptions.acceleration_limits must have 1 or {n} values (joints "
                    f"{', '.join(self._names)}), got {len(acc)}")
            self._acc = acc
        self._use_acc = bool(np.isfinite(self._acc).any())
        self._prev = np.zeros(n)  # the last output (the velocity the robot now executes)
        self._T = np.empty((len(robot.link_names), 4, 4))
        self._world: list[WorldObject] = []
        self._memory = _WitnessMemory(n)
        self.set_world(world)
        self._update_protection()

    # ------------------------------------------------------------------ configuration
    def set_world(self, world: Sequence[WorldObject], keep_witnesses: bool = False) -> None:
        """Replace the obstacles (base frame).

        The remembered witnesses (see "Several witnesses per pair" in the module docstring)
        are forgotten, since world object indices may now name other objects, unless
        ``keep_witnesses``: the new objects are new measurements of the previous ones, in the
        same order (a camera's next cloud of the same scene). A sensor refreshes its cloud
        several times a second; forgetting every time, the filter lost the witnesses that
        hold a command pressing into the sensed surface at rest, and the arm jerked along
        the surface for a few ticks after every refresh (see :class:`_WitnessMemory`)."""
        objs = list(world)
        for o in objs:
            if not isinstance(o, WorldObject):
                raise ConfigurationError(f"world must hold WorldObject, got {type(o).__name__}")
        self._world = objs
        if not keep_witnesses:
            self._memory.clear()

    def reset(self) -> None:
        """Forget the state carried between ticks: the remembered witnesses, and the previous
        output (the acceleration limits then start from rest)."""
        self._memory.clear()
        self._prev = np.zeros(self._n)

    @property
    def acceleration_limits(self) -> NDArray[np.float64]:
        """(n,) joint acceleration limits in use (rad/s², m/s²; inf = not limited)."""
        return self._acc.copy()

    @property
    def world(self) -> list[WorldObject]:
        return list(self._world)

    def set_protection(self, group: str, enabled: bool) -> None:
        """Switch collision protection of a joint group on or off (joint limits stay on)."""
        if group not in self._groups:
            raise UnknownNameError(
                f"unknown joint group {group!r}; known groups: {', '.join(self._groups) or 'none'}"
            )
        self._protection[group] = bool(enabled)
        self._update_protection()

    @property
    def protection(self) -> dict[str, bool]:
        """Group name -> whether its collision protection is on."""
        return dict(self._protection)

    @property
    def protected_joints(self) -> list[str]:
        """Joints in the QP (every group containing them is enabled)."""
        return [self._names[i] for i in self._pidx]

    def _update_protection(self) -> None:
        mask = np.ones(self._n, dtype=bool)
        for g, on in self._protection.items():
            if not on:
                mask[self._groups[g]] = False
        self._pmask = mask
        self._pidx = np.flatnonzero(mask)
        self._uidx = np.flatnonzero(~mask)
        self._all_protected = bool(mask.all())
        self._all_idx = np.arange(self._n)
        wp = self._w[self._pidx]
        self._H = np.ascontiguousarray(np.diag(wp))
        self._wp = wp

    # ------------------------------------------------------------------ the tick
    def _fault(self, msg: str, min_distance: float = float("nan"), num: int = 0,
               clearance_time: float = 0.0) -> FilterResult:
        self._prev = np.zeros(self._n)  # the robot is told to stop
        return FilterResult(np.zeros(self._n), False, msg, [], min_distance, 0.0, 0.0, num,
                            clearance_time)

    def joint_bounds(self, q: ArrayLike, dt: float, previous: Optional[ArrayLike] = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lo, hi) (n,) joint-velocity box (2) at ``q`` (n,) for a tick of ``dt`` s; with
        acceleration limits also (3) around ``previous`` (n,) (default: the last output)."""
        qa = np.asarray(q, dtype=float)
        prev = self._prev if previous is None else np.asarray(previous, dtype=float)
        lo = np.empty(self._n)
        hi = np.empty(self._n)
        _joint_box(qa, self._lower, self._upper, self._vbar, self._has_damper, self._dgain,
                   self.options.joint_limit_margin, float(dt), lo, hi)
        if self._use_acc:
            _acceleration_box(qa, self._lower, self._upper, self._vbar, self._has_damper,
                              self._dgain, self.options.joint_limit_margin, prev, self._acc,
                              float(dt), float(dt), lo, hi)
        return lo, hi

    def filter(self, q: ArrayLike, qd_cmd: ArrayLike, dt: float,
               stamp_age: float = 0.0, previous: Optional[ArrayLike] = None,
               elapsed: Optional[float] = None) -> FilterResult:
        """Filter one command; see the module docstring. Never raises for bad numbers.

        ``q`` (n,) measured configuration, ``qd_cmd`` (n,) commanded velocity, ``dt`` (s) the tick
        the output will be applied for, ``stamp_age`` (s) how old ``q`` is; a negative age
        (clock skew between machines) is accepted. ``previous`` (n,): the velocity the robot
        executes now (what was last sent), the start of the acceleration limits; default: this
        filter's last output (zeros after a fault). ``elapsed`` (s): time since ``previous`` was
        sent, when outputs go out more often than once per ``dt`` (a node filtering every
        command as it arrives): the output then changes by at most a·min(elapsed, dt).
        """
        n = self._n
        o = self.options
        try:
            qa = np.asarray(q, dtype=float)
            ca = np.asarray(qd_cmd, dtype=float)
            dtf = float(dt)
            age = float(stamp_age)
        except (TypeError, ValueError):
            return self._fault(f"wrong length: q and qd_cmd must be sequences of {n} numbers,"
                               " dt and stamp_age numbers")
        if qa.shape != (n,) or ca.shape != (n,):
            return self._fault(
                f"wrong length: q and qd_cmd must have {n} values (joints {', '.join(self._names)})"
                f", got shapes {qa.shape} and {ca.shape}"
            )
        if not np.isfinite(qa).all():
            return self._fault("non-finite state: q has NaN or inf")
        if not np.isfinite(ca).all():
            return self._fault("non-finite command: qd_cmd has NaN or inf")
        if not (0.0 < dtf <= o.max_dt):  # also false for NaN
            return self._fault(f"bad dt: dt = {dtf} s must be in (0, {o.max_dt}] s")
        if not age <= o.state_timeout:  # also true for NaN
            return self._fault(f"stale state: age {age} s > state_timeout {o.state_timeout} s")
        tol = o.state_limit_tolerance
        outside = np.flatnonzero((qa < self._lower - tol) | (qa > self._upper + tol))
        if outside.shape[0]:
            i = int(outside[0])
            return self._fault(
                f"state out of limits: {self._names[i]} = {qa[i]:.6g} is more than "
                f"state_limit_tolerance {tol:g} outside [{self._lower[i]:.6g}, "
                f"{self._upper[i]:.6g}] ({outside.shape[0]} joints)")
        wdt = dtf
        if elapsed is not None:
            try:
                wdt = min(max(float(elapsed), 0.0), dtf)
            except (TypeError, ValueError):
                return self._fault("bad dt: elapsed must be a number")
            if wdt != wdt:
                return self._fault("bad dt: elapsed is NaN")
        if previous is None:
            prev = self._prev
        else:
            try:
                prev = np.asarray(previous, dtype=float)
            except (TypeError, ValueError):
                prev = np.empty(0)
            if prev.shape != (n,):
                return self._fault(f"wrong length: previous must have {n} values")
            if not np.isfinite(prev).all():
                return self._fault("non-finite command: previous has NaN or inf")

        t0 = time.perf_counter()
        query = self._d_infl
        try:
            if self._use_acc:
                query = max(query, self._ds_max + self._stopping_distance(qa, prev, dtf))
            pd = self.checker.pair_distances(qa, self._world, exhaustive=True, cutoff=query)
            tab = clearance_table(self.robot, pd, query)
        except Exception as exc:  # the filter must not raise in the control loop
            return self._fault(f"clearance failed: {exc}")
        t1 = time.perf_counter()
        tc = t1 - t0
        phi = tab.distances
        near = phi[phi < self._d_infl]
        mind = float(near.min()) if near.shape[0] else math.inf
        # the table's rows plus the remembered witnesses of the same pairs (see "Several
        # witnesses" in the module docstring); src maps each row to its table row (names)
        phi2, kinds2, jac2, src = self._memory.rows(qa, tab, pd.T, self.robot.kin,
                                                     self._d_infl)
        relaxed = False
        for factor in (_RELAX if self._use_acc else (0.0,)):
            # with the acceleration limits first; if they and the rows cannot all hold (a pair
            # approached faster than it can now stop), the clearance wins over the limits,
            # which are widened as little as needed
            use_acc = factor > 0.0
            status, A, bl, bu, out, sel = _build_qp(
                phi2, kinds2, jac2, phi.shape[0], self._pidx, qa, ca, self._lower,
                self._upper, self._vbar, self._has_damper, self._dgain, self._params, dtf,
                prev, self._acc, use_acc, factor * wdt)
            nrows = int(sel.shape[0])
            if status == _NONFINITE:
                return self._fault("non-finite clearance: distance or Jacobian is NaN/inf",
                                   mind, nrows, tc)
            flag = _EXIT_OPTIMAL
            if status == _NEED_QP:
                x0 = ca[self._pidx]
                try:
                    x, _fv, flag, info = daqp.solve(self._H, -self._wp * x0, A, bu, bl)
                except Exception as exc:  # a solver error is a fault, not an exception
                    return self._fault(f"solver failure: {exc}", mind, nrows, tc)
            if flag != _EXIT_INFEASIBLE or not use_acc:
                break
            relaxed = True
        if flag == _EXIT_INFEASIBLE:
            return self._fault(
                "infeasible QP: the clearance rows and joint bounds cannot all hold "
                f"({nrows} rows, closest {mind:.4f} m)", mind, nrows, tc)
        active: list[str] = ["acceleration:relaxed"] if relaxed else []
        np_ = self._pidx.shape[0]
        box_prev = prev if self._use_acc and factor > 0.0 else None
        if status == _NEED_QP:
            x = np.asarray(x, dtype=float)
            if flag != _EXIT_OPTIMAL or not np.isfinite(x).all():
                return self._fault(f"solver failure: DAQP exit flag {flag}", mind, nrows, tc)
            out[self._pidx] = np.minimum(np.maximum(x, bl[:np_]), bu[:np_])
            lam = info["lam"]
            for k in np.flatnonzero(lam[:np_]):
                i = int(self._pidx[k])
                active.append(self._bound_name(i, out[i], bl[k], bu[k], box_prev, wdt))
            for k in np.flatnonzero(lam[np_:]):
                r = int(src[sel[k]])
                name = f"{tab.robot_bodies[r]}={tab.other_bodies[r]}"
                if name not in active:  # several witnesses of one pair: named once
                    active.append(name)
        # joints clipped to the box outside the QP: the unprotected ones, or any joint when the
        # clipped command was the answer
        idx = self._uidx if status == _NEED_QP else self._all_idx
        clipped = idx[out[idx] != ca[idx]]
        if clipped.shape[0]:
            lo, hi = self._box(qa, dtf, box_prev, max(factor, 1.0) * wdt)
            for i in clipped:
                active.append(self._bound_name(int(i), out[i], lo[i], hi[i], box_prev, wdt))
        if self._use_acc and not relaxed and np.any(
                np.abs(out - prev) > self._acc * wdt * (1.0 + 1e-9) + 1e-12):
            # the window missed the position-limit box (the limits won): say so
            active.insert(0, "acceleration:relaxed")
        nc = math.sqrt(float(ca @ ca))
        scaling = math.sqrt(float(out @ out)) / nc if nc > 0.0 else 1.0
        self._prev = out.copy()
        return FilterResult(out, True, "", active, mind, scaling,
                            time.perf_counter() - t1, nrows, tc)

    def _box(self, q: NDArray[np.float64], dt: float, prev: Optional[NDArray[np.float64]],
             wdt: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        lo = np.empty(self._n)
        hi = np.empty(self._n)
        _joint_box(q, self._lower, self._upper, self._vbar, self._has_damper, self._dgain,
                   self.options.joint_limit_margin, dt, lo, hi)
        if prev is not None:
            _acceleration_box(q, self._lower, self._upper, self._vbar, self._has_damper,
                              self._dgain, self.options.joint_limit_margin, prev, self._acc,
                              dt, wdt, lo, hi)
        return lo, hi

    def _stopping_distance(self, q: NDArray[np.float64], prev: NDArray[np.float64],
                           dt: float) -> float:
        """How far (m) beyond the safety distance a pair can be and still need braking this
        tick: ū (T̄/η + dt), with ū a bound on any robot point's speed and T̄ the time the
        slowest joint needs to stop (see "Acceleration limits" in the module docstring)."""
        vb = np.where(np.isfinite(self._vbar), self._vbar, np.inf)
        w = np.minimum(np.abs(prev) + self._acc * dt, vb)  # |q̇| bound this tick
        w = np.where(np.isfinite(w), w, 0.0)
        lim = np.isfinite(self._acc)
        t_stop = float(np.max(w[lim] / self._acc[lim])) if lim.any() else 0.0
        _, rs, _, _ = self.checker.compiled(self._world)
        k = self.robot.kin
        fk_into(q, k.parent, k.jtype, k.origin, k.axis, k.qidx, k.scale, k.offset, self._T)
        u = _speed_bound(self._T, rs.bound_center, rs.bound_radius, k.parent, k.jtype,
                         k.axis, k.qidx, k.scale, w)
        return float(u * (t_stop / self.options.braking_fraction + dt))

    def _bound_name(self, i: int, v: float, lo: float, hi: float,
                    prev: Optional[NDArray[np.float64]] = None, dt: float = 0.0) -> str:
        upper = abs(v - hi) <= abs(v - lo)
        bound = hi if upper else lo
        if prev is not None and math.isfinite(self._acc[i]) and \
                abs(bound - (prev[i] + (1.0 if upper else -1.0) * self._acc[i] * dt)) <= 1e-12:
            return f"{self._names[i]}:acceleration"
        if abs(bound) == self._vbar[i]:
            return f"{self._names[i]}:velocity"
        return f"{self._names[i]}:{'upper' if upper else 'lower'}"


# ---------------------------------------------------------------------- witness memory
_MEMORY_CAPACITY = 64  # remembered witnesses in all (the oldest go first)
_MEMORY_PER_PAIR = 4  # remembered witnesses per body pair
_MEMORY_DRIFT = 0.2  # rad (m): a witness is forgotten once any joint moved this far since
_MEMORY_SLIDE = 0.01  # m: ... or once its robot point moved this far relative to the other body
_SAME_WITNESS = 1e-3  # m: a current witness this close to a remembered one replaces it
_PLAUSIBLE = 5e-4  # m: a remembered witness estimated this far below the pair's minimum is wrong


class _WitnessMemory:
    """Witness points of recent ticks, re-evaluated at the current configuration as extra rows.

    A clearance row is the *closest* shape pair (and closest features) of a body pair, so the
    row's distance is a minimum of smooth functions: where two witnesses are about equally close
    (two fingers of a gripper against a wall, two corners of a box, two spheres of a link) it has
    a kink, and the row's Jacobian is the gradient of one of them only. Projected onto that one
    gradient the command pushes the other witness in; next tick that one is closest, and the
    output flips sign every tick (measured: ±0.1 rad/s on four joints at 500 Hz, and the pair
    settled 2.4 mm below the safety distance by the switching overshoot). Remembering the
    witnesses seen recently gives the QP the gradients of every nearly-active witness at once,
    so it finds the velocity that keeps all of them (at rest: zero).

    A remembered witness is a pair of material points, one on each body (stored in the body's
    frame; a world object's in the base frame), with the unit normal fixed to the other body:
    at q its row is ϕ = n·(p_O − p_R) − pad with Jacobian nᵀ(J_O(p_O) − J_R(p_R)), exact while
    the witness is a vertex against a face (the gripper and box cases) and a first-order
    approximation otherwise (two spheres sliding past each other: the error grows with the square
    of the slide, 0.5 mm after 1 cm for 5 cm spheres). It is forgotten when its robot point slid
    more than ``_MEMORY_SLIDE`` relative to the other body or a joint moved more than
    ``_MEMORY_DRIFT`` since it was seen, when its estimate falls below the pair's (exact)
    minimum by ``_PLAUSIBLE``, when its pair leaves the table, or when the current witness of
    the pair is within ``_SAME_WITNESS`` of it (the current row replaces it). Extra rows only add
    constraints on real points of the robot; the current rows (exact) keep the guarantee.

    Across a refresh of a sensed object (``set_world(..., keep_witnesses=True)``: the next
    cloud of a camera) a remembered point of the old cloud stands for the same surface,
    measured again, and stays under the same rules. One closer than every point of the new
    cloud (the surface moved away, or it was noise) fails the plausibility test at once; one
    that no longer exists but is farther than the new closest point can only hold the robot
    back, never push it, until the robot point moved ``_MEMORY_SLIDE``, four newer witnesses
    of the pair displaced it, or the pair left the table.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.clear()

    def clear(self) -> None:
        n, c = self.n, _MEMORY_CAPACITY
        self.links = np.zeros((c, 2), dtype=np.int64)  # robot link, other link (-1 - k world)
        self.kinds = np.zeros(c, dtype=np.int64)
        # p_R (robot link frame), p_O, n (other body frame), padding, p_R then (other body frame)
        self.geom = np.zeros((c, 13))
        self.q = np.zeros((c, n))
        self.count = 0

    def rows(self, q: NDArray[np.float64], tab: ClearanceTable, T: NDArray[np.float64],
             kin: KinematicArrays, limit: float) -> tuple[
            NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """(ϕ, kinds, J, table row) of the table's rows followed by the remembered witnesses
        still valid at ``q`` (link poses ``T``); remembers the table's rows closer than
        ``limit`` (m)."""
        phi, kinds, jac, src, count = _recall_witnesses(
            q, T, tab.distances, tab.kinds, tab.jacobians, tab.robot_links, tab.other_links,
            tab.witness_robot, tab.witness_other, tab.normals,
            self.links, self.kinds, self.geom, self.q, self.count, float(limit),
            _MEMORY_DRIFT, _MEMORY_SLIDE, _SAME_WITNESS, _MEMORY_PER_PAIR,
            kin.parent, kin.jtype, kin.axis, kin.qidx, kin.scale)
        self.count = int(count)
        return phi, kinds, jac, src


# ---------------------------------------------------------------------- compiled helpers
# per-tick acceleration windows tried: the limit × these factors; 1e9: no window but the braking
# curves; 0: no acceleration terms at all
_RELAX = (1.0, 2.0, 4.0, 8.0, 16.0, 1e9, 0.0)
_CMD_OK = 0  # the (box-clipped) command is the QP's solution: no solver call
_NEED_QP = 1
_NONFINITE = 2


@njit(cache=True, boundscheck=False)
def _joint_box(q, lower, upper, vbar, has_damper, dgain, margin, dt, lo, hi):  # type: ignore[no-untyped-def]
    """Joint-velocity box (2) into ``lo``/``hi`` (n,); see the module docstring."""
    for i in range(q.shape[0]):
        sp = upper[i] - q[i]  # room to the upper limit (inf when unbounded)
        sm = q[i] - lower[i]
        if sp < 0.0:
            sp = 0.0
        if sm < 0.0:
            sm = 0.0
        h = min(vbar[i], sp / dt)
        lw = max(-vbar[i], -sm / dt)
        if has_damper[i]:
            if sp < margin:
                h = min(h, dgain[i] * sp)
            if sm < margin:
                lw = max(lw, -dgain[i] * sm)
        hi[i] = h
        lo[i] = lw


@njit(cache=True, boundscheck=False)
def _v_brake(g, a, dt):  # type: ignore[no-untyped-def]
    """Largest speed v (m/s or rad/s) that, applied for this tick and then lowered by ``a dt``
    every tick of ``dt`` s, covers at most ``g`` before stopping: D(v) ≤ g with
    D(v) = dt Σ_j max(v − j a dt, 0) (piecewise linear, inverted exactly: with
    x = g / (a dt²), k = ⌊(√(8x + 1) − 1) / 2⌋, v = (k / 2 + x / (k + 1)) a dt). Following it
    never needs more than ``a dt`` per tick: D(v) = v dt + D(v − a dt). inf when ``a`` is."""
    if not a < np.inf:
        return np.inf
    if not g > 0.0:
        return 0.0
    step = a * dt
    x = g / (step * dt)
    k = np.floor((np.sqrt(8.0 * x + 1.0) - 1.0) / 2.0)
    while (k + 1.0) * (k + 2.0) / 2.0 <= x:  # rounding of the square root
        k += 1.0
    while k > 0.0 and k * (k + 1.0) / 2.0 > x:
        k -= 1.0
    return (0.5 * k + x / (k + 1.0)) * step


@njit(cache=True, boundscheck=False)
def _acceleration_box(q, lower, upper, vbar, has_damper, dgain, margin, prev, acc, dt,  # type: ignore[no-untyped-def]
                      wdt, lo, hi):
    """The box (3) into ``lo``/``hi`` for the joints with an acceleration limit (the others
    keep (2)): stop before each position limit at the acceleration limit (ticks of ``dt``);
    the limit damper never asks to brake harder than that; change by at most ``acc wdt``
    from ``prev``. Where that window misses the box, its nearest end point (the position
    limits win)."""
    for i in range(q.shape[0]):
        a = acc[i]
        if not a < np.inf:
            continue
        sp = max(upper[i] - q[i], 0.0)
        sm = max(q[i] - lower[i], 0.0)
        h = min(vbar[i], sp / dt, _v_brake(sp, a, dt))
        lw = max(-vbar[i], -sm / dt, -_v_brake(sm, a, dt))
        if has_damper[i]:
            if sp < margin:
                h = min(h, max(dgain[i] * sp, prev[i] - a * wdt))
            if sm < margin:
                lw = max(lw, min(-dgain[i] * sm, prev[i] + a * wdt))
        wl = prev[i] - a * wdt
        wh = prev[i] + a * wdt
        if wl > h:
            lw = h
        elif wh < lw:
            h = lw
        else:
            lw = max(lw, wl)
            h = min(h, wh)
        lo[i] = lw
        hi[i] = h


@njit(cache=True, boundscheck=False)
def _speed_bound(T, bcen, brad, parent, jtype, axis, qidx, scale, w):  # type: ignore[no-untyped-def]
    """Bound (m/s) on the speed of any point of any robot link with geometry when every joint
    i moves at most ``w[i]`` (rad/s, m/s): per link Σ_i w_i (‖∂c/∂q_i‖ + r [revolute]) for its
    enclosing sphere (centre c, radius r); the largest over links."""
    L = T.shape[0]
    n = w.shape[0]
    J3 = np.zeros((3, n))
    c = np.empty(3)
    best = 0.0
    for lk in range(L):
        if brad[lk] < 0.0:
            continue
        for a in range(3):
            c[a] = (T[lk, a, 0] * bcen[lk, 0] + T[lk, a, 1] * bcen[lk, 1]
                    + T[lk, a, 2] * bcen[lk, 2] + T[lk, a, 3])
        J3[:, :] = 0.0
        point_jacobian_into(T, lk, c, parent, jtype, axis, qidx, scale, 1.0, J3)
        u = 0.0
        for i in range(n):
            u += w[i] * np.sqrt(J3[0, i] ** 2 + J3[1, i] ** 2 + J3[2, i] ** 2)
        i = lk
        while i > 0:
            if jtype[i] == REVOLUTE:
                u += w[qidx[i]] * abs(scale[i]) * brad[lk]
            i = parent[i]
        best = max(best, u)
    return best


@njit(cache=True, boundscheck=False)
def _build_qp(phi, kinds, jac, exact, pidx, q, cmd, lower, upper, vbar,  # type: ignore[no-untyped-def]
              has_damper, dgain, params, dt, prev, acc, use_acc, wdt):
    """Rows (1) and box (2) of the QP over the protected joints ``pidx`` (p,).

    Rows from ``exact`` on are remembered witnesses (:class:`_WitnessMemory`): they never
    demand a separation (b ≤ 0), the pair's current row does that. With ``use_acc`` the box has
    the acceleration terms (3) around ``prev`` (a window of ± acc ``wdt``) and the rows the
    stopping-distance bound (4).

    Returns ``(status, A (m, p), blower (p + m,), bupper (p + m,), out (n,), sel (m,))``:
    ``sel`` are the clearance-table rows kept; ``out`` is the command clipped to the box, the
    final answer when ``status == _CMD_OK`` (the clipped command satisfies every row and, when
    there are rows, no protected joint was clipped).
    """
    n = q.shape[0]
    p = pidx.shape[0]
    R = phi.shape[0]
    di_s, ds_s, di_e, ds_e, gain, vrec, margin, eta = (
        params[0], params[1], params[2], params[3], params[4], params[5], params[6], params[7])
    lo = np.empty(n)
    hi = np.empty(n)
    _joint_box(q, lower, upper, vbar, has_damper, dgain, margin, dt, lo, hi)
    if use_acc:
        _acceleration_box(q, lower, upper, vbar, has_damper, dgain, margin, prev, acc, dt, wdt,
                          lo, hi)
    out = np.empty(n)
    for i in range(n):
        out[i] = min(max(cmd[i], lo[i]), hi[i])
    keep = np.empty(R, dtype=np.int64)
    bvals = np.empty(R)
    m = 0
    for r in range(R):
        if kinds[r] == 0:
            di, ds = di_s, ds_s
        else:
            di, ds = di_e, ds_e
        d = phi[r]
        if d != d:
            return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
        if not d < di and not use_acc:
            continue
        if not d > -1e300:
            return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
        big = 0.0
        for k in range(p):
            v = jac[r, pidx[k]]
            if not abs(v) < 1e300:
                return _NONFINITE, np.empty((0, p)), lo, hi, out, keep[:0]
            big = max(big, abs(v))
        if big <= _ZERO_ROW:
            continue  # the protected joints cannot change this distance
        if not use_acc:
            b = min(gain * (ds - d) / (di - ds), vrec)
            if r >= exact:
                b = min(b, 0.0)
        else:
            # the pair's braking deceleration (4) and its largest approach speed this tick
            ar = 0.0
            reach = 0.0
            sep = 0.0
            for k in range(p):
                aj = abs(jac[r, pidx[k]])
                if aj > 0.0:
                    ar += aj * acc[pidx[k]]
                reach += aj * max(abs(lo[pidx[k]]), abs(hi[pidx[k]]))
                sep += jac[r, pidx[k]] * prev[pidx[k]]
            ar *= eta
            g = d - ds
            if g > 0.0:
                # the damper, but never asking to brake harder than ar; the stopping distance
                # is kept either way
                allow = _v_brake(g, ar, dt)
                if d < di:
                    allow = min(allow, max(gain * g / (di - ds), -sep - ar * wdt))
                if not allow < reach:
                    continue  # cannot bind this tick
                b = -allow
            else:
                b = min(gain * (ds - d) / (di - ds), vrec)
                if r >= exact:
                    b = min(b, 0.0)
                # no faster separation than reachable this tick, and never closer (if the pair
                # is still approaching, the acceleration limits give way)
                b = max(min(b, sep + ar * wdt), 0.0)
        keep[m] = r
        bvals[m] = b
        m += 1
    A = np.empty((m, p))
    bl = np.empty(p + m)
    bu = np.empty(p + m)
    feasible = True
    for k in range(p):
        i = pidx[k]
        bl[k] = max(lo[i], -_INF)
        bu[k] = min(hi[i], _INF)
        if m > 0 and out[i] != cmd[i]:
            feasible = False
    for j in range(m):
        r = keep[j]
        s = 0.0
        for k in range(p):
            a = jac[r, pidx[k]]
            A[j, k] = a
            s += a * cmd[pidx[k]]
        bl[p + j] = bvals[j]
        bu[p + j] = _INF
        if not s >= bvals[j]:
            feasible = False
    return (_CMD_OK if feasible else _NEED_QP), A, bl, bu, out, keep[:m]


@njit(cache=True, boundscheck=False)
def _to_local(T, link, p, out):  # type: ignore[no-untyped-def]
    """``out`` = point ``p`` (3,) of the base frame in the frame of ``link`` (base if < 0)."""
    if link < 0:
        for a in range(3):
            out[a] = p[a]
        return
    for a in range(3):
        out[a] = (T[link, 0, a] * (p[0] - T[link, 0, 3]) + T[link, 1, a] * (p[1] - T[link, 1, 3])
                  + T[link, 2, a] * (p[2] - T[link, 2, 3]))


@njit(cache=True, boundscheck=False)
def _to_base(T, link, p, point, out):  # type: ignore[no-untyped-def]
    """``out`` = ``p`` (3,) given in the frame of ``link`` (base if < 0) in the base frame;
    ``point``: a point (rotation and translation) or a direction (rotation only)."""
    if link < 0:
        for a in range(3):
            out[a] = p[a]
        return
    for a in range(3):
        out[a] = T[link, a, 0] * p[0] + T[link, a, 1] * p[1] + T[link, a, 2] * p[2]
        if point:
            out[a] += T[link, a, 3]


@njit(cache=True, boundscheck=False)
def _recall_witnesses(q, T, phi, kinds, jac, rlink, olink, w_robot, w_other, normal,  # type: ignore[no-untyped-def]
                      m_links, m_kinds, m_geom, m_q, count, limit, drift, slide, same, per_pair,
                      parent, jtype, axis, qidx, scale):
    """Rows of the table followed by the remembered witnesses still valid at ``q``, and the
    memory updated in place (see :class:`_WitnessMemory`); returns ``(phi, kinds, jac, src,
    count)`` with ``src`` the table row of every row (its pair's name)."""
    R = phi.shape[0]
    n = q.shape[0]
    C = m_kinds.shape[0]
    # the table's witnesses in body frames (to compare with and to remember)
    G = m_geom.shape[1]
    cur = np.empty((R, G))
    for r in range(R):
        o = olink[r]
        _to_local(T, rlink[r], w_robot[r], cur[r, 0:3])
        _to_local(T, o, w_other[r], cur[r, 3:6])
        _to_local(T, o, w_robot[r], cur[r, 10:13])
        if o < 0:
            for a in range(3):
                cur[r, 6 + a] = normal[r, a]
        else:
            for a in range(3):
                cur[r, 6 + a] = (T[o, 0, a] * normal[r, 0] + T[o, 1, a] * normal[r, 1]
                                 + T[o, 2, a] * normal[r, 2])
        gap = 0.0
        for a in range(3):
            gap += normal[r, a] * (w_other[r, a] - w_robot[r, a])
        cur[r, 9] = gap - phi[r]  # the padding
    keep = np.empty(count, dtype=np.int64)
    est = np.empty(count)
    row_of = np.empty(count, dtype=np.int64)
    ejac = np.zeros((count, n))
    J3 = np.zeros((3, n))
    pr = np.empty(3)
    po = np.empty(3)
    nb = np.empty(3)
    e = 0
    for j in range(count):
        moved = 0.0
        for i in range(n):
            moved = max(moved, abs(q[i] - m_q[j, i]))
        if not moved <= drift:
            continue
        row = -1
        for r in range(R):
            if rlink[r] == m_links[j, 0] and olink[r] == m_links[j, 1]:
                row = r
                break
        if row < 0 or not phi[row] < limit:
            continue  # the pair is no longer close
        d2 = 0.0
        for a in range(6):
            d2 += (cur[row, a] - m_geom[j, a]) ** 2
        if d2 <= 2.0 * same * same:
            continue  # the current witness is this one
        rl = m_links[j, 0]
        ol = m_links[j, 1]
        _to_base(T, rl, m_geom[j, 0:3], True, pr)
        _to_local(T, ol, pr, nb)
        moved = 0.0
        for a in range(3):
            moved += (nb[a] - m_geom[j, 10 + a]) ** 2
        if not moved <= slide * slide:
            continue  # slid too far along the other body for its normal to hold
        _to_base(T, ol, m_geom[j, 3:6], True, po)
        _to_base(T, ol, m_geom[j, 6:9], False, nb)
        v = -m_geom[j, 9]
        for a in range(3):
            v += nb[a] * (po[a] - pr[a])
        J3[:, :] = 0.0
        point_jacobian_into(T, rl, pr, parent, jtype, axis, qidx, scale, -1.0, J3)
        if ol >= 0:
            point_jacobian_into(T, ol, po, parent, jtype, axis, qidx, scale, 1.0, J3)
        for i in range(n):
            ejac[e, i] = nb[0] * J3[0, i] + nb[1] * J3[1, i] + nb[2] * J3[2, i]
        if v < phi[row] - _PLAUSIBLE:
            continue  # below the pair's (exact) minimum: the estimate no longer holds
        keep[e] = j
        est[e] = max(v, phi[row])
        row_of[e] = row
        e += 1
    out_phi = np.empty(R + e)
    out_kinds = np.empty(R + e, dtype=np.int64)
    out_jac = np.empty((R + e, n))
    src = np.empty(R + e, dtype=np.int64)
    for r in range(R):
        out_phi[r] = phi[r]
        out_kinds[r] = kinds[r]
        src[r] = r
        for i in range(n):
            out_jac[r, i] = jac[r, i]
    for k in range(e):
        out_phi[R + k] = est[k]
        out_kinds[R + k] = m_kinds[keep[k]]
        src[R + k] = row_of[k]
        for i in range(n):
            out_jac[R + k, i] = ejac[k, i]
    # new memory, newest first: this tick's close rows, then the kept witnesses (at most
    # per_pair per pair, C in all); the kept entries are copied before being overwritten
    old_links = m_links[keep[:e]].copy()
    old_kinds = m_kinds[keep[:e]].copy()
    old_geom = m_geom[keep[:e]].copy()
    old_q = m_q[keep[:e]].copy()
    c = 0
    for r in range(R):
        if c >= C:
            break
        if not phi[r] < limit:
            continue
        m_links[c, 0] = rlink[r]
        m_links[c, 1] = olink[r]
        m_kinds[c] = kinds[r]
        for a in range(G):
            m_geom[c, a] = cur[r, a]
        for i in range(n):
            m_q[c, i] = q[i]
        c += 1
    for k in range(e):
        if c >= C:
            break
        same_pair = 0
        for j in range(c):
            if m_links[j, 0] == old_links[k, 0] and m_links[j, 1] == old_links[k, 1]:
                same_pair += 1
        if same_pair >= per_pair:
            continue
        m_links[c, 0] = old_links[k, 0]
        m_links[c, 1] = old_links[k, 1]
        m_kinds[c] = old_kinds[k]
        for a in range(G):
            m_geom[c, a] = old_geom[k, a]
        for i in range(n):
            m_q[c, i] = old_q[k, i]
        c += 1
    return out_phi, out_kinds, out_jac, src, c
