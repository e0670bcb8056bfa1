"""The exportable actor of a Stable-Baselines3 PPO or SAC model (`.zip`).

The run config (passed as a dict, saved beside the model, or none) names the task whose
observations the check runs on. The model and a VecNormalize are unpickled, so only with
`trust_checkpoint=True`. stable_baselines3 and gymnasium are imported only on use.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from orbitlab.rl.checkpoints import require_trust
from orbitlab.rl.exporters.common import (
    ObsNormalizer,
    PolicySource,
    Reference,
    task_env,
    task_observations,
)


class _Sb3PpoActor(nn.Module):
    """Deterministic PPO actor: action_net(mlp_extractor's policy branch(features))."""

    def __init__(self, policy, normalizer: nn.Module):
        super().__init__()
        self.normalizer = normalizer
        self.features = policy.pi_features_extractor
        self.latent = policy.mlp_extractor.policy_net
        self.action_net = policy.action_net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = self.normalizer(obs.float())
        return self.action_net(self.latent(self.features(obs)))


class _Sb3SacActor(nn.Module):
    """Deterministic SAC actor: tanh(mu(latent_pi(features)))."""

    def __init__(self, policy, normalizer: nn.Module):
        super().__init__()
        self.normalizer = normalizer
        self.features = policy.actor.features_extractor
        self.latent = policy.actor.latent_pi
        self.mu = policy.actor.mu

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = self.normalizer(obs.float())
        return torch.tanh(self.mu(self.latent(self.features(obs))))


def _sb3_model(checkpoint: Path):
    """The SB3 model (PPO or SAC, chosen by its saved policy class) on the CPU."""
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.save_util import load_from_zip_file
    from stable_baselines3.sac.policies import SACPolicy

    data, _, _ = load_from_zip_file(checkpoint, device="cpu", load_data=True)
    policy_class = (data or {}).get("policy_class")
    if isinstance(policy_class, type) and issubclass(policy_class, SACPolicy):
        return SAC.load(checkpoint, device="cpu")
    if isinstance(policy_class, type) and issubclass(policy_class, ActorCriticPolicy):
        return PPO.load(checkpoint, device="cpu")
    raise ValueError(f"'{checkpoint}' is no SB3 PPO or SAC model (policy class {policy_class!r})")


def _sb3_normalizer(vec_normalize: Path | None) -> tuple[nn.Module, Callable | None]:
    """(export module, numpy reference) of a saved VecNormalize's observation scaling."""
    if vec_normalize is None:
        return nn.Identity(), None
    with open(vec_normalize, "rb") as file:
        stats = pickle.load(file)
    if not getattr(stats, "norm_obs", False):
        return nn.Identity(), None
    if isinstance(stats.obs_rms, dict):
        raise TypeError("VecNormalize of dict observations cannot be exported")
    module = ObsNormalizer(stats.obs_rms.mean, stats.obs_rms.var, stats.epsilon, stats.clip_obs)
    return module, stats.normalize_obs


def sb3_source(
    checkpoint: Path,
    run_cfg: dict[str, Any],
    num_real_obs: int = 16,
    vec_normalize: Path | None = None,
    trust_checkpoint: bool = False,
) -> PolicySource:
    """The deterministic actor of a Stable-Baselines3 PPO or SAC model (`.zip`).

    SB3's observation preprocessing is included: the float cast and flattening of a Box
    observation and, with `vec_normalize` (a pickled VecNormalize), its observation
    normalization. PPO gives the unclipped Gaussian mean, SAC the tanh-squashed one.
    Both files are unpickled, which can run code: UntrustedCheckpointError unless
    `trust_checkpoint`.
    """
    import gymnasium as gym
    from stable_baselines3 import SAC

    require_trust(checkpoint, trust_checkpoint, "the Stable-Baselines3 model")
    if vec_normalize is not None:
        require_trust(vec_normalize, trust_checkpoint, "the VecNormalize pickle")
    model = _sb3_model(checkpoint)
    policy = model.policy
    policy.set_training_mode(False)
    if not isinstance(policy.observation_space, gym.spaces.Box):
        raise TypeError(f"only Box observations can be exported, got {policy.observation_space}")
    normalizer, normalize_np = _sb3_normalizer(vec_normalize)
    actor_class = _Sb3SacActor if isinstance(model, SAC) else _Sb3PpoActor
    module = actor_class(policy, normalizer).eval()

    def reference(batch: torch.Tensor) -> torch.Tensor:
        obs = batch.cpu().numpy()
        if normalize_np is not None:
            obs = normalize_np(obs)
        with torch.no_grad():
            return policy._predict(torch.as_tensor(obs, dtype=torch.float32), deterministic=True)

    obs_dim = int(np.prod(policy.observation_space.shape))
    return PolicySource(
        "sb3", module, obs_dim, reference, _sb3_real_obs(run_cfg, num_real_obs, reference)
    )


def _sb3_real_obs(
    run_cfg: dict[str, Any], num_real_obs: int, reference: Reference
) -> torch.Tensor | None:
    """'policy' observations of the run's task driven by the actor, if it names a task."""
    env = task_env(run_cfg, num_real_obs) if num_real_obs > 0 else None
    if env is None:
        return None
    try:
        return task_observations(env, ["policy"], reference)
    finally:
        env.close()
