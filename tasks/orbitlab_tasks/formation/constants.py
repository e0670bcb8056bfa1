"""The leader-follower formation's fixed numbers (pure Python: the controller processes of
the bridge study import them without torch or MuJoCo; `geometry` re-exports them).

Frames: ECI (world axes of the scene, origin at the chief), the chief's Hill frame H
(x radial, y along-track, z orbit normal) and each spacecraft's body frame B. Quaternions are
(w, x, y, z), scalar first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CONTROL_PERIOD_S = 0.2
"""Period of the formation's controllers (leader law, follower NMPC), s."""

LEADER = "leader"
"""Entity name of the scripted leader."""
FOLLOWERS = ("follower_1", "follower_2")
"""Entity names of the followers, in batch-row order."""
SLOT_OFFSETS_M = {"follower_1": (-1.0, 0.3, 0.0), "follower_2": (-1.0, -0.3, 0.0)}
"""Each follower's slot relative to the leader, Hill axes, m (the spec's formation)."""

ORBIT_A_KM = 6778.0
ORBIT_E = 0.001
ORBIT_I_DEG = 45.0
ORBIT_RAAN_DEG = 270.0
ORBIT_ARGP_DEG = 90.0
ORBIT_NU_DEG = 0.0
"""Chief (leader's reference) orbit: the spec's elements; it starts at periapsis."""

MASS_KG = 17.8
"""Formation flyer mass, kg."""
INERTIA_KGM2 = 0.315
"""Formation flyer principal moment of inertia (all three axes), kg m^2."""

WAYPOINT_HOLD_S = 20.0
"""Time the leader holds each waypoint, s."""
WAYPOINTS = (
    ((0.0, 0.0, 0.0), 0.0),
    ((0.0, 1.0, 0.0), 30.0),
    ((0.5, 1.0, 0.0), 60.0),
    ((0.5, 0.0, 0.0), 30.0),
)
"""Leader waypoints, cycled: (Hill position from the formation's reference point, m; yaw about
Hill z, deg). The reference point starts at the leader's initial position and then falls freely
(see `agents.ReferencePointNode`). The spec names no waypoints; these make a 1 m x 0.5 m planar
loop with 30 deg turns, the scale of the ATMOS demonstration."""


def yaw_quat(yaw_deg: float) -> tuple[float, float, float, float]:
    """Rotation by `yaw_deg` about z, (w, x, y, z)."""
    half = 0.5 * math.radians(yaw_deg)
    return (math.cos(half), 0.0, 0.0, math.sin(half))


@dataclass(kw_only=True)
class FlyerGains:
    """One flyer's CW-LQR and quaternion-PD settings (Hill force limit per axis)."""

    q_pos: float = 1.0
    """LQR position weight, 1/m^2."""
    q_vel: float = 1.0
    """LQR velocity weight, s^2/m^2."""
    r_force: float = 1.0
    """LQR force weight, 1/N^2."""
    max_force_n: float = 1.0
    """Per-Hill-axis force limit, N."""
    attitude_bandwidth_rad_s: float = 1.0
    """Attitude PD natural frequency, rad/s (Kp = 2 J w^2 on the error's vector part,
    Kd = 2 zeta w J with zeta = 0.9)."""
    max_torque_nm: float = 0.3
    """Torque norm limit, N m."""


SPEC_Q_POS, SPEC_Q_VEL, SPEC_R_FORCE = 1.0, 30.0, 0.2
"""The spec's NMPC stage-cost weights on position (1/m^2), velocity (s^2/m^2) and force
(1/N^2), used here as the CW-LQR's Q and R: Kp ~ 2.1 N/m, Kd ~ 14 N s/m, poles at about
-0.19 and -0.66 rad/s (overdamped)."""
SPEC_ATTITUDE_BANDWIDTH_RAD_S = 2.24
"""The spec's attitude weights (Q_q = 1000 on 1 - (q . q_ref)^2 ~ 250 theta^2, Q_w = 10,
R_tau = 100) as a continuous LQR on J theta'' = tau: Kp = sqrt(250 / 100) = 1.58 N m/rad, i.e.
w = sqrt(Kp / J) = 2.24 rad/s."""

LEADER_GAINS = FlyerGains(
    q_pos=SPEC_Q_POS,
    q_vel=SPEC_Q_VEL,
    r_force=SPEC_R_FORCE,
    max_force_n=0.4,
    attitude_bandwidth_rad_s=0.5,
    max_torque_nm=0.1,
)
"""Leader: the spec's weights, capped at 0.4 N per axis and a 0.5 rad/s, 0.1 N m attitude loop,
so that it tours its waypoints gently (measured: 0.10 m/s and 6 deg/s at most)."""
FOLLOWER_GAINS = FlyerGains(
    q_pos=SPEC_Q_POS,
    q_vel=SPEC_Q_VEL,
    r_force=SPEC_R_FORCE,
    max_force_n=1.5,
    attitude_bandwidth_rad_s=SPEC_ATTITUDE_BANDWIDTH_RAD_S,
    max_torque_nm=0.3,
)
"""Followers: the spec's weights with 1.5 N per Hill axis (half of 3 N) and 0.3 N m."""
