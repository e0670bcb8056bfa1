"""Environment at a point: Sun, eclipse, atmosphere and magnetic field (Warp, float64).

Times are environment seconds since J2000; positions are ECI km.
"""

from __future__ import annotations

import math

from orbitlab.orbit.constants import (
    AU_KM,
    MAGNETIC_PHASE_AT_J2000_RAD,
    SECONDS_PER_JULIAN_CENTURY,
    SUN_RADIUS_KM,
)
from orbitlab.orbit.fastmath import sincos
from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64
_DEG = 0.017453292519943295
_INV_CENTURY = 1.0 / SECONDS_PER_JULIAN_CENTURY
_EPS0 = 23.439 * _DEG
_SIN_EPS0, _COS_EPS0 = math.sin(_EPS0), math.cos(_EPS0)
_VARPI0 = (280.460 - 357.528) * _DEG  # L - M at J2000: longitude of perihelion, rad
_SIN_VARPI0, _COS_VARPI0 = math.sin(_VARPI0), math.cos(_VARPI0)
_OBLIQUITY_RATE = -0.013 * _DEG  # rad per Julian century (a product inside f64() would be
# evaluated in float32 by Warp: module constants are computed here, in float64)
# Reciprocals of the series' factors, computed here in float64 (see above).
_R2, _R6, _R12, _R20, _R24, _R30, _R42, _R56, _R72, _R90 = (
    1.0 / k for k in (2.0, 6.0, 12.0, 20.0, 24.0, 30.0, 42.0, 56.0, 72.0, 90.0)
)
_SMALL_ANGLE = 0.1  # rad: below it small_angle_sincos is exact to double precision


@wp.func
def solar_mean_anomaly(t: f64) -> f64:
    """M = 357.528 + 35999.050 T degrees, in rad; T in Julian centuries since J2000."""
    T = t * f64(_INV_CENTURY)
    return (f64(357.528) + f64(35999.050) * T) * f64(_DEG)


@wp.func
def small_angle_sincos(d: f64):
    """(sin d, cos d) for |d| < 0.1 rad: Taylor series through d^9 and d^10.

    The first omitted terms are below 3e-18 there: exact to double precision.
    """
    d2 = d * d
    s = d * (
        f64(1.0)
        - d2
        * f64(_R6)
        * (f64(1.0) - d2 * f64(_R20) * (f64(1.0) - d2 * f64(_R42) * (f64(1.0) - d2 * f64(_R72))))
    )
    c = f64(1.0) - d2 * f64(_R2) * (
        f64(1.0)
        - d2
        * f64(_R12)
        * (f64(1.0) - d2 * f64(_R30) * (f64(1.0) - d2 * f64(_R56) * (f64(1.0) - d2 * f64(_R90))))
    )
    return s, c


@wp.func
def rotate_sincos(s0: f64, c0: f64, s1: f64, c1: f64):
    """(sin, cos) of a + b from those of a and b (the angle-sum identities)."""
    return s0 * c1 + c0 * s1, c0 * c1 - s0 * s1


@wp.func
def obliquity_sincos(T: f64):
    """(sin eps, cos eps) of the obliquity eps = 23.439 - 0.013 T degrees (T in centuries).

    eps is eps0 = 23.439 degrees plus d = -0.013 T degrees: within centuries of
    J2000 d is a small angle, and eps's sine and cosine follow from eps0's
    (constants) and d's series by the angle sum, without a trigonometric call.
    """
    d = f64(_OBLIQUITY_RATE) * T
    if wp.abs(d) < f64(_SMALL_ANGLE):
        sin_d, cos_d = small_angle_sincos(d)
        return rotate_sincos(f64(_SIN_EPS0), f64(_COS_EPS0), sin_d, cos_d)
    return sincos(f64(_EPS0) + d)


