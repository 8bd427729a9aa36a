"""Self- and world-collision checking with MATLAB ``checkCollision`` semantics.

Matrix layout of :class:`CheckResult` (m bodies, w world objects): rows are the m bodies then the
base (m + 1 rows); columns are the m bodies, the base, then the world objects (m + 1 + w).
Entries: separation distance (m) of the pair, minus its padding; NaN when the pair collides
(padded signed distance < 0); Inf when the pair is skipped, not evaluated, or on the diagonal.
``signed`` holds the same values with the (negative) penetration depth instead of NaN.
``witness[i, j]`` (2, 3) holds the nearest point on row body i and on column body j (base
frame), NaN for colliding pairs, Inf where not evaluated.

Skip rules: ``"parent"`` (default) skips each body with its parent (the base is the parent of
root bodies); ``"adjacent"`` skips consecutive entries of ``[base] + body_names``; a list of name
pairs skips exactly those pairs. An SRDF's ``disable_collisions`` pairs are always added
(``use_srdf=False`` turns that off).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError
from ..geometry.shapes import WorldObject
from ..jitcall import entry_point
from ..model.kinematics import FIXED
from ..model.robot_model import RobotModel
from .block_kernels import (
    BlockRobot,
    BlockScene,
    batch_valid_blocked,
    batch_valid_blocked_parallel,
    block_robot,
    block_scene,
    block_workspace,
    edge_valid_blocked,
    single_valid_blocked,
)
from .certified import first_uncertified_blocked
from .clearance import ClearanceTable, clearance_table
from .kernels import (
    matlab_matrices,
    motion_valid,
    packed_pairs,
    packed_pairs_into,
    packed_valid,
    packed_valid_batch,
    packed_valid_serial,
)
from .pair_tables import PairTables, no_pair_tables, pair_tables
from .results import CheckResult, PairDistances
from .scene import PairArrays, RobotArrays, WorldArrays, robot_arrays, world_arrays
from .scene_packing import WORLD_SKIP_FIELD, pack_scene

__all__ = ["CollisionChecker", "CheckResult", "SkipRule", "Padding", "PairDistances"]

_FLOAT64 = np.dtype(np.float64)

PARALLEL_BATCH_MIN = 2048
"""Batches at least this large are split over threads; smaller ones run in the caller."""

SkipRule = Union[Literal["parent", "adjacent"], Sequence[tuple[str, str]]]
Padding = Union[float, Mapping[tuple[str, str], float]]


def _tree_distances(parent: NDArray[np.int64]) -> NDArray[np.int64]:
    """(L, L) number of joints between links ``i`` and ``j`` in the kinematic tree (``parent``:
    (L,) parent link index, -1 for the root).

    The checkers evaluate self pairs in this order, nearest first: links two or three joints
    apart (a leg's upper link and the body, a wrist and the forearm) are the pairs that collide
    most often, so a boolean check of a colliding configuration stops sooner. On the corpus
    robots that collide in every random configuration (solo12, hextilt, bolt), the first
    colliding pair moved from index 26, 7, 13 on average (MATLAB order) to the first few."""
    L = parent.shape[0]
    depth = np.zeros(L, dtype=np.int64)
    for i in range(L):
        p = parent[i]
        while p >= 0:
            depth[i] += 1
            p = parent[p]
    hops = np.zeros((L, L), dtype=np.int64)
    for i in range(L):
        for j in range(i + 1, L):
            a, b, n = i, j, 0
            while a != b:
                if depth[a] >= depth[b]:
                    a = parent[a]
                else:
                    b = parent[b]
                n += 1
            hops[i, j] = hops[j, i] = n
    return hops


class _Scene(NamedTuple):
    """Immutable snapshot of the compiled scene for one world."""

    rs: RobotArrays
    ws: WorldArrays
    pr: PairArrays
    F: NDArray[np.float64]
    I: NDArray[np.int64]
    world_names: list[str]
    # the scene for the 8-configuration kernels (None: not supported, scalar kernels only)
    block: Optional[BlockScene]
    objs: list[WorldObject]  # the world objects this scene was built for
    version: int  # the robot's geometry version it was built for
    # single-configuration validity: valid(q, valid_f, valid_i, check_self) -> 1 / 0 / -1
    # (the 8-configuration kernel when the scene supports it, else the scalar one)
    valid: Callable[..., int]
    valid_f: NDArray[np.float64]
    valid_i: NDArray[np.int64]
    qshape: tuple[int]  # (n,)


class CollisionChecker:
    """Checks a :class:`RobotModel` against itself and a list of :class:`WorldObject`.

    Thread-safe: the compiled scene is rebuilt under a lock and every call works on an
    immutable snapshot of it.

    ``padding`` (m) is subtracted from every pair's distance: a scalar, or a mapping from name
    pairs (bodies, base or world-object names; order does not matter) to padding with the
    scalar default under the key ``("*", "*")``. Geometry changes made on the model with
    ``add_collision``/``clear_collision`` are picked up on the next call.
    """

    def __init__(
        self,
        robot: RobotModel,
        skip: SkipRule = "parent",
        padding: Padding = 0.0,
        use_srdf: bool = True,
    ) -> None:
        self.robot = robot
        self.skip = skip
        self.use_srdf = use_srdf
        self._default_pad, self._pair_pad = self._parse_padding(padding)
        self._enabled = self._enabled_matrix(skip, use_srdf)
        self._rs: Optional[RobotArrays] = None
        self._block_robot: Optional[BlockRobot] = None
        self._version = -1
        self._world_key: Optional[tuple[int, ...]] = None
        self._world: Optional[WorldArrays] = None
        self._world_names: list[str] = []
        self._scene: Optional[_Scene] = None
        self._lock = threading.Lock()
        self._pairs: Optional[PairArrays] = None
        # scenes built ahead of time by prepare() (a cloud worker), newest last, at most
        # PREBUILT_SCENES: a call whose world is one of them adopts it instead of rebuilding
        self._prebuilt: list[_Scene] = []
        self._refresh()

    # ------------------------------------------------------------------ configuration
    def _parse_padding(self, padding: Padding) -> tuple[float, dict[frozenset[str], float]]:
        if isinstance(padding, Mapping):
            pairs: dict[frozenset[str], float] = {}
            default = 0.0
            for key, val in padding.items():
                v = float(val)
                if not np.isfinite(v):
                    raise ConfigurationError(f"padding for {key} must be finite")
                if tuple(key) == ("*", "*"):
                    default = v
                    continue
                if len(key) != 2:
                    raise ConfigurationError(f"padding keys must be name pairs, got {key!r}")
                for name in key:
                    if name in self.robot.link_names:
                        continue
                    # world-object names are allowed; they are matched when a world is given
                pairs[frozenset(key)] = v
            return default, pairs
        v = float(padding)
        if not np.isfinite(v):
            raise ConfigurationError("padding must be a finite number of metres")
        return v, {}

    def _enabled_matrix(self, skip: SkipRule, use_srdf: bool) -> NDArray[np.bool_]:
        r = self.robot
        L = len(r.link_names)
        en = np.ones((L, L), dtype=bool)
        np.fill_diagonal(en, False)

        def off(a: int, b: int) -> None:
            en[a, b] = en[b, a] = False

        if isinstance(skip, str):
            if skip == "parent":
                for i in range(1, L):
                    off(i, int(r.kin.parent[i]))
            elif skip == "adjacent":
                for i in range(1, L):
                    off(i - 1, i)
            else:
                raise ConfigurationError(
                    "skip must be 'parent', 'adjacent' or a list of (body, body) pairs, "
                    f"got {skip!r}"
                )
        else:
            for pair in skip:
                if len(pair) != 2:
                    raise ConfigurationError(f"skip pairs must be (body, body), got {pair!r}")
                off(r.link_index(pair[0]), r.link_index(pair[1]))
        if use_srdf:
            for a, b in r.disabled_pairs():
                off(r.link_index(a), r.link_index(b))
        return en

    def _pad(self, a: str, b: str) -> float:
        return self._pair_pad.get(frozenset((a, b)), self._default_pad)

    def pair_padding(self, a: str, b: str) -> float:
        """The padding (m) of the pair of bodies ``a``, ``b`` (links or world objects)."""
        return self._pad(a, b)

    def _refresh(self) -> None:
        if self._version == self.robot.geometry_version and self._rs is not None:
            return
        rs = robot_arrays(self.robot)
        self._rs = rs
        self._block_robot = block_robot(self.robot.kin, rs)  # None: scalar kernels only
        self._version = self.robot.geometry_version
        counts = np.diff(rs.link_start)
        names = self.robot.link_names
        L = len(names)
        # MATLAB row-major order over (bodies..., base) x (bodies..., base)
        order = [*range(1, L), 0]
        sa, sb, sp = [], [], []
        seen = set()
        for i in order:
            for j in order:
                a, b = min(i, j), max(i, j)
                if a == b or (a, b) in seen or not self._enabled[a, b]:
                    continue
                seen.add((a, b))
                if counts[a] == 0 or counts[b] == 0:
                    continue
                sa.append(a)
                sb.append(b)
                sp.append(self._pad(names[a], names[b]))
        # evaluation order: pairs closest in the kinematic tree first (stable, MATLAB order
        # among equals), see _tree_distances
        hops = _tree_distances(self.robot.kin.parent)
        rank = sorted(range(len(sa)), key=lambda k: hops[sa[k], sb[k]])
        sa, sb, sp = [sa[k] for k in rank], [sb[k] for k in rank], [sp[k] for k in rank]
        a_arr, b_arr = np.asarray(sa, dtype=np.int64), np.asarray(sb, dtype=np.int64)
        # (the 8-lane kernels of sphere robots use no tables)
        tables = (no_pair_tables(len(a_arr)) if self._block_robot is not None
                  else pair_tables(self.robot.kin, rs, a_arr, b_arr))
        self._self_pairs = (a_arr, b_arr, np.asarray(sp, dtype=float), tables)
        self._world_key = None
        self._pairs = None
        self._scene = None
        self._prebuilt = []

    def _prepare(self, world: Union[Sequence[WorldObject], None]) -> _Scene:
        """The compiled scene for ``world`` (cached; rebuilt when the world or geometry
        changes). Thread-safe: callers use the returned snapshot, never the attributes."""
        objs = world if type(world) is list else (list(world) if world is not None else [])
        scene = self._scene  # one snapshot: its objects and version are its own
        # (list equality is identity here: WorldObject compares by identity)
        if (scene is not None and objs == scene.objs
                and scene.version == self.robot.geometry_version):
            return scene
        with self._lock:
            if self._prebuilt:
                self._refresh()
                for pre in self._prebuilt:
                    if pre.objs == objs and pre.version == self._version:
                        self._adopt(pre, tuple(map(id, objs)))
                        return pre
            return self._rebuild(list(objs), tuple(map(id, objs)))

    def prepare(self, world: Sequence[WorldObject]) -> None:
        """Build the compiled scene for ``world`` now, so that the first call with exactly
        these objects (the same objects, in the same order) only adopts it.

        For a thread that produces worlds (a node's point-cloud worker): packing a scene of
        many balls takes tens of ms, which a control tick must not spend. The build runs
        outside the checker's lock (calls on other worlds go on meanwhile); the last
        ``PREBUILT_SCENES`` scenes are kept. Results of every call are the same as without."""
        objs = list(world)
        with self._lock:
            self._refresh()
            base = (self._rs, self._block_robot, self._self_pairs, self._version)
        scene = self._build(objs, *base)
        with self._lock:
            if scene.version == self.robot.geometry_version:
                self._prebuilt = [*self._prebuilt, scene][-self.PREBUILT_SCENES:]

    PREBUILT_SCENES = 2

    def _adopt(self, scene: _Scene, key: tuple[int, ...]) -> None:
        self._world = scene.ws
        self._world_names = scene.world_names
        self._pairs = scene.pr
        self._world_key = key
        self._world_objs = scene.objs  # keep ids alive
        self._scene = scene

    def _build(self, objs: list[WorldObject], rs: Optional[RobotArrays],
               block_robot: Optional[BlockRobot],
               self_pairs: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64],
                                 PairTables],
               version: int) -> _Scene:
        """The scene for ``objs`` on the robot arrays given (touches no attribute)."""
        ws = world_arrays(objs)
        names = [o.name or f"object{k}" for k, o in enumerate(objs)]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"world object names must be unique, got {names}")
        L = len(self.robot.link_names)
        wp = np.full((L, len(objs)), self._default_pad)
        if self._pair_pad:
            for li, ln in enumerate(self.robot.link_names):
                for o, on in enumerate(names):
                    wp[li, o] = self._pad(ln, on)
        sa, sb, sp, tables = self_pairs
        static = self._static_links()
        # non-static pairs skipped: the kernel below sees only the static ones
        skip = np.repeat(~static[:, None], len(objs), axis=1).astype(np.int64)
        pairs = PairArrays(sa, sb, sp, wp, *tables, skip)
        assert rs is not None
        F, I = pack_scene(self.robot.kin, rs, ws, pairs)
        # The links fixed to the base never move: their pairs with the world have one verdict
        # for every configuration, found here by the validity kernel itself (q = 0, self pairs
        # off). If they are all free they are skipped from now on; if one collides, nothing is
        # skipped (every configuration is then in collision, and the kernel says why).
        seg = I[I[4 * WORLD_SKIP_FIELD]: I[4 * WORLD_SKIP_FIELD] + skip.size]
        static_free = (static.any() and len(objs) > 0
                       and packed_valid(np.zeros(self.robot.num_joints), F, I, False) == 1)
        skip[:] = static[:, None] & static_free
        seg[:] = skip.ravel()
        block = (block_scene(self.robot.kin, rs, ws, pairs, block_robot)
                 if block_robot is not None else None)
        if block is not None:
            kernel, vf, vi = single_valid_blocked, block.BF, block.BI
        else:
            kernel, vf, vi = packed_valid, F, I
        valid = entry_point(kernel, np.zeros(self.robot.num_joints), vf, vi, True)
        return _Scene(rs, ws, pairs, F, I, names, block, objs, version, valid, vf, vi,
                      (self.robot.num_joints,))

    def _static_links(self) -> NDArray[np.bool_]:
        """(L,) bool: links whose pose does not depend on the configuration (the base and
        the links attached to it through fixed joints only)."""
        kin = self.robot.kin
        parent, jtype = np.asarray(kin.parent), np.asarray(kin.jtype)
        static = np.zeros(len(parent), dtype=bool)
        static[0] = True
        for i in range(1, len(parent)):  # parents come before their children
            static[i] = jtype[i] == FIXED and static[parent[i]]
        return static

    def _rebuild(self, objs: list[WorldObject], key: tuple[int, ...]) -> _Scene:
        self._refresh()
        if key != self._world_key or self._scene is None:
            self._adopt(self._build(objs, self._rs, self._block_robot, self._self_pairs,
                                    self._version), key)
        assert self._scene is not None
        return self._scene

    # ------------------------------------------------------------------ names
    @property
    def row_names(self) -> list[str]:
        return [*self.robot.body_names, self.robot.base_name]

    def column_names(self, world: Sequence[WorldObject] = ()) -> list[str]:
        return self.row_names + [o.name or f"object{k}" for k, o in enumerate(world)]

    def is_pair_checked(self, a: str, b: str) -> bool:
        """Whether self pair (a, b) is evaluated under the skip rules."""
        return bool(self._enabled[self.robot.link_index(a), self.robot.link_index(b)])

    # ------------------------------------------------------------------ boolean checks
    def is_valid(
        self, q: ArrayLike, world: Sequence[WorldObject] = (), ignore_self: bool = False
    ) -> bool:
        """True when ``q`` (n,) is collision-free against itself (unless ``ignore_self``) and
        ``world``."""
        # Fixed cost matters here (a check of a small robot takes ~1 us in compiled code): the
        # common case -- the cached scene, a float64 (n,) array -- takes one path of cheap tests
        # (identity, not equality, for the dtype; finiteness is checked in compiled code).
        sc = self._scene
        if world or sc is None or sc.objs or sc.version != self.robot.geometry_version:
            sc = self._prepare(world)
        if not (
            type(q) is np.ndarray
            and q.dtype is _FLOAT64
            and q.shape == sc.qshape
            and q.flags.c_contiguous
        ):
            q = self.robot.validate_configuration(q)
        # (sc.valid is the kernel's compiled entry for exactly these argument types)
        code: int = sc.valid(q, sc.valid_f, sc.valid_i, not ignore_self)
        if code < 0:
            self.robot.validate_configuration(q)  # raises with the offending joints named
        return code > 0

    def is_valid_batch(
        self, Q: ArrayLike, world: Sequence[WorldObject] = (), ignore_self: bool = False
    ) -> NDArray[np.bool_]:
        """(N,) bool, True = collision-free, for a batch of configurations ``Q`` (N, n)."""
        arr = self.robot.validate_batch(Q)
        sc = self._prepare(world)
        F, I = sc.F, sc.I
        out = np.empty(arr.shape[0], dtype=np.bool_)
        if sc.block is not None:
            if arr.shape[0] >= PARALLEL_BATCH_MIN:
                batch_valid_blocked_parallel(arr, sc.block.BF, sc.block.BI, not ignore_self, out)
            elif arr.shape[0]:
                batch_valid_blocked(arr, sc.block.BF, sc.block.BI, not ignore_self, out)
        elif arr.shape[0] >= PARALLEL_BATCH_MIN:
            packed_valid_batch(arr, F, I, not ignore_self, out)
        elif arr.shape[0]:
            packed_valid_serial(arr, F, I, not ignore_self, out)
        return out

    def is_motion_valid(
        self,
        q0: ArrayLike,
        q1: ArrayLike,
        world: Sequence[WorldObject] = (),
        resolution: float = 1.0 / 32.0,
        ignore_self: bool = False,
        *,
        mode: Literal["certified", "discrete"] = "certified",
        min_clearance: float = 0.0,
    ) -> bool:
        """Whether the straight joint-space motion q0 -> q1 is collision-free.

        ``mode="certified"`` (default): proven free over the whole segment, every
        configuration between q0 and q1, by conservative advancement (distance lower bounds
        against bounds of how far each body can move; see
        :mod:`robot_collision.planning.certified`), with every checked pair's padded signed
        distance at least ``min_clearance`` (m); False also when it cannot be proven (a motion
        grazing an obstacle). ``mode="discrete"``: every configuration every ``resolution``
        (L2 joint distance) is collision-free; the motion may touch an obstacle between two of
        them. ``resolution`` is the discrete check's (the certified mode runs it first, to
        reject colliding motions quickly)."""
        a = self.robot.validate_configuration(q0, "start configuration")
        b = self.robot.validate_configuration(q1, "end configuration")
        if not resolution > 0:
            raise ConfigurationError("resolution must be a positive joint-space distance")
        if mode not in ("certified", "discrete"):
            raise ConfigurationError(f"mode must be 'certified' or 'discrete', got {mode!r}")
        if not (np.isfinite(min_clearance) and min_clearance >= 0.0):
            raise ConfigurationError("min_clearance must be a finite number >= 0 (m)")
        if min_clearance > 0.0 and mode != "certified":
            raise ConfigurationError("min_clearance needs mode='certified' (discrete motions are "
                                     "checked only at samples: use the checker's padding)")
        sc = self._prepare(world)
        if not self._motion_valid_discrete(sc, a, b, resolution, ignore_self):
            return False
        if mode == "discrete":
            return True
        BF, BI = ((sc.block.BF, sc.block.BI) if sc.block is not None
                  else (np.zeros(0), np.zeros(0, dtype=np.int64)))
        bad, _ = first_uncertified_blocked(a[None], (b - a)[None], np.zeros((1, a.shape[0])),
                                           sc.F, sc.I, BF, BI, not ignore_self,
                                           float(min_clearance))
        return bool(bad == -1)

    def _motion_valid_discrete(self, sc: _Scene, a: NDArray[np.float64], b: NDArray[np.float64],
                               resolution: float, ignore_self: bool) -> bool:
        rs, ws, pr = sc.rs, sc.ws, sc.pr
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) / resolution)))
        if sc.block is not None:
            W, RI = block_workspace(sc.block.BI)
            return edge_valid_blocked(a, b - a, steps, 0, sc.block.BF, sc.block.BI, W, RI,
                                      not ignore_self) > 0
        L = len(self.robot.link_names)
        return bool(
            motion_valid(
                a,
                b,
                steps,
                self.robot.kin,
                rs,
                ws,
                pr,
                not ignore_self,
                np.empty((L, 4, 4)),
                np.empty((len(rs.kind), 4, 4)),
                np.zeros(L, dtype=np.bool_),
                np.empty((L + 3, 3)),
            )
        )

    # ------------------------------------------------------------------ distances
    def pair_distances(
        self,
        q: ArrayLike,
        world: Sequence[WorldObject] = (),
        exhaustive: bool = True,
        ignore_self: bool = False,
        cutoff: float = float("inf"),
        moving_only: bool = False,
        out: Optional[PairDistances] = None,
    ) -> PairDistances:
        """Raw link-indexed distances for every evaluated pair (see :class:`PairDistances`).

        Pairs at or beyond ``cutoff`` (m, padded) may be reported as +inf (pruned). With
        ``moving_only`` the world pairs of links fixed to the base (whose distances no joint
        motion changes) are not evaluated: +inf, ``E`` false. With ``out`` (an earlier result
        for the same robot and number of world objects) its arrays are overwritten and reused,
        as numpy's ``out=``: in a loop this saves allocating and returning six arrays (~3 us,
        the bulk of a call on a robot with few pairs); ``out``'s old values are lost."""
        arr = self.robot.validate_configuration(q)
        sc = self._prepare(world)
        args = (arr, sc.F, sc.I, exhaustive, not ignore_self, float(cutoff), bool(moving_only))
        if out is None:
            T, D, WA, WB, NN, E, hit = packed_pairs(*args)
            return PairDistances(T, D, WA, WB, NN, E, bool(hit), sc.world_names)
        if type(out) is not PairDistances:
            raise ConfigurationError(f"out must be a PairDistances, got {type(out).__name__}")
        T, D, WA, WB, NN, E = out[:6]
        hit = packed_pairs_into(*args, T, D, WA, WB, NN, E)
        if hit < 0:
            L = len(self.robot.link_names)
            raise ConfigurationError(
                f"out has D of shape {D.shape}; this robot and world need "
                f"({L}, {L + len(sc.world_names)}): pass out=None once after the world changes"
            )
        return PairDistances(T, D, WA, WB, NN, E, hit > 0, sc.world_names)

    def check(
        self,
        q: ArrayLike,
        world: Sequence[WorldObject] = (),
        exhaustive: bool = False,
        ignore_self: bool = False,
    ) -> CheckResult:
        """MATLAB-style check at ``q`` (n,) against ``world``; see the module docstring."""
        world = list(world)
        pdist = self.pair_distances(q, world, exhaustive, ignore_self)
        L = len(self.robot.link_names)
        m = L - 1
        sep, signed, wit, colliding = matlab_matrices(pdist.D, pdist.WA, pdist.WB, pdist.E, L)
        rows = self.row_names
        cols = rows + pdist.world_names
        pairs: list[tuple[str, str]] = []
        if pdist.collided:
            for i, j in zip(*np.nonzero(colliding)):
                if j <= m and j < i:
                    continue  # report each self pair once
                pairs.append((rows[i], cols[j]))
        self_col = bool(pdist.collided and colliding[:, : m + 1].any())
        world_col = bool(pdist.collided and colliding[:, m + 1 :].any())
        return CheckResult(self_col, world_col, sep, signed, wit, rows, cols, pairs)

    def signed_distance(
        self, q: ArrayLike, world: Sequence[WorldObject] = (), ignore_self: bool = False
    ) -> NDArray[np.float64]:
        """Exhaustive (m+1, m+1+w) padded signed-distance matrix (negative = penetration)."""
        return self.check(q, world, exhaustive=True, ignore_self=ignore_self).signed

    def min_distance(
        self, q: ArrayLike, world: Sequence[WorldObject] = (), ignore_self: bool = False
    ) -> float:
        """Smallest padded signed distance over every evaluated pair (inf when none)."""
        d = self.pair_distances(q, world, True, ignore_self).D
        return float(d.min()) if d.size else float("inf")

    @property
    def world_names(self) -> list[str]:
        """Names of the world objects of the last call (``object<k>`` when unnamed)."""
        return list(self._world_names)

    def clearance(
        self,
        q: ArrayLike,
        world: Sequence[WorldObject] = (),
        influence_distance: float = float("inf"),
        ignore_self: bool = False,
    ) -> ClearanceTable:
        """Clearance rows (padded signed distance < ``influence_distance``) with Jacobians."""
        pd = self.pair_distances(
            q, world, exhaustive=True, ignore_self=ignore_self, cutoff=influence_distance
        )
        return clearance_table(self.robot, pd, influence_distance)

    def packed(
        self, world: Sequence[WorldObject] = ()
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``(F, I)``: the scene for ``world`` packed for the compiled kernels (see
        ``scene_packing.pack_scene``); the checker's own cached copy, to be read, never written."""
        sc = self._prepare(world)
        return sc.F, sc.I

    def compiled(
        self, world: Sequence[WorldObject] = ()
    ) -> tuple[object, RobotArrays, WorldArrays, PairArrays]:
        """``(kin, rs, ws, pr)`` tuples for calling the compiled kernels directly."""
        sc = self._prepare(world)
        rs, ws, pr = sc.rs, sc.ws, sc.pr
        return self.robot.kin, rs, ws, pr
