"""Basilisk's message payloads of a spacecraft's state, every field filled (numpy only).

The public ROS 2 node publishes only bsk_msgs types, so in 'ros' mode each spacecraft's
telemetry is what Basilisk itself publishes, under Basilisk's topic names:

* `sc_states` (SCStatesMsgPayload): r_BN_N, v_BN_N (m, m/s; body origin, ECI axes),
  r_CN_N, v_CN_N (the centre of mass), sigma_BN (MRP, shortest set), omega_BN_B (rad/s),
  omegaDot_BN_B (rad/s^2, over the last publish interval), TotalAccumDVBdy,
  TotalAccumDV_BN_B (m/s, body axes) and TotalAccumDV_CN_N (m/s, ECI axes): the accumulated
  Delta-V of the thrust (the non-conservative force orbitlab models on a spacecraft's own
  account), nonConservativeAccelpntB_B (m/s^2, body axes: thrust / mass, the last physics
  step) and MRPSwitchCount (times the shortest MRP set switched, i.e. the quaternion's
  scalar part changed sign);
* `hill_trans_state` (HillRelStateMsgPayload): r_DC_H, v_DC_H (m, m/s): the spacecraft's
  body origin (the deputy D) relative to an unforced reference orbit (the chief C: gravity
  only, `orbitlab.bridge.reference`, so no spacecraft's thrust moves it, as in Basilisk), in
  that reference's Hill axes (x radial, y along-track, z orbit normal), the velocity seen in
  the rotating frame (frame rate h / r^2 about the orbit normal);
* `hill_rot_state` (AttGuidMsgPayload, R = the same Hill frame): sigma_BR (MRP, body
  relative to Hill), omega_BR_B, omega_RN_B (rad/s, body axes) and domega_RN_B (rad/s^2,
  body axes, over the last publish interval).
"""

from __future__ import annotations

import numpy as np

from orbitlab.orbit.rotations import matrix_to_quat, quat_to_matrix
from orbitlab.orbit.rotations import quat_to_mrp as mrp

SC_STATES, HILL_TRANS, HILL_ROT = "sc_states", "hill_trans_state", "hill_rot_state"
"""Basilisk's topic names."""
MSG_TYPES = {
    SC_STATES: "SCStatesMsgPayload",
    HILL_TRANS: "HillRelStateMsgPayload",
    HILL_ROT: "AttGuidMsgPayload",
}
"""Topic -> its bsk_msgs type."""


class ThrustAccount:
    """One spacecraft's accumulated thrust Delta-V and MRP switches, fed every physics step."""

    def __init__(self, mass_kg: float):
        if not mass_kg > 0.0:
            raise ValueError(f"spacecraft mass must be > 0 kg, got {mass_kg}")
        self.mass_kg = mass_kg
        self.dv_b = np.zeros(3)
        """Accumulated Delta-V, body axes (each step's in the body axes of that step), m/s."""
        self.dv_n = np.zeros(3)
        """Accumulated Delta-V, ECI axes, m/s."""
        self.accel_b = np.zeros(3)
        """Non-conservative acceleration of the last step, body axes, m/s^2."""
        self.switches = 0
        self._w_sign = 0.0

    def add(self, force_b: np.ndarray, quat: np.ndarray, dt_s: float) -> None:
        """One physics step of `dt_s` with thrust `force_b` (N, body axes) at attitude
        `quat` (w, x, y, z, body -> ECI)."""
        self.accel_b = np.asarray(force_b, dtype=float) / self.mass_kg
        self.dv_b += self.accel_b * dt_s
        self.dv_n += quat_to_matrix(quat) @ self.accel_b * dt_s
        sign = 1.0 if quat[0] >= 0.0 else -1.0
        if self._w_sign and sign != self._w_sign:
            self.switches += 1
        self._w_sign = sign

    def reset(self) -> None:
        self.__init__(self.mass_kg)


