"""Reach: a free-floating servicer brings its gripper to a moving grapple target.

The servicer (`arm_bus`: 70 kg, a 6-joint arm on a 60 kg bus) has no attitude or position
control of its own: every arm motion turns and shifts the bus (momentum is conserved), so
the gripper has to aim through the bus's reaction. Each episode starts with the arm in a
random bent pose and a target pose (a grapple fixture's approach frame) 0.95-1.15 m in front
of the bus, turned up to 20 deg from the bus's axes, drifting at up to 1 cm/s and turning at
up to 1 deg/s. Success: the gripper's grasp centre within 2 cm and its frame within 2 deg of
the target, held for 1 s (terminal). Baseline: resolved-rate control through the
generalized Jacobian (`orbitlab.scene.free_floating`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import torch

from orbitlab.actuators.joints import MujocoActuatorGroupCfg
from orbitlab.agent import AgentGraph, NodeCfg, SceneNode
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
from orbitlab.managers.action_manager import JointVelocityActionCfg
from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.scene import spacecraft
from orbitlab.scene.entities import MarkerCfg
from orbitlab.scene.free_floating import FIELDS, FreeFloating, damped_least_squares
from orbitlab.scene.scene import SceneCfg
from orbitlab.scene.spacecraft import ARM_JOINTS
from orbitlab.sensors.rotations import (
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_multiply,
    quat_to_matrix,
    rotation_vector_from_quat,
)

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0
READY_POSE_RAD = (0.0, -0.9, 1.8, -0.9, 0.0, 0.0)
"""The bent pose episodes start around, rad (the gripper about 1.05 m in front of the bus)."""
MAX_JOINT_RATE_RAD_S = 0.5
"""The joints' rate limit: the action's scale, rad/s."""
TARGET_BOX_M = ((0.95, -0.25, -0.25), (1.15, 0.25, 0.25))
"""Where targets start, bus axes from the bus's centre (low, high), m."""
TARGET_TILT_RAD = 20.0 * DEG
"""Largest angle between a target's frame and the bus's axes at the start."""
TARGET_DRIFT_MPS = 0.01
"""Largest drift speed of a target, m/s."""
TARGET_TURN_RAD_S = 1.0 * DEG
"""Largest turn rate of a target, rad/s."""
POSITION_TOL_M = 0.02
ANGLE_TOL_RAD = 2.0 * DEG
HOLD_S = 1.0
DAMPING = 0.05
"""Damping of the least-squares inverse of the gripper's Jacobian (m, rad)."""
BOT = SceneEntityCfg("bot")
"""The servicer."""


