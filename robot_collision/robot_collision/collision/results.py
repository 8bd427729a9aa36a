"""Result types of :class:`~.checker.CollisionChecker` queries (see :mod:`.checker` for the
matrix layout of :class:`CheckResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np
from numpy.typing import NDArray

__all__ = ["PairDistances", "CheckResult"]


class PairDistances(NamedTuple):
    """Link-indexed raw output of one evaluation (see :func:`.kernels.evaluate_pairs`).

    L links (base = 0), W world objects; ``T`` (L, 4, 4) link poses (base frame), ``D``
    (L, L + W) padded signed distances (m, +inf where not evaluated or pruned), ``WA``/``WB``
    (L, L+W, 3) witness points (base frame, m), ``NN`` (L, L+W, 3) unit normals from row to
    column, ``E`` evaluated flags; self pairs are stored at ``[a, b]`` with a < b. ``WA``, ``WB``
    and ``NN`` are defined only where ``D`` is finite (elsewhere uninitialised: filling them
    cost more than the pairs on robots with many frames). A named tuple, not a frozen
    dataclass: built once per query, and a dataclass' frozen ``__init__`` cost ~1 us of
    ``pair_distances``' ~30 us on a 6-joint arm.
    """

    T: NDArray[np.float64]
    D: NDArray[np.float64]
    WA: NDArray[np.float64]
    WB: NDArray[np.float64]
    NN: NDArray[np.float64]
    E: NDArray[np.bool_]
    collided: bool
    world_names: list[str]


@dataclass(frozen=True)
class CheckResult:
    """Result of :meth:`CollisionChecker.check` (see the module docstring for the layout)."""

    is_self_colliding: bool
    is_world_colliding: bool
    separation: NDArray[np.float64]  # (m+1, m+1+w)
    signed: NDArray[np.float64]  # (m+1, m+1+w)
    witness: NDArray[np.float64]  # (m+1, m+1+w, 2, 3)
    row_names: list[str]
    column_names: list[str]
    colliding_pairs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def in_collision(self) -> bool:
        return self.is_self_colliding or self.is_world_colliding

    def closest_pair(self) -> Optional[tuple[str, str, float]]:
        """(row name, column name, signed distance) of the evaluated pair with least distance."""
        s = np.where(np.isfinite(self.signed), self.signed, np.inf)
        if not np.isfinite(s).any():
            return None
        i, j = np.unravel_index(int(np.argmin(s)), s.shape)
        return self.row_names[i], self.column_names[j], float(s[i, j])
