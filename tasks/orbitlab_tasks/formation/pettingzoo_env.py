"""One Formation world as a `pettingzoo.ParallelEnv`: the followers are the agents.

PettingZoo's parallel API is one environment, so this wraps a `FormationMultiAgentEnv` over a
single world (num_envs = 1) and converts its torch tensors to numpy and python scalars.

* agents: `possible_agents = ['follower_1', 'follower_2']`, both live for the whole episode
  and both removed from `agents` on its last step (the world terminates or times out as one).
* `observation_space(agent)`: Box (18,) float32, the follower's own 'policy' observation
  (slot error m and slot velocity m/s x 10 in its body axes, attitude error, body rate
  rad/s x 5, its last action); see the task's README.md.
* `action_space(agent)`: Box (6,) float32 in [-1, 1], a body wrench (force +-0.75 N per axis,
  torque +-0.1 N m per axis), held for the 0.2 s step.
* rewards: each follower's own reward (the env's reward terms per follower, x 0.2 s).
* `state()` / `state_space`: Box (40,) float32, the env's privileged 'critic' group (both
  followers' true slot errors, rates, attitude errors and last actions, the leader's Hill
  velocity and waypoint phase).

The world resets itself inside the step that ends its episode (the batched env's autoreset),
so the last step returns the ended episode's final observations; after it `agents` is empty
and `step()` needs a `reset()` first.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch

try:
    from pettingzoo import ParallelEnv
except ImportError as exc:
    if (exc.name or "").split(".")[0] != "pettingzoo":
        raise  # installed but failing: its own error, not a false 'install it' hint
    raise ImportError(
        "the Formation ParallelEnv needs PettingZoo: pip install 'orbitlab-sim[multiagent]'"
    ) from exc

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from orbitlab.scene.scene import SceneCfg
from orbitlab_tasks.formation.multi_agent import ACTION_DIM, FormationMultiAgentEnv

ENV_CFG = "orbitlab_tasks.formation.formation_env_cfg:env_cfg"
"""The config the env is built from (Formation: a body wrench per follower)."""
RENDER_MODES = ("rgb_array",)
"""What `render_mode` may be, besides None."""


def _box(shape: tuple[int, ...], low: float = -np.inf, high: float = np.inf) -> gym.spaces.Box:
    return gym.spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)


def _check_overrides(overrides: dict[str, Any]) -> None:
    """One-line errors for options the env config does not have or cannot take."""
    allowed = sorted(
        {f.name for c in (ManagerBasedRLEnvCfg, SceneCfg) for f in dataclasses.fields(c)}
        - {"num_envs", "scene"}
    )
    for key, value in overrides.items():
        if key == "num_envs":
            raise ValueError(
                f"num_envs={value!r} is not an option of the ParallelEnv (one world); use "
                "FormationMultiAgentEnv for a batch of worlds"
            )
        if key not in allowed:
            raise ValueError(f"unknown env option {key}={value!r}; allowed: {', '.join(allowed)}")
    length = overrides.get("episode_length_s", 1.0)
    if not isinstance(length, (int, float)) or not length > 0:
        raise ValueError(f"episode_length_s must be a number of seconds > 0, got {length!r}")


def _host(x: torch.Tensor) -> np.ndarray:
    """World 0 of a batched tensor as a float32 numpy array."""
    return x[0].detach().cpu().numpy().astype(np.float32)


def _scalar(value: Any) -> Any:
    """A logged one-value tensor or number as a python float; anything else as it is."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    return float(value) if isinstance(value, (int, float)) else value


