"""ORU insertion's terms: the stack's geometry, the start poses, the seat, loads, success.

Entities: `bot` (the servicer), `oru` (the orbital replacement unit, held by the gripper's
latch: the weld `latch`, engaged throughout) and `site` (the worksite panel with the
receptacle, berthed to the servicer's bus: the weld `berth`). Frames (world axes unless
named): the *target* is the ORU's root pose when seated (its `base` site on the worksite's
`seat` site, its axes the worksite's); the ORU's error is target minus ORU.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

from orbitlab.scene.catalog import asset_path
from orbitlab.scene.spacecraft import ARM_JOINTS
from orbitlab.sensors.rotations import quat_from_matrix, quat_to_matrix, rotation_vector_from_quat
from orbitlab.stateful import Stateful
from orbitlab_tasks.capture.mdp import (
    DAMAGE_LOAD,
    FIXTURE_IN_HAND,
    LOAD_LIMIT,
    loads_within,
    root_state,
)

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

DEG = math.pi / 180.0


def folded_pose(bend_rad: float, lift_rad: float = 0.4) -> tuple[float, ...]:
    """Arm joints that keep the gripper's axes on the bus's: shoulder pitch -(b + l), elbow
    2b, wrist pitch -(b - l). The bend b sets how far ahead of the bus the gripper is, the lift
    l how far off the bus's x axis (~0.24 m at l = 0.4 rad): off that axis the shoulder's yaw
    joint (about the bus's x axis) moves the gripper sideways with a useful lever."""
    return (0.0, -(bend_rad + lift_rad), 2.0 * bend_rad, -(bend_rad - lift_rad), 0.0, 0.0)


SEATED_POSE_RAD = folded_pose(0.75)
"""The arm's joints with the ORU seated: the worksite is berthed where this pose puts it."""
START_BEND_RAD = (1.05, 1.3)
"""The start poses' bend (`folded_pose`): the ORU 3-20 cm short of the socket's mouth."""
START_PERTURBATION_RAD = (0.03, 0.0, 0.0, 0.04, 0.04, 0.04)
"""Largest offset of each joint from the folded start pose (shoulder yaw, ..., wrist roll).
With the bend, the table's ORUs start 2-20 cm short of the socket's mouth, 5-14 cm off its
axis and 0.5-4.6 deg off its attitude."""
START_POSES = 256
"""Start poses drawn once (seeded) when the env is built; each episode takes one at random
(a table, so that a reset needs no forward kinematics)."""
ORU_HALF_LENGTH_M = 0.125
"""From the ORU's root to its base face along its -x axis, m."""
SEAT_IN_WORKSITE_M = 0.05
"""The seat site's x in the worksite's root frame, m (the panel's +x face)."""
SOCKET_DEPTH_M = 0.15
"""From the socket's mouth to its seat, m."""
ENTRY_M = SOCKET_DEPTH_M + 0.03
"""The entry point: on the socket's axis, this far out from the seat (3 cm before the
mouth), m. The baseline aligns there; the shaping potential's path passes through it."""
LATERAL_WEIGHT = 3.0
"""The shaping potential's weight of the lateral offset from the socket's axis against the
distance along it (`insertion_potential`)."""
SEAT_TOLERANCE = (0.005, 2.0 * DEG)
"""Seated: the ORU's base within this distance of the seat (m) and its axes within this
angle of the worksite's (rad)."""
HOLD_S = 1.0
"""A success holds the seated ORU this long with loads under `LOAD_LIMIT`, s."""
# Capture's wrist-load limits: LOAD_LIMIT (50 N / 10 N m) for a success's hold, DAMAGE_LOAD
# (200 N / 40 N m) for a failure.


# --------------------------------------------------------------------------- geometry
def _pose(pos, quat) -> tuple[np.ndarray, np.ndarray]:
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(quat, dtype=np.float64))
    return np.asarray(pos, dtype=np.float64), rot.reshape(3, 3)


