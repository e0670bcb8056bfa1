"""Capture's scripted baseline: synchronise with the tumbling client, reach, latch, detumble.

Two true-state nodes at the env step (20 Hz, the RCS's PWM period), per world: the bus's
(`SynchronisedBusNode`, steps 1 and 4) and the arm's (`ReachAndLatchNode`, steps 2 and 3).

1. **Synchronise and close in.** The servicer bus flies a reference pose fixed in the
   client's tumbling frame: the pose from which the arm's ready pose would put the grasp
   centre on the target, backed off along the target's axis by a standoff. The standoff
   starts where the episode placed the servicer and shrinks at `APPROACH_SPEED_MPS` once the
   bus tracks its reference (within `SYNC_TOLERANCE`). The bus wrench is a PD law on the
   pose error with the reference's centripetal acceleration as feed-forward (mass 70 kg,
   inertia 8 kg m^2), allocated to the RCS.
2. **Reach.** Once the standoff is zero the arm runs resolved-rate control on the
   remaining pose error and relative motion (the bus, held by its own loop, is treated as
   a fixed base: the fixed-base Jacobian).
3. **Latch.** Inside the capture envelope the gripper closes, which latches.
4. **Detumble.** Latched, the arm holds its joints and the RCS damps the stack's rate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from orbitlab.agent import AgentGraph, NodeCfg, SceneNode
from orbitlab.agent.mapping import AllocationCfg
from orbitlab.scene.free_floating import damped_least_squares
from orbitlab.sensors.rotations import quat_from_matrix, rotation_vector_from_quat
from orbitlab_tasks.capture import mdp
from orbitlab_tasks.docking.agent import PulseModulatorCfg
from orbitlab_tasks.reach.reach_env_cfg import ArmJacobian, joint_pos

if TYPE_CHECKING:
    from orbitlab.actuators.thrusters import ThrusterGroup
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

SERVICER_MASS_KG = 70.0
SERVICER_INERTIA_KGM2 = 8.0
"""The inertia the attitude loop's gains are scaled by (bus 3.6 kg m^2 plus the arm held
out in the ready pose, about the servicer's centre of mass, rounded up), kg m^2."""
POSITION_GAINS = (0.4, 1.2)
"""Translation loop: (stiffness 1/s^2, damping 1/s) per unit mass."""
ATTITUDE_GAINS = (0.6, 1.6)
"""Attitude loop: (stiffness 1/s^2, damping 1/s) per unit inertia."""
MAX_FORCE_N = 15.0
MAX_TORQUE_NM = 2.5
APPROACH_SPEED_MPS = 0.1
"""How fast the standoff shrinks, m/s."""
SYNC_TOLERANCE = (0.1, 0.05, 5.0 * mdp.DEG)
"""The bus tracks its reference within (position m, speed m/s, angle rad)."""
REACH_GAIN = 1.0
"""Resolved rate: commanded relative twist per unit pose error, 1/s."""
MAX_JOINT_RATE_RAD_S = 0.5
STACK_DAMPING_NMS = 60.0
"""Latched: RCS torque per unit stack rate, N m s (capped at `MAX_TORQUE_NM`)."""
ARM_DAMPING = 0.05
"""Damping of the least-squares inverse of the arm's Jacobian."""


