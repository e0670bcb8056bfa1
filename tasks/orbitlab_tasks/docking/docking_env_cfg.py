"""Docking: a 150 kg chaser flies its probe into the drogue of a 400 kg target (soft capture).

The target sits at the chief (origin) of a random 400-600 km circular orbit, its port on
its +x face, tumbling slowly (up to 0.1 deg/s about a random axis). The chaser starts
with its probe tip 5-30 m out along the port axis, up to 1 m off the axis, within 5 deg
of the docking attitude, with up to 2 cm/s per axis of velocity and 0.1 deg/s per axis
of body rate. It has 16 x 22 N RCS thrusters on 10 Hz PWM (10 ms minimum pulse) and
three 0.05 N m wheels. Contacts are simulated.

Success (terminal): soft capture, the latch sensor closes (the probe tip within 5 cm of
the port with closing speed < 0.1 m/s, lateral error < 5 cm, misalignment < 5 deg) after
an approach that stayed under 0.1 m/s. Failures (terminal): a latch closed on the rebound
of a faster hit ("impact"); any chaser-target contact while the probe tip is not inside
the drogue's funnel ("collision"); leaving the approach corridor, a 30 deg half-angle
cone about the port axis beyond 2 m from the port and a 1 m radius tube inside it, or
going beyond 45 m ("corridor"). Time limit 400 s (a truncation).

Baseline: glideslope guidance (closing speed 0.05 m/s + range / 50 s, capped at
0.3 m/s; lateral offset nulled with an 8 s time constant; closing held while off-axis
or misaligned near the port) on sensor-only navigation, allocated to the RCS through a
sigma-delta pulse modulator; attitude held at the docking attitude by a quaternion PD
on the wheels.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import torch

from orbitlab.agent import (
    AgentGraph,
    AllocationCfg,
    HillForceToBodyCfg,
    QuaternionPDCfg,
    TorqueToWheelsCfg,
    VelocityLoopCfg,
)
from orbitlab.envs import mdp as core
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnvCfg
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.managers import (
    CurriculumTermCfg,
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    SceneEntityCfg,
    TerminationTermCfg,
)
from orbitlab.managers.action_manager import (
    GraphInputActionCfg,
    ThrusterForceActionCfg,
    ThrusterWrenchActionCfg,
)
from orbitlab.scene import spacecraft
from orbitlab.scene.scene import SceneCfg
from orbitlab_tasks.docking import kernel_terms as dk
from orbitlab_tasks.docking import mdp
from orbitlab_tasks.docking.agent import (
    DockingNavCfg,
    DockingNavNode,
    GlideslopeCfg,
    PulseModulatorCfg,
)

if TYPE_CHECKING:
    from orbitlab.actuators.thrusters import ThrusterGroup
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0
TIMESTEP_S = 0.05
"""Physics step, s (the 0.1 s PWM period is two steps)."""
DECIMATION = 2
"""Physics steps per action: 0.1 s, one PWM period."""
EPISODE_S = 400.0
RANGE_M = (5.0, 30.0)
"""Initial probe tip range from the port, m."""
APPROACH_WEIGHT = 10.0
"""RL shaping: weight of `mdp.approach_progress`, the potential exp(-range / 0.5 m) x
exp(-lateral / 5 cm) gained per second, less the gain of closing faster than the glideslope
speed; an episode that ends latched on the axis earns at most this much from it (half the
success reward)."""
CURRICULUM_START_M = (2.0, 6.0)
"""RL curriculum: the initial range at level 0, m (the full range's 5-10 m took seeds 200-400
iterations to reach the port at all)."""
LATERAL_PER_RANGE = 0.2
"""Initial lateral offset at most this times the range (and at most 1 m): 0.4-1 m over the
curriculum's first 2-6 m, the full 1 m from 5 m on (the evaluation's worlds unchanged)."""
GLIDESLOPE = {"final_mps": 0.05, "max_mps": 0.3, "time_constant_s": 50.0}
"""Allowed closing speed: 0.05 m/s + range / 50 s, capped at 0.3 m/s (shared by the
reward shaping and the baseline)."""
TARGET_MAX_RATE_DEG_S = 0.1
"""The target tumbles slowly: body rate of random direction, magnitude up to this, deg/s."""
CHASER = SceneEntityCfg(
    "chaser",
    site_names=("probe_tip", "imu"),
    sensor_names=("relative_nav", "star_tracker", "gyro", "gnss", "latch"),
)
"""The chaser as its terms read it: root state, probe tip and nav point, five sensors."""
TARGET = SceneEntityCfg("target")
"""The target (its root state and free joint)."""
GYRO = SceneEntityCfg("chaser", sensor_names=("gyro",))
"""The chaser's gyro alone (`sensor_value`)."""
RCS = SceneEntityCfg("chaser", actuator_names=("rcs",))
"""The chaser's thruster group (`thruster_force_sum`)."""
SPEED_FRACTION = 0.85
"""RL shaping: the reference closing speed is this fraction of the glideslope speed v(r)
(a margin under the `overspeed` limit)."""
FORCE_SCALE_N = 20.0
"""RL action: body force per unit action, N (x: 88 N, y and z: 44 N available)."""
TORQUE_SCALE_NM = 0.5
"""RL action: body torque per unit action, N m (1.7 deg/s^2 on the chaser's ~17 kg m^2: it
nulls the 0.1 deg/s initial rates in 0.1 s). The action is pulse-modulated, so every
request reaches the valves, the exploration noise included: at 5 N m the initial std of
0.1 alone (0.5 N m) random-walks the body rates by ~2 deg/s in 10 s, and a run so
configured drifted ~30 deg off the docking attitude and never approached."""
SENSORS = ("gyro", "star_tracker", "gnss", "relative_nav", "latch")
ATTITUDE_REWARDS = ("attitude", "rates", "rates_fine")
"""Docking's attitude reward terms, dropped by the variants whose attitude a PD node holds."""


