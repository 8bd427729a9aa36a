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

Edges are valid when every configuration ``q0 + (q1 - q0) * k / steps``, k = 1..steps with
``steps = ceil(|q1 - q0| / validation_distance)``, is collision-free; they are checked inside
the compiled loop in coarse-to-fine (bisection) order with early exit. (Extensions are clamped
to ``max_connection_distance * (1 - 1e-9)`` so that an edge's check grid never sits on a
``ceil`` boundary where rounding could change it.) Validity between two checked configurations
is not guaranteed: use checker padding for a safety margin. Distances are L2 with continuous
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
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from ..collision import block_kernels as _bk
from ..collision.checker import CollisionChecker, SkipRule
from ..collision.kernels import _valid_at, packed_valid, unpack_scene
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
from ..jitcall import call_or as _call_or
from ..jitcall import inline_call_or as _inline_call_or
from ..jitcall import nothrow as _nothrow
from ..model.kinematics import fk_into
from ..model.robot_model import RobotModel
from ..simd import LANES as _LANES
from ..simd import lane as _lane
from ..simd import load as _load
from ..simd import select as _select
from ..simd import splat as _splat
from ..simd import vfloor as _vfloor
from .ik import (
    FASTMATH,
    WorkspaceGoalRegion,
    _ik_dls,
    _random_config,
    _wrap_continuous,
    new_rng_state,
    now_ns,
    rand01,
    wgr_sample_into,
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

# chunk return codes
_YIELD = 0
_SUCCESS = 1
_MAX_ITER = 2
_NEED_GROW = 3
_INTERRUPTED = 4
# istate layout
_I_ITER = 0  # completed iterations
_I_ACTIVE = 1  # tree extended in the next iteration (0 = start tree, 1 = goal tree)
_I_CONN0 = 2  # start-tree node of the connecting edge
_I_CONN1 = 3  # goal-tree node of the connecting edge
_I_CHECKS = 4  # configurations collision-checked
_I_GOAL_TRIES = 5  # goal-region IK attempts
_I_GOAL_ROOTS = 6  # goal-tree roots (goal configurations)
_I_DIRECT = 7  # direct start-goal edge tried
_NSTATE = 8

_SOFT_CHUNK_NS = 3_000_000
_HARD_CHUNK_NS = 6_000_000
_PROGRESS_NS = 50_000_000
# "no radius yet" (finite: compiled with fastmath, which assumes no infinities)
_NO_RADIUS = 1e300
# most consecutive dynamic-domain rejections before a sample is used anyway
_DD_MAX_REJECTS = 1000
# the goal-region parameters of a run towards a configuration (read only)
_NO_REGION = np.zeros(44)
# lane numbers 0..LANES-1 (read only)
_IOTA = np.arange(_LANES, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# options and results
# ------------------------------------------------------------------------------------------
MIN_VALIDATION_DISTANCE = 1e-6
"""Smallest ``RRTOptions.validation_distance`` (rad or m)."""
MAX_CONNECT_NODES = 100_000
"""Most nodes one greedy connect may add (bounds the tree storage; a smaller
``max_connection_distance`` is refused for the robot at hand)."""


def _same_skip(a: SkipRule, b: SkipRule) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return {frozenset(p) for p in a} == {frozenset(p) for p in b}


@dataclass(frozen=True)
class RRTOptions:
    """Options of :class:`BiRRT` (units rad / m; distances are joint-space L2).

    Attributes:
        max_connection_distance: longest edge added by one extension (default 1.0 rad).
        validation_distance: edge checking resolution, the largest joint-space step between
            checked configurations (default 1/32 rad, i.e. >= 32 checks per radian).
        max_iterations: extension iterations before ``NoPathFoundError`` (default 10000).
        enable_connect_heuristic: connect the other tree with one straight edge of any length
            instead of greedy ``max_connection_distance`` steps (default False); only then can
            an edge of a path (the first start-goal attempt included) be longer than
            ``max_connection_distance``.
        workspace_goal_region_bias: probability in [0, 1), on each iteration, of sampling a new
            goal configuration (IK of a random pose of the region) as the start tree's extension
            target (default 0.5; 1 would leave no uniform samples to explore with).
        ignore_self_collision: check only against the world (default False).
        skip: self-collision skip rule of the checker :class:`BiRRT` builds from a
            ``RobotModel``: ``"parent"``, ``"adjacent"`` or (body, body) pairs (default None =
            ``"parent"``). A ``CollisionChecker`` brings its own rules: giving one together
            with a different ``skip`` is a ``ConfigurationError``.
        seed: random seed; the same seed gives the same path (None = fresh entropy, recorded in
            ``PlanStats.seed``).
        unbounded_sample_range: half-width of the sampling box of joints with infinite limits
            (continuous joints: (-pi, pi] covers every angle; default pi).
        balance_trees: extend the smaller tree (alternate when equal) instead of strictly
            alternating (default True).
        dynamic_domain: dynamic-domain sampling (Yershova et al. 2005): a node whose extension
            failed gets a radius (``dynamic_domain_radius``, then shrunk by the factor
            1 - ``dynamic_domain_alpha`` per failure down to ``dynamic_domain_min_radius``,
            grown by 1 + alpha per success) and samples farther than that from their nearest
            node are drawn again (default True, 4.0 rad, 1e-4, 1.0 rad).
        max_goal_samples: most goal configurations kept for a goal region (default 32).
        goal_ik_attempts: IK restarts before ``GoalUnreachableError`` when looking for the first
            goal configuration of a region (default 200).
        ik_max_iterations: damped-least-squares iterations per IK attempt (default 100).
        ik_position_tolerance: IK position tolerance, m (default 1e-5).
        ik_orientation_tolerance: IK orientation tolerance, rad (default 1e-4).
    """

    max_connection_distance: float = 1.0
    validation_distance: float = 1.0 / 32.0
    max_iterations: int = 10000
    enable_connect_heuristic: bool = False
    workspace_goal_region_bias: float = 0.5
    ignore_self_collision: bool = False
    skip: Optional[SkipRule] = None
    seed: Optional[int] = None
    unbounded_sample_range: float = math.pi
    balance_trees: bool = True
    dynamic_domain: bool = True
    dynamic_domain_radius: float = 4.0
    dynamic_domain_alpha: float = 1e-4
    dynamic_domain_min_radius: float = 1.0
    max_goal_samples: int = 32
    goal_ik_attempts: int = 200
    ik_max_iterations: int = 100
    ik_position_tolerance: float = 1e-5
    ik_orientation_tolerance: float = 1e-4

    def __post_init__(self) -> None:
        def positive(name: str) -> None:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ConfigurationError(f"RRTOptions.{name} must be a positive number, got {v!r}")

        for name in ("max_connection_distance", "validation_distance", "unbounded_sample_range",
                     "ik_position_tolerance", "ik_orientation_tolerance", "dynamic_domain_radius",
                     "dynamic_domain_alpha", "dynamic_domain_min_radius"):
            positive(name)
        if self.validation_distance < MIN_VALIDATION_DISTANCE:
            raise ConfigurationError(
                f"RRTOptions.validation_distance must be at least {MIN_VALIDATION_DISTANCE:g} "
                f"(rad or m; finer checks are meaningless and their count overflows), got "
                f"{self.validation_distance!r}")
        for name in ("max_iterations", "max_goal_samples", "goal_ik_attempts", "ik_max_iterations"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigurationError(f"RRTOptions.{name} must be an integer >= 1, got {v!r}")
        b = self.workspace_goal_region_bias
        if not (isinstance(b, (int, float)) and 0.0 <= b < 1.0):
            raise ConfigurationError(f"workspace_goal_region_bias must be in [0, 1), got {b!r}")
        if self.seed is not None and not isinstance(self.seed, (int, np.integer)):
            raise ConfigurationError(f"seed must be an integer or None, got {self.seed!r}")


ExitReason = Literal["success", "max_iterations", "time_limit", "cancelled"]


@dataclass(frozen=True)
class PlanStats:
    """Statistics of one :meth:`BiRRT.plan` call (times in s)."""

    iterations: int
    start_tree_size: int
    goal_tree_size: int
    planning_time: float
    exit_reason: str
    collision_checks: int = 0
    goal_samples: int = 0
    seed: int = 0


@dataclass(frozen=True)
class PlanResult:
    """``waypoints`` (k, n) from start to goal (every edge validated); ``goal`` (n,) the goal
    configuration reached: the one given, or for a goal region the IK solution the path ends at
    (equal to ``waypoints[-1]``)."""

    waypoints: NDArray[np.float64]
    stats: PlanStats
    goal: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def success(self) -> bool:
        return self.stats.exit_reason == "success"


@dataclass(frozen=True)
class ProgressInfo:
    """Passed to the ``progress`` callback about every 50 ms (elapsed in s)."""

    iterations: int
    start_tree_size: int
    goal_tree_size: int
    elapsed: float


StopHook = Union[Callable[[], bool], threading.Event, None]


# ------------------------------------------------------------------------------------------
# compiled kernels
# ------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FASTMATH, boundscheck=False, inline="always")
def _wrap(d):  # type: ignore[no-untyped-def]
    return d - 2.0 * np.pi * np.floor((d + np.pi) / (2.0 * np.pi))


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _diff_into(a, b, cont, has_cont, out):  # type: ignore[no-untyped-def]
    """out = b - a (continuous joints: shortest angular difference); returns |out|."""
    s = 0.0
    for j in range(a.shape[0]):
        d = b[j] - a[j]
        if has_cont and cont[j]:
            d = _wrap(d)
        out[j] = d
        s += d * d
    return np.sqrt(s)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, error_model="numpy")
def _nearest(treeT, m, q, cont, has_cont):  # type: ignore[no-untyped-def]
    """Index of the node nearest to ``q`` among the first ``m`` of a tree stored joint-major in
    ``treeT`` (n * cap,): joint j of node i at ``j * cap + i``, cap a multiple of
    ``simd.LANES``: that many nodes per step in SIMD lanes; ties go to the lowest index."""
    n = q.shape[0]
    cap = treeT.shape[0] // n
    iota = _load(_IOTA, 0)
    best = _splat(_NO_RADIUS)
    bidx = _splat(0.0)
    for i0 in range(0, m, _LANES):
        acc = _splat(0.0)
        for j in range(n):
            d = q[j] - _load(treeT, j * cap + i0)
            if has_cont and cont[j]:
                d = d - 2.0 * np.pi * _vfloor((d + np.pi) * (0.5 / np.pi))
            acc = acc + d * d
        idx = iota + i0
        better = (acc < best) & (idx < m)
        best = _select(better, acc, best)
        bidx = _select(better, idx, bidx)
    bd = _NO_RADIUS
    bi = 0
    for k in range(_LANES):
        dk = _lane(best, k)
        ik = int(_lane(bidx, k))
        if dk < bd or (dk == bd and ik < bi):
            bd = dk
            bi = ik
    return bi


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, error_model="numpy")
def _edge_free_blocked(q0, d, steps, BF, BI, W, RI, check_self, istate, deadline, flag):  # type: ignore[no-untyped-def]
    """:func:`_edge_free` with the 8-configuration kernel, pass by pass in VAMP's strided order
    (:func:`~robot_collision.collision.block_kernels.edge_pass`).

    Called once per edge from the planner's loop (through ``call_or``: a failure counts as a
    collision). It has a single exit and calls its helpers through ``inline_call_or`` (see
    :mod:`robot_collision.jitcall`), so that numba drops the reference counting of its arrays;
    the scene reaches it as the two block-scene arrays, not as the scalar kernels' tuples of ~30
    arrays, each of which a call increfs and decrefs (~0.7 us per edge, measured)."""
    m = (steps + _bk.LANES - 1) // _bk.LANES
    r = 1
    for j in range(m):
        c = _inline_call_or(_bk.edge_pass, -1, q0, d, steps, 1, m, j, BF, BI, W, RI, check_self)
        istate[_I_CHECKS] += abs(c)
        if c < 0:
            r = 0
            break
        if flag[0] != 0 or ((j & 7) == 7 and _inline_call_or(now_ns, 0) > deadline):
            r = -1
            break
    held = (q0.shape[0] + d.shape[0] + BF.shape[0] + BI.shape[0] + W.shape[0] + RI.shape[0]
            + istate.shape[0] + flag.shape[0])
    return r if held >= 0 else 0


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _fk_ok(q, parent, jtype, origin, axis, qidx, scale, offset, T):  # type: ignore[no-untyped-def]
    """:func:`fk_into` returning True (a value for ``call_or``)."""
    _nothrow(fk_into, q, parent, jtype, origin, axis, qidx, scale, offset, T)
    return True


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _edge_free(q0, d, steps, q, parent, jtype, origin, axis, qidx, scale, offset, rs, ws, pr,  # type: ignore[no-untyped-def]
               check_self, T, SP, ready, buf, istate, deadline, flag):
    """Check ``q0 + d * k / steps`` for k = steps, then the other k >= 1 coarse-to-fine
    Returns 1 (free), 0 (collision) or -1 (``deadline`` in ns passed or ``flag[0]`` set).
    (Scenes with a block scene use :func:`_edge_free_blocked` instead.)

    Called once per edge with the scene's ~30 arrays: a single exit, helpers through
    ``call_or`` (a failure counts as a collision) and a final use of every array in one block
    let numba drop their reference counting (~0.7 us per call otherwise; see
    :mod:`robot_collision.jitcall`)."""
    n = q0.shape[0]
    k = steps
    stride = 1
    while stride < steps:
        stride *= 2
    half = stride  # the first pass visits only k = steps
    r = 1
    while True:
        t = k / steps
        for j in range(n):
            q[j] = q0[j] + d[j] * t
        istate[_I_CHECKS] += 1
        if not (_inline_call_or(_fk_ok, False, q, parent, jtype, origin, axis, qidx, scale,
                                offset, T)
                and _call_or(_valid_at, False, T, rs, ws, pr, SP, ready, check_self, buf)):
            r = 0
            break
        if (istate[_I_CHECKS] & 3) == 0 and (flag[0] != 0
                                             or _inline_call_or(now_ns, 0) > deadline):
            r = -1
            break
        k += 2 * half
        last = False
        while k >= steps:
            if half <= 1:
                last = True
                break
            half //= 2
            k = half
        if last:
            break
    held = (
        q0.shape[0] + d.shape[0] + q.shape[0] + parent.shape[0] + jtype.shape[0]
        + origin.shape[0] + axis.shape[0] + qidx.shape[0] + scale.shape[0] + offset.shape[0]
        + T.shape[0] + SP.shape[0] + ready.shape[0] + buf.shape[0] + istate.shape[0]
        + flag.shape[0]
        + rs.link.shape[0] + rs.kind.shape[0] + rs.params.shape[0] + rs.local.shape[0]
        + rs.vstart.shape[0] + rs.vcount.shape[0] + rs.verts.shape[0] + rs.link_start.shape[0]
        + rs.bound_center.shape[0] + rs.bound_radius.shape[0]
        + ws.kind.shape[0] + ws.params.shape[0] + ws.pose.shape[0] + ws.vstart.shape[0]
        + ws.vcount.shape[0] + ws.verts.shape[0] + ws.box.shape[0] + ws.cloud.shape[0]
        + ws.cloud_f.shape[0] + ws.cloud_i.shape[0]
        + pr.self_a.shape[0] + pr.self_b.shape[0] + pr.self_pad.shape[0]
        + pr.world_pad.shape[0]
    )
    return r if held >= 0 else 0


@njit(cache=True)
def _block_workspace(BI):  # type: ignore[no-untyped-def]
    """Scratch for the blocked kernel (empty when the scene has none, ``BI`` empty)."""
    if BI.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    size = _bk._offsets(BI[_bk.H_N], BI[_bk.H_NF], BI[_bk.H_S], BI[_bk.H_L])[4]
    return np.zeros(size), np.zeros(BI[_bk.H_L], dtype=np.int64)


@njit(cache=True, fastmath=FASTMATH, boundscheck=False)
def _add_node(nodes, nodesT, parents, radii, size, t, q, par, cont):  # type: ignore[no-untyped-def]
    """Append ``q`` (continuous joints wrapped) to tree ``t`` under ``par``; returns its index.
    ``nodesT`` (2, n * cap) is the joint-major copy that :func:`_nearest` scans."""
    i = size[t]
    cap = nodes.shape[1]
    for j in range(q.shape[0]):
        v = q[j]
        if cont[j]:
            v = _wrap(v)
        nodes[t, i, j] = v
        nodesT[t, j * cap + i] = v
    parents[t, i] = par
    radii[t, i] = _NO_RADIUS
    size[t] = i + 1
    return i


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _rrt_chunk(F, I, BF, BI, nodes, nodesT, parents, radii, size, istate, rng, slo, shi, cont,  # type: ignore[no-untyped-def]
               fpar, ipar, wgr, soft_deadline, hard_deadline, flag):
    """Run RRT-Connect iterations until success, the iteration limit, a full tree, the soft
    deadline (checked between iterations) or the hard deadline (iteration rolled back)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    # extensions are a hair shorter than max_connection_distance: a length that is an exact
    # multiple of vd would make ceil(length / vd) (the edge's check grid) depend on rounding
    max_dist = fpar[0] * (1.0 - 1e-9)
    vd = fpar[1]
    bias = fpar[2]
    tol_p = fpar[3]
    tol_r = fpar[4]
    dd_radius = fpar[5]
    dd_alpha = fpar[6]
    dd_min = fpar[7]
    max_iter = ipar[0]
    heuristic = ipar[1] != 0
    check_self = ipar[2] != 0
    wgr_mode = ipar[3] != 0
    ee = ipar[4]
    ik_iter = ipar[5]
    max_roots = ipar[6]
    max_add = ipar[7]
    balance = ipar[8] != 0
    dynamic_domain = ipar[9] != 0
    n = nodes.shape[2]
    cap = nodes.shape[1]
    has_cont = False
    for j in range(n):
        if cont[j]:
            has_cont = True
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    W, RI = _block_workspace(BI)
    use_block = BI.shape[0] > 0
    q = np.empty(n)
    qr = np.empty(n)
    qnew = np.empty(n)
    d = np.empty(n)
    # IK scratch (goal regions)
    ref = wgr[0:16].reshape((4, 4))
    bounds = wgr[16:28].reshape((6, 2))
    off = wgr[28:44].reshape((4, 4))
    target = np.empty((4, 4))
    Tw = np.empty((4, 4))
    tmp4 = np.empty((4, 4))
    J = np.empty((6, n))
    A = np.empty((6, 6))
    e = np.empty(6)
    y = np.empty(6)
    Rtmp = np.empty((3, 3))
    qik = np.empty(n)
    saved = istate.copy()
    first = True
    while True:
        if istate[_I_ITER] >= max_iter:
            return _MAX_ITER
        if not first and now_ns() > soft_deadline:
            return _YIELD
        first = False
        if size[0] + max_add > cap or size[1] + max_add > cap:
            return _NEED_GROW
        for k in range(_NSTATE):
            saved[k] = istate[k]
        s0 = size[0]
        s1 = size[1]
        rng0 = rng[0]
        near_saved = -1
        a_saved = 0
        r_saved = 0.0
        status = 0  # 0 continue, 1 success, -1 interrupted
        if istate[_I_DIRECT] == 0:
            # the start tree connects towards the goal (first goal root) before any sampling:
            # one straight edge with the connect heuristic, else greedy steps of at most
            # max_connection_distance kept as nodes (like any connect), so that every edge of a
            # path respects max_connection_distance unless the heuristic is on
            cur = 0
            while True:
                dist = _diff_into(nodes[0, cur], nodes[1, 0], cont, has_cont, d)
                reach = heuristic or dist <= max_dist
                if not reach:
                    f = max_dist / dist
                    dist = 0.0
                    for j in range(n):
                        d[j] *= f
                        dist += d[j] * d[j]
                    dist = np.sqrt(dist)
                steps = max(1, int(np.ceil(dist / vd)))
                if use_block:
                    r = _call_or(_edge_free_blocked, 0, nodes[0, cur], d, steps, BF, BI, W, RI,
                                 check_self, istate, hard_deadline, flag)
                else:
                    r = _edge_free(nodes[0, cur], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, hard_deadline, flag)
                if r == -1:
                    for k in range(_NSTATE):
                        istate[k] = saved[k]
                    size[0] = s0
                    return _INTERRUPTED
                if r == 0:
                    break
                if reach:
                    istate[_I_CONN0] = cur
                    istate[_I_CONN1] = 0
                    return _SUCCESS
                for j in range(n):
                    qnew[j] = nodes[0, cur, j] + d[j]
                cur = _add_node(nodes, nodesT, parents, radii, size, 0, qnew, cur, cont)
            istate[_I_DIRECT] = 1
            continue
        a = istate[_I_ACTIVE]
        if balance and size[0] != size[1]:
            a = 0 if size[0] < size[1] else 1
        # ---- sample (a new goal configuration of the region, or uniform)
        sampled = False
        if wgr_mode and istate[_I_GOAL_ROOTS] < max_roots and rand01(rng) < bias:
            a = 0  # the start tree extends towards the new goal
            istate[_I_GOAL_TRIES] += 1
            wgr_sample_into(ref, bounds, off, rng, Tw, tmp4, target)
            _random_config(slo, shi, rng, qik)
            if _ik_dls(target, ee, qik, slo, shi, cont, parent, jtype, origin, axis, qidx, scale,
                       offset, ik_iter, tol_p, tol_r, T, J, A, e, qnew, y, Rtmp):
                _wrap_continuous(qik, cont)
                fk_into(qik, parent, jtype, origin, axis, qidx, scale, offset, T)
                istate[_I_CHECKS] += 1
                if _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
                    _add_node(nodes, nodesT, parents, radii, size, 1, qik, -1, cont)
                    istate[_I_GOAL_ROOTS] += 1
                    for j in range(n):
                        qr[j] = qik[j]
                    sampled = True
        b = 1 - a
        if sampled:
            near = _nearest(nodesT[a], size[a], qr, cont, has_cont)
            dist = _diff_into(nodes[a, near], qr, cont, has_cont, d)
        else:
            # uniform sample; with dynamic domain, resample (a bounded number of times) while
            # the sample lies outside its nearest node's radius
            for tries in range(_DD_MAX_REJECTS):
                _random_config(slo, shi, rng, qr)
                near = _nearest(nodesT[a], size[a], qr, cont, has_cont)
                dist = _diff_into(nodes[a, near], qr, cont, has_cont, d)
                if not dynamic_domain or dist <= radii[a, near]:
                    break
                if (tries & 15) == 15 and (flag[0] != 0 or now_ns() > hard_deadline):
                    status = -1
                    break
        # ---- extend tree a towards qr
        added = -1
        rnear = radii[a, near]
        near_saved = near
        a_saved = a
        r_saved = rnear
        if dist > 1e-12 and status == 0:
            if dist > max_dist:
                f = max_dist / dist
                dist = 0.0
                for j in range(n):
                    d[j] *= f
                    dist += d[j] * d[j]
                dist = np.sqrt(dist)
            for j in range(n):
                qnew[j] = nodes[a, near, j] + d[j]
            steps = max(1, int(np.ceil(dist / vd)))
            if use_block:
                r = _call_or(_edge_free_blocked, 0, nodes[a, near], d, steps, BF, BI, W, RI,
                               check_self, istate, hard_deadline, flag)
            else:
                r = _edge_free(nodes[a, near], d, steps, q, parent, jtype, origin, axis, qidx,
                               scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                               istate, hard_deadline, flag)
            if r == 1:
                added = _add_node(nodes, nodesT, parents, radii, size, a, qnew, near, cont)
                if dynamic_domain and rnear < _NO_RADIUS:
                    radii[a, near] = rnear * (1.0 + dd_alpha)
            elif r == -1:
                status = -1
            elif dynamic_domain:
                radii[a, near] = dd_radius if rnear >= _NO_RADIUS else max(rnear * (1.0 - dd_alpha),
                                                                       dd_min)
        # ---- connect tree b towards the new node
        if added >= 0:
            cur = _nearest(nodesT[b], size[b], nodes[a, added], cont, has_cont)
            while True:
                dist = _diff_into(nodes[b, cur], nodes[a, added], cont, has_cont, d)
                reach = heuristic or dist <= max_dist
                if not reach:
                    f = max_dist / dist
                    dist = 0.0
                    for j in range(n):
                        d[j] *= f
                        dist += d[j] * d[j]
                    dist = np.sqrt(dist)
                steps = max(1, int(np.ceil(dist / vd)))
                if use_block:
                    r = _call_or(_edge_free_blocked, 0, nodes[b, cur], d, steps, BF, BI, W, RI,
                                   check_self, istate, hard_deadline, flag)
                else:
                    r = _edge_free(nodes[b, cur], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, hard_deadline, flag)
                if r == -1:
                    status = -1
                    break
                if r == 0:
                    break
                if reach:
                    status = 1
                    if a == 0:
                        istate[_I_CONN0] = added
                        istate[_I_CONN1] = cur
                    else:
                        istate[_I_CONN0] = cur
                        istate[_I_CONN1] = added
                    break
                for j in range(n):
                    qnew[j] = nodes[b, cur, j] + d[j]
                cur = _add_node(nodes, nodesT, parents, radii, size, b, qnew, cur, cont)
        if status == -1:
            # roll back the partial iteration; the next chunk redoes it identically
            for k in range(_NSTATE):
                istate[k] = saved[k]
            size[0] = s0
            size[1] = s1
            rng[0] = rng0
            if near_saved >= 0:
                radii[a_saved, near_saved] = r_saved
            return _INTERRUPTED
        istate[_I_ITER] += 1
        istate[_I_ACTIVE] = b
        if status == 1:
            return _SUCCESS


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _goal_samples(F, I, wgr, ee, slo, shi, cont, check_self, attempts, ik_iter, tol_p, tol_r,  # type: ignore[no-untyped-def]
                  rng, out):
    """Look for a collision-free IK solution of a random region pose, ``attempts`` times.
    Returns (found, converged-but-colliding count, attempts used)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    n = out.shape[0]
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    ref = wgr[0:16].reshape((4, 4))
    bounds = wgr[16:28].reshape((6, 2))
    off = wgr[28:44].reshape((4, 4))
    target = np.empty((4, 4))
    Tw = np.empty((4, 4))
    tmp4 = np.empty((4, 4))
    J = np.empty((6, n))
    A = np.empty((6, 6))
    e = np.empty(6)
    y = np.empty(6)
    Rtmp = np.empty((3, 3))
    qn = np.empty(n)
    colliding = 0
    for att in range(attempts):
        wgr_sample_into(ref, bounds, off, rng, Tw, tmp4, target)
        _random_config(slo, shi, rng, out)
        if not _ik_dls(target, ee, out, slo, shi, cont, parent, jtype, origin, axis, qidx, scale,
                       offset, ik_iter, tol_p, tol_r, T, J, A, e, qn, y, Rtmp):
            continue
        _wrap_continuous(out, cont)
        fk_into(out, parent, jtype, origin, axis, qidx, scale, offset, T)
        if _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
            return True, colliding, att + 1
        colliding += 1
    return False, colliding, attempts


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _shortcut(F, I, BF, BI, path, k, iterations, cont, vd, check_self, rng):  # type: ignore[no-untyped-def]
    """Random partial shortcutting of the unwrapped ``path[:k]`` in place (capacity
    k + 2 * iterations).

    Two random points pa, pb on different segments i < jj are joined when the edges
    path[i] -> pa, pa -> pb and pb -> path[jj + 1] are all valid and the path gets shorter.
    pa and pb sit on their segment's check grid (``k / steps``), so the two shortened end
    segments are checked at configurations already known to be valid; their check is skipped
    when their own grid (``ceil(length / vd)`` steps) is that same grid. Returns the new number
    of waypoints.
    """
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    n = path.shape[1]
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    W, RI = _block_workspace(BI)
    use_block = BI.shape[0] > 0
    has_cont = False
    for j in range(n):
        if cont[j]:
            has_cont = True
    istate = np.zeros(_NSTATE, dtype=np.int64)
    flag = np.zeros(1, dtype=np.int64)
    cum = np.empty(path.shape[0])
    seglen = np.empty(path.shape[0])
    pa = np.empty(n)
    pb = np.empty(n)
    d = np.empty(n)
    shift = np.empty(n)
    q = np.empty(n)
    never = np.iinfo(np.int64).max
    for _ in range(iterations):
        if k < 3:
            break
        cum[0] = 0.0
        for i in range(k - 1):
            s = 0.0
            for j in range(n):
                t = path[i + 1, j] - path[i, j]
                s += t * t
            seglen[i] = np.sqrt(s)
            cum[i + 1] = cum[i] + seglen[i]
        total = cum[k - 1]
        s1 = rand01(rng) * total
        s2 = rand01(rng) * total
        if s1 > s2:
            s1, s2 = s2, s1
        i = 0
        while i < k - 2 and cum[i + 1] <= s1:
            i += 1
        jj = i
        while jj < k - 2 and cum[jj + 1] <= s2:
            jj += 1
        if jj <= i:
            continue
        li = seglen[i]
        lj = seglen[jj]
        # snap both points to their segment's check grid (k / steps): the configurations the
        # shortened end segments are checked at are then ones already found valid
        steps_i = max(1, int(np.ceil(li / vd)))
        steps_j = max(1, int(np.ceil(lj / vd)))
        m_i = min(steps_i, int(np.floor((s1 - cum[i]) / li * steps_i + 0.5))) if li > 0.0 else 0
        m_j = min(steps_j, int(np.floor((s2 - cum[jj]) / lj * steps_j + 0.5))) if lj > 0.0 else 0
        ti = m_i / steps_i
        tj = m_j / steps_j
        for j in range(n):
            pa[j] = path[i, j] + (path[i + 1, j] - path[i, j]) * ti
            pb[j] = path[jj, j] + (path[jj + 1, j] - path[jj, j]) * tj
        dab = _diff_into(pa, pb, cont, has_cont, d)
        if dab >= (cum[jj] + tj * lj) - (cum[i] + ti * li) - 1e-9:
            continue
        # pa -> pb follows the shortest difference d; what comes after pb shifts by a multiple
        # of 2 pi on continuous joints so that the path stays unwrapped
        for j in range(n):
            shift[j] = (pa[j] + d[j]) - pb[j] if cont[j] else 0.0
        steps = max(1, int(np.ceil(dab / vd)))
        if use_block:
            ok = _call_or(_edge_free_blocked, 0, pa, d, steps, BF, BI, W, RI, check_self, istate,
                          never, flag) == 1
        else:
            ok = _edge_free(pa, d, steps, q, parent, jtype, origin, axis, qidx, scale, offset, rs,
                            ws, pr, check_self, T, SP, ready, buf, istate, never, flag) == 1
        if ok:
            s = 0.0
            for j in range(n):
                d[j] = pa[j] - path[i, j]
                s += d[j] * d[j]
            s = np.sqrt(s)
            steps = max(1, int(np.ceil(s / vd)))
            if s > 1e-12 and steps != m_i:  # (steps == m_i: the grid points already checked)
                if use_block:
                    ok = _call_or(_edge_free_blocked, 0, path[i], d, steps, BF, BI, W, RI,
                                   check_self, istate, never, flag) == 1
                else:
                    ok = _edge_free(path[i], d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, never, flag) == 1
        if ok:
            s = 0.0
            for j in range(n):
                d[j] = path[jj + 1, j] - pb[j]
                s += d[j] * d[j]
            s = np.sqrt(s)
            steps = max(1, int(np.ceil(s / vd)))
            if s > 1e-12 and steps != steps_j - m_j:
                if use_block:
                    ok = _call_or(_edge_free_blocked, 0, pb, d, steps, BF, BI, W, RI,
                                   check_self, istate, never, flag) == 1
                else:
                    ok = _edge_free(pb, d, steps, q, parent, jtype, origin, axis, qidx,
                                   scale, offset, rs, ws, pr, check_self, T, SP, ready, buf,
                                   istate, never, flag) == 1
        if not ok:
            continue
        # splice: path[:i+1], pa, pb, path[jj+1:k] (+ shift)
        tail = k - (jj + 1)
        newk = i + 3 + tail
        if newk > k:  # (only when jj == i + 1): move the tail right, from its end
            for r in range(tail - 1, -1, -1):
                for j in range(n):
                    path[i + 3 + r, j] = path[jj + 1 + r, j] + shift[j]
        else:
            for r in range(tail):
                for j in range(n):
                    path[i + 3 + r, j] = path[jj + 1 + r, j] + shift[j]
        for j in range(n):
            path[i + 1, j] = pa[j]
            path[i + 2, j] = pb[j] + shift[j]
        k = newk
    # drop repeated waypoints (zero-length edges), keeping both endpoints
    w = 1
    for r in range(1, k):
        s = 0.0
        for j in range(n):
            t = path[r, j] - path[w - 1, j]
            s += t * t
        if s > 1e-24:
            for j in range(n):
                path[w, j] = path[r, j]
            w += 1
        elif r == k - 1:
            if w == 1:
                w += 1
            for j in range(n):
                path[w - 1, j] = path[r, j]
    return w


@njit(cache=True, fastmath=FASTMATH, boundscheck=False, nogil=True)
def _first_invalid(F, I, Q, check_self):  # type: ignore[no-untyped-def]
    """Index of the first colliding configuration of ``Q`` (N, n), or -1 (serial, early exit)."""
    kin, rs, ws, pr = unpack_scene(F, I)
    parent, jtype, origin, axis = kin.parent, kin.jtype, kin.origin, kin.axis
    qidx, scale, offset = kin.qidx, kin.scale, kin.offset
    L = parent.shape[0]
    T = np.empty((L, 4, 4))
    SP = np.empty((rs.kind.shape[0], 4, 4))
    ready = np.zeros(L, dtype=np.bool_)
    buf = np.empty((L + 3, 3))
    for k in range(Q.shape[0]):
        fk_into(Q[k], parent, jtype, origin, axis, qidx, scale, offset, T)
        if not _valid_at(T, rs, ws, pr, SP, ready, check_self, buf):
            return k
    return -1


@njit(cache=True, boundscheck=False)
def _config_status(q, lower, upper):  # type: ignore[no-untyped-def]
    """0 when ``q`` is finite and within [lower - 1e-9, upper + 1e-9] (then clipped into the
    limits in place), else 1 (the caller raises the detailed error)."""
    for j in range(q.shape[0]):
        v = q[j]
        if not np.isfinite(v) or v < lower[j] - 1e-9 or v > upper[j] + 1e-9:
            return 1
    for j in range(q.shape[0]):
        q[j] = min(max(q[j], lower[j]), upper[j])
    return 0


@njit(cache=True, boundscheck=False, nogil=True)
def _ends_status(q_start, q_goal, lower, upper, F, I, BF, BI, check_self):  # type: ignore[no-untyped-def]
    """0 when both ends are finite, within the joint limits (then clipped into them in place)
    and collision-free; else which check failed first, in the order the detailed Python checks
    run (1 start limits, 2 start collision, 3 goal limits, 4 goal collision)."""
    if _config_status(q_start, lower, upper) != 0:
        return 1
    if not _end_free(q_start, F, I, BF, BI, check_self):
        return 2
    if _config_status(q_goal, lower, upper) != 0:
        return 3
    if not _end_free(q_goal, F, I, BF, BI, check_self):
        return 4
    return 0


@njit(cache=True, boundscheck=False)
def _end_free(q, F, I, BF, BI, check_self):  # type: ignore[no-untyped-def]
    if BI.shape[0] > 0:
        return _bk.single_valid_blocked(q, BF, BI, check_self) == 1
    return packed_valid(q, F, I, check_self) == 1


@njit(cache=True, boundscheck=False)
def _new_trees(cap, q_start, q_goal, cont, goal_tries):  # type: ignore[no-untyped-def]
    """Tree storage (nodes, parents, radii, size, istate) with the start and goal roots
    (continuous joints wrapped)."""
    n = q_start.shape[0]
    nodes = np.empty((2, cap, n))
    nodesT = np.empty((2, n * cap))
    parents = np.full((2, cap), -1, dtype=np.int64)
    radii = np.full((2, cap), _NO_RADIUS)
    size = np.zeros(2, dtype=np.int64)
    _add_node(nodes, nodesT, parents, radii, size, 0, q_start, -1, cont)
    _add_node(nodes, nodesT, parents, radii, size, 1, q_goal, -1, cont)
    istate = np.zeros(_NSTATE, dtype=np.int64)
    istate[_I_GOAL_ROOTS] = 1
    istate[_I_GOAL_TRIES] = goal_tries
    return nodes, nodesT, parents, radii, size, istate


@njit(cache=True, boundscheck=False)
def _extract_path(nodes, parents, c0, c1, q_start, cont, has_cont):  # type: ignore[no-untyped-def]
    """Waypoints (k, n) root of the start tree -> node c0, then node c1 of the goal tree ->
    its root. Without continuous joints they are the tree nodes bit for bit; with them the path
    is unwrapped from ``q_start``."""
    n = nodes.shape[2]
    k0 = 0
    i = c0
    while i >= 0:
        k0 += 1
        i = parents[0, i]
    k1 = 0
    i = c1
    while i >= 0:
        k1 += 1
        i = parents[1, i]
    out = np.empty((k0 + k1, n))
    i = c0
    for r in range(k0 - 1, -1, -1):
        out[r] = nodes[0, i]
        i = parents[0, i]
    i = c1
    for r in range(k0, k0 + k1):
        out[r] = nodes[1, i]
        i = parents[1, i]
    if has_cont:
        d = np.empty(n)
        prev = out[0].copy()
        out[0] = q_start
        for r in range(1, k0 + k1):
            _diff_into(prev, out[r], cont, has_cont, d)
            for j in range(n):
                prev[j] = out[r, j]
                out[r, j] = out[r - 1, j] + d[j]
    return out


# ------------------------------------------------------------------------------------------
# Python helpers
# ------------------------------------------------------------------------------------------
def first_collision(
    checker: CollisionChecker,
    configurations: ArrayLike,
    world: Sequence[WorldObject] = (),
    ignore_self: bool = False,
) -> int:
    """Index of the first configuration of ``configurations`` (N, n) that collides, or -1.

    A serial compiled scan that stops at the first collision: faster than
    ``CollisionChecker.is_valid_batch`` when a yes/no answer is all that is needed."""
    Q = checker.robot.validate_batch(configurations)
    if len(Q) == 0:
        return -1
    F, I = checker.packed(world)
    return int(_first_invalid(F, I, Q, not ignore_self))


def joint_difference(a: ArrayLike, b: ArrayLike, is_continuous: ArrayLike) -> NDArray[np.float64]:
    """b - a (..., n), continuous joints taking the shortest angular difference in [-pi, pi)."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    c = np.asarray(is_continuous, dtype=bool)
    if c.any():
        d = np.where(c, d - 2.0 * np.pi * np.floor((d + np.pi) / (2.0 * np.pi)), d)
    return d


def path_length(path: ArrayLike, is_continuous: Optional[ArrayLike] = None) -> float:
    """Joint-space length (sum of L2 edge lengths) of a (k, n) path; continuous joints (mask
    ``is_continuous``) use the shortest angular difference."""
    P = np.asarray(path, dtype=float)
    if P.ndim != 2:
        raise ConfigurationError(f"path must be a (k, n) array, got shape {P.shape}")
    if len(P) < 2:
        return 0.0
    c = np.zeros(P.shape[1], dtype=bool) if is_continuous is None else is_continuous
    return float(np.linalg.norm(joint_difference(P[:-1], P[1:], c), axis=1).sum())


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
                             o.dynamic_domain_alpha, o.dynamic_domain_min_radius])
            ipar = np.array([o.max_iterations, int(o.enable_connect_heuristic),
                             int(self._check_self), int(region), ee, o.ik_max_iterations,
                             o.max_goal_samples, max_add, int(o.balance_trees),
                             int(o.dynamic_domain)], dtype=np.int64)
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
        ipar = np.zeros(10, dtype=np.int64)  # max_iterations = 0: returns at once
        _rrt_chunk(F, I, BF, BI, nodes, np.zeros((2, _LANES * n)),
                   np.full((2, _LANES), -1, dtype=np.int64), np.full((2, _LANES), _NO_RADIUS),
                   size, np.zeros(_NSTATE, dtype=np.int64), rng, slo, shi, cont,
                   np.ones(8), ipar, np.zeros(44), 0, 0, np.zeros(1, dtype=np.int64))
        _goal_samples(F, I, np.zeros(44), 1, slo, shi, cont, True, 0, 1, 1e-5, 1e-4, rng,
                      np.empty(n))
        _shortcut(F, I, BF, BI, q[None, :].copy(), 1, 0, cont, 0.1, True, rng)
        _first_invalid(F, I, np.empty((0, n)), True)
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
        pairs = ", ".join(f"{a} <-> {b}" for a, b in res.colliding_pairs) or "unknown pair"
        return (f"{what} configuration is in collision: {pairs}; move it out of collision, remove "
                "or move the obstacle, or skip the pair")

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
        _, cap, fpar, ipar = self._run_parameters(isinstance(goal, WorkspaceGoalRegion), ee)
        nodes, nodesT, parents, radii, size, istate = _new_trees(cap, q_start, goals[0], cont,
                                                                 goal_tries)
        retries = 0
        next_progress = t_start + _PROGRESS_NS
        reason = ""
        flag = np.zeros(1, dtype=np.int64)
        watcher: Optional[_StopWatcher] = None
        try:
            while True:
                t = time.monotonic_ns()
                hard = min(t + (_HARD_CHUNK_NS << min(retries, 10)), deadline)
                soft = min(t + _SOFT_CHUNK_NS, deadline)
                code = _rrt_chunk(F, I, BF, BI, nodes, nodesT, parents, radii, size, istate, rng,
                                  slo, shi, cont, fpar, ipar, wgr_arr, soft, hard, flag)
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
        path = _extract_path(nodes, parents, istate[_I_CONN0], istate[_I_CONN1], q_start, cont,
                             self._has_cont())
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
        a straight edge. Every edge of the result is valid at ``validation_distance``, the
        length never grows, endpoints are kept. Seeded by ``rng`` (Generator or int; None =
        ``options.seed``)."""
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
        k = _shortcut(F, I, BF, BI, buf, len(P), int(iterations), cont,
                      self.options.validation_distance,
                      self._check_self, state)
        return buf[:k].copy()

