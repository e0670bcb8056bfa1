"""Formation controllers with the structure of the public bsk-ros2-mpc demo, on Basilisk's
Hill states alone.

As in the demo (DISCOWER/bsk-ros2-mpc), every flyer reads only its own Basilisk topics
(`hill_trans_state`: r_DC_H, v_DC_H; `hill_rot_state`: sigma_BR, omega_BR_B) and the
leader's `hill_trans_state`, runs on a 0.2 s timer and sends `cmd_force` / `cmd_torque` in
body axes:

* the leader regulates its own r_DC_H to fixed Hill waypoints (`constants.WAYPOINTS`, each
  held `WAYPOINT_HOLD_S`), with the waypoint's yaw as its attitude target;
* each follower regulates r_DC_H to the leader's r_DC_H plus its slot offset
  (`constants.SLOT_OFFSETS_M`), v_DC_H to the leader's, and its attitude to the leader's.

That leader only works when r_DC_H is measured from a chief that no spacecraft's thrust
moves (Basilisk's meaning, `orbitlab.bridge.reference`): from orbitlab's feedback chief the
followers' thrust would push the leader's frame along. The laws stand in for the demo's
acados NMPC: the flyers' CW-LQR (the spec's weights, `constants.LEADER_GAINS` /
`FOLLOWER_GAINS`) and a quaternion PD, numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbitlab.agent.cw import cw_stm, cw_zoh_input, lqr_gain, solve_dare
from orbitlab.agent.laws import lqr_force, mean_motion, quaternion_pd_torque
from orbitlab.orbit.rotations import attitude_error, mrp_to_quat, quat_to_matrix
from orbitlab_tasks.formation import constants as geo


@dataclass(frozen=True)
class HillState:
    """One flyer's Basilisk Hill states."""

    r_m: np.ndarray
    """r_DC_H, m."""
    v_m_s: np.ndarray
    """v_DC_H, m/s (rate in the rotating frame)."""
    q_bh: np.ndarray
    """Body -> Hill (w, x, y, z), from sigma_BR."""
    omega_br_b: np.ndarray
    """Body rate relative to the Hill frame, rad/s, body axes."""

    @classmethod
    def from_payloads(cls, trans: dict, rot: dict) -> HillState:
        """From `hill_trans_state` and `hill_rot_state` payloads (Basilisk's field names)."""
        return cls(
            r_m=np.asarray(trans["r_DC_H"], float),
            v_m_s=np.asarray(trans["v_DC_H"], float),
            q_bh=mrp_to_quat(np.asarray(rot["sigma_BR"], float)),
            omega_br_b=np.asarray(rot["omega_BR_B"], float),
        )


class HillFlyer:
    """CW-LQR to a Hill target and quaternion PD to a Hill attitude -> body wrench (6,)."""

    def __init__(self, gains: geo.FlyerGains, period_s: float = geo.CONTROL_PERIOD_S):
        n = mean_motion(geo.ORBIT_A_KM)
        A, B = cw_stm(n, period_s), cw_zoh_input(n, period_s, geo.MASS_KG)
        Q = np.diag([gains.q_pos] * 3 + [gains.q_vel] * 3)
        R = np.diag([gains.r_force] * 3)
        self.K = lqr_gain(solve_dare(A, B, Q, R), A, B, R)
        self.max_force = np.full(3, gains.max_force_n)
        w, J = gains.attitude_bandwidth_rad_s, geo.INERTIA_KGM2
        self.kp, self.kd = 2.0 * J * w * w, 2.0 * 0.9 * w * J
        self.max_torque = gains.max_torque_nm

    def wrench(
        self, x: HillState, target_r: np.ndarray, target_v: np.ndarray, target_q: np.ndarray
    ) -> np.ndarray:
        """Body force (N) and torque (N m) toward (target_r m, target_v m/s, target_q)."""
        error = np.concatenate([x.r_m - target_r, x.v_m_s - target_v])
        force_hill = lqr_force(self.K, error, self.max_force)
        torque = quaternion_pd_torque(
            attitude_error(x.q_bh, target_q)[1:],
            x.omega_br_b,
            self.kp,
            self.kd,
            max_torque_nm=self.max_torque,
        )
        return np.concatenate([quat_to_matrix(x.q_bh).T @ force_hill, torque])


class HillLeader(HillFlyer):
    """The demo's leader: its own r_DC_H to the waypoint schedule."""

    def __init__(self, period_s: float = geo.CONTROL_PERIOD_S):
        super().__init__(geo.LEADER_GAINS, period_s)
        self.table = [(np.asarray(p, float), np.asarray(geo.yaw_quat(y))) for p, y in geo.WAYPOINTS]

    def waypoint(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(Hill position m, attitude) of the waypoint held at time t_s, s."""
        k = int(t_s // geo.WAYPOINT_HOLD_S + 1e-9) % len(self.table)
        return self.table[k]

    def update(self, t_s: float, own: HillState) -> np.ndarray:
        target_r, target_q = self.waypoint(t_s)
        return self.wrench(own, target_r, np.zeros(3), target_q)


class HillFollower(HillFlyer):
    """The demo's follower: the leader's r_DC_H plus its slot, the leader's velocity and
    attitude."""

    def __init__(self, name: str, period_s: float = geo.CONTROL_PERIOD_S):
        super().__init__(geo.FOLLOWER_GAINS, period_s)
        self.offset = np.asarray(geo.SLOT_OFFSETS_M[name], float)

    def update(self, own: HillState, leader: HillState) -> np.ndarray:
        return self.wrench(own, leader.r_m + self.offset, leader.v_m_s, leader.q_bh)
