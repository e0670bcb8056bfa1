"""Leader-follower formation flying (registered as Formation and two variants); see README.md."""

from orbitlab.registry import TaskSpec, register_task
from orbitlab_tasks.formation.formation_env_cfg import (
    baseline_cfg,
    env_cfg,
    translation_env_cfg,
    velocity_env_cfg,
)
from orbitlab_tasks.formation.multi_agent import FollowerBatchEnv, FormationMultiAgentEnv

__all__ = ["FollowerBatchEnv", "FormationMultiAgentEnv"]

SUCCESS = "scored by formation error: mean |slot error| over followers and time, m (target 0.10)"

register_task(
    TaskSpec(
        name="Formation",
        env_cfg=env_cfg,
        baseline_cfg=baseline_cfg,
        agents={"rsl_rl": "rsl_rl_ppo_formation"},
        success=SUCCESS,
        summary="two followers hold slots around a moving leader (baseline: CW-LQR)",
    )
)
register_task(
    TaskSpec(
        name="Formation-Translation",
        env_cfg=translation_env_cfg,
        baseline_cfg=baseline_cfg,
        agents={"rsl_rl": "rsl_rl_ppo_formation_translation"},
        success=SUCCESS,
        summary="Formation with the policy on each follower's force only",
    )
)
register_task(
    TaskSpec(
        name="Formation-Velocity",
        env_cfg=velocity_env_cfg,
        baseline_cfg=baseline_cfg,
        agents={"rsl_rl": "rsl_rl_ppo_formation_velocity"},
        success=SUCCESS,
        summary="Formation with the policy giving each follower's slot error rate",
    )
)
