"""Orbital reference frames, classical elements and Clohessy-Wiltshire relative motion.

Pure numpy, float64. Unless stated otherwise lengths are km, velocities km/s, accelerations
km/s^2, times s and angles rad. Vector functions accept one vector ``(3,)`` or a batch
``(..., 3)`` and broadcast over the leading axes.

Hill / LVLH frame of a chief at ``(R, V)``: ``x`` radial (``R/|R|``), ``z`` orbit normal
(``h/|h|``, ``h = R x V``), ``y = z x x`` along-track (in the direction of motion).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from orbitlab.orbit.constants import MU_EARTH_KM3_S2 as MU_EARTH

Array = NDArray[np.float64]


def _f(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def _dot(a: Array, b: Array) -> Array:
    return np.sum(a * b, axis=-1)


def _unit(a: Array) -> Array:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _mv(m: Array, x: Array) -> Array:
    """Batched ``m @ x`` for ``m (..., k, k)`` and ``x (..., k)``."""
    return np.einsum("...ij,...j->...i", m, x)


def _rotation(angle: ArrayLike, axis: int) -> Array:
    th = _f(angle)
    c, s = np.cos(th), np.sin(th)
    m = np.zeros((*th.shape, 3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m[..., axis, axis] = 1.0
    m[..., i, i], m[..., j, j], m[..., i, j], m[..., j, i] = c, c, -s, s
    return m


def rotation_x(angle: ArrayLike) -> Array:
    """Active rotation about x by ``angle`` (rad): ``rotation_x(a) @ v`` turns ``v`` by ``a``.

    Returns:
        Array of shape ``shape(angle) + (3, 3)`` (the same holds for y and z).
    """
    return _rotation(angle, 0)


def rotation_y(angle: ArrayLike) -> Array:
    """Active rotation about y by ``angle`` (rad), ``shape(angle) + (3, 3)``."""
    return _rotation(angle, 1)


def rotation_z(angle: ArrayLike) -> Array:
    """Active rotation about z by ``angle`` (rad), ``shape(angle) + (3, 3)``."""
    return _rotation(angle, 2)


def mean_motion(a_km: ArrayLike, mu: float = MU_EARTH) -> Array:
    """Mean motion ``sqrt(mu / a^3)`` (rad/s) for semi-major axis ``a_km`` (km), mu (km^3/s^2)."""
    return np.sqrt(mu / _f(a_km) ** 3)


def orbital_period(a_km: ArrayLike, mu: float = MU_EARTH) -> Array:
    """Keplerian period ``2 pi / n`` (s) of an orbit with semi-major axis ``a_km`` (km)."""
    return 2.0 * np.pi / mean_motion(a_km, mu)


def lvlh_rotation(R: ArrayLike, V: ArrayLike) -> Array:
    """Rotation ECI -> Hill/LVLH of a chief at position ``R`` (km) and velocity ``V`` (km/s).

    Returns:
        ``C_LI`` of shape ``(..., 3, 3)`` whose rows are the Hill axes (x radial, y
        along-track, z orbit normal) expressed in ECI, so ``x_hill = C_LI @ x_eci``.
    """
    R, V = _f(R), _f(V)
    x = _unit(R)
    z = _unit(np.cross(R, V))
    y = np.cross(z, x)
    return np.stack([x, y, z], axis=-2)


def hill_frame(R: ArrayLike, V: ArrayLike) -> tuple[Array, Array]:
    """``(C_LI, omega)``: the rotation ECI -> Hill (``lvlh_rotation``) and the Hill frame's
    angular velocity in ECI, ``omega = (R x V) / |R|^2`` (rad/s), of a chief at ``(R, V)``.

    ``omega`` is exact for a chief whose acceleration is radial (point mass, Keplerian); see
    ``lvlh_angular_velocity`` for other accelerations. Any consistent length unit (km or m).
    """
    R, V = _f(R), _f(V)
    return lvlh_rotation(R, V), np.cross(R, V) / _dot(R, R)[..., None]


def _hill_rate(R: Array, V: Array, A: ArrayLike | None, mu: float) -> tuple[Array, Array, Array]:
    """Return ``C_LI``, the frame rate in Hill axes (rad/s) and the along-track acceleration."""
    C = lvlh_rotation(R, V)
    r = np.linalg.norm(R, axis=-1)
    h = np.linalg.norm(np.cross(R, V), axis=-1)
    a_h = _mv(C, -mu * R / (r**3)[..., None] if A is None else _f(A))
    w = np.stack([r * a_h[..., 2] / h, np.zeros_like(r), h / r**2], axis=-1)
    return C, w, a_h[..., 1]


def lvlh_angular_velocity(
    R: ArrayLike,
    V: ArrayLike,
    A: ArrayLike | None = None,
    *,
    jerk: ArrayLike | None = None,
    mu: float = MU_EARTH,
) -> tuple[Array, Array]:
    """Angular velocity and acceleration of the Hill frame, expressed in ECI.

    With ``r = |R|``, ``h = |R x V|`` and the chief acceleration ``A`` written in Hill axes as
    ``(a_x, a_y, a_z)``, the frame rotates with

        ``omega = (h / r^2) z_hat + (r a_z / h) x_hat``    (no y component).

    Its inertial derivative (equal to the derivative in the rotating frame, because
    ``omega x omega = 0``) is, with ``r_dot = R.V / r`` and ``j_z`` the orbit-normal component
    of the jerk ``dA/dt``,

        ``omega_z_dot = a_y / r - 2 r_dot omega_z / r``
        ``omega_x_dot = omega_x (r_dot / r - 2 r a_y / h) + r j_z / h``.

    For the point-mass default (``A = -mu R / r^3``): ``a_y = a_z = j_z = 0``, so
    ``omega = (h / r^2) z_hat`` and ``omega_dot = -2 (R.V) / r^2 * omega``.

    Args:
        R, V: Chief position (km) and velocity (km/s) in ECI, ``(..., 3)``.
        A: Chief acceleration (km/s^2). ``None`` means point-mass gravity with ``mu``.
        jerk: Time derivative of ``A`` (km/s^3). ``None`` means its orbit-normal component is
            taken as zero (exact for point mass, and for any acceleration constant in ECI).
        mu: Gravitational parameter (km^3/s^2), used only when ``A`` is ``None``.

    Returns:
        ``(omega, omega_dot)`` in ECI, rad/s and rad/s^2, each ``(..., 3)``.
    """
    R, V = _f(R), _f(V)
    C, w_hill, a_y = _hill_rate(R, V, A, mu)
    x_hat, z_hat = C[..., 0, :], C[..., 2, :]
    r = np.linalg.norm(R, axis=-1)
    h = np.linalg.norm(np.cross(R, V), axis=-1)
    j_z = np.zeros_like(r) if jerk is None else _dot(_f(jerk), z_hat)
    r_dot = _dot(R, V) / r
    w_x, w_z = w_hill[..., 0], w_hill[..., 2]
    wd_z = a_y / r - 2.0 * r_dot * w_z / r
    wd_x = w_x * (r_dot / r - 2.0 * r * a_y / h) + r * j_z / h
    omega = w_x[..., None] * x_hat + w_z[..., None] * z_hat
    omega_dot = wd_x[..., None] * x_hat + wd_z[..., None] * z_hat
    return omega, omega_dot


def gravity_gradient(R: ArrayLike, mu: float = MU_EARTH) -> Array:
    """Point-mass gravity gradient ``mu / r^3 (3 u u^T - I)`` at ``R``, ``(..., 3, 3)``, 1/s^2.

    ``u = R / r``. Units follow ``mu``: ``R`` in km with the default (km^3/s^2), or ``R`` in m
    with ``mu`` in m^3/s^2; the result is 1/s^2 either way.
    """
    R = _f(R)
    r = np.linalg.norm(R, axis=-1)
    u = R / r[..., None]
    outer = u[..., :, None] * u[..., None, :]
    return (mu / r**3)[..., None, None] * (3.0 * outer - np.eye(3))


def eci_to_hill(
    R: ArrayLike,
    V: ArrayLike,
    r: ArrayLike,
    v: ArrayLike,
    A: ArrayLike | None = None,
    *,
    mu: float = MU_EARTH,
) -> tuple[Array, Array]:
    """Deputy state relative to the chief, in the chief's rotating Hill frame.

    ``rho = C (r - R)`` and ``rho_dot = C (v - V) - omega_H x rho`` with ``omega_H = C omega``
    (transport theorem).

    Args:
        R, V: Chief position (km) and velocity (km/s) in ECI, ``(..., 3)``.
        r, v: Deputy position (km) and velocity (km/s) in ECI, ``(..., 3)``.
        A: Chief acceleration (km/s^2); ``None`` for point mass (see
            :func:`lvlh_angular_velocity`).
        mu: Gravitational parameter (km^3/s^2).

    Returns:
        ``(rho, rho_dot)`` in Hill axes, km and km/s, each ``(..., 3)``.
    """
    R, V = _f(R), _f(V)
    C, w_hill, _ = _hill_rate(R, V, A, mu)
    rho = _mv(C, _f(r) - R)
    rho_dot = _mv(C, _f(v) - V) - np.cross(w_hill, rho)
    return rho, rho_dot


def hill_to_eci(
    R: ArrayLike,
    V: ArrayLike,
    rho: ArrayLike,
    rho_dot: ArrayLike,
    A: ArrayLike | None = None,
    *,
    mu: float = MU_EARTH,
) -> tuple[Array, Array]:
    """Inverse of :func:`eci_to_hill`: deputy ECI state from its Hill-frame state.

    Args:
        R, V: Chief position (km) and velocity (km/s), ``(..., 3)``.
        rho, rho_dot: Relative position (km) and velocity seen in the rotating Hill frame
            (km/s), Hill axes, ``(..., 3)``.
        A, mu: As in :func:`eci_to_hill`.

    Returns:
        ``(r, v)`` of the deputy in ECI, km and km/s, each ``(..., 3)``.
    """
    R, V = _f(R), _f(V)
    C, w_hill, _ = _hill_rate(R, V, A, mu)
    rho, Ct = _f(rho), np.swapaxes(C, -1, -2)
    r = R + _mv(Ct, rho)
    v = V + _mv(Ct, _f(rho_dot) + np.cross(w_hill, rho))
    return r, v


@dataclass(frozen=True)
class OrbitalElements:
    """Classical orbital elements (scalars or arrays of one shape).

    Attributes:
        a_km: Semi-major axis (km).
        e: Eccentricity.
        i_rad: Inclination in ``[0, pi]`` (rad).
        raan_rad: Right ascension of the ascending node in ``[0, 2 pi)`` (rad).
        argp_rad: Argument of periapsis in ``[0, 2 pi)`` (rad).
        nu_rad: True anomaly in ``[0, 2 pi)`` (rad).
    """

    a_km: Array
    e: Array
    i_rad: Array
    raan_rad: Array
    argp_rad: Array
    nu_rad: Array


def coe_to_rv(
    a: ArrayLike,
    e: ArrayLike,
    i: ArrayLike,
    raan: ArrayLike,
    argp: ArrayLike,
    nu: ArrayLike,
    mu: float = MU_EARTH,
) -> tuple[Array, Array]:
    """ECI state from classical elements of an elliptic orbit (``0 <= e < 1``).

    Args:
        a, e: Semi-major axis (km) and eccentricity.
        i, raan, argp, nu: Inclination, right ascension of the ascending node, argument of
            periapsis and true anomaly (rad). All element arguments broadcast together.
        mu: Gravitational parameter (km^3/s^2).

    Returns:
        ``(r, v)`` in km and km/s, shape ``broadcast(inputs) + (3,)``.
    """
    a, e, nu = np.broadcast_arrays(_f(a), _f(e), _f(nu))
    p = a * (1.0 - e**2)
    rad = p / (1.0 + e * np.cos(nu))
    vs = np.sqrt(mu / p)
    zero = np.zeros_like(nu)
    r_pf = np.stack([rad * np.cos(nu), rad * np.sin(nu), zero], axis=-1)
    v_pf = np.stack([-vs * np.sin(nu), vs * (e + np.cos(nu)), zero], axis=-1)
    Q = rotation_z(raan) @ rotation_x(i) @ rotation_z(argp)
    return _mv(Q, r_pf), _mv(Q, v_pf)


def _angle(u: Array, w: Array, n: Array) -> Array:
    """Angle from ``u`` to ``w`` about ``n`` (right-handed), wrapped to ``[0, 2 pi)``."""
    return np.mod(np.arctan2(_dot(np.cross(u, w), n), _dot(u, w)), 2.0 * np.pi)


def rv_to_coe(
    r: ArrayLike, v: ArrayLike, mu: float = MU_EARTH, *, tol: float = 1e-11
) -> OrbitalElements:
    """Classical elements from an ECI state (vectorised over ``(..., 3)``).

    Meant for elliptic orbits; for ``e >= 1`` the returned ``a`` (from the vis-viva energy)
    is negative or infinite and is not validated. Singular cases (thresholds ``tol`` on
    ``e`` and on ``sin i``):

    * circular (``e < tol``): ``argp = 0`` and ``nu`` is measured from the ascending node
      (argument of latitude);
    * equatorial (``sin i < tol``): ``raan = 0`` and ``argp`` is measured from the ECI x axis
      in the direction of motion (longitude of periapsis for prograde orbits);
    * circular and equatorial: ``raan = argp = 0`` and ``nu`` is the angle from the x axis in
      the direction of motion (true longitude for prograde orbits).

    With these conventions :func:`coe_to_rv` reproduces the input state in every case.

    Args:
        r, v: Position (km) and velocity (km/s), ``(..., 3)``.
        mu: Gravitational parameter (km^3/s^2).
        tol: Threshold for the circular / equatorial cases (dimensionless).

    Returns:
        :class:`OrbitalElements` with arrays of shape ``(...)``.
    """
    r, v = _f(r), _f(v)
    rn = np.linalg.norm(r, axis=-1)
    hvec = np.cross(r, v)
    h_hat = _unit(hvec)
    evec = ((_dot(v, v) - mu / rn)[..., None] * r - _dot(r, v)[..., None] * v) / mu
    e = np.linalg.norm(evec, axis=-1)
    a = 1.0 / (2.0 / rn - _dot(v, v) / mu)
    node = np.stack([-hvec[..., 1], hvec[..., 0], np.zeros_like(rn)], axis=-1)
    node_n = np.linalg.norm(node, axis=-1)
    i = np.arctan2(node_n, hvec[..., 2])
    equatorial = node_n < tol * np.linalg.norm(hvec, axis=-1)
    circular = e < tol
    x_axis = np.broadcast_to(np.array([1.0, 0.0, 0.0]), node.shape)
    node_dir = node / np.where(equatorial, 1.0, node_n)[..., None]
    n_hat = np.where(equatorial[..., None], x_axis, node_dir)
    e_dir = np.where(circular[..., None], n_hat, evec / np.where(circular, 1.0, e)[..., None])
    raan = np.where(equatorial, 0.0, np.mod(np.arctan2(node[..., 1], node[..., 0]), 2.0 * np.pi))
    argp = np.where(circular, 0.0, _angle(n_hat, e_dir, h_hat))
    nu = _angle(e_dir, r, h_hat)
    return OrbitalElements(a, e, i, raan, argp, nu)


def cw_state_transition(n: ArrayLike, t: ArrayLike) -> Array:
    """Clohessy-Wiltshire state transition matrix.

    State ``[x, y, z, xdot, ydot, zdot]`` in Hill axes (x radial, y along-track, z
    cross-track) obeying ``xdd - 2 n yd - 3 n^2 x = 0``, ``ydd + 2 n xd = 0``,
    ``zdd + n^2 z = 0``. Lengths may be in any unit (velocities in that unit per second);
    the matrix is unit-free apart from ``n`` (rad/s) and ``t`` (s).

    Args:
        n: Chief mean motion (rad/s).
        t: Elapsed time (s); scalar or array, broadcast against ``n``.

    Returns:
        ``Phi`` of shape ``broadcast(n, t) + (6, 6)`` with ``x(t) = Phi @ x(0)``.
    """
    n, t = np.broadcast_arrays(_f(n), _f(t))
    nt = n * t
    s, c = np.sin(nt), np.cos(nt)
    P = np.zeros((*nt.shape, 6, 6))
    # positions <- (x0, y0, z0, xd0, yd0, zd0)
    P[..., 0, 0], P[..., 0, 3], P[..., 0, 4] = 4.0 - 3.0 * c, s / n, 2.0 * (1.0 - c) / n
    P[..., 1, 0], P[..., 1, 1] = 6.0 * (s - nt), 1.0
    P[..., 1, 3], P[..., 1, 4] = -2.0 * (1.0 - c) / n, (4.0 * s - 3.0 * nt) / n
    P[..., 2, 2], P[..., 2, 5] = c, s / n
    # velocities
    P[..., 3, 0], P[..., 3, 3], P[..., 3, 4] = 3.0 * n * s, c, 2.0 * s
    P[..., 4, 0], P[..., 4, 3], P[..., 4, 4] = -6.0 * n * (1.0 - c), -2.0 * s, 4.0 * c - 3.0
    P[..., 5, 2], P[..., 5, 5] = -n * s, c
    return P


def cw_propagate(x0: ArrayLike, n: ArrayLike, t: ArrayLike) -> Array:
    """Propagate Hill-frame states with the Clohessy-Wiltshire solution.

    Args:
        x0: Initial state(s) ``[x, y, z, xdot, ydot, zdot]`` (length unit L, L/s),
            ``(..., 6)``.
        n: Chief mean motion (rad/s).
        t: Time(s) since ``x0`` (s). For one state and times of shape ``(T,)`` the result is
            ``(T, 6)``; for a batch ``(B, 6)`` pass ``t[:, None]`` to get ``(T, B, 6)``.

    Returns:
        States of shape ``broadcast(n, t, x0[..., 0]) + (6,)`` in L and L/s.
    """
    return _mv(cw_state_transition(n, t), _f(x0))
