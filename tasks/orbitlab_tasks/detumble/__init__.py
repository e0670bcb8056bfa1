"""Detumbling a 3U CubeSat (magnetorquers: Detumble-MTQ; reaction wheels: Detumble-RW).

Registers both tasks with `orbitlab.registry`; the configs are in `detumble_env_cfg`.
"""

from orbitlab.registry import TaskSpec, register_task
from orbitlab_tasks.detumble.detumble_env_cfg import (
    mtq_baseline_cfg,
    mtq_env_cfg,
    rw_baseline_cfg,
    rw_env_cfg,
)

SUCCESS = "|omega| < 0.5 deg/s held 60 s"

register_task(
    TaskSpec(
        name="Detumble-MTQ",
        env_cfg=mtq_env_cfg,
        baseline_cfg=mtq_baseline_cfg,
        success=SUCCESS,
        summary="3U CubeSat detumbles with magnetorquers (baseline: B-dot)",
    )
)
register_task(
    TaskSpec(
        name="Detumble-RW",
        env_cfg=rw_env_cfg,
        baseline_cfg=rw_baseline_cfg,
        agents={"rsl_rl": "rsl_rl_ppo"},
        success=SUCCESS,
        summary="3U CubeSat detumbles with three reaction wheels (baseline: rate damping)",
    )
)
