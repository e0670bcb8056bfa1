"""Capture's terms: the client's grapple fixture, the latching end effector, loads, success.

Frames (world axes unless named): the *target* is the pose the gripper's grasp frame (site
`bot/grasp`) must take to hold the client's grapple fixture: its origin is the fixture's
grapple point (site `client/grapple`, 3 cm inside the post's tip) and its +x runs along the
post into the client (the fixture's axes turned 180 deg about their y axis). The latch is the
weld `latch` of the scene (`orbitlab.scene.welds`), which holds the fixture at exactly that
pose in the hand once engaged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.scene.spacecraft import ARM_JOINTS
from orbitlab.sensors.rotations import (
    quat_from_matrix,
    quat_to_matrix,
    rotation_vector_from_quat,
)
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0
READY_POSE_RAD = (0.0, -0.9, 1.8, -0.9, 0.0, 0.0)
"""The arm's bent pose at the start of an episode, rad: the grasp centre ~1.06 m in front
of the bus."""
GRIPPER_OPEN_M = 0.04
"""The gripper's command when open: each finger's opening, m (0: closed)."""
FINGERS_AROUND_POST_M = 0.012
"""A finger opening at or above this means the fingers still surround the post (they stop
at ~0.015 m on it, 2 cm radius), m."""
TUMBLE_RATE_RAD_S = (1.0 * DEG, 5.0 * DEG)
"""The client's tumble rate at the start, about a uniformly random axis, rad/s."""
STANDOFF_M = (1.0, 3.0)
"""Distance from the gripper's grasp centre back along the target's axis to the grapple
point at the start, m (the servicer at rest, its axes the target's)."""
CAPTURE_ENVELOPE = {
    "position_m": 0.02,
    "angle_rad": 5.0 * DEG,
    "speed_mps": 0.05,
    "rate_rad_s": 5.0 * DEG,
}
"""Closing the gripper engages the latch only within this envelope of the target: grasp
centre within 2 cm and its frame within 5 deg, relative speed under 5 cm/s and relative
rate under 5 deg/s."""
LOAD_LIMIT = (50.0, 10.0)
"""Interface loads a held grasp must stay under through the success hold (force N, torque
N m at the wrist's force-torque sensor)."""
DAMAGE_LOAD = (200.0, 40.0)
"""Interface loads that end an episode as a failure (force N, torque N m)."""
STACK_RATE_RAD_S = 0.5 * DEG
"""The stack (servicer bus and client) counts as detumbled below this rate, rad/s."""
HOLD_S = 10.0
"""A success holds the latched grasp this long with loads under `LOAD_LIMIT`, s."""
RELEASE_HOLD_S = 0.5
"""The latch releases only after the gripper has been commanded open this long without a
break, s: a latching end effector's release is a deliberate sequence, not one sample of a
command (a noisy command around the threshold would otherwise latch and release every few
steps)."""
STRIKE_FORCE_N = 50.0
"""A contact force on the unlatched client above this ends an episode as a failure, N."""
LOST_RANGE_M = 8.0
"""Servicer bus to client centre beyond this ends an episode as a failure, m."""
FIXTURE_IN_HAND = ((0.19, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))
"""The latch's held pose: the fixture body's origin (m) and orientation (w, x, y, z) in the
hand body's frame (the post along -x of the hand, its grapple point on the grasp centre)."""
TARGET_IN_FIXTURE = torch.diag(torch.tensor([-1.0, 1.0, -1.0], dtype=torch.float64))
"""The target's axes in the fixture's: turned 180 deg about y."""


