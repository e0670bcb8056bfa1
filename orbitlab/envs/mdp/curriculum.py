"""Curriculum terms: `term(env, env_ids, **params) -> float` run at resets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

__all__ = ["grow_range_on_success"]


class grow_range_on_success:
    """Move an event's (low, high) parameter from `start` toward `final` as the success
    rate of the episodes just ended rises to `promote_rate`, and back when it falls
    below `demote_rate` (e.g. the docking start distance grows as the policy docks).

    Params: `event` (event term name), `param` (its parameter), `start`, `final`
    ((low, high) pairs), `step` (fraction of the way per promotion), `promote_rate`,
    `demote_rate`, `success_term` (termination term name), `min_episodes`. Returns the
    level in [0, 1].

    `min_episodes` 0 decides at every reset from the episodes ending there (they end one
    or two at a time, so each success promotes and each failure demotes: the level walks
    to where about half succeed). `min_episodes` N > 0 pools the ended episodes until N
    of them are in and decides on their success rate, then starts a new pool: every
    decision is measured on N episodes, and a rate between `demote_rate` and
    `promote_rate` holds the level (hysteresis).
    """

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.level = 0.0
        self.ended = 0
        """Episodes in the current pool (`min_episodes` > 0)."""
        self.succeeded = 0
        """Successes among them."""
        self.params = cfg.params
        p = cfg.params
        self._apply(env, p["event"], p["param"], p["start"], p["final"])

    def state_dict(self) -> dict[str, float]:
        # plain numbers: loads with weights_only
        return {"level": float(self.level), "ended": self.ended, "succeeded": self.succeeded}

    def load_state_dict(self, state: dict[str, float], env: ManagerBasedRLEnv) -> None:
        self.level = float(state["level"])
        self.ended = int(state.get("ended", 0))
        self.succeeded = int(state.get("succeeded", 0))
        p = self.params
        self._apply(env, p["event"], p["param"], p["start"], p["final"])

    def _apply(self, env: ManagerBasedRLEnv, event: str, param: str, start, final) -> None:
        if event not in env.event_manager.terms:
            raise ValueError(
                f"curriculum: no event '{event}' (have: {', '.join(env.event_manager.terms)})"
            )
        value = tuple(s + self.level * (f - s) for s, f in zip(start, final, strict=True))
        env.event_manager.terms[event].params[param] = value

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        env_ids: torch.Tensor,
        event: str,
        param: str,
        start,
        final,
        step: float = 0.1,
        promote_rate: float = 0.8,
        demote_rate: float = 0.3,
        success_term: str = "success",
        min_episodes: int = 0,
    ) -> float:
        last = env.termination_manager.last.get(success_term)
        ended = env.episode_length_buf[env_ids] > 0  # the initial reset ends no episode
        if last is None or not bool(ended.any()):
            return self.level
        self.ended += int(ended.sum())
        self.succeeded += int(last[env_ids][ended].sum())
        if self.ended < min_episodes:
            return self.level
        rate = self.succeeded / self.ended
        self.ended = self.succeeded = 0
        if rate >= promote_rate:
            self.level = min(1.0, self.level + step)
        elif rate < demote_rate:
            self.level = max(0.0, self.level - step)
        self._apply(env, event, param, start, final)
        return self.level
