"""Reach: a free-floating servicer's arm brings its gripper to a moving grapple target
(registered as 'Reach').

The config is in `reach_env_cfg`; see README.md for spaces, rewards and scores.
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.reach.reach_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

register_task(
    TaskSpec(
        name="Reach",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_reach"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success="gripper within 2 cm and 2 deg of the moving target, held 1 s",
        summary="free-floating servicer's arm reaches a moving grapple target "
        "(baseline: resolved rate through the generalized Jacobian)",
    )
)