# --------------------------------------------------------------------------- the client
def root_state(env: ManagerBasedRLEnv, entity: str) -> dict[str, torch.Tensor]:
    """An entity's root position (m), rotation to world (3, 3), origin velocity (m/s) and
    angular velocity (rad/s, world axes), (N, ...), once per state."""

    def compute():
        data = env.scene.entities[entity].data
        rotation = data.root_rot_mat_w.to(torch.float64)
        return {
            "pos": data.root_pos_w.to(torch.float64),
            "rot": rotation,
            "vel": data.root_lin_vel_w.to(torch.float64),
            "omega": (rotation @ data.root_ang_vel_b.to(torch.float64)[..., None])[..., 0],
        }

    return env.scene.view.memo(("capture/root", entity), compute)


def client_state(env: ManagerBasedRLEnv) -> dict[str, torch.Tensor]:
    """The client's root state (`root_state`)."""
    return root_state(env, "client")


def grapple_in_client(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The grapple point in the client's root frame, m (3,)."""
    m = env.scene.mj_model
    site = env.scene.site_id("client/grapple")
    pos, body = m.site_pos[site].copy(), int(m.site_bodyid[site])
    root = env.scene.body_id("client")
    while body != root:
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, m.body_quat[body])
        pos = mat.reshape(3, 3) @ pos + m.body_pos[body]
        body = int(m.body_parentid[body])
    return torch.as_tensor(pos, dtype=torch.float64, device=env.device)


def target_state(env: ManagerBasedRLEnv) -> dict[str, torch.Tensor]:
    """The target: position (m), rotation to world (3, 3), velocity of its origin (m/s) and
    angular velocity (the client's, rad/s), (N, ...)."""

    def compute():
        c = client_state(env)
        lever = (c["rot"] @ grapple_in_client(env)[:, None])[..., 0]
        rot = c["rot"] @ TARGET_IN_FIXTURE.to(env.device)
        return {
            "pos": c["pos"] + lever,
            "rot": rot,
            "vel": c["vel"] + torch.cross(c["omega"], lever, dim=-1),
            "omega": c["omega"],
        }

    return env.scene.view.memo("capture/target", compute)


