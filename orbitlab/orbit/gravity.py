"""Gravity laws as Warp functions (float64, km and s).

One function per equation of the spec; both backends call these.
"""

from __future__ import annotations

import warp as wp

from orbitlab.orbit.types import CentralBody

f64 = wp.float64


@wp.func
def point_mass_accel(mu: f64, r: wp.vec3d) -> wp.vec3d:
    """g0(r) = -mu r / |r|^3, km/s^2, for r in km and mu in km^3/s^2."""
    inv_r2 = f64(1.0) / wp.dot(r, r)
    return -mu * inv_r2 * wp.sqrt(inv_r2) * r


@wp.func
def j2_accel(mu: f64, a: f64, j2: f64, r: wp.vec3d) -> wp.vec3d:
    """J2 perturbation about ECI z, km/s^2 (a: reference radius, km)."""
    inv_r2 = f64(1.0) / wp.dot(r, r)
    k = f64(1.5) * j2 * mu * a * a * inv_r2 * inv_r2 * wp.sqrt(inv_r2)
    zz = f64(5.0) * r[2] * r[2] * inv_r2
    return k * wp.vec3d(r[0] * (zz - f64(1.0)), r[1] * (zz - f64(1.0)), r[2] * (zz - f64(3.0)))


@wp.func
def central_gravity_accel(body: CentralBody, use_j2: int, r: wp.vec3d) -> wp.vec3d:
    """g(r): point mass plus, when use_j2, the J2 term; km/s^2."""
    g = point_mass_accel(body.gm, r)
    if use_j2 != 0:
        g = g + j2_accel(body.gm, body.radius, body.j2, r)
    return g


@wp.func
def encke_point_mass_difference(mu: f64, R: wp.vec3d, delta: wp.vec3d) -> wp.vec3d:
    """g0(R + delta) - g0(R) without cancellation (Encke/Battin form), km/s^2.

    With r = R + delta and q = delta.(delta + 2R)/|R|^2 (so |r|^2 = |R|^2 (1+q)),
    g0(r) - g0(R) = mu/|R|^3 [f(q) r - delta], f(q) = 1 - (1+q)^(-3/2)
    = q (3 + 3q + q^2) / ((1 + (1+q)^(3/2)) (1+q)^(3/2)).
    """
    inv_R2 = f64(1.0) / wp.dot(R, R)
    q = wp.dot(delta, delta + f64(2.0) * R) * inv_R2
    s = f64(1.0) + q
    s32 = s * wp.sqrt(s)
    f = q * (f64(3.0) + f64(3.0) * q + q * q) / ((f64(1.0) + s32) * s32)
    return mu * inv_R2 * wp.sqrt(inv_R2) * (f * (R + delta) - delta)


@wp.func
def differential_gravity_accel(
    body: CentralBody, use_j2: int, R: wp.vec3d, delta: wp.vec3d
) -> wp.vec3d:
    """g(R + delta) - g(R), km/s^2: Encke point mass plus the J2 difference taken apart."""
    dg = encke_point_mass_difference(body.gm, R, delta)
    if use_j2 != 0:
        dg = dg + (j2_accel(body.gm, body.radius, body.j2, R + delta)
                   - j2_accel(body.gm, body.radius, body.j2, R))
    return dg


@wp.func
def gravity_gradient_torque(
    mu: f64, r: wp.vec3d, Q_I: wp.mat33d, principal_inertia: wp.vec3d
) -> wp.vec3d:
    """tau_gg = 3 mu/|r|^3 r_hat x (J^W r_hat), N m.

    J^W = Q_I diag(I) Q_I^T with Q_I the world-from-principal-inertia rotation
    (MuJoCo's ximat) and I the principal moments in kg m^2; mu/|r|^3 is in s^-2
    for r in km, so the result is in N m.
    """
    inv_r2 = f64(1.0) / wp.dot(r, r)
    inv_r = wp.sqrt(inv_r2)
    rhat = r * inv_r
    b = wp.transpose(Q_I) @ rhat
    Jr = Q_I @ wp.cw_mul(principal_inertia, b)
    return f64(3.0) * mu * inv_r2 * inv_r * wp.cross(rhat, Jr)
