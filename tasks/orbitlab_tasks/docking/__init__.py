"""Docking: a 6-DOF chaser flies its probe into a target's drogue port (soft capture).

`docking_env_cfg` holds the task (RL and baseline configs), `mdp` its terms and the
docking geometry, `agent` the baseline's custom nodes. Registers Docking and its two
variants (the policy on the RCS force only; the policy as approach guidance).
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.docking.docking_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

SUCCESS = "soft capture: probe latched, closing speed < 0.1 m/s, lateral < 5 cm, axis < 5 deg"

register_task(
    TaskSpec(
        name="Docking",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_docking"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success=SUCCESS,
        summary="chaser with 16 PWM RCS thrusters docks to a target's port from 5-30 m",
    )
)
register_task(
    TaskSpec(
        name="Docking-Translation",
        env_cfg=LazyFactory(f"{CFG}:translation_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_docking_translation"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success=SUCCESS,
        summary="Docking with the policy on the RCS force only (attitude held by PD)",
    )
)
register_task(
    TaskSpec(
        name="Docking-Velocity",
        env_cfg=LazyFactory(f"{CFG}:velocity_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_docking_velocity"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        success=SUCCESS,
        summary="Docking with the policy as approach guidance (a velocity command)",
    )
)
