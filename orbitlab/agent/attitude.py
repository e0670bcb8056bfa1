"""Attitude controllers as nodes: B-dot detumbling and a quaternion PD law.

Quaternions are (w, x, y, z), scalar first, Hamilton product, unit norm. An attitude q
"body -> inertial" maps body-axis coordinates to inertial ones: v_I = q (x) (0, v_B) (x) q^*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from orbitlab.agent.laws import quaternion_pd_torque, scale_to_norm
from orbitlab.agent.node import Node, NodeCfg
from orbitlab.sensors.rotations import quat_conjugate, quat_multiply

_TINY_FIELD_T = 1e-15  # |B| below this (T) counts as no field: the normalised law commands zero


def vector_param(
    value: float | tuple[float, ...], name: str, owner: str, device: torch.device
) -> torch.Tensor:
    """A scalar or 3-tuple config value as a (3,) float64 tensor."""
    t = torch.as_tensor(value, dtype=torch.float64, device=device).reshape(-1)
    if t.numel() == 1:
        t = t.expand(3)
    if t.numel() != 3:
        raise ValueError(f"node '{owner}': {name} needs 1 or 3 values, got {t.numel()}")
    return t.clone()


def bdot_gain(mean_motion_rad_s: float, inclination_rad: float, min_inertia_kgm2: float) -> float:
    """Avanzini-Giulietti B-dot gain k = 2 n (1 + sin i) J_min, N m s.

    Fact (Avanzini and Giulietti, 2012): for the detumbling law on the unit field direction
    b = B/|B|, m = -(k/|B|) db/dt, this gain gives the fastest uniform decay of the angular
    rate, with n the orbit's mean motion, i its inclination to the geomagnetic equator (the
    geographic inclination is the usual approximation) and J_min the smallest principal moment
    of inertia. Use it with `BDotCfg(normalized=True)`; for the plain law m = -k' dB/dt the
    equivalent gain is k' = k / |B|^2 (A m^2 s / T) at a typical field magnitude |B|.

    Args:
        mean_motion_rad_s: orbit mean motion n, rad/s.
        inclination_rad: orbit inclination to the geomagnetic equator, rad.
        min_inertia_kgm2: smallest principal moment of inertia, kg m^2.
    """
    return 2.0 * mean_motion_rad_s * (1.0 + math.sin(inclination_rad)) * min_inertia_kgm2


class BDotNode(Node):
    """Dipole opposing the change of the body-frame field: m = -k (B_now - B_prev) / period.

    B_prev is the reading at this node's previous update, so the derivative is a backward
    difference over `update_period_s`; the first update after a reset has no previous reading
    and commands zero. The torque m x B then damps the body rate. Output per-axis clipped to
    `max_dipole_am2`.
    Inputs: magnetometer (N, 3) T, body axes. Output: mtq_dipole (N, 3) A m^2, body axes.
    """

    state_attrs = (*Node.state_attrs, "previous", "has_previous")
    cfg: BDotCfg

    input_names = ("magnetometer",)
    output_names = ("mtq_dipole",)

    def __init__(
        self,
        cfg: BDotCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.max_dipole = vector_param(cfg.max_dipole_am2, "max_dipole_am2", name, self.device)
        if bool((self.max_dipole < 0).any()):
            raise ValueError(f"node '{name}': max_dipole_am2 must be >= 0")
        self.previous = torch.zeros((num_envs, 3), dtype=torch.float64, device=self.device)
        """Field signal (B in T, or B/|B| when normalized) at the last update, (N, 3)."""
        self.has_previous = torch.zeros(num_envs, dtype=torch.bool, device=self.device)

    def reset_state(self, worlds: torch.Tensor | slice) -> None:
        self.previous[worlds] = 0.0
        self.has_previous[worlds] = False

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        field_t = inputs["magnetometer"]
        signal = field_t
        if self.cfg.normalized:
            magnitude = field_t.norm(dim=-1, keepdim=True)
            signal = torch.where(
                magnitude > _TINY_FIELD_T, field_t / magnitude.clamp_min(_TINY_FIELD_T), 0.0
            )
        dipole = -self.cfg.gain * (signal - self.previous) / self.update_period_s
        if self.cfg.normalized:
            dipole = torch.where(
                magnitude > _TINY_FIELD_T, dipole / magnitude.clamp_min(_TINY_FIELD_T), 0.0
            )
        dipole = torch.where(self.has_previous[:, None], dipole, 0.0)
        dipole = torch.maximum(torch.minimum(dipole, self.max_dipole), -self.max_dipole)
        self.previous = torch.where(self.due[:, None], signal, self.previous)
        self.has_previous |= self.due
        return {"mtq_dipole": dipole}


@dataclass(kw_only=True)
class BDotCfg(NodeCfg):
    """B-dot detumbling law m = -k dB/dt on magnetometer readings (body axes)."""

    class_type: type | None = BDotNode
    """The node `build` makes from this config."""

    gain: float
    """k: A m^2 s / T for the plain law; N m s (see `bdot_gain`) when `normalized`."""
    max_dipole_am2: float | tuple[float, float, float] = math.inf
    """Per-axis dipole limit, A m^2 (scalar or one per body axis); the command is clipped."""
    normalized: bool = False
    """Use m = -(k/|B|) d(B/|B|)/dt (Avanzini-Giulietti form) instead of m = -k dB/dt."""


def attitude_error(attitude: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Error quaternion q_e = q_target^* (x) q with q_e.w >= 0 (shortest path), (N, 4).

    Both inputs map body (resp. target) axes to inertial ones, so q_e maps body axes to target
    axes: it is the rotation that takes the target attitude to the current one, and its vector
    part is sin(theta/2) times the rotation axis (body and target axes agree on it).
    """
    q = attitude / attitude.norm(dim=-1, keepdim=True)
    qt = target / target.norm(dim=-1, keepdim=True)
    error = quat_multiply(quat_conjugate(qt), q)
    return torch.where(error[..., :1] < 0, -error, error)