class SynchronisedBusNode(SceneNode):
    """Steps 1 and 4 of the module docstring: the bus's wrench, synchronised with the client
    and closing in while unlatched, damping the stack's rate once latched. Outputs:
    wrench_body (N, 6) [N, N m] for the RCS allocation, standoff_m (N, 1) the standoff of
    the reference pose, synced (N, 1) 1 where the bus tracks its reference."""

    state_attrs = (*SceneNode.state_attrs, "standoff")
    output_names = ("wrench_body", "standoff_m", "synced")

    def __init__(self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv):
        super().__init__(cfg, name, env)
        self.grasp_b, self.grasp_rot_b = mdp.ready_grasp_in_bus(env)
        self.standoff = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def reset_state(self, worlds):
        grasp = mdp.grasp_state(self.env)["pos"][worlds]
        target = mdp.target_state(self.env)
        along = ((target["pos"][worlds] - grasp) * target["rot"][worlds][..., 0]).sum(-1)
        self.standoff[worlds] = along.clamp(min=0.0)

    def compute(self, inputs):
        env, dt = self.env, self.update_period_s
        bus = bus_state(env)
        target, client = mdp.target_state(env), mdp.client_state(env)
        latched = mdp.latched(env)

        # the bus's reference pose in the client's tumbling frame
        axis = target["rot"][..., 0]
        ref_rot = target["rot"] @ self.grasp_rot_b.transpose(-1, -2)
        offset = -(ref_rot @ self.grasp_b[:, None])[..., 0] - self.standoff[:, None] * axis
        omega = target["omega"]
        ref_pos = target["pos"] + offset
        ref_vel = target["vel"] + torch.cross(omega, offset, dim=-1)
        lever = ref_pos - client["pos"]
        ref_acc = torch.cross(omega, torch.cross(omega, lever, dim=-1), dim=-1)
        pos_err, vel_err = ref_pos - bus["pos"], ref_vel - bus["vel"]
        turn = rotation_vector_from_quat(quat_from_matrix(ref_rot @ bus["rot"].transpose(-1, -2)))
        kp, kd = POSITION_GAINS
        force = SERVICER_MASS_KG * (ref_acc + kp * pos_err + kd * vel_err)
        ka, kw = ATTITUDE_GAINS
        torque = SERVICER_INERTIA_KGM2 * (ka * turn + kw * (omega - bus["omega"]))
        synced = (
            (pos_err.norm(dim=-1) < SYNC_TOLERANCE[0])
            & (vel_err.norm(dim=-1) < SYNC_TOLERANCE[1])
            & (turn.norm(dim=-1) < SYNC_TOLERANCE[2])
        )
        closer = (self.standoff - APPROACH_SPEED_MPS * dt).clamp(min=0.0)
        self.standoff.copy_(torch.where(self.due & synced, closer, self.standoff))

        # latched: damp the stack's rate, no force
        torque = torch.where(latched[:, None], -STACK_DAMPING_NMS * bus["omega"], torque)
        force = torch.where(latched[:, None], 0.0, force)
        force = force * (MAX_FORCE_N / force.norm(dim=-1, keepdim=True).clamp(min=MAX_FORCE_N))
        torque = torque * (
            MAX_TORQUE_NM / torque.norm(dim=-1, keepdim=True).clamp(min=MAX_TORQUE_NM)
        )
        to_body = bus["rot"].transpose(-1, -2)
        wrench = torch.cat(
            ((to_body @ force[..., None])[..., 0], (to_body @ torque[..., None])[..., 0]), -1
        )
        return {
            "wrench_body": wrench,
            "standoff_m": self.standoff[:, None],
            "synced": synced.to(torch.float64)[:, None],
        }


class ReachAndLatchNode(SceneNode):
    """Steps 2 and 3 of the module docstring: resolved-rate reach once the bus is synchronised
    at zero standoff, the gripper closed inside the capture envelope, the joints held once
    latched. Inputs: standoff_m, synced (`SynchronisedBusNode`). Outputs: joint_target
    (N, 6) rad for the arm's servos, gripper (N, 1) m."""

    state_attrs = (*SceneNode.state_attrs, "target")
    input_names = ("standoff_m", "synced")
    output_names = ("joint_target", "gripper")

    def __init__(self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv):
        super().__init__(cfg, name, env)

        self.jacobian = ArmJacobian(env)
        self.target = joint_pos(env).clone()

    def reset_state(self, worlds):
        self.target[worlds] = joint_pos(self.env)[worlds]

    def compute(self, inputs):
        env = self.env
        latched = mdp.latched(env)
        twist = reach_twist(env)
        rates = damped_least_squares(self.jacobian(free_floating=False), twist, ARM_DAMPING)
        rates = rates.clamp(-MAX_JOINT_RATE_RAD_S, MAX_JOINT_RATE_RAD_S)
        ready = (inputs["standoff_m"][:, 0] <= 0.0) & (inputs["synced"][:, 0] > 0.5)
        moved = self.target + rates * self.update_period_s
        reaching = self.due & ready & ~latched
        self.target.copy_(torch.where(reaching[:, None], moved, self.target))
        close = latched | mdp.in_capture_envelope(env)
        gripper = torch.where(close, 0.0, mdp.GRIPPER_OPEN_M)[:, None]
        return {"joint_target": self.target, "gripper": gripper}


