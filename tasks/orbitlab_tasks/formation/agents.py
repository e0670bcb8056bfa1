"""Agent-graph nodes of the formation task and the graphs built from them.

* `SensorTapNode` publishes every sensor under its full scene key ('follower_1/gyro'): the env's
  own value dict strips the entity prefix, so the three flyers' sensors would collide there.
* `ReferencePointNode` integrates the formation's reference point: a free-falling point that
  starts at the leader. The chief of the scene follows thrust (its orbit takes the feedback
  F_ext / M_total of every thruster), so waypoints fixed in the chief frame would drag the whole
  formation along; the reference point does not feel thrust, only gravity.
* `LeaderWaypointNode`: the leader's state relative to its waypoint (privileged truth: the
  leader is part of the scenario, not an agent) and its target attitude.
* `FollowerSlotNode`: a follower's slot error from its relative navigation to the leader, the
  leader's attitude as its target, and hill_to_body from its star tracker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import torch

from orbitlab.agent import (
    AgentGraph,
    AllocationCfg,
    CwLqrCfg,
    HillForceToBodyCfg,
    Node,
    NodeCfg,
    QuaternionPDCfg,
    SceneNode,
    VelocityLoopCfg,
    mean_motion,
)
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.constants import (
    CONTROL_PERIOD_S,
    FOLLOWER_GAINS,
    LEADER_GAINS,
    SPEC_ATTITUDE_BANDWIDTH_RAD_S,
    SPEC_Q_POS,
    SPEC_Q_VEL,
    SPEC_R_FORCE,
    FlyerGains,
)

if TYPE_CHECKING:
    from orbitlab.actuators.thrusters import ThrusterGroup
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class SensorTapNode(SceneNode):
    """Publishes `env.scene.sensors[key].value` under `key` for every sensor of the scene."""

    def __init__(self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv) -> None:
        self.sensors = env.scene.sensors
        self.output_names = tuple(self.sensors)
        super().__init__(cfg, name, env)

    def compute(self, inputs):
        return {key: sensor.value for key, sensor in self.sensors.items()}


class ReferencePointNode(SceneNode):
    """Position (m) and velocity (m/s) of the formation's reference point in the scene's world
    frame (ECI axes, origin at the chief), advanced every physics step:

        a = n_R^2 (3 r (r . p) - p) - 1e3 a_feedback,

    the chief-relative point-mass gravity gradient (r = R/|R|, n_R^2 = mu/|R|^3) minus the
    chief's thrust feedback of the step just taken (km/s^2, as the bodies receive it). Zero at
    reset; runs with period 0 (every graph call). mu (km^3/s^2) is the scene's central body's
    unless given."""

    state_attrs = (*SceneNode.state_attrs, "pos", "vel", "started")

    output_names = ("reference_pos", "reference_vel")

    def __init__(
        self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv, mu_km3_s2: float | None = None
    ):
        super().__init__(cfg, name, env)
        self.view = env.scene.view
        self.mu = env.scene.cfg.orbit.central_body.gm if mu_km3_s2 is None else mu_km3_s2
        self.pos = torch.zeros((self.num_envs, 3), dtype=torch.float64, device=self.device)
        self.vel = torch.zeros((self.num_envs, 3), dtype=torch.float64, device=self.device)
        self.started = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)

    def reset_state(self, worlds):
        self.pos[worlds] = 0.0
        self.vel[worlds] = 0.0
        self.started[worlds] = False

    def compute(self, inputs):
        R = self.view.array("R").to(torch.float64)
        r_norm = R.norm(dim=-1, keepdim=True)
        r_hat = R / r_norm
        n2 = self.mu / r_norm**3
        accel = n2 * (3.0 * r_hat * (r_hat * self.pos).sum(-1, keepdim=True) - self.pos)
        accel = accel - 1.0e3 * self.view.array("a_feedback").to(torch.float64)
        step = self.started[:, None]  # the first call after a reset has no step behind it
        self.vel = torch.where(step, self.vel + accel * self.dt_s, self.vel)
        self.pos = torch.where(step, self.pos + self.vel * self.dt_s, self.pos)
        self.started[:] = True
        return {"reference_pos": self.pos.clone(), "reference_vel": self.vel.clone()}


class LeaderWaypointNode(SceneNode):
    """The leader's Hill-frame state relative to the active waypoint (truth, from the reference
    point), its target attitude (the waypoint's, body -> ECI) and hill_to_body (its star
    tracker). Outputs: rel_pos (N, 3) m, rel_vel (N, 3) m/s, target_attitude (N, 4),
    hill_to_body (N, 3, 3)."""

    input_names = ("reference_pos", "reference_vel", "star_tracker")
    output_names = ("rel_pos", "rel_vel", "target_attitude", "hill_to_body")

    def __init__(
        self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv, command: str = "waypoint"
    ) -> None:
        super().__init__(cfg, name, env)
        self.env, self.command = env, command

    def compute(self, inputs):
        env = self.env
        C, omega = env.scene.view.hill()
        pos = env.scene.entities[geo.LEADER].data.root_pos_w.double()
        vel = env.scene.entities[geo.LEADER].data.root_lin_vel_w.double()
        rho, rho_dot = geo.to_hill(
            C, omega, pos - inputs["reference_pos"], vel - inputs["reference_vel"]
        )
        waypoint = env.command_manager.command(self.command)
        return {
            "rel_pos": rho - waypoint[:, :3],
            "rel_vel": rho_dot,
            "target_attitude": geo.hill_to_eci_quat(
                C, waypoint[:, 3:7], geo.hill_eci_quat_of(env.scene.view)
            ),
            "hill_to_body": geo.hill_to_body(C, inputs["star_tracker"]),
        }


class FollowerSlotNode(SceneNode):
    """A follower's slot error from its own sensors. Inputs: relative_nav (N, 10) to the leader,
    star_tracker (N, 4). Outputs: rel_pos = rho_f - rho_leader - offset (m), rel_vel (m/s),
    Hill axes; target_attitude = the leader's attitude, body -> ECI (N, 4); hill_to_body."""

    input_names = ("relative_nav", "star_tracker")
    output_names = ("rel_pos", "rel_vel", "target_attitude", "hill_to_body")

    def __init__(self, cfg: FollowerSlotCfg, name: str, env: ManagerBasedRLEnv) -> None:
        super().__init__(cfg, name, env)
        self.view = env.scene.view
        self.offset = torch.as_tensor(cfg.offset_m, dtype=torch.float64, device=self.device)

    def compute(self, inputs):
        C, _ = self.view.hill()
        nav = inputs["relative_nav"]
        return {
            "rel_pos": -nav[:, :3] - self.offset,
            "rel_vel": -nav[:, 3:6],
            "target_attitude": geo.hill_to_eci_quat(
                C, nav[:, 6:10], geo.hill_eci_quat_of(self.view)
            ),
            "hill_to_body": geo.hill_to_body(C, inputs["star_tracker"]),
        }


