"""Goal commands (target attitudes, poses, waypoints), resampled on their own timers."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from orbitlab.managers.base import term_table
from orbitlab.managers.scene_entity_cfg import resolve_params
from orbitlab.seeding import stream_seed
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


@dataclass(kw_only=True)
class CommandTermCfg:
    """A command generator; `class_type` builds it with (cfg, env). Fields holding a
    `SceneEntityCfg` reach the term resolved (see `orbitlab.managers.scene_entity_cfg`)."""

    class_type: type
    """The CommandTerm subclass."""
    resampling_time_range_s: tuple[float, float] = (1.0e9, 1.0e9)
    """Time between resamplings, drawn uniformly per env, s (default: once per episode)."""


class CommandTerm(Stateful):
    """Holds `command` (num_envs, dim); resamples per env when its timer expires."""

    state_attrs: ClassVar[tuple[str, ...]] = ("time_left", "generator")

    def __init__(self, cfg: CommandTermCfg, env: ManagerBasedRLEnv):
        self.cfg, self.env = cfg, env
        self.time_left = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)
        self.generator = torch.Generator(device=env.device).manual_seed(
            stream_seed(env.seed, "commands")
        )

    @property
    def command(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def resample(self, env_ids: torch.Tensor) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, dt: float) -> None:
        """Between resamplings (e.g. move a marker); default nothing."""

    def uniform(self, count: int, low, high) -> torch.Tensor:
        low = torch.as_tensor(low, dtype=torch.float64, device=self.env.device)
        high = torch.as_tensor(high, dtype=torch.float64, device=self.env.device)
        u = torch.rand(
            (count, *low.shape),
            generator=self.generator,
            dtype=torch.float64,
            device=self.env.device,
        )
        return low + (high - low) * u

    def _restart(self, env_ids: torch.Tensor) -> None:
        lo, hi = self.cfg.resampling_time_range_s
        self.time_left[env_ids] = self.uniform(env_ids.numel(), lo, hi)
        self.resample(env_ids)

    def step(self, dt: float) -> None:
        self.time_left -= dt
        due = torch.nonzero(self.time_left <= 0.0)[:, 0]
        if due.numel():
            self._restart(due)
        self.update(dt)


def _build(name: str, cfg: CommandTermCfg, env: ManagerBasedRLEnv) -> CommandTerm:
    """The term, built with a copy of `cfg` whose scene references are resolved."""
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
    refs = resolve_params(f"command term '{name}'", fields, env.scene)
    return cfg.class_type(dataclasses.replace(cfg, **refs) if refs else cfg, env)


class CommandManager(Stateful):
    """All command terms by name; `command(name)` is their (num_envs, dim) tensor."""

    state_attrs = ("terms",)

    def __init__(self, terms: dict[str, CommandTermCfg], env: ManagerBasedRLEnv):
        self.env = env
        self.terms = {name: _build(name, cfg, env) for name, cfg in terms.items()}
        self.reseed(env.seed)

    def reseed(self, seed: int) -> None:
        """Seed each term's generator from the environment seed and the term's name."""
        for name, term in self.terms.items():
            term.generator.manual_seed(stream_seed(seed, f"commands/{name}"))

    def command(self, name: str) -> torch.Tensor:
        if name not in self.terms:
            raise KeyError(f"no command '{name}' (have: {', '.join(self.terms) or 'none'})")
        return self.terms[name].command

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        for term in self.terms.values():
            term._restart(env_ids)
        return {}

    def compute(self, dt: float) -> None:
        for term in self.terms.values():
            term.step(dt)

    def __str__(self) -> str:
        return term_table(
            "CommandManager",
            [(n, type(t).__name__) for n, t in self.terms.items()],
            ("term", "type"),
        )
