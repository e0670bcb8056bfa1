"""Termination terms: `term(env, **params) -> (num_envs,) bool`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = ["ang_vel_above", "held_for", "time_out"]


def time_out(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The episode's time limit is reached."""
    return env.episode_length_buf >= env.max_episode_length


def ang_vel_above(
    env: ManagerBasedRLEnv, entity: SceneEntityCfg, limit_rad_s: float
) -> torch.Tensor:
    """The root's angular speed exceeds `limit_rad_s` (tumbling out of control)."""
    omega = entity.data.root_ang_vel_b
    return torch.linalg.vector_norm(omega, dim=-1) > limit_rad_s


class held_for(Stateful):
    """True once a condition has held continuously for `duration_s` (e.g. success).

    Params: `condition` (a term function returning bool), `duration_s`, and the
    condition's own params under `condition_params` (its `SceneEntityCfg`s are resolved
    like the term's own).
    """

    state_attrs = ("held_s",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.env = env
        self.held_s = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def __call__(self, env: ManagerBasedRLEnv, condition, duration_s: float, condition_params=None):
        ok = condition(env, **(condition_params or {}))
        fresh = env.episode_length_buf <= 1
        self.held_s = torch.where(ok & ~fresh, self.held_s + env.step_dt, 0.0)
        self.held_s = torch.where(fresh & ok, env.step_dt, self.held_s)
        return self.held_s >= duration_s - 1e-9
