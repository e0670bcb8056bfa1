"""Thrusters: on/off valves driven by pulse-width modulation or a Schmitt trigger.

A commanded force F (N, in [0, F_max]) becomes, in `pwm` mode, an on-time
t_on = F / F_max * T within each PWM period T, sampled at the period start and
held; pulses shorter than `min_on_time_s` are dropped. Each physics step of
length dt then applies the step's mean force F_max * overlap([0, t_on], step) / dt,
so every pulse delivers exactly its impulse F_max * t_on even when t_on is not a
multiple of dt. In `schmitt` mode a valve opens when F / F_max rises above
`schmitt_on`, closes when it falls below `schmitt_off`, and stays open at least
`min_on_time_s`. In `continuous` mode the force is applied as commanded
(a throttleable engine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from orbitlab.actuators.base import ActuatorGroup, ActuatorGroupCfg
from orbitlab.actuators.misalignment import rotate_small


def sigma_delta_pulses(
    force: torch.Tensor,
    remainder: torch.Tensor,
    max_force: torch.Tensor,
    min_impulse: torch.Tensor,
    period_s: float,
    decay: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One PWM period of sigma-delta pulse modulation, per thruster.

    The impulse due is `force` x `period_s` plus the `remainder` carried from earlier
    periods. When it reaches `min_impulse` (the valve's smallest pulse, F_max x minimum
    on-time) it is fired as this period's force (capped at `max_force`), else it is kept,
    decaying by the factor `decay` per period (stale requests fade). A mean force whose
    pulse the valve would drop thus becomes occasional minimum pulses of the same mean
    impulse instead of nothing: the delivered impulse is a linear, dead-zone-free function
    of the request (to one pulse). Returns (force to command this period, new remainder).
    """
    due = force.clamp_min(0.0) * period_s + remainder
    fire = due >= min_impulse * (1.0 - 1e-9)
    out = torch.where(fire, torch.minimum(due / period_s, max_force.expand_as(force)), 0.0)
    left = (due - out * period_s) * torch.where(fire, 1.0, decay)
    left = torch.where(left > 1e-9, left, 0.0)  # no denormals (slow on CPUs)
    return out, left


