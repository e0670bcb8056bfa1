"""The docking baseline's own nodes: navigation, glideslope guidance, pulse modulation.

    relative_nav, star_tracker, gyro, gnss
      -> DockingNavNode     tip pos/vel in port axes, hill_to_body, target_attitude, ...
      -> GlideslopeNode     force_hill (velocity loop on a glideslope along the port axis)
      -> HillForceToBodyNode (orbitlab) -> AllocationNode (orbitlab) -> thruster_force
      -> PulseModulatorNode rcs_force (sigma-delta: keeps pulses above the valve minimum)
    star_tracker, gyro, target_attitude -> QuaternionPDNode -> TorqueToWheelsNode (orbitlab)

Docking-Velocity replaces GlideslopeNode by a learned policy's velocity command (port axes)
and orbitlab's VelocityLoopNode; HillForceToBodyNode then rotates with port_to_body."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from orbitlab.actuators.thrusters import sigma_delta_pulses
from orbitlab.agent.node import Node, NodeCfg
from orbitlab.sensors.rotations import quat_from_matrix
from orbitlab_tasks.docking.mdp import (
    DEG,
    approach_speed_limit,
    docking_rotation,
    measured_state,
)


class DockingNavNode(Node):
    """The docking state from sensor readings (see `mdp.measured_state`).

    Inputs: relative_nav (N, 10), star_tracker (N, 4), gyro (N, 3), gnss (N, 6).
    Outputs: tip_pos_port, tip_vel_port (N, 3) m, m/s; hill_to_body, port_to_hill,
    port_to_body (N, 3, 3); target_attitude (N, 4) the docking attitude body -> ECI;
    misalignment (N,) rad, the probe axis from the port's inward axis.
    """

    input_names = ("relative_nav", "star_tracker", "gyro", "gnss")
    output_names = (
        "tip_pos_port",
        "tip_vel_port",
        "hill_to_body",
        "port_to_hill",
        "port_to_body",
        "target_attitude",
        "misalignment",
    )

    def __init__(
        self,
        cfg: DockingNavCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.lever = torch.as_tensor(cfg.lever_m, dtype=torch.float64, device=self.device)

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        s = measured_state(
            inputs["relative_nav"],
            inputs["star_tracker"],
            inputs["gyro"],
            inputs["gnss"],
            self.lever,
        )
        port_to_eci = s["eci_to_hill"].transpose(-1, -2) @ s["port_to_hill"]
        target = quat_from_matrix(port_to_eci @ docking_rotation(port_to_eci))
        probe_in_port = s["body_to_port"][:, :, 0]
        mis = torch.acos((-probe_in_port[:, 2]).clamp(-1.0, 1.0))
        return {
            "tip_pos_port": s["pos"],
            "tip_vel_port": s["vel"],
            "hill_to_body": s["body_to_hill"].transpose(-1, -2),
            "port_to_hill": s["port_to_hill"],
            "port_to_body": s["body_to_port"].transpose(-1, -2),
            "target_attitude": target,
            "misalignment": mis,
        }


@dataclass(kw_only=True)
class DockingNavCfg(NodeCfg):
    """Docking navigation from relative nav, star tracker, gyro and GNSS readings."""

    class_type: type | None = DockingNavNode
    """The node `build` makes from this config."""

    lever_m: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """Probe tip minus the relative-nav point, body axes, m."""


class GlideslopeNode(Node):
    """A velocity loop on a glideslope: closing speed final + along / tau (capped) towards
    the port, lateral speed -offset / tau_lat, force = m k (v_ref - v) in port axes, turned
    to Hill axes. Closing stops (the range holds) while the tip is off the axis by more
    than the gate or, near the port, the probe is misaligned.

    Inputs: tip_pos_port, tip_vel_port (N, 3), port_to_hill (N, 3, 3), misalignment (N,).
    Output: force_hill (N, 3) N.
    """

    input_names = ("tip_pos_port", "tip_vel_port", "port_to_hill", "misalignment")
    output_names = ("force_hill",)
    cfg: GlideslopeCfg

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        c = self.cfg
        pos, vel = inputs["tip_pos_port"], inputs["tip_vel_port"]
        along = pos[:, 2]
        lateral = pos[:, :2]
        offset = torch.linalg.vector_norm(lateral, dim=-1)
        closing = approach_speed_limit(along, c.final_speed_mps, c.max_speed_mps, c.time_constant_s)
        gate = offset <= c.gate_lateral_m + c.gate_lateral_slope * along.clamp_min(0.0)
        gate &= (along > c.gate_range_m) | (inputs["misalignment"] <= c.gate_misalignment_rad)
        v_lat = -lateral / c.lateral_time_constant_s
        v_lat = v_lat * (
            c.max_lateral_speed_mps
            / torch.linalg.vector_norm(v_lat, dim=-1, keepdim=True).clamp_min(1e-12)
        ).clamp(max=1.0)
        v_ref = torch.cat([v_lat, torch.where(gate, -closing, 0.0)[:, None]], -1)
        force = c.mass_kg * c.velocity_gain_per_s * (v_ref - vel)
        norm = torch.linalg.vector_norm(force, dim=-1, keepdim=True)
        force = force * (c.max_force_n / norm.clamp_min(1e-12)).clamp(max=1.0)
        return {"force_hill": (inputs["port_to_hill"] @ force[..., None])[..., 0]}


@dataclass(kw_only=True)
class GlideslopeCfg(NodeCfg):
    """Glideslope guidance along the port axis."""

    class_type: type | None = GlideslopeNode
    """The node `build` makes from this config."""

    mass_kg: float
    """Chaser mass, kg."""
    final_speed_mps: float = 0.05
    """Closing speed at the port, m/s (the latch accepts < 0.1)."""
    max_speed_mps: float = 0.3
    """Closing speed cap far out, m/s."""
    time_constant_s: float = 50.0
    """Range / (speed - final speed) on the glideslope, s."""
    lateral_time_constant_s: float = 8.0
    """Lateral position loop: commanded lateral speed = -offset / this, s."""
    max_lateral_speed_mps: float = 0.1
    """Lateral speed cap, m/s."""
    velocity_gain_per_s: float = 0.4
    """Velocity loop: acceleration = gain * speed error, 1/s."""
    max_force_n: float = 40.0
    """Force norm limit, N."""
    gate_lateral_m: float = 0.02
    """Hold the range (no closing) while the lateral offset exceeds this plus
    `gate_lateral_slope` x along-axis distance, m ..."""
    gate_lateral_slope: float = 0.1
    """... (m per m)."""
    gate_misalignment_rad: float = 2.5 * DEG
    """... or, within `gate_range_m`, while the probe is misaligned by more than this."""
    gate_range_m: float = 3.0
    """Range of the misalignment gate, m."""


class PulseModulatorNode(Node):
    """Per thruster: impulse due = force x T + remainder; fire it as this period's force when
    it reaches the minimum impulse F_max t_min (capped at F_max), else keep it as the
    remainder (decaying with `leak_time_constant_s`). Small mean forces thus become
    occasional minimum pulses with the requested average instead of nothing
    (`orbitlab.actuators.thrusters.sigma_delta_pulses`).

    Input: thruster_force (N, n) N. Output: rcs_force (N, n) N.
    """

    state_attrs = (*Node.state_attrs, "remainder")

    input_names = ("thruster_force",)
    output_names = ("rcs_force",)
    cfg: PulseModulatorCfg

    def __init__(
        self,
        cfg: PulseModulatorCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.max_force = torch.as_tensor(cfg.max_force_n, dtype=torch.float64, device=self.device)
        self.remainder: torch.Tensor | None = None
        self.decay = math.exp(-self.update_period_s / cfg.leak_time_constant_s)

    def reset_state(self, worlds: torch.Tensor | slice) -> None:
        if self.remainder is not None:
            self.remainder[worlds] = 0.0

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        force = inputs["thruster_force"]
        if self.remainder is None:
            self.remainder = torch.zeros_like(force)
        out, left = sigma_delta_pulses(
            force,
            self.remainder,
            self.max_force,
            self.max_force * self.cfg.min_on_time_s,
            self.update_period_s,
            self.decay,
        )
        self.remainder = torch.where(self.due[:, None], left, self.remainder)
        return {"rcs_force": out}


@dataclass(kw_only=True)
class PulseModulatorCfg(NodeCfg):
    """Sigma-delta modulation of mean thruster forces into pulses the valves can fire.
    `period_s` must be the thrusters' PWM period (and start with it at reset)."""

    class_type: type | None = PulseModulatorNode
    """The node `build` makes from this config."""

    max_force_n: float | tuple[float, ...] = 22.0
    """Thrust of each thruster, N."""
    min_on_time_s: float = 0.01
    """Valve minimum on-time, s (shorter pulses are dropped by the valve model)."""
    leak_time_constant_s: float = 10.0
    """Time constant with which an unfired remainder decays, s (forgets stale requests)."""
