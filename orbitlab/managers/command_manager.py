"""Goal commands (target attitudes, poses, waypoints), resampled on their own timers."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from orbitlab import sync
from orbitlab.managers.base import term_table
from orbitlab.managers.scene_entity_cfg import resolve_params
from orbitlab.seeding import stream_seed
from orbitlab.sensors.noise import episode_hash, gaussian_from, uniform_from, world_keys
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


Worlds = torch.Tensor
"""Which worlds a draw or a resampling is for: an index tensor (k,), or on a GPU, where the
ids would be a host read, a (num_envs,) bool mask."""

_TIME_STREAM, _NORMAL_STREAM, _UNIFORM_STREAM = 0, 1, 2


class CommandTerm(Stateful):
    """Holds `command` (num_envs, dim); resamples per env when its timer expires.

    Random draws are counter-based per world (`draw_normal`, `draw_uniform`): world w's n-th
    draw depends only on the term's seed, w and n, so a world draws the same numbers
    whichever worlds resample with it. On the CPU the due worlds are found with one host read
    and resampled by index; on a GPU (`orbitlab.sync`) `step` passes a bool mask of the due
    worlds instead: every world draws and only the due ones keep their draws and advance
    their counters, with the same numbers as the CPU path and no host read. A term whose
    `resample` takes masks sets `takes_masks = True`; for the others the mask is turned into
    ids, a host read at every step on a GPU.
    """

    state_attrs: ClassVar[tuple[str, ...]] = ("time_left", "draws", "keys", "generator")
    takes_masks: ClassVar[bool] = False
    """Whether `resample` accepts a (num_envs,) bool mask as well as an index tensor."""

    def __init__(self, cfg: CommandTermCfg, env: ManagerBasedRLEnv):
        self.cfg, self.env = cfg, env
        n, device = env.num_envs, env.device
        self.time_left = torch.zeros(n, dtype=torch.float64, device=device)
        self.draws = torch.zeros(n, dtype=torch.long, device=device)
        """Counter-based draws each world has made (`draw_normal`, `draw_uniform`)."""
        self.keys = torch.zeros(n, dtype=torch.long, device=device)
        """Each world's 32-bit key under the term's seed (`reseed`)."""
        self.generator = torch.Generator(device=device).manual_seed(
            stream_seed(env.seed, "commands")
        )
        """A torch generator for a term's own draws by index (not mask-safe: prefer the
        counter-based `draw_*`)."""
        self._masks = not sync.host_reads_are_free(device)
        self.reseed(stream_seed(env.seed, "commands"))

    def reseed(self, seed: int) -> None:
        """Restart the term's random streams under `seed` (the generator and the keys)."""
        self.generator.manual_seed(seed)
        self.keys.copy_(world_keys(seed, torch.arange(self.env.num_envs, device=self.env.device)))
        self.draws.zero_()

    @property
    def command(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def resample(self, worlds: Worlds) -> None:  # pragma: no cover - abstract
        """Draw new commands for `worlds` (ids; a bool mask too where `takes_masks`)."""
        raise NotImplementedError

    def update(self, dt: float) -> None:
        """Between resamplings (e.g. move a marker); default nothing."""

    # ------------------------------------------------------------------ draws
    def _counters(self, worlds: Worlds, stream: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(episode hash, sample counter) of `worlds` for one draw; advances their counters."""
        if worlds.dtype == torch.bool:
            sample = self.draws.clone()
            self.draws += worlds.to(torch.long)
            keys = self.keys
        else:
            sample = self.draws[worlds]
            self.draws[worlds] = sample + 1
            keys = self.keys[worlds]
        return episode_hash(keys, stream, torch.zeros_like(sample)), sample

    def draw_normal(self, worlds: Worlds, dim: int) -> torch.Tensor:
        """Standard normal numbers, (k, dim) for ids or (num_envs, dim) for a mask."""
        return gaussian_from(*self._counters(worlds, _NORMAL_STREAM), dim)

    def draw_uniform(self, worlds: Worlds, low, high) -> torch.Tensor:
        """Uniform numbers in (low, high) of `low`'s shape per world (scalars: (k,))."""
        return self._uniform(worlds, low, high, _UNIFORM_STREAM)

    def _uniform(self, worlds: Worlds, low, high, stream: int) -> torch.Tensor:
        low = torch.as_tensor(low, dtype=torch.float64, device=self.env.device)
        high = torch.as_tensor(high, dtype=torch.float64, device=self.env.device)
        h, sample = self._counters(worlds, stream)
        u = uniform_from(h, sample, max(1, low.numel())).reshape(-1, *low.shape)
        return low + (high - low) * u

    @staticmethod
    def assign(target: torch.Tensor, worlds: Worlds, value: torch.Tensor) -> None:
        """target[worlds] = value for ids; for a mask (value holding every world), the
        masked rows only."""
        if worlds.dtype == torch.bool:
            mask = worlds.reshape((-1,) + (1,) * (target.ndim - 1))
            target.copy_(torch.where(mask, value, target))
        else:
            target[worlds] = value

    @staticmethod
    def rows(values: torch.Tensor, worlds: Worlds) -> torch.Tensor:
        """The rows of `values` a draw for `worlds` lines up with: all for a mask."""
        return values if worlds.dtype == torch.bool else values[worlds]

    # ---------------------------------------------------------------- timers
    def _restart(self, worlds: Worlds) -> None:
        lo, hi = self.cfg.resampling_time_range_s
        self.assign(self.time_left, worlds, self._uniform(worlds, lo, hi, _TIME_STREAM))
        if worlds.dtype == torch.bool and not self.takes_masks:
            worlds = torch.nonzero(worlds)[:, 0]  # a term that resamples by index only
        self.resample(worlds)

    def step(self, dt: float) -> None:
        self.time_left -= dt
        due = self.time_left <= 0.0
        if self._masks:  # no host read: every world draws, the due ones keep it
            self._restart(due)
        else:
            ids = torch.nonzero(due)[:, 0]
            if ids.numel():
                self._restart(ids)
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
        """Seed each term's random streams from the environment seed and the term's name."""
        for name, term in self.terms.items():
            term.reseed(stream_seed(seed, f"commands/{name}"))

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
