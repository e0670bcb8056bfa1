"""Weighted reward terms; each term's episode sum is logged at reset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.terms import RewardTermCfg
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class RewardManager(Stateful):
    """reward = sum_i weight_i * term_i(env) * step_dt."""

    state_attrs = ("episode_sums", "reward", "_funcs")

    def __init__(self, terms: dict[str, RewardTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"reward term '{n}'", t, env) for n, t in terms.items()}
        n = env.num_envs
        self.episode_sums = {name: torch.zeros(n, device=env.device) for name in terms}
        self.reward = torch.zeros(n, device=env.device)

    def compute(self, dt: float) -> torch.Tensor:
        self.reward.zero_()
        for name, cfg in self.terms.items():
            if cfg.weight == 0.0:
                continue
            params = call_params(cfg, self._refs[name])
            value = self._funcs[name](self.env, **params).to(torch.float32) * cfg.weight * dt
            if value.shape != self.reward.shape:
                raise ValueError(
                    f"reward term '{name}' returned shape {tuple(value.shape)}, "
                    f"expected ({self.env.num_envs},)"
                )
            self.reward += value
            self.episode_sums[name] += value
        return self.reward

    def reset(self, env_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """Log each term's mean episode sum per second of the maximum episode: 0-d tensors
        on the env's device, read by the trainer's logger when it writes them (no wait for
        the device here)."""
        log = {}
        for name, sums in self.episode_sums.items():
            log[f"Episode_Reward/{name}"] = sums[env_ids].mean() / self.env.max_episode_length_s
            sums[env_ids] = 0.0
        return log

    @property
    def term_funcs(self) -> dict[str, Any]:
        """Each term's callable (a function, or the instance of a term class with state)."""
        return dict(self._funcs)

    def __str__(self) -> str:
        return term_table(
            "RewardManager", [(n, t.weight) for n, t in self.terms.items()], ("term", "weight")
        )
