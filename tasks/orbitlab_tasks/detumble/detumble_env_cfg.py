"""Detumble a 3U CubeSat: magnetorquers only (Detumble-MTQ) or three wheels (Detumble-RW).

Initial body rates up to 10 deg/s in a random direction, random attitude and a
random 400-600 km orbit of inclination 40-98 deg (ISS-like to sun-synchronous; near the
magnetic equator the field hardly turns in the body and B-dot cannot damp the rate
about it). Success: |omega| < 0.5 deg/s held
for 60 s (the episode then ends as a terminal success); spinning up beyond 30 deg/s ends
it as a failure. Baselines: B-dot on the
magnetometer (MTQ); rate damping on the gyro through the wheels (RW), where the
wheels' momentum capacity (~0.012 N m s each) bounds what they can absorb.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from orbitlab.agent import (
    AgentGraph,
    BDotCfg,
    RateDampingCfg,
    TorqueToWheelsCfg,
    bdot_gain,
)
from orbitlab.envs import mdp
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnvCfg
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.fw.terms import TermBuild, kernel_term
from orbitlab.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    SceneEntityCfg,
    TerminationTermCfg,
)
from orbitlab.managers.action_manager import ActuatorActionCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0
SUCCESS_RATE_RAD_S = 0.5 * DEG
HOLD_S = 60.0
MAX_INITIAL_RATE_RAD_S = 10.0 * DEG
SAT = SceneEntityCfg("sat")
"""The spacecraft (its root state)."""


def sensor(name: str) -> SceneEntityCfg:
    """One of the spacecraft's sensors, e.g. 'gyro'."""
    return SceneEntityCfg("sat", sensor_names=(name,))


@kernel_term
def slow_enough(build: TermBuild, entity: SceneEntityCfg):
    """|omega| below the success threshold."""
    dof = kt.root_dof(entity, build)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        return kt.norm3(kt.root_rate(s, w, dof)) < wp.float64(SUCCESS_RATE_RAD_S)

    return f


@kernel_term
def rate_potential(build: TermBuild):
    """|omega| in units of the success threshold: the potential whose decrease the MTQ
    task's `progress` term pays."""
    dof = kt.root_dof(SAT.resolve(build.env.scene), build)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return kt.norm3(kt.root_rate(s, w, dof)) / wp.float64(SUCCESS_RATE_RAD_S)

    return f


@kernel_term
def rate_kernel(build: TermBuild, entity: SceneEntityCfg):
    """1 - exp(-|omega| / threshold): 0 at rest, 0.63 at the success threshold."""
    dof = kt.root_dof(entity, build)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        rate = kt.norm3(kt.root_rate(s, w, dof))
        return wp.float64(1.0) - wp.exp(-rate / wp.float64(SUCCESS_RATE_RAD_S))

    return f


def _scene(actuator: str, num_envs: int, timestep_s: float) -> SceneCfg:
    sat = spacecraft.cubesat_3u()
    sat.actuators = {actuator: sat.actuators[actuator]}
    keep = ("gyro", "magnetometer")
    sat.sensors = {k: v for k, v in sat.sensors.items() if k in keep}
    sat.sensors["gyro"].period_s = 0.1  # 10 Hz, the rate of the attitude loop
    return SceneCfg(num_envs=num_envs, entities={"sat": sat}, timestep_s=timestep_s)


def _mtq_rewards() -> dict[str, RewardTermCfg]:
    """The MTQ task's extra reward term (a new config each call: a curriculum may edit it)."""
    # A magnetorquer changes |omega| by at most ~0.02 deg/s per 1 s step, so a pure rate
    # penalty hardly tells a good dipole from a bad one over a 100 s horizon; the decrease
    # of |omega| in each step does (potential-based: an episode's sum is its start rate
    # minus its end rate, whoever damped it). 25 per threshold's worth: B-dot earns ~0.25
    # per step in its first 5 min, random dipoles ~0.
    progress = RewardTermCfg(
        func=kt.potential_progress, params={"potential": rate_potential}, weight=25.0
    )
    return {"progress": progress}


