"""Leader-follower formation flying (registered as Formation and two variants); see README.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.formation.formation_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""
if TYPE_CHECKING:
    from orbitlab_tasks.formation.pettingzoo_env import FormationParallelEnv

__all__ = ["FollowerBatchEnv", "FormationMultiAgentEnv", "parallel_env"]
_LAZY = {
    "FollowerBatchEnv": "multi_agent",
    "FormationMultiAgentEnv": "multi_agent",
    "FormationParallelEnv": "pettingzoo_env",  # needs the multiagent extra
}


def __getattr__(name: str) -> object:
    """The multi-agent envs, imported on first use (PEP 562; they load torch and MuJoCo)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def parallel_env(render_mode: str | None = None, **overrides: Any) -> FormationParallelEnv:
    """One Formation world as a `pettingzoo.ParallelEnv` whose agents are the followers.

    `overrides` set env config fields (e.g. `episode_length_s`, s; `seed`). Needs PettingZoo:
    without it this raises ImportError naming `pip install 'orbitlab-sim[multiagent]'`."""
    from orbitlab_tasks.formation.pettingzoo_env import FormationParallelEnv

    return FormationParallelEnv(render_mode=render_mode, **overrides)


SUCCESS = "scored by formation error: mean |slot error| over followers and time, m (target 0.10)"

register_task(
    TaskSpec(
        name="Formation",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_formation"},
        status=LazyFactory("orbitlab_tasks.formation.mdp:teleop_status"),
        success=SUCCESS,
        summary="two followers hold slots around a moving leader (baseline: CW-LQR)",
    )
)
register_task(
    TaskSpec(
        name="Formation-Translation",
        env_cfg=LazyFactory(f"{CFG}:translation_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_formation_translation"},
        status=LazyFactory("orbitlab_tasks.formation.mdp:teleop_status"),
        success=SUCCESS,
        summary="Formation with the policy on each follower's force only",
    )
)
register_task(
    TaskSpec(
        name="Formation-Velocity",
        env_cfg=LazyFactory(f"{CFG}:velocity_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_formation_velocity"},
        status=LazyFactory("orbitlab_tasks.formation.mdp:teleop_status"),
        success=SUCCESS,
        summary="Formation with the policy giving each follower's slot error rate",
    )
)