@dataclass(kw_only=True)
class FollowerSlotCfg(NodeCfg):
    """A follower's slot estimator (`FollowerSlotNode`)."""

    class_type: type | None = FollowerSlotNode
    offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The slot relative to the leader, Hill axes, m."""


def _flyer_chain(
    env: ManagerBasedRLEnv, entity: str, gains: FlyerGains, period_s: float
) -> list[Node]:
    """CW-LQR + quaternion PD -> body wrench -> thruster forces of `entity`."""
    w, J = gains.attitude_bandwidth_rad_s, geo.INERTIA_KGM2

    def key(name: str) -> str:
        return f"{entity}/{name}"

    lqr = CwLqrCfg(
        mean_motion_rad_s=mean_motion(geo.ORBIT_A_KM, env.scene.cfg.orbit.central_body.gm),
        mass_kg=geo.MASS_KG,
        q_pos=gains.q_pos,
        q_vel=gains.q_vel,
        r_force=gains.r_force,
        max_force_n=gains.max_force_n,
        period_s=period_s,
        inputs={"rel_pos": key("rel_pos"), "rel_vel": key("rel_vel")},
        outputs={"force_hill": key("force_hill")},
    ).build(f"{entity}_lqr", env)
    pd = QuaternionPDCfg(
        kp_nm=2.0 * J * w * w,
        kd_nms=2.0 * 0.9 * w * J,
        inertia_kgm2=(J, J, J),
        max_torque_nm=gains.max_torque_nm,
        period_s=period_s,
        inputs={
            "attitude": key("star_tracker"),
            "rate": key("gyro"),
            "target_attitude": key("target_attitude"),
        },
        outputs={"torque": key("torque")},
    ).build(f"{entity}_attitude", env)
    wrench = HillForceToBodyCfg(
        period_s=period_s,
        inputs={
            "force_hill": key("force_hill"),
            "hill_to_body": key("hill_to_body"),
            "torque": key("torque"),
        },
        outputs={"wrench_body": key("wrench_body")},
    ).build(f"{entity}_wrench", env)
    alloc = AllocationCfg(
        allocator=cast("ThrusterGroup", env.scene.actuators[key("rcs")]).allocator(),
        period_s=period_s,
        inputs={"wrench_body": key("wrench_body")},
        outputs={"thruster_force": key("thruster_force")},
    ).build(f"{entity}_allocation", env)
    return [lqr, pd, wrench, alloc]


def _slot_outputs(entity: str) -> dict[str, str]:
    return {k: f"{entity}/{k}" for k in ("rel_pos", "rel_vel", "target_attitude", "hill_to_body")}


def leader_nodes(env: ManagerBasedRLEnv, period_s: float = CONTROL_PERIOD_S) -> list[Node]:
    """Sensor tap, reference point and the leader's waypoint controller."""
    tap = NodeCfg(class_type=SensorTapNode, period_s=period_s).build("sensors", env)
    ref = NodeCfg(class_type=ReferencePointNode).build("reference", env)
    leader = NodeCfg(
        class_type=LeaderWaypointNode,
        period_s=period_s,
        inputs={"star_tracker": f"{geo.LEADER}/star_tracker"},
        outputs=_slot_outputs(geo.LEADER),
    ).build("leader_waypoint", env)
    return [tap, ref, leader, *_flyer_chain(env, geo.LEADER, LEADER_GAINS, period_s)]