def _env_cfg(
    actuator: str, timestep_s: float, decimation: int, episode_s: float, num_envs: int
) -> ManagerBasedRLEnvCfg:
    policy = {
        "gyro": ObservationTermCfg(
            func=kt.sensor_value,
            params={"sensor_cfg": sensor("gyro")},
            scale=1.0 / MAX_INITIAL_RATE_RAD_S,
        ),
        # the same reading near the goal: 1 at the success threshold, clipped
        "gyro_fine": ObservationTermCfg(
            func=kt.sensor_value,
            params={"sensor_cfg": sensor("gyro")},
            scale=1.0 / SUCCESS_RATE_RAD_S,
            clip=(-2.0, 2.0),
        ),
        "magnetometer": ObservationTermCfg(
            func=kt.sensor_value, params={"sensor_cfg": sensor("magnetometer")}, scale=2.0e4
        ),
        "last_action": ObservationTermCfg(func=kt.last_action),
    }
    if actuator == "wheels":
        policy["wheel_speed"] = ObservationTermCfg(
            func=kt.wheel_speed,
            params={"actuator_cfg": SceneEntityCfg("sat", actuator_names=("wheels",))},
        )
    return ManagerBasedRLEnvCfg(
        scene=_scene(actuator, num_envs, timestep_s),
        decimation=decimation,
        episode_length_s=episode_s,
        actions={
            "command": ActuatorActionCfg(
                group=f"sat/{actuator}", scale=0.2 if actuator == "mtq" else 1.0e-3
            )
        },
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(
                enable_noise=False,
                terms={
                    **policy,
                    "true_rate": ObservationTermCfg(
                        func=kt.root_ang_vel,
                        params={"entity": SAT},
                        scale=1.0 / MAX_INITIAL_RATE_RAD_S,
                    ),
                },
            ),
        },
        rewards={
            "rate": RewardTermCfg(
                func=kt.ang_vel_norm,
                params={"entity": SAT},
                weight=-1.0 / MAX_INITIAL_RATE_RAD_S,
            ),
            # steep near the threshold, so the last fraction of a deg/s still pays
            "rate_fine": RewardTermCfg(func=rate_kernel, params={"entity": SAT}, weight=-0.5),
            "effort": RewardTermCfg(func=kt.action_l2, weight=-0.01),
            **(_mtq_rewards() if actuator == "mtq" else {}),
        },
        terminations={
            "success": TerminationTermCfg(
                func=kt.held_for,
                params={
                    "condition": slow_enough,
                    "condition_params": {"entity": SAT},
                    "duration_s": HOLD_S,
                },
            ),
            "spun_up": TerminationTermCfg(
                func=kt.ang_vel_above,
                params={"entity": SAT, "limit_rad_s": 3.0 * MAX_INITIAL_RATE_RAD_S},
            ),
        },
        events={
            "orbit": EventTermCfg(
                func=mdp.randomize_orbit, mode="reset", params={"inclination_deg": (40.0, 98.0)}
            ),
            "attitude": EventTermCfg(
                func=mdp.reset_root_attitude, mode="reset", params={"entity": SAT}
            ),
            "rates": EventTermCfg(
                func=mdp.reset_root_rates,
                mode="reset",
                params={
                    "entity": SAT,
                    "max_rate_rad_s": MAX_INITIAL_RATE_RAD_S,
                    "min_rate_rad_s": 2.0 * DEG,
                },
            ),
        },
    )


def mtq_env_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    """Detumble-MTQ: 0.1 s physics, 1 s per action, episodes of up to 4 h."""
    return _env_cfg("mtq", timestep_s=0.1, decimation=10, episode_s=4.0 * 3600.0, num_envs=num_envs)


def rw_env_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    """Detumble-RW: 0.02 s physics, 0.1 s per action, episodes of up to 5 min."""
    return _env_cfg("wheels", timestep_s=0.02, decimation=5, episode_s=300.0, num_envs=num_envs)


# ----------------------------------------------------------------- baselines
def bdot_agent(env: ManagerBasedRLEnv):
    """B-dot at 2 Hz with the Avanzini-Giulietti gain for a 500 km, 50 deg orbit."""
    body = env.scene.cfg.orbit.central_body
    n = math.sqrt(body.gm / (body.radius + 500.0) ** 3)
    j_min = float(env.scene.mj_model.body_inertia[env.scene.entities["sat"].root_body].min())
    cfg = BDotCfg(
        gain=bdot_gain(n, 50.0 * DEG, j_min), normalized=True, max_dipole_am2=0.2, period_s=0.5
    )
    node = cfg.build("bdot", env)
    return AgentGraph([node], external_inputs=["magnetometer"]), {"mtq_dipole": "sat/mtq"}


def rate_damping_agent(env: ManagerBasedRLEnv):
    """Rate damping tau = -Kd omega (10 Hz) distributed to the three wheels."""
    inertia = env.scene.mj_model.body_inertia[env.scene.entities["sat"].root_body]
    damp = RateDampingCfg(
        kd_nms=float(inertia.max()) / 2.0,
        max_torque_nm=1.0e-3,
        period_s=0.1,
        inputs={"rate": "gyro"},
    ).build("damping", env)
    wheels = TorqueToWheelsCfg(max_wheel_torque_nm=1.0e-3, period_s=0.1).build("wheels", env)
    graph = AgentGraph([damp, wheels], external_inputs=["gyro"])
    return graph, {"wheel_torque": "sat/wheels"}


def _baseline(cfg: ManagerBasedRLEnvCfg, agent) -> ManagerBasedRLEnvCfg:
    cfg.actions = {}
    cfg.agent = agent
    cfg.observations["policy"].terms.pop("last_action")
    return cfg


def mtq_baseline_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    return _baseline(mtq_env_cfg(num_envs), bdot_agent)


def rw_baseline_cfg(num_envs: int = 1024) -> ManagerBasedRLEnvCfg:
    return _baseline(rw_env_cfg(num_envs), rate_damping_agent)


def teleop_status(env: ManagerBasedRLEnv):
    """The recorder's status line: the body rate |omega|, deg/s (success below 0.5)."""
    from orbitlab.demos.status import Measure, TaskReading, resolved

    rate = mdp.ang_vel_norm(env, resolved(env, SAT))
    return TaskReading(errors=(Measure("|omega|", "deg/s", torch.rad2deg(rate)),))
