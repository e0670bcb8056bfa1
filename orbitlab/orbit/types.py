"""Warp-side parameter records shared by every kernel and both backends.

`CentralBody` carries the central-body configuration into kernels as float64;
build it with `central_body_struct(cfg)`.
"""

from __future__ import annotations

import numpy as np

from orbitlab.orbit.constants import CentralBodyCfg
from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64


@wp.struct
class CentralBody:
    """Central-body parameters in orbit units (km, s, T, kg/m^3)."""

    gm: wp.float64
    radius: wp.float64
    j2: wp.float64
    omega: wp.vec3d
    spin_rate: wp.float64  # |omega|, rad/s
    spin_axis: wp.vec3d  # omega/|omega| (zero when not spinning)
    magnetic_b0: wp.float64
    magnetic_axis: wp.vec3d
    atmosphere_h0: wp.float64
    atmosphere_rho0: wp.float64
    atmosphere_scale_height: wp.float64
    atmosphere_inv_scale_height: wp.float64  # 1/H, 1/km (0 when H <= 0)


def central_body_struct(cfg: CentralBodyCfg) -> CentralBody:
    """Convert a validated `CentralBodyCfg` to its Warp record (axis normalised)."""
    cfg.validate()
    axis = np.asarray(cfg.magnetic_axis, dtype=np.float64)
    norm = np.linalg.norm(axis)
    body = CentralBody()
    body.gm = float(cfg.gm)
    body.radius = float(cfg.radius)
    body.j2 = float(cfg.j2)
    omega = np.asarray(cfg.omega, dtype=np.float64)
    spin = float(np.linalg.norm(omega))
    body.omega = wp.vec3d(*omega)
    body.spin_rate = spin
    body.spin_axis = wp.vec3d(*(omega / spin if spin > 0.0 else omega))
    body.magnetic_b0 = float(cfg.magnetic_b0)
    body.magnetic_axis = wp.vec3d(*(axis / norm if norm > 0.0 else axis))
    body.atmosphere_h0 = float(cfg.atmosphere_h0)
    body.atmosphere_rho0 = float(cfg.atmosphere_rho0)
    body.atmosphere_scale_height = float(cfg.atmosphere_scale_height)
    H = float(cfg.atmosphere_scale_height)
    body.atmosphere_inv_scale_height = 1.0 / H if H > 0.0 else 0.0
    return body
