"""Observation groups: terms computed, noised, scaled, clipped, stacked in history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.terms import ObservationGroupCfg, ObservationTermCfg
from orbitlab.seeding import stream_seed
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class _TermPlan:
    """One observation term's config, a copy of its params (to notice an edit, e.g. by a
    curriculum) and its sharing key, worked out once instead of at every step."""

    __slots__ = ("cfg", "key", "params")

    def __init__(self, cfg: ObservationTermCfg) -> None:
        self.cfg, self.params = cfg, dict(cfg.params)
        self.key: tuple[int, str] = (0, "")


class ObservationManager(Stateful):
    """Computes every observation group, e.g. {'policy': (N, D), 'critic': (N, D')}."""

    state_attrs = ("_history", "_fresh", "generator")

    def __init__(self, groups: dict[str, ObservationGroupCfg], env: ManagerBasedRLEnv):
        self.env, self.groups = env, groups
        self._funcs = {
            g: {n: resolve_term(f"{g}/{n}", t, env) for n, t in cfg.terms.items()}
            for g, cfg in groups.items()
        }
        self._refs = {
            g: {
                n: resolve_refs(f"observation term '{g}/{n}'", t, env) for n, t in cfg.terms.items()
            }
            for g, cfg in groups.items()
        }
        self._plans: dict[str, dict[str, _TermPlan]] = {g: {} for g in groups}
        for g, cfg in groups.items():
            for n in cfg.terms:
                self._replan(g, n)
        self._history: dict[tuple[str, str], torch.Tensor] = {}
        self._fresh = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        self.generator = torch.Generator(device=env.device).manual_seed(
            stream_seed(env.seed, "observation")
        )
        sample = self.compute()
        self.shapes = {
            g: (
                v.shape[1:]
                if isinstance(v, torch.Tensor)
                else {k: x.shape[1:] for k, x in v.items()}
            )
            for g, v in sample.items()
        }
        """Per-group observation shape (without the env dimension)."""

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        """Forget the history of `env_ids` (refilled with their next observation)."""
        self._fresh[env_ids] = True
        return {}

    def _sharing_key(self, group: str, name: str) -> tuple[int, str]:
        """Terms of two groups with the same function and params are computed once."""
        cfg = self.groups[group].terms[name]
        return (id(self._funcs[group][name]), repr(sorted(cfg.params.items())))

    def _replan(self, group: str, name: str) -> _TermPlan:
        plan = _TermPlan(self.groups[group].terms[name])
        plan.key = self._sharing_key(group, name)
        self._plans[group][name] = plan
        return plan

    def _term(self, group: str, name: str, noise: bool, commit: bool, cache: dict) -> torch.Tensor:
        plan = self._plans[group][name]
        cfg = self.groups[group].terms[name]
        try:  # a dict comparison checks identical values by identity first: no call
            edited = cfg is not plan.cfg or cfg.params != plan.params
        except (RuntimeError, TypeError, ValueError):  # an array-valued param was replaced
            edited = True
        if edited:  # e.g. by a curriculum: the sharing key follows the new params
            plan = self._replan(group, name)
        value = cache.get(plan.key)
        if value is None:  # a term shared by groups (policy and critic) is computed once
            value = self.term_value(group, name).reshape(self.env.num_envs, -1)
            value = cache[plan.key] = value.to(torch.float32)
        if noise and cfg.noise_std > 0.0:
            value = value + cfg.noise_std * torch.randn(
                value.shape, generator=self.generator, device=value.device
            )
        if cfg.scale != 1.0:
            value = value * cfg.scale
        if cfg.clip is not None:
            value = value.clamp(*cfg.clip)
        if cfg.history_length > 0:
            value = self._stack(group, name, value, cfg.history_length, commit)
        return value

    def term_value(self, group: str, name: str) -> torch.Tensor:
        """One term's value as its function returns it (no noise, scale, clip or history)."""
        cfg = self.groups[group].terms[name]
        return self._funcs[group][name](self.env, **call_params(cfg, self._refs[group][name]))

    def _stack(
        self, group: str, name: str, value: torch.Tensor, length: int, commit: bool
    ) -> torch.Tensor:
        key = (group, name)
        if key not in self._history:
            self._history[key] = value[:, None].repeat(1, length + 1, 1)
        hist = self._history[key]
        hist = torch.cat([hist[:, 1:], value[:, None]], dim=1)
        hist[self._fresh] = value[self._fresh, None]
        if commit:
            self._history[key] = hist
        return hist.reshape(self.env.num_envs, -1)

    def compute(self, commit: bool = True) -> dict[str, torch.Tensor | dict[str, torch.Tensor]]:
        """Every group's observation; `commit=False` leaves the history untouched (used
        for the final observation of an ending episode)."""
        out: dict[str, Any] = {}
        cache: dict = {}
        for group, cfg in self.groups.items():
            terms = {n: self._term(group, n, cfg.enable_noise, commit, cache) for n in cfg.terms}
            out[group] = torch.cat(list(terms.values()), dim=-1) if cfg.concatenate else terms
        if commit:
            self._fresh[:] = False
        return out

    def __str__(self) -> str:
        rows = [
            (g, n, t.noise_std, t.history_length)
            for g, c in self.groups.items()
            for n, t in c.terms.items()
        ]
        return term_table("ObservationManager", rows, ("group", "term", "noise", "history"))
