"""Events at startup, at reset, and at random intervals (randomization, disturbances)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.terms import EventTermCfg
from orbitlab.seeding import stream_seed
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class EventManager(Stateful):
    """Runs `func(env, env_ids, **params)` for the terms of a mode."""

    state_attrs = ("_time_left", "_funcs", "generator")

    def __init__(self, terms: dict[str, EventTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        for name, cfg in terms.items():
            if cfg.mode not in ("startup", "reset", "interval"):
                raise ValueError(
                    f"event '{name}': mode must be startup, reset or interval, got {cfg.mode!r}"
                )
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"event term '{n}'", t, env) for n, t in terms.items()}
        self.generator = torch.Generator(device=env.device).manual_seed(
            stream_seed(env.seed, "events")
        )
        self._time_left = {
            n: self._draw(t, env.num_envs) for n, t in terms.items() if t.mode == "interval"
        }

    def _draw(self, cfg: EventTermCfg, count: int) -> torch.Tensor:
        lo, hi = cfg.interval_range_s
        u = torch.rand(count, generator=self.generator, device=self.env.device, dtype=torch.float64)
        return lo + (hi - lo) * u

    def apply(self, mode: str, env_ids: torch.Tensor | None = None, dt: float = 0.0) -> None:
        ids = self.env.all_env_ids if env_ids is None else env_ids
        for name, cfg in self.terms.items():
            if cfg.mode != mode:
                continue
            if mode == "interval":
                left = self._time_left[name]
                left -= dt
                due = torch.nonzero(left <= 0.0)[:, 0]
                if due.numel() == 0:
                    continue
                left[due] = self._draw(cfg, due.numel())
                self._funcs[name](self.env, due, **call_params(cfg, self._refs[name]))
            elif ids.numel():
                self._funcs[name](self.env, ids, **call_params(cfg, self._refs[name]))
            else:
                continue
            self.env.scene.view.invalidate()  # an event edits the state: later terms see it

    def __str__(self) -> str:
        return term_table(
            "EventManager", [(n, t.mode) for n, t in self.terms.items()], ("term", "mode")
        )