def reach_twist(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The gripper twist the reach commands, on top of the bus's own motion: the target's
    motion relative to a rigid arm plus `REACH_GAIN` times the pose error, world axes,
    (N, 6) [m/s, rad/s]."""
    bus, target, grasp = bus_state(env), mdp.target_state(env), mdp.grasp_state(env)
    dp, dr = mdp.pose_error(env)
    rigid_vel = bus["vel"] + torch.cross(bus["omega"], grasp["pos"] - bus["pos"], dim=-1)
    return torch.cat(
        (
            target["vel"] - rigid_vel + REACH_GAIN * dp,
            target["omega"] - bus["omega"] + REACH_GAIN * dr,
        ),
        -1,
    )


class CapturePilot:
    """Capture-Arm's scripted operator (`orbitlab.devices.pilot`), flying the teleop device
    as a person would: the device idle (the arm at its ready pose) until the bus's loop
    has closed in to zero standoff, then the gripper's twist (`reach_twist`, in the bus's
    axes and the device's units, `orbitlab.demos.teleop.ARM_SPEED_MPS` / `ARM_RATE_RAD_S`,
    clipped to [-1, 1]); the grip button once inside the capture envelope; the device idle
    again once latched. World 0 (the recorder's one world)."""

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        graph = env.agent.nodes if env.agent is not None else []
        nodes = [n for n in graph if isinstance(n, SynchronisedBusNode)]
        if not nodes:
            raise ValueError("CapturePilot needs the bus's synchronised loop (Capture-Arm)")
        self.bus = nodes[0]

    def __call__(self) -> tuple[list[float], list[str]]:
        from orbitlab.demos.teleop import ARM_RATE_RAD_S, ARM_SPEED_MPS

        env = self.env
        latched = bool(mdp.latched(env)[0])
        ready = bool(self.bus.standoff[0] <= 0.0) and not latched
        if not ready:
            return [0.0] * 6, []
        rotation = bus_state(env)["rot"][0]
        twist = reach_twist(env)[0]
        command = torch.cat(
            (
                rotation.T @ twist[:3] / ARM_SPEED_MPS,
                rotation.T @ twist[3:] / ARM_RATE_RAD_S,
            )
        ).clamp(-1.0, 1.0)
        is_open = bool(mdp.gripper_command(env)[0] >= 0.5 * mdp.GRIPPER_OPEN_M)
        grip = is_open and bool(mdp.in_capture_envelope(env)[0])
        return command.tolist(), ["grip"] if grip else []


def capture_pilot(env: ManagerBasedRLEnv) -> CapturePilot:
    """`CapturePilot` for `env` (the task registry's pilot factory)."""
    return CapturePilot(env)


def bus_state(env: ManagerBasedRLEnv) -> dict[str, torch.Tensor]:
    """The servicer bus's root state (`mdp.root_state`)."""
    return mdp.root_state(env, "bot")


def _rcs_nodes(env: ManagerBasedRLEnv) -> list:
    """The wrench's allocation to the RCS and Docking's sigma-delta pulse modulator."""
    rcs = cast("ThrusterGroup", env.scene.actuators["bot/rcs"])
    alloc = AllocationCfg(allocator=rcs.allocator(), period_s=env.step_dt).build("allocation", env)
    pulses = PulseModulatorCfg(
        max_force_n=tuple(float(x) for x in rcs.high[0]),
        period_s=env.step_dt,
        min_on_time_s=rcs.cfg.min_on_time_s,
    ).build("pulses", env)
    return [alloc, pulses]


def bus_agent(env: ManagerBasedRLEnv):
    """The synchronised bus loop alone (Capture-Arm: a policy flies the arm and gripper)."""
    bus = NodeCfg(class_type=SynchronisedBusNode, period_s=env.step_dt).build("bus", env)
    return AgentGraph([bus, *_rcs_nodes(env)]), {"rcs_force": "bot/rcs"}


def capture_agent(env: ManagerBasedRLEnv):
    """The scripted capture: the synchronised bus loop, the reach-and-latch node, the
    wrench's allocation to the RCS and its sigma-delta pulses (Docking's modulator)."""
    bus = NodeCfg(class_type=SynchronisedBusNode, period_s=env.step_dt).build("bus", env)
    arm = NodeCfg(class_type=ReachAndLatchNode, period_s=env.step_dt).build("arm", env)
    graph = AgentGraph([bus, arm, *_rcs_nodes(env)])
    return graph, {"rcs_force": "bot/rcs", "joint_target": "bot/arm", "gripper": "bot/gripper"}
