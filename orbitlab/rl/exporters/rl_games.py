"""The exportable actor of an rl-games checkpoint of a `scripts/train.py` run.

`<run>/nn/*.pth`; feed-forward a2c_continuous actors: observation normalizer, actor MLP,
mu, the player's clamp to the action bounds. The checkpoint is unpickled, so only with
`trust_checkpoint=True`; rl-games is imported only when a checkpoint is exported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from orbitlab.rl.checkpoints import require_trust
from orbitlab.rl.exporters.common import (
    ObsNormalizer,
    PolicySource,
    task_env,
    task_observations,
)
from orbitlab.rl.exporters.quiet import quiet

RL_GAMES_EXPORTABLE = "feed-forward a2c_continuous actors (actor_critic MLP, no RNN or CNN)"

RL_GAMES_OBS_CLIP = 5.0
"""rl-games' RunningMeanStd clamps normalized observations to [-5, 5]."""


class _RlGamesActor(nn.Module):
    """Deterministic rl-games a2c_continuous actor: the observation normalizer
    (clip((obs - mean) / sqrt(var + eps), +-5)), the actor MLP, mu, and the player's
    clamp to [-1, 1] rescaled to the action bounds when `clip_actions`."""

    def __init__(self, network, normalizer: nn.Module, bounds: tuple[torch.Tensor, ...] | None):
        super().__init__()
        self.normalizer = normalizer
        self.mlp = network.actor_mlp
        self.mu = network.mu
        self.mu_act = network.mu_act
        self.clip = bounds is not None
        low, high = bounds if bounds is not None else (torch.zeros(1), torch.zeros(1))
        self.register_buffer("low", low.detach().to("cpu", torch.float32).reshape(1, -1))
        self.register_buffer("high", high.detach().to("cpu", torch.float32).reshape(1, -1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        actions = self.mu_act(self.mu(self.mlp(self.normalizer(obs.float()))))
        if self.clip:
            actions = torch.clamp(actions, -1.0, 1.0)
            actions = actions * (self.high - self.low) / 2.0 + (self.high + self.low) / 2.0
        return actions


def rl_games_module(player) -> nn.Module:
    """The export module of an rl-games player; ValueError for what it cannot express."""
    model = player.model
    network = getattr(model, "a2c_network", None)
    shape = {
        name: getattr(network, name, None)
        for name in ("is_continuous", "has_rnn", "has_cnn", "actor_mlp", "mu", "mu_act")
    }
    if (
        shape["is_continuous"] is not True
        or shape["has_rnn"] is not False
        or shape["has_cnn"] is not False
        or any(shape[name] is None for name in ("actor_mlp", "mu", "mu_act"))
    ):
        raise ValueError(
            f"cannot export rl-games model {type(network).__name__}: only "
            f"{RL_GAMES_EXPORTABLE} are supported"
        )
    normalizer: nn.Module = nn.Identity()
    if getattr(model, "normalize_input", False):
        stats = model.running_mean_std
        if getattr(stats, "norm_only", False) or getattr(stats, "per_channel", False):
            raise ValueError(
                "cannot export an rl-games observation normalizer with norm_only or "
                "per_channel: only the default (mean, variance, clip 5) is supported"
            )
        normalizer = ObsNormalizer(
            stats.running_mean.cpu().numpy(),
            stats.running_var.cpu().numpy(),
            float(stats.epsilon),
            RL_GAMES_OBS_CLIP,
        )
    bounds = (player.actions_low, player.actions_high) if player.clip_actions else None
    return _RlGamesActor(network, normalizer, bounds).to("cpu").eval()


def rl_games_source(
    checkpoint: Path,
    run_cfg: dict[str, Any],
    num_real_obs: int = 16,
    trust_checkpoint: bool = False,
) -> PolicySource:
    """The deterministic actor of an rl-games checkpoint (`<run>/nn/*.pth`) of a
    `scripts/train.py` run: the player's mean action, as `orbitlab play` uses it.

    The checkpoint is a pickle, which can run code: UntrustedCheckpointError unless
    `trust_checkpoint`. Needs the run's task (observation and action spaces)."""
    from orbitlab.rl.policies import require_loadable_agent
    from orbitlab.rl.train.rl_games import load_player

    require_trust(checkpoint, trust_checkpoint, "the rl-games checkpoint")
    require_loadable_agent(run_cfg.get("agent") or {}, checkpoint)
    env = task_env(run_cfg, max(1, num_real_obs))
    if env is None:
        raise ValueError("an rl-games export needs the run config's task.name")
    try:
        with quiet():
            player = load_player(env, checkpoint, run_cfg["agent"])
        module = rl_games_module(player)

        def reference(batch: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():
                return player.get_action(batch.to(env.device), is_deterministic=True).cpu()

        real_obs = task_observations(env, ["policy"], reference)
        obs_dim = int(np.prod(env.observation_manager.shapes["policy"]))
    finally:
        env.close()
    return PolicySource(
        "rl_games", module, obs_dim, reference, real_obs if num_real_obs > 0 else None
    )
