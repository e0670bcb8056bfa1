"""Gravity laws as Warp functions (float64, km and s).

One function per equation of the spec; both backends call these.
"""

from __future__ import annotations

from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64


@wp.func
def inverse_distance(r: wp.vec3d):
    """(1/|r|^2, 1/|r|), the factors every law at r needs: one division, one square root.

    The `*_at` forms below take them, so that a kernel evaluating several laws at one
    point (the chief: gravity, J2, RK4's first stage, the field, the atmosphere) pays
    for them once.
    """
    inv_r2 = f64(1.0) / wp.dot(r, r)
    return inv_r2, wp.sqrt(inv_r2)


@wp.func
def point_mass_accel_at(mu: f64, r: wp.vec3d, inv_r2: f64, inv_r: f64) -> wp.vec3d:
    """g0(r) = -mu r / |r|^3, km/s^2, for r in km and mu in km^3/s^2 (1/|r|^2, 1/|r| given)."""
    return -mu * inv_r2 * inv_r * r


@wp.func
def j2_accel_at(mu: f64, a: f64, j2: f64, r: wp.vec3d, inv_r2: f64, inv_r: f64) -> wp.vec3d:
    """J2 perturbation about ECI z, km/s^2 (a: reference radius, km; 1/|r|^2, 1/|r| given):
    3/2 J2 mu a^2 / |r|^5 (x (5 z^2/r^2 - 1), y (5 z^2/r^2 - 1), z (5 z^2/r^2 - 3))."""
    k = f64(1.5) * j2 * mu * a * a * inv_r2 * inv_r2 * inv_r
    zz = f64(5.0) * r[2] * r[2] * inv_r2
    return k * wp.vec3d(r[0] * (zz - f64(1.0)), r[1] * (zz - f64(1.0)), r[2] * (zz - f64(3.0)))


@wp.func
def j2_accel(mu: f64, a: f64, j2: f64, r: wp.vec3d) -> wp.vec3d:
    """J2 perturbation about ECI z, km/s^2 (a: reference radius, km)."""
    inv_r2, inv_r = inverse_distance(r)
    return j2_accel_at(mu, a, j2, r, inv_r2, inv_r)


@wp.func
def j2_term_at(body: CentralBody, use_j2: int, r: wp.vec3d, inv_r2: f64, inv_r: f64) -> wp.vec3d:
    """The J2 acceleration when use_j2, else zero; km/s^2."""
    if use_j2 != 0:
        return j2_accel_at(body.gm, body.radius, body.j2, r, inv_r2, inv_r)
    return wp.vec3d(f64(0.0), f64(0.0), f64(0.0))


@wp.func
def central_gravity_accel(body: CentralBody, use_j2: int, r: wp.vec3d) -> wp.vec3d:
    """g(r): point mass plus, when use_j2, the J2 term; km/s^2."""
    inv_r2, inv_r = inverse_distance(r)
    return point_mass_accel_at(body.gm, r, inv_r2, inv_r) + j2_term_at(
        body, use_j2, r, inv_r2, inv_r
    )


@wp.func
def encke_point_mass_difference_at(
    mu: f64, R: wp.vec3d, inv_R2: f64, inv_R: f64, delta: wp.vec3d
) -> wp.vec3d:
    """g0(R + delta) - g0(R) without cancellation (Encke/Battin form), km/s^2.

    With r = R + delta and q = delta.(delta + 2R)/|R|^2 (so |r|^2 = |R|^2 (1+q)),
    g0(r) - g0(R) = mu/|R|^3 [f(q) r - delta], f(q) = 1 - (1+q)^(-3/2)
    = q (3 + 3q + q^2) / ((1 + (1+q)^(3/2)) (1+q)^(3/2)). 1/|R|^2, 1/|R| given.
    """
    q = wp.dot(delta, delta + f64(2.0) * R) * inv_R2
    s = f64(1.0) + q
    s32 = s * wp.sqrt(s)
    f = q * (f64(3.0) + f64(3.0) * q + q * q) / ((f64(1.0) + s32) * s32)
    return mu * inv_R2 * inv_R * (f * (R + delta) - delta)


@wp.func
def differential_gravity_accel_at(
    body: CentralBody,
    use_j2: int,
    R: wp.vec3d,
    inv_R2: f64,
    inv_R: f64,
    j2_R: wp.vec3d,
    delta: wp.vec3d,
    inv_r2: f64,
    inv_r: f64,
) -> wp.vec3d:
    """g(R + delta) - g(R), km/s^2: Encke point mass plus the J2 difference taken apart.

    Given 1/|R|^2, 1/|R|, the J2 term at R (`j2_term_at`) and 1/|r|^2, 1/|r| at
    r = R + delta.
    """
    dg = encke_point_mass_difference_at(body.gm, R, inv_R2, inv_R, delta)
    if use_j2 != 0:
        dg = dg + (j2_accel_at(body.gm, body.radius, body.j2, R + delta, inv_r2, inv_r) - j2_R)
    return dg


@wp.func
def differential_gravity_accel(
    body: CentralBody, use_j2: int, R: wp.vec3d, delta: wp.vec3d
) -> wp.vec3d:
    """g(R + delta) - g(R), km/s^2: Encke point mass plus the J2 difference taken apart."""
    inv_R2, inv_R = inverse_distance(R)
    inv_r2, inv_r = inverse_distance(R + delta)
    return differential_gravity_accel_at(
        body,
        use_j2,
        R,
        inv_R2,
        inv_R,
        j2_term_at(body, use_j2, R, inv_R2, inv_R),
        delta,
        inv_r2,
        inv_r,
    )


@wp.func
def gravity_gradient_torque(
    mu: f64, r: wp.vec3d, Q_I: wp.mat33d, principal_inertia: wp.vec3d
) -> wp.vec3d:
    """tau_gg = 3 mu/|r|^3 r_hat x (J^W r_hat), N m (see `gravity_gradient_torque_at`)."""
    inv_r2, inv_r = inverse_distance(r)
    return gravity_gradient_torque_at(mu, r, inv_r2, inv_r, Q_I, principal_inertia)


@wp.func
def gravity_gradient_torque_at(
    mu: f64, r: wp.vec3d, inv_r2: f64, inv_r: f64, Q_I: wp.mat33d, principal_inertia: wp.vec3d
) -> wp.vec3d:
    """tau_gg = 3 mu/|r|^3 r_hat x (J^W r_hat), N m (1/|r|^2, 1/|r| given).

    J^W = Q_I diag(I) Q_I^T with Q_I the world-from-principal-inertia rotation
    (MuJoCo's ximat) and I the principal moments in kg m^2; mu/|r|^3 is in s^-2
    for r in km, so the result is in N m.
    """
    rhat = r * inv_r
    b = wp.transpose(Q_I) @ rhat
    Jr = Q_I @ wp.cw_mul(principal_inertia, b)
    return f64(3.0) * mu * inv_r2 * inv_r * wp.cross(rhat, Jr)
