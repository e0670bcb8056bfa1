"""Event terms: `event(env, env_ids, **params)` for startup, reset and interval modes.

Reset events edit the state without refreshing; the env refreshes MuJoCo's derived
fields and the sensors of the reset envs once after all of them (`refresh=False`).
Startup and interval events refresh themselves.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.orbit.frames import coe_to_rv

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = [
    "apply_angular_impulse",
    "randomize_mass",
    "randomize_orbit",
    "reset_joints_uniform",
    "reset_root_attitude",
    "reset_root_pose_uniform",
    "reset_root_rates",
]


def _uniform(env: ManagerBasedRLEnv, env_ids: torch.Tensor, low, high) -> torch.Tensor:
    low = torch.as_tensor(low, dtype=torch.float64, device=env.device)
    high = torch.as_tensor(high, dtype=torch.float64, device=env.device)
    u = torch.rand(
        (env_ids.numel(), *low.shape),
        generator=env.event_manager.generator,
        dtype=torch.float64,
        device=env.device,
    )
    return low + (high - low) * u


def random_unit_quat(env: ManagerBasedRLEnv, count: int) -> torch.Tensor:
    """Uniformly distributed rotations (w >= 0)."""
    q = torch.randn(
        (count, 4), generator=env.event_manager.generator, dtype=torch.float64, device=env.device
    )
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    return torch.where(q[:, :1] < 0, -q, q)


def reset_root_rates(
    env: ManagerBasedRLEnv,
    env_ids: torch.Tensor,
    entity: SceneEntityCfg,
    max_rate_rad_s: float,
    min_rate_rad_s: float = 0.0,
) -> None:
    """Body rates of uniformly random direction and magnitude in [min, max] rad/s."""
    direction = torch.randn(
        (env_ids.numel(), 3),
        generator=env.event_manager.generator,
        dtype=torch.float64,
        device=env.device,
    )
    direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True)
    magnitude = _uniform(env, env_ids, min_rate_rad_s, max_rate_rad_s)
    entity.handle.set_root_state(
        env_ids, ang_vel_body=direction * magnitude[:, None], refresh=False
    )


def reset_root_attitude(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, entity: SceneEntityCfg
) -> None:
    """A uniformly random attitude."""
    entity.handle.set_root_state(
        env_ids, refresh=False, quat=random_unit_quat(env, env_ids.numel())
    )


def reset_joints_uniform(
    env: ManagerBasedRLEnv,
    env_ids: torch.Tensor,
    entity: SceneEntityCfg,
    joints: tuple[str, ...],
    low_rad,
    high_rad,
) -> None:
    """Positions of an entity's hinge or slide `joints` (names without the entity prefix)
    drawn uniformly in [low, high] (rad or m, one bound for all or one per joint), at rest."""
    m = env.scene.mj_model
    name = entity.name
    ids = []
    for joint in joints:
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{name}/{joint}")
        if j < 0 or int(m.jnt_type[j]) not in (
            int(mujoco.mjtJoint.mjJNT_HINGE),
            int(mujoco.mjtJoint.mjJNT_SLIDE),
        ):
            raise ValueError(
                f"reset_joints_uniform: entity '{name}' has no hinge or slide {joint!r}"
            )
        ids.append(j)
    qpos, qvel = env.scene.view.array("qpos"), env.scene.view.array("qvel")
    low = torch.as_tensor(low_rad, dtype=torch.float64, device=env.device).expand(len(ids))
    high = torch.as_tensor(high_rad, dtype=torch.float64, device=env.device).expand(len(ids))
    value = _uniform(env, env_ids, low, high)
    qpos_adr = torch.as_tensor(m.jnt_qposadr[ids], dtype=torch.long, device=env.device)
    dof_adr = torch.as_tensor(m.jnt_dofadr[ids], dtype=torch.long, device=env.device)
    rows = env_ids[:, None]
    qpos[rows, qpos_adr] = value.to(qpos.dtype)
    qvel[rows, dof_adr] = 0.0
    env.scene.view.invalidate()


def reset_root_pose_uniform(
    env: ManagerBasedRLEnv,
    env_ids: torch.Tensor,
    entity: SceneEntityCfg,
    pos_low_m,
    pos_high_m,
    vel_low_mps=(0.0, 0.0, 0.0),
    vel_high_mps=(0.0, 0.0, 0.0),
) -> None:
    """Root position and velocity (world axes) drawn uniformly in boxes."""
    entity.handle.set_root_state(
        env_ids,
        pos_m=_uniform(env, env_ids, pos_low_m, pos_high_m),
        lin_vel_mps=_uniform(env, env_ids, vel_low_mps, vel_high_mps),
        refresh=False,
    )


def randomize_orbit(
    env: ManagerBasedRLEnv,
    env_ids: torch.Tensor,
    altitude_km=(400.0, 600.0),
    inclination_deg=(0.0, 98.0),
    eccentricity=(0.0, 0.0),
) -> None:
    """A random chief orbit per env: altitude of perigee (km above the central body's
    radius), inclination (deg), eccentricity and uniform angles. The radius and mu are
    the scene's central body's (`SceneCfg.orbit.central_body`), so a custom body is used."""
    body = env.scene.data.model.orbit.central_body
    radius_km, mu = body.radius, body.gm
    draws = torch.cat(  # drawn on the device, copied to the host at once
        (
            _uniform(env, env_ids, *altitude_km)[:, None],
            _uniform(env, env_ids, *inclination_deg)[:, None],
            _uniform(env, env_ids, *eccentricity)[:, None],
            _uniform(env, env_ids, (0.0,) * 3, (2 * math.pi,) * 3),
        ),
        dim=1,
    )
    host = draws.cpu().numpy()
    alt, inc, ecc, angles = host[:, 0], np.radians(host[:, 1]), host[:, 2], host[:, 3:]
    a = (radius_km + alt) / (1.0 - ecc)
    R, V = coe_to_rv(a, ecc, inc, angles[:, 0], angles[:, 1], angles[:, 2], mu=mu)
    ids = env_ids.cpu().numpy()
    t = (
        env.scene.data.t[ids]
        if isinstance(env.scene.data.t, np.ndarray)
        else env.scene.data.t.numpy()[ids]
    )
    env.scene.set_orbit_state(env_ids, R, V, t)


def randomize_mass(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, entity: SceneEntityCfg, scale=(0.9, 1.1)
) -> None:
    """Scale the root body's mass and inertia per env (startup mode; per-world model fields)."""
    body = entity.handle.root_body
    mass = env.scene.data.expand("body_mass")
    inertia = env.scene.data.expand("body_inertia")
    s = _uniform(env, env_ids, *scale).cpu().numpy()
    ids = env_ids.cpu().numpy()
    nominal = env.scene.mj_model
    mass[ids, body] = nominal.body_mass[body] * s
    inertia[ids, body] = nominal.body_inertia[body] * s[:, None]
    env.scene.data.forward()


def apply_angular_impulse(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, entity: SceneEntityCfg, max_impulse_nms: float
) -> None:
    """A random angular impulse on the root (interval mode: a disturbance kick), N m s."""
    omega = entity.data.root_ang_vel_b
    body = entity.handle.root_body
    inertia = torch.as_tensor(
        env.scene.mj_model.body_inertia[body], dtype=torch.float64, device=env.device
    )
    impulse = _uniform(env, env_ids, (-max_impulse_nms,) * 3, (max_impulse_nms,) * 3)
    omega[env_ids] = omega[env_ids] + impulse / inertia
    env.scene.data.forward()
    env.scene.view.invalidate()
