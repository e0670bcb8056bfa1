"""Gymnasium registration of a task (`Orbitlab-<Task>-v0`), without loading torch or MuJoCo:
the entry points are text (`orbitlab.envs.gym`), imported by `gymnasium.make`."""

from __future__ import annotations

import gymnasium as gym


def register_task(task: str, cfg_entry_point: str, max_episode_steps: int | None = None) -> str:
    """Register `Orbitlab-<task>-v0` (single and vector entry points); returns the id."""
    env_id = f"Orbitlab-{task}-v0"
    if env_id not in gym.registry:
        gym.register(
            id=env_id,
            entry_point="orbitlab.envs.gym:OrbitlabGymEnv",
            vector_entry_point="orbitlab.envs.gym:make_vector_env",
            kwargs={"cfg_entry_point": cfg_entry_point},
            max_episode_steps=max_episode_steps,
            disable_env_checker=True,
        )
    return env_id