def oru_in_hand() -> tuple[np.ndarray, np.ndarray]:
    """The ORU's root pose in the hand body's frame while latched (m, rotation (3, 3)): the
    latch holds the ORU's grapple fixture as Capture's holds the client's
    (`capture.mdp.FIXTURE_IN_HAND`); the fixture sits on the ORU's +x face."""
    pos, rot = _pose(*FIXTURE_IN_HAND)
    return pos - rot @ np.array([ORU_HALF_LENGTH_M, 0.0, 0.0]), rot


@functools.cache
def _arm_model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(asset_path("arm_bus")))


def oru_in_bus(joints_rad: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The latched ORU's root pose in the servicer bus's frame with the arm at `joints_rad`
    (forward kinematics of the arm's model), (m, rotation (3, 3))."""
    m = _arm_model()
    d = mujoco.MjData(m)
    for name, q in zip(ARM_JOINTS, joints_rad, strict=True):
        d.qpos[m.joint(name).qposadr[0]] = q
    mujoco.mj_kinematics(m, d)
    bus, hand = m.body("bus").id, m.body("hand").id
    bus_rot = d.xmat[bus].reshape(3, 3)
    hand_pos = bus_rot.T @ (d.xpos[hand] - d.xpos[bus])
    hand_rot = bus_rot.T @ d.xmat[hand].reshape(3, 3)
    pos, rot = oru_in_hand()
    return hand_pos + hand_rot @ pos, hand_rot @ rot


def worksite_in_bus() -> tuple[np.ndarray, np.ndarray]:
    """The worksite's root pose in the servicer bus's frame (m, rotation (3, 3)): where the
    ORU held in `SEATED_POSE_RAD` is seated (its axes the worksite's, its base on the seat)."""
    pos, rot = oru_in_bus(SEATED_POSE_RAD)
    seat = pos - rot @ np.array([ORU_HALF_LENGTH_M, 0.0, 0.0])
    return seat - rot @ np.array([SEAT_IN_WORKSITE_M, 0.0, 0.0]), rot


def weld_pose(pose: tuple[np.ndarray, np.ndarray]) -> tuple[tuple, tuple]:
    """(pos, quat w x y z) tuples of a pose, for a `WeldCfg`."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, pose[1].reshape(9))
    return tuple(float(x) for x in pose[0]), tuple(float(x) for x in quat)


@dataclass(frozen=True)
class StartPoses:
    """`START_POSES` start poses: the arm's joints (K, 6) rad and the ORU's root pose in the
    bus's frame, position (K, 3) m and rotation (K, 3, 3)."""

    joints: torch.Tensor
    oru_pos: torch.Tensor
    oru_rot: torch.Tensor


def draw_start_poses(count: int = START_POSES, seed: int = 0) -> StartPoses:
    """Folded poses with a bend uniform in `START_BEND_RAD` and each joint offset uniformly
    within `START_PERTURBATION_RAD` (numpy's generator, `seed`)."""
    rng = np.random.default_rng(seed)
    bend = rng.uniform(*START_BEND_RAD, size=count)
    spread = np.asarray(START_PERTURBATION_RAD)
    joints = np.array([folded_pose(b) for b in bend]) + rng.uniform(-1, 1, (count, 6)) * spread
    poses = [oru_in_bus(tuple(q)) for q in joints]
    return StartPoses(
        torch.as_tensor(joints),
        torch.as_tensor(np.array([p for p, _ in poses])),
        torch.as_tensor(np.array([r for _, r in poses])),
    )


# ------------------------------------------------------------------------------ state
def target_pose(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """The ORU's root pose when seated: position (N, 3) m and rotation (N, 3, 3)."""

    def compute():
        site = root_state(env, "site")
        offset = torch.tensor(
            [SEAT_IN_WORKSITE_M + ORU_HALF_LENGTH_M, 0.0, 0.0],
            dtype=torch.float64,
            device=env.device,
        )
        return site["pos"] + site["rot"] @ offset, site["rot"]

    return env.scene.view.memo("insertion/target", compute)


def oru_error(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(target minus ORU root position, m; rotation vector from the ORU's axes to the
    target's, rad), world axes, (N, 3) each."""

    def compute():
        oru = root_state(env, "oru")
        pos, rot = target_pose(env)
        turn = quat_from_matrix(rot @ oru["rot"].transpose(-1, -2))
        return pos - oru["pos"], rotation_vector_from_quat(turn)

    return env.scene.view.memo("insertion/oru_error", compute)


def socket_coordinates(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(how far the ORU's root is out of its seated position along the socket's axis, m;
    its offset from that axis, m), (N,) each."""
    oru_dp, _ = oru_error(env)
    axis = target_pose(env)[1][..., 0]  # the socket's axis, out of the socket
    out = -(oru_dp * axis).sum(-1)
    return out, (oru_dp + out[:, None] * axis).norm(dim=-1)


def grasp_error(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """The gripper's pose error that seats the ORU it holds: (the grasp centre's target
    minus its position, m; rotation vector to the target's axes, rad), world axes, (N, 3)
    each. The ORU turns with the hand, so the angle is the ORU's; the grasp centre's target
    is where the seated ORU would put it."""

    def compute():
        from orbitlab_tasks.reach.reach_env_cfg import grasp_pose

        oru = root_state(env, "oru")
        grasp, _ = grasp_pose(env)
        _, dr = oru_error(env)
        pos, rot = target_pose(env)
        lever = oru["rot"].transpose(-1, -2) @ (grasp - oru["pos"])[..., None]
        target = pos + (rot @ lever)[..., 0]
        return target - grasp, dr

    return env.scene.view.memo("insertion/grasp_error", compute)


def in_bus_axes(env: ManagerBasedRLEnv, world: torch.Tensor) -> torch.Tensor:
    rotation = root_state(env, "bot")["rot"]
    return (rotation.transpose(-1, -2) @ world[..., None])[..., 0]


def position_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """ORU position error in the bus's axes, m (N, 3)."""
    return in_bus_axes(env, oru_error(env)[0])


def angle_error_b(env: ManagerBasedRLEnv) -> torch.Tensor:
    """ORU rotation-vector error in the bus's axes, rad (N, 3)."""
    return in_bus_axes(env, oru_error(env)[1])


def seated(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The ORU's base on the seat within `SEAT_TOLERANCE`, (N,) bool."""
    dp, dr = oru_error(env)
    return (dp.norm(dim=-1) < SEAT_TOLERANCE[0]) & (dr.norm(dim=-1) < SEAT_TOLERANCE[1])


class insertion_success(Stateful):
    """Success: seated for `HOLD_S` with the wrist loads under `LOAD_LIMIT` all along."""

    state_attrs = ("held_s",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.held_s = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def __call__(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        holding = seated(env) & loads_within(env, LOAD_LIMIT) & (env.episode_length_buf > 1)
        self.held_s = torch.where(holding, self.held_s + env.step_dt, 0.0)
        return self.held_s >= HOLD_S - 1e-9


def overload(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The wrist carried more than `DAMAGE_LOAD` (a jam or a strike; a failure)."""
    return ~loads_within(env, DAMAGE_LOAD)


# ---------------------------------------------------------------------------- rewards
def insertion_path(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The length of the way in, m: out beyond the entry point (`ENTRY_M`), the distance to
    it with the lateral offset weighted `LATERAL_WEIGHT`, plus `ENTRY_M`; within, the depth
    still to go plus the weighted lateral offset (continuous at the entry plane). Its
    steepest descent lines the ORU up with the socket before it reaches the mouth, the way
    that does not jam."""
    out, lateral = socket_coordinates(env)
    beyond = (out - ENTRY_M).clamp(min=0.0)
    return torch.hypot(beyond, LATERAL_WEIGHT * lateral) + out.clamp(max=ENTRY_M)


def insertion_potential(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Distance to seated, dimensionless: `insertion_path` / 5 cm + 2 (1 - exp(-error /
    1 cm)) of the position error + angle error / 5 deg + (1 - exp(-angle / 1 deg))."""
    dp, dr = oru_error(env)
    e, a = dp.norm(dim=-1), dr.norm(dim=-1)
    position = insertion_path(env) / 0.05 + 2.0 * (1.0 - torch.exp(-e / 0.01))
    return position + a / (5 * DEG) + 1 - torch.exp(-a / DEG)


def seated_reward(env: ManagerBasedRLEnv) -> torch.Tensor:
    """1 while seated."""
    return seated(env).to(torch.float64)


# ----------------------------------------------------------------------------- resets
@functools.cache
def start_table(device: str) -> tuple[StartPoses, tuple[torch.Tensor, torch.Tensor]]:
    """The start poses (`draw_start_poses`, seed 0: the same table for every env) and the
    worksite's pose in the bus's frame (`worksite_in_bus`), on `device`, built once."""
    poses = draw_start_poses(seed=0)
    on = functools.partial(torch.as_tensor, dtype=torch.float64, device=device)
    table = StartPoses(on(poses.joints), on(poses.oru_pos), on(poses.oru_rot))
    position, rotation = worksite_in_bus()
    return table, (on(position), on(rotation))


def reset_stack(env: ManagerBasedRLEnv, env_ids: torch.Tensor) -> None:
    """The servicer at the chief with a uniformly random attitude, at rest; its arm in a
    start pose drawn from the table with the ORU latched in the gripper (the fingers closed
    on its post) and the worksite berthed where the seated pose puts it."""
    from orbitlab.envs.mdp.events import _uniform, random_unit_quat

    n = env_ids.numel()
    kw = {"dtype": torch.float64, "device": env.device}
    table, worksite = start_table(str(env.device))
    count = table.joints.shape[0]
    pick = _uniform(env, env_ids, 0.0, float(count)).long().clamp(max=count - 1)
    bus_quat = random_unit_quat(env, n).to(torch.float64)
    bus_rot = quat_to_matrix(bus_quat)
    bus_pos = torch.zeros((n, 3), **kw)
    zero = torch.zeros((n, 3), **kw)
    placements = {
        "bot": (bus_pos, bus_rot),
        "oru": (
            bus_pos + (bus_rot @ table.oru_pos[pick][..., None])[..., 0],
            bus_rot @ table.oru_rot[pick],
        ),
        "site": (
            bus_pos + (bus_rot @ worksite[0][:, None])[..., 0],
            bus_rot @ worksite[1],
        ),
    }
    for entity, (pos, rot) in placements.items():
        env.scene.entities[entity].set_root_state(
            env_ids,
            pos_m=pos,
            quat=quat_from_matrix(rot),
            lin_vel_mps=zero,
            ang_vel_body=zero,
            refresh=False,
        )
    m = env.scene.mj_model
    qpos, qvel = env.scene.view.array("qpos"), env.scene.view.array("qvel")
    joints = [m.joint(f"bot/{name}") for name in ARM_JOINTS]
    qadr = torch.as_tensor([int(j.qposadr[0]) for j in joints], device=env.device)
    dadr = torch.as_tensor([int(j.dofadr[0]) for j in joints], device=env.device)
    rows = env_ids[:, None]
    qpos[rows, qadr] = table.joints[pick].to(qpos.dtype)
    qvel[rows, dadr] = 0.0
    fingers = [m.joint(f"bot/{name}") for name in ("finger_left_slide", "finger_right_slide")]
    for joint in fingers:
        qpos[env_ids, int(joint.qposadr[0])] = FINGERS_ON_POST_M
        qvel[env_ids, int(joint.dofadr[0])] = 0.0
    ctrl = env.scene.view.array("ctrl")
    ctrl[env_ids, int(m.actuator("bot/gripper").id)] = 0.0  # closed on the post


FINGERS_ON_POST_M = 0.015
"""Each finger's opening when closed on the ORU's 4 cm post, m."""
