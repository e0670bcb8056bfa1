"""Stable-Baselines3 (2.x) front end of a ManagerBasedRLEnv.

`Sb3VecEnvWrapper(env)` implements SB3's `VecEnv` over all worlds of the env:

* observations are the 'policy' group as a float32 numpy array (num_envs, *shape),
  the observation space an unbounded `Box`; actions are a `Box` in [-1, 1];
* `step_wait()` returns `(obs, rewards, dones, infos)` with `dones` = terminated or
  truncated. A finished env has already been reset, so `obs` holds its first
  observation of the new episode; `infos[i]["terminal_observation"]` is the last one
  of the ended episode, `infos[i]["TimeLimit.truncated"]` marks a time-out (truncated
  and not terminated, for value bootstrapping) and `infos[i]["episode"]` = {"r": return,
  "l": length, "t": seconds since the wrapper was made}, as SB3's `Monitor` writes it,
  so the logger reports `rollout/ep_rew_mean` and `rollout/ep_len_mean`, and
  `infos[i]["is_success"]` (ended by the task's 'success' term: `rollout/success_rate`);
* the env's own episode statistics (`extras["log"]`) of the last step are in
  `wrapper.episode_log`.

The worlds share one batched env: `get_attr` reads its attribute once per index, while
`set_attr` and `env_method` act on the whole batch and so accept only all indices.
`seed(s)` takes effect at the next `reset()`, which reseeds the env with `s`.

    from stable_baselines3 import PPO
    model = PPO("MlpPolicy", Sb3VecEnvWrapper(env), n_steps=64, batch_size=256)
    model.learn(100_000)
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnvIndices,
        VecEnvObs,
        VecEnvStepReturn,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] not in ("stable_baselines3",):
        raise  # installed but failing: its own error, not a false 'install it' hint
    raise ImportError(
        "orbitlab.rl.sb3 needs stable-baselines3: pip install 'orbitlab-sim[sb3]'"
    ) from exc

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.train.interrupt import raise_if_requested


def _numpy(x: torch.Tensor, dtype=np.float32) -> np.ndarray:
    return x.detach().cpu().numpy().astype(dtype, copy=False)


class Sb3VecEnvWrapper(VecEnv):
    """A ManagerBasedRLEnv as a Stable-Baselines3 vectorized environment (numpy, host)."""

    render_mode = "rgb_array"

    def __init__(self, env: ManagerBasedRLEnv):
        if "policy" not in env.observation_manager.shapes:
            raise ValueError("the task needs a 'policy' observation group")
        self.env = env
        self.device = env.device
        obs_space = gym.spaces.Box(
            -np.inf, np.inf, tuple(env.observation_manager.shapes["policy"]), dtype=np.float32
        )
        action_space = gym.spaces.Box(-1.0, 1.0, (env.action_manager.total_dim,), dtype=np.float32)
        super().__init__(env.num_envs, obs_space, action_space)
        self._actions: torch.Tensor | None = None
        self._ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self._ep_length = np.zeros(self.num_envs, dtype=np.int64)
        self._t_start = time.time()
        self.episode_log: dict[str, Any] = {}

    @property
    def unwrapped(self) -> ManagerBasedRLEnv:  # type: ignore[override]
        return self.env

    # ----------------------------------------------------------------- loop
    def reset(self) -> VecEnvObs:
        """Reset every env (with the seed of the last `seed()` call, if any)."""
        seed = self._seeds[0]
        obs, extras = self.env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        self.episode_log = dict(extras.get("log", {}))
        return _numpy(obs["policy"])

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = torch.as_tensor(
            np.asarray(actions, dtype=np.float32), device=self.device
        ).reshape(self.num_envs, -1)

    def step_wait(self) -> VecEnvStepReturn:
        raise_if_requested()  # Ctrl-C during training stops here (orbitlab.rl.train.interrupt)
        if self._actions is None:
            raise RuntimeError("step_wait() without a pending step_async()")
        obs, reward, terminated, truncated, extras = self.env.step(self._actions)
        self._actions = None
        rewards = _numpy(reward)
        terminated, truncated = _numpy(terminated, bool), _numpy(truncated, bool)
        dones = terminated | truncated
        self._ep_return += rewards
        self._ep_length += 1
        self.episode_log = dict(extras.get("log", {}))
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        done_ids = np.flatnonzero(dones)
        if done_ids.size:
            final_obs = _numpy(extras["final_obs"])
            success = _numpy(
                self.env.termination_manager.last.get(
                    "success", torch.zeros(self.num_envs, dtype=torch.bool)
                ),
                bool,
            )
            elapsed = round(time.time() - self._t_start, 6)
            for i in done_ids:
                infos[i]["terminal_observation"] = final_obs[i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                infos[i]["is_success"] = bool(success[i])
                infos[i]["episode"] = {
                    "r": float(self._ep_return[i]),
                    "l": int(self._ep_length[i]),
                    "t": elapsed,
                }
            self._ep_return[done_ids] = 0.0
            self._ep_length[done_ids] = 0
        return _numpy(obs["policy"]), rewards, dones, infos

    def close(self) -> None:
        self.env.close()

    def get_images(self) -> list[np.ndarray]:
        """One RGB image per world (offscreen GL)."""
        return [self.env.render(i) for i in range(self.num_envs)]

    # ------------------------------------------------------ env attributes
    def _all_indices(self, indices: VecEnvIndices, what: str) -> list[int]:
        ids = list(self._get_indices(indices))
        if sorted(ids) != list(range(self.num_envs)):
            raise ValueError(f"{what} acts on the whole batched env; pass indices=None")
        return ids

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The batched env's attribute, once per index (raises AttributeError if absent)."""
        if attr_name == "render_mode" and not hasattr(self.env, attr_name):
            value = self.render_mode  # the batched env renders RGB arrays
        else:
            value = getattr(self.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._all_indices(indices, "set_attr")
        setattr(self.env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call the batched env's method once; its result is repeated for every index."""
        ids = self._all_indices(indices, "env_method")
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in ids]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Always False: the batched env is no gymnasium env, so no gymnasium wrapper."""
        return [False for _ in self._get_indices(indices)]
