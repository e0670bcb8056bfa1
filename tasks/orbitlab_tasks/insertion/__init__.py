"""ORU insertion: a servicer's arm slides an orbital replacement unit into a worksite's
receptacle (registered as 'ORU-Insertion').

The config is in `insertion_env_cfg`, the terms in `mdp`, the scripted baseline in `agent`;
see README.md for spaces, rewards and scores.
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.insertion.insertion_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

register_task(
    TaskSpec(
        name="ORU-Insertion",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_oru_insertion"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success="ORU seated (base within 5 mm, axes within 2 deg) for 1 s with wrist loads "
        "under 50 N / 10 N m",
        summary="a servicer berthed at a worksite slides the ORU it holds into a receptacle "
        "with 1 cm of clearance (baseline: align, then insert, by resolved rate)",
    )
)
