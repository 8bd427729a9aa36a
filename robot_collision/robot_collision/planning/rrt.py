"""Bidirectional RRT (RRT-Connect) joint-space planner, compiled end to end.

Units: rad (revolute/continuous joints), m (prismatic joints), s. Configurations are (n,)
arrays and paths (k, n) arrays, columns in ``RobotModel.joint_names`` order.

Algorithm. Two trees grow from the start and the goal: the smaller one (``balance_trees``;
else they alternate) extends by at most ``max_connection_distance`` (joint-space L2) towards a
uniform random sample; if the new node is
reachable, the other tree *connects* towards it: greedily in steps of ``max_connection_distance``
(standard RRT-Connect, each step kept as a node) or, with ``enable_connect_heuristic``, as one
straight edge of any length (MATLAB ``manipulatorRRT``). Before the first iteration the start
tree connects towards the goal in the same way (so without the heuristic every edge of a path is
at most ``max_connection_distance`` long, the first attempt included). The goal is a
configuration, or a :class:`~robot_collision.planning.ik.WorkspaceGoalRegion` whose goal
configurations (goal-tree roots) come from IK of sampled poses:
one before planning and, on each iteration with probability ``workspace_goal_region_bias`` (up
to ``max_goal_samples``), another one towards which the start tree then extends.

Edges. With ``edge_validation="certified"`` (default) every edge of a returned path is
certified collision-free over its whole segment, with ``min_clearance`` to spare, by inflated
samples and conservative advancement (:mod:`robot_collision.collision.certified`; on the blocked
kernels for sphere robots): the straight start-goal motion is
certified first, as one segment (if it is, the direct connect below adds the same nodes without
discrete checks, and they are the path); otherwise the trees grow with the discrete check
below, at twice the ``validation_distance`` (``_LAZY_STRIDE``: the samples only steer the
trees), and the path found is certified edge by edge; if one of its edges is not certified,
the run starts over from the same random stream at ``validation_distance`` (without the direct
certification, already refused), and then, if its path is refused too, with every edge
certified inside the loop. With
``"discrete"`` (the behaviour before issue 23, bit for bit) edges are valid when every
configuration ``q0 + (q1 - q0) * k / steps``, k = 1..steps with
``steps = ceil(|q1 - q0| / validation_distance)``, is collision-free; they are checked inside
the compiled loop in coarse-to-fine (bisection) order with early exit. (Extensions are clamped
to ``max_connection_distance * (1 - 1e-9)`` so that an edge's check grid never sits on a
``ceil`` boundary where rounding could change it.) Validity between two checked configurations
is then not guaranteed. Distances are L2 with continuous
joints taking the shortest angular difference (wrapped into [-pi, pi)); nearest neighbours come
from a compiled scan of the tree arrays. Optional dynamic-domain sampling and tree balancing
(both on by default, as in VAMP's RRT-Connect) cut the work in confined scenes.

The whole loop (sampling, nearest neighbour, extension, edge checks, goal IK) runs in one
compiled call (without the GIL) per chunk of about 3 ms, after which Python checks the time
limit and the cancel hook and reports progress; tree storage persists across chunks. Once
planning outlasts the first chunk, a helper thread polls the cancel hook every millisecond and
raises a flag that the compiled loop reads between collision checks. An interrupted iteration
(flag, time limit, or longer than ~6 ms) is rolled back and redone in the next chunk, so seeded
runs are reproducible (bit for bit) whatever the chunk boundaries. The first call in a process
loads the compiled kernels (~0.3 s from numba's cache): call :meth:`BiRRT.warmup` at startup.

Results. :meth:`BiRRT.plan` returns a :class:`PlanResult` (waypoints, statistics) or raises
``ConfigurationError`` (wrong length, non-finite values, bad arguments) or a
:class:`~robot_collision.errors.PlanningError` subclass: ``OutsideLimitsError``,
``StartInCollisionError`` / ``GoalInCollisionError`` (the message names the colliding pairs),
``GoalUnreachableError`` (no collision-free IK solution for a goal region), ``NoPathFoundError``
(max iterations or time limit), ``PlanningCancelledError`` (``should_stop`` became true).
Planning errors carry the run's :class:`PlanStats` as ``.stats``.
Paths are unwrapped: consecutive waypoints of a continuous joint differ by at most pi, so the
last waypoint equals the goal modulo 2 pi and ``interpolate`` follows the checked motion.

This module is the Python driver (:class:`BiRRT`); the options and results live in
:mod:`.rrt_options`, the compiled loop and edge checks in :mod:`.rrt_kernels`, path tools in
:mod:`.paths` (their public names are re-exported here).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..collision import block_kernels as _bk
from ..collision.certified import first_uncertified_blocked
from ..collision.checker import CollisionChecker
from ..collision.kernels import packed_valid
from ..errors import (
    ConfigurationError,
    GoalInCollisionError,
    GoalUnreachableError,
    NoPathFoundError,
    OutsideLimitsError,
    PlanningCancelledError,
    PlanningError,
    StartInCollisionError,
    UnknownNameError,
)
from ..geometry.shapes import WorldObject
from ..model.robot_model import RobotModel
from ..simd import LANES as _LANES
from .ik import WorkspaceGoalRegion, new_rng_state
from .paths import _first_invalid, _shortcut, first_collision, joint_difference, path_length
from .rrt_kernels import (
    _I_CHECKS,
    _I_CONN0,
    _I_CONN1,
    _I_DIRECT,
    _I_GOAL_TRIES,
    _I_ITER,
    _INTERRUPTED,
    _MAX_ITER,
    _NEED_GROW,
    _NO_RADIUS,
    _NO_REGION,
    _NSTATE,
    _SUCCESS,
    _config_status,
    _ends_status,
    _extract_path,
    _goal_samples,
    _new_trees,
    _rrt_chunk,
)
from .rrt_options import MAX_CONNECT_NODES as MAX_CONNECT_NODES
from .rrt_options import MIN_VALIDATION_DISTANCE as MIN_VALIDATION_DISTANCE
from .rrt_options import ExitReason as ExitReason
from .rrt_options import (
    PlanResult,
    PlanStats,
    ProgressInfo,
    RRTOptions,
    StopHook,
    _same_skip,
)

__all__ = [
    "RRTOptions",
    "PlanStats",
    "PlanResult",
    "ProgressInfo",
    "BiRRT",
    "path_length",
    "joint_difference",
    "first_collision",
]

# time slices of the compiled loop and the progress period (ns)
_SOFT_CHUNK_NS = 3_000_000
_HARD_CHUNK_NS = 6_000_000
_PROGRESS_NS = 50_000_000
_LAZY_STRIDE = 2.0
"""The first run of a certified plan checks tree edges every ``_LAZY_STRIDE *
validation_distance`` (its path is certified over whole segments afterwards; the samples only
steer the trees). Measured (MotionBenchMaker, every problem planned discrete and certified with
each stride in one process, interleaved), median certified / discrete at stride 1 / 2 / 3: sphere
Panda 1.72 / 1.55 / 1.54 (399 problems), mesh Panda 2.24 / 1.96 (60), default arm 1.09 / 1.03
(100, twice). Coarser trees find paths that certification refuses more often (then the plan is
redone at ``validation_distance``): 6 of 200 sphere-Panda paths at stride 2, 0 at stride 1."""


def _stop_fn(should_stop: StopHook) -> Optional[Callable[[], bool]]:
    if should_stop is None:
        return None
    if isinstance(should_stop, threading.Event):
        return should_stop.is_set
    if not callable(should_stop):
        raise ConfigurationError(
            "should_stop must be a callable returning bool or a threading.Event"
        )
    return should_stop


class _StopWatcher:
    """Polls a stop hook every ms in a helper thread and raises ``flag[0]``, which the compiled
    loop reads between collision checks (so cancelling does not wait for an iteration)."""

    def __init__(self, stop: Callable[[], bool], flag: NDArray[np.int64]) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(stop, flag), daemon=True,
                                        name="birrt-stop-watcher")
        self._thread.start()

    def _run(self, stop: Callable[[], bool], flag: NDArray[np.int64]) -> None:
        while not self._done.wait(0.001):
            try:
                if stop():
                    flag[0] = 1
                    return
            except Exception:  # a failing hook counts as "stop"
                flag[0] = 1
                return

    def close(self) -> None:
        self._done.set()
        self._thread.join()


def _attach(exc: PlanningError, stats: PlanStats) -> PlanningError:
    exc.stats = stats  # type: ignore[attr-defined]
    return exc


class BiRRT:
    """RRT-Connect planner for ``robot`` among ``world`` obstacles (see the module docstring).

    ``checker_or_robot``: a :class:`CollisionChecker` (its skip rules and padding are used) or a
    :class:`RobotModel` (a checker with ``options.skip`` is built). Not thread-safe: use one
    instance per thread (instances share nothing mutable).
    """

    def __init__(
        self,
        checker_or_robot: Union[CollisionChecker, RobotModel],
        options: RRTOptions = RRTOptions(),
        world: Sequence[WorldObject] = (),
    ) -> None:
        if isinstance(checker_or_robot, CollisionChecker):
            if options.skip is not None and not _same_skip(options.skip, checker_or_robot.skip):
                raise ConfigurationError(
                    f"RRTOptions.skip={options.skip!r} conflicts with the CollisionChecker's own "
                    f"skip rules ({checker_or_robot.skip!r}): skip applies only when BiRRT builds "
                    "the checker from a RobotModel; set the rules on the CollisionChecker, or "
                    "leave RRTOptions.skip at None")
            self.checker = checker_or_robot
        elif isinstance(checker_or_robot, RobotModel):
            self.checker = CollisionChecker(
                checker_or_robot, skip="parent" if options.skip is None else options.skip)
        else:
            raise ConfigurationError(
                "BiRRT needs a CollisionChecker or a RobotModel, got "
                f"{type(checker_or_robot).__name__}"
            )
        if not isinstance(options, RRTOptions):
            raise ConfigurationError("options must be an RRTOptions")
        self.robot: RobotModel = self.checker.robot
        self.options = options
        self._world: list[WorldObject] = []
        self._scene: Optional[tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64],
                                    NDArray[np.int64], int]] = None
        self._bounds: Optional[tuple[tuple[float, bytes, bytes], NDArray[np.float64],
                                     NDArray[np.float64]]] = None
        self._cont_cache: Optional[tuple[NDArray[np.bool_], NDArray[np.bool_], bool]] = None
        self._params: Optional[tuple[object, int, int, NDArray[np.float64],
                                     NDArray[np.int64]]] = None
        self.world = list(world)
        self._run_parameters(False, 0)  # prime the caches of plan() (setup, not planning)

    # ------------------------------------------------------------------ world
    @property
    def world(self) -> list[WorldObject]:
        """The obstacles (assign a new sequence to change them)."""
        return list(self._world)

    @world.setter
    def world(self, objs: Sequence[WorldObject]) -> None:
        self._world = list(objs)
        self._scene = None
        self._packed()  # flatten the scene now (~0.2 ms), not in plan()

    def _packed(self) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        return self._packed_all()[:2]

    def _packed_all(self) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64],
                                   NDArray[np.int64]]:
        """``(F, I, BF, BI)``: the packed scene for the scalar kernels and for the blocked
        kernels (``BF``, ``BI`` empty when the scene is not supported by them)."""
        ver = self.robot.geometry_version
        if self._scene is None or self._scene[4] != ver:
            sc = self.checker._prepare(self._world)
            if sc.block is not None:
                BF, BI = sc.block.BF, sc.block.BI
            else:
                BF, BI = np.zeros(0), np.zeros(0, dtype=np.int64)
            self._scene = (sc.F, sc.I, BF, BI, ver)
        return self._scene[:4]

    @property
    def _check_self(self) -> bool:
        return not self.options.ignore_self_collision

    def _sampling_bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r = self.options.unbounded_sample_range
        key = (r, self.robot.lower.tobytes(), self.robot.upper.tobytes())
        if self._bounds is None or self._bounds[0] != key:
            lo = np.where(np.isfinite(self.robot.lower), self.robot.lower, -r).astype(float)
            hi = np.where(np.isfinite(self.robot.upper), self.robot.upper, r).astype(float)
            self._bounds = (key, lo, hi)
        return self._bounds[1], self._bounds[2]

    def _cont(self) -> NDArray[np.bool_]:
        """The robot's continuous-joint mask (n,) bool (cached)."""
        c = self.robot.is_continuous
        if self._cont_cache is None or self._cont_cache[0] is not c:
            self._cont_cache = (c, np.ascontiguousarray(c, dtype=np.bool_), bool(c.any()))
        return self._cont_cache[1]

    def _has_cont(self) -> bool:
        self._cont()
        assert self._cont_cache is not None
        return self._cont_cache[2]

    def _run_parameters(self, region: bool, ee: int) -> tuple[int, int, NDArray[np.float64],
                                                              NDArray[np.int64]]:
        """``(max_add, cap, fpar, ipar)`` of a run: most nodes one iteration adds, initial
        tree capacity and the compiled loop's parameter arrays (cached per options, bounds,
        goal kind and end effector; the compiled loop only reads them)."""
        o = self.options
        slo, shi = self._sampling_bounds()
        key = (o, slo.tobytes(), shi.tobytes(), self._check_self, region, ee)
        if self._params is None or self._params[0] != key:
            cont = self._cont()
            step_max = float(np.linalg.norm(np.minimum(shi - slo, np.where(cont, np.pi, np.inf))))
            if step_max / o.max_connection_distance > MAX_CONNECT_NODES:
                raise ConfigurationError(
                    f"max_connection_distance {o.max_connection_distance:g} is too small for this "
                    f"robot: one connect across its joint ranges ({step_max:.3g} rad or m) could "
                    f"add {step_max / o.max_connection_distance:.3g} nodes (at most "
                    f"{MAX_CONNECT_NODES:,}); use at least {step_max / MAX_CONNECT_NODES:.3g}")
            max_add = int(np.ceil(step_max / o.max_connection_distance)) + 4
            cap = _LANES * ((max(1024, 4 * max_add) + _LANES - 1) // _LANES)  # (_nearest)
            fpar = np.array([o.max_connection_distance, o.validation_distance,
                             o.workspace_goal_region_bias, o.ik_position_tolerance,
                             o.ik_orientation_tolerance, o.dynamic_domain_radius,
                             o.dynamic_domain_alpha, o.dynamic_domain_min_radius,
                             o.min_clearance])
            ipar = np.array([o.max_iterations, int(o.enable_connect_heuristic),
                             int(self._check_self), int(region), ee, o.ik_max_iterations,
                             o.max_goal_samples, max_add, int(o.balance_trees),
                             int(o.dynamic_domain),
                             int(o.edge_validation == "certified"), 0], dtype=np.int64)
            self._params = (key, max_add, cap, fpar, ipar)
        return self._params[1], self._params[2], self._params[3], self._params[4]

    def warmup(self) -> float:
        """Compile (first run) or load (cached, ~0.3 s) every compiled planning kernel without
        planning, so that the first :meth:`plan` is not slowed down. Returns the time taken, s."""
        t0 = time.perf_counter()
        F, I, BF, BI = self._packed_all()
        n = self.robot.num_joints
        cont = self.robot.is_continuous.astype(np.bool_)
        slo, shi = self._sampling_bounds()
        q = np.clip(np.zeros(n), slo, shi)
        rng, _ = new_rng_state(0)
        nodes = np.zeros((2, _LANES, n))
        nodes[:, 0] = q
        size = np.ones(2, dtype=np.int64)
        ipar = np.zeros(12, dtype=np.int64)  # max_iterations = 0: returns at once
        _rrt_chunk(F, I, BF, BI, nodes, np.zeros((2, _LANES * n)),
                   np.full((2, _LANES), -1, dtype=np.int64), np.full((2, _LANES), _NO_RADIUS),
                   size, np.zeros(_NSTATE, dtype=np.int64), rng, slo, shi, cont,
                   np.ones(9), ipar, np.zeros(44), 0, 0, np.zeros(1, dtype=np.int64))
        _goal_samples(F, I, np.zeros(44), 1, slo, shi, cont, True, 0, 1, 1e-5, 1e-4, rng,
                      np.empty(n))
        _shortcut(F, I, BF, BI, q[None, :].copy(), 1, 0, cont, 0.1, True, rng,
                  self.options.edge_validation == "certified", self.options.min_clearance)
        _first_invalid(F, I, np.empty((0, n)), True)
        # certified paths (plan, shorten) and trajectory pieces (time_parameterize)
        z = np.zeros((0, n))
        first_uncertified_blocked(z, z, z, F, I, BF, BI, True, 0.0)
        self.checker.is_valid(q, self._world)  # start/goal validation kernel
        return time.perf_counter() - t0

    # ------------------------------------------------------------------ validation
    def _validate_config(self, q: ArrayLike, what: str) -> NDArray[np.float64]:
        r = self.robot
        try:
            arr = np.array(q, dtype=float, copy=True)
        except (TypeError, ValueError):
            arr = None
        if arr is not None and arr.shape == (r.num_joints,) and not _config_status(
                arr, r.lower, r.upper):
            return arr  # finite and within the limits: clipped in place
        return self._validate_config_slow(q, what)

    def _validate_config_slow(self, q: ArrayLike, what: str) -> NDArray[np.float64]:
        """:meth:`_validate_config` raising the detailed errors."""
        r = self.robot
        try:
            arr = np.array(q, dtype=float, copy=True)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{what} configuration must be {r.num_joints} numbers ({', '.join(r.joint_names)})"
            ) from exc
        if arr.ndim != 1 or arr.shape[0] != r.num_joints:
            raise ConfigurationError(
                f"{what} configuration must have {r.num_joints} values (joints "
                f"{', '.join(r.joint_names)}), got shape {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ConfigurationError(f"{what} configuration has non-finite values")
        tol = 1e-9
        if bool(np.all(arr >= r.lower - tol)) and bool(np.all(arr <= r.upper + tol)):
            return np.minimum(np.maximum(arr, r.lower), r.upper)
        bad = np.flatnonzero((arr < r.lower - tol) | (arr > r.upper + tol))
        if bad.size:
            parts = [f"{r.joint_names[i]}={arr[i]:.6g} not in [{r.lower[i]:.6g}, {r.upper[i]:.6g}]"
                     for i in bad]
            raise OutsideLimitsError(
                f"{what} configuration is outside the joint limits: {'; '.join(parts)}; "
                "clip it into the limits (rad or m)"
            )
        return np.clip(arr, r.lower, r.upper)

    def _checked_ends(self, start: ArrayLike, goal: Union[ArrayLike, WorkspaceGoalRegion]
                      ) -> tuple[NDArray[np.float64], Optional[NDArray[np.float64]]]:
        """Start and goal configurations (None for a goal region) validated and clipped into
        the limits; raises the planner's errors for bad or colliding ends. Both configurations
        in one compiled call when they are fine (the usual case), else the detailed checks."""
        region = isinstance(goal, WorkspaceGoalRegion)
        if not region:
            n = self.robot.num_joints
            try:
                a = np.array(start, dtype=float)
                b = np.array(goal, dtype=float)
            except (TypeError, ValueError):
                a = b = np.zeros(0)
            if a.shape == (n,) and b.shape == (n,):
                F, I, BF, BI = self._packed_all()
                if _ends_status(a, b, self.robot.lower, self.robot.upper, F, I, BF, BI,
                                self._check_self) == 0:
                    return a, b
        q_start = self._validate_config(start, "start")
        msg = self._collision_message(q_start, "start")
        if msg:
            raise StartInCollisionError(msg)
        if isinstance(goal, WorkspaceGoalRegion):
            return q_start, None
        q_goal = self._validate_config(goal, "goal")
        msg = self._collision_message(q_goal, "goal")
        if msg:
            raise GoalInCollisionError(msg)
        return q_start, q_goal

    def _collision_message(self, q: NDArray[np.float64], what: str) -> Optional[str]:
        ignore_self = self.options.ignore_self_collision
        F, I, BF, BI = self._packed_all()
        if BI.shape[0]:
            if _bk.single_valid_blocked(q, BF, BI, not ignore_self) == 1:
                return None
        elif packed_valid(q, F, I, not ignore_self):
            return None
        res = self.checker.check(q, self._world, exhaustive=True, ignore_self=ignore_self)
        names = [*res.row_names]
        cols = res.column_names
        parts = []
        for a, b in res.colliding_pairs:
            i, j = names.index(a), cols.index(b)
            pad = self.checker.pair_padding(a, b)
            d = float(res.signed[i, j]) + pad  # the distance without the padding
            parts.append(f"{a} <-> {b} ({1000 * d:.1f} mm apart" + (
                f", padding {1000 * pad:.1f} mm)" if pad else ")"))
        pairs = ", ".join(parts) or "unknown pair"
        return (f"{what} configuration is in collision: {pairs}; move it out of collision, remove "
                "or move the obstacle, skip the pair, or lower the padding for a pair that is "
                "always that close")

    # ------------------------------------------------------------------ planning
    def plan(
        self,
        start: ArrayLike,
        goal: Union[ArrayLike, WorkspaceGoalRegion],
        *,
        time_limit: Optional[float] = None,
        should_stop: StopHook = None,
        progress: Optional[Callable[[ProgressInfo], None]] = None,
    ) -> PlanResult:
        """Plan from ``start`` (n,) to ``goal``: a configuration (n,) or a
        :class:`~robot_collision.planning.ik.WorkspaceGoalRegion`.

        ``time_limit`` (s, None = only ``max_iterations``) includes goal sampling;
        ``should_stop`` (callable or ``threading.Event``) is checked after every ~3 ms chunk and,
        once planning outlasts the first chunk, every ~1 ms from a helper thread (so a callable
        must be thread-safe); when it returns true ``plan`` raises ``PlanningCancelledError``,
        typically within 2 ms. ``progress`` receives a :class:`ProgressInfo` about every 50 ms
        (from the calling thread). Raises the errors listed in the module docstring; planning
        errors carry ``.stats`` (:class:`PlanStats`, ``exit_reason`` "max_iterations",
        "time_limit", "cancelled" or "goal_unreachable").
        """
        t_start = time.monotonic_ns()
        o = self.options
        stop = _stop_fn(should_stop)
        if time_limit is not None and not (time_limit > 0):
            raise ConfigurationError("time_limit must be a positive number of seconds or None")
        deadline = (t_start + int(time_limit * 1e9)) if time_limit is not None else 2**62
        q_start, q_goal = self._checked_ends(start, goal)
        rng, seed = new_rng_state(o.seed)
        F, I, BF, BI = self._packed_all()
        n = self.robot.num_joints
        cont = self._cont()
        slo, shi = self._sampling_bounds()
        wgr_arr = _NO_REGION
        ee = 0
        goals: list[NDArray[np.float64]] = []
        goal_tries = 0
        if isinstance(goal, WorkspaceGoalRegion):
            ee = self.robot.link_index(goal.end_effector)
            if ee == 0:
                raise UnknownNameError(
                    f"end_effector {goal.end_effector!r} is the base; choose a moving body"
                )
            wgr_arr = goal.packed()
            qg = np.empty(n)
            found, colliding = False, 0
            remaining = o.goal_ik_attempts
            while remaining > 0 and not found:
                batch = min(remaining, 8)
                found, col, used = _goal_samples(
                    F, I, wgr_arr, ee, slo, shi, cont, self._check_self, batch,
                    o.ik_max_iterations, o.ik_position_tolerance, o.ik_orientation_tolerance,
                    rng, qg)
                remaining -= used
                colliding += col
                goal_tries += used
                elapsed = time.monotonic_ns()
                if not found and stop is not None and stop():
                    raise _attach(PlanningCancelledError("planning cancelled while sampling goals"),
                                  self._stats(0, 1, 0, t_start, "cancelled", 0, goal_tries, seed))
                if not found and elapsed > deadline:
                    break
            if not found:
                why = (f"{colliding} IK solutions were in collision" if colliding
                       else "IK never reached a sampled pose (out of reach or joint limits)")
                raise _attach(GoalUnreachableError(
                    f"no collision-free goal configuration for end effector {goal.end_effector!r} "
                    f"after {goal_tries} IK attempts: {why}; widen the region bounds, move the "
                    "reference pose within reach or clear the obstacles there"),
                    self._stats(0, 1, 0, t_start, "goal_unreachable", 0, goal_tries, seed))
            goals.append(qg)
        else:
            assert q_goal is not None
            goals.append(q_goal)

        # ---- tree storage
        _, cap0, fpar, ipar = self._run_parameters(isinstance(goal, WorkspaceGoalRegion), ee)
        # Certified edges, lazily (the module docstring): a coarse run, a run at
        # validation_distance, then every edge certified in the loop. Only the first run tries
        # the direct start-goal motion certified as one segment: if a later run is reached,
        # that certification was refused (it does not depend on the stride).
        passes = [(ipar, fpar)]
        if o.edge_validation == "certified":
            lazy = ipar.copy()
            lazy[10] = 0
            lazy_direct = lazy.copy()
            lazy_direct[11] = 1  # the direct start-goal motion certified first, as one segment
            coarse = fpar.copy()
            coarse[1] *= _LAZY_STRIDE
            passes = [(lazy_direct, coarse), (lazy, fpar), (ipar, fpar)]
        rng0 = rng.copy()
        checks_before = 0
        reason = ""
        flag = np.zeros(1, dtype=np.int64)
        watcher: Optional[_StopWatcher] = None
        next_progress = t_start + _PROGRESS_NS
        path: Optional[NDArray[np.float64]] = None
        try:
            for pass_no, (ipar_run, fpar_run) in enumerate(passes):
                if pass_no > 0:
                    rng[:] = rng0
                cap = cap0
                nodes, nodesT, parents, radii, size, istate = _new_trees(
                    cap, q_start, goals[0], cont, goal_tries)
                istate[_I_CHECKS] += checks_before
                retries = 0
                while True:
                    t = time.monotonic_ns()
                    hard = min(t + (_HARD_CHUNK_NS << min(retries, 10)), deadline)
                    soft = min(t + _SOFT_CHUNK_NS, deadline)
                    code = _rrt_chunk(F, I, BF, BI, nodes, nodesT, parents, radii, size, istate,
                                      rng, slo, shi, cont, fpar_run, ipar_run, wgr_arr, soft, hard,
                                      flag)
                    if code == _SUCCESS:
                        reason = "success"
                        break
                    if code == _MAX_ITER:
                        reason = "max_iterations"
                        break
                    if code == _NEED_GROW:
                        cap *= 2
                        nodes2 = np.empty((2, cap, n))
                        nodesT2 = np.empty((2, n * cap))
                        nodesT2.reshape(2, n, cap)[:, :, : nodes.shape[1]] = nodesT.reshape(
                            2, n, nodes.shape[1])
                        nodesT = nodesT2
                        parents2 = np.full((2, cap), -1, dtype=np.int64)
                        nodes2[:, : nodes.shape[1]] = nodes
                        parents2[:, : parents.shape[1]] = parents
                        radii2 = np.full((2, cap), _NO_RADIUS)
                        radii2[:, : radii.shape[1]] = radii
                        nodes, parents, radii = nodes2, parents2, radii2
                    retries = retries + 1 if code == _INTERRUPTED else 0
                    t = time.monotonic_ns()
                    if stop is not None:
                        if flag[0] != 0 or stop():
                            reason = "cancelled"
                            break
                        if watcher is None:  # planning takes a while: poll the hook in a thread
                            watcher = _StopWatcher(stop, flag)
                    if t >= deadline:
                        reason = "time_limit"
                        break
                    if progress is not None and t >= next_progress:
                        next_progress = t + _PROGRESS_NS
                        progress(ProgressInfo(int(istate[_I_ITER]), int(size[0]), int(size[1]),
                                              (t - t_start) * 1e-9))
                if reason != "success":
                    break
                path = _extract_path(nodes, parents, istate[_I_CONN0], istate[_I_CONN1],
                                     q_start, cont, self._has_cont())
                if pass_no == len(passes) - 1 or istate[_I_DIRECT] == 2:
                    break  # (2: the direct path, certified as one segment)
                bad, evals = first_uncertified_blocked(
                    path[:-1], np.ascontiguousarray(np.diff(path, axis=0)),
                    np.zeros((len(path) - 1, n)), F, I, BF, BI, self._check_self,
                    o.min_clearance)
                istate[_I_CHECKS] += evals
                if bad < 0:
                    break
                checks_before = int(istate[_I_CHECKS])
                reason = ""
                path = None
        finally:
            if watcher is not None:
                watcher.close()
        stats = self._stats(int(istate[_I_ITER]), int(size[0]), int(size[1]), t_start, reason,
                            int(istate[_I_CHECKS]), int(istate[_I_GOAL_TRIES]), seed)
        if reason == "cancelled":
            raise _attach(PlanningCancelledError(
                f"planning cancelled after {stats.iterations} iterations "
                f"({stats.planning_time * 1e3:.1f} ms)"), stats)
        if reason == "max_iterations":
            raise _attach(NoPathFoundError(
                f"no path found within max_iterations={o.max_iterations} "
                f"({stats.planning_time:.3f} s, trees {stats.start_tree_size}/"
                f"{stats.goal_tree_size} nodes); raise max_iterations, check that the goal is "
                "reachable, or reduce padding"), stats)
        if reason == "time_limit":
            raise _attach(NoPathFoundError(
                f"no path found within the time limit of {time_limit} s ({stats.iterations} "
                "iterations); allow more time or simplify the scene"), stats)
        assert path is not None
        # the goal reached: the given configuration, or the goal region's IK solution (as the
        # path's last waypoint, i.e. unwrapped like the path)
        goal_q = path[-1].copy() if isinstance(goal, WorkspaceGoalRegion) else goals[0]
        return PlanResult(path, stats, goal_q)

    def _stats(self, iters: int, s0: int, s1: int, t_start: int, reason: str, checks: int,
               goal_tries: int, seed: int) -> PlanStats:
        return PlanStats(iters, s0, s1, (time.monotonic_ns() - t_start) * 1e-9, reason, checks,
                         goal_tries, seed)

    # ------------------------------------------------------------------ path tools
    def _as_path(self, path: ArrayLike) -> NDArray[np.float64]:
        P = np.ascontiguousarray(path, dtype=float)
        n = self.robot.num_joints
        if P.ndim != 2 or P.shape[1] != n or P.shape[0] < 1:
            raise ConfigurationError(f"path must be a (k, {n}) array with k >= 1, got {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ConfigurationError("path has non-finite values")
        return P

    def path_length(self, path: ArrayLike) -> float:
        """Joint-space length of a (k, n) path (continuous joints: shortest difference)."""
        return path_length(self._as_path(path), self.robot.is_continuous)

    def interpolate(self, path: ArrayLike, num: Optional[int] = None) -> NDArray[np.float64]:
        """Densify a (k, n) path along its straight edges (every waypoint kept).

        ``num`` = configurations inserted between each pair of waypoints (MATLAB
        ``interpolate``); None = as many as edge validation uses, i.e. spacing at most
        ``validation_distance``. Returns (K, n)."""
        P = self._as_path(path)
        if num is not None and (int(num) != num or num < 0):
            raise ConfigurationError(f"num must be a non-negative integer or None, got {num!r}")
        if len(P) < 2:
            return P.copy()
        cont = self.robot.is_continuous
        out = [P[:1]]
        for a, b in itertools.pairwise(P):
            d = joint_difference(a, b, cont)
            if num is None:
                steps = max(1, int(np.ceil(np.linalg.norm(d) / self.options.validation_distance)))
            else:
                steps = int(num) + 1
            t = (np.arange(1, steps + 1) / steps)[:, None]
            seg = a + d * t
            seg[-1] = a + d  # exact end (== b unless a continuous joint wraps)
            out.append(seg)
        return np.concatenate(out)

    def shorten(
        self,
        path: ArrayLike,
        iterations: int = 100,
        rng: Union[np.random.Generator, int, None] = None,
    ) -> NDArray[np.float64]:
        """Random shortcutting: ``iterations`` tries to join two random points of the path with
        a straight edge. Every new edge of the result is valid at ``validation_distance`` and,
        with ``edge_validation="certified"``, certified over its whole segment (checked lazily:
        the result's edges are certified once, and shortcutting reruns with every candidate
        edge certified only if one is not); the length never grows, endpoints are kept. Seeded
        by ``rng`` (Generator or int; None = ``options.seed``)."""
        P = self._as_path(path)
        if int(iterations) != iterations or iterations < 0:
            raise ConfigurationError("iterations must be a non-negative integer")
        if len(P) < 3 or iterations == 0:
            return P.copy()
        if isinstance(rng, np.random.Generator):
            seed: Optional[int] = int(rng.integers(0, 2**63 - 1))
        else:
            seed = rng if rng is not None else self.options.seed
        state, _ = new_rng_state(seed)
        F, I, BF, BI = self._packed_all()
        cont = self.robot.is_continuous.astype(np.bool_)
        if cont.any():  # unwrap: consecutive continuous-joint values differ by at most pi
            P = P.copy()
            for i in range(1, len(P)):
                P[i] = P[i - 1] + joint_difference(P[i - 1], P[i], cont)
        buf = np.empty((len(P) + 2 * int(iterations) + 2, P.shape[1]))
        buf[: len(P)] = P
        state0 = state.copy()
        k = _shortcut(F, I, BF, BI, buf, len(P), int(iterations), cont,
                      self.options.validation_distance, self._check_self, state, False,
                      self.options.min_clearance)
        if self.options.edge_validation == "certified":
            # lazily, as plan(): the result's edges are certified; if one is not (or an edge of
            # the input was not), shortcutting runs again with every new edge certified
            out = buf[:k]
            bad, _ = first_uncertified_blocked(
                np.ascontiguousarray(out[:-1]), np.ascontiguousarray(np.diff(out, axis=0)),
                np.zeros((k - 1, P.shape[1])), F, I, BF, BI, self._check_self,
                self.options.min_clearance)
            if bad >= 0:
                buf[: len(P)] = P
                k = _shortcut(F, I, BF, BI, buf, len(P), int(iterations), cont,
                              self.options.validation_distance, self._check_self, state0, True,
                              self.options.min_clearance)
        return buf[:k].copy()

