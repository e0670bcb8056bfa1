"""Formation: two followers hold their Hill-frame slots behind a leader that tours waypoints.

The spec's leader-follower scenario (BSK-ROS2 bridge paper): three 17.8 kg free-flyers
(J = 0.315 kg m^2, twelve 1.5 N thrusters on 10 Hz PWM) on a 6778 km, e = 0.001, 45 deg orbit
(RAAN 270 deg, argument of periapsis 90 deg). The leader is scripted: it holds each waypoint
for 20 s (CW-LQR + quaternion PD in the agent graph). The followers keep [-1.0, +-0.3, 0] m
from it in the Hill frame and match its attitude; a policy gives each follower a body wrench
at 5 Hz (physics 0.05 s, so PWM periods are two physics steps). Metric: formation error, the
mean over followers and time of |rho_f - rho_leader - offset_f|, m (reward term
'formation_error'). Episodes last 160 s (two waypoint cycles); a follower more than 5 m from its
slot or two flyers closer than 0.35 m (centre to centre) end one as a failure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from orbitlab.envs import mdp as core_mdp
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
from orbitlab.managers.action_manager import GraphInputActionCfg, ThrusterWrenchActionCfg
from orbitlab.orbit.constants import OrbitInit
from orbitlab.orbit.frames import coe_to_rv, lvlh_rotation
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg
from orbitlab.sensors.navigation import RelativeNavCfg
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation import kernel_terms as fk
from orbitlab_tasks.formation import mdp
from orbitlab_tasks.formation.agents import (
    baseline_agent,
    leader_agent,
    translation_policy_agent,
    velocity_policy_agent,
)

if TYPE_CHECKING:
    from orbitlab.scene.entities import EntityCfg

PHYSICS_DT_S = 0.05
"""Physics step, s (two per 10 Hz PWM period)."""
DECIMATION = 4
"""Physics steps per env step: 0.2 s, the spec's 5 Hz control."""
EPISODE_S = 160.0
"""Episode length, s (eight waypoints, two laps)."""
MAX_FORCE_N = 0.75
"""Per-axis body force of a full action, N (a quarter of the 3 N two thrusters give; about
twice the leader's 0.4 N per Hill axis, so a follower can keep up). Smaller than the baseline's
1.5 N cap so that the policy's exploration noise and untrained bias push less."""
MAX_TORQUE_NM = 0.1
"""Per-axis body torque of a full action, N m (the leader's own torque cap; about a fifth of
the 0.51 N m available), small so that exploration does not spin the followers."""
MAX_SLOT_ERROR_M = 5.0
"""A follower farther than this from its slot ends the episode (failure), m."""
MIN_SEPARATION_M = 0.35
"""Centre distance below which two flyers count as collided, m (cubes of side 0.326 m)."""
INITIAL_NOISE = {
    "pos_noise_m": 0.1,
    "vel_noise_mps": 0.005,
    "att_noise_rad": math.radians(5.0),
    "rate_noise_rad_s": 0.01,
}
"""Followers' initial slot error: uniform per Hill / body axis up to these values."""


def chief_orbit() -> OrbitInit:
    """The spec's orbit, starting at periapsis (true anomaly 0)."""
    R, V = coe_to_rv(
        geo.ORBIT_A_KM,
        geo.ORBIT_E,
        *np.radians([geo.ORBIT_I_DEG, geo.ORBIT_RAAN_DEG, geo.ORBIT_ARGP_DEG, geo.ORBIT_NU_DEG]),
    )
    return OrbitInit(R_eci=np.asarray(R), V_eci=np.asarray(V))


def _hill_rotation(orbit: OrbitInit) -> np.ndarray:
    """C (ECI -> Hill) of the initial chief state."""
    return lvlh_rotation(orbit.R_eci, orbit.V_eci)


