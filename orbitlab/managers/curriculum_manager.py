"""Curriculum terms: adapt the task (e.g. start distance) from the episodes just ended."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.terms import CurriculumTermCfg

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class CurriculumManager:
    """Runs `func(env, env_ids, **params)` at resets; logs the value each term returns."""

    def __init__(self, terms: dict[str, CurriculumTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"curriculum term '{n}'", t, env) for n, t in terms.items()}
        self.state: dict[str, float] = {}

    def compute(self, env_ids: torch.Tensor) -> dict[str, float]:
        for name, cfg in self.terms.items():
            value = self._funcs[name](self.env, env_ids, **call_params(cfg, self._refs[name]))
            if value is not None:
                self.state[name] = float(value)
        return {f"Curriculum/{k}": v for k, v in self.state.items()}

    def state_dict(self) -> dict[str, Any]:
        """The progress of every stateful term (a term class with `state_dict()`), to
        carry a curriculum across a training resume."""
        return {
            name: func.state_dict()
            for name, func in self._funcs.items()
            if hasattr(func, "state_dict")
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict()`'s progress (and the task parameters it sets)."""
        for name, term_state in state.items():
            if name not in self._funcs or not hasattr(self._funcs[name], "load_state_dict"):
                raise KeyError(
                    f"curriculum state for '{name}', which is no stateful term "
                    f"here (terms: {', '.join(self.terms) or 'none'})"
                )
            self._funcs[name].load_state_dict(term_state, self.env)

    def __str__(self) -> str:
        return term_table("CurriculumManager", [(n,) for n in self.terms], ("term",))