class CaptureTarget(CommandTerm):
    """The target pose (position m, quaternion w x y z), (N, 7), read from the client each
    step, with its velocity and angular velocity; its `update` runs the latch
    (`LatchingEndEffector`) after each env step's physics, and a reset clears the latch's
    release timer."""

    cfg: CaptureTargetCfg
    takes_masks = True
    state_attrs = (*CommandTerm.state_attrs, "latch")

    def __init__(self, cfg: CaptureTargetCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.latch = LatchingEndEffector(env)

    @property
    def command(self) -> torch.Tensor:
        target = target_state(self.env)
        return torch.cat((target["pos"], quat_from_matrix(target["rot"])), -1)

    @property
    def velocity(self) -> torch.Tensor:
        return target_state(self.env)["vel"]

    @property
    def turn_rate(self) -> torch.Tensor:
        return target_state(self.env)["omega"]

    def resample(self, worlds) -> None:
        """Nothing to draw: the target follows the client (placed by the reset events); the
        latch's release timer restarts."""
        self.assign(self.latch.open_s, worlds, self.latch.open_s.new_zeros(()))

    def update(self, dt: float) -> None:
        self.latch.update()


@dataclass(kw_only=True)
class CaptureTargetCfg(CommandTermCfg):
    """`CaptureTarget`."""

    class_type: type = CaptureTarget


# ------------------------------------------------------------------------ the gripper
def grasp_state(env: ManagerBasedRLEnv) -> dict[str, torch.Tensor]:
    """The grasp centre's position (m), rotation to world (3, 3), velocity (m/s) and the
    hand's angular velocity (rad/s), (N, ...)."""

    def compute():
        view = env.scene.view
        site = env.scene.site_id("bot/grasp")
        hand = int(env.scene.mj_model.site_bodyid[site])
        pos = view.array("site_xpos")[:, site].to(torch.float64)
        frames = view.frames()
        omega = frames["omega"][:, hand].to(torch.float64)
        lever = pos - frames["com"][:, hand].to(torch.float64)
        return {
            "pos": pos,
            "rot": view.array("site_xmat")[:, site].reshape(-1, 3, 3).to(torch.float64),
            "vel": frames["v_com"][:, hand].to(torch.float64) + torch.cross(omega, lever, dim=-1),
            "omega": omega,
        }

    return env.scene.view.memo("capture/grasp", compute)


def pose_error(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(target minus grasp centre, m; rotation vector from the grasp frame to the target's,
    rad), world axes, (N, 3) each."""

    def compute():
        target, grasp = target_state(env), grasp_state(env)
        turn = quat_from_matrix(target["rot"] @ grasp["rot"].transpose(-1, -2))
        return target["pos"] - grasp["pos"], rotation_vector_from_quat(turn)

    return env.scene.view.memo("capture/pose_error", compute)


def relative_motion(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(target's velocity minus the grasp centre's, m/s; client's angular velocity minus the
    hand's, rad/s), world axes, (N, 3) each."""
    target, grasp = target_state(env), grasp_state(env)
    return target["vel"] - grasp["vel"], target["omega"] - grasp["omega"]


def position_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """|target - grasp centre|, m."""
    return pose_error(env)[0].norm(dim=-1)


def angle_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Angle between the grasp frame and the target's, rad."""
    return pose_error(env)[1].norm(dim=-1)


def in_capture_envelope(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The grasp is inside `CAPTURE_ENVELOPE` (pose and relative motion)."""
    dv, dw = relative_motion(env)
    e = CAPTURE_ENVELOPE
    return (
        (position_error(env) < e["position_m"])
        & (angle_error(env) < e["angle_rad"])
        & (dv.norm(dim=-1) < e["speed_mps"])
        & (dw.norm(dim=-1) < e["rate_rad_s"])
    )


def finger_opening(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Each finger's opening, m (the two are mirrored)."""
    adr = int(env.scene.mj_model.joint("bot/finger_left_slide").qposadr[0])
    return env.scene.view.array("qpos")[:, adr].to(torch.float64)


def gripper_command(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The gripper servo's commanded opening, m."""
    actuator = int(env.scene.mj_model.actuator("bot/gripper").id)
    return env.scene.view.array("ctrl")[:, actuator].to(torch.float64)


class LatchingEndEffector(Stateful):
    """The gripper as a latching end effector: closing it inside the capture envelope while
    the fingers still surround the post engages the weld `latch` (the rigidized grasp);
    holding it open for `RELEASE_HOLD_S` releases the weld. Runs once per env step, on
    tensors (no host read).

    Attributes: open_s (N,) float64, how long the gripper has been commanded open without a
    break, s; engaged, released (N,) bool, the latch engaged or released in this env step
    (the rewards of the step read them)."""

    state_attrs = ("open_s", "engaged", "released")

    def __init__(self, env: ManagerBasedRLEnv):
        self.env = env
        env.scene.weld_id("latch")  # fail early, naming the welds the scene has
        self.open_s = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)
        self.engaged = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        self.released = torch.zeros_like(self.engaged)

    def update(self) -> None:
        env = self.env
        latched = env.scene.weld_active("latch")
        closing = gripper_command(env) < 0.5 * GRIPPER_OPEN_M
        self.open_s = torch.where(closing, 0.0, self.open_s + env.step_dt)
        around_post = finger_opening(env) >= FINGERS_AROUND_POST_M
        engage = closing & around_post & ~latched & in_capture_envelope(env)
        release = (self.open_s >= RELEASE_HOLD_S - 1e-9) & latched
        self.engaged, self.released = engage, release
        # the weld's switch changes no state-derived value (the next physics step feels it):
        # the state's cached frames and terms stay valid
        env.scene.set_weld_active("latch", engage | release, engage)


def latched(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The latch holds the fixture, (N,) bool."""
    return env.scene.weld_active("latch")


# ---------------------------------------------------------------------- loads and rates
def interface_loads(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """|force| (N) and |torque| (N m) at the wrist's force-torque sensor (truth), (N,)."""
    wrench = env.scene.sensors["bot/wrist_ft"].truth()
    return wrench[:, :3].norm(dim=-1), wrench[:, 3:].norm(dim=-1)


def loads_within(env: ManagerBasedRLEnv, limit: tuple[float, float]) -> torch.Tensor:
    force, torque = interface_loads(env)
    return (force < limit[0]) & (torque < limit[1])


def stack_rate(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The larger of the servicer bus's and the client's angular rates, rad/s."""
    bus = env.scene.entities["bot"].data.root_ang_vel_b.to(torch.float64).norm(dim=-1)
    return torch.maximum(bus, client_state(env)["omega"].norm(dim=-1))


class capture_success(Stateful):
    """Success: the latch has held for `HOLD_S` with the interface loads under `LOAD_LIMIT`
    the whole time, and the stack now turns slower than `STACK_RATE_RAD_S`."""

    state_attrs = ("held_s",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.held_s = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def __call__(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        holding = latched(env) & loads_within(env, LOAD_LIMIT) & (env.episode_length_buf > 1)
        self.held_s = torch.where(holding, self.held_s + env.step_dt, 0.0)
        return (self.held_s >= HOLD_S - 1e-9) & (stack_rate(env) < STACK_RATE_RAD_S)


def overload(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The latched interface carried more than `DAMAGE_LOAD` (a failure)."""
    return latched(env) & ~loads_within(env, DAMAGE_LOAD)


def struck_client(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The client, unlatched, took a contact force above `STRIKE_FORCE_N`: the servicer hit
    it (the arm's and gripper's touches on the fixture stay below: at most 20 N over
    1600 steps of random arm motion in 16 worlds, 2026-12-06)."""
    handle = env.scene.entities["client"]
    force = env.scene.view.array("qfrc_constraint")[:, handle.dof_adr : handle.dof_adr + 3]
    return (force.norm(dim=-1) > STRIKE_FORCE_N) & ~latched(env)


def lost(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The servicer bus is further than `LOST_RANGE_M` from the client."""
    bus = env.scene.entities["bot"].data.root_pos_w.to(torch.float64)
    return (bus - client_state(env)["pos"]).norm(dim=-1) > LOST_RANGE_M


# ------------------------------------------------------------------------ observations
def in_bus_axes(env: ManagerBasedRLEnv, world: torch.Tensor) -> torch.Tensor:
    rotation = env.scene.entities["bot"].data.root_rot_mat_w.to(torch.float64)
    return (rotation.transpose(-1, -2) @ world[..., None])[..., 0]


def position_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Target minus grasp centre, bus axes, m (N, 3)."""
    return in_bus_axes(env, pose_error(env)[0])


def angle_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Rotation vector from the grasp frame to the target's, bus axes, rad (N, 3)."""
    return in_bus_axes(env, pose_error(env)[1])


def relative_motion_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Relative velocity (m/s) and rate (rad/s) of the target to the gripper, bus axes (N, 6)."""
    dv, dw = relative_motion(env)
    return torch.cat((in_bus_axes(env, dv), in_bus_axes(env, dw)), -1)


def client_rate_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The client's angular velocity in the bus's axes, rad/s (N, 3)."""
    return in_bus_axes(env, client_state(env)["omega"])


def gripper_state(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Finger opening over the open value and the latch flag, (N, 2)."""
    return torch.stack((finger_opening(env) / GRIPPER_OPEN_M, latched(env).to(torch.float64)), -1)


def wrist_loads(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The wrist force-torque sensor's reading (noisy), force / 20 N and torque / 2 N m (N, 6)."""
    reading = env.scene.sensors["bot/wrist_ft"].value.to(torch.float64)
    return torch.cat((reading[:, :3] / 20.0, reading[:, 3:] / 2.0), -1)


# ------------------------------------------------------------------------------ rewards
def kernel(value: torch.Tensor, sigma: float) -> torch.Tensor:
    """1 - exp(-value / sigma), a cost in [0, 1)."""
    return 1.0 - torch.exp(-value / sigma)


def approach_potential(env: ManagerBasedRLEnv) -> torch.Tensor:
    """How far the gripper is from the target, as a potential (>= 0, 0 on it): position
    error / 10 cm + 2 (1 - exp(-error / 2 cm)) + angle error / 10 deg
    + (1 - exp(-angle / 5 deg))."""
    position, angle = position_error(env), angle_error(env)
    return (
        position / 0.1
        + 2.0 * kernel(position, 0.02)
        + angle / (10.0 * DEG)
        + kernel(angle, 5.0 * DEG)
    )


def latched_reward(env: ManagerBasedRLEnv) -> torch.Tensor:
    """1 while latched."""
    return latched(env).to(torch.float64)


def latch_change(env: ManagerBasedRLEnv) -> torch.Tensor:
    """+1 / step_dt in the env step whose gripper command engaged the latch, -1 / step_dt in
    the one that released it (weight = the one-off reward): potential-based on the latch's
    state, so engaging and releasing again gains nothing, while the closing step itself is
    credited (a closing command credited only through the holding reward that follows is
    learned through a stochastic policy's noise, and leaves the deterministic one open)."""
    target = env.command_manager.terms["target"]
    if not isinstance(target, CaptureTarget):
        raise TypeError(f"command 'target' is a {type(target).__name__}, not a CaptureTarget")
    latch = target.latch
    return (latch.engaged.to(torch.float64) - latch.released.to(torch.float64)) / env.step_dt


def open_while_latched(env: ManagerBasedRLEnv) -> torch.Tensor:
    """1 while latched with the gripper commanded open: the first step of a release, which
    a deterministic policy completes in `RELEASE_HOLD_S`."""
    opening = gripper_command(env) >= 0.5 * GRIPPER_OPEN_M
    return (latched(env) & opening).to(torch.float64)


def stack_rate_potential(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The stack's rate (the larger of the bus's and the client's) / 1 deg/s, as a potential
    (the reward is its decrease per second, latched or not): zero while the client tumbles
    freely at its constant rate, no jump at the latch (the client's rate was counted all
    along), repaid as the stack is detumbled. A per-second cost of the rate would charge the
    client's free tumble before the latch, which no action changes, and make every early
    ending cheaper than the approach."""
    return stack_rate(env) / DEG


def load_cost(env: ManagerBasedRLEnv) -> torch.Tensor:
    """(|force| / limit)^2 + (|torque| / limit)^2 at the wrist (`LOAD_LIMIT`)."""
    force, torque = interface_loads(env)
    return (force / LOAD_LIMIT[0]).square() + (torque / LOAD_LIMIT[1]).square()


def thrust_cost(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Sum of the RCS thrusters' commanded forces over one thruster's maximum."""
    group = env.scene.actuators["bot/rcs"]
    return group.command.to(torch.float64).sum(-1) / group.high[0].to(torch.float64).amax()


# ------------------------------------------------------------------------------ resets
def _unit(env: ManagerBasedRLEnv, n: int) -> torch.Tensor:
    v = torch.randn(
        (n, 3), generator=env.event_manager.generator, dtype=torch.float64, device=env.device
    )
    return v / v.norm(dim=-1, keepdim=True)


def _uniform(env: ManagerBasedRLEnv, n: int, low: float, high: float) -> torch.Tensor:
    u = torch.rand(n, generator=env.event_manager.generator, dtype=torch.float64, device=env.device)
    return low + (high - low) * u


def reset_tumbling_client(env: ManagerBasedRLEnv, env_ids: torch.Tensor) -> None:
    """The client at the chief with a uniformly random attitude, tumbling at a rate uniform
    in `TUMBLE_RATE_RAD_S` about a uniformly random axis."""
    from orbitlab.envs.mdp.events import random_unit_quat

    n = env_ids.numel()
    rate = _unit(env, n) * _uniform(env, n, *TUMBLE_RATE_RAD_S)[:, None]
    env.scene.entities["client"].set_root_state(
        env_ids,
        pos_m=torch.zeros((n, 3), dtype=torch.float64, device=env.device),
        quat=random_unit_quat(env, n),
        lin_vel_mps=torch.zeros((n, 3), dtype=torch.float64, device=env.device),
        ang_vel_body=rate,
        refresh=False,
    )


def reset_servicer_at_standoff(env: ManagerBasedRLEnv, env_ids: torch.Tensor) -> None:
    """The servicer at rest with its axes on the target's, the arm in the ready pose with
    the gripper open, and its grasp centre `STANDOFF_M` back from the grapple point along
    the target's axis (after `reset_tumbling_client`)."""
    from orbitlab.envs.mdp.events import reset_joints_uniform
    from orbitlab.managers.scene_entity_cfg import SceneEntityCfg

    n = env_ids.numel()
    kw = {"dtype": torch.float64, "device": env.device}
    client = env.scene.entities["client"].data
    rot_c = quat_to_matrix(client.root_quat_w[env_ids].to(torch.float64))
    target_pos = (
        client.root_pos_w[env_ids].to(torch.float64)
        + (rot_c @ grapple_in_client(env)[:, None])[..., 0]
    )
    target_rot = rot_c @ TARGET_IN_FIXTURE.to(env.device)
    grasp_b, grasp_rot_b = ready_grasp_in_bus(env)
    bus_rot = target_rot @ grasp_rot_b.transpose(-1, -2)
    standoff = _uniform(env, n, *STANDOFF_M)[:, None]
    bus_pos = target_pos - (bus_rot @ grasp_b[:, None])[..., 0] - standoff * target_rot[..., 0]
    env.scene.entities["bot"].set_root_state(
        env_ids,
        pos_m=bus_pos,
        quat=quat_from_matrix(bus_rot),
        lin_vel_mps=torch.zeros((n, 3), **kw),
        ang_vel_body=torch.zeros((n, 3), **kw),
        refresh=False,
    )
    bot = SceneEntityCfg("bot")
    bot.resolve(env.scene)
    reset_joints_uniform(env, env_ids, bot, ARM_JOINTS, READY_POSE_RAD, READY_POSE_RAD)
    reset_joints_uniform(
        env,
        env_ids,
        bot,
        ("finger_left_slide", "finger_right_slide"),
        GRIPPER_OPEN_M,
        GRIPPER_OPEN_M,
    )
    ctrl = env.scene.view.array("ctrl")
    ctrl[env_ids, int(env.scene.mj_model.actuator("bot/gripper").id)] = GRIPPER_OPEN_M


def ready_grasp_in_bus(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """The grasp centre's position (m, (3,)) and rotation ((3, 3)) in the servicer bus's
    frame with the arm in `READY_POSE_RAD` (forward kinematics of the model)."""
    m = env.scene.mj_model
    d = mujoco.MjData(m)
    for name, q in zip(ARM_JOINTS, READY_POSE_RAD, strict=True):
        d.qpos[m.joint(f"bot/{name}").qposadr[0]] = q
    mujoco.mj_kinematics(m, d)
    bus = env.scene.body_id("bot/bus")
    site = env.scene.site_id("bot/grasp")
    bus_rot = d.xmat[bus].reshape(3, 3)
    pos = bus_rot.T @ (d.site_xpos[site] - d.xpos[bus])
    rot = bus_rot.T @ d.site_xmat[site].reshape(3, 3)
    kw = {"dtype": torch.float64, "device": env.device}
    return torch.as_tensor(pos, **kw), torch.as_tensor(rot, **kw)