def _scene(num_envs: int) -> SceneCfg:
    orbit = chief_orbit()
    C = _hill_rotation(orbit)
    entities: dict[str, EntityCfg] = {}
    for name in (geo.LEADER, *geo.FOLLOWERS):
        offset = geo.SLOT_OFFSETS_M.get(name, (0.0, 0.0, 0.0))
        flyer = spacecraft.formation_flyer(pos_m=tuple(C.T @ np.asarray(offset)))
        flyer.sensors.pop("gnss")
        flyer.sensors["gyro"].period_s = 0.1  # 10 Hz is plenty for 5 Hz control
        if name != geo.LEADER:
            flyer.sensors["relative_nav"] = RelativeNavCfg(
                site="imu",
                target=geo.LEADER,
                period_s=0.1,
                std=(0.005,) * 3 + (0.001,) * 3 + (0.002,) * 3,
            )
        entities[name] = flyer
    return SceneCfg(
        num_envs=num_envs,
        entities=entities,
        orbit_init=orbit,
        timestep_s=PHYSICS_DT_S,
        # Measured peaks per world (`orbitlab bench mode=contacts`, 64 worlds, baseline and
        # random rollouts, 2026-12-06): 4 contacts, 3 candidates, 16 rows; the pool holds
        # twice the contacts, the rows stay at the worst case (3 box pairs at 8 points,
        # cheap at this size), so that no crash overflows a world's rows.
        contacts_per_world=8,
        constraint_rows_per_world=96,
    )


def follower_cfg(name: str) -> SceneEntityCfg:
    """A follower as its observation terms read it: its relative navigation and star
    tracker."""
    return SceneEntityCfg(name, sensor_names=("relative_nav", "star_tracker"))


def _follower_obs(
    follower: str, with_action: bool, frame: str = "body"
) -> dict[str, ObservationTermCfg]:
    """One follower's 18 (15 without the action) observation values. `frame` 'body' gives the
    slot error and its rate in the follower's body axes (the axes of its force action, from its
    star tracker); 'hill' in Hill axes."""
    if frame not in ("body", "hill"):
        raise ValueError(f"frame must be 'body' or 'hill', got '{frame}'")
    p = {"follower": follower_cfg(follower)}
    pos, vel = (
        (fk.slot_pos_error_body, fk.slot_vel_error_body)
        if frame == "body"
        else (fk.slot_pos_error, fk.slot_vel_error)
    )
    terms = {
        "slot_pos": ObservationTermCfg(func=pos, params=p, clip=(-10.0, 10.0)),
        "slot_vel": ObservationTermCfg(func=vel, params=p, scale=10.0, clip=(-10.0, 10.0)),
        "attitude": ObservationTermCfg(func=fk.leader_attitude_error, params=p),
        "rate": ObservationTermCfg(
            func=kt.sensor_value,
            params={"sensor_cfg": SceneEntityCfg(follower, sensor_names=("gyro",))},
            scale=5.0,
        ),
    }
    if with_action:
        terms["last_action"] = ObservationTermCfg(func=fk.follower_last_action, params=p)
    return {f"{follower}/{k}": v for k, v in terms.items()}


def policy_observations(with_action: bool = True, frame: str = "body") -> ObservationGroupCfg:
    """Follower 1's terms, then follower 2's (so (N, 2 D) reshapes to (N, 2, D))."""
    terms = {}
    for f in geo.FOLLOWERS:
        terms.update(_follower_obs(f, with_action, frame))
    return ObservationGroupCfg(terms=terms)


def _leader_critic_terms() -> dict[str, ObservationTermCfg]:
    """The leader's Hill velocity (m/s x 10) and the phase of its waypoint hold."""
    return {
        "leader_vel": ObservationTermCfg(func=fk.leader_velocity_hill, scale=10.0),
        "waypoint_phase": ObservationTermCfg(func=fk.waypoint_phase),
    }


