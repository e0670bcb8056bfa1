"""Formation with NMPC followers (the seed study's controller): `nmpc_cfg(num_envs)`.

The baseline scenario (`formation_env_cfg.baseline_cfg`) with each follower's CW-LQR,
quaternion PD and Hill-to-body chain replaced by one `orbitlab.agent.nmpc.FormationNmpcNode`
(5 Hz, horizon 30 x 0.2 s, the spec's weights, the flyer's thruster pairs as exact input
bounds, keep-out from the leader and the other follower). The graph adds:

* `LeaderPlanNode`: the leader's shared predicted trajectory, (N, 31, 13). The leader here is
  the scripted CW-LQR + quaternion-PD agent, not an MPC; its plan is its own closed loop rolled
  out over the horizon (same gains, limits and waypoint schedule, on the NMPC's model), which
  is what the seed's leader shares (the solution of its OCP).
* `FollowerStateNode` per follower: its 13-state in the chief's Hill frame from its own
  sensors: the leader's current position from the shared plan minus the relative navigation
  (position, velocity), its star tracker (attitude, turned into Hill axes) and its gyro.

Not registered as a gym id (that would need an entry in `orbitlab_tasks.TASKS`); build it
directly: `ManagerBasedRLEnv(nmpc_cfg(1))`, see `scripts/formation_study.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from orbitlab.agent import AgentGraph, AllocationCfg, Node, NodeCfg, SceneNode
from orbitlab.agent.attitude import attitude_error, scale_to_norm
from orbitlab.agent.nmpc import (
    STATE_DIM,
    FormationNmpc,
    FormationNmpcNodeCfg,
    NmpcCfg,
)
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnvCfg
from orbitlab.sensors.rotations import quat_multiply, rotate
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.agents import CONTROL_PERIOD_S, leader_nodes
from orbitlab_tasks.formation.formation_env_cfg import baseline_cfg
from orbitlab_tasks.formation.nmpc_cfg import follower_nmpc_cfg

if TYPE_CHECKING:
    from orbitlab.actuators.thrusters import ThrusterGroup
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

NMPC_NODE = "formation_nmpc"
"""Name of the NMPC node in the graph (`env.agent.node(NMPC_NODE)`)."""


class LeaderPlanNode(SceneNode):
    """The leader's predicted states over the NMPC horizon, Hill frame of the chief.

    Start: the leader's true position and velocity (it is the scenario's scripted agent, as in
    `LeaderWaypointNode`), its star-tracker attitude in Hill axes and its gyro rate. Rollout:
    the leader's own law at every step (CW-LQR force toward reference point + waypoint of the
    schedule at that time, clipped per Hill axis, turned into body axes; quaternion PD torque,
    norm-limited), held for one step of `model` (the reference point drifts at its current
    Hill velocity). Inputs: reference_pos, reference_vel (ECI axes, m, m/s), star_tracker,
    gyro, force_hill, torque (the leader's commands of this update). Output: plan
    (N, H + 1, 13).
    """

    input_names = ("reference_pos", "reference_vel", "star_tracker", "gyro", "force_hill", "torque")
    output_names = ("plan",)

    def __init__(self, cfg: LeaderPlanCfg, name: str, env: ManagerBasedRLEnv) -> None:
        super().__init__(cfg, name, env)
        lqr, pd = cfg.lqr, cfg.attitude
        self.command, self.model = cfg.command, cfg.model
        self.K = lqr.K.detach().cpu().numpy()
        self.max_force = lqr.max_force.detach().cpu().numpy()
        self.kp, self.kd = pd.kp.cpu().numpy(), pd.kd.cpu().numpy()
        self.inertia = None if pd.inertia is None else pd.inertia.cpu().numpy()
        self.max_torque = pd.cfg.max_torque_nm
        self.steps = self.model.cfg.horizon_steps
        self.step_map = self.model.step.map(self.num_envs)

    def _law(
        self, x: np.ndarray, target_p: np.ndarray, target_v: np.ndarray, target_q: torch.Tensor
    ) -> np.ndarray:
        """(N, 6) body wrench of the leader's LQR + PD at states x (N, 13)."""
        error = np.concatenate([x[:, :3] - target_p, x[:, 3:6] - target_v], 1)
        force_hill = np.clip(-error @ self.K.T, -self.max_force, self.max_force)
        q = torch.as_tensor(x[:, 6:10])
        hill_to_body = geo.quat_to_matrix(q).transpose(-1, -2).numpy()
        force_body = np.einsum("nij,nj->ni", hill_to_body, force_hill)
        q_e = attitude_error(q, target_q).numpy()
        w = x[:, 10:13]
        torque = -self.kp * q_e[:, 1:] - self.kd * w
        if self.inertia is not None:
            torque = torque + np.cross(w, w @ self.inertia.T)
        torque = scale_to_norm(torch.as_tensor(torque), self.max_torque).numpy()
        return np.concatenate([force_body, torque], 1)

    def compute(self, inputs):
        env = self.env
        C, omega = env.scene.view.hill()
        leader = env.scene.entities[geo.LEADER]
        p, v = geo.to_hill(
            C, omega, leader.data.root_pos_w.double(), leader.data.root_lin_vel_w.double()
        )
        r, r_dot = geo.to_hill(C, omega, inputs["reference_pos"], inputs["reference_vel"])
        q = quat_multiply(geo.hill_quat_of(env.scene.view), inputs["star_tracker"].double())
        x = torch.cat([p, v, q, inputs["gyro"].double()], -1).cpu().numpy()
        term = env.command_manager.terms[self.command]
        table = term.table.cpu()
        k = env.episode_length_buf.cpu()
        r, r_dot = r.cpu().numpy(), r_dot.cpu().numpy()
        force_body = rotate(geo.quat_to_matrix(q).transpose(-1, -2), inputs["force_hill"])
        wrench = torch.cat([force_body, inputs["torque"]], -1).cpu().numpy()
        plan = np.empty((self.num_envs, self.steps + 1, STATE_DIM))
        plan[:, 0] = x
        dt = self.model.cfg.dt_s
        for n in range(self.steps):
            if n > 0:
                wp = table[((k + n) // term.hold_steps) % table.shape[0]].numpy()
                wrench = self._law(
                    x, r + r_dot * n * dt + wp[:, :3], r_dot, torch.as_tensor(wp[:, 3:7])
                )
            x = np.asarray(self.step_map(x.T, wrench.T)).T
            plan[:, n + 1] = x
        return {"plan": torch.as_tensor(plan, dtype=torch.float64, device=self.device)}


@dataclass(kw_only=True)
class LeaderPlanCfg(NodeCfg):
    """The leader's plan (`LeaderPlanNode`): the leader's own LQR and attitude nodes, whose
    gains it rolls out, and the NMPC model it rolls them out on."""

    class_type: type | None = LeaderPlanNode
    lqr: Any = None
    """The leader's `CwLqrNode`."""
    attitude: Any = None
    """The leader's `QuaternionPDNode`."""
    model: Any = None
    """A `FormationNmpc` without obstacles (its dynamics and horizon)."""
    command: str = "waypoint"
    """The waypoint command term the plan follows."""


class FollowerStateNode(SceneNode):
    """A follower's NMPC state (N, 13) from its own sensors and the leader's shared plan:
    p = p_leader - nav_pos, v = v_leader - nav_vel (Hill axes, m, m/s), q = its star tracker in
    Hill axes (body -> Hill), w = its gyro (rad/s, body). Inputs: relative_nav (N, 10),
    star_tracker (N, 4), gyro (N, 3), leader_plan (N, H + 1, 13). Output: state."""

    input_names = ("relative_nav", "star_tracker", "gyro", "leader_plan")
    output_names = ("state",)

    def __init__(self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv) -> None:
        super().__init__(cfg, name, env)
        self.view = env.scene.view

    def compute(self, inputs):
        nav, leader = inputs["relative_nav"].double(), inputs["leader_plan"][:, 0]
        q = quat_multiply(geo.hill_quat_of(self.view), inputs["star_tracker"].double())
        return {
            "state": torch.cat(
                [
                    leader[:, :3] - nav[:, :3],
                    leader[:, 3:6] - nav[:, 3:6],
                    q,
                    inputs["gyro"].double(),
                ],
                -1,
            )
        }


def nmpc_nodes(
    env: ManagerBasedRLEnv, nmpc: NmpcCfg | None = None, period_s: float = CONTROL_PERIOD_S
) -> list[Node]:
    """Leader plan, follower states, the NMPC node and each follower's allocation."""
    nmpc = nmpc or follower_nmpc_cfg()
    built = leader_nodes(env, period_s)
    by_name = {node.name: node for node in built}
    leader_model = FormationNmpc(replace(nmpc, num_obstacles=0))
    L = geo.LEADER
    plan = LeaderPlanCfg(
        lqr=by_name[f"{L}_lqr"],
        attitude=by_name[f"{L}_attitude"],
        model=leader_model,
        period_s=period_s,
        inputs={
            "star_tracker": f"{L}/star_tracker",
            "gyro": f"{L}/gyro",
            "force_hill": f"{L}/force_hill",
            "torque": f"{L}/torque",
        },
        outputs={"plan": f"{L}/plan"},
    ).build("leader_plan", env)
    nodes = [*built, plan]
    for f in geo.FOLLOWERS:
        nodes.append(
            NodeCfg(
                class_type=FollowerStateNode,
                period_s=period_s,
                inputs={
                    "relative_nav": f"{f}/relative_nav",
                    "star_tracker": f"{f}/star_tracker",
                    "gyro": f"{f}/gyro",
                    "leader_plan": f"{L}/plan",
                },
                outputs={"state": f"{f}/nmpc_state"},
            ).build(f"{f}_state", env)
        )
    inputs = {"leader_plan": f"{L}/plan"}
    inputs.update({f"state/{f}": f"{f}/nmpc_state" for f in geo.FOLLOWERS})
    outputs = {f"wrench/{f}": f"{f}/wrench_body" for f in geo.FOLLOWERS}
    outputs.update({f"plan/{f}": f"{f}/plan" for f in geo.FOLLOWERS})
    nodes.append(
        FormationNmpcNodeCfg(
            period_s=period_s,
            nmpc=nmpc,
            agents=geo.FOLLOWERS,
            slot_offsets_m=tuple(geo.SLOT_OFFSETS_M[f] for f in geo.FOLLOWERS),
            inputs=inputs,
            outputs=outputs,
        ).build(NMPC_NODE, env)
    )
    for f in geo.FOLLOWERS:
        nodes.append(
            AllocationCfg(
                allocator=cast("ThrusterGroup", env.scene.actuators[f"{f}/rcs"]).allocator(),
                period_s=period_s,
                inputs={"wrench_body": f"{f}/wrench_body"},
                outputs={"thruster_force": f"{f}/thruster_force"},
            ).build(f"{f}_allocation", env)
        )
    return nodes


def make_nmpc_agent(nmpc: NmpcCfg | None = None):
    """Agent factory (`cfg.agent`) for the scripted leader and NMPC followers."""

    def agent(env: ManagerBasedRLEnv):
        graph = AgentGraph(nmpc_nodes(env, nmpc))
        return graph, {f"{e}/thruster_force": f"{e}/rcs" for e in (geo.LEADER, *geo.FOLLOWERS)}

    return agent


def nmpc_cfg(num_envs: int = 1, nmpc: NmpcCfg | None = None) -> ManagerBasedRLEnvCfg:
    """Formation with NMPC followers (no actions); `nmpc` defaults to `follower_nmpc_cfg()`.
    Keep num_envs small: every world solves two NLPs per 0.2 s step on the CPU."""
    cfg = baseline_cfg(num_envs)
    cfg.agent = make_nmpc_agent(nmpc)
    return cfg


__all__ = [
    "NMPC_NODE",
    "FollowerStateNode",
    "LeaderPlanNode",
    "follower_nmpc_cfg",
    "make_nmpc_agent",
    "nmpc_cfg",
    "nmpc_nodes",
]
