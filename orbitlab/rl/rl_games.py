"""rl-games (`rl-games` 1.6.x) front end of a ManagerBasedRLEnv.

`RlGamesVecEnvWrapper(env)` implements rl-games' `IVecEnv` over all worlds of the env,
with torch tensors on the env's device (rl-games then keeps the whole rollout there):

* observations are the 'policy' group (float32); when the task also has a 'critic'
  group they come as `{'obs': policy, 'states': critic}`, the privileged states
  feeding an asymmetric critic (`config.central_value_config` in the agent params);
* `step(actions)` returns `(obs, rewards, dones, infos)` with `dones` = terminated or
  truncated (uint8), `infos["time_outs"]` = truncated and not terminated (for value
  bootstrapping), `infos["log"]` and `infos["episode"]` = the env's episode statistics
  of that step (`IsaacAlgoObserver` writes `infos["episode"]` to tensorboard);
* `get_env_info()` gives gymnasium `Box` spaces: observations and states unbounded,
  actions in [-clip_actions, clip_actions].

`register_rl_games_env(env_factory)` makes the env known to rl-games under the name
'orbitlab' (the `env_name` of `configs/agent/rl_games_ppo.yaml`)::

    import yaml
    from rl_games.torch_runner import Runner
    register_rl_games_env(lambda **env_config: ManagerBasedRLEnv(cfg))
    params = yaml.safe_load(open("configs/agent/rl_games_ppo.yaml"))
    params["config"]["num_actors"] = cfg.scene.num_envs
    runner = Runner()
    runner.load({"params": params})
    runner.run({"train": True, "play": False})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

try:
    from rl_games.common import env_configurations, vecenv
    from rl_games.common.ivecenv import IVecEnv
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] not in ("rl_games",):
        raise  # installed but failing: its own error, not a false 'install it' hint
    raise ImportError(
        "orbitlab.rl.rl_games needs rl-games: pip install 'orbitlab-sim[rl-games]'"
    ) from exc

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.train.interrupt import raise_if_requested

ENV_NAME = "orbitlab"
"""The rl-games `env_name` under which `register_rl_games_env` files the env."""

VECENV_TYPE = "ORBITLAB"
"""The rl-games `vecenv_type` that builds a `RlGamesVecEnvWrapper`."""


def _box(shape, low: float = -np.inf, high: float = np.inf) -> gym.spaces.Box:
    return gym.spaces.Box(low, high, tuple(int(n) for n in shape), dtype=np.float32)


class RlGamesVecEnvWrapper(IVecEnv):
    """A ManagerBasedRLEnv as an rl-games vectorized environment (torch, env's device).

    `clip_actions`: actions are clamped to [-clip_actions, clip_actions] before they
    reach the env (None: passed through unclipped, action space unbounded).
    `clip_obs`: observations and states are clamped to [-clip_obs, clip_obs] (None: not).
    """

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        clip_actions: float | None = 1.0,
        clip_obs: float | None = None,
    ):
        shapes = env.observation_manager.shapes
        if "policy" not in shapes:
            raise ValueError("the task needs a 'policy' observation group")
        for name, value in (("clip_actions", clip_actions), ("clip_obs", clip_obs)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")
        self.env = env
        self.clip_actions = None if clip_actions is None else float(clip_actions)
        self.clip_obs = None if clip_obs is None else float(clip_obs)
        self.num_envs = env.num_envs
        self.num_actions = env.action_manager.total_dim
        self.device = env.device
        self.has_states = "critic" in shapes
        bound = np.inf if self.clip_obs is None else self.clip_obs
        self.observation_space = _box(shapes["policy"], -bound, bound)
        self.state_space = _box(shapes["critic"], -bound, bound) if self.has_states else None
        act = np.inf if self.clip_actions is None else self.clip_actions
        self.action_space = _box((self.num_actions,), -act, act)
        self._seed: int | None = None

    @property
    def unwrapped(self) -> ManagerBasedRLEnv:
        return self.env

    # --------------------------------------------------------------- IVecEnv
    def get_number_of_agents(self) -> int:
        return 1

    def get_env_info(self) -> dict[str, Any]:
        """Spaces and sizes as rl-games' `a2c_common` reads them."""
        info: dict[str, Any] = {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "agents": 1,
            "value_size": 1,
        }
        if self.has_states:
            info["state_space"] = self.state_space
        return info

    def seed(self, seed: int) -> None:
        """Reseed the env with `seed` at the next `reset()`."""
        self._seed = None if seed is None else int(seed)

    def _tensor(self, value: torch.Tensor) -> torch.Tensor:
        value = value.to(device=self.device, dtype=torch.float32)
        if self.clip_obs is not None:
            value = value.clamp(-self.clip_obs, self.clip_obs)
        return value

    def _obs(self, obs: dict[str, torch.Tensor]) -> torch.Tensor | dict[str, torch.Tensor]:
        policy = self._tensor(obs["policy"])
        if not self.has_states:
            return policy
        return {"obs": policy, "states": self._tensor(obs["critic"])}

    def reset(self) -> torch.Tensor | dict[str, torch.Tensor]:
        """Reset every env (with the seed of the last `seed()` call, if any)."""
        seed, self._seed = self._seed, None
        obs, _ = self.env.reset(seed=seed)
        return self._obs(obs)

    def step(self, actions: torch.Tensor):
        raise_if_requested()  # Ctrl-C during training stops here (orbitlab.rl.train.interrupt)
        actions = torch.as_tensor(actions, device=self.device, dtype=torch.float32)
        actions = actions.reshape(self.num_envs, self.num_actions)
        if self.clip_actions is not None:
            actions = actions.clamp(-self.clip_actions, self.clip_actions)
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        terminated, truncated = terminated.bool(), truncated.bool()
        dones = (terminated | truncated).to(dtype=torch.uint8)
        infos = dict(extras)
        infos["time_outs"] = truncated & ~terminated
        infos["log"] = dict(extras.get("log", {}))
        if infos["log"]:
            infos["episode"] = infos["log"]
        return self._obs(obs), reward.to(dtype=torch.float32), dones, infos

    def close(self) -> None:
        self.env.close()


def register_rl_games_env(
    env_factory: Callable[..., ManagerBasedRLEnv | RlGamesVecEnvWrapper],
    name: str = ENV_NAME,
    clip_actions: float | None = 1.0,
    clip_obs: float | None = None,
) -> None:
    """Make `env_factory` the rl-games env `name` (a `params.config.env_name`).

    `env_factory(**env_config)` gets the agent's `config.env_config` (rl-games adds
    'seed' there when the params set one) and returns a ManagerBasedRLEnv (wrapped
    here with `clip_actions` / `clip_obs`) or a ready RlGamesVecEnvWrapper; its
    `num_envs` must equal `config.num_actors`.
    """

    def make_wrapper(**env_config: Any) -> RlGamesVecEnvWrapper:
        env = env_factory(**env_config)
        if isinstance(env, RlGamesVecEnvWrapper):
            return env
        return RlGamesVecEnvWrapper(env, clip_actions=clip_actions, clip_obs=clip_obs)

    def make_vec_env(config_name: str, num_actors: int, **env_config: Any) -> RlGamesVecEnvWrapper:
        creator = env_configurations.configurations[config_name]["env_creator"]
        wrapper = creator(**env_config)
        if wrapper.num_envs != num_actors:
            raise ValueError(
                f"config.num_actors = {num_actors} but the env has {wrapper.num_envs} worlds"
            )
        return wrapper

    vecenv.register(VECENV_TYPE, make_vec_env)
    env_configurations.register(name, {"vecenv_type": VECENV_TYPE, "env_creator": make_wrapper})
