"""Reaction wheels, magnetorquers and control moment gyros.

- Reaction wheels: commands are motor torques, N m. The motor torque saturates
  at the wheel's limit; friction opposes the wheel's speed Omega relative to its
  body: tau_f = viscous_nms * Omega + coulomb_nm * sign(Omega). The physics layer
  cuts the torque at the speed limit (see `orbitlab.sim.kernels.wheel_torque`).
- Magnetorquers: commands are dipoles, A m^2, saturated at the element's limit.
- CMGs: commands are gimbal rates, rad/s, saturated at the rate limit; the
  physics layer stops the gimbal at its angle limits.
Misalignment (wheels and magnetorquers) turns each element's axis by a small
random rotation per world; the difference is applied as a correction torque.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.actuators.base import ActuatorGroup, ActuatorGroupCfg
from orbitlab.actuators.misalignment import rotate_small


def symmetric_limits(rows: list[dict], key: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(-limit, +limit) per element from each element row's `key`."""
    limit = torch.tensor([r[key] for r in rows], dtype=torch.float64)
    return -limit, limit


class _AxisGroup(ActuatorGroup):
    """A group whose elements act along one body axis each (for misalignment)."""

    state_attrs = (*ActuatorGroup.state_attrs, "axis_error")

    axis_key = "axis"

    def __init__(self, cfg, name, ctx, element_ids):
        self._rows = [ctx.data.model.rows[self.kind][i] for i in element_ids]
        super().__init__(cfg, name, ctx, element_ids)
        kw = {"dtype": torch.float64, "device": ctx.device}
        self.bodies = torch.as_tensor(
            [r["body"] for r in self._rows], dtype=torch.long, device=ctx.device
        )
        self.axis = torch.as_tensor(np.array([r[self.axis_key] for r in self._rows]), **kw).reshape(
            -1, 3
        )
        self.axis_error = torch.zeros((self.num_worlds, self.num, 3), **kw)

    def reset(self, worlds):
        super().reset(worlds)
        if self.cfg.misalignment_std_rad > 0.0:
            nominal = self.axis.expand(int(worlds.numel()), -1, -1)
            actual = rotate_small(nominal, self.cfg.misalignment_std_rad, self.generator)
            self.axis_error[worlds] = actual - nominal

    def axes_world(self, axes_body: torch.Tensor) -> torch.Tensor:
        """Body-axes vectors (N, n, 3) of each element's body, in world axes."""
        Q = self.ctx.frames()["Q"][:, self.bodies]
        return (Q @ axes_body[..., None])[..., 0]

    def add_torque(self, torque_world: torch.Tensor) -> None:
        zero = torch.zeros_like(torque_world)
        self.ctx.add_wrench(self.bodies, torch.cat([zero, torque_world], dim=-1))


class ReactionWheelGroup(_AxisGroup):
    kind = "wheels"
    array_name = "wheel_torque"
    cfg: ReactionWheelGroupCfg

    def __init__(self, cfg, name, ctx, element_ids):
        super().__init__(cfg, name, ctx, element_ids)
        self.wheel_inertia = torch.tensor(
            [r["inertia"] for r in self._rows], dtype=torch.float64, device=ctx.device
        )
        """Each wheel's spin inertia, kg m^2, (n,)."""
        self.single_body = int(self.bodies.unique().numel()) == 1
        """Whether every wheel of the group sits on one body."""
        self.first_body = int(self.bodies[0])  # a Python int: no host read per step

    def limits(self):
        return symmetric_limits(self._rows, "max_torque")

    def speed(self) -> torch.Tensor:
        """Wheel speeds relative to their bodies, rad/s, (N, n): h / I_w - a . omega."""
        h = self.ctx.array("wheel_momentum")[:, self.columns]
        if self.single_body:  # a . omega = a_body . omega_body, summed x, y, z in turn
            omega = self.ctx.view.body_angular_velocity(self.first_body)[:, None, :]
            a = self.axis
            spin = omega[..., 0] * a[:, 0] + omega[..., 1] * a[:, 1] + omega[..., 2] * a[:, 2]
        else:
            spin = (
                self.axes_world(self.axis.expand(self.num_worlds, -1, -1))
                * self.ctx.frames()["omega"][:, self.bodies]
            ).sum(-1)
        return h / self.wheel_inertia - spin

    def device_model(self, value):
        value = super().device_model(value)
        cfg = self.cfg
        if cfg.viscous_nms > 0.0 or cfg.coulomb_nm > 0.0:
            speed = self.speed()
            value = value - cfg.viscous_nms * speed - cfg.coulomb_nm * torch.sign(speed)
        return value

    def write(self, output):
        super().write(output)
        if self.cfg.misalignment_std_rad > 0.0:
            # The wheel reacts on the body with -tau a'; the physics layer applied -tau a.
            self.add_torque(-output[..., None] * self.axes_world(self.axis_error))


@dataclass(kw_only=True)
class ReactionWheelGroupCfg(ActuatorGroupCfg):
    """Reaction wheel group: commands are motor torques, N m."""

    class_type: type = ReactionWheelGroup
    """The class the scene builds from this config (`ReactionWheelGroup.from_scene`)."""

    viscous_nms: float = 0.0
    """Viscous friction coefficient, N m s/rad."""
    coulomb_nm: float = 0.0
    """Coulomb friction torque, N m."""


class MagnetorquerGroup(_AxisGroup):
    kind = "magnetorquers"
    array_name = "mtq_dipole"
    cfg: MagnetorquerGroupCfg

    def limits(self):
        return symmetric_limits(self._rows, "max")

    def write(self, output):
        super().write(output)
        if self.cfg.misalignment_std_rad > 0.0:
            field = self.ctx.array("mag_field_eci")[:, None, :]
            dm = output[..., None] * self.axes_world(self.axis_error)
            self.add_torque(torch.cross(dm, field.expand_as(dm), dim=-1))


@dataclass(kw_only=True)
class MagnetorquerGroupCfg(ActuatorGroupCfg):
    """Magnetorquer group: commands are dipoles, A m^2."""

    class_type: type = MagnetorquerGroup
    """The class the scene builds from this config (`MagnetorquerGroup.from_scene`)."""


class ControlMomentGyroGroup(ActuatorGroup):
    kind = "cmgs"
    array_name = "cmg_rate"
    cfg: ControlMomentGyroGroupCfg

    def __init__(self, cfg, name, ctx, element_ids):
        self._rows = [ctx.data.model.rows["cmgs"][i] for i in element_ids]
        if cfg.misalignment_std_rad > 0.0:
            raise ValueError(
                f"actuator group '{name}': CMG misalignment is not modelled; "
                "set misalignment_std_rad = 0"
            )
        super().__init__(cfg, name, ctx, element_ids)

    def limits(self):
        return symmetric_limits(self._rows, "max_rate")


@dataclass(kw_only=True)
class ControlMomentGyroGroupCfg(ActuatorGroupCfg):
    """CMG group: commands are gimbal rates, rad/s."""

    class_type: type = ControlMomentGyroGroup
    """The class the scene builds from this config (`ControlMomentGyroGroup.from_scene`)."""
