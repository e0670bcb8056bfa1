"""Sensors of a spacecraft's arm: joint encoders, the end effector's pose, a grapple pose.

- `JointEncoder`: angles (rad) and rates (rad/s) of named hinge joints of the entity.
- `EndEffectorPose`: the pose and velocity of a site on an arm link (the end effector)
  relative to the entity's root body, in the root body's axes or in the Hill frame.
- `GrapplePose`: the pose of a target site (a grapple fixture on another entity) in the
  sensor's own axes, with noise that grows with range: a camera-free stand-in for visual
  pose estimation.
- `WristForceTorque`: the force and torque the arm exerts on the hand (and on what it
  holds) at a wrist site, in the site's axes: MuJoCo's own force and torque sensors.
Timers, latency, bias and noise are the base sensor's (`orbitlab.sensors.base`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import mujoco
import torch

from orbitlab.sensors.base import Sensor, SensorCfg
from orbitlab.sensors.navigation import _Targeted
from orbitlab.sensors.rotations import (
    canonical,
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_multiply,
    rotate_inverse,
)


class JointEncoder(Sensor):
    """Angles then rates of `cfg.joints`: (2 n) values."""

    dim: ClassVar[int] = 0
    _kinds: ClassVar[dict[int, type[JointEncoder]]] = {}

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, stream):
        if not cfg.joints:
            raise ValueError(f"sensor '{name}': joints must name at least one joint")
        m = scene.mj_model
        ids = []
        for joint in cfg.joints:
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{entity}/{joint}")
            hinge = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
            if j < 0 or int(m.jnt_type[j]) not in hinge:
                raise ValueError(
                    f"sensor '{name}': joint {joint!r} is not a hinge or slide of entity '{entity}'"
                )
            ids.append(j)
        n = len(ids)
        kind = cls._kinds.setdefault(n, type(f"JointEncoder{n}", (cls,), {"dim": 2 * n}))
        sensor = kind(cfg, name, scene.view, scene.body_id(entity), stream)
        device = scene.view.device
        sensor.qpos_adr = torch.as_tensor(m.jnt_qposadr[ids], dtype=torch.long, device=device)
        sensor.dof_adr = torch.as_tensor(m.jnt_dofadr[ids], dtype=torch.long, device=device)
        return sensor

    qpos_adr: torch.Tensor
    dof_adr: torch.Tensor

    def truth(self):
        view = self.view
        angles = view.array("qpos")[:, self.qpos_adr]
        rates = view.array("qvel")[:, self.dof_adr]
        return torch.cat((angles, rates), -1).to(torch.float64)


@dataclass(kw_only=True)
class JointEncoderCfg(SensorCfg):
    """Joint encoders: angles (rad, or m for a slide) of `joints`, then their rates (2 n)."""

    class_type: type = JointEncoder
    """The class the scene builds from this config (`JointEncoder.from_scene`)."""
    joints: tuple[str, ...] = ()
    """The entity's hinge or slide joints, by MJCF name without the entity prefix."""


class EndEffectorPose(Sensor):
    """Position (m), velocity (m/s) and attitude quaternion of the sensor point relative to
    the entity's root body, in the root's axes ('body') or the Hill frame ('hill'): 10."""

    dim = 10
    noisy = slice(0, 9)

    def __init__(self, cfg, name, view, body_id, stream, site_id=-1):
        super().__init__(cfg, name, view, body_id, stream, site_id)
        self.root = int(view.mj_model.body_rootid[self.body])

    def truth(self):
        view = self.view
        frames = view.frames()
        root = self.root
        com, v_com, omega = (
            frames["com"][:, root],
            frames["v_com"][:, root],
            frames["omega"][:, root],
        )
        Q_root = view.body_rotation(root)
        r = self.position_world()
        own_omega = frames["omega"][:, self.body]
        v = frames["v_com"][:, self.body] + torch.cross(
            own_omega, r - frames["com"][:, self.body], dim=-1
        )
        origin = view.array("xpos")[:, root].to(torch.float64)
        d = r - origin
        d_dot = v - v_com - torch.cross(omega, origin - com, dim=-1)
        attitude = self.body_rotation()
        if self.cfg.frame == "hill":
            C, w = view.hill()
            return torch.cat(
                (
                    (C @ d[..., None])[..., 0],
                    (C @ (d_dot - torch.cross(w, d, dim=-1))[..., None])[..., 0],
                    quat_from_matrix(C @ attitude),
                ),
                -1,
            )
        # body axes: velocity as seen from the rotating root
        rel = d_dot - torch.cross(omega, d, dim=-1)
        return torch.cat(
            (
                rotate_inverse(Q_root, d),
                rotate_inverse(Q_root, rel),
                quat_from_matrix(Q_root.transpose(-1, -2) @ attitude),
            ),
            -1,
        )

    def measure(self, truth, noise, worlds):
        q = canonical(quat_multiply(truth[:, 6:], quat_from_rotation_vector(noise[:, 6:])))
        return torch.cat([truth[:, :6] + noise[:, :6], q], -1)