def follower_nodes(
    env: ManagerBasedRLEnv, follower: str, period_s: float = CONTROL_PERIOD_S
) -> list[Node]:
    """The follower's slot estimate and its LQR/PD/allocation chain."""
    slot = FollowerSlotCfg(
        offset_m=geo.SLOT_OFFSETS_M[follower],
        period_s=period_s,
        inputs={
            "relative_nav": f"{follower}/relative_nav",
            "star_tracker": f"{follower}/star_tracker",
        },
        outputs=_slot_outputs(follower),
    ).build(f"{follower}_slot", env)
    return [slot, *_flyer_chain(env, follower, FOLLOWER_GAINS, period_s)]


VELOCITY_LOOP_TIME_CONSTANT_S = 2.0
"""Follower velocity loop of the velocity-command task: the slot error rate's error decays
with this time constant, s."""


def follower_attitude_nodes(
    env: ManagerBasedRLEnv,
    follower: str,
    period_s: float = CONTROL_PERIOD_S,
    velocity_loop: bool = False,
) -> list[Node]:
    """The follower's slot estimate, its attitude PD (to the leader's attitude) and the
    wrench/allocation chain, with the Hill force left to the value `<follower>/force_hill`:
    a policy's action (`GraphInputActionCfg`) provides it. With `velocity_loop`, the action is
    `<follower>/velocity_command` instead, the slot error's rate asked (Hill axes, m/s), and a
    proportional velocity loop on the follower's navigated slot error rate gives the force."""
    lqr, pd, wrench, alloc = _flyer_chain(env, follower, FOLLOWER_GAINS, period_s)
    del lqr
    slot = FollowerSlotCfg(
        offset_m=geo.SLOT_OFFSETS_M[follower],
        period_s=period_s,
        inputs={
            "relative_nav": f"{follower}/relative_nav",
            "star_tracker": f"{follower}/star_tracker",
        },
        outputs=_slot_outputs(follower),
    ).build(f"{follower}_slot", env)
    if not velocity_loop:
        return [slot, pd, wrench, alloc]
    loop = VelocityLoopCfg(
        mass_kg=geo.MASS_KG,
        time_constant_s=VELOCITY_LOOP_TIME_CONSTANT_S,
        max_force_n=FOLLOWER_GAINS.max_force_n,
        period_s=period_s,
        inputs={
            "velocity_command": f"{follower}/velocity_command",
            "velocity": f"{follower}/rel_vel",
        },
        outputs={"force": f"{follower}/force_hill"},
    ).build(f"{follower}_velocity_loop", env)
    return [slot, loop, pd, wrench, alloc]


