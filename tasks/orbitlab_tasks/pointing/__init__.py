"""Pointing: a 6U CubeSat slews 10-90 deg with reaction wheels (registered as 'Pointing').

The config is in `pointing_env_cfg`; see README.md for spaces, rewards and scores.
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.pointing.pointing_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

register_task(
    TaskSpec(
        name="Pointing",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_pointing"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success="attitude error < 0.5 deg and rate < 0.05 deg/s held 10 s",
        summary="6U CubeSat slews 10-90 deg with wheels (baseline: quaternion PD)",
    )
)
