"""The leader process: the scripted leader's law, dead-reckoned reference point and shared plan
(`LeaderController`), and its loop over the bridge (`run_leader`)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from orbitlab.agent.laws import lqr_force, quaternion_pd_torque
from orbitlab.orbit import frames
from orbitlab.orbit.constants import MU_EARTH_M3_S2
from orbitlab.orbit.frames import hill_frame
from orbitlab.orbit.rotations import attitude_error, quat_to_matrix
from orbitlab_tasks.formation import constants as geo
from orbitlab_tasks.formation.bridge_study.clients import connect, wait_tick
from orbitlab_tasks.formation.bridge_study.config import (
    PLAN_MSG_TYPE,
    PLAN_TOPIC,
    LinkCfg,
    StudyCfg,
    key,
    states_keys,
)


def gravity_gradient(r_n: np.ndarray) -> np.ndarray:
    """(3, 3) point-mass gravity gradient of the Earth at r_n (m), 1/s^2: n^2 (3 u u^T - I)."""
    return frames.gravity_gradient(r_n, MU_EARTH_M3_S2)


@dataclass(kw_only=True)
class LeaderCfg:
    """The scripted leader of the scenario (as in `agents.leader_nodes`)."""

    period_s: float = 0.2
    """Control period, s."""
    physics_dt_s: float = 0.05
    """Step of the reference point's integration, s (the scene's physics step)."""
    hold_s: float = geo.WAYPOINT_HOLD_S
    """Time at each waypoint, s."""
    waypoints: tuple = geo.WAYPOINTS
    """((x, y, z) m from the reference point, yaw deg about Hill z), cycled."""


class LeaderController:
    """The leader's CW-LQR + quaternion PD toward the waypoint schedule, its dead-reckoned
    reference point and its shared plan (numpy; the rollout of `nmpc.LeaderPlanNode`)."""

    def __init__(self, cfg: LeaderCfg | None = None) -> None:
        from orbitlab.agent.cw import cw_stm, cw_zoh_input, lqr_gain, solve_dare
        from orbitlab.agent.laws import mean_motion
        from orbitlab.agent.nmpc_solver import FormationNmpc
        from orbitlab_tasks.formation.constants import LEADER_GAINS
        from orbitlab_tasks.formation.nmpc_cfg import follower_nmpc_cfg

        self.cfg = cfg = cfg or LeaderCfg()
        g = LEADER_GAINS
        # the leader's CwLqrNode design (orbitlab.agent.formation), on numpy
        n, T = mean_motion(geo.ORBIT_A_KM), cfg.period_s
        A, B = cw_stm(n, T), cw_zoh_input(n, T, geo.MASS_KG)
        Q = np.diag([g.q_pos] * 3 + [g.q_vel] * 3)
        R = np.diag([g.r_force] * 3)
        self.K = lqr_gain(solve_dare(A, B, Q, R), A, B, R)
        self.max_force = np.full(3, g.max_force_n)
        w, J = g.attitude_bandwidth_rad_s, geo.INERTIA_KGM2
        self.kp, self.kd = 2.0 * J * w * w, 2.0 * 0.9 * w * J
        self.inertia = np.diag([J, J, J])
        self.max_torque = g.max_torque_nm
        self.model = FormationNmpc(replace(follower_nmpc_cfg(dt_s=cfg.period_s), num_obstacles=0))
        self.steps = self.model.cfg.horizon_steps
        self.table = np.array([list(p) + list(geo.yaw_quat(yaw)) for p, yaw in cfg.waypoints])
        self.hold_steps = round(cfg.hold_s / cfg.period_s)
        self.d = np.zeros(3)
        """Reference point minus leader, ECI axes, m."""
        self.d_dot = np.zeros(3)
        """Its inertial rate, m/s."""
        self._held: tuple[np.ndarray, np.ndarray] | None = None
        """(force ECI N, gravity gradient) held since the last update."""

    def _law(
        self, x: np.ndarray, target_p: np.ndarray, target_v: np.ndarray, target_q: np.ndarray
    ) -> np.ndarray:
        """(6,) body wrench of the LQR + PD at the state x (13,): the laws of the leader's
        `CwLqrNode` and `QuaternionPDNode` (`orbitlab.agent.laws`), on numpy."""
        error = np.concatenate([x[:3] - target_p, x[3:6] - target_v])
        force_hill = lqr_force(self.K, error, self.max_force)
        force_body = quat_to_matrix(x[6:10]).T @ force_hill
        torque = quaternion_pd_torque(
            attitude_error(x[6:10], target_q)[1:],
            x[10:13],
            self.kp,
            self.kd,
            inertia=self.inertia,
            max_torque_nm=self.max_torque,
        )
        return np.concatenate([force_body, torque])

    def advance_reference(self) -> None:
        """Integrate the reference point over one control period with the held command."""
        if self._held is None:
            return
        force_eci, G = self._held
        h = self.cfg.physics_dt_s
        for _ in range(round(self.cfg.period_s / h)):
            self.d_dot = self.d_dot + (G @ self.d - force_eci / geo.MASS_KG) * h
            self.d = self.d + self.d_dot * h

    def reference_hill(
        self, r_rel: np.ndarray, v_rel: np.ndarray, C: np.ndarray, omega: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The reference point's Hill position and velocity relative to the chief, from the
        leader's chief-relative ECI position r_rel (m) and velocity v_rel (m/s)."""
        p, v = r_rel + self.d, v_rel + self.d_dot
        return C @ p, C @ (v - np.cross(omega, p))

    def update(
        self, t: float, hill: dict, sc: dict, env: dict
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(wrench (6,), plan (H + 1, 13), reference point (3,) Hill m from the chief) at the
        state of time t: the leader's `hill_states` and `sc_states` and the environment."""
        self.advance_reference()
        r_n, v_n = np.asarray(env["r_n"], float), np.asarray(env["v_n"], float)
        C, omega = hill_frame(r_n, v_n)
        r_rel = np.asarray(sc["r_bn_n"], float) - r_n
        v_rel = np.asarray(sc["v_bn_n"], float) - v_n
        r, r_dot = self.reference_hill(r_rel, v_rel, C, omega)
        x = np.concatenate([hill["r_bh_h"], hill["v_bh_h"], hill["q_bh"], sc["omega_bn_b"]])
        k = round(t / self.cfg.period_s)
        dt = self.cfg.period_s
        wrench = None
        plan = np.empty((self.steps + 1, x.size))
        plan[0] = x
        state = x
        for n in range(self.steps):
            wp = self.table[((k + n) // self.hold_steps) % len(self.table)]
            u = self._law(state, r + r_dot * n * dt + wp[:3], r_dot, wp[3:7])
            if n == 0:
                wrench = u
            state = self.model.propagate(state, u)
            plan[n + 1] = state
        assert wrench is not None  # horizon_steps >= 1 (FormationNmpc checks it)
        force_eci = C.T @ quat_to_matrix(x[6:10]) @ wrench[:3]
        self._held = (force_eci, gravity_gradient(r_n))
        return wrench, plan, r


def run_leader(cfg: StudyCfg, link: LinkCfg, out: Path) -> dict[str, Any]:
    """Leader process: until the state at `cfg.seconds`, publish the plan and the commands of
    each tick; writes `out/leader.json` (compute times, reference point)."""
    controller = LeaderController(LeaderCfg(period_s=cfg.control_period_s))
    keys = [*states_keys([geo.LEADER]), key("env", "environment")]
    log: dict[str, list] = {"t": [], "reference_hill": [], "compute_s": []}
    with connect(link, "leader") as client:
        for topic in ("cmd_force", "cmd_torque"):
            client.advertise(geo.LEADER, topic)
        for k in keys:
            client.subscribe(k)
        client.wait_connected(cfg.startup_timeout_s)
        last, timeout = -math.inf, cfg.startup_timeout_s
        while True:
            msgs = wait_tick(client, keys, last, timeout)
            timeout = cfg.step_timeout_s
            start = time.perf_counter()
            last = t = msgs[keys[0]]["time"]
            wrench, plan, ref = controller.update(t, msgs[keys[0]], msgs[keys[1]], msgs[keys[2]])
            log["t"].append(t)
            log["reference_hill"].append(ref.tolist())
            if t >= cfg.seconds - 1e-6:
                break
            client.publish(
                geo.LEADER, PLAN_TOPIC, msg_type=PLAN_MSG_TYPE, time=t, states=plan.tolist()
            )
            client.publish_force(geo.LEADER, wrench[:3])
            client.publish_torque(geo.LEADER, wrench[3:])
            log["compute_s"].append(time.perf_counter() - start)
    summary = {"updates": len(log["compute_s"]), "last_time_s": last, **log}
    (out / "leader.json").write_text(json.dumps(summary))
    return summary
