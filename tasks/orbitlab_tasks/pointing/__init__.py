"""Pointing: a 6U CubeSat slews 10-90 deg with reaction wheels (registered as 'Pointing').

The config is in `pointing_env_cfg`; see README.md for spaces, rewards and scores.
"""

from orbitlab.registry import TaskSpec, register_task
from orbitlab_tasks.pointing.pointing_env_cfg import baseline_cfg, env_cfg

register_task(
    TaskSpec(
        name="Pointing",
        env_cfg=env_cfg,
        baseline_cfg=baseline_cfg,
        agents={"rsl_rl": "rsl_rl_ppo_pointing"},
        success="attitude error < 0.5 deg and rate < 0.05 deg/s held 10 s",
        summary="6U CubeSat slews 10-90 deg with wheels (baseline: quaternion PD)",
    )
)