def _scene(num_envs: int) -> SceneCfg:
    chaser = spacecraft.docking_chaser(target="target")
    chaser.sensors = {k: v for k, v in chaser.sensors.items() if k in SENSORS}
    return SceneCfg(
        num_envs=num_envs,
        timestep_s=TIMESTEP_S,
        entities={"target": spacecraft.docking_target(), "chaser": chaser},
        # Measured peaks per world (`orbitlab bench mode=contacts`, 64 worlds, baseline and
        # random rollouts, 2026-12-06): 2 contacts, 17 broadphase candidates, 8 rows. The
        # pool holds every one of the 32 collidable pairs as a candidate (the exact bound),
        # the rows 4 per contact of it: 0.18 MB per world instead of the worst case's 1.8 MB.
        contacts_per_world=32,
        constraint_rows_per_world=128,
    )


def _term(func, scale: float = 1.0, clip=None, **params) -> ObservationTermCfg:
    return ObservationTermCfg(func=func, params=params, scale=scale, clip=clip)


def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Docking, RL: a body wrench [force (3) x 20 N, torque (3) x 0.5 N m] on the RCS,
    pulse-modulated (sigma-delta: small requests become occasional minimum pulses).

    Shaping (see README, "Training"): the policy tracks a reference velocity field (the
    baseline's glideslope guidance as a smooth field, `mdp.reference_velocity`); it
    observes its velocity error in port and body axes, with fine (clipped) copies of the
    position, velocity error, attitude error and rates for the final approach.
    """
    vel_err = {**GLIDESLOPE, "speed_fraction": SPEED_FRACTION}
    policy = {
        "tip_position": _term(dk.tip_position, chaser=CHASER, scale=0.1, clip=(-5.0, 5.0)),
        "tip_velocity": _term(dk.tip_velocity, chaser=CHASER, scale=1.0 / 0.3, clip=(-10.0, 10.0)),
        "attitude_error": _term(dk.docking_attitude_error, chaser=CHASER, scale=10.0),
        "gyro": _term(
            kt.sensor_value, scale=1.0 / (1.0 * DEG), clip=(-20.0, 20.0), sensor_cfg=GYRO
        ),
        "latch": _term(dk.latch_features, chaser=CHASER),
        "last_action": _term(kt.last_action),
        # fine copies and the velocity error from the reference field (sensor-only)
        "tip_position_fine": _term(
            dk.tip_position, chaser=CHASER, scale=1.0 / 0.2, clip=(-1.0, 1.0)
        ),
        "velocity_error": _term(
            dk.velocity_error, chaser=CHASER, scale=1.0 / 0.05, clip=(-10.0, 10.0), **vel_err
        ),
        "velocity_error_fine": _term(
            dk.velocity_error, chaser=CHASER, scale=1.0 / 0.01, clip=(-1.0, 1.0), **vel_err
        ),
        "velocity_error_body": _term(
            dk.velocity_error,
            chaser=CHASER,
            scale=1.0 / 0.05,
            clip=(-10.0, 10.0),
            body_axes=True,
            **vel_err,
        ),
        "attitude_error_fine": _term(
            dk.docking_attitude_error, chaser=CHASER, scale=1.0 / (1.0 * DEG), clip=(-1.0, 1.0)
        ),
        "gyro_fine": _term(
            kt.sensor_value, scale=1.0 / (0.05 * DEG), clip=(-1.0, 1.0), sensor_cfg=GYRO
        ),
        "rate_error": _term(
            dk.rate_error, chaser=CHASER, scale=1.0 / (1.0 * DEG), clip=(-20.0, 20.0)
        ),
        "rate_error_fine": _term(
            dk.rate_error, chaser=CHASER, scale=1.0 / (0.1 * DEG), clip=(-1.0, 1.0)
        ),
    }
    critic = {
        **policy,
        "true_tip_position": _term(
            dk.tip_position, chaser=CHASER, scale=0.1, clip=(-5.0, 5.0), truth=True
        ),
        "true_tip_velocity": _term(
            dk.tip_velocity, chaser=CHASER, scale=1.0 / 0.3, clip=(-10.0, 10.0), truth=True
        ),
        "true_attitude_error": _term(
            dk.docking_attitude_error, chaser=CHASER, scale=10.0, truth=True
        ),
        "true_rates": _term(
            dk.body_rates, chaser=CHASER, scale=1.0 / (1.0 * DEG), clip=(-20.0, 20.0)
        ),
        "true_tip_position_fine": _term(
            dk.tip_position, chaser=CHASER, scale=1.0 / 0.2, clip=(-1.0, 1.0), truth=True
        ),
        "true_velocity_error": _term(
            dk.velocity_error,
            chaser=CHASER,
            scale=1.0 / 0.05,
            clip=(-10.0, 10.0),
            truth=True,
            **vel_err,
        ),
        "true_rate_error": _term(
            dk.rate_error, chaser=CHASER, scale=1.0 / (1.0 * DEG), clip=(-20.0, 20.0), truth=True
        ),
    }
    return ManagerBasedRLEnvCfg(
        scene=_scene(num_envs),
        decimation=DECIMATION,
        episode_length_s=EPISODE_S,
        actions={
            "wrench": ThrusterWrenchActionCfg(
                group="chaser/rcs",
                scale=(FORCE_SCALE_N,) * 3 + (TORQUE_SCALE_NM,) * 3,
                pulse_modulation=True,
            )
        },
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(enable_noise=False, terms=critic),
        },
        rewards={
            "progress": RewardTermCfg(
                func=dk.progress, params={"chaser": CHASER, **GLIDESLOPE}, weight=1.0
            ),
            "alignment": RewardTermCfg(
                func=dk.misalignment, params={"chaser": CHASER}, weight=-0.05
            ),
            "overspeed": RewardTermCfg(
                func=dk.overspeed, params={"chaser": CHASER, **GLIDESLOPE}, weight=-2.0
            ),
            "fuel": RewardTermCfg(
                func=dk.thruster_force_sum, params={"actuator_cfg": RCS}, weight=-1.0e-3
            ),
            "velocity": RewardTermCfg(
                func=dk.velocity_tracking, params={"chaser": CHASER, **vel_err}, weight=-1.0
            ),
            "velocity_fine": RewardTermCfg(
                func=dk.velocity_tracking_kernel,
                weight=-0.1,
                params={"chaser": CHASER, "sigma_mps": 0.03, **vel_err},
            ),
            "approach": RewardTermCfg(
                func=dk.approach_progress,
                weight=APPROACH_WEIGHT,
                params={
                    "chaser": CHASER,
                    "range_scale_m": 0.5,
                    "lateral_scale_m": 0.05,
                    **GLIDESLOPE,
                },
            ),
            "attitude": RewardTermCfg(
                func=dk.attitude_kernel,
                weight=-0.2,
                params={"chaser": CHASER, "sigma_rad": 3.0 * DEG},
            ),
            "rates": RewardTermCfg(
                func=dk.rate_tracking, params={"chaser": CHASER}, weight=-0.02 / DEG
            ),
            "rates_fine": RewardTermCfg(
                func=dk.rate_tracking_kernel,
                weight=-0.2,
                params={"chaser": CHASER, "sigma_rad_s": 0.2 * DEG},
            ),
            "success": RewardTermCfg(
                func=dk.termination_impulse, params={"terms": ("success",)}, weight=20.0
            ),
            "failure": RewardTermCfg(
                func=dk.termination_impulse,
                params={"terms": ("collision", "corridor", "impact")},
                weight=-20.0,
            ),
        },
        terminations={
            "success": TerminationTermCfg(func=dk.capture, params={"chaser": CHASER, "soft": True}),
            "impact": TerminationTermCfg(func=dk.capture, params={"chaser": CHASER, "soft": False}),
            "collision": TerminationTermCfg(
                func=dk.collision, params={"chaser": CHASER, "target": TARGET}
            ),
            "corridor": TerminationTermCfg(func=dk.left_corridor, params={"chaser": CHASER}),
        },
        events={
            "orbit": EventTermCfg(func=core.randomize_orbit, mode="reset"),
            "target": EventTermCfg(
                func=core.reset_root_rates,
                mode="reset",
                params={"entity": TARGET, "max_rate_rad_s": TARGET_MAX_RATE_DEG_S * DEG},
            ),
            "chaser": EventTermCfg(
                func=mdp.reset_chaser_in_corridor,
                mode="reset",
                params={
                    "chaser": CHASER,
                    "range_m": RANGE_M,
                    "max_lateral_m": 1.0,
                    "max_lateral_per_range": LATERAL_PER_RANGE,
                    "max_speed_mps": 0.02,
                    "max_attitude_deg": 5.0,
                    "max_rate_deg_s": 0.1,
                },
            ),
        },
        curriculum={
            # Start 2-6 m out; widen to the full 5-30 m as the policy docks. Each decision
            # pools 64 ended episodes: >= 60 % soft captures promote by 0.1, < 30 % demote
            # by 0.1, in between the level holds (logged as Curriculum/start_distance).
            "start_distance": CurriculumTermCfg(
                func=core.grow_range_on_success,
                params={
                    "event": "chaser",
                    "param": "range_m",
                    "start": CURRICULUM_START_M,
                    "final": RANGE_M,
                    "step": 0.1,
                    "promote_rate": 0.6,
                    "demote_rate": 0.3,
                    "min_episodes": 64,
                },
            ),
        },
    )


# ------------------------------------------------------- translation policy
def _rcs(env: ManagerBasedRLEnv) -> ThrusterGroup:
    """The chaser's RCS thrusters (a `ThrusterGroupCfg` in the task's scene)."""
    return cast("ThrusterGroup", env.scene.actuators["chaser/rcs"])


def attitude_hold_nodes(env: ManagerBasedRLEnv, period_s: float) -> list:
    """The baseline's attitude loop: quaternion PD to the docking attitude on the wheels
    (~0.2 rad/s bandwidth, damping 0.9, 0.05 N m)."""
    chaser = env.scene.entities["chaser"]
    inertia = env.scene.mj_model.body_inertia[chaser.body_ids].sum(0)  # ~ composite, kg m^2
    j = float(inertia.max())
    omega = 0.2
    pd = QuaternionPDCfg(
        kp_nm=2.0 * j * omega**2,
        kd_nms=1.8 * omega * j,
        max_torque_nm=0.05,
        period_s=period_s,
        inputs={"attitude": "star_tracker", "rate": "gyro"},
        outputs={"torque": "attitude_torque"},
    ).build("attitude", env)
    wheels = TorqueToWheelsCfg(
        max_wheel_torque_nm=0.05, period_s=period_s, inputs={"torque": "attitude_torque"}
    ).build("wheels", env)
    return [pd, wheels]


def attitude_hold_agent(env: ManagerBasedRLEnv):
    """Agent of Docking-Translation: the baseline's navigation (for the docking attitude) and
    attitude loop; the policy flies the RCS."""
    period = _rcs(env).cfg.pwm_period_s
    graph = AgentGraph(
        [_nav_node(env), *attitude_hold_nodes(env, period)], external_inputs=NAV_INPUTS
    )
    return graph, {"wheel_torque": "chaser/wheels"}


def translation_env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Docking-Translation, RL: the policy gives the chaser's body force [3] x 20 N, allocated
    to the RCS with zero net torque and pulse-modulated as Docking's wrench; the attitude is held at the docking attitude by the
    baseline's quaternion PD on the wheels (agent graph). Observations, events, curriculum
    and the translation rewards are Docking's; the attitude rewards, which the policy no
    longer controls, are dropped."""
    cfg = env_cfg(num_envs)
    cfg.actions = {
        "force": ThrusterForceActionCfg(
            group="chaser/rcs", scale=(FORCE_SCALE_N,) * 3, pulse_modulation=True
        )
    }
    cfg.agent = attitude_hold_agent
    for name in ATTITUDE_REWARDS:
        del cfg.rewards[name]
    return cfg


