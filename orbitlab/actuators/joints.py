"""MuJoCo's own actuators (e.g. a robotic arm's position servos) as an actuator group.

Commands are the MJCF actuators' controls (`ctrl`, in their own units: target
angles for position servos, torques for motors), clipped to each actuator's
`ctrlrange` when it is limited; latency, lag, gains and failures apply as for
every group, and the result is written into MuJoCo's per-world `ctrl`.

Position servos (MuJoCo's `<position>`: force = kp (ctrl - q) - kv q') are servos, not
amplifiers: their gain (`gain_range`, a degraded failure) scales kp and kv, and a stuck-off
failure makes the joint limp (kp = kv = 0), both through per-world actuator parameters
(`OrbitData.expand`), while the target passes unscaled; a stuck-on servo drives to the top
of its range. `rate_limit` slews each world's target by at most that many units per second
(the first write after a reset jumps to the target).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from orbitlab.actuators.base import STUCK_OFF, STUCK_ON, ActuatorGroup, ActuatorGroupCfg
from orbitlab.quiet import wp


class MujocoActuatorGroup(ActuatorGroup):
    kind = "mujoco"
    array_name = "ctrl"

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, index):
        """The entity's MJCF actuators that `cfg.elements` names (None: all of them)."""
        m = scene.mj_model
        own = {
            m.actuator(i).name.removeprefix(f"{entity}/"): i
            for i in range(m.nu)
            if m.actuator(i).name.startswith(f"{entity}/")
        }
        selected = list(own) if cfg.elements is None else list(cfg.elements)
        missing = [n for n in selected if n not in own]
        if missing or not selected:
            raise ValueError(
                f"actuator group '{name}': no MJCF actuators named {missing or 'any'} "
                f"on entity '{entity}' (it has: {', '.join(own) or 'none'})"
            )
        return cls(cfg, name, scene.actuator_context, [own[n] for n in selected])

    state_attrs = (*ActuatorGroup.state_attrs, "slewed", "fresh")

    def __init__(self, cfg, name, ctx, actuator_ids: list[int]):
        m = ctx.data.model.mj_model
        self._limited = m.actuator_ctrllimited[actuator_ids].astype(bool)
        self._range = m.actuator_ctrlrange[actuator_ids]
        gain, bias = m.actuator_gainprm[actuator_ids], m.actuator_biasprm[actuator_ids]
        servo = (
            (m.actuator_biastype[actuator_ids] == mujoco.mjtBias.mjBIAS_AFFINE)
            & (gain[:, 0] > 0.0)
            & (bias[:, 1] == -gain[:, 0])
        )
        super().__init__(cfg, name, ctx, actuator_ids)
        kw = {"dtype": torch.float64, "device": ctx.device}
        self.servo = torch.as_tensor(servo, device=ctx.device)
        """Which elements are position servos (their gain and failures act on kp and kv)."""
        self._servo_elements = [int(i) for i in np.flatnonzero(servo)]
        self._kp = torch.as_tensor(gain[:, 0], **kw)
        self._kv = torch.as_tensor(-bias[:, 2], **kw)
        self._per_world_params = False
        self.slewed = torch.zeros((self.num_worlds, self.num), **kw)
        """The rate-limited output of the last physics step, (num_worlds, num)."""
        self.fresh = torch.ones(self.num_worlds, dtype=torch.bool, device=ctx.device)
        rate = cfg.rate_limit
        self._rate_step = None if rate is None else torch.as_tensor(rate, **kw) * ctx.dt
        if cfg.damping is not None:
            kv = torch.as_tensor(cfg.damping, **kw).expand(self.num)
            self._kv = torch.where(self.servo, kv, self._kv)
        f = cfg.failures
        if self._servo_elements and (
            tuple(cfg.gain_range) != (1.0, 1.0)
            or f.stuck_off_prob > 0.0
            or f.degraded_prob > 0.0
            or cfg.damping is not None
        ):
            self._servo_params(torch.arange(self.num_worlds, device=ctx.device))

    def limits(self):
        low = np.where(self._limited, self._range[:, 0], -np.inf)
        high = np.where(self._limited, self._range[:, 1], np.inf)
        return torch.as_tensor(low), torch.as_tensor(high)

    def apply(self) -> None:
        """The base pipeline, except that a position servo's gain and stuck-off failure act on
        its kp and kv (`_servo_params`), not on its target."""
        if not self._servo_elements:
            return super().apply()
        delayed = self.delay.push(self.command)
        self.lag_state += self.alpha * (delayed - self.lag_state)
        scaled = self.gain * self.lag_state
        value = torch.where(self.servo, self.lag_state, scaled)
        off = (self.failure == STUCK_OFF) & ~self.servo
        value = torch.where(off, 0.0, value)
        value = torch.where(self.failure == STUCK_ON, self.high, value)
        self.output.copy_(self.device_model(value))
        self.write(self.output)
        return None

    def reset(self, worlds):
        super().reset(worlds)
        self.fresh[worlds] = True
        if self._per_world_params:
            self._servo_params(worlds)

    def set_failure(self, worlds, element: int, mode: str, scale: float = 1.0) -> None:
        super().set_failure(worlds, element, mode, scale)
        if element in self._servo_elements:
            self._servo_params(torch.as_tensor(worlds, device=self.ctx.device).reshape(-1))

    def _servo_params(self, worlds: torch.Tensor) -> None:
        """Per-world kp and kv of the position servos of `worlds`: nominal x gain, 0 when
        stuck off (limp)."""
        data = self.ctx.data
        gainprm = _torch(data.expand("actuator_gainprm"))
        biasprm = _torch(data.expand("actuator_biasprm"))
        self._per_world_params = True
        scale = torch.where(self.failure[worlds] == STUCK_OFF, 0.0, self.gain[worlds])
        scale = torch.where(self.servo, scale, 1.0)
        rows, cols = worlds[:, None], self.ids[None, :]
        kp = (self._kp * scale).to(gainprm.dtype)
        gainprm[rows, cols, 0] = kp
        biasprm[rows, cols, 1] = -kp
        biasprm[rows, cols, 2] = -(self._kv * scale).to(biasprm.dtype)

    def write(self, output):
        if self._rate_step is not None:
            step = self._rate_step
            moved = self.slewed + torch.minimum(torch.maximum(output - self.slewed, -step), step)
            output = torch.where(self.fresh[:, None], output, moved)
            self.slewed.copy_(output)
            self.fresh.zero_()
        ctrl = self.ctx.array("ctrl")
        ctrl[:, self.ids] = output.to(ctrl.dtype)


