"""Capture: a servicer approaches a tumbling client, grasps its grapple fixture and
detumbles the stack.

The client (`client_sat`, 80 kg) tumbles at 1-5 deg/s about a random axis; the servicer
(`servicer`: the 70 kg arm bus with 16 x 10 N RCS, wheels, a 6-joint arm and a latching
gripper) starts at rest 1-3 m back from the client's grapple fixture along its axis. It has
to match the tumble, bring the gripper onto the fixture, close it inside the capture
envelope (which engages the latch, `mdp.LatchingEndEffector`) and bring the stack to rest.
Success: the latch held 10 s with the wrist loads under 50 N / 10 N m all along and the
stack turning slower than 0.5 deg/s. Baseline: `agent.capture_agent` (scripted).

Capture-Arm (`arm_env_cfg`): the same task with the policy on the arm and the gripper only;
the bus is flown by the baseline's synchronised loop (`agent.SynchronisedBusNode`), as
Docking-Translation leaves the attitude to the baseline's loop.
"""

from __future__ import annotations

import math

from orbitlab.envs import mdp as common
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnvCfg
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    SceneEntityCfg,
    TerminationTermCfg,
)
from orbitlab.managers.action_manager import (
    BinaryGripperActionCfg,
    JointVelocityActionCfg,
    ThrusterWrenchActionCfg,
)
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg
from orbitlab.scene.welds import WeldCfg
from orbitlab_tasks.capture import mdp
from orbitlab_tasks.capture.agent import MAX_JOINT_RATE_RAD_S, bus_agent, capture_agent
from orbitlab_tasks.docking import mdp as docking
from orbitlab_tasks.reach import reach_env_cfg as reach

DEG = math.pi / 180.0
FORCE_SCALE_N = 15.0
"""Policy: bus force per unit action, N (body axes)."""
TORQUE_SCALE_NM = 2.5
"""Policy: bus torque per unit action, N m (body axes)."""


