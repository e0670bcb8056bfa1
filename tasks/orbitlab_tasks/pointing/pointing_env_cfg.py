"""Pointing: slew a 6U CubeSat to a commanded attitude with its wheels and hold it.

Disturbances: gravity gradient, drag and SRP torques on the body and wings, the
residual dipole in the geomagnetic field. Each episode commands an attitude 10-90 deg
away (random axis) from a random start with rates below 0.5 deg/s. Success: attitude
error < 0.5 deg and rate < 0.05 deg/s, held for 10 s (terminal). Baseline: quaternion
PD on the star tracker and gyro, distributed to the three wheels.

RL shaping (see README): costs on the error and on tracking a feasible rate profile
(`rate_profile`), with exponential kernels near the 0.5 deg / 0.05 deg/s region, and
coarse plus finely scaled, clipped copies of the error and rate observations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from orbitlab.agent import (
    AgentGraph,
    QuaternionPDCfg,
    TorqueToWheelsCfg,
)
from orbitlab.agent.attitude import attitude_error
from orbitlab.envs import mdp
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
from orbitlab.managers.action_manager import ActuatorActionCfg
from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg
from orbitlab.sensors.rotations import (
    quat_from_rotation_vector,
    quat_multiply,
    rotation_vector_from_quat,
)

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0
MAX_TORQUE_NM = 2.0e-3
SAT = SceneEntityCfg("sat", sensor_names=("gyro", "star_tracker"))
"""The spacecraft: its root state (truth) and the two sensors its terms read."""


class SlewCommand(CommandTerm):
    """Target attitude: the start attitude turned by 10-90 deg about a random axis."""

    cfg: SlewCommandCfg
    state_attrs = (*CommandTerm.state_attrs, "target")

    def __init__(self, cfg: SlewCommandCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.target = torch.zeros((env.num_envs, 4), dtype=torch.float64, device=env.device)
        self.target[:, 0] = 1.0

    @property
    def command(self) -> torch.Tensor:
        return self.target

    takes_masks = True

    def resample(self, worlds: torch.Tensor) -> None:
        axis = self.draw_normal(worlds, 3)
        axis = axis / axis.norm(dim=-1, keepdim=True)
        angle = self.draw_uniform(worlds, 10.0 * DEG, 90.0 * DEG)
        start = self.rows(mdp.root_quat(self.env, self.cfg.entity), worlds)
        turn = quat_from_rotation_vector(axis * angle[:, None])
        self.assign(self.target, worlds, quat_multiply(start, turn))


@dataclass(kw_only=True)
class SlewCommandCfg(CommandTermCfg):
    """`SlewCommand`: slews of the spacecraft `entity`."""

    class_type: type = SlewCommand
    entity: SceneEntityCfg
    """The spacecraft whose start attitude the slew turns."""


def error_angle(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """Angle between the attitude and the command, rad."""
    q_e = attitude_error(mdp.root_quat(env, entity), env.command_manager.command("attitude"))
    return 2.0 * torch.asin(q_e[:, 1:].norm(dim=-1).clamp(max=1.0))


def pointed(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """Error < 0.5 deg and rate < 0.05 deg/s."""
    return (error_angle(env, entity) < 0.5 * DEG) & (mdp.ang_vel_norm(env, entity) < 0.05 * DEG)


def measured_rotation(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """Measured error (star tracker vs the command) as a rotation vector in body axes, rad."""
    return rotation_vector_from_quat(
        attitude_error(
            entity.sensors["star_tracker"].value, env.command_manager.command("attitude")
        )
    )


def true_rate(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """|omega|, rad/s."""
    return mdp.ang_vel_norm(env, entity)


def error_kernel(env: ManagerBasedRLEnv, entity: SceneEntityCfg, sigma_rad: float) -> torch.Tensor:
    """1 - exp(-error / sigma): a cost in [0, 1) that is steep within ~sigma of the target."""
    return 1.0 - torch.exp(-error_angle(env, entity) / sigma_rad)


def pointing_kernel(
    env: ManagerBasedRLEnv, entity: SceneEntityCfg, sigma_rad: float, sigma_rad_s: float
) -> torch.Tensor:
    """1 - exp(-error / sigma - |omega| / sigma_rate): a cost that only vanishes when the
    attitude is on target AND still (the success region at sigma ~ 0.5 deg, 0.05 deg/s)."""
    return 1.0 - torch.exp(
        -error_angle(env, entity) / sigma_rad - true_rate(env, entity) / sigma_rad_s
    )


SLEW_ACCEL = 0.003
"""Deceleration budget of the rate profile, rad/s^2 (0.4 x the weakest axis' 2e-3 / 0.264)."""
SLEW_GAIN = 0.2
"""Rate profile gain near the target, 1/s."""


def rate_profile(rotation: torch.Tensor) -> torch.Tensor:
    """Desired body rate for an error rotation vector r (body axes, rad): along -r at
    min(sqrt(2 a |r|), k |r|), i.e. a braking curve far out and exponential (time constant
    1/k = 5 s) close in, so that rate < 0.05 deg/s once the error is < 0.25 deg."""
    angle = rotation.norm(dim=-1, keepdim=True)
    speed = torch.minimum(torch.sqrt(2.0 * SLEW_ACCEL * angle), SLEW_GAIN * angle)
    return -rotation * speed / angle.clamp(min=1e-9)


def true_rotation(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """True error as a rotation vector in body axes, rad, (N, 3) (privileged)."""
    return rotation_vector_from_quat(
        attitude_error(mdp.root_quat(env, entity), env.command_manager.command("attitude"))
    )


def measured_rate_error(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """Gyro minus the rate profile of the measured error, rad/s, (N, 3) (a feature computed
    from the star tracker and gyro only)."""
    return entity.sensors["gyro"].value - rate_profile(measured_rotation(env, entity))


def rate_tracking(env: ManagerBasedRLEnv, entity: SceneEntityCfg) -> torch.Tensor:
    """|omega - profile(true error)|, rad/s."""
    omega = mdp.root_ang_vel(env, entity)
    return (omega - rate_profile(true_rotation(env, entity))).norm(dim=-1)


def rate_tracking_kernel(
    env: ManagerBasedRLEnv, entity: SceneEntityCfg, sigma_rad_s: float
) -> torch.Tensor:
    """1 - exp(-|omega - profile| / sigma)."""
    return 1.0 - torch.exp(-rate_tracking(env, entity) / sigma_rad_s)


def hold_progress(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Fraction of the 10 s success hold accumulated so far, (N, 1) (privileged)."""
    term = env.termination_manager.term_funcs["success"]
    return (term.held_s / 10.0).to(torch.float32)[:, None]


def env_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    """0.02 s physics, 0.2 s per action, episodes of up to 180 s."""
    sat = spacecraft.cubesat_6u()
    sat.actuators = {"wheels": sat.actuators["wheels"]}
    sat.sensors = {k: v for k, v in sat.sensors.items() if k in ("gyro", "star_tracker")}
    gyro = {"sensor_cfg": SceneEntityCfg("sat", sensor_names=("gyro",))}
    policy = {
        # coarse, fine (clipped) and very fine (clipped) copies of the error and the rate,
        # so that the 0.5 deg / 0.05 deg/s region is resolved after normalization
        "error": ObservationTermCfg(func=measured_rotation, params={"entity": SAT}),
        "error_fine": ObservationTermCfg(
            func=measured_rotation,
            params={"entity": SAT},
            scale=1.0 / (3.0 * DEG),
            clip=(-1.0, 1.0),
        ),
        "error_vfine": ObservationTermCfg(
            func=measured_rotation,
            params={"entity": SAT},
            scale=1.0 / (0.5 * DEG),
            clip=(-1.0, 1.0),
        ),
        "gyro": ObservationTermCfg(func=kt.sensor_value, params=gyro, scale=1.0 / (2.0 * DEG)),
        "gyro_fine": ObservationTermCfg(
            func=kt.sensor_value, params=gyro, scale=1.0 / (0.2 * DEG), clip=(-1.0, 1.0)
        ),
        "rate_error": ObservationTermCfg(
            func=measured_rate_error, params={"entity": SAT}, scale=1.0 / (1.0 * DEG)
        ),
        "rate_error_fine": ObservationTermCfg(
            func=measured_rate_error,
            params={"entity": SAT},
            scale=1.0 / (0.1 * DEG),
            clip=(-1.0, 1.0),
        ),
        "wheel_speed": ObservationTermCfg(
            func=kt.wheel_speed,
            params={"actuator_cfg": SceneEntityCfg("sat", actuator_names=("wheels",))},
        ),
        "last_action": ObservationTermCfg(func=kt.last_action),
    }
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=num_envs, entities={"sat": sat}, timestep_s=0.02),
        decimation=10,
        episode_length_s=180.0,
        actions={"wheels": ActuatorActionCfg(group="sat/wheels", scale=MAX_TORQUE_NM)},
        commands={"attitude": SlewCommandCfg(entity=SAT)},
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(
                enable_noise=False,
                terms={
                    **policy,
                    "true_rate": ObservationTermCfg(
                        func=kt.root_ang_vel, params={"entity": SAT}, scale=1.0 / (2.0 * DEG)
                    ),
                    "hold": ObservationTermCfg(func=hold_progress),
                },
            ),
        },
        # every term is a cost (<= 0), so ending the episode by success is always welcome
        rewards={
            "error": RewardTermCfg(func=error_angle, params={"entity": SAT}, weight=-1.0),
            "error_fine": RewardTermCfg(
                func=error_kernel, params={"entity": SAT, "sigma_rad": 3.0 * DEG}, weight=-1.0
            ),
            "pointing": RewardTermCfg(
                func=pointing_kernel,
                weight=-2.0,
                params={"entity": SAT, "sigma_rad": 0.5 * DEG, "sigma_rad_s": 0.05 * DEG},
            ),
            "rate_track": RewardTermCfg(func=rate_tracking, params={"entity": SAT}, weight=-10.0),
            "rate_track_fine": RewardTermCfg(
                func=rate_tracking_kernel,
                weight=-1.0,
                params={"entity": SAT, "sigma_rad_s": 0.1 * DEG},
            ),
            "effort": RewardTermCfg(func=kt.action_l2, weight=-0.01),
            "action_rate": RewardTermCfg(func=kt.action_rate_l2, weight=-0.05),
        },
        terminations={
            "success": TerminationTermCfg(
                func=mdp.held_for,
                params={
                    "condition": pointed,
                    "condition_params": {"entity": SAT},
                    "duration_s": 10.0,
                },
            )
        },
        events={
            "orbit": EventTermCfg(func=mdp.randomize_orbit, mode="reset"),
            "attitude": EventTermCfg(
                func=mdp.reset_root_attitude, mode="reset", params={"entity": SAT}
            ),
            "rates": EventTermCfg(
                func=mdp.reset_root_rates,
                mode="reset",
                params={"entity": SAT, "max_rate_rad_s": 0.5 * DEG},
            ),
        },
    )


def pd_agent(env: ManagerBasedRLEnv):
    """Quaternion PD at 10 Hz (natural frequency ~0.1 rad/s, damping ~0.9) to the wheels."""
    inertia = env.scene.mj_model.body_inertia[env.scene.entities["sat"].root_body]
    wn, zeta = 0.1, 0.9
    kp = tuple(2.0 * wn**2 * j for j in inertia)  # q_e,vec ~ theta / 2
    kd = tuple(2.0 * zeta * wn * j for j in inertia)
    pd = QuaternionPDCfg(
        kp_nm=kp,
        kd_nms=kd,
        max_torque_nm=MAX_TORQUE_NM,
        inertia_kgm2=tuple(inertia),
        period_s=0.1,
        inputs={"attitude": "star_tracker", "rate": "gyro", "target_attitude": "attitude"},
    ).build("pd", env)
    wheels = TorqueToWheelsCfg(max_wheel_torque_nm=MAX_TORQUE_NM, period_s=0.1).build("wheels", env)
    graph = AgentGraph([pd, wheels], external_inputs=["star_tracker", "gyro", "attitude"])
    return graph, {"wheel_torque": "sat/wheels"}


def baseline_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = pd_agent
    cfg.observations["policy"].terms.pop("last_action")
    return cfg


def teleop_status(env: ManagerBasedRLEnv):
    """The recorder's status line: the pointing error (deg) and the body rate |omega|
    (deg/s) (success: < 0.5 deg and < 0.05 deg/s)."""
    from orbitlab.demos.status import Measure, TaskReading, resolved

    sat = resolved(env, SAT)
    return TaskReading(
        errors=(
            Measure("pointing", "deg", torch.rad2deg(error_angle(env, sat))),
            Measure("|omega|", "deg/s", torch.rad2deg(true_rate(env, sat)), digits=3),
        )
    )
