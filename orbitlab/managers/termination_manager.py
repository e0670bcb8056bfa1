"""Termination terms, keeping terminal states and time-outs apart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.terms import TerminationTermCfg
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class TerminationManager(Stateful):
    """`terminated` (a terminal state) and `time_outs` (truncation) per env."""

    state_attrs = ("terminated", "time_outs", "last", "_funcs")

    def __init__(self, terms: dict[str, TerminationTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"termination term '{n}'", t, env) for n, t in terms.items()}
        n = env.num_envs
        self.terminated = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.time_outs = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.last = {name: torch.zeros(n, dtype=torch.bool, device=env.device) for name in terms}

    def compute(self) -> torch.Tensor:
        """Evaluate every term; returns terminated | time_outs."""
        self.terminated.zero_()
        self.time_outs.zero_()
        for name, cfg in self.terms.items():
            value = self._funcs[name](self.env, **call_params(cfg, self._refs[name])).to(torch.bool)
            self.last[name] = value
            if cfg.time_out:
                self.time_outs |= value
            else:
                self.terminated |= value
        return self.terminated | self.time_outs

    def reset(self, env_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per term, how many of the `env_ids` episodes it ended; with a 'success' term
        also `Episode/success_rate`, the fraction of them that ended by it. 0-d float
        tensors on the env's device (no wait for the device here)."""
        log = {
            f"Episode_Termination/{name}": value[env_ids].sum(dtype=torch.float32)
            for name, value in self.last.items()
        }
        if "success" in self.last and env_ids.numel():
            log["Episode/success_rate"] = self.last["success"][env_ids].float().mean()
        return log

    @property
    def term_funcs(self) -> dict[str, Any]:
        """Each term's callable (a function, or the instance of a term class with state)."""
        return dict(self._funcs)

    def __str__(self) -> str:
        return term_table(
            "TerminationManager",
            [(n, t.time_out) for n, t in self.terms.items()],
            ("term", "time_out"),
        )