class ThrusterGroup(ActuatorGroup):
    """PWM / Schmitt-trigger thrusters writing `thruster_force`."""

    state_attrs = (
        *ActuatorGroup.state_attrs,
        "phase",
        "on_time",
        "valve_open",
        "open_steps",
        "direction_error",
    )

    kind = "thrusters"
    array_name = "thruster_force"
    cfg: ThrusterGroupCfg

    def __init__(self, cfg: ThrusterGroupCfg, name, ctx, element_ids):
        rows = [ctx.data.model.rows["thrusters"][i] for i in element_ids]
        self._rows = rows
        super().__init__(cfg, name, ctx, element_ids)
        owner = f"actuator group '{name}'"
        if cfg.mode not in ("pwm", "schmitt", "continuous"):
            raise ValueError(
                f"{owner}: mode must be 'pwm', 'schmitt' or 'continuous', got {cfg.mode!r}"
            )
        dt = ctx.dt
        steps = cfg.pwm_period_s / dt
        if cfg.mode == "pwm" and (steps < 1.0 - 1e-9 or abs(steps - round(steps)) > 1e-6):
            raise ValueError(
                f"{owner}: pwm_period_s {cfg.pwm_period_s} s must be a whole "
                f"number (>= 1) of physics steps of {dt} s"
            )
        if cfg.min_on_time_s < 0.0:
            raise ValueError(f"{owner}: min_on_time_s must be >= 0 s, got {cfg.min_on_time_s}")
        if cfg.allocation_solver not in ("kernel", "torch"):
            raise ValueError(
                f"{owner}: allocation_solver must be 'kernel' or 'torch', "
                f"got {cfg.allocation_solver!r}"
            )
        if not 0.0 <= cfg.schmitt_off <= cfg.schmitt_on <= 1.0:
            raise ValueError(
                f"{owner}: need 0 <= schmitt_off <= schmitt_on <= 1, got "
                f"{cfg.schmitt_off}, {cfg.schmitt_on}"
            )
        self.period_steps = max(1, round(steps))
        self.min_on_steps = math.ceil(cfg.min_on_time_s / dt - 1e-9)
        n, kw = self.num_worlds, {"device": ctx.device}
        self.phase = torch.zeros(n, dtype=torch.long, **kw)
        self.on_time = torch.zeros((n, self.num), dtype=torch.float64, **kw)
        """Valve on-time of the current PWM period, s."""
        self.valve_open = torch.zeros((n, self.num), dtype=torch.bool, **kw)
        self.open_steps = torch.zeros((n, self.num), dtype=torch.long, **kw)
        self.bodies = torch.as_tensor([r["body"] for r in rows], dtype=torch.long, **kw)
        self.direction = torch.as_tensor(
            np.array([r["dir"] for r in rows]), dtype=torch.float64, **kw
        )
        ipos = ctx.data.model.mj_model.body_ipos[[r["body"] for r in rows]]
        self.arm = torch.as_tensor(
            np.array([r["pos"] for r in rows]) - ipos, dtype=torch.float64, **kw
        )
        self.direction_error = torch.zeros((n, self.num, 3), dtype=torch.float64, **kw)

    def allocator(self):
        """A `ThrusterAllocator` for this group's thrusters about their body's COM (built once).

        All thrusters of the group must sit on one body.
        """
        if getattr(self, "_allocator", None) is None:
            from orbitlab.actuators.allocation import ThrusterAllocator

            bodies = {r["body"] for r in self._rows}
            if len(bodies) != 1:
                raise ValueError(
                    f"actuator group '{self.name}': allocation needs every thruster on one body"
                )
            com = self.ctx.data.model.mj_model.body_ipos[bodies.pop()]
            self._allocator = ThrusterAllocator(
                np.array([r["pos"] for r in self._rows]),
                self.direction.cpu().numpy(),
                self.high[0].cpu().numpy(),
                center_of_mass_m=com,
                device=self.ctx.device,
                solver=self.cfg.allocation_solver,
            )
        return self._allocator

    def set_wrench_command(self, wrench_body: torch.Tensor, worlds: torch.Tensor | None = None):
        """Command a body wrench [force N (3), torque N m (3) about the COM, body axes]:
        allocate it to non-negative thruster forces within each world's limits (failed
        thrusters excluded, degraded ones scaled) and hold those forces as the command.

        Returns the `AllocationResult` (achieved wrench, residual, achievable flags).
        """
        rows = slice(None) if worlds is None else worlds
        failure, high = self.failure[rows], self.high[rows]
        limit = torch.where(failure == 0, self.gain[rows] * high, 0.0)
        stuck_on = torch.where(failure == 1, high, 0.0)  # fires anyway: allocate the rest
        allocator = self.allocator()
        wrench = torch.as_tensor(wrench_body, dtype=torch.float64, device=self.ctx.device)
        stuck_wrench = stuck_on @ allocator.matrix.T
        result = allocator.allocate(wrench - stuck_wrench, limit)
        result.achieved = result.achieved + stuck_wrench
        result.residual = wrench - result.achieved
        gain = self.gain[rows].clamp_min(1e-12)
        self.set_command(torch.where(limit > 0.0, result.forces / gain, 0.0), worlds)
        return result

    def limits(self):
        return (
            torch.zeros(len(self._rows)),
            torch.tensor([r["max"] for r in self._rows], dtype=torch.float64),
        )

    def reset(self, worlds):
        super().reset(worlds)
        self.phase[worlds] = 0
        self.on_time[worlds] = 0.0
        self.valve_open[worlds] = False
        self.open_steps[worlds] = 0
        if self.cfg.misalignment_std_rad > 0.0:
            nominal = self.direction.expand(int(worlds.numel()), -1, -1)
            actual = rotate_small(nominal, self.cfg.misalignment_std_rad, self.generator)
            self.direction_error[worlds] = actual - nominal

    def device_model(self, value):
        value = super().device_model(value)
        if self.cfg.mode == "continuous":
            return value
        if self.cfg.mode == "schmitt":
            return self._schmitt(value)
        return self._pwm(value)

    def _pwm(self, value: torch.Tensor) -> torch.Tensor:
        # state is written in place: it may be a column view of the fused stage's arrays
        dt = self.ctx.dt
        period = self.period_steps * dt
        start = self.phase == 0
        on_time = torch.where(self.high > 0.0, value / self.high.clamp_min(1e-300), 0.0) * period
        on_time = torch.where(on_time < self.cfg.min_on_time_s - 1e-12, 0.0, on_time)
        self.on_time.copy_(torch.where(start[:, None], on_time, self.on_time))
        elapsed = (self.phase.to(torch.float64) * dt)[:, None]
        fraction = ((self.on_time - elapsed).clamp(0.0, dt)) / dt
        self.phase.copy_((self.phase + 1) % self.period_steps)
        return self.high * fraction

    def _schmitt(self, value: torch.Tensor) -> torch.Tensor:
        duty = torch.where(self.high > 0.0, value / self.high.clamp_min(1e-300), 0.0)
        held = self.valve_open & (self.open_steps < self.min_on_steps)
        opened = (duty > self.cfg.schmitt_on) | (self.valve_open & (duty >= self.cfg.schmitt_off))
        self.valve_open.copy_(opened | held)
        self.open_steps.copy_(torch.where(self.valve_open, self.open_steps + 1, 0))
        return torch.where(self.valve_open, self.high, 0.0)

    def write(self, output):
        super().write(output)
        if self.cfg.misalignment_std_rad > 0.0:
            self._misalignment_wrench(output)

    def _misalignment_wrench(self, force: torch.Tensor) -> None:
        """The extra wrench of the misaligned directions: F (d' - d) at the thruster arm."""
        Q = self.ctx.frames()["Q"][:, self.bodies]  # (N, n, 3, 3)
        df_body = force[..., None] * self.direction_error
        dtau_body = torch.cross(self.arm.expand_as(df_body), df_body, dim=-1)
        df = (Q @ df_body[..., None])[..., 0]
        dtau = (Q @ dtau_body[..., None])[..., 0]
        self.ctx.add_wrench(self.bodies, torch.cat([df, dtau], dim=-1))


@dataclass(kw_only=True)
class ThrusterGroupCfg(ActuatorGroupCfg):
    """Thruster group: commands are forces, N."""

    class_type: type = ThrusterGroup
    """The class the scene builds from this config (`ThrusterGroup.from_scene`)."""

    mode: Literal["pwm", "schmitt", "continuous"] = "pwm"
    """Valve model (see the module docstring)."""
    pwm_period_s: float = 0.1
    """PWM period T, s (10 Hz by default); a whole number of physics steps."""
    min_on_time_s: float = 0.001
    """Minimum valve on-time, s; shorter pulses are dropped."""
    schmitt_on: float = 0.5
    """Schmitt trigger: opens above this fraction of the maximum force."""
    schmitt_off: float = 0.25
    """Schmitt trigger: closes below this fraction of the maximum force."""
    allocation_solver: Literal["kernel", "torch"] = "kernel"
    """How `set_wrench_command` allocates a wrench to the thrusters: 'kernel' (one Warp
    kernel, each world's problem in its own thread) or 'torch' (the reference solver; see
    `orbitlab.actuators.allocation`)."""
