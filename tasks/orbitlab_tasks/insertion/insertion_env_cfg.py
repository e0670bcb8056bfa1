"""ORU insertion: a servicer's arm slides an orbital replacement unit into its receptacle.

The servicer (`servicer`: the 70 kg arm bus) is berthed to a 400 kg worksite panel
(`oru_worksite`, the weld `berth`); its gripper holds a 12 kg ORU (`oru`, the weld
`latch`: Capture's latching end effector, engaged). Each episode starts the arm in a
folded pose drawn from a table of 256 (the ORU 2-20 cm short of the socket's mouth, 5-14 cm
off its axis and 0.5-4.6 deg off its attitude); the arm has to align the ORU with the
socket (1 cm of clearance on every side, 15 cm deep) and slide it onto the seat. Success:
seated (base within 5 mm, axes within 2 deg) for 1 s with the wrist loads under 50 N /
10 N m; failure: a wrist load above 200 N / 40 N m (a jam). Baseline:
`agent.insertion_agent` (align, then insert, by resolved rate).
"""

from __future__ import annotations

import dataclasses

from orbitlab.envs import mdp as common
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnvCfg
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from orbitlab.managers.action_manager import JointVelocityActionCfg
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg
from orbitlab.scene.welds import WeldCfg
from orbitlab_tasks.capture import mdp as capture
from orbitlab_tasks.capture.mdp import FIXTURE_IN_HAND
from orbitlab_tasks.docking import mdp as docking
from orbitlab_tasks.insertion import mdp
from orbitlab_tasks.insertion.agent import MAX_JOINT_RATE_RAD_S, insertion_agent
from orbitlab_tasks.reach import reach_env_cfg as reach

DEG = mdp.DEG
ARM_SERVO_DAMPING = (20.0, 20.0, 15.0, 3.0, 3.0, 3.0)
"""The arm's servo velocity gains kv (shoulder yaw ... wrist roll), N m s/rad: the 12 kg ORU
held 0.3-0.45 m beyond the wrist weighs on servos tuned for the empty arm (the wrist's kp of
10 N m/rad would ring at damping ratio ~0.07 without them; ~0.45 with)."""


def servicer():
    """The servicer (`spacecraft.servicer`) with its arm's servos damped for the ORU."""
    bot = spacecraft.servicer()
    bot.actuators["arm"] = dataclasses.replace(bot.actuators["arm"], damping=ARM_SERVO_DAMPING)
    return bot


def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """0.01 s physics, 0.05 s per action, episodes of up to 30 s."""
    error = {"error": mdp.grasp_error}
    policy = {
        "position_error": ObservationTermCfg(func=mdp.position_error_b, scale=1.0 / 0.2),
        "position_error_fine": ObservationTermCfg(
            func=mdp.position_error_b, scale=1.0 / 0.01, clip=(-1.0, 1.0)
        ),
        "angle_error": ObservationTermCfg(func=mdp.angle_error_b, scale=1.0 / (5.0 * DEG)),
        "angle_error_fine": ObservationTermCfg(
            func=mdp.angle_error_b, scale=1.0 / (1.0 * DEG), clip=(-1.0, 1.0)
        ),
        "joint_error": ObservationTermCfg(
            func=reach.joint_space_error, params=error, scale=1.0 / 0.3, clip=(-5.0, 5.0)
        ),
        "joint_error_fine": ObservationTermCfg(
            func=reach.joint_space_error, params=error, scale=1.0 / 0.03, clip=(-1.0, 1.0)
        ),
        "joint_pos": ObservationTermCfg(func=reach.joint_pos),
        "joint_vel": ObservationTermCfg(func=reach.joint_vel, scale=1.0 / MAX_JOINT_RATE_RAD_S),
        "wrist_loads": ObservationTermCfg(func=capture.wrist_loads, clip=(-5.0, 5.0)),
        "last_action": ObservationTermCfg(func=kt.last_action),
    }
    berth = mdp.weld_pose(mdp.worksite_in_bus())
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=num_envs,
            entities={
                "bot": servicer(),
                "oru": spacecraft.oru(),
                "site": spacecraft.oru_worksite(),
            },
            welds={
                "latch": WeldCfg(
                    body1="bot/hand",
                    body2="oru/fixture",
                    pos_m=FIXTURE_IN_HAND[0],
                    quat=FIXTURE_IN_HAND[1],
                    active=True,
                    solref=(0.02, 1.0),
                ),
                "berth": WeldCfg(
                    body1="bot/bus",
                    body2="site/bus",
                    pos_m=berth[0],
                    quat=berth[1],
                    active=True,
                    solref=(0.02, 1.0),
                ),
            },
            timestep_s=0.01,
            # Measured peaks per world (`orbitlab bench mode=contacts tasks=[ORU-Insertion]`,
            # 64 worlds, baseline and random rollouts, 2026-12-06): 11 contacts, 17
            # broadphase candidates, 57 constraint rows; the benchmark's suggested capacity.
            contacts_per_world=40,
            constraint_rows_per_world=192,
        ),
        decimation=5,
        episode_length_s=30.0,
        actions={
            "arm": JointVelocityActionCfg(
                group="bot/arm", scale=MAX_JOINT_RATE_RAD_S, end_effector="bot/grasp"
            ),
        },
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(enable_noise=False, terms=dict(policy)),
        },
        rewards={
            "progress": RewardTermCfg(
                func=common.potential_progress,
                params={"potential": mdp.insertion_potential},
                weight=1.0,
            ),
            "seated": RewardTermCfg(func=mdp.seated_reward, weight=1.0),
            "loads": RewardTermCfg(func=capture.load_cost, weight=-0.5),
            "joint_vel": RewardTermCfg(func=reach.joint_vel_l2, weight=-0.05),
            "action_rate": RewardTermCfg(func=common.action_rate_l2, weight=-0.01),
            "success": RewardTermCfg(
                func=docking.termination_impulse, params={"terms": ("success",)}, weight=20.0
            ),
            "failure": RewardTermCfg(
                func=docking.termination_impulse, params={"terms": ("overload",)}, weight=-20.0
            ),
        },
        terminations={
            "success": TerminationTermCfg(func=mdp.insertion_success),
            "overload": TerminationTermCfg(func=mdp.overload),
        },
        events={
            "orbit": EventTermCfg(func=common.randomize_orbit, mode="reset"),
            "stack": EventTermCfg(func=mdp.reset_stack, mode="reset"),
        },
    )


def baseline_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """ORU insertion flown by the scripted baseline (`agent.insertion_agent`)."""
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = insertion_agent
    for group in ("policy", "critic"):
        cfg.observations[group].terms.pop("last_action")
    return cfg


def teleop_status(env):
    """The recorder's status line: the ORU's position (mm) and angle (deg) errors to its
    seat."""
    from orbitlab.demos.status import Measure, TaskReading

    dp, dr = mdp.oru_error(env)
    return TaskReading(
        errors=(
            Measure("position", "mm", 1000.0 * dp.norm(dim=-1), digits=1),
            Measure("angle", "deg", dr.norm(dim=-1) / DEG, digits=2),
        )
    )
