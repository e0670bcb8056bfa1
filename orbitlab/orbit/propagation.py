"""Chief propagation: RK4 under central gravity plus a constant extra acceleration.

Warp functions (float64, km, km/s, s) used by both backends' chief kernels.
"""

from __future__ import annotations

from orbitlab.orbit.gravity import central_gravity_accel
from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64


@wp.func
def chief_accel(body: CentralBody, use_j2: int, R: wp.vec3d, a_extra: wp.vec3d) -> wp.vec3d:
    """Chief acceleration g(R) + a_extra, km/s^2 (a_extra: the load feedback)."""
    return central_gravity_accel(body, use_j2, R) + a_extra


@wp.func
def rk4_step_from(
    body: CentralBody,
    use_j2: int,
    R: wp.vec3d,
    V: wp.vec3d,
    g_R: wp.vec3d,
    a_extra: wp.vec3d,
    h: f64,
):
    """One classical RK4 step of length h (s) given the gravity at its start, g_R = g(R)
    (km/s^2; the loads kernel has it already); returns the new (R, V)."""
    half = f64(0.5) * h
    k1r = V
    k1v = g_R + a_extra
    k2r = V + half * k1v
    k2v = chief_accel(body, use_j2, R + half * k1r, a_extra)
    k3r = V + half * k2v
    k3v = chief_accel(body, use_j2, R + half * k2r, a_extra)
    k4r = V + h * k3v
    k4v = chief_accel(body, use_j2, R + h * k3r, a_extra)
    sixth = h / f64(6.0)
    R_new = R + sixth * (k1r + f64(2.0) * k2r + f64(2.0) * k3r + k4r)
    V_new = V + sixth * (k1v + f64(2.0) * k2v + f64(2.0) * k3v + k4v)
    return R_new, V_new


@wp.func
def rk4_step(body: CentralBody, use_j2: int, R: wp.vec3d, V: wp.vec3d, a_extra: wp.vec3d, h: f64):
    """One classical RK4 step of length h (s); returns the new (R, V)."""
    return rk4_step_from(body, use_j2, R, V, central_gravity_accel(body, use_j2, R), a_extra, h)


@wp.func
def rk4_propagate_from(
    body: CentralBody,
    use_j2: int,
    R: wp.vec3d,
    V: wp.vec3d,
    g_R: wp.vec3d,
    a_extra: wp.vec3d,
    h: f64,
    nsub: int,
):
    """nsub RK4 steps of h (s) each, a_extra held constant, given g_R = g(R) at the start;
    returns (R, V)."""
    if nsub <= 0:
        return R, V
    R, V = rk4_step_from(body, use_j2, R, V, g_R, a_extra, h)
    for _ in range(nsub - 1):
        R, V = rk4_step(body, use_j2, R, V, a_extra, h)
    return R, V


@wp.func
def rk4_propagate(
    body: CentralBody, use_j2: int, R: wp.vec3d, V: wp.vec3d, a_extra: wp.vec3d, h: f64, nsub: int
):
    """nsub RK4 steps of h (s) each, a_extra held constant; returns (R, V)."""
    return rk4_propagate_from(
        body, use_j2, R, V, central_gravity_accel(body, use_j2, R), a_extra, h, nsub
    )


@wp.func
def hermite_interpolate(R0: wp.vec3d, V0: wp.vec3d, R1: wp.vec3d, V1: wp.vec3d, T: f64, s: f64):
    """Cubic Hermite state at fraction s in [0, 1] of a segment of length T (s).

    Position is the cubic through both endpoint states; velocity is its time
    derivative. Exact for the linear interpolation's endpoints and third-order
    accurate inside (the chord of a linear interpolation is off by ~a T^2/8).
    """
    s2 = s * s
    s3 = s2 * s
    h00 = f64(2.0) * s3 - f64(3.0) * s2 + f64(1.0)
    h10 = s3 - f64(2.0) * s2 + s
    h01 = -f64(2.0) * s3 + f64(3.0) * s2
    h11 = s3 - s2
    R = h00 * R0 + (h10 * T) * V0 + h01 * R1 + (h11 * T) * V1
    d00 = (f64(6.0) * s2 - f64(6.0) * s) / T
    d10 = f64(3.0) * s2 - f64(4.0) * s + f64(1.0)
    d01 = (-f64(6.0) * s2 + f64(6.0) * s) / T
    d11 = f64(3.0) * s2 - f64(2.0) * s
    V = d00 * R0 + d10 * V0 + d01 * R1 + d11 * V1
    return R, V
