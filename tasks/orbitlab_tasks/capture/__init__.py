"""Capture: a servicer synchronises with a tumbling client, grasps its grapple fixture with a
latching end effector and detumbles the stack (registered as 'Capture').

The config is in `capture_env_cfg`, the terms in `mdp`, the scripted baseline in `agent`;
see README.md for spaces, rewards and scores.
"""

from orbitlab.registry import LazyFactory, TaskSpec, register_task

CFG = "orbitlab_tasks.capture.capture_env_cfg"
"""The configs (imported on first use: `LazyFactory`)."""

register_task(
    TaskSpec(
        name="Capture",
        env_cfg=LazyFactory(f"{CFG}:env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        status=LazyFactory(f"{CFG}:teleop_status"),
        success="latched grasp held 10 s with wrist loads under 50 N / 10 N m, "
        "stack below 0.5 deg/s",
        summary="servicer matches a tumbling client, latches onto its grapple fixture and "
        "detumbles the stack (baseline: scripted synchronised approach)",
    )
)

register_task(
    TaskSpec(
        name="Capture-Arm",
        env_cfg=LazyFactory(f"{CFG}:arm_env_cfg"),
        baseline_cfg=LazyFactory(f"{CFG}:baseline_cfg"),
        agents={"rsl_rl": "rsl_rl_ppo_capture_arm"},
        status=LazyFactory(f"{CFG}:teleop_status"),
        pilot=LazyFactory("orbitlab_tasks.capture.agent:capture_pilot"),
        success="as Capture",
        summary="Capture with the policy on the arm and gripper; the bus flown by the "
        "baseline's synchronised loop",
    )
)
