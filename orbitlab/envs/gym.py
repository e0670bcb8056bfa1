"""Gymnasium front ends of a ManagerBasedRLEnv, and task registration.

* `OrbitlabVectorEnv`: a `gymnasium.vector.VectorEnv` over all worlds. Observations
  are the 'policy' group, actions are in [-1, 1]. Autoreset mode SAME_STEP:
  a finished env is reset inside `step()`, which returns the first observation
  of its new episode; the last observation of the ended episode is in
  `infos["final_obs"]` (with `infos["_final_obs"]` marking which envs).
  Tensors stay torch on the simulation's device (`as_numpy=False`) or become
  numpy arrays (`as_numpy=True`, the default for gymnasium compatibility).
* `OrbitlabGymEnv`: one world as a `gymnasium.Env` (numpy in and out).

Tasks register as `Orbitlab-<Task>-v0` with `register_task`; `gymnasium.make(id)`
gives the single env and `gymnasium.make_vec(id, num_envs=N)` the batched one.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg


def load_cfg(entry_point: str, num_envs: int | None = None, **overrides) -> ManagerBasedRLEnvCfg:
    """Build a task config from 'module:function' and set num_envs / backend overrides."""
    module, _, attr = entry_point.partition(":")
    cfg = getattr(importlib.import_module(module), attr)()
    if num_envs is not None:
        cfg.scene.num_envs = int(num_envs)
    for key, value in overrides.items():
        target = cfg.scene if hasattr(cfg.scene, key) else cfg
        if not hasattr(target, key):
            raise ValueError(f"unknown env option '{key}'")
        setattr(target, key, value)
    return cfg


def _box(shape, low=-np.inf, high=np.inf) -> gym.spaces.Box:
    return gym.spaces.Box(low=low, high=high, shape=tuple(shape), dtype=np.float32)


class OrbitlabVectorEnv(gym.vector.VectorEnv):
    """All worlds of a ManagerBasedRLEnv as one Gymnasium vector env."""

    metadata: dict = {  # noqa: RUF012 - Gymnasium reads it from the class
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": ["rgb_array"],
    }

    def __init__(self, env: ManagerBasedRLEnv, as_numpy: bool = True):
        self.env, self.as_numpy = env, as_numpy
        self.num_envs = env.num_envs
        if "policy" not in env.observation_manager.shapes:
            raise ValueError("the task needs a 'policy' observation group")
        self.single_observation_space = _box(env.observation_manager.shapes["policy"])
        self.single_action_space = _box((env.action_manager.total_dim,), -1.0, 1.0)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.render_mode = "rgb_array"

    def _out(self, x: torch.Tensor):
        return x.detach().cpu().numpy() if self.as_numpy else x

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, _ = self.env.reset(seed=seed)
        return self._out(obs["policy"]), {}

    def step(self, actions):
        obs, reward, terminated, truncated, extras = self.env.step(
            torch.as_tensor(actions, device=self.env.device)
        )
        infos: dict[str, Any] = {"log": dict(extras.get("log", {}))}
        if "final_obs" in extras:
            infos["final_obs"] = self._out(extras["final_obs"])
            infos["_final_obs"] = self._out(terminated | truncated)
        return (
            self._out(obs["policy"]),
            self._out(reward),
            self._out(terminated),
            self._out(truncated),
            infos,
        )

    def render(self):
        return self.env.render()

    def close(self, **kwargs):
        self.env.close()


class OrbitlabGymEnv(gym.Env):
    """One world of a task as a plain Gymnasium env (numpy, float32)."""

    metadata: dict = {"render_modes": ["rgb_array"]}  # noqa: RUF012 - read from the class

    def __init__(self, cfg_entry_point: str, render_mode: str | None = None, **overrides):
        overrides.pop("num_envs", None)
        self.env = ManagerBasedRLEnv(load_cfg(cfg_entry_point, num_envs=1, **overrides))
        self.observation_space = _box(self.env.observation_manager.shapes["policy"])
        self.action_space = _box((self.env.action_manager.total_dim,), -1.0, 1.0)
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, _ = self.env.reset(seed=seed)
        return obs["policy"][0].cpu().numpy(), {}

    def step(self, action):
        action = torch.as_tensor(np.asarray(action, dtype=np.float32)[None], device=self.env.device)
        obs, reward, terminated, truncated, extras = self.env.step(action)
        info = {"log": {k: float(v) for k, v in extras.get("log", {}).items()}}
        return (
            obs["policy"][0].cpu().numpy(),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            info,
        )

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


def make_vector_env(
    cfg_entry_point: str, num_envs: int = 1, as_numpy: bool = True, **overrides
) -> OrbitlabVectorEnv:
    cfg = load_cfg(cfg_entry_point, num_envs=num_envs, **overrides)
    return OrbitlabVectorEnv(ManagerBasedRLEnv(cfg), as_numpy=as_numpy)