def leader_agent(env: ManagerBasedRLEnv):
    """Agent of the RL task: only the scripted leader (the policy flies the followers)."""
    graph = AgentGraph(leader_nodes(env))
    return graph, {f"{geo.LEADER}/thruster_force": f"{geo.LEADER}/rcs"}


def translation_policy_agent(env: ManagerBasedRLEnv, command: str = "force_hill"):
    """Agent of the translation-policy tasks: the scripted leader, and for each follower its
    attitude PD and allocation; the policy gives each follower's Hill-frame force
    (`command` 'force_hill') or the rate of its slot error ('velocity_command')."""
    if command not in ("force_hill", "velocity_command"):
        raise ValueError(f"command must be 'force_hill' or 'velocity_command', got '{command}'")
    nodes = leader_nodes(env)
    for f in geo.FOLLOWERS:
        nodes += follower_attitude_nodes(env, f, velocity_loop=command == "velocity_command")
    outputs = {f"{e}/thruster_force": f"{e}/rcs" for e in (geo.LEADER, *geo.FOLLOWERS)}
    inputs = [f"{f}/{command}" for f in geo.FOLLOWERS]
    return AgentGraph(nodes, external_inputs=inputs), outputs


def velocity_policy_agent(env: ManagerBasedRLEnv):
    """`translation_policy_agent` with velocity commands."""
    return translation_policy_agent(env, "velocity_command")


def baseline_agent(env: ManagerBasedRLEnv):
    """Baseline: the scripted leader plus CW-LQR + quaternion PD on each follower."""
    nodes = leader_nodes(env)
    for f in geo.FOLLOWERS:
        nodes += follower_nodes(env, f)
    outputs = {f"{e}/thruster_force": f"{e}/rcs" for e in (geo.LEADER, *geo.FOLLOWERS)}
    return AgentGraph(nodes), outputs


__all__ = [
    "CONTROL_PERIOD_S",
    "FOLLOWER_GAINS",
    "LEADER_GAINS",
    "SPEC_ATTITUDE_BANDWIDTH_RAD_S",
    "SPEC_Q_POS",
    "SPEC_Q_VEL",
    "SPEC_R_FORCE",
    "FlyerGains",
    "FollowerSlotNode",
    "LeaderWaypointNode",
    "ReferencePointNode",
    "SensorTapNode",
    "baseline_agent",
    "follower_attitude_nodes",
    "follower_nodes",
    "leader_agent",
    "leader_nodes",
    "translation_policy_agent",
    "velocity_policy_agent",
]
