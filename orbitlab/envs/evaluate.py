"""Roll out an agent (baseline graph, random or zero actions) and score the episodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


@dataclass
class Score:
    """Scores over the episodes that ended within the rollout (and the ones still running)."""

    episodes: int
    """Episodes that ended (success, failure or time-out)."""
    success_rate: float
    """Fraction of ended episodes that ended by the 'success' termination."""
    mean_return: float
    """Mean undiscounted return of the ended episodes."""
    mean_success_time_s: float
    """Mean episode duration of the successful ones, s (nan if none)."""

    def __str__(self) -> str:
        return (f"episodes {self.episodes}, success {100 * self.success_rate:.1f}%, "
                f"return {self.mean_return:.3f}, time to success "
                f"{self.mean_success_time_s:.1f} s")


def rollout(env: ManagerBasedRLEnv, policy: str | Callable[[], torch.Tensor] = "baseline",
            max_steps: int | None = None, seed: int = 0) -> Score:
    """Run every env until each has ended one episode (or `max_steps` env steps).

    `policy`: 'baseline' (the config's agent graph; no actions), 'random' (uniform in
    [-1, 1]), 'zero', or a callable returning the next (num_envs, action_dim) actions
    (e.g. a trained actor reading the env's current observations).
    """
    generator = torch.Generator(device=env.device).manual_seed(seed)
    n, dim = env.num_envs, env.action_manager.total_dim
    steps = max_steps or env.max_episode_length
    returns = torch.zeros(n, device=env.device)
    ended = torch.zeros(n, dtype=torch.bool, device=env.device)
    success = torch.zeros(n, dtype=torch.bool, device=env.device)
    duration = torch.zeros(n, device=env.device)
    final_return = torch.zeros(n, device=env.device)
    env.reset()
    for _ in range(steps):
        if callable(policy):
            action = policy()
        elif policy == "random":
            action = 2 * torch.rand((n, dim), generator=generator, device=env.device) - 1
        else:
            action = torch.zeros((n, dim), device=env.device)
        length = env.episode_length_buf.clone()
        _, reward, terminated, truncated, _ = env.step(action)
        returns += reward
        done = (terminated | truncated) & ~ended
        won = done & env.termination_manager.last.get("success", torch.zeros_like(done))
        success |= won
        duration = torch.where(done, (length + 1).float() * env.step_dt, duration)
        final_return = torch.where(done, returns, final_return)
        returns = torch.where(terminated | truncated, 0.0, returns)
        ended |= done
        if bool(ended.all()):
            break
    count = int(ended.sum())
    won_time = duration[success]
    return Score(episodes=count,
                 success_rate=float(success.sum()) / max(count, 1),
                 mean_return=float(final_return[ended].mean()) if count else float("nan"),
                 mean_success_time_s=float(won_time.mean()) if won_time.numel() else float("nan"))
