"""Basilisk messages (as the public BSK-ROS2 node publishes them) to the formation's state
vectors, and a shared plan to and from nav_msgs/Path poses (numpy only, no ROS import).

* follower/leader state (13,): [r_DC_H m, v_DC_H m/s (Hill, relative to the unforced
  reference orbit, Basilisk's chief: the `hill_trans_state`), q_BH (w, x, y, z; body -> Hill, from `hill_rot_state`'s sigma_BR),
  omega_BN_B rad/s (omega_BR_B + omega_RN_B)];
* that reference's ECI position and velocity from a spacecraft's `sc_states` and
  `hill_trans_state` (the Hill frame of the spacecraft's own orbit stands in for the chief's
  to compute it: they differ by ~|r_DC| / |r| ~ 1e-6 rad at formation distances);
* a plan (H + 1, 13) as poses (position, attitude) stamped t + n dt, and back: velocities
  and body rates from differences of the poses (the demo's Path carries no rates).
"""

from __future__ import annotations

import numpy as np

from orbitlab.orbit.frames import hill_frame as hill_axes
from orbitlab.orbit.rotations import mrp_to_quat

__all__ = ["chief_state", "hill_axes", "plan_to_poses", "state_13"]


def state_13(hill_trans: dict, hill_rot: dict) -> np.ndarray:
    """The 13-state of a spacecraft from its `hill_trans_state` and `hill_rot_state` fields
    (lowercase, as the messages carry them: r_dc_h, v_dc_h, sigma_br, omega_br_b, omega_rn_b)."""
    omega_bn_b = np.asarray(hill_rot["omega_br_b"], float) + np.asarray(
        hill_rot["omega_rn_b"], float
    )
    return np.concatenate(
        [
            np.asarray(hill_trans["r_dc_h"], float),
            np.asarray(hill_trans["v_dc_h"], float),
            mrp_to_quat(hill_rot["sigma_br"]),
            omega_bn_b,
        ]
    )


def chief_state(sc: dict, hill_trans: dict) -> tuple[np.ndarray, np.ndarray]:
    """The chief's ECI position (m) and velocity (m/s) from a spacecraft's `sc_states`
    (r_bn_n, v_bn_n) and `hill_trans_state` (r_dc_h, v_dc_h)."""
    r_b, v_b = np.asarray(sc["r_bn_n"], float), np.asarray(sc["v_bn_n"], float)
    C, omega = hill_axes(r_b, v_b)
    p = C.T @ np.asarray(hill_trans["r_dc_h"], float)
    v_rel = C.T @ np.asarray(hill_trans["v_dc_h"], float) + np.cross(omega, p)
    return r_b - p, v_b - v_rel


def plan_to_poses(plan: np.ndarray, t0_s: float, dt_s: float) -> list[tuple[float, list, list]]:
    """(stamp s, position m, quaternion w x y z) of each row of a plan (H + 1, 13)."""
    return [(t0_s + n * dt_s, row[:3].tolist(), row[6:10].tolist()) for n, row in enumerate(plan)]


def poses_to_plan(
    poses, t_s: float, dt_s: float, steps: int, hill_rate_b: np.ndarray | None = None
) -> np.ndarray:
    """A plan (steps + 1, 13) at t_s + n dt_s from stamped poses (stamp, position,
    quaternion), the latest pose at or before each time (the last one past the end);
    velocities and body rates from differences between consecutive rows (the rate relative
    to the Hill frame, plus `hill_rate_b`, the Hill frame's rate in body axes, rad/s)."""
    stamps = np.array([p[0] for p in poses])
    pos = np.array([p[1] for p in poses], float)
    quat = np.array([p[2] for p in poses], float)
    times = t_s + dt_s * np.arange(steps + 1)
    idx = np.clip(np.searchsorted(stamps, times + 1e-6, side="right") - 1, 0, len(poses) - 1)
    out = np.zeros((steps + 1, 13))
    out[:, :3], out[:, 6:10] = pos[idx], quat[idx]
    for q in range(1, steps + 1):  # one hemisphere
        if out[q, 6:10] @ out[q - 1, 6:10] < 0.0:
            out[q, 6:10] *= -1.0
    out[:-1, 3:6] = np.diff(out[:, :3], axis=0) / dt_s
    out[-1, 3:6] = out[-2, 3:6]
    for n in range(steps):  # body rate: 2 vec(conj(q_n) (x) q_n+1) / dt
        w1, v1 = out[n, 6], -out[n, 7:10]
        w2, v2 = out[n + 1, 6], out[n + 1, 7:10]
        vec = w1 * v2 + w2 * v1 + np.cross(v1, v2)
        out[n, 10:13] = 2.0 * vec / dt_s
    out[-1, 10:13] = out[-2, 10:13]
    if hill_rate_b is not None:
        out[:, 10:13] += np.asarray(hill_rate_b, float)
    return out
