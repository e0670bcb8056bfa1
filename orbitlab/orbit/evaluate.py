"""Numpy entry points to the Warp force and environment laws.

Each function launches the same `@wp.func` the simulation kernels use, on
Warp's CPU device, over a batch of inputs; so tools, tests and baselines evaluate
exactly the equations the simulation applies. Inputs broadcast like numpy:
positions are (..., 3) km, times (...,) s since J2000; results are float64.
"""

from __future__ import annotations

import numpy as np

from orbitlab.orbit import environment as env
from orbitlab.orbit import gravity
from orbitlab.orbit.constants import MU_EARTH_KM3_S2, CentralBodyCfg
from orbitlab.orbit.propagation import rk4_propagate
from orbitlab.orbit.types import CentralBody, central_body_struct
from orbitlab.quiet import wp  # Warp, started quietly

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _gravity_kernel(
    body: CentralBody, use_j2: int, r: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)
):
    i = wp.tid()
    out[i] = gravity.central_gravity_accel(body, use_j2, r[i])


@wp.kernel
def _differential_kernel(
    body: CentralBody,
    use_j2: int,
    R: wp.array(dtype=wp.vec3d),
    delta: wp.array(dtype=wp.vec3d),
    out: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    out[i] = gravity.differential_gravity_accel(body, use_j2, R[i], delta[i])


@wp.kernel
def _gg_kernel(
    mu: wp.float64,
    r: wp.array(dtype=wp.vec3d),
    Q: wp.array(dtype=wp.mat33d),
    inertia: wp.array(dtype=wp.vec3d),
    out: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    out[i] = gravity.gravity_gradient_torque(mu, r[i], Q[i], inertia[i])


@wp.kernel
def _environment_kernel(
    body: CentralBody,
    penumbra: int,
    r: wp.array(dtype=wp.vec3d),
    t: wp.array(dtype=wp.float64),
    sun: wp.array(dtype=wp.vec3d),
    chi: wp.array(dtype=wp.float64),
    rho: wp.array(dtype=wp.float64),
    B: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    s_hat = env.sun_direction(t[i])
    sun[i] = s_hat
    chi[i] = env.illumination(body, penumbra, r[i], s_hat, env.sun_distance_km(t[i]))
    rho[i] = env.atmosphere_density(body, r[i])
    B[i] = env.dipole_field(body, r[i], t[i])


@wp.kernel
def _propagate_kernel(
    body: CentralBody,
    use_j2: int,
    R: wp.array(dtype=wp.vec3d),
    V: wp.array(dtype=wp.vec3d),
    a_extra: wp.array(dtype=wp.vec3d),
    h: wp.float64,
    nsteps: int,
):
    i = wp.tid()
    R_new, V_new = rk4_propagate(body, use_j2, R[i], V[i], a_extra[i], h, nsteps)
    R[i] = R_new
    V[i] = V_new


def _vec3(x) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1, 3))


def _launch(kernel, n: int, inputs: list) -> None:
    wp.launch(kernel, dim=n, inputs=inputs, device="cpu")


def gravity_accel(r, central: CentralBodyCfg | None = None, use_j2: bool = True) -> np.ndarray:
    """Central gravity g(r), km/s^2, at ECI positions r (..., 3) km."""
    r = np.asarray(r, dtype=np.float64)
    flat = _vec3(r)
    out = np.zeros_like(flat)
    _launch(
        _gravity_kernel,
        len(flat),
        [
            central_body_struct(central or CentralBodyCfg()),
            int(use_j2),
            wp.array(flat, dtype=wp.vec3d),
            wp.array(out, dtype=wp.vec3d, copy=False),
        ],
    )
    return out.reshape(r.shape)


def differential_gravity(
    R, delta, central: CentralBodyCfg | None = None, use_j2: bool = True
) -> np.ndarray:
    """g(R + delta) - g(R), km/s^2, the way the simulation evaluates it."""
    R_b, d_b = np.broadcast_arrays(np.asarray(R, np.float64), np.asarray(delta, np.float64))
    out = np.zeros((R_b.size // 3, 3))
    _launch(
        _differential_kernel,
        len(out),
        [
            central_body_struct(central or CentralBodyCfg()),
            int(use_j2),
            wp.array(_vec3(R_b), dtype=wp.vec3d),
            wp.array(_vec3(d_b), dtype=wp.vec3d),
            wp.array(out, dtype=wp.vec3d, copy=False),
        ],
    )
    return out.reshape(R_b.shape)


def gravity_gradient_torque(r, Q_I, principal_inertia, mu: float = MU_EARTH_KM3_S2) -> np.ndarray:
    """Gravity-gradient torque, N m: r (n, 3) km, Q_I (n, 3, 3), inertia (n, 3) kg m^2."""
    r = _vec3(r)
    Q = np.ascontiguousarray(np.broadcast_to(np.asarray(Q_I, np.float64), (len(r), 3, 3)))
    inertia = np.ascontiguousarray(
        np.broadcast_to(np.asarray(principal_inertia, np.float64), (len(r), 3))
    )
    out = np.zeros_like(r)
    _launch(
        _gg_kernel,
        len(r),
        [
            float(mu),
            wp.array(r, dtype=wp.vec3d),
            wp.array(Q, dtype=wp.mat33d),
            wp.array(inertia, dtype=wp.vec3d),
            wp.array(out, dtype=wp.vec3d, copy=False),
        ],
    )
    return out


def environment(
    r, t, central: CentralBodyCfg | None = None, penumbra: bool = True
) -> dict[str, np.ndarray]:
    """Sun direction, illumination, density (kg/m^3) and dipole field (T) at r (km), t (s).

    penumbra: the conical shadow (the default, as the orbit layer's `use_penumbra`), or
    False for the hard cylinder."""
    r_b, t_b = np.broadcast_arrays(np.asarray(r, np.float64), np.asarray(t, np.float64)[..., None])
    n = r_b.size // 3
    sun, B = np.zeros((n, 3)), np.zeros((n, 3))
    chi, rho = np.zeros(n), np.zeros(n)
    _launch(
        _environment_kernel,
        n,
        [
            central_body_struct(central or CentralBodyCfg()),
            int(penumbra),
            wp.array(_vec3(r_b), dtype=wp.vec3d),
            wp.array(np.ascontiguousarray(t_b[..., 0].ravel()), dtype=wp.float64),
            wp.array(sun, dtype=wp.vec3d, copy=False),
            wp.array(chi, dtype=wp.float64, copy=False),
            wp.array(rho, dtype=wp.float64, copy=False),
            wp.array(B, dtype=wp.vec3d, copy=False),
        ],
    )
    shape = r_b.shape[:-1]
    return {
        "sun_eci": sun.reshape(r_b.shape),
        "illumination": chi.reshape(shape),
        "atm_density": rho.reshape(shape),
        "mag_field_eci": B.reshape(r_b.shape),
    }


def propagate(
    R,
    V,
    duration: float,
    nsteps: int,
    central: CentralBodyCfg | None = None,
    use_j2: bool = True,
    a_extra=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Propagate chief states (..., 3) km, km/s over `duration` s in `nsteps` RK4 steps.

    a_extra: a constant extra acceleration (..., 3), km/s^2 (default zero).
    """
    R_flat, V_flat = _vec3(R).copy(), _vec3(V).copy()
    a = (
        np.zeros_like(R_flat)
        if a_extra is None
        else _vec3(np.broadcast_to(np.asarray(a_extra, np.float64), np.shape(R)))
    )
    if nsteps < 1:
        raise ValueError(f"nsteps must be >= 1, got {nsteps}")
    _launch(
        _propagate_kernel,
        len(R_flat),
        [
            central_body_struct(central or CentralBodyCfg()),
            int(use_j2),
            wp.array(R_flat, dtype=wp.vec3d, copy=False),
            wp.array(V_flat, dtype=wp.vec3d, copy=False),
            wp.array(a, dtype=wp.vec3d),
            float(duration) / nsteps,
            int(nsteps),
        ],
    )
    return R_flat.reshape(np.shape(R)), V_flat.reshape(np.shape(V))