def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """0.01 s physics, 0.05 s per action, episodes of up to 120 s."""
    gyro = {"sensor_cfg": SceneEntityCfg("bot", sensor_names=("gyro",))}
    error = {"error": mdp.pose_error}
    policy = {
        "position_error": ObservationTermCfg(func=mdp.position_error_b, scale=1.0 / 1.0),
        "position_error_fine": ObservationTermCfg(
            func=mdp.position_error_b, scale=1.0 / 0.05, clip=(-1.0, 1.0)
        ),
        "angle_error": ObservationTermCfg(func=mdp.angle_error_b, scale=1.0 / (30.0 * DEG)),
        "angle_error_fine": ObservationTermCfg(
            func=mdp.angle_error_b, scale=1.0 / (5.0 * DEG), clip=(-1.0, 1.0)
        ),
        "relative_motion": ObservationTermCfg(func=mdp.relative_motion_b, scale=1.0 / 0.1),
        "client_rate": ObservationTermCfg(func=mdp.client_rate_b, scale=1.0 / (5.0 * DEG)),
        "bus_rate": ObservationTermCfg(func=kt.sensor_value, params=gyro, scale=1.0 / (5.0 * DEG)),
        # the pose error as the joints see it (J*^+ through the generalized Jacobian): what
        # made Reach's PPO learn the last centimetres
        "joint_error": ObservationTermCfg(
            func=reach.joint_space_error, params=error, scale=1.0 / 0.3, clip=(-5.0, 5.0)
        ),
        "joint_error_fine": ObservationTermCfg(
            func=reach.joint_space_error, params=error, scale=1.0 / 0.03, clip=(-1.0, 1.0)
        ),
        "joint_pos": ObservationTermCfg(func=reach.joint_pos),
        "joint_vel": ObservationTermCfg(func=reach.joint_vel, scale=1.0 / MAX_JOINT_RATE_RAD_S),
        "gripper": ObservationTermCfg(func=mdp.gripper_state),
        "wrist_loads": ObservationTermCfg(func=mdp.wrist_loads, clip=(-5.0, 5.0)),
        "last_action": ObservationTermCfg(func=kt.last_action),
    }
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=num_envs,
            entities={"bot": spacecraft.servicer(), "client": spacecraft.client_sat()},
            welds={
                "latch": WeldCfg(
                    body1="bot/hand",
                    body2="client/fixture",
                    pos_m=mdp.FIXTURE_IN_HAND[0],
                    quat=mdp.FIXTURE_IN_HAND[1],
                    solref=(0.05, 1.0),
                )
            },
            timestep_s=0.01,
            # Measured peaks per world (`orbitlab bench mode=contacts
            # tasks=[Capture,Capture-Arm]`, 64 worlds, baseline and random rollouts,
            # 2026-12-06): 8 contacts, 15 broadphase candidates, 39 constraint rows; the
            # benchmark's suggested capacity (twice the candidates).
            contacts_per_world=32,
            constraint_rows_per_world=152,
        ),
        decimation=5,
        episode_length_s=120.0,
        actions={
            "bus": ThrusterWrenchActionCfg(
                group="bot/rcs",
                scale=(FORCE_SCALE_N,) * 3 + (TORQUE_SCALE_NM,) * 3,
                pulse_modulation=True,
            ),
            "arm": JointVelocityActionCfg(
                group="bot/arm", scale=MAX_JOINT_RATE_RAD_S, end_effector="bot/grasp"
            ),
            # >= 0: open (0.04 m), < 0: closed
            "gripper": BinaryGripperActionCfg(
                group="bot/gripper", open=mdp.GRIPPER_OPEN_M, closed=0.0
            ),
        },
        commands={"target": mdp.CaptureTargetCfg()},
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(enable_noise=False, terms=dict(policy)),
        },
        rewards={
            "progress": RewardTermCfg(
                func=common.potential_progress,
                params={"potential": mdp.approach_potential, "paused": mdp.latched},
                weight=1.0,
            ),
            "latched": RewardTermCfg(func=mdp.latched_reward, weight=1.0),
            "latch_change": RewardTermCfg(func=mdp.latch_change, weight=5.0),
            "hold_closed": RewardTermCfg(func=mdp.open_while_latched, weight=-1.0),
            "stack_rate": RewardTermCfg(
                func=common.potential_progress,
                params={"potential": mdp.stack_rate_potential},
                weight=0.5,
            ),
            "loads": RewardTermCfg(func=mdp.load_cost, weight=-0.5),
            "joint_vel": RewardTermCfg(func=reach.joint_vel_l2, weight=-0.05),
            "thrust": RewardTermCfg(func=mdp.thrust_cost, weight=-0.01),
            "action_rate": RewardTermCfg(func=common.action_rate_l2, weight=-0.01),
            "success": RewardTermCfg(
                func=docking.termination_impulse, params={"terms": ("success",)}, weight=20.0
            ),
            "failure": RewardTermCfg(
                func=docking.termination_impulse,
                params={"terms": ("overload", "struck_client", "lost")},
                weight=-20.0,
            ),
        },
        terminations={
            "success": TerminationTermCfg(func=mdp.capture_success),
            "overload": TerminationTermCfg(func=mdp.overload),
            "struck_client": TerminationTermCfg(func=mdp.struck_client),
            "lost": TerminationTermCfg(func=mdp.lost),
        },
        events={
            "orbit": EventTermCfg(func=common.randomize_orbit, mode="reset"),
            "client": EventTermCfg(func=mdp.reset_tumbling_client, mode="reset"),
            "servicer": EventTermCfg(func=mdp.reset_servicer_at_standoff, mode="reset"),
        },
    )


def baseline_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Capture flown by the scripted baseline (`agent.capture_agent`), no policy actions."""
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = capture_agent
    for group in ("policy", "critic"):
        cfg.observations[group].terms.pop("last_action")
    return cfg


ARM_HOME_TIME_CONSTANT_S = 2.0
"""Capture-Arm: the arm's servo targets return to the ready pose with this time constant
when the policy gives no rate, s (a held rate of 0.5 rad/s holds the joint 1 rad off), so
that the arm is where the bus's synchronised loop expects it unless the policy reaches."""


def arm_env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Capture-Arm, RL: the policy gives the arm's joint rates (returning to the ready pose
    when zero, `ARM_HOME_TIME_CONSTANT_S`) and the gripper (7); the bus
    closes in synchronised with the client and damps the stack once latched under the
    baseline's loop (agent graph). Observations, rewards and terminations are Capture's."""
    cfg = env_cfg(num_envs)
    del cfg.actions["bus"]
    cfg.actions["arm"] = JointVelocityActionCfg(
        group="bot/arm",
        scale=MAX_JOINT_RATE_RAD_S,
        end_effector="bot/grasp",
        home_rad=mdp.READY_POSE_RAD,
        home_time_constant_s=ARM_HOME_TIME_CONSTANT_S,
    )
    cfg.agent = bus_agent
    return cfg


def teleop_status(env):
    """The recorder's status line: the gripper's position (cm) and angle (deg) errors to the
    fixture and the stack's rate (deg/s)."""
    from orbitlab.demos.status import Measure, TaskReading

    return TaskReading(
        errors=(
            Measure("position", "cm", 100.0 * mdp.position_error(env), digits=1),
            Measure("angle", "deg", mdp.angle_error(env) / DEG, digits=1),
            Measure("stack rate", "deg/s", mdp.stack_rate(env) / DEG, digits=2),
        )
    )
