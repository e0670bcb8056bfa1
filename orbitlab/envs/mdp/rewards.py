"""Reward terms: `term(env, **params) -> (num_envs,)`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.managers.scene_entity_cfg import SceneEntityCfg

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = ["action_l2", "action_rate_l2", "ang_vel_norm", "constant"]


def ang_vel_norm(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """|omega| of an entity's root body, rad/s."""
    return torch.linalg.vector_norm(entity.data.root_ang_vel_b, dim=-1)


def action_l2(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Squared norm of the policy action."""
    return env.action_manager.action.pow(2).sum(-1)


def action_rate_l2(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Squared norm of the change of the policy action."""
    return (env.action_manager.action - env.action_manager.prev_action).pow(2).sum(-1)


def constant(env: ManagerBasedRLEnv) -> torch.Tensor:
    """1 per second (alive bonus or time penalty with a negative weight)."""
    return torch.ones(env.num_envs, device=env.device)