class QuaternionPDNode(Node):
    """tau = -Kp q_e,vec - Kd (omega - omega_target) [+ omega x (J omega)], norm-limited.

    Sign conventions: q_e = q_target^* (x) q with w >= 0 (so q and -q give the same torque and
    the body turns the short way); q_e,vec ~ theta/2 for a small rotation theta (body relative to
    target, about a body axis), so a positive Kp torque turns the body back. omega is the body
    rate relative to inertial space in body axes; omega_target is the target rate in body axes
    (default zero). The optional term omega x (J omega) cancels the gyroscopic torque of
    Euler's equation J domega/dt = tau - omega x (J omega).
    Inputs: attitude (N, 4), rate (N, 3) rad/s, target_attitude (N, 4), optional target_rate
    (N, 3) rad/s. Output: torque (N, 3) N m, body axes.
    """

    cfg: QuaternionPDCfg

    input_names = ("attitude", "rate", "target_attitude")
    optional_inputs = ("target_rate",)
    output_names = ("torque",)

    def __init__(
        self,
        cfg: QuaternionPDCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.kp = vector_param(cfg.kp_nm, "kp_nm", name, self.device)
        self.kd = vector_param(cfg.kd_nms, "kd_nms", name, self.device)
        self.inertia = None
        if cfg.inertia_kgm2 is not None:
            j = torch.as_tensor(cfg.inertia_kgm2, dtype=torch.float64, device=self.device)
            if j.numel() not in (3, 9):
                raise ValueError(f"node '{name}': inertia_kgm2 needs 3 or 9 values")
            self.inertia = torch.diag(j.reshape(3)) if j.numel() == 3 else j.reshape(3, 3)
        if not cfg.max_torque_nm >= 0:
            raise ValueError(f"node '{name}': max_torque_nm must be >= 0")

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        rate = inputs["rate"]
        error = attitude_error(inputs["attitude"], inputs["target_attitude"])
        torque = quaternion_pd_torque(
            error[:, 1:],
            rate,
            self.kp,
            self.kd,
            rate_error=rate - inputs["target_rate"] if "target_rate" in inputs else None,
            inertia=self.inertia,
            max_torque_nm=self.cfg.max_torque_nm,
        )
        return {"torque": torque}


@dataclass(kw_only=True)
class QuaternionPDCfg(NodeCfg):
    """Quaternion PD attitude law with optional gyroscopic compensation."""

    class_type: type | None = QuaternionPDNode
    """The node `build` makes from this config."""

    kp_nm: float | tuple[float, float, float] = 1.0
    """Kp, N m per unit of the error quaternion's vector part (~ N m per half radian)."""
    kd_nms: float | tuple[float, float, float] = 1.0
    """Kd, N m s / rad."""
    inertia_kgm2: tuple[float, ...] | None = None
    """J, kg m^2, body axes: 3 principal moments or 9 row-major entries; None: no omega x J omega
    term."""
    max_torque_nm: float = math.inf
    """Torque norm limit, N m; a larger command is scaled down, keeping its direction."""


class RateDampingNode(Node):
    """tau = -Kd omega, norm-limited: detumbling with wheels or thrusters.
    Input: rate (N, 3) rad/s, body axes. Output: torque (N, 3) N m, body axes."""

    cfg: RateDampingCfg

    input_names = ("rate",)
    output_names = ("torque",)

    def __init__(
        self,
        cfg: RateDampingCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        self.kd = vector_param(cfg.kd_nms, "kd_nms", name, self.device)

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"torque": scale_to_norm(-self.kd * inputs["rate"], self.cfg.max_torque_nm)}


@dataclass(kw_only=True)
class RateDampingCfg(NodeCfg):
    """Rate damping tau = -Kd omega."""

    class_type: type | None = RateDampingNode
    """The node `build` makes from this config."""

    kd_nms: float | tuple[float, float, float] = 1.0
    """Kd, N m s / rad."""
    max_torque_nm: float = math.inf
    """Torque norm limit, N m (direction kept)."""
