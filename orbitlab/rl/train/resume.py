"""Resuming a run with its own settings.

A run directory keeps the config it was trained with (`.hydra/config.yaml`). A resume
continues that run, so its task, env overrides, agent (network, save_interval, algorithm),
num_envs, seed and backend come from there, not from today's defaults; only values the user
sets on the command line (`agent.max_iterations=400`, `num_envs=...`) are applied on top.
`resume=true` only considers earlier runs of the same library and algorithm (an SB3 PPO
run never resumes from an SB3 SAC checkpoint), and `usable` turns an unreadable checkpoint
into a warning and a skip instead of an error that blocks every resume.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAVED_KEYS = ("task", "env", "agent", "num_envs", "seed", "backend")
"""Top-level keys of the train config that a resumed run takes from its saved config."""

VALUE_KEYS = ("num_envs", "seed", "backend")
"""Plain keys whose command-line value is applied over the saved config."""


def run_dir_of(checkpoint: Path) -> Path:
    """The run directory holding `checkpoint` (rl-games keeps them under `nn/`)."""
    parent = Path(checkpoint).parent
    return parent.parent if parent.name == "nn" else parent


def saved_config(run_dir: Path) -> dict[str, Any] | None:
    """The resolved config a run was trained with; None when it has none (or unreadable)."""
    from omegaconf import OmegaConf

    path = Path(run_dir) / ".hydra" / "config.yaml"
    try:
        return OmegaConf.to_container(OmegaConf.load(path), resolve=False)  # type: ignore[return-value]
    except (OSError, ValueError):
        return None
    except Exception:  # noqa: BLE001  (a malformed YAML: the run is not resumable)
        return None


def algorithm(agent: dict[str, Any]) -> tuple[str, str]:
    """(library, algorithm) of an agent config ('sb3', 'SAC'); rsl-rl and rl-games: PPO."""
    library = str(agent.get("library", ""))
    return library, str(agent.get("algorithm", "PPO")).upper()


def same_algorithm(agent: dict[str, Any]) -> Callable[[Path], bool]:
    """A run filter: runs whose saved agent has the library and algorithm of `agent`."""
    wanted = algorithm(agent)

    def matches(run: Path) -> bool:
        saved = saved_config(run)
        return saved is not None and algorithm(saved.get("agent") or {}) == wanted

    return matches


class Usable:
    """`is_resumable(path)`, with a checkpoint that cannot be read skipped with a warning
    (its path and reason kept in `skipped`)."""

    def __init__(self, is_resumable: Callable[[Path], bool] | None):
        self.is_resumable = is_resumable
        self.skipped: list[str] = []

    def __call__(self, path: Path) -> bool:
        try:
            return True if self.is_resumable is None else bool(self.is_resumable(path))
        except Exception as error:  # noqa: BLE001  (torn or foreign files: skip, say so)
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            print(f"WARNING: skipping unreadable checkpoint {path}: {reason}", file=sys.stderr)
            self.skipped.append(f"{path.name}: {reason}")
            return False


def user_values(overrides: list[str]) -> list[str]:
    """The command line's value overrides (`key=value`) that a resume applies over the
    saved config: VALUE_KEYS and anything under `agent.` or `env.`; group choices
    (`agent=sb3_ppo`, `task=docking`) are not values."""
    kept = []
    for item in overrides:
        key = item.partition("=")[0].lstrip("+~")
        if key in VALUE_KEYS or key.startswith(("agent.", "env.")):
            kept.append(item.lstrip("+~"))
    return kept


def resumed_config(
    current: dict[str, Any], saved: dict[str, Any], overrides: list[str]
) -> dict[str, Any]:
    """`current` (the composed config) with SAVED_KEYS from `saved` and then the user's
    value `overrides` on top."""
    from omegaconf import OmegaConf

    base = OmegaConf.create({**current, **{k: saved[k] for k in SAVED_KEYS if k in saved}})
    merged = OmegaConf.merge(base, OmegaConf.from_dotlist(user_values(overrides)))
    return OmegaConf.to_container(merged, resolve=False)  # type: ignore[return-value]