@wp.func
def sun_direction(t: f64) -> wp.vec3d:
    """Unit ECI vector toward the Sun from the analytic solar longitude.

    L = 280.460 + 36000.771 T, M = 357.528 + 35999.050 T,
    lambda = L + 1.915 sin M + 0.020 sin 2M, eps = 23.439 - 0.013 T (degrees),
    s = (cos lambda, sin lambda cos eps, sin lambda sin eps).

    Evaluated as lambda = M + varpi0 + d, with varpi0 = 280.460 - 357.528
    degrees and d = 1.721 T + 1.915 sin M + 0.020 sin 2M degrees (a few degrees
    within a century of J2000): lambda's sine and cosine follow from M's by angle
    sums, so the whole direction costs one sine-cosine evaluation (of M).
    """
    T = t * f64(_INV_CENTURY)
    M = solar_mean_anomaly(t)
    sin_M, cos_M = sincos(M)
    sin_2M = f64(2.0) * sin_M * cos_M
    d = (f64(1.721) * T + f64(1.915) * sin_M + f64(0.020) * sin_2M) * f64(_DEG)
    sin_lam = f64(0.0)
    cos_lam = f64(0.0)
    if wp.abs(d) < f64(_SMALL_ANGLE):
        sin_d, cos_d = small_angle_sincos(d)
        sin_w, cos_w = rotate_sincos(f64(_SIN_VARPI0), f64(_COS_VARPI0), sin_d, cos_d)
        sin_lam, cos_lam = rotate_sincos(sin_M, cos_M, sin_w, cos_w)
    else:
        lam = (f64(280.460) + f64(36000.771) * T + f64(1.915) * sin_M + f64(0.020) * sin_2M) * f64(
            _DEG
        )
        sin_lam, cos_lam = sincos(lam)
    sin_eps, cos_eps = obliquity_sincos(T)
    return wp.vec3d(cos_lam, sin_lam * cos_eps, sin_lam * sin_eps)


@wp.func
def sun_distance_km(t: f64) -> f64:
    """Earth-Sun distance, km: (1.00014 - 0.01671 cos M - 0.00014 cos 2M) AU."""
    M = solar_mean_anomaly(t)
    return f64(AU_KM) * (
        f64(1.00014) - f64(0.01671) * wp.cos(M) - f64(0.00014) * wp.cos(f64(2.0) * M)
    )


@wp.func
def eclipse_cylindrical(r: wp.vec3d, s_hat: wp.vec3d, radius: f64) -> f64:
    """Illumination chi in {0, 1}: dark behind the body inside its shadow cylinder.

    Dark when r.s <= 0 and the distance from the Sun line d_perp < radius; lit on
    the cylinder's boundary.
    """
    along = wp.dot(r, s_hat)
    if along <= f64(0.0) and wp.length_sq(r - along * s_hat) < radius * radius:
        return f64(0.0)
    return f64(1.0)


@wp.func
def eclipse_conical(r: wp.vec3d, s_hat: wp.vec3d, sun_km: f64, radius: f64) -> f64:
    """Illumination fraction in [0, 1] from the overlap of the solar and body disks.

    Conical umbra/penumbra model with a finite solar disk (radius SUN_RADIUS_KM) at
    distance sun_km: continuous across the shadow's edge, so that a per-stage step sees no
    jump in SRP. A point on the Sun's side of the terminator plane (r.s >= 0) more than
    1e-4 radii above the surface is lit (the Sun's angular radius, < 4.8e-3 rad, and the
    parallax of s_hat, |r|/sun_km, cannot bring the disks within the 1.4e-2 rad that the
    margin leaves), which spares half of every orbit the trigonometry.
    """
    d_body = wp.length(r)
    if wp.dot(r, s_hat) >= f64(0.0) and d_body >= f64(1.0001) * radius:
        return f64(1.0)
    to_sun = sun_km * s_hat - r
    d_sun = wp.length(to_sun)
    if d_body <= radius:
        return f64(0.0)
    a_s = wp.asin(wp.min(f64(SUN_RADIUS_KM) / d_sun, f64(1.0)))
    a_e = wp.asin(radius / d_body)
    cos_c = wp.dot(-r, to_sun) / (d_body * d_sun)
    c = wp.acos(wp.clamp(cos_c, f64(-1.0), f64(1.0)))
    if c >= a_s + a_e:
        return f64(1.0)
    if c <= a_e - a_s:
        return f64(0.0)
    if c <= a_s - a_e:
        return f64(1.0) - (a_e * a_e) / (a_s * a_s)
    x = (c * c + a_s * a_s - a_e * a_e) / (f64(2.0) * c)
    y = wp.sqrt(wp.max(a_s * a_s - x * x, f64(0.0)))
    overlap = (
        a_s * a_s * wp.acos(wp.clamp(x / a_s, f64(-1.0), f64(1.0)))
        + a_e * a_e * wp.acos(wp.clamp((c - x) / a_e, f64(-1.0), f64(1.0)))
        - c * y
    )
    return f64(1.0) - overlap / (f64(3.141592653589793) * a_s * a_s)