def critic_observations() -> ObservationGroupCfg:
    """Privileged, noise-free values for PPO's critic: each follower's true slot error and rate
    (its true body axes, m and m/s), attitude error, rate and last action, then the
    leader's Hill velocity (m/s x 10) and the phase of its waypoint hold."""
    terms = {}
    for f in geo.FOLLOWERS:
        p = {"follower": follower_cfg(f)}
        terms[f"{f}/true_slot"] = ObservationTermCfg(
            func=fk.true_slot_body, params=p, clip=(-10.0, 10.0)
        )
        terms[f"{f}/attitude"] = ObservationTermCfg(func=fk.leader_attitude_error, params=p)
        terms[f"{f}/rate"] = ObservationTermCfg(
            func=kt.sensor_value,
            params={"sensor_cfg": SceneEntityCfg(f, sensor_names=("gyro",))},
            scale=5.0,
        )
        terms[f"{f}/last_action"] = ObservationTermCfg(func=fk.follower_last_action, params=p)
    terms.update(_leader_critic_terms())
    return ObservationGroupCfg(terms=terms, enable_noise=False)


def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Formation (RL): actions [follower_1 wrench (6), follower_2 wrench (6)] in [-1, 1]."""
    scale = (MAX_FORCE_N,) * 3 + (MAX_TORQUE_NM,) * 3
    return ManagerBasedRLEnvCfg(
        scene=_scene(num_envs),
        decimation=DECIMATION,
        episode_length_s=EPISODE_S,
        actions={f: ThrusterWrenchActionCfg(group=f"{f}/rcs", scale=scale) for f in geo.FOLLOWERS},
        observations={"policy": policy_observations(), "critic": critic_observations()},
        rewards={
            # The metric and the attitude error, kept at low weights so that they are logged:
            # a large weight on an unbounded cost makes ending the episode early (drift > 5 m)
            # look better than flying on, so the shaping is bounded and positive instead.
            "formation_error": RewardTermCfg(func=mdp.formation_error, weight=-0.05),
            "attitude_error": RewardTermCfg(func=mdp.attitude_error, weight=-0.05),
            # A wide kernel pulls back from far away, a narrow one rewards precision.
            "formation_wide": RewardTermCfg(
                func=mdp.formation_kernel, weight=1.0, params={"sigma_m": 0.5}
            ),
            "formation_kernel": RewardTermCfg(
                func=mdp.formation_kernel, weight=1.0, params={"sigma_m": 0.05}
            ),
            "attitude_kernel": RewardTermCfg(
                func=mdp.attitude_kernel, weight=0.5, params={"sigma_rad": 0.2}
            ),
            "slot_velocity": RewardTermCfg(func=mdp.slot_velocity_error, weight=-0.5),
            "fuel": RewardTermCfg(func=mdp.fuel, weight=-0.01),
            "action_rate": RewardTermCfg(func=mdp.action_rate, weight=-0.01),
            "failure": RewardTermCfg(
                func=mdp.failure,
                weight=-100.0,
                params={"max_error_m": MAX_SLOT_ERROR_M, "min_distance_m": MIN_SEPARATION_M},
            ),
        },
        terminations={
            "slot_drift": TerminationTermCfg(
                func=mdp.slot_drift, params={"max_error_m": MAX_SLOT_ERROR_M}
            ),
            "collision": TerminationTermCfg(
                func=mdp.collision, params={"min_distance_m": MIN_SEPARATION_M}
            ),
            "time_out": TerminationTermCfg(func=core_mdp.time_out, time_out=True),
        },
        events={
            "formation": EventTermCfg(
                func=mdp.reset_formation, mode="reset", params=dict(INITIAL_NOISE)
            )
        },
        commands={"waypoint": mdp.WaypointScheduleCfg()},
        agent=leader_agent,
    )


MAX_HILL_FORCE_N = 0.75
"""Per-Hill-axis force of a full action in the translation task, N (half the baseline's 1.5 N
cap; about twice the leader's 0.4 N)."""


MAX_SLOT_SPEED_MPS = 0.2
"""Slot error rate of a full action in the velocity-command task, m/s (twice the leader's
0.1 m/s top speed)."""


def velocity_env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Formation-Velocity (RL): actions [follower_1 slot error rate (3), follower_2 (3)] in
    [-1, 1] x 0.2 m/s, Hill axes: the policy is the guidance, and the agent graph's follower
    chain is a proportional velocity loop (2 s) on the navigated slot error rate, the attitude
    PD to the leader's attitude and the thruster allocation. Inputs and shaping as
    Formation-Translation."""
    cfg = translation_env_cfg(num_envs)
    cfg.actions = {
        f: GraphInputActionCfg(key=f"{f}/velocity_command", dim=3, scale=(MAX_SLOT_SPEED_MPS,) * 3)
        for f in geo.FOLLOWERS
    }
    cfg.agent = velocity_policy_agent
    return cfg


def translation_env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Formation-Translation (RL): actions [follower_1 Hill force (3), follower_2 (3)] in
    [-1, 1] x 0.75 N. Each follower's attitude is held to the leader's by the baseline's
    quaternion PD node in the agent graph, which also allocates the policy's force and the PD
    torque to the twelve thrusters: the usual split of an inner attitude loop under a learned
    translation policy. Policy inputs per follower: slot error and rate in Hill axes (its
    relative navigation and star tracker; coarse and fine-scaled copies) and its last action.
    Shaping: the formation kernels, plus tracking of a reference closing velocity."""
    cfg = env_cfg(num_envs)
    cfg.actions = {
        f: GraphInputActionCfg(key=f"{f}/force_hill", dim=3, scale=(MAX_HILL_FORCE_N,) * 3)
        for f in geo.FOLLOWERS
    }
    cfg.agent = translation_policy_agent
    terms = {}
    for f in geo.FOLLOWERS:
        p = {"follower": follower_cfg(f)}
        terms[f"{f}/slot_pos"] = ObservationTermCfg(
            func=fk.slot_pos_error, params=p, scale=1.0 / 0.5, clip=(-10.0, 10.0)
        )
        terms[f"{f}/slot_vel"] = ObservationTermCfg(
            func=fk.slot_vel_error, params=p, scale=10.0, clip=(-10.0, 10.0)
        )
        # fine copies for the last centimetres
        terms[f"{f}/slot_pos_fine"] = ObservationTermCfg(
            func=fk.slot_pos_error, params=p, scale=1.0 / 0.05, clip=(-1.0, 1.0)
        )
        terms[f"{f}/slot_vel_fine"] = ObservationTermCfg(
            func=fk.slot_vel_error, params=p, scale=1.0 / 0.01, clip=(-1.0, 1.0)
        )
        terms[f"{f}/last_action"] = ObservationTermCfg(func=fk.follower_last_action, params=p)
    critic = {}
    for f in geo.FOLLOWERS:
        p = {"follower": follower_cfg(f)}
        critic[f"{f}/true_slot"] = ObservationTermCfg(
            func=fk.true_slot_hill, params=p, clip=(-10.0, 10.0)
        )
        critic[f"{f}/last_action"] = ObservationTermCfg(func=fk.follower_last_action, params=p)
    critic.update(_leader_critic_terms())
    cfg.observations = {
        "policy": ObservationGroupCfg(terms=terms),
        "critic": ObservationGroupCfg(terms=critic, enable_noise=False),
    }
    del cfg.rewards["attitude_kernel"]  # the PD node owns the attitude; still logged as error
    cfg.rewards["attitude_error"].weight = -0.01
    # Close on the slot along a smooth reference velocity field (-e / 10 s, at most 0.1 m/s)
    # instead of penalising every relative velocity.
    del cfg.rewards["slot_velocity"]
    cfg.rewards["velocity_tracking"] = RewardTermCfg(func=mdp.slot_velocity_tracking, weight=-2.0)
    cfg.rewards["velocity_kernel"] = RewardTermCfg(
        func=mdp.slot_velocity_kernel, weight=0.5, params={"sigma_mps": 0.01}
    )
    return cfg


def baseline_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Formation with the baseline agent graph flying the followers (no actions)."""
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = baseline_agent
    cfg.observations = {"policy": policy_observations(with_action=False, frame="hill")}
    return cfg