# ------------------------------------------------------------------ baseline
def _rcs_chain(env: ManagerBasedRLEnv, force_input: str, rotation: str) -> list:
    """The force `force_input` (N, in the axes that the nav output `rotation` turns into body
    axes) -> body wrench -> RCS allocation -> sigma-delta pulses (`rcs_force`)."""
    rcs = _rcs(env)
    period = rcs.cfg.pwm_period_s
    to_body = HillForceToBodyCfg(
        period_s=period, inputs={"force_hill": force_input, "hill_to_body": rotation}
    ).build("to_body", env)
    alloc = AllocationCfg(allocator=rcs.allocator(), period_s=period).build("allocation", env)
    pulses = PulseModulatorCfg(
        max_force_n=tuple(float(x) for x in rcs.high[0]),
        period_s=period,
        min_on_time_s=rcs.cfg.min_on_time_s,
    ).build("pulses", env)
    return [to_body, alloc, pulses]


def _nav_node(env: ManagerBasedRLEnv) -> DockingNavNode:
    """The baseline's sensor-only docking navigation, at the PWM period."""
    period = _rcs(env).cfg.pwm_period_s
    x, y, z = (float(v) for v in mdp.probe_lever(env, CHASER.resolve(env.scene)))
    return cast(
        "DockingNavNode", DockingNavCfg(lever_m=(x, y, z), period_s=period).build("nav", env)
    )