@wp.func
def illumination(
    body: CentralBody, penumbra: int, r: wp.vec3d, s_hat: wp.vec3d, sun_km: f64
) -> f64:
    """Illumination factor at r: cylindrical {0,1} or, with penumbra, conical [0,1].

    s_hat is sun_direction(t) and sun_km sun_distance_km(t) (read only with penumbra),
    passed in so that callers evaluate them once per time, not once per point.
    """
    if penumbra != 0:
        return eclipse_conical(r, s_hat, sun_km, body.radius)
    return eclipse_cylindrical(r, s_hat, body.radius)


@wp.func
def atmosphere_density(body: CentralBody, r: wp.vec3d) -> f64:
    """rho = rho0 exp(-(h - h0)/H), kg/m^3, at altitude h = |r| - radius (km)."""
    return atmosphere_density_at_distance(body, wp.length(r))


@wp.func
def atmosphere_density_at_distance(body: CentralBody, r_norm: f64) -> f64:
    """rho = rho0 exp(-(h - h0)/H), kg/m^3, at altitude h = r_norm - radius (r_norm: |r|, km)."""
    H = body.atmosphere_scale_height
    rho0 = body.atmosphere_rho0
    if rho0 <= f64(0.0) or H <= f64(0.0):
        return f64(0.0)
    h = r_norm - body.radius
    return rho0 * wp.exp((body.atmosphere_h0 - h) * body.atmosphere_inv_scale_height)


@wp.func
def atmosphere_density_near(body: CentralBody, rho_ref: f64, r_ref_norm: f64, r: wp.vec3d) -> f64:
    """rho at r from rho_ref = atmosphere_density(body, r_ref), kg/m^3 (|r_ref| = r_ref_norm, km).

    The same law: rho(r) = rho_ref exp(-(|r| - |r_ref|)/H). Near the reference
    (|x| < 1e-3 for x = -(|r| - |r_ref|)/H) exp(x) is its series through x^4
    (truncation below 1e-17), which spares a plate near its chief the exponential.
    """
    x = (r_ref_norm - wp.length(r)) * body.atmosphere_inv_scale_height
    if wp.abs(x) < f64(1.0e-3):
        return rho_ref * (
            f64(1.0) + x * (f64(1.0) + x * (f64(_R2) + x * (f64(_R6) + x * f64(_R24))))
        )
    return rho_ref * wp.exp(x)


@wp.func
def rotate_about(v: wp.vec3d, axis: wp.vec3d, angle: f64) -> wp.vec3d:
    """Rodrigues rotation of v about the unit vector axis by angle (rad)."""
    s, c = sincos(angle)
    return c * v + s * wp.cross(axis, v) + (f64(1.0) - c) * wp.dot(axis, v) * axis


@wp.func
def dipole_axis_eci(body: CentralBody, t: f64) -> wp.vec3d:
    """Dipole axis in ECI: the body-fixed axis turned about Omega by phase + |Omega| t."""
    if body.spin_rate == f64(0.0):
        return body.magnetic_axis
    angle = f64(MAGNETIC_PHASE_AT_J2000_RAD) + body.spin_rate * t
    return rotate_about(body.magnetic_axis, body.spin_axis, angle)


@wp.func
def dipole_field(body: CentralBody, R: wp.vec3d, t: f64) -> wp.vec3d:
    """B = B0 (a/|R|)^3 [3 (m.R_hat) R_hat - m], T, at ECI position R (km)."""
    return dipole_field_at(body, R, f64(1.0) / wp.length(R), t)


@wp.func
def dipole_field_at(body: CentralBody, R: wp.vec3d, inv_r: f64, t: f64) -> wp.vec3d:
    """B = B0 (a/|R|)^3 [3 (m.R_hat) R_hat - m], T, at ECI position R (km; inv_r = 1/|R|)."""
    rhat = R * inv_r
    m = dipole_axis_eci(body, t)
    k = body.radius * inv_r
    return body.magnetic_b0 * k * k * k * (f64(3.0) * wp.dot(m, rhat) * rhat - m)


@wp.func
def atmosphere_velocity(body: CentralBody, r: wp.vec3d) -> wp.vec3d:
    """Velocity of the co-rotating atmosphere at r, m/s: 1e3 (Omega x r)."""
    return f64(1.0e3) * wp.cross(body.omega, r)