@dataclass(kw_only=True)
class MujocoActuatorGroupCfg(ActuatorGroupCfg):
    """A group of the MJCF's actuators, named in `elements` (None: all of the entity's)."""

    class_type: type = MujocoActuatorGroup
    """The class the scene builds from this config (`MujocoActuatorGroup.from_scene`)."""
    rate_limit: float | tuple[float, ...] | None = None
    """Largest change of each control per second, in its units per s (a position servo's
    target slew rate, rad/s); None: none."""
    damping: float | tuple[float, ...] | None = None
    """Velocity gain kv of the group's position servos, N m s/rad (N s/m on a slide), one for
    all or one per element (a non-servo element's entry is ignored); None: the MJCF's. A
    servo carrying a payload far heavier than its own link needs it to stay well damped."""

    def validate(self, owner: str) -> None:
        super().validate(owner)
        if self.damping is not None:
            kv = np.atleast_1d(np.asarray(self.damping, dtype=np.float64))
            if not (np.all(np.isfinite(kv)) and np.all(kv >= 0.0)):
                raise ValueError(
                    f"{owner}: damping must be >= 0 N m s/rad (or None), got {self.damping!r}"
                )
        if self.rate_limit is not None:
            rates = np.atleast_1d(np.asarray(self.rate_limit, dtype=np.float64))
            if not (np.all(np.isfinite(rates)) and np.all(rates > 0.0)):
                raise ValueError(
                    f"{owner}: rate_limit must be > 0 per second (or None), got {self.rate_limit!r}"
                )


def _torch(values) -> torch.Tensor:
    """A torch view of an expanded model field (numpy on the CPU backend, Warp elsewhere)."""
    if isinstance(values, np.ndarray):
        return torch.from_numpy(values)
    return wp.to_torch(values)
