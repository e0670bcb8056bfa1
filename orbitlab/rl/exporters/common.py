"""What every library's policy source hands back and the parts they share.

A source (`orbitlab.rl.exporters.rsl_rl`, `.sb3`, `.rl_games`) turns one library's
checkpoint into a `PolicySource`: the module to export, the library's own inference path
as the yardstick, and observations of the run's task for the check (`task_observations`:
`num_envs` worlds reset and then driven by the policy for `ROLLOUT_STEPS` steps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

ROLLOUT_STEPS = 8
"""Policy steps after the reset whose observations join the check."""

Reference = Callable[[torch.Tensor], torch.Tensor]
"""The checkpoint's own deterministic actor: (batch, obs_dim) -> (batch, action_dim)."""


@dataclass
class PolicySource:
    """What an exporter needs from one library's checkpoint.

    `module` maps (batch, obs_dim) float32 observations to deterministic actions and is
    what gets exported; `reference` is the library's own inference path, the yardstick;
    `real_obs` holds observations of freshly reset worlds of the run's task (or None).
    """

    library: str
    module: nn.Module
    obs_dim: int
    reference: Reference
    real_obs: torch.Tensor | None = None


class ObsNormalizer(nn.Module):
    """SB3 VecNormalize's observation step: clip((obs - mean) / sqrt(var + eps), +-clip).

    rl-games' RunningMeanStd applies the same step (with clip 5)."""

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).reshape(1, -1))
        self.register_buffer(
            "std",
            torch.sqrt(torch.as_tensor(var, dtype=torch.float32) + float(epsilon)).reshape(1, -1),
        )
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)


def task_env(run_cfg: dict[str, Any], num_envs: int):
    """A CPU env of the run's task with `num_envs` worlds, or None if the config has no task."""
    task = (run_cfg.get("task") or {}).get("name")
    if not task:
        return None
    from orbitlab.registry import make_env

    return make_env(
        task,
        num_envs,
        backend="cpu",
        seed=int(run_cfg.get("seed") or 0) + 12345,
        env=run_cfg.get("env") or {},
    )


def task_observations(
    env, groups: list[str], reference: Reference, steps: int = ROLLOUT_STEPS
) -> torch.Tensor:
    """(num_envs * (steps + 1), obs_dim) observations of `env`: the reset ones, then those
    of `steps` steps driven by `reference` (actions clamped to the tasks' [-1, 1])."""
    obs, _ = env.reset()
    batches = []
    for step in range(steps + 1):
        flat = torch.cat([obs[group].reshape(env.num_envs, -1) for group in groups], dim=-1)
        batches.append(flat.to("cpu", torch.float32))
        if step < steps:
            actions = reference(batches[-1]).to(env.device).clamp(-1.0, 1.0)
            obs, *_ = env.step(actions)
    return torch.cat(batches)
