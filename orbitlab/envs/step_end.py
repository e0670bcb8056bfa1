"""The env step's end as one launch (`orbitlab.fw.step_end`): persistent buffers, recorded once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.fw.step_end import StepEnd, step_end_kernel
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class StepEndLaunch:
    """Each world's terminated, truncated, reward, unhealthy and done flags of a step, from
    the env's health codes, episode lengths and its managers' buffers (rewritten by every
    `run`: the env returns copies)."""

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        n, device = env.num_envs, env.device

        def flags() -> torch.Tensor:
            return torch.zeros(n, dtype=torch.bool, device=device)

        self.terminated, self.truncated, self.unhealthy, self.done = (flags() for _ in range(4))
        self.reward = torch.zeros(n, dtype=torch.float32, device=device)
        self._max_length = -1
        self._launch: WorldLaunch | None = None

    def _record(self) -> None:
        env = self.env
        io = StepEnd()
        io.health = wp.from_torch(env.scene.view.array("health"))
        io.episode_length = wp.from_torch(env.episode_length_buf)
        io.terms_terminated = wp.from_torch(env.termination_manager.terminated)
        io.terms_time_outs = wp.from_torch(env.termination_manager.time_outs)
        io.terms_reward = wp.from_torch(env.reward_manager.reward)
        io.terminated, io.truncated = wp.from_torch(self.terminated), wp.from_torch(self.truncated)
        io.reward, io.unhealthy = wp.from_torch(self.reward), wp.from_torch(self.unhealthy)
        io.done = wp.from_torch(self.done)
        if self._launch is not None:
            self._launch.close()
        self._max_length = int(env.max_episode_length)
        self._launch = WorldLaunch(
            step_end_kernel,
            env.num_envs,
            [io, wp.int64(self._max_length)],
            str(env.device),
            env.scene.data.kernel_threads,
        )

    def run(self) -> StepEndLaunch:
        """Compute this step's flags (after the termination and reward managers)."""
        if self._launch is None or self._max_length != self.env.max_episode_length:
            self._record()  # first step, or a new episode limit
        assert self._launch is not None
        self._launch.launch()
        return self

    def close(self) -> None:
        if self._launch is not None:
            self._launch.close()
            self._launch = None
