"""One robot state merged from every ``sensor_msgs/JointState`` publisher, joint by joint.

Real arms publish their joints from several sources: one ``joint_state_broadcaster`` per
controller, a gripper driver of its own, a mobile base. A message then names only some of the
model's joints, at its own rate. :class:`JointStateCache` keeps, for every joint of the robot
model, its newest position, the time it was measured (the message's header stamp) and the time
it arrived; a node asks it for the configuration and learns how old its oldest joint is. The
checker, the velocity filter and the planner use this one mechanism.

Times are ``time.monotonic()`` seconds. A stamp is a time on the node's clock (the system
clock, or ``/clock`` with ``use_sim_time``); :func:`stamp_age` turns it into an age at arrival
(node clock now − stamp), and the cache stores ``arrival − age``: the moment of measurement on
the monotonic clock, so that later ages need no clock at all. A stamp ahead of the node clock by
more than ``future_tolerance`` is a bad message (a clock that is wrong, not a fresh state); one
ahead by less counts as measured at its arrival. A zero stamp (an unstamped message) counts as
measured at its arrival, as do messages when the caller passes no age.

Rules of a message (each refusal raises :class:`~robot_collision.ros.conversions.ConversionError`
with the reason and leaves the other joints as they were):

- names outside the model are ignored (other robots, passive joints the model lacks);
- a joint's measurement older than the one kept is ignored (out-of-order delivery, a second
  slower publisher of the same joint);
- a message naming no model joint is ignored (``update`` returns 0);
- names and positions of different lengths, a name given twice, a non-string name: refused;
- a NaN or infinite position of a model joint: refused, and the model joints the message names
  become *invalid* until a good value arrives for each (their source is broken: a consumer must
  not keep using their previous values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from .conversions import ConversionError, JointStateMapper, named_values

__all__ = ["JointStateCache", "JointStateSnapshot", "stamp_age", "stamp_ns"]


def stamp_ns(stamp: Any) -> Optional[int]:
    """A ``builtin_interfaces/Time`` in ns; None for a zero stamp (unstamped)."""
    ns = int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
    return ns if ns != 0 else None


def stamp_age(stamp: Any, clock_now: float) -> Optional[float]:
    """Age (s) of a ``builtin_interfaces/Time`` ``stamp`` at ``clock_now`` (s, the node clock);
    None for a zero stamp (unstamped). Negative when the stamp is ahead of the clock."""
    sec, nsec = int(stamp.sec), int(stamp.nanosec)
    if sec == 0 and nsec == 0:
        return None
    return clock_now - (float(sec) + 1e-9 * float(nsec))


@dataclass(frozen=True)
class JointStateSnapshot:
    """The merged state for a set of needed joints.

    ``q`` (n,) model order (NaN where a joint has no valid value); ``stamp`` the monotonic
    time the *oldest* needed joint was measured and ``arrival`` when the oldest-arrived needed
    joint arrived (-inf when one never did); ``fault`` "" when every needed joint has a valid
    value, else why not (naming the joints)."""

    q: NDArray[np.float64]
    stamp: float
    arrival: float
    fault: str
    velocity: Optional[NDArray[np.float64]] = None  # (n,) measured, NaN where not published

    def age(self, now: float) -> float:
        """Seconds since the oldest needed joint was measured."""
        return now - self.stamp


class JointStateCache:
    """Newest position, measurement time and arrival time of every model joint (see the module
    docstring). Not thread-safe: the caller serialises ``update`` and ``snapshot``."""

    def __init__(self, joint_names: Sequence[str], future_tolerance: float = 0.05) -> None:
        self.joint_names = list(joint_names)
        self.future_tolerance = float(future_tolerance)
        self._mapper = JointStateMapper(self.joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        n = len(self.joint_names)
        self._q = np.full(n, np.nan)
        self._qd = np.full(n, np.nan)
        self._stamp = np.full(n, -np.inf)
        self._arrival = np.full(n, -np.inf)
        self._stamp_ns = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        self._invalid: dict[int, str] = {}  # joint index -> why its value may not be used
        self._all = np.arange(n, dtype=np.int64)

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    def clear(self) -> None:
        """Forget every joint (a new robot model, a restart)."""
        self._q[:] = np.nan
        self._stamp[:] = -np.inf
        self._arrival[:] = -np.inf
        self._stamp_ns[:] = np.iinfo(np.int64).min
        self._invalid.clear()

    def update(self, names: Sequence[str], positions: Any, arrived: float,
               age: Optional[float] = None, what: str = "JointState",
               stamp_ns: Optional[int] = None, velocities: Any = None) -> int:
        """Take one message's ``names`` / ``positions``, arrived at monotonic ``arrived`` (s),
        ``age`` (s) old at arrival by its stamp (None: unstamped), ``stamp_ns`` its stamp (ns,
        orders the messages of a joint; None: unstamped, taken as the newest). Returns how
        many model joints it updated; raises ConversionError when it is refused (see the
        module docstring). ``velocities``: the message's measured velocities (used when there
        is one finite value per name; else the joints' velocities become unknown)."""
        names_t = tuple(names)
        try:
            model_idx, values = self._parse(names_t, positions, age, what)
        except ConversionError as exc:
            # the model joints it names come from a broken source: not usable until a good
            # value of each arrives
            named = [self._index[n] for n in names_t if isinstance(n, str) and n in self._index]
            for i in named:
                self._invalid[i] = str(exc)
            raise
        if model_idx.shape[0] == 0:
            return 0
        measured = arrived - max(age, 0.0) if age is not None else arrived
        if stamp_ns is not None:
            # a measurement older than the one kept (delivered out of order, or a slower
            # publisher of the same joint) never replaces it; compared on the stamps
            # themselves (the monotonic times derived from them carry clock-reading jitter)
            newer = self._stamp_ns[model_idx] <= stamp_ns
            if not newer.all():
                model_idx, values = model_idx[newer], values[newer]
                if model_idx.shape[0] == 0:
                    return 0
            self._stamp_ns[model_idx] = stamp_ns
        else:
            self._stamp_ns[model_idx] = np.iinfo(np.int64).min
        self._q[model_idx] = values
        vel = None
        if velocities is not None and len(velocities) == len(names_t):
            v = np.asarray(velocities, dtype=float)
            vel = v[self._mapper._layout(names_t, True)[1]]
            if stamp_ns is not None and model_idx.shape[0] != vel.shape[0]:
                vel = None  # some joints were older measurements (dropped above)
        self._qd[model_idx] = vel if vel is not None else np.nan
        self._stamp[model_idx] = measured
        self._arrival[model_idx] = arrived
        if self._invalid:
            for i in model_idx.tolist():
                self._invalid.pop(i, None)
        return int(model_idx.shape[0])

    def _parse(self, names: tuple[str, ...], positions: Any, age: Optional[float], what: str
               ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(model indices, their positions) of one message; raises ConversionError."""
        pos = named_values(names, positions, what)
        model_idx, msg_idx = self._mapper._layout(names, True)
        values = pos[msg_idx]
        bad = ~np.isfinite(values)
        if bad.any():
            joints = [self.joint_names[i] for i in model_idx[bad]]
            raise ConversionError(f"{what} has non-finite positions for joints {joints}")
        if model_idx.shape[0] and age is not None and age < -self.future_tolerance:
            raise ConversionError(
                f"{what} is stamped {-age:.3f} s ahead of this node's clock (more than "
                f"{self.future_tolerance:g} s): the publisher's clock or stamp is wrong "
                "(use_sim_time must match on every node)")
        return model_idx, values

    def invalidate(self, reason: str, joints: Optional[Sequence[int]] = None) -> None:
        """Mark ``joints`` (model indices; default every joint) invalid until a good value of
        each arrives (a refused message whose joints are not known, e.g. over a size cap)."""
        for i in (self._all.tolist() if joints is None else list(joints)):
            self._invalid[int(i)] = reason

    def snapshot(self, needed: Optional[NDArray[np.int64]] = None) -> JointStateSnapshot:
        """The merged configuration for ``needed`` (model indices; default every joint)."""
        idx = self._all if needed is None else needed
        q = self._q.copy()
        fault = ""
        if self._invalid:
            bad = [i for i in idx.tolist() if i in self._invalid]
            if bad:
                reasons = sorted({self._invalid[i] for i in bad})
                fault = (f"rejected joint state: joints {[self.joint_names[i] for i in bad]} "
                         f"have no valid value ({'; '.join(reasons)})")
                q[bad] = np.nan
        if idx.shape[0] == 0:
            return JointStateSnapshot(q, math.inf, math.inf, fault, self._qd.copy())
        stamps = self._stamp[idx]
        arrivals = self._arrival[idx]
        if not fault:
            never = idx[~np.isfinite(arrivals)]
            if never.shape[0]:
                fault = (f"no joint state yet for joints "
                         f"{[self.joint_names[i] for i in never[:12]]}"
                         f"{' ...' if never.shape[0] > 12 else ''} "
                         f"({never.shape[0]} of {idx.shape[0]} needed)")
        return JointStateSnapshot(q, float(stamps.min()), float(arrivals.min()), fault,
                                  self._qd.copy())

    def oldest(self, now: float, needed: Optional[NDArray[np.int64]] = None,
               by: str = "arrival") -> tuple[str, float]:
        """(name, age s) of the needed joint that arrived (``by="arrival"``) or was measured
        (``"stamp"``) longest ago."""
        idx = self._all if needed is None else needed
        if idx.shape[0] == 0:
            return "", 0.0
        t = self._arrival[idx] if by == "arrival" else self._stamp[idx]
        k = int(np.argmin(t))
        return self.joint_names[int(idx[k])], now - float(t[k])
