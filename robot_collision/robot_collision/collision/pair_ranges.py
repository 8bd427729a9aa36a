"""Distance ranges of a robot's self pairs over its joint ranges, and the pairs that can never
keep a given margin.

Some robots have checked self pairs that are always close: the UR5e's ``base_link_inertia`` and
``upper_arm_link`` are 17.2 mm apart in every configuration (its SRDF does not disable them). A
safety distance or padding above that can never hold: a velocity filter would refuse every
command, a planner every start. :func:`self_pair_ranges` samples the joint ranges (uniformly,
seeded; continuous joints over one turn) and records each checked self pair's smallest and
largest distance; :func:`unsatisfiable_pairs` lists the pairs whose largest sampled distance is
below a margin, so that a node can name them at load and handle them (hold them where they are,
or tell the user to disable them). Sampling can miss the rare configurations where a pair is far
apart, never report a pair that does reach the margin: a reported pair was below the margin in
every sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .checker import CollisionChecker

__all__ = ["PairRange", "self_pair_ranges", "unsatisfiable_pairs"]


@dataclass(frozen=True)
class PairRange:
    """Sampled distance range (m, the checker's padded signed distance) of one self pair."""

    link_a: str
    link_b: str
    min_distance: float
    max_distance: float

    def __str__(self) -> str:
        return (f"{self.link_a}={self.link_b} ({1000 * self.min_distance:.1f}-"
                f"{1000 * self.max_distance:.1f} mm)")


def _samples(checker: CollisionChecker, count: int, seed: int) -> NDArray[np.float64]:
    robot = checker.robot
    lo = np.asarray(robot.lower, dtype=float)
    hi = np.asarray(robot.upper, dtype=float)
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    rng = np.random.default_rng(seed)
    qs = lo + (hi - lo) * rng.random((count, lo.shape[0]))
    return np.vstack([np.asarray(robot.home_configuration(), dtype=float)[None, :], qs])


def self_pair_ranges(checker: CollisionChecker, samples: int = 256, seed: int = 0,
                     configurations: Optional[NDArray[np.float64]] = None) -> list[PairRange]:
    """(min, max) distance of every self pair ``checker`` checks, over the home configuration
    and ``samples`` uniform samples of the joint ranges (or the given ``configurations``
    (k, n))."""
    qs = _samples(checker, samples, seed) if configurations is None else configurations
    names = checker.robot.link_names
    L = len(names)
    lo = np.full((L, L), np.inf)
    hi = np.full((L, L), -np.inf)
    seen = np.zeros((L, L), dtype=np.bool_)
    for q in qs:
        pd = checker.pair_distances(q, (), exhaustive=True)
        D = pd.D[:, :L]
        E = pd.E[:, :L] & np.isfinite(D)
        np.minimum(lo, np.where(E, D, np.inf), out=lo)
        np.maximum(hi, np.where(E, D, -np.inf), out=hi)
        seen |= E
    ii, jj = np.nonzero(seen)
    return [PairRange(names[i], names[j], float(lo[i, j]), float(hi[i, j]))
            for i, j in zip(ii.tolist(), jj.tolist())]


def unsatisfiable_pairs(checker: CollisionChecker, margin: float, samples: int = 256,
                        seed: int = 0) -> list[PairRange]:
    """Self pairs closer than ``margin`` (m) in every sample (see the module docstring)."""
    return [r for r in self_pair_ranges(checker, samples, seed) if r.max_distance < margin]
