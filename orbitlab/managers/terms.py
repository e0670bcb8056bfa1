"""Term configs shared by the managers: a function (or class) plus its parameters.

A term is a plain function `term(env, **params) -> Tensor` vectorized over
environments, or a class built once with `(cfg, env)` and then called like one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from orbitlab.fw.terms import KernelTerm


@dataclass(kw_only=True)
class TermCfg:
    """A manager term."""

    func: Callable[..., Any] | KernelTerm
    """`func(env, **params)`, or a class `func(cfg, env)` whose instances are callable, or
    (rewards and terminations) a kernel term (`orbitlab.fw.terms.kernel_term`)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed on every call."""


@dataclass(kw_only=True)
class ObservationTermCfg(TermCfg):
    """One observation term: (num_envs, ...) values, flattened into its group."""

    noise_std: float = 0.0
    """Std of additive Gaussian noise (group noise switch must be on)."""
    scale: float = 1.0
    """Multiplier applied after noise."""
    clip: tuple[float, float] | None = None
    """Optional clip range applied last."""
    history_length: int = 0
    """Stack this many past values (0: current only), oldest first."""


@dataclass(kw_only=True)
class ObservationGroupCfg:
    """A named group of observation terms (e.g. 'policy', 'critic')."""

    terms: dict[str, ObservationTermCfg] = field(default_factory=dict)
    """Terms by name, in order."""
    concatenate: bool = True
    """Concatenate the flattened terms into one (num_envs, D) tensor, else a dict."""
    enable_noise: bool = True
    """Apply each term's noise (off for a privileged critic)."""


@dataclass(kw_only=True)
class RewardTermCfg(TermCfg):
    """A reward term; its value times `weight` times the env step (s) is added."""

    weight: float = 1.0
    """Weight (reward units per term unit per second)."""


@dataclass(kw_only=True)
class TerminationTermCfg(TermCfg):
    """A termination condition returning a (num_envs,) bool tensor."""

    time_out: bool = False
    """True: a truncation (time limit), not a terminal state."""


@dataclass(kw_only=True)
class EventTermCfg(TermCfg):
    """An event: `func(env, env_ids, **params)` at startup, reset or intervals."""

    mode: Literal["startup", "reset", "interval"] = "reset"
    """When the event fires."""
    interval_range_s: tuple[float, float] = (1.0, 1.0)
    """'interval' mode: time between firings, drawn uniformly per env, s."""


@dataclass(kw_only=True)
class CurriculumTermCfg(TermCfg):
    """A curriculum step `func(env, env_ids, **params) -> float | None` run at resets."""