class GrappleTarget(CommandTerm):
    """The target pose of the gripper's grasp frame: position (m, world) and attitude
    quaternion (w, x, y, z) of the frame whose +x the gripper points along, (N, 7). Drawn at
    reset in front of the servicer's bus, then drifting and turning at constant rates."""

    cfg: GrappleTargetCfg
    state_attrs = (*CommandTerm.state_attrs, "pose", "velocity", "turn_rate")

    def __init__(self, cfg: GrappleTargetCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        kw = {"dtype": torch.float64, "device": env.device}
        self.pose = torch.zeros((env.num_envs, 7), **kw)
        self.pose[:, 3] = 1.0
        self.velocity = torch.zeros((env.num_envs, 3), **kw)
        """Drift velocity, m/s, world axes."""
        self.turn_rate = torch.zeros((env.num_envs, 3), **kw)
        """Angular velocity, rad/s, world axes."""
        self.marker = env.scene.markers.get("target")

    @property
    def command(self) -> torch.Tensor:
        return self.pose

    takes_masks = True

    def resample(self, worlds) -> None:
        kw = {"dtype": torch.float64, "device": self.env.device}
        entity = self.cfg.entity
        bus_pos = self.rows(entity.data.root_pos_w, worlds).to(torch.float64)
        bus_quat = self.rows(entity.data.root_quat_w, worlds).to(torch.float64)
        low, high = (torch.tensor(b, **kw) for b in TARGET_BOX_M)
        offset = self.draw_uniform(worlds, low, high)
        position = bus_pos + (quat_to_matrix(bus_quat) @ offset[..., None])[..., 0]
        tilt = _random_rotation_vector(self, worlds, TARGET_TILT_RAD)
        quat = quat_multiply(bus_quat, quat_from_rotation_vector(tilt))
        self.assign(self.pose, worlds, torch.cat((position, quat), -1))
        self.assign(self.velocity, worlds, _random_rotation_vector(self, worlds, TARGET_DRIFT_MPS))
        self.assign(
            self.turn_rate, worlds, _random_rotation_vector(self, worlds, TARGET_TURN_RAD_S)
        )

    def update(self, dt: float) -> None:
        self.pose[:, :3] += self.velocity * dt
        turned = quat_multiply(quat_from_rotation_vector(self.turn_rate * dt), self.pose[:, 3:])
        self.pose[:, 3:] = turned / turned.norm(dim=-1, keepdim=True)
        if self.marker is not None:
            worlds = self.env.scene.all_worlds
            self.marker.set_pose(worlds, pos_m=self.pose[:, :3], quat=self.pose[:, 3:])


def _random_rotation_vector(term: CommandTerm, worlds, largest: float) -> torch.Tensor:
    """A vector along a uniformly random direction with a length uniform in [0, largest]."""
    direction = term.draw_normal(worlds, 3)
    direction = direction / direction.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    return direction * term.draw_uniform(worlds, 0.0, largest)[:, None]


@dataclass(kw_only=True)
class GrappleTargetCfg(CommandTermCfg):
    """`GrappleTarget`: targets in front of the servicer `entity`."""

    class_type: type = GrappleTarget
    entity: SceneEntityCfg


def target_term(env: ManagerBasedRLEnv) -> GrappleTarget:
    """The env's `GrappleTarget` command term (named 'target')."""
    return cast("GrappleTarget", env.command_manager.terms["target"])


# ------------------------------------------------------------------ the gripper's state
def _site_id(env: ManagerBasedRLEnv) -> int:
    return env.scene.site_id("bot/grasp")


def grasp_pose(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(position (N, 3), m; rotation grasp frame to world (N, 3, 3)) of the gripper."""

    def compute():
        site = _site_id(env)
        view = env.scene.view
        position = view.array("site_xpos")[:, site].to(torch.float64)
        rotation = view.array("site_xmat")[:, site].reshape(-1, 3, 3).to(torch.float64)
        return position, rotation

    return env.scene.view.memo("reach/grasp_pose", compute)


def pose_error(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(target minus grasp position, m; rotation vector taking the grasp frame to the
    target's, rad), both world axes, (N, 3) each."""

    def compute():
        position, rotation = grasp_pose(env)
        target = env.command_manager.command("target")
        error_rot = quat_to_matrix(target[:, 3:]) @ rotation.transpose(-1, -2)
        return target[:, :3] - position, rotation_vector_from_quat(quat_from_matrix(error_rot))

    return env.scene.view.memo("reach/pose_error", compute)


def position_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """|target - grasp centre|, m."""
    return pose_error(env)[0].norm(dim=-1)


def angle_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Angle between the grasp frame and the target's, rad."""
    return pose_error(env)[1].norm(dim=-1)


def reached(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Within 2 cm and 2 deg of the target."""
    return (position_error(env) < POSITION_TOL_M) & (angle_error(env) < ANGLE_TOL_RAD)


def _in_bus_axes(env: ManagerBasedRLEnv, world: torch.Tensor) -> torch.Tensor:
    rotation = env.scene.entities["bot"].data.root_rot_mat_w.to(torch.float64)
    return (rotation.transpose(-1, -2) @ world[..., None])[..., 0]


def position_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Target minus grasp centre in the bus's axes, m, (N, 3)."""
    return _in_bus_axes(env, pose_error(env)[0])


def angle_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Rotation vector from the grasp frame to the target's in the bus's axes, rad, (N, 3)."""
    return _in_bus_axes(env, pose_error(env)[1])


def target_motion_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The target's drift and turn rate in the bus's axes, each over its largest value
    (1 cm/s, 1 deg/s), (N, 6)."""
    term = target_term(env)
    drift = _in_bus_axes(env, term.velocity) / TARGET_DRIFT_MPS
    return torch.cat((drift, _in_bus_axes(env, term.turn_rate) / TARGET_TURN_RAD_S), -1)


class ArmJacobian:
    """The gripper's Jacobian over the six arm joints, (N, 6, 6): [v (m/s); w (rad/s)] per
    unit joint rate, world axes, generalized (zero momentum, the bus's reaction included)
    or fixed-base (`free_floating=False`); computed at most once per state."""

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        self.free = FreeFloating(env.scene.mj_model, "bot/bus", device=env.device)
        dofs = self.free.dofs.tolist()
        arm = _arm_columns(env, "qvel").tolist()
        self.columns = torch.as_tensor([dofs.index(d) - 6 for d in arm], device=env.device)
        self.hand = int(env.scene.mj_model.site_bodyid[_site_id(env)])

    def __call__(self, free_floating: bool = True) -> torch.Tensor:
        return self.env.scene.view.memo(
            ("reach/arm_jacobian", free_floating), lambda: self._compute(free_floating)
        )

    def _compute(self, free_floating: bool) -> torch.Tensor:
        view = self.env.scene.view
        kin = self.free.kinematics({name: view.array(name).to(torch.float64) for name in FIELDS})
        position, _ = grasp_pose(self.env)
        jacobian = self.free.point_jacobian(kin, self.hand, position)
        if free_floating:
            return self.free.generalized_jacobian(kin, jacobian)[..., self.columns]
        return jacobian[..., 6:][..., self.columns]


class joint_space_error:
    """The joint motion (rad) that would close the pose error at zero momentum,
    J*^+ [position error; angle error] (damped least squares through the generalized
    Jacobian), (N, 6): the operational-space error as the joints see it. Param `error`:
    env -> (position error m, rotation vector rad), world axes, (N, 3) each (default this
    task's `pose_error`; another task passes its own target's)."""

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.jacobian = ArmJacobian(env)

    def __call__(self, env: ManagerBasedRLEnv, error=pose_error) -> torch.Tensor:
        def compute():
            dp, dr = error(env)
            return damped_least_squares(self.jacobian(), torch.cat((dp, dr), -1), DAMPING)

        return env.scene.view.memo(("reach/joint_space_error", error), compute)


def _arm_columns(env: ManagerBasedRLEnv, kind: str) -> torch.Tensor:
    m = env.scene.mj_model
    joints = [m.joint(f"bot/{name}") for name in ARM_JOINTS]
    adr = [int(j.qposadr[0] if kind == "qpos" else j.dofadr[0]) for j in joints]
    return torch.as_tensor(adr, dtype=torch.long, device=env.device)


def joint_pos(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The arm's joint angles, rad, (N, 6)."""
    return env.scene.view.array("qpos")[:, _arm_columns(env, "qpos")].to(torch.float64)


def joint_vel(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The arm's joint rates, rad/s, (N, 6)."""
    return env.scene.view.array("qvel")[:, _arm_columns(env, "qvel")].to(torch.float64)


def joint_vel_l2(env: ManagerBasedRLEnv) -> torch.Tensor:
    """|joint rates|^2, (rad/s)^2."""
    return joint_vel(env).square().sum(-1)


def kernel(value: torch.Tensor, sigma: float) -> torch.Tensor:
    """1 - exp(-value / sigma): a cost in [0, 1) that is steep within ~sigma of zero."""
    return 1.0 - torch.exp(-value / sigma)


def position_kernel(env: ManagerBasedRLEnv, sigma: float) -> torch.Tensor:
    """1 - exp(-position error / sigma), sigma in m."""
    return kernel(position_error(env), sigma)


def angle_kernel(env: ManagerBasedRLEnv) -> torch.Tensor:
    return kernel(angle_error(env), ANGLE_TOL_RAD)


def hold_progress(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Fraction of the success hold accumulated so far, (N, 1) (privileged)."""
    term = env.termination_manager.term_funcs["success"]
    return (term.held_s / HOLD_S).to(torch.float32)[:, None]


# ------------------------------------------------------------------------------ the env
def servicer():
    """The arm bus with its arm's six servos as one group and its gyro; no wheels driven."""
    bot = spacecraft.arm_bus()
    bot.actuators = {"arm": MujocoActuatorGroupCfg(elements=list(ARM_JOINTS))}
    return bot


def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """0.01 s physics, 0.05 s per action, episodes of up to 20 s."""
    gyro = {"sensor_cfg": SceneEntityCfg("bot", sensor_names=("gyro",))}
    policy = {
        "joint_pos": ObservationTermCfg(func=joint_pos),
        "joint_vel": ObservationTermCfg(func=joint_vel, scale=1.0 / MAX_JOINT_RATE_RAD_S),
        "position_error": ObservationTermCfg(func=position_error_b, scale=1.0 / 0.3),
        "position_error_fine": ObservationTermCfg(
            func=position_error_b, scale=1.0 / 0.03, clip=(-1.0, 1.0)
        ),
        "angle_error": ObservationTermCfg(func=angle_error_b, scale=1.0 / (30.0 * DEG)),
        "angle_error_fine": ObservationTermCfg(
            func=angle_error_b, scale=1.0 / (3.0 * DEG), clip=(-1.0, 1.0)
        ),
        "target_motion": ObservationTermCfg(func=target_motion_b),
        "joint_error": ObservationTermCfg(func=joint_space_error, scale=1.0 / 0.3),
        "joint_error_fine": ObservationTermCfg(
            func=joint_space_error, scale=1.0 / 0.03, clip=(-1.0, 1.0)
        ),
        "bus_rate": ObservationTermCfg(func=kt.sensor_value, params=gyro, scale=1.0 / (2.0 * DEG)),
        "last_action": ObservationTermCfg(func=kt.last_action),
    }
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=num_envs,
            entities={"bot": servicer()},
            markers={"target": MarkerCfg(shape="frame", size_m=(0.1, 0.005))},
            timestep_s=0.01,
            # Measured peaks per world (`orbitlab bench mode=contacts`, 64 worlds, 2026-12-06):
            # no contact, 5 broadphase candidates (links beside the bus); twice that, and
            # 4 rows for each of those contacts plus the joint limits.
            contacts_per_world=16,
            constraint_rows_per_world=80,
        ),
        decimation=5,
        episode_length_s=20.0,
        actions={
            "arm": JointVelocityActionCfg(
                group="bot/arm", scale=MAX_JOINT_RATE_RAD_S, end_effector="bot/grasp"
            ),
        },
        commands={"target": GrappleTargetCfg(entity=BOT)},
        observations={
            "policy": ObservationGroupCfg(terms=policy),
            "critic": ObservationGroupCfg(
                enable_noise=False,
                terms={**policy, "hold": ObservationTermCfg(func=hold_progress)},
            ),
        },
        # every term is a cost (<= 0), so ending the episode by success is always welcome
        rewards={
            "position": RewardTermCfg(func=position_error, weight=-5.0),
            "position_near": RewardTermCfg(
                func=position_kernel, weight=-1.0, params={"sigma": 0.1}
            ),
            "position_fine": RewardTermCfg(
                func=position_kernel, weight=-1.0, params={"sigma": POSITION_TOL_M}
            ),
            "angle": RewardTermCfg(func=angle_error, weight=-0.5),
            "angle_fine": RewardTermCfg(func=angle_kernel, weight=-1.0),
            "joint_vel": RewardTermCfg(func=joint_vel_l2, weight=-0.05),
            "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.05),
        },
        terminations={
            "success": TerminationTermCfg(
                func=mdp.held_for, params={"condition": reached, "duration_s": HOLD_S}
            )
        },
        events={
            "orbit": EventTermCfg(func=mdp.randomize_orbit, mode="reset"),
            "attitude": EventTermCfg(
                func=mdp.reset_root_attitude, mode="reset", params={"entity": BOT}
            ),
            "arm": EventTermCfg(
                func=mdp.reset_joints_uniform,
                mode="reset",
                params={
                    "entity": BOT,
                    "joints": ARM_JOINTS,
                    "low_rad": tuple(q - 0.2 for q in READY_POSE_RAD),
                    "high_rad": tuple(q + 0.2 for q in READY_POSE_RAD),
                },
            ),
        },
    )


# ------------------------------------------------------------------------ the baseline
class ResolvedRateNode(SceneNode):
    """Resolved-rate control through the generalized Jacobian, from the true state.

    The commanded gripper twist is the target's own plus `gain` times the pose error
    (capped at 0.1 m/s and 0.3 rad/s); the joint rates are J*^+ of it (damped least squares,
    J* the arm's generalized Jacobian at zero momentum, `orbitlab.scene.free_floating`),
    capped at the rate limit and integrated into the servos' targets.
    """

    state_attrs = (*SceneNode.state_attrs, "target")
    output_names = ("joint_target",)

    def __init__(
        self,
        cfg: NodeCfg,
        name: str,
        env: ManagerBasedRLEnv,
        gain: float = 1.0,
        free_floating: bool = True,
    ):
        super().__init__(cfg, name, env)
        self.gain = gain
        self.free_floating = free_floating
        """False: the fixed-base Jacobian J_m, blind to the bus's reaction (for comparison)."""
        self.jacobian = ArmJacobian(env)
        self.target = joint_pos(env).clone()

    def reset_state(self, worlds):
        self.target[worlds] = joint_pos(self.env)[worlds]

    def compute(self, inputs):
        dp, dr = pose_error(self.env)
        term = target_term(self.env)
        v = term.velocity + self.gain * dp
        w = term.turn_rate + self.gain * dr
        v = v * (0.1 / v.norm(dim=-1, keepdim=True).clamp(min=0.1))
        w = w * (0.3 / w.norm(dim=-1, keepdim=True).clamp(min=0.3))
        twist = torch.cat((v, w), -1)
        rates = damped_least_squares(self.jacobian(self.free_floating), twist, DAMPING)
        rates = rates.clamp(-MAX_JOINT_RATE_RAD_S, MAX_JOINT_RATE_RAD_S)
        due = self.due[:, None]
        moved = self.target + rates * self.update_period_s
        self.target.copy_(torch.where(due, moved, self.target))
        return {"joint_target": self.target}


def resolved_rate_agent(env: ManagerBasedRLEnv):
    """The resolved-rate node at the action rate (20 Hz) driving the arm's servos."""
    node = NodeCfg(class_type=ResolvedRateNode, period_s=env.step_dt).build("resolved_rate", env)
    return AgentGraph([node]), {"joint_target": "bot/arm"}


def baseline_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    cfg = env_cfg(num_envs)
    cfg.actions = {}
    cfg.agent = resolved_rate_agent
    for group in ("policy", "critic"):
        cfg.observations[group].terms.pop("last_action")
    return cfg


def teleop_status(env: ManagerBasedRLEnv):
    """The recorder's status line: the gripper's position error (cm) and angle error (deg)
    to the target (success: < 2 cm and < 2 deg held 1 s)."""
    from orbitlab.demos.status import Measure, TaskReading

    return TaskReading(
        errors=(
            Measure("position", "cm", 100.0 * position_error(env), digits=1),
            Measure("angle", "deg", torch.rad2deg(angle_error(env)), digits=1),
        )
    )
