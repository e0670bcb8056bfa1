"""The control laws of the LQR and PD nodes, once, for torch tensors and numpy arrays.

`CwLqrNode` and `QuaternionPDNode` call these on (N, ...) tensors inside the env; the bridge
study's leader process calls them on numpy arrays, so both run the same law. Only numpy is
imported here; torch is used only when a tensor is passed (it is then already loaded).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from orbitlab.orbit.constants import MU_EARTH_KM3_S2


def _torch(x: Any) -> bool:
    return not isinstance(x, np.ndarray | float | int)


def _cross(a: Any, b: Any) -> Any:
    if _torch(a):
        import torch

        return torch.cross(a, b, dim=-1)
    return np.cross(a, b)


def clip_symmetric(values: Any, limit: Any) -> Any:
    """Clip each component to [-limit, limit] (limit broadcasts, per axis)."""
    if _torch(values):
        import torch

        return torch.maximum(torch.minimum(values, limit), -limit)
    return np.maximum(np.minimum(values, limit), -limit)


def scale_to_norm(vectors: Any, limit: float) -> Any:
    """Scale each row down so its Euclidean norm is at most `limit`, keeping its direction."""
    if math.isinf(limit):
        return vectors
    if _torch(vectors):
        import torch

        norm = vectors.norm(dim=-1, keepdim=True)
        return vectors * torch.clamp(limit / norm.clamp_min(1e-300), max=1.0)
    norm = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors * np.minimum(limit / np.maximum(norm, 1e-300), 1.0)


def lqr_force(K: Any, state_error: Any, max_force: Any) -> Any:
    """F = -K s, clipped per axis to +-max_force: K (3, 6), s (..., 6) [position; velocity]."""
    return clip_symmetric(-state_error @ K.T, max_force)


def quaternion_pd_torque(
    error_vec: Any,
    rate: Any,
    kp: Any,
    kd: Any,
    *,
    rate_error: Any = None,
    inertia: Any = None,
    max_torque_nm: float = math.inf,
) -> Any:
    """tau = -Kp q_e,vec - Kd (omega - omega_target) [+ omega x (J omega)], norm-limited.

    Args:
        error_vec: vector part of the error quaternion q_target^* (x) q with w >= 0, (..., 3).
        rate: body rate omega, rad/s, body axes (..., 3).
        kp, kd: gains, N m and N m s / rad (scalar or per axis).
        rate_error: omega - omega_target (default omega).
        inertia: J (3, 3), kg m^2, for the gyroscopic term; None leaves it out.
        max_torque_nm: norm limit; a larger command is scaled down, keeping its direction.
    """
    torque = -kp * error_vec - kd * (rate if rate_error is None else rate_error)
    if inertia is not None:
        torque = torque + _cross(rate, rate @ inertia.T)
    return scale_to_norm(torque, max_torque_nm)


def mean_motion(semi_major_axis_km: float, mu_km3_s2: float = MU_EARTH_KM3_S2) -> float:
    """Mean motion n = sqrt(mu / a^3) of an orbit of semi-major axis a (km), rad/s."""
    return math.sqrt(mu_km3_s2 / semi_major_axis_km**3)
