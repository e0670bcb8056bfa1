"""Reward terms: `term(env, **params) -> (num_envs,)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = ["action_l2", "action_rate_l2", "ang_vel_norm", "constant", "potential_progress"]


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


class potential_progress(Stateful):
    """The decrease per second of a potential, `potential(env) -> (num_envs,)` (a distance to
    the goal, dimensionless): potential-based shaping, so an episode's sum is the potential
    at its start minus at its end, whoever closed the gap, and ending an episode early gains
    nothing. 0 in an episode's first step (no previous value) and where `paused(env)` is
    True (optional; e.g. once a grasp has latched)."""

    state_attrs = ("previous",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.previous = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        potential: Callable[[ManagerBasedRLEnv], torch.Tensor],
        paused: Callable[[ManagerBasedRLEnv], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        now = potential(env)
        idle = env.episode_length_buf <= 1
        if paused is not None:
            idle = idle | paused(env)
        progress = torch.where(idle, 0.0, (self.previous - now) / env.step_dt)
        self.previous = now
        return progress
