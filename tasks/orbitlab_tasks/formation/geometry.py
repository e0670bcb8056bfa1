"""The leader-follower formation's frame helpers (torch) and, re-exported from `constants`,
its fixed numbers.

Frames: ECI (world axes of the scene, origin at the chief), the chief's Hill frame H
(x radial, y along-track, z orbit normal; `env.scene.view.hill()` gives C = ECI -> Hill) and
each spacecraft's body frame B. Quaternions are (w, x, y, z), scalar first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.agent.attitude import attitude_error
from orbitlab.sensors.rotations import quat_from_matrix, quat_multiply, quat_to_matrix, rotate
from orbitlab_tasks.formation.constants import (  # noqa: F401 (re-exported: the formation's numbers)
    FOLLOWERS,
    INERTIA_KGM2,
    LEADER,
    MASS_KG,
    ORBIT_A_KM,
    ORBIT_ARGP_DEG,
    ORBIT_E,
    ORBIT_I_DEG,
    ORBIT_NU_DEG,
    ORBIT_RAAN_DEG,
    SLOT_OFFSETS_M,
    WAYPOINT_HOLD_S,
    WAYPOINTS,
    yaw_quat,
)

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def hill_quat(C: torch.Tensor) -> torch.Tensor:
    """Quaternion of C (ECI -> Hill), (N, 4): q_BH = hill_quat(C) (x) q_BI for any body B."""
    return quat_from_matrix(C)


def hill_quat_of(view) -> torch.Tensor:
    """`hill_quat` of the scene's Hill frame (`view.hill()`), once per simulation state
    (`SimView.memo`; shared, read-only)."""
    return view.memo("formation/hill_quat", lambda: hill_quat(view.hill()[0]))


def slot_offsets(device: torch.device | str) -> torch.Tensor:
    """(2, 3) slot offsets of the followers, Hill axes, m."""
    return torch.tensor([SLOT_OFFSETS_M[f] for f in FOLLOWERS], dtype=torch.float64, device=device)


def slot_errors(env: ManagerBasedRLEnv) -> torch.Tensor:
    """True slot error rho_f - rho_leader - offset_f of each follower, (N, 2, 3), Hill axes, m;
    once per simulation state (`SimView.memo`; shared, read-only)."""
    return env.scene.view.memo("formation/slot_errors", lambda: _slot_errors(env))


def _slot_errors(env: ManagerBasedRLEnv) -> torch.Tensor:
    C, _ = env.scene.view.hill()
    leader = env.scene.entities[LEADER].data.root_pos_w.double()
    rel = torch.stack(
        [env.scene.entities[f].data.root_pos_w.double() - leader for f in FOLLOWERS], 1
    )
    return (C[:, None] @ rel[..., None])[..., 0] - slot_offsets(env.device)


def attitude_errors(env: ManagerBasedRLEnv) -> torch.Tensor:
    """True attitude error angle of each follower to the leader, (N, 2), rad in [0, pi]; once
    per simulation state (`SimView.memo`; shared, read-only)."""
    return env.scene.view.memo("formation/attitude_errors", lambda: _attitude_errors(env))


def _attitude_errors(env: ManagerBasedRLEnv) -> torch.Tensor:
    q_leader = env.scene.entities[LEADER].data.root_quat_w.double()
    out = []
    for f in FOLLOWERS:
        q_e = attitude_error(env.scene.entities[f].data.root_quat_w.double(), q_leader)
        out.append(2.0 * torch.atan2(q_e[:, 1:].norm(dim=-1), q_e[:, 0]))
    return torch.stack(out, 1)


def measured_attitude_error(
    nav: torch.Tensor,
    star_tracker: torch.Tensor,
    C: torch.Tensor,
    hill_q: torch.Tensor | None = None,
) -> torch.Tensor:
    """Error quaternion (N, 4) of a follower to the leader from its own sensors: relative
    navigation (leader body -> Hill in nav[:, 6:10]) and star tracker (body -> ECI);
    `hill_q`, if given, is `hill_quat(C)` computed before."""
    q_follower_hill = quat_multiply(hill_quat(C) if hill_q is None else hill_q, star_tracker)
    return attitude_error(q_follower_hill, nav[:, 6:10])


def hill_to_eci_quat(
    C: torch.Tensor, q_hill: torch.Tensor, hill_eci_q: torch.Tensor | None = None
) -> torch.Tensor:
    """An attitude given relative to the Hill frame (body -> Hill) as body -> ECI, (N, 4);
    `hill_eci_q`, if given, is the Hill -> ECI quaternion of C computed before
    (`hill_eci_quat_of`)."""
    if hill_eci_q is None:
        hill_eci_q = quat_from_matrix(C.transpose(-1, -2))
    return quat_multiply(hill_eci_q, q_hill)


def hill_eci_quat_of(view) -> torch.Tensor:
    """The Hill -> ECI quaternion of the scene's Hill frame (`quat_from_matrix(C^T)`), once per
    simulation state (`SimView.memo`; shared, read-only)."""
    return view.memo(
        "formation/hill_eci_quat", lambda: quat_from_matrix(view.hill()[0].transpose(-1, -2))
    )


def hill_to_body(C: torch.Tensor, star_tracker: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) rotation with v_B = M v_H, from the body -> ECI star-tracker quaternion."""
    return quat_to_matrix(star_tracker).transpose(-1, -2) @ C.transpose(-1, -2)


def to_hill(
    C: torch.Tensor, omega: torch.Tensor, pos_m: torch.Tensor, vel_mps: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A relative position and velocity in world (ECI) axes as Hill-frame (rho, rho_dot)."""
    return rotate(C, pos_m), rotate(C, vel_mps - torch.cross(omega, pos_m, dim=-1))
