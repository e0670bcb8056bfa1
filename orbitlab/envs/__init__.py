"""Manager-based RL environments: the batched env, its Gymnasium wrappers and reusable terms.

    from orbitlab.envs import ManagerBasedRLEnv, ManagerBasedRLEnvCfg, mdp

Names load from their modules on first access (PEP 562), so that the managers and scene,
which this package's env imports, can import its submodules without a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orbitlab.envs import mdp
    from orbitlab.envs.evaluate import Score, rollout
    from orbitlab.envs.gym import OrbitlabGymEnv, OrbitlabVectorEnv, make_vector_env
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
    from orbitlab.envs.registration import register_task

_LAZY = {
    "ManagerBasedRLEnv": "orbitlab.envs.manager_based_rl_env",
    "ManagerBasedRLEnvCfg": "orbitlab.envs.manager_based_rl_env",
    "OrbitlabGymEnv": "orbitlab.envs.gym",
    "OrbitlabVectorEnv": "orbitlab.envs.gym",
    "make_vector_env": "orbitlab.envs.gym",
    "register_task": "orbitlab.envs.registration",
    "Score": "orbitlab.envs.evaluate",
    "rollout": "orbitlab.envs.evaluate",
}

__all__ = [
    "ManagerBasedRLEnv",
    "ManagerBasedRLEnvCfg",
    "OrbitlabGymEnv",
    "OrbitlabVectorEnv",
    "Score",
    "make_vector_env",
    "mdp",
    "register_task",
    "rollout",
]


def __getattr__(name: str) -> object:
    if name == "mdp":
        return importlib.import_module("orbitlab.envs.mdp")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orbitlab.envs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "mdp"})
