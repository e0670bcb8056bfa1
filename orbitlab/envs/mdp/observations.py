"""Observation terms: `term(env, **params) -> (num_envs, ...)` tensors.

Scene parts come in as `SceneEntityCfg` params, resolved when the env is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.actuators.momentum import ReactionWheelGroup
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.sensors.rotations import quat_multiply

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = [
    "attitude_error_vec",
    "episode_progress",
    "generated_command",
    "last_action",
    "range_and_closing_speed",
    "root_ang_vel",
    "root_quat",
    "sensor_value",
    "wheel_speed",
]


def sensor_value(
    env: ManagerBasedRLEnv, sensor_cfg: SceneEntityCfg, slice_: tuple[int, int] | None = None
) -> torch.Tensor:
    """The delivered measurement of the sensor of `sensor_cfg` (one name in its
    `sensor_names`), optionally a component slice."""
    value = sensor_cfg.sensor.value
    return value if slice_ is None else value[:, slice_[0] : slice_[1]]


def root_ang_vel(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """True body angular velocity of an entity's root in body axes, rad/s (privileged)."""
    return entity.data.root_ang_vel_b


def root_quat(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """True attitude quaternion (w, x, y, z) of an entity's root, body to ECI, w >= 0
    (privileged)."""
    q = entity.data.root_quat_w
    return torch.where(q[:, :1] < 0, -q, q)


def wheel_speed(
    env: ManagerBasedRLEnv, actuator_cfg: SceneEntityCfg, scale_rad_s: float | None = None
) -> torch.Tensor:
    """Speeds of the wheels of `actuator_cfg` (one reaction-wheel group in its
    `actuator_names`) relative to the body, divided by their limit (or `scale_rad_s`)."""
    wheels = actuator_cfg.actuator
    if not isinstance(wheels, ReactionWheelGroup):
        raise TypeError(f"wheel_speed: {actuator_cfg!r} names a {type(wheels).__name__}")
    speed = wheels.speed()
    if scale_rad_s is None:
        limit = torch.tensor(
            [r["max_speed"] for r in wheels._rows], dtype=speed.dtype, device=speed.device
        )
        return speed / limit
    return speed / scale_rad_s


def last_action(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The previous policy action."""
    return env.action_manager.action


def generated_command(env: ManagerBasedRLEnv, name: str) -> torch.Tensor:
    """A command term's current command."""
    return env.command_manager.command(name)


def attitude_error_vec(
    env: ManagerBasedRLEnv, attitude: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Vector part of the shortest-path error quaternion q_target^* (x) q, (N, 3)."""
    conj = target * torch.tensor([1.0, -1.0, -1.0, -1.0], dtype=target.dtype, device=target.device)
    q_e = quat_multiply(conj, attitude)
    return torch.where(q_e[:, :1] < 0, -q_e, q_e)[:, 1:]


def episode_progress(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Fraction of the episode's time limit elapsed, (N, 1)."""
    return (env.episode_length_buf.float() / env.max_episode_length)[:, None]


def range_and_closing_speed(
    pos: torch.Tensor, vel: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Range |pos| (m) and closing speed -d|pos|/dt = -(pos . vel) / |pos| (m/s, positive
    while the range shrinks) of relative positions and velocities (..., 3)."""
    rng = torch.linalg.vector_norm(pos, dim=-1)
    return rng, -(pos * vel).sum(-1) / rng.clamp_min(1e-6)
