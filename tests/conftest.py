"""Shared builders for the orbit-coupled simulation tests."""

from __future__ import annotations

import numpy as np
import pytest

from orbitlab import OrbitInit, SimSpec

MU = 398600.4418
RE = 6378.137


def free_body_xml(integrator: str = "RK4", timestep: float = 0.01, inertial: str | None = None,
                  extra: str = "") -> str:
    """A single free body named 'spacecraft' (100 kg box unless `inertial` is given)."""
    body = inertial or '<geom type="box" size="0.5 0.3 0.2" mass="100"/>'
    return f"""
<mujoco><option timestep="{timestep}" integrator="{integrator}"/>
  <worldbody><body name="spacecraft"><freejoint/>{body}</body>{extra}</worldbody>
</mujoco>"""


def only(spec: SimSpec, *switches: str) -> SimSpec:
    """Turn every orbit-layer switch off except those named."""
    for name in ("use_j2", "use_gravity_gradient", "use_drag", "use_srp", "use_magnetic"):
        setattr(spec.orbit, name, name in switches)
    return spec


def circular_orbit(alt_km: float = 400.0, t: float = 0.0, incl_rad: float = 0.0) -> OrbitInit:
    r = RE + alt_km
    v = np.sqrt(MU / r)
    return OrbitInit(R_eci=[r, 0.0, 0.0], V_eci=[0.0, v * np.cos(incl_rad), v * np.sin(incl_rad)],
                     t=t)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """World-from-body rotation of a unit quaternion (w, x, y, z), written out by hand."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
