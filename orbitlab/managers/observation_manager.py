"""Observation groups: terms computed, noised, scaled, clipped, stacked in history.

Groups without noise or history are built by one kernel launch
(`orbitlab.managers.observation_pipeline`); the others by the torch pipeline below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.fw.terms import KernelTerm
from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.kernel_terms import kernel_or_twin
from orbitlab.managers.observation_pipeline import FusedObservations, fusable, snapshot
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

    def __init__(
        self, groups: dict[str, ObservationGroupCfg], env: ManagerBasedRLEnv, fused: bool = True
    ):
        """`fused`: build the groups without noise or history in one kernel launch."""
        self.env, self.groups, self.fused = env, groups, fused
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
        for g, cfg in groups.items():  # a kernel term whose inputs this env keeps in torch
            for n, t in cfg.terms.items():  # runs as its torch twin (KernelTerm.twin)
                where = f"observation term '{g}/{n}'"
                self._funcs[g][n] = kernel_or_twin(
                    where, t, self._refs[g][n], env, self._funcs[g][n]
                )
        self._plans: dict[str, dict[str, _TermPlan]] = {g: {} for g in groups}
        for g, cfg in groups.items():
            for n in cfg.terms:
                self._replan(g, n)
        self._history: dict[tuple[str, str], torch.Tensor] = {}
        self._fresh = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        self.generator = torch.Generator(device=env.device).manual_seed(
            stream_seed(env.seed, "observation")
        )
        self._fused: FusedObservations | None = None
        self._plan_fused()
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

    def _plan_fused(self) -> None:
        """(Re)make the kernel's plan for the groups it can build (none: no plan)."""
        if self._fused is not None:
            self._fused.close()
        for group, cfg in self.groups.items():
            for name in cfg.terms:
                self.plan(group, name)
        names = [g for g, cfg in self.groups.items() if self.fused and fusable(cfg)]
        kernel_terms = any(
            isinstance(t.func, KernelTerm)
            for cfg in self.groups.values()
            for t in cfg.terms.values()
        )
        self._fused = FusedObservations(self, names) if names or kernel_terms else None
        self._made_from = snapshot(self.groups, copy=True)

    def _configs_edited(self) -> bool:
        """Whether a group or term config changed since the kernel's plan was made."""
        try:  # identical values compare by identity first: no Python call
            return snapshot(self.groups) != self._made_from
        except (RuntimeError, TypeError, ValueError):  # an array-valued param was replaced
            return True

    def plan(self, group: str, name: str) -> _TermPlan:
        """One term's plan (its sharing key), made again if its config was edited."""
        plan = self._plans[group][name]
        cfg = self.groups[group].terms[name]
        try:  # a dict comparison checks identical values by identity first: no call
            edited = cfg is not plan.cfg or cfg.params != plan.params
        except (RuntimeError, TypeError, ValueError):  # an array-valued param was replaced
            edited = True
        return self._replan(group, name) if edited else plan

    def _term(self, group: str, name: str, noise: bool, commit: bool, cache: dict) -> torch.Tensor:
        plan = self.plan(group, name)  # e.g. edited by a curriculum: a new sharing key
        cfg = self.groups[group].terms[name]
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
        """One term's value as its function returns it (no noise, scale, clip or history;
        a kernel term's as float32)."""
        if self.is_kernel(group, name):
            assert self._fused is not None  # made for every manager with kernel terms
            return self._fused.kernel_value(self.plan(group, name).key)
        return self.torch_value(group, name)

    def torch_value(self, group: str, name: str) -> torch.Tensor:
        """`term_value` of a term that is not a kernel term (its function, called)."""
        cfg = self.groups[group].terms[name]
        return self._funcs[group][name](self.env, **call_params(cfg, self._refs[group][name]))

    def is_kernel(self, group: str, name: str) -> bool:
        """Whether a term runs in the observation term kernel (a kernel term this env's
        arrays hold the inputs of)."""
        return isinstance(self._funcs[group][name], KernelTerm)

    def refs(self, group: str, name: str) -> dict[str, Any]:
        """A term's params that reference the scene, resolved when the env was built."""
        return self._refs[group][name]

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
        cache: dict = {}
        if self._configs_edited():  # e.g. by a curriculum
            self._plan_fused()
        out: dict[str, Any] = self._fused.compute(cache) if self._fused is not None else {}
        for group, cfg in self.groups.items():
            if group in out:
                continue
            terms = {n: self._term(group, n, cfg.enable_noise, commit, cache) for n in cfg.terms}
            out[group] = torch.cat(list(terms.values()), dim=-1) if cfg.concatenate else terms
        out = {group: out[group] for group in self.groups}  # in the config's order
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