class FormationParallelEnv(ParallelEnv[str, np.ndarray, np.ndarray]):
    """The followers of one Formation world as PettingZoo parallel agents (numpy, float32)."""

    metadata: dict[str, Any] = {  # noqa: RUF012 - PettingZoo reads it from the class
        "name": "orbitlab_formation_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, render_mode: str | None = None, **overrides: Any):
        """`overrides` set fields of the env config or its scene (e.g. `episode_length_s`, s;
        `seed`); `num_envs` is not one of them: a ParallelEnv is one world."""
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}"
            )
        _check_overrides(overrides)
        self.render_mode = render_mode
        self.multi = FormationMultiAgentEnv(ManagerBasedRLEnv(load_cfg(ENV_CFG, 1, **overrides)))
        self.env = self.multi.env
        self.possible_agents = list(self.multi.possible_agents)
        self.agents: list[str] = []
        self.observation_spaces = {
            a: _box((self.multi.view.obs_dim,)) for a in self.possible_agents
        }
        self.action_spaces = {a: _box((ACTION_DIM,), -1.0, 1.0) for a in self.possible_agents}
        critic = cast(torch.Size, self.env.observation_manager.shapes["critic"])
        self.state_space = _box((int(critic[0]),))

    # The spaces are built once: every call returns the same object (PettingZoo requires it).
    def observation_space(self, agent: str) -> gym.spaces.Box:
        """The agent's observation space: Box (18,) float32."""
        self._check_agent(agent)
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Box:
        """The agent's action space: Box (6,) float32 in [-1, 1] (body force, torque)."""
        self._check_agent(agent)
        return self.action_spaces[agent]

    def _check_agent(self, agent: str) -> None:
        if agent not in self.possible_agents:
            raise KeyError(f"agent {agent!r} is not one of {self.possible_agents}")

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode (the same `seed` gives the same episode); `options` is unused."""
        obs, _ = self.multi.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return {a: _host(obs[a]) for a in self.agents}, {a: {} for a in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Apply each live agent's action (6,) in [-1, 1] for one 0.2 s step."""
        if not self.agents:
            raise RuntimeError("no live agents: call reset() before step()")
        batch = {a: self._action(a, actions) for a in self.agents}
        unknown = sorted(set(actions) - set(self.agents))
        if unknown:
            raise ValueError(f"actions for {unknown}, which are not live agents {self.agents}")
        obs, rewards, terminated, truncated, infos = self.multi.step(batch)
        done = bool(terminated[self.agents[0]][0] | truncated[self.agents[0]][0])
        if done:  # the world already reset: report the ended episode's last observation
            obs = infos["final_obs"]
        log = {k: _scalar(v) for k, v in infos["log"].items()} if done else {}
        out = (
            {a: _host(obs[a]) for a in self.agents},
            {a: float(rewards[a][0]) for a in self.agents},
            {a: bool(terminated[a][0]) for a in self.agents},
            {a: bool(truncated[a][0]) for a in self.agents},
            {a: ({"episode": log} if done else {}) for a in self.agents},
        )
        if done:
            self.agents = []
        return out

    def _action(self, agent: str, actions: dict[str, Any]) -> torch.Tensor:
        if agent not in actions:
            raise ValueError(f"actions has no entry for live agent {agent!r} ({self.agents})")
        value = np.asarray(actions[agent], dtype=np.float32)
        if value.shape != (ACTION_DIM,):
            raise ValueError(
                f"action of {agent!r} must have shape ({ACTION_DIM},), got {value.shape}"
            )
        if not np.isfinite(value).all():
            raise ValueError(f"action of {agent!r} must be finite, got {value.tolist()}")
        return torch.as_tensor(value[None], device=self.env.device)

    def state(self) -> np.ndarray:
        """The global state (40,) float32: the 'critic' group. After the last step of an
        episode it is the next episode's first state (the world has reset)."""
        return _host(cast(torch.Tensor, self.env.obs_buf["critic"]))

    def render(self) -> np.ndarray | None:
        """An RGB image (H, W, 3) uint8 with render_mode 'rgb_array'; None without one."""
        if self.render_mode is None:
            gym.logger.warn("render() was called without a render_mode: nothing to draw")
            return None
        return self.env.render()

    def close(self) -> None:
        """Release the renderer."""
        self.multi.close()
