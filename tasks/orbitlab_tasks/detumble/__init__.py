"""Detumbling a 3U CubeSat (magnetorquers: Detumble-MTQ; reaction wheels: Detumble-RW).

Registers both tasks with `orbitlab.registry`; the configs are in `detumble_env_cfg`.
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.detumble.detumble_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

SUCCESS = "|omega| < 0.5 deg/s held 60 s"

register_task(
    TaskSpec(
        name="Detumble-MTQ",
        env_cfg=LazyFactory(f"{CFG}:mtq_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:mtq_baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_detumble_mtq"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success=SUCCESS,
        summary="3U CubeSat detumbles with magnetorquers (baseline: B-dot)",
    )
)
register_task(
    TaskSpec(
        name="Detumble-RW",
        env_cfg=LazyFactory(f"{CFG}:rw_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:rw_baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success=SUCCESS,
        summary="3U CubeSat detumbles with three reaction wheels (baseline: rate damping)",
    )
)
