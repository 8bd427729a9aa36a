"""Which self-collision pairs to disable: the job of MoveIt Setup Assistant's collision matrix.

Over the link pairs whose links both have collision geometry, a pair is disabled with reason

- ``Adjacent``: the links are joined by a joint (links without geometry in between are skipped:
  a link is adjacent to its nearest ancestor that has geometry);
- ``Default``: the pair collides at the home configuration (MoveIt's default positions: every
  joint at zero, or at the middle of its range when zero is outside it);
- ``Always``: the pair collides in at least ``always_fraction`` (95 %) of the samples;
- ``Never``: the pair collides in none of the samples,

checked in that order (a pair gets the first reason that applies). The samples are uniform
within the joint limits (continuous joints in [-pi, pi]), seeded, and evaluated by the compiled
per-pair counting kernel (:mod:`.pair_counts`) in batches; a pair that has both collided and
been free in more than ``1 - always_fraction`` of all samples can be neither ``Always`` nor
``Never`` and is not evaluated further. Geometry is the robot's as loaded (mesh hulls or
decomposition parts), with zero padding. ``Never`` is a sampling statement: with 10^5 samples a
pair that collides in a fraction p of the joint space is missed with probability (1 - p)^(10^5)
(below 1e-4 for p = 1e-4).

Hull-only overlaps: a mesh collides as its convex hull, so two links can overlap as hulls where
their meshes do not touch (MoveIt Setup Assistant checks the meshes themselves). Pairs disabled
as ``Default`` are sampled too: :meth:`GenerationResult.warnings` names each one that also
collides away from home (disabling it hides those collisions) and whether a mesh hull is
involved, in which case the overlap may exist only for the hulls and
``mesh_mode="decomposition"`` (CLI ``--mesh-mode decomposition``) checks the pair against convex
parts that follow the mesh.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ConfigurationError
from ..model.robot_model import RobotModel
from .pair_counts import pair_collision_counts
from .scene import robot_arrays

__all__ = [
    "REASONS",
    "DisabledPair",
    "GenerationResult",
    "SRDFGenerationOptions",
    "generate_disabled_pairs",
]

REASONS = ("Adjacent", "Default", "Always", "Never")
"""The reasons written into ``disable_collisions``, in the order they are decided."""

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SRDFGenerationOptions:
    """``samples``: random configurations (MoveIt's default is 10^4; 10^5 makes ``Never``
    safer); ``seed``: of the sampler (None: fresh entropy); ``always_fraction``: share of the
    samples in collision from which a pair is ``Always``; ``batch_size``: configurations per
    kernel call (progress granularity)."""

    samples: int = 100_000
    seed: Optional[int] = 0
    always_fraction: float = 0.95
    batch_size: int = 10_000

    def __post_init__(self) -> None:
        if int(self.samples) < 1:
            raise ConfigurationError(f"samples must be at least 1, got {self.samples}")
        if not 0.0 < float(self.always_fraction) <= 1.0:
            raise ConfigurationError(
                f"always_fraction must be in (0, 1], got {self.always_fraction}"
            )
        if int(self.batch_size) < 1:
            raise ConfigurationError(f"batch_size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True)
class DisabledPair:
    """A link pair to disable, with its SRDF ``reason`` (one of :data:`REASONS`)."""

    link1: str
    link2: str
    reason: str


@dataclass(frozen=True)
class GenerationResult:
    """``disabled`` pairs (ordered by reason, then tree order), ``candidate_pairs`` (pairs of
    links with geometry), ``collision_counts`` (pair -> colliding samples, for the sampled
    pairs; a lower bound for pairs evaluated only partly), ``samples`` and wall ``seconds``."""

    disabled: list[DisabledPair]
    candidate_pairs: int
    collision_counts: dict[tuple[str, str], int]
    samples: int
    seconds: float
    default_collision_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    """Pairs disabled as ``Default``: colliding samples (all of them evaluated)."""
    mesh_links: frozenset[str] = frozenset()
    """Links with mesh geometry (hulls or decomposition parts)."""

    def by_reason(self) -> dict[str, int]:
        out = dict.fromkeys(REASONS, 0)
        for p in self.disabled:
            out[p.reason] += 1
        return out

    def hull_involved(self, link1: str, link2: str) -> bool:
        """Whether a mesh (convex hull or parts) is part of the pair's geometry: then an
        overlap may exist only for the hulls."""
        return link1 in self.mesh_links or link2 in self.mesh_links

    def warnings(self) -> list[str]:
        """One sentence per ``Default`` pair that also collides in the samples: disabling it
        hides those collisions. Says whether a mesh hull is involved and what resolves it."""
        out: list[str] = []
        for (a, b), n in sorted(self.default_collision_counts.items(), key=lambda kv: -kv[1]):
            if n == 0 or self.samples == 0:
                continue
            share = 100.0 * n / self.samples
            text = (
                f"{a} / {b}: disabled as Default (colliding at the home pose) but also colliding "
                f"in {share:.1f} % of the samples; disabling it hides those collisions."
            )
            if self.hull_involved(a, b):
                text += (
                    " A mesh collides as its convex hull here: the overlap may exist only for "
                    "the hulls. Regenerate with mesh_mode='decomposition' for these links (CLI "
                    "--mesh-mode decomposition), whose convex parts follow the mesh, and keep "
                    "the pair checked if it is no longer Default."
                )
            else:
                text += (
                    " Its shapes are exact (no mesh): the links really touch at home; check the "
                    "home pose or the geometry, or keep the pair checked away from home."
                )
            out.append(text)
        return out


def _adjacent_pairs(robot: RobotModel, has_geom: list[bool]) -> set[tuple[int, int]]:
    """Link index pairs (a < b): each link with geometry and its nearest ancestor with geometry."""
    parent = robot.kin.parent
    out: set[tuple[int, int]] = set()
    for i in range(1, len(robot.link_names)):
        if not has_geom[i]:
            continue
        p = int(parent[i])
        while p >= 0 and not has_geom[p]:
            p = int(parent[p])
        if p >= 0:
            out.add((min(p, i), max(p, i)))
    return out


def generate_disabled_pairs(
    robot: RobotModel,
    options: SRDFGenerationOptions = SRDFGenerationOptions(),
    progress: Optional[Progress] = None,
) -> GenerationResult:
    """Decide the ``disable_collisions`` entries of ``robot`` (see the module docstring).
    ``progress(done, total)`` is called after each batch of samples."""
    t0 = time.perf_counter()
    rs = robot_arrays(robot)
    names = robot.link_names
    L = len(names)
    counts_per_link = np.diff(rs.link_start)
    has_geom = [bool(c > 0) for c in counts_per_link]
    cand = [(a, b) for a in range(L) for b in range(a + 1, L) if has_geom[a] and has_geom[b]]
    reason: dict[tuple[int, int], str] = {}
    for pair in _adjacent_pairs(robot, has_geom):
        reason[pair] = "Adjacent"
    rest = [p for p in cand if p not in reason]
    pa = np.array([a for a, _ in rest], dtype=np.int64)
    pb = np.array([b for _, b in rest], dtype=np.int64)
    # Default: colliding at home
    home = robot.home_configuration()[None, :]
    at_home = pair_collision_counts(home, robot.kin, rs, pa, pb, np.ones(len(rest), bool))
    for k, p in enumerate(rest):
        if at_home[k] > 0:
            reason[p] = "Default"
    sampled = np.array([p not in reason for p in rest], dtype=bool)
    is_default = np.array([reason.get(p) == "Default" for p in rest], dtype=bool)
    # sampling
    N = int(options.samples)
    rng = np.random.default_rng(options.seed)
    lo, hi = robot.sampling_bounds()
    counts = np.zeros(len(rest), dtype=np.int64)
    active = sampled | is_default  # Default pairs: counted over every sample (for warnings)
    free_needed = (1.0 - options.always_fraction) * N  # free samples that rule out Always
    done = 0
    if progress is not None:
        progress(0, N)
    while done < N:
        m = min(int(options.batch_size), N - done)
        Q = rng.uniform(lo, hi, size=(m, robot.num_joints))
        counts += pair_collision_counts(Q, robot.kin, rs, pa, pb, active)
        done += m
        # decided: collided at least once (not Never) and free too often to be Always
        active &= ~((counts > 0) & (done - counts > free_needed) & sampled)
        if progress is not None:
            progress(done, N)
    for k, p in enumerate(rest):
        if not sampled[k]:
            continue
        if counts[k] >= options.always_fraction * N:
            reason[p] = "Always"
        elif counts[k] == 0:
            reason[p] = "Never"
    order = {r: i for i, r in enumerate(REASONS)}
    disabled = [
        DisabledPair(names[a], names[b], r)
        for (a, b), r in sorted(reason.items(), key=lambda kv: (order[kv[1]], kv[0]))
    ]
    count_map = {
        (names[a], names[b]): int(counts[k]) for k, (a, b) in enumerate(rest) if sampled[k]
    }
    default_map = {
        (names[a], names[b]): int(counts[k]) for k, (a, b) in enumerate(rest) if is_default[k]
    }
    from ..geometry.shapes import Mesh

    mesh_links = frozenset(
        n for n in names if any(isinstance(sh, Mesh) for sh, _ in robot.collision_geometry(n))
    )
    return GenerationResult(
        disabled, len(cand), count_map, N, time.perf_counter() - t0, default_map, mesh_links
    )
