"""Leader-follower formation flying (registered as Formation and two variants); see README.md."""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.formation.formation_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""
__all__ = ["FollowerBatchEnv", "FormationMultiAgentEnv"]


def __getattr__(name: str) -> object:
    """The multi-agent envs, imported on first use (PEP 562; they load torch and MuJoCo)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from orbitlab_tasks.formation import multi_agent

    return getattr(multi_agent, name)


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
