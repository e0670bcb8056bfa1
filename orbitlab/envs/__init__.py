"""Manager-based RL environments: the batched env, its Gymnasium wrappers and reusable terms.

    from orbitlab.envs import ManagerBasedRLEnv, ManagerBasedRLEnvCfg, mdp

Names load from their modules on first access (PEP 562), so that the managers and scene,
which this package's env imports, can import its submodules without a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports

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
    "mdp": "orbitlab.envs.mdp",
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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