@dataclass(kw_only=True)
class EndEffectorPoseCfg(SensorCfg):
    """End-effector pose: the sensor point (its `site`, e.g. the gripper's 'grasp') relative
    to the root body's origin: position (m), velocity (m/s), attitude quaternion (10).
    `std` has 9 components: position, velocity, attitude small-angle rotation (rad)."""

    class_type: type = EndEffectorPose
    """The class the scene builds from this config (`EndEffectorPose.from_scene`)."""
    frame: Literal["body", "hill"] = "body"
    """Axes of the output: the root body's (velocity relative to the rotating root) or the
    chief's Hill frame (velocity relative to the rotating Hill frame)."""


class GrapplePose(_Targeted):
    """Position (m) and attitude quaternion of the target point in the sensor's axes: 7."""

    dim = 7
    noisy = slice(0, 6)

    def truth(self):
        pt, _, Qt = self.target_point()
        po, _ = self.own_point()
        Q = self.body_rotation()
        return torch.cat(
            (rotate_inverse(Q, pt - po), quat_from_matrix(Q.transpose(-1, -2) @ Qt)), -1
        )

    def measure(self, truth, noise, worlds):
        rng = torch.linalg.vector_norm(truth[:, :3], dim=-1, keepdim=True)
        noise = noise * (1.0 + self.cfg.range_noise_per_m * rng)
        q = canonical(quat_multiply(truth[:, 3:], quat_from_rotation_vector(noise[:, 3:])))
        return torch.cat([truth[:, :3] + noise[:, :3], q], -1)


@dataclass(kw_only=True)
class GrapplePoseCfg(SensorCfg):
    """Grapple pose: a target site's position (m) and attitude quaternion in the sensor's
    axes (7), e.g. a wrist camera's estimate of a client's grapple fixture. `std` has 6
    components: position (m) and attitude small-angle rotation (rad); every std grows as
    (1 + range_noise_per_m * range)."""

    class_type: type = GrapplePose
    """The class the scene builds from this config (`GrapplePose.from_scene`)."""
    target: str = ""
    """Observed entity body as 'entity/body' (or 'entity' for its root)."""
    target_site: str = ""
    """Optional site of the target (as 'entity/site') whose origin and axes are observed."""
    range_noise_per_m: float = 0.0
    """Growth of the noise with range, 1/m."""


def wrench_sensor_name(key: str, kind: str) -> str:
    """Name of the MuJoCo sensor ('force' or 'torque') behind the scene's sensor `key`
    ('entity/name')."""
    return f"{key}/{kind}"


class WristForceTorque(Sensor):
    """Force (N) then torque (N m, about the site) that the body's parent exerts on the
    site's body and everything it carries (for a wrist site: the hand, its fingers and a
    grasped object), in the site's axes: 6.

    The readings are MuJoCo's `force` and `torque` sensors on the site (its interaction
    force from `mj_rnePostConstraint`): the inertial force of the carried subtree less the
    contact and Cartesian forces on it, so they include the grasp's contact forces and the
    wrist actuator's torque. Loads the orbit layer applies as generalized forces (free-
    floating scenes on the CPU: differential gravity, drag, SRP, of order micronewtons on a
    hand) are not subtracted. With per-stage RK4 a physics step's reading is that of its
    last stage's evaluation (at t + dt, the state y_0 + dt k_3)."""

    dim = 6

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, stream):
        sensor = super().from_scene(cfg, name, scene, entity, stream)
        m = scene.mj_model
        columns: list[int] = []
        for kind in ("force", "torque"):
            sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, wrench_sensor_name(name, kind))
            if sid < 0:  # a config built outside the scene's assembly
                raise ValueError(
                    f"sensor '{name}': the model has no MuJoCo {kind} sensor "
                    f"'{wrench_sensor_name(name, kind)}' (WristForceTorqueCfg adds it)"
                )
            columns += range(int(m.sensor_adr[sid]), int(m.sensor_adr[sid]) + 3)
        sensor.columns = torch.as_tensor(columns, dtype=torch.long, device=scene.view.device)
        return sensor

    columns: torch.Tensor

    def truth(self):
        return self.view.array("sensordata")[:, self.columns].to(torch.float64)


@dataclass(kw_only=True)
class WristForceTorqueCfg(SensorCfg):
    """Wrist force-torque sensor at the entity's `site` (required; e.g. arm_bus's
    'wrist_ft'): force (N) then torque (N m) on the site's body and what it carries, in
    the site's axes (6). `std` has 6 components. The scene adds MuJoCo's `force` and
    `torque` sensors on the site to the model (which makes MuJoCo compute the bodies'
    interaction forces at every forward pass, a cost of its own)."""

    class_type: type = WristForceTorque
    """The class the scene builds from this config (`WristForceTorque.from_scene`)."""

    def add_to_spec(self, spec: mujoco.MjSpec, entity: str, name: str) -> None:
        site = f"{entity}/{self.site}"
        if not self.site or spec.site(site) is None:
            raise ValueError(
                f"sensor '{entity}/{name}': site={self.site!r} must name a site of entity "
                f"'{entity}' (the force-torque sensor's frame, e.g. 'wrist_ft')"
            )
        for kind, sensor_type in (
            ("force", mujoco.mjtSensor.mjSENS_FORCE),
            ("torque", mujoco.mjtSensor.mjSENS_TORQUE),
        ):
            spec.add_sensor(
                name=wrench_sensor_name(f"{entity}/{name}", kind),
                type=sensor_type,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                objname=site,
            )
