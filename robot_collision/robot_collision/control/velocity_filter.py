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
dropped; the world pairs of links fixed to the base (a base plate on its table) are not even
computed (``pair_distances(moving_only=True)``: with a sensed table under the base they were
40 % of the clearance query's time against a 1 M-point camera cloud).

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

Late states
-----------
A joint state is a measurement of the past: ``stamp_age`` old when it is filtered (transport,
a lagging driver, a slow publisher). The robot kept moving meanwhile, under the commands in
force since. The caller passes ``motion_bound`` (n,): how far each joint may have moved since
the measurement (the node: the largest speed it commanded over that time × the age). For every
link the filter bounds how far its geometry can have moved, u_L = Σ_i Δ_i (‖∂c_L/∂q_i‖ + r_L)
(centre c_L and radius r_L of the link's enclosing sphere; the radius term for revolute joints;
first order in Δ, whose second-order remainder is absorbed by ``discrete_margin`` at the few-cm
displacements a state timeout allows), and lowers each row's distance by the motion of its
bodies (u_R for a robot-world row, u_R + u_O for a self row): ϕ_k − u is a lower bound on the
distance *now*, and the damper acts on it. The joint-limit box (2) likewise takes each joint to
be up to Δ_i nearer its limits. A late state therefore slows the arm near obstacles and limits
(by as much as it may have moved unseen), never lets it past them. A state older than
``state_timeout`` is a fault (zeros).

No deadlock near contact
------------------------
A pair found inside its safety distance must separate at up to ``recovery_speed`` (b_k > 0).
Where its joints cannot give that (the pair barely moves, or separating it pushes another pair
in, or the joint box forbids it), the QP is infeasible. The filter then lowers the demanded
separation (×0.5, ×0.25, then 0) before it gives up: at 0, every row only forbids coming closer
and q̇ = 0 satisfies all of them and the joint box, so the QP is always feasible; a command that
brings no pair closer passes unchanged and one that does is projected, never zeroed.
``"recovery:relaxed"`` is reported in the active constraints. Pairs whose safety distance
cannot be reached anywhere in the joint ranges (two links a few mm apart by design, measured at
load by :mod:`robot_collision.collision.pair_ranges`) can be *held*
(:meth:`VelocityFilter.set_hold_pairs`): never asked to separate, their current distance is
their floor.

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

This module is the filter itself (:class:`VelocityFilter`); its options and result live in
:mod:`.filter_options` (re-exported here), the compiled boxes and QP assembly in
:mod:`.filter_kernels`, the witness memory in :mod:`.witness_memory`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Optional

import daqp
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..collision.clearance import clearance_table
from ..collision.results import PairDistances
from ..errors import ConfigurationError, UnknownNameError
from ..geometry.shapes import WorldObject
from ..model.kinematics import fk_into
from .filter_kernels import (
    _NEED_QP,
    _NONFINITE,
    _acceleration_box,
    _build_qp,
    _joint_box,
    _link_motion_bounds,
    _speed_bound,
)
from .filter_options import FilterOptions, FilterResult
from .witness_memory import _WitnessMemory

if TYPE_CHECKING:
    from ..collision.checker import CollisionChecker

__all__ = ["FilterOptions", "FilterResult", "VelocityFilter"]

_EXIT_OPTIMAL = 1
_EXIT_INFEASIBLE = -1
# per-tick acceleration windows tried: the limit × these factors; 1e9: no window but the braking
# curves; 0: no acceleration terms at all
_RELAX = (1.0, 2.0, 4.0, 8.0, 16.0, 1e9, 0.0)
# separation demands of pairs inside their safety distance tried when the QP is infeasible:
# recovery_speed × these factors; 0: no pair may come closer, none has to separate (always
# feasible: q̇ = 0 satisfies every row and the joint box)
_RECOVERY = (1.0, 0.5, 0.25, 0.0)


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
        L = len(robot.link_names)
        self._T = np.empty((L, 4, 4))
        self._hold = np.zeros((L, L), dtype=np.bool_)  # self pairs held where they are
        self._link_motion = np.zeros(L)
        self._world: list[WorldObject] = []
        # the last tick's pair distances, whose arrays the next tick on the same world list
        # overwrites (pair_distances' out=: no six new arrays per tick); read within a tick only
        self._pd: Optional[PairDistances] = None
        self._pd_world: Optional[list[WorldObject]] = None
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

    def set_hold_pairs(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Self pairs (link names) whose safety distance cannot be reached anywhere in the joint
        ranges (e.g. two links a few mm apart by design): they are never asked to separate,
        only never to come closer than they are (their current distance is their floor).
        Replaces the previous set; see :func:`robot_collision.collision.pair_ranges`."""
        links = self.robot.link_names
        hold = np.zeros((len(links), len(links)), dtype=np.bool_)
        for a, b in pairs:
            for name in (a, b):
                if name not in links:
                    raise UnknownNameError(f"hold pair names unknown link {name!r}")
            i, j = links.index(a), links.index(b)
            hold[i, j] = hold[j, i] = True
        self._hold = hold

    @property
    def hold_pairs(self) -> list[tuple[str, str]]:
        """The self pairs held where they are (see :meth:`set_hold_pairs`)."""
        links = self.robot.link_names
        ii, jj = np.nonzero(np.triu(self._hold))
        return [(links[i], links[j]) for i, j in zip(ii.tolist(), jj.tolist())]

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
               elapsed: Optional[float] = None,
               motion_bound: Optional[ArrayLike] = None) -> FilterResult:
        """Filter one command; see the module docstring. Never raises for bad numbers.

        ``q`` (n,) measured configuration, ``qd_cmd`` (n,) commanded velocity, ``dt`` (s) the tick
        the output will be applied for, ``stamp_age`` (s) how old ``q`` is; a negative age
        (clock skew between machines) is accepted. ``previous`` (n,): the velocity the robot
        executes now (what was last sent), the start of the acceleration limits; default: this
        filter's last output (zeros after a fault). ``elapsed`` (s): time since ``previous`` was
        sent, when outputs go out more often than once per ``dt`` (a node filtering every
        command as it arrives): the output then changes by at most a·min(elapsed, dt).
        ``motion_bound`` (n,) ≥ 0: how far (rad, m) each joint may have moved since ``q`` was
        measured (a late state: the commands in force since its stamp × its age); every pair's
        distance is then lowered by how far its bodies can have moved (see "Late states" in the
        module docstring), so that a late state costs speed, never clearance.
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
        lag: Optional[NDArray[np.float64]] = None
        if motion_bound is not None:
            try:
                lag = np.asarray(motion_bound, dtype=float)
            except (TypeError, ValueError):
                lag = np.empty(0)
            if lag.shape != (n,):
                return self._fault(f"wrong length: motion_bound must have {n} values")
            if not (lag >= 0.0).all():  # also false for NaN
                return self._fault("non-finite state: motion_bound must be finite and >= 0")
            if not lag.any():
                lag = None

        t0 = time.perf_counter()
        query = self._d_infl
        try:
            grow = 0.0
            if lag is not None:
                # the distance every link's geometry can have moved since q was measured
                self._lag_bounds(qa, lag)
                grow = 2.0 * float(self._link_motion.max())
            if self._use_acc:
                query = max(query, self._ds_max + self._stopping_distance(qa, prev, dtf))
            query += grow
            world = self._world
            pd = self.checker.pair_distances(
                qa, world, exhaustive=True, cutoff=query, moving_only=True,
                out=self._pd if self._pd_world is world else None)
            self._pd, self._pd_world = pd, world
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
        rl, ol = tab.robot_links, tab.other_links
        selfrow = ol >= 0
        hold = np.zeros(phi.shape[0], dtype=np.bool_)
        if selfrow.any():
            hold[selfrow] = self._hold[rl[selfrow], ol[selfrow]]
        hold2 = hold[src]
        if lag is not None:
            # lower every row by how far its bodies can have moved since q was measured
            lm = self._link_motion
            infl = lm[rl] + np.where(selfrow, lm[np.maximum(ol, 0)], 0.0)
            phi2 = phi2 - infl[src]
        lower, upper = self._lower, self._upper
        if lag is not None:
            # the joints may be up to lag closer to their limits than q says
            lower, upper = lower + lag, upper - lag
        relaxed = False
        recovery = 1.0
        params = self._params
        flag = _EXIT_INFEASIBLE
        for recovery in _RECOVERY:
            if recovery != 1.0:
                # no answer demands the full recovery speed from the pairs inside their safety
                # distance (they cannot separate that fast, or only by pushing another pair
                # in): demand less, at last only that no pair comes closer, so that a command
                # that moves away is never refused
                params = self._params.copy()
                params[5] *= recovery
            for factor in (_RELAX if self._use_acc else (0.0,)):
                # with the acceleration limits first; if they and the rows cannot all hold (a
                # pair approached faster than it can now stop), the clearance wins over the
                # limits, which are widened as little as needed
                use_acc = factor > 0.0
                status, A, bl, bu, out, sel = _build_qp(
                    phi2, kinds2, jac2, phi.shape[0], hold2, self._pidx, qa, ca, lower,
                    upper, self._vbar, self._has_damper, self._dgain, params, dtf,
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
            if flag != _EXIT_INFEASIBLE:
                break
        if flag == _EXIT_INFEASIBLE:
            return self._fault(
                "infeasible QP: the clearance rows and joint bounds cannot all hold "
                f"({nrows} rows, closest {mind:.4f} m)", mind, nrows, tc)
        active: list[str] = ["acceleration:relaxed"] if relaxed else []
        if recovery != 1.0:
            active.append("recovery:relaxed")
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
            lo, hi = self._box(qa, dtf, box_prev, max(factor, 1.0) * wdt, lower, upper)
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
             wdt: float, lower: NDArray[np.float64], upper: NDArray[np.float64]
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        lo = np.empty(self._n)
        hi = np.empty(self._n)
        _joint_box(q, lower, upper, self._vbar, self._has_damper, self._dgain,
                   self.options.joint_limit_margin, dt, lo, hi)
        if prev is not None:
            _acceleration_box(q, lower, upper, self._vbar, self._has_damper,
                              self._dgain, self.options.joint_limit_margin, prev, self._acc,
                              dt, wdt, lo, hi)
        return lo, hi

    def _lag_bounds(self, q: NDArray[np.float64], lag: NDArray[np.float64]) -> None:
        """Per link, how far (m) its geometry can have moved when joint i moved by at most
        ``lag[i]`` (rad, m) from ``q``, into ``self._link_motion`` (see "Late states")."""
        _, rs, _, _ = self.checker.compiled(self._world)
        k = self.robot.kin
        fk_into(q, k.parent, k.jtype, k.origin, k.axis, k.qidx, k.scale, k.offset, self._T)
        _link_motion_bounds(self._T, rs.bound_center, rs.bound_radius, k.parent, k.jtype,
                            k.axis, k.qidx, k.scale, lag, self._link_motion)

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