class RateDifference:
    """d(value)/dt between two publishes (zero at the first and when time did not move)."""

    def __init__(self) -> None:
        self._last: tuple[float, np.ndarray] | None = None
        self._rate = np.zeros(3)

    def __call__(self, time_s: float, value: np.ndarray) -> np.ndarray:
        if self._last is not None and time_s > self._last[0]:
            self._rate = (value - self._last[1]) / (time_s - self._last[0])
        elif self._last is None:
            self._rate = np.zeros(3)
        self._last = (time_s, np.array(value, dtype=float))
        return self._rate


def spacecraft_payloads(
    *,
    chief_r_m: np.ndarray,
    chief_v_m_s: np.ndarray,
    reference_r_m: np.ndarray,
    reference_v_m_s: np.ndarray,
    hill_from_eci: np.ndarray,
    hill_rate_n: np.ndarray,
    pos_m: np.ndarray,
    vel_m_s: np.ndarray,
    quat: np.ndarray,
    rate_b: np.ndarray,
    com_b_m: np.ndarray,
    account: ThrustAccount,
    omega_dot_b: np.ndarray,
    hill_rate_dot_n: np.ndarray,
) -> dict[str, dict]:
    """The three Basilisk payloads of one spacecraft (Basilisk's field names).

    chief_r_m / chief_v_m_s: orbitlab's chief, ECI (m, m/s); reference_r_m / reference_v_m_s:
    the Hill states' origin, ECI (m, m/s; `reference.ReferenceOrbit`); pos_m / vel_m_s: body
    origin relative to orbitlab's chief (m, m/s, ECI axes); quat: body -> ECI (w, x, y, z);
    rate_b: body rate (rad/s, body axes); com_b_m: centre of mass in body axes (m);
    hill_from_eci: rotation ECI -> the reference's Hill axes; hill_rate_n: that frame's rate
    (rad/s, ECI axes); omega_dot_b, hill_rate_dot_n: the rates' derivatives
    (`RateDifference`).
    """
    rbn = quat_to_matrix(quat)
    r_bn = chief_r_m + pos_m
    v_bn = chief_v_m_s + vel_m_s
    com_n = rbn @ com_b_m
    omega_n = rbn @ rate_b
    r_dc = (chief_r_m - reference_r_m) + pos_m  # the small difference first: no cancellation
    v_dc = (chief_v_m_s - reference_v_m_s) + vel_m_s
    rbh = hill_from_eci @ rbn
    q_bh = matrix_to_quat(rbh)
    omega_rn_b = rbn.T @ hill_rate_n
    return {
        SC_STATES: {
            "r_BN_N": r_bn.tolist(),
            "v_BN_N": v_bn.tolist(),
            "r_CN_N": (r_bn + com_n).tolist(),
            "v_CN_N": (v_bn + np.cross(omega_n, com_n)).tolist(),
            "sigma_BN": mrp(quat / np.linalg.norm(quat)).tolist(),
            "omega_BN_B": rate_b.tolist(),
            "omegaDot_BN_B": omega_dot_b.tolist(),
            "TotalAccumDVBdy": account.dv_b.tolist(),
            "TotalAccumDV_BN_B": account.dv_b.tolist(),
            "TotalAccumDV_CN_N": account.dv_n.tolist(),
            "nonConservativeAccelpntB_B": account.accel_b.tolist(),
            "MRPSwitchCount": account.switches,
        },
        HILL_TRANS: {
            "r_DC_H": (hill_from_eci @ r_dc).tolist(),
            "v_DC_H": (hill_from_eci @ (v_dc - np.cross(hill_rate_n, r_dc))).tolist(),
        },
        HILL_ROT: {
            "sigma_BR": mrp(q_bh).tolist(),
            "omega_BR_B": (rate_b - omega_rn_b).tolist(),
            "omega_RN_B": omega_rn_b.tolist(),
            "domega_RN_B": (rbn.T @ hill_rate_dot_n).tolist(),
        },
    }
