"""What every manager shares: resolving term configs and printing the active terms."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orbitlab.fw.terms import KernelTerm
from orbitlab.managers.scene_entity_cfg import resolve_params
from orbitlab.managers.terms import TermCfg

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def resolve_term(name: str, cfg: TermCfg, env: ManagerBasedRLEnv):
    """A callable for a term: the function itself, or an instance of a term class; a
    kernel term (`orbitlab.fw.terms.KernelTerm`) as it is (its manager builds it)."""
    if isinstance(cfg.func, KernelTerm):
        return cfg.func
    if not callable(cfg.func):
        raise TypeError(f"term '{name}': func must be callable, got {cfg.func!r}")
    if inspect.isclass(cfg.func):
        return cfg.func(cfg, env)
    return cfg.func


def resolve_refs(where: str, cfg: TermCfg, env: ManagerBasedRLEnv) -> dict[str, Any]:
    """The term's params that reference the scene (`SceneEntityCfg`), resolved once; a
    missing name raises a ValueError that starts with `where` (e.g. "reward term 'rate'")."""
    return resolve_params(where, cfg.params, env.scene)


def call_params(cfg: TermCfg, refs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of one call: the config's params (a curriculum may change
    them) with the scene references replaced by their resolved copies."""
    return {**cfg.params, **refs} if refs else cfg.params


def term_table(title: str, rows: Sequence[tuple[object, ...]], header: tuple[str, ...]) -> str:
    """A small text table of a manager's active terms."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [
        f"<{title}> ({len(rows)} terms)",
        line,
        " | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)),
        line,
    ]
    out += [" | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([*out, line])
