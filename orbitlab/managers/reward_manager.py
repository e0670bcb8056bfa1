"""Weighted reward terms; each term's episode sum is logged at reset.

Terms are torch functions (or classes) or kernel terms (`orbitlab.fw.terms`); the kernel
terms run in one generated kernel, which also sums the reward when every term is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.fw.terms import make_reward_kernel
from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.kernel_terms import KernelTerms, kernel_names, kernel_or_twin
from orbitlab.managers.terms import RewardTermCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class RewardManager(Stateful):
    """reward = sum_i weight_i * term_i(env) * step_dt."""

    state_attrs = ("episode_sums", "reward", "_funcs", "term_state")

    def __init__(self, terms: dict[str, RewardTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"reward term '{n}'", t, env) for n, t in terms.items()}
        self._funcs = {
            n: kernel_or_twin(f"reward term '{n}'", t, self._refs[n], env, self._funcs[n])
            for n, t in terms.items()
        }
        n = env.num_envs
        self._sums = torch.zeros((n, len(terms)), device=env.device)
        self.episode_sums = {name: self._sums[:, i] for i, name in enumerate(terms)}
        """Each term's sum over the episode so far (views of one (N, terms) buffer)."""
        self.reward = torch.zeros(n, device=env.device)
        self.term_state: torch.Tensor | None = None
        """The stateful kernel terms' per-world state (None without kernel terms)."""
        names = kernel_names(self._funcs)
        self._kernel: KernelTerms | None = None
        self._kernel_column: dict[str, int] = {}
        if names:
            index = {name: i for i, name in enumerate(terms)}
            self._columns = torch.tensor([index[k] for k in names], dtype=torch.int32)
            self._values = torch.zeros((n, len(names)), dtype=torch.float64, device=env.device)
            self._fused = len(names) == len(terms)
            self._kernel = KernelTerms(
                "reward term", env, terms, self._refs, names, make_reward_kernel, self._outputs
            )
            self.term_state = self._kernel.term_state
            self._kernel_column = {name: i for i, name in enumerate(names)}

    def _outputs(self, kernel: KernelTerms) -> list:
        """The reward kernel's arguments after its `StepArrays` (weights read anew)."""
        device = self.env.device
        self._scale = torch.tensor(
            [self.terms[k].weight for k in kernel.names], dtype=torch.float32, device=device
        )
        self._columns = self._columns.to(device)
        return [
            wp.from_torch(self._scale),
            wp.from_torch(self._columns),
            wp.from_torch(self._values),
            wp.from_torch(self._sums),
            wp.from_torch(self.reward),
            int(self._fused),
        ]

    def compute(self, dt: float) -> torch.Tensor:
        if self._kernel is not None:
            if dt != self.env.step_dt:
                raise ValueError(f"reward: dt {dt} s, but kernel terms run at the env step")
            self._kernel.launch()
            if self._fused:  # the kernel summed every active term
                return self.reward
        self.reward.zero_()
        for name, cfg in self.terms.items():
            if cfg.weight == 0.0:
                continue
            if name in self._kernel_column:
                term = self._values[:, self._kernel_column[name]]
            else:
                term = self._funcs[name](self.env, **call_params(cfg, self._refs[name]))
            value = term.to(torch.float32) * cfg.weight * dt
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
    def kernel_term_values(self) -> dict[str, torch.Tensor]:
        """Each kernel term's unweighted value of the last step, float64 (num_envs,): live
        views, overwritten at the next step (0 for a term of weight 0, which is skipped)."""
        return {name: self._values[:, i] for name, i in self._kernel_column.items()}

    @property
    def term_funcs(self) -> dict[str, Any]:
        """Each term's callable (a function, or the instance of a term class with state)."""
        return dict(self._funcs)

    def __str__(self) -> str:
        return term_table(
            "RewardManager", [(n, t.weight) for n, t in self.terms.items()], ("term", "weight")
        )
