"""The followers as agents over one Formation env: a shared-policy batch view and a dict API.

Both take a `ManagerBasedRLEnv` built from `env_cfg` (actions [follower_1 (6), follower_2 (6)]).

* `FollowerBatchEnv`: a `gymnasium.vector.VectorEnv` whose rows are followers: row
  2 i + k is follower k of world i (k = 0: 'follower_1', 1: 'follower_2'). Observations
  (2 N, D), actions (2 N, 6) in [-1, 1] (body wrench: force, torque), rewards (2 N,) each
  follower's own, terminated / truncated per world repeated for both of its followers.
  Autoreset SAME_STEP as `OrbitlabVectorEnv`: `infos["final_obs"]` holds the rows' last
  observation of an ended episode.
* `FormationMultiAgentEnv`: PettingZoo-parallel-style dicts keyed by agent name, each value
  batched over worlds: `reset() -> ({agent: (N, D)}, infos)`, `step({agent: (N, 6)}) ->
  (obs, rewards (N,), terminated (N,), truncated (N,), infos)` per agent.

Per-follower rewards are sum_terms weight * value_k * step_dt over the env's reward terms that
keep a per-follower value (`mdp.PerFollowerTerm`); the env's own reward is their mean.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.mdp import PerFollowerTerm

ACTION_DIM = 6
"""Per-follower action: body force (3) and torque (3), each in [-1, 1]."""


def _box(shape, low=-np.inf, high=np.inf) -> gym.spaces.Box:
    return gym.spaces.Box(low=low, high=high, shape=tuple(shape), dtype=np.float32)


class _FollowerView:
    """Splits and joins the env's tensors along the follower axis."""

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        self.num_agents = len(geo.FOLLOWERS)
        if env.action_manager.total_dim != self.num_agents * ACTION_DIM:
            raise ValueError(
                f"the env's action must be {self.num_agents} follower wrenches "
                f"({self.num_agents * ACTION_DIM}), got "
                f"{env.action_manager.total_dim}: build it from env_cfg, not "
                "baseline_cfg"
            )
        # the policy group is concatenated: one tensor, so its shape is a torch.Size
        total = cast(torch.Size, env.observation_manager.shapes["policy"])[0]
        if total % self.num_agents:
            raise ValueError(
                f"policy observation of {total} values does not split into "
                f"{self.num_agents} followers"
            )
        self.obs_dim = total // self.num_agents
        manager = env.reward_manager
        self.reward_terms = [
            (fn, manager.terms[name].weight)
            for name, fn in manager.term_funcs.items()
            if isinstance(fn, PerFollowerTerm)
        ]

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 2 D) -> (N, 2, D)."""
        return x.reshape(x.shape[0], self.num_agents, -1)

    def rewards(self) -> torch.Tensor:
        """This step's reward of each follower, (N, 2)."""
        out = torch.zeros((self.env.num_envs, self.num_agents), device=self.env.device)
        for term, weight in self.reward_terms:
            if weight != 0.0:
                out += term.per_follower * weight * self.env.step_dt
        return out


class FollowerBatchEnv(gym.vector.VectorEnv):
    """Every follower of every world as one row of a vector env (a shared policy's view)."""

    metadata: dict[str, Any] = {  # noqa: RUF012 - Gymnasium reads it from the class
        "autoreset_mode": AutoresetMode.SAME_STEP
    }

    def __init__(self, env: ManagerBasedRLEnv, as_numpy: bool = True):
        self.env, self.as_numpy = env, as_numpy
        self.view = _FollowerView(env)
        self.num_agents = self.view.num_agents
        self.num_envs = env.num_envs * self.num_agents
        self.single_observation_space = _box((self.view.obs_dim,))
        self.single_action_space = _box((ACTION_DIM,), -1.0, 1.0)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    def _out(self, x: torch.Tensor):
        return x.detach().cpu().numpy() if self.as_numpy else x

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 2 D) -> (2 N, D), or (N,) -> (2 N,) with each world's value repeated."""
        if x.ndim == 1:
            return x.repeat_interleave(self.num_agents)
        return x.reshape(self.num_envs, -1)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, _ = self.env.reset(seed=seed)
        return self._out(self._rows(obs["policy"])), {}

    def step(self, actions):
        actions = torch.as_tensor(
            np.asarray(actions) if not isinstance(actions, torch.Tensor) else actions,
            dtype=torch.float32,
            device=self.env.device,
        )
        if actions.shape != (self.num_envs, ACTION_DIM):
            raise ValueError(
                f"actions must have shape ({self.num_envs}, {ACTION_DIM}) (one row "
                f"per follower), got {tuple(actions.shape)}"
            )
        obs, _, terminated, truncated, extras = self.env.step(
            actions.reshape(self.env.num_envs, -1)
        )
        rewards = self.view.rewards().reshape(-1)
        infos: dict[str, Any] = {"log": extras.get("log", {})}
        if "final_obs" in extras:
            infos["final_obs"] = self._out(self._rows(extras["final_obs"]))
            infos["_final_obs"] = self._out(self._rows(terminated | truncated))
        return (
            self._out(self._rows(obs["policy"])),
            self._out(rewards),
            self._out(self._rows(terminated)),
            self._out(self._rows(truncated)),
            infos,
        )

    def close(self, **kwargs):
        self.env.close()


class FormationMultiAgentEnv:
    """Dict-per-agent API over the followers ('follower_1', 'follower_2'), batched over worlds.

    Observation (N, D) and action (N, 6) per agent, torch on the env's device. `infos` carries
    the env's `log` and, when some world's episode ended, `final_obs` per agent."""

    possible_agents = geo.FOLLOWERS

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        self.view = _FollowerView(env)
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: _box((self.view.obs_dim,)) for a in self.agents}
        self.action_spaces = {a: _box((ACTION_DIM,), -1.0, 1.0) for a in self.agents}

    def _per_agent(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if x.ndim == 1:
            return {a: x for a in self.agents}
        parts = self.view.split(x)
        return {a: parts[:, k] for k, a in enumerate(self.agents)}

    def reset(self, seed: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
        obs, _ = self.env.reset(seed=seed)
        return self._per_agent(obs["policy"]), {}

    def step(self, actions: dict[str, Any]):
        missing = [a for a in self.agents if a not in actions]
        unknown = sorted(set(actions) - set(self.agents))
        if missing or unknown:
            raise ValueError(
                f"actions need exactly the agents {self.agents}; missing "
                f"{missing}, unknown {unknown}"
            )
        parts = [
            torch.as_tensor(actions[a], dtype=torch.float32, device=self.env.device).reshape(
                self.env.num_envs, ACTION_DIM
            )
            for a in self.agents
        ]
        obs, _, terminated, truncated, extras = self.env.step(torch.cat(parts, dim=-1))
        rewards = self.view.rewards()
        infos: dict[str, Any] = {"log": extras.get("log", {})}
        if "final_obs" in extras:
            infos["final_obs"] = self._per_agent(extras["final_obs"])
        return (
            self._per_agent(obs["policy"]),
            {a: rewards[:, k] for k, a in enumerate(self.agents)},
            self._per_agent(terminated),
            self._per_agent(truncated),
            infos,
        )

    def close(self) -> None:
        self.env.close()
