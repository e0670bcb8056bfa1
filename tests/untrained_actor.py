"""The deterministic actor of a new rsl-rl runner for a task's tuned agent: what PPO starts
from, with the agent's `init_mean_scale` or another (None: rsl-rl's own initialisation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml

import orbitlab
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def tuned_agent(name: str) -> dict[str, Any]:
    """The shipped agent config `orbitlab/configs/agent/<name>.yaml`."""
    agents = Path(orbitlab.__file__).parent / "configs" / "agent"
    return yaml.safe_load((agents / f"{name}.yaml").read_text())


def untrained_actor(
    env: ManagerBasedRLEnv, agent: dict[str, Any], init_mean_scale: float | None, seed: int
) -> Callable[[], torch.Tensor]:
    """The new runner's mean action for `env`'s current observations (torch seeded with
    `seed` before the networks are built)."""
    from orbitlab.rl.rsl_rl import OrbitlabOnPolicyRunner, RslRlVecEnvWrapper, runner_cfg_from_agent

    wrapper = RslRlVecEnvWrapper(env)
    torch.manual_seed(seed)
    cfg = runner_cfg_from_agent({**agent, "init_mean_scale": init_mean_scale}, env)
    policy = OrbitlabOnPolicyRunner(wrapper, cfg, log_dir=None, device="cpu").get_inference_policy(
        device="cpu"
    )

    def act() -> torch.Tensor:
        with torch.inference_mode():
            return policy(wrapper.get_observations())

    return act