NAV_INPUTS = ["relative_nav", "star_tracker", "gyro", "gnss"]


def glideslope_agent(env: ManagerBasedRLEnv):
    """Sensor-only glideslope docking: RCS translation (pulse-modulated), wheel attitude."""
    chaser = env.scene.entities["chaser"]
    period = _rcs(env).cfg.pwm_period_s
    guide = GlideslopeCfg(
        mass_kg=chaser.mass_kg,
        period_s=period,
        final_speed_mps=GLIDESLOPE["final_mps"],
        max_speed_mps=GLIDESLOPE["max_mps"],
        time_constant_s=GLIDESLOPE["time_constant_s"],
    ).build("glideslope", env)
    graph = AgentGraph(
        [
            _nav_node(env),
            guide,
            *attitude_hold_nodes(env, period),
            *_rcs_chain(env, "force_hill", "hill_to_body"),
        ],
        external_inputs=NAV_INPUTS,
    )
    return graph, {"rcs_force": "chaser/rcs", "wheel_torque": "chaser/wheels"}


# ------------------------------------------------------------ velocity policy
VELOCITY_SCALE_MPS = (0.1, 0.1, 0.3)
"""Docking-Velocity action: velocity command per unit action, port axes (lateral x, y;
z out of the port), m/s: the glideslope's 0.1 m/s lateral and 0.3 m/s closing caps."""
VELOCITY_LOOP_TIME_CONSTANT_S = 2.5
"""Docking-Velocity inner loop: the velocity error decays with this time constant, s (the
baseline's 0.4/s gain)."""
VELOCITY_LOOP_MAX_FORCE_N = 30.0
"""Docking-Velocity inner loop: per-axis force limit, port axes, N."""


