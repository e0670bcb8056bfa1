"""Command mappings as nodes: body torque to wheels or magnetorquers, Hill-frame force to a body
wrench, and a body wrench to thruster forces through an allocator."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from orbitlab.agent.node import Node, NodeCfg

_IDENTITY_AXES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
_MIN_FIELD_T = 1e-15  # |B| below this (T): no magnetic torque is possible, the command is zero


def axis_matrix(axes: object, name: str, owner: str, device: torch.device) -> torch.Tensor:
    """Unit axes (k, 3) as the columns of a (3, k) matrix."""
    a = torch.as_tensor(axes, dtype=torch.float64, device=device)
    if a.ndim != 2 or a.shape[1] != 3 or a.shape[0] < 1:
        raise ValueError(
            f"node '{owner}': {name} must be k >= 1 three-vectors, got shape {tuple(a.shape)}"
        )
    norm = a.norm(dim=1, keepdim=True)
    if bool((norm <= 0).any()):
        raise ValueError(f"node '{owner}': {name} must be non-zero vectors")
    return (a / norm).T.contiguous()


def limit_largest(commands: torch.Tensor, limit: float) -> torch.Tensor:
    """Scale each row down so its largest |entry| is at most `limit` (keeps the direction)."""
    if math.isinf(limit):
        return commands
    largest = commands.abs().amax(dim=-1, keepdim=True)
    return commands * torch.clamp(limit / largest.clamp_min(1e-300), max=1.0)


class TorqueToWheelsNode(Node):
    """Motor torques tau_w = -pinv(A) tau for the wheel-axis matrix A (3 x k).

    A wheel driven with motor torque tau_w,i reacts on the body with -tau_w,i a_i, so the body
    receives -A tau_w = A pinv(A) tau = tau when the axes span 3-D (the least-norm motor torques
    that do so). Input: torque (N, 3) N m, body axes. Output: wheel_torque (N, k) N m.
    """

    cfg: TorqueToWheelsCfg

    input_names = ("torque",)
    output_names = ("wheel_torque",)

    def __init__(
        self,
        cfg: TorqueToWheelsCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.axes = axis_matrix(cfg.wheel_axes, "wheel_axes", name, self.device)
        self.distribution = torch.linalg.pinv(self.axes)
        """pinv(A), (k, 3)."""

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        wheel = -inputs["torque"] @ self.distribution.T
        return {"wheel_torque": limit_largest(wheel, self.cfg.max_wheel_torque_nm)}


@dataclass(kw_only=True)
class TorqueToWheelsCfg(NodeCfg):
    """Reaction-wheel torque distribution."""

    class_type: type | None = TorqueToWheelsNode
    """The node `build` makes from this config."""

    wheel_axes: tuple[tuple[float, float, float], ...] = _IDENTITY_AXES
    """Spin axis of each of the k wheels, body axes (normalised here)."""
    max_wheel_torque_nm: float = math.inf
    """Motor torque limit, N m; a larger command is scaled down as a whole (keeps direction)."""


class TorqueToMagnetorquersNode(Node):
    """m = (B x tau) / |B|^2 in body axes, then d = pinv(D) m on the k rod axes D (3 x k).

    m x B = tau - b (b . tau) with b = B/|B|: the part of tau normal to the field (the part
    along B cannot be made magnetically). Zero command where |B| is (numerically) zero.
    Inputs: torque (N, 3) N m, magnetometer (N, 3) T, body axes. Output: mtq_dipole (N, k)
    A m^2 per rod (body axes x, y, z for the default axes).
    """

    cfg: TorqueToMagnetorquersCfg

    input_names = ("torque", "magnetometer")
    output_names = ("mtq_dipole",)

    def __init__(
        self,
        cfg: TorqueToMagnetorquersCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.axes = axis_matrix(cfg.dipole_axes, "dipole_axes", name, self.device)
        self.projection = torch.linalg.pinv(self.axes)
        """pinv(D), (k, 3)."""

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        field_t = inputs["magnetometer"]
        square = (field_t * field_t).sum(-1, keepdim=True)
        ok = square > _MIN_FIELD_T**2
        dipole = torch.cross(field_t, inputs["torque"], dim=-1) / square.clamp_min(_MIN_FIELD_T**2)
        rods = torch.where(ok, dipole, 0.0) @ self.projection.T
        return {"mtq_dipole": limit_largest(rods, self.cfg.max_dipole_am2)}


@dataclass(kw_only=True)
class TorqueToMagnetorquersCfg(NodeCfg):
    """Magnetorquer dipole for a desired torque."""

    class_type: type | None = TorqueToMagnetorquersNode
    """The node `build` makes from this config."""

    dipole_axes: tuple[tuple[float, float, float], ...] = _IDENTITY_AXES
    """Dipole axis of each of the k magnetorquers, body axes (normalised here)."""
    max_dipole_am2: float = math.inf
    """Per-rod dipole limit, A m^2; a larger command is scaled down as a whole."""


class HillForceToBodyNode(Node):
    """wrench_body = [R f_H, tau] with R = hill_to_body (v_B = R v_H); tau = 0 if not given.

    Inputs: force_hill (N, 3) N, Hill axes; hill_to_body (N, 3, 3); optional torque (N, 3) N m,
    body axes. Output: wrench_body (N, 6): force N, torque N m, body axes.
    """

    input_names = ("force_hill", "hill_to_body")
    optional_inputs = ("torque",)
    output_names = ("wrench_body",)

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        force = (inputs["hill_to_body"] @ inputs["force_hill"][..., None])[..., 0]
        torque = inputs.get("torque")
        if torque is None:
            torque = torch.zeros_like(force)
        return {"wrench_body": torch.cat([force, torque], dim=-1)}


@dataclass(kw_only=True)
class HillForceToBodyCfg(NodeCfg):
    """Hill-frame force to a body wrench (no parameters beyond timing and wiring)."""

    class_type: type | None = HillForceToBodyNode
    """The node `build` makes from this config."""


class VelocityLoopNode(Node):
    """A force that drives a velocity to its command (any common axes, e.g. Hill).

    Inputs: velocity_command (N, 3) m/s, velocity (N, 3) m/s. Output: force (N, 3) N,
    m (v_cmd - v) / tau clipped to +-max_force per axis. The inner loop under a learned
    guidance policy whose action is the velocity command.
    """

    cfg: VelocityLoopCfg

    input_names = ("velocity_command", "velocity")
    output_names = ("force",)

    def __init__(
        self,
        cfg: VelocityLoopCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        for field_name in ("mass_kg", "time_constant_s", "max_force_n"):
            value = getattr(cfg, field_name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name}: {field_name} = {value} must be finite and > 0")
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.gain = cfg.mass_kg / cfg.time_constant_s

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        error = inputs["velocity_command"] - inputs["velocity"]
        limit = self.cfg.max_force_n
        return {"force": (self.gain * error).clamp(-limit, limit)}


@dataclass(kw_only=True)
class VelocityLoopCfg(NodeCfg):
    """Proportional velocity loop: force = m (v_cmd - v) / tau, per axis within +-max_force."""

    class_type: type | None = VelocityLoopNode
    """The node `build` makes from this config."""

    mass_kg: float = 1.0
    """Mass the loop accelerates, kg."""
    time_constant_s: float = 2.0
    """Time constant of the velocity error's decay, s."""
    max_force_n: float = 1.0
    """Per-axis force limit, N."""


class AllocationNode(Node):
    """Thruster forces for a requested body wrench: `allocator.allocate(wrench).forces`.

    The allocator's full result of the last update is kept in `last_result` (e.g. its residual
    or achievability). Input: wrench_body (N, 6) [force N, torque N m], body axes. Output:
    thruster_force (N, n) N.
    """

    state_attrs = (*Node.state_attrs, "last_result")

    cfg: AllocationCfg

    input_names = ("wrench_body",)
    output_names = ("thruster_force",)

    def __init__(
        self,
        cfg: AllocationCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        if not callable(getattr(cfg.allocator, "allocate", None)):
            raise TypeError(f"node '{name}': cfg.allocator must have an allocate(wrench) method")
        self.last_result: Any = None

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self.last_result = self.cfg.allocator.allocate(inputs["wrench_body"])
        return {"thruster_force": self.last_result.forces}


@dataclass(kw_only=True)
class AllocationCfg(NodeCfg):
    """Wrench allocation through any object with `allocate(wrench) -> result` (result.forces)."""

    class_type: type | None = AllocationNode
    """The node `build` makes from this config."""

    allocator: Any = None
    """E.g. `orbitlab.actuators.allocation.ThrusterAllocator`; required."""
