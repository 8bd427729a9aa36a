"""Options and per-tick result of :class:`~robot_collision.control.velocity_filter.VelocityFilter`:
:class:`FilterOptions` (each default documented once, validated on construction) and
:class:`FilterResult`. Units: m, rad, s (velocities rad/s or m/s)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigurationError

if TYPE_CHECKING:
    pass


__all__ = ["FilterOptions", "FilterResult"]


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
    - ``state_timeout`` = 0.1 s: a state older than this (``stamp_age``, by its stamp) is
      stale: fault. (The node passes its ``max_state_age`` parameter here.)
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
            if ds < 0.0:
                raise ConfigurationError(
                    f"FilterOptions.safety_distance_{kind} must be >= 0 m, got {ds} (a negative "
                    "safety distance would allow penetration; to let a group touch, switch its "
                    "protection off)")
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