def velocity_agent(env: ManagerBasedRLEnv):
    """Agent of Docking-Velocity: the baseline's navigation, attitude hold and RCS chain,
    with the policy's port-axis velocity command (`velocity_command`) flown by a
    proportional velocity loop in place of the glideslope guidance."""
    period = _rcs(env).cfg.pwm_period_s
    loop = VelocityLoopCfg(
        mass_kg=env.scene.entities["chaser"].mass_kg,
        time_constant_s=VELOCITY_LOOP_TIME_CONSTANT_S,
        max_force_n=VELOCITY_LOOP_MAX_FORCE_N,
        period_s=period,
        inputs={"velocity": "tip_vel_port"},
        outputs={"force": "force_port"},
    ).build("velocity_loop", env)
    graph = AgentGraph(
        [
            _nav_node(env),
            loop,
            *attitude_hold_nodes(env, period),
            *_rcs_chain(env, "force_port", "port_to_body"),
        ],
        external_inputs=[*NAV_INPUTS, "velocity_command"],
    )
    return graph, {"rcs_force": "chaser/rcs", "wheel_torque": "chaser/wheels"}


def velocity_env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Docking-Velocity, RL: the policy is the approach guidance. Its action [3] in [-1, 1]
    x (0.1, 0.1, 0.3) m/s is the probe tip's velocity command in port axes; the agent graph
    flies it with the baseline's sensor-only navigation, a proportional velocity loop
    (2.5 s), the RCS allocation through the sigma-delta pulse modulator, and the quaternion
    PD attitude hold on the wheels. Scenario, observations, events, curriculum and the
    translation rewards are Docking's; the attitude rewards (the PD owns attitude) are
    dropped."""
    cfg = env_cfg(num_envs)
    cfg.actions = {
        "velocity": GraphInputActionCfg(key="velocity_command", dim=3, scale=VELOCITY_SCALE_MPS)
    }
    cfg.agent = velocity_agent
    for name in ATTITUDE_REWARDS:
        del cfg.rewards[name]
    return cfg


def baseline_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """Docking with the glideslope baseline agent (no policy actions)."""
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = glideslope_agent
    cfg.curriculum = {}  # the baseline is scored on the full 5-30 m range
    cfg.observations["policy"].terms.pop("last_action")
    cfg.observations["critic"].terms.pop("last_action")
    return cfg


def teleop_status(env: ManagerBasedRLEnv):
    """The recorder's status line: probe tip to port distance (m), its closing speed (m/s,
    positive while closing) and the probe's misalignment to the port axis (deg), all true
    values (`mdp.truth_state`, as the rewards and the latch read them)."""
    from orbitlab.demos.status import Measure, TaskReading, resolved

    state = mdp.truth_state(env, resolved(env, CHASER))
    distance, closing = core.range_and_closing_speed(state["pos"], state["vel"])
    axis = Measure("axis", "deg", torch.rad2deg(state["misalignment"]), digits=1)
    return TaskReading(distance, closing, (axis,))
