"""An unforced reference orbit beside the scene: the origin of Basilisk's Hill states.

orbitlab's chief (the origin of every world's frame) is accelerated by the scene's total
external force over its total mass ("reference-orbit feedback", `orbitlab.sim.kernels`), so
positions relative to it answer to every spacecraft's thrust: with the leader idle and the
followers thrusting, the leader would drift in chief-relative coordinates. Basilisk's
`hill_trans_state` (`HillRelStateMsgPayload`) is relative to a chief that no spacecraft's
thrust moves. `ReferenceOrbit` is that chief: it starts at the scene's chief state at
t = 0 (and at every reset) and is propagated under the central body's gravity alone
(point mass, plus J2 when the scene's orbit layer has it), with the same RK4 propagator as
the scene's chief (`orbitlab.orbit.evaluate.propagate`), in steps of at most `max_step_s`.
"""

from __future__ import annotations

import math

import numpy as np

from orbitlab.orbit.constants import CentralBodyCfg
from orbitlab.orbit.evaluate import propagate


class ReferenceOrbit:
    """A gravity-only orbit (ECI, m and m/s) queried at increasing times."""

    def __init__(self, central: CentralBodyCfg, use_j2: bool, max_step_s: float = 1.0):
        if not (math.isfinite(max_step_s) and max_step_s > 0.0):
            raise ValueError(f"max_step_s={max_step_s!r} is invalid: must be a finite s > 0")
        self.central, self.use_j2, self.max_step_s = central, bool(use_j2), float(max_step_s)
        self._t = 0.0
        self._r_km = np.zeros(3)
        self._v_km_s = np.zeros(3)

    def reset(self, r_m: np.ndarray, v_m_s: np.ndarray, t_s: float = 0.0) -> None:
        """Start at ECI position `r_m` (m) and velocity `v_m_s` (m/s) at time `t_s` (s)."""
        self._t = float(t_s)
        self._r_km = np.asarray(r_m, dtype=np.float64).reshape(3) * 1e-3
        self._v_km_s = np.asarray(v_m_s, dtype=np.float64).reshape(3) * 1e-3

    def at(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(r m, v m/s) at `t_s`, s, not before the last query or reset."""
        dt = float(t_s) - self._t
        if dt < 0.0:
            raise ValueError(f"t_s={t_s!r} is before the reference's time {self._t!r} s")
        if dt > 0.0:
            steps = max(1, math.ceil(dt / self.max_step_s))
            self._r_km, self._v_km_s = propagate(
                self._r_km, self._v_km_s, dt, steps, self.central, self.use_j2
            )
            self._t = float(t_s)
        return self._r_km * 1e3, self._v_km_s * 1e3
