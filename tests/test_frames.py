"""Tests for orbitlab.orbit.frames (pure numpy)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import ArrayLike

from orbitlab.orbit.frames import (
    MU_EARTH,
    coe_to_rv,
    cw_propagate,
    cw_state_transition,
    eci_to_hill,
    hill_to_eci,
    lvlh_angular_velocity,
    lvlh_rotation,
    mean_motion,
    orbital_period,
    rotation_x,
    rotation_z,
    rv_to_coe,
)

DEG = np.pi / 180.0

# (a km, e, i, raan, argp, nu) in km and rad
ELLIPTIC = [
    (6778.0, 0.001, 45 * DEG, 270 * DEG, 90 * DEG, 10 * DEG),  # near-circular LEO
    (26600.0, 0.74, 63.4 * DEG, 40 * DEG, 270 * DEG, 200 * DEG),  # Molniya-like
    (24400.0, 0.73, 7 * DEG, 120 * DEG, 178 * DEG, 300 * DEG),  # GTO-like
    (7000.0, 0.05, 98 * DEG, 10 * DEG, 330 * DEG, 359 * DEG),  # sun-synchronous-ish
]


def _angle_diff(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    return np.abs(np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b)))))


def _rk4(f: Callable[[np.ndarray], np.ndarray], y: np.ndarray, h: float, steps: int) -> np.ndarray:
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def _orbit_rhs(a_extra: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    def f(y: np.ndarray) -> np.ndarray:
        r = y[..., :3]
        acc = -MU_EARTH * r / np.linalg.norm(r, axis=-1, keepdims=True) ** 3 + a_extra
        return np.concatenate([y[..., 3:], acc], axis=-1)

    return f


def _skew_to_vec(S: np.ndarray) -> np.ndarray:
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def test_rotation_helpers_turn_axes_counterclockwise() -> None:
    # exact trigonometric values up to one rounding of cos(pi/2) ~ 6e-17
    np.testing.assert_allclose(rotation_z(np.pi / 2) @ [1.0, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(rotation_x(np.pi / 2) @ [0, 1.0, 0], [0, 0, 1], atol=1e-15)
    assert rotation_z(np.zeros((4, 2))).shape == (4, 2, 3, 3)


@pytest.mark.parametrize("coe", ELLIPTIC)
def test_coe_rv_coe_round_trip_elliptic(coe: tuple[float, ...]) -> None:
    r, v = coe_to_rv(*coe)
    el = rv_to_coe(r, v)
    # a and e come from a few dozen flops on O(1) quantities: ~1e-13 relative is expected
    np.testing.assert_allclose([el.a_km, el.e], coe[:2], rtol=1e-9)
    # angles are absolute (some are near 0/2pi); atan2-based recovery is good to ~1e-12 rad
    got = [el.i_rad, el.raan_rad, el.argp_rad, el.nu_rad]
    assert np.all(_angle_diff(got, coe[2:]) < 1e-9)


def test_rv_to_coe_is_vectorised_like_scalar_calls() -> None:
    elems = np.array(ELLIPTIC).T
    r, v = coe_to_rv(*elems)
    assert r.shape == v.shape == (len(ELLIPTIC), 3)
    batch = rv_to_coe(r, v)
    for k in range(len(ELLIPTIC)):
        one = rv_to_coe(r[k], v[k])
        # same arithmetic on the same numbers: only summation-order rounding may differ
        np.testing.assert_allclose(one.nu_rad, batch.nu_rad[k], rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(one.a_km, batch.a_km[k], rtol=1e-14)


@pytest.mark.parametrize(
    ("coe", "expect_zero"),
    [
        ((7000.0, 0.0, 51.6 * DEG, 30 * DEG, 0.0, 75 * DEG), ["argp_rad"]),  # circular inclined
        ((9000.0, 0.2, 0.0, 0.0, 40 * DEG, 25 * DEG), ["raan_rad"]),  # equatorial elliptic
        ((7000.0, 0.0, 0.0, 0.0, 0.0, 123 * DEG), ["raan_rad", "argp_rad"]),  # both
        ((9000.0, 0.2, np.pi, 0.0, 40 * DEG, 25 * DEG), ["raan_rad"]),  # retrograde equatorial
    ],
)
def test_rv_to_coe_singular_cases_follow_documented_conventions(
    coe: tuple[float, ...], expect_zero: list[str]
) -> None:
    r, v = coe_to_rv(*coe)
    el = rv_to_coe(r, v)
    for name in expect_zero:
        assert getattr(el, name) == 0.0
    r2, v2 = coe_to_rv(el.a_km, el.e, el.i_rad, el.raan_rad, el.argp_rad, el.nu_rad)
    # the elements must rebuild the very same state; 1e-12 relative is ~100 ulp of headroom
    np.testing.assert_allclose(r2, r, rtol=1e-12, atol=1e-12 * float(np.linalg.norm(r)))
    np.testing.assert_allclose(v2, v, rtol=1e-12, atol=1e-12 * float(np.linalg.norm(v)))


def test_circular_speed_and_vis_viva_energy() -> None:
    r, v = coe_to_rv(7000.0, 0.0, 0.3, 1.0, 0.0, 2.0)
    # closed-form circular speed, only rounding error expected
    assert np.linalg.norm(v) == pytest.approx(np.sqrt(MU_EARTH / np.linalg.norm(r)), rel=1e-13)
    for a, e, i, raan, argp, nu in ELLIPTIC:
        r, v = coe_to_rv(a, e, i, raan, argp, nu)
        energy = 0.5 * v @ v - MU_EARTH / np.linalg.norm(r)
        # energy is a difference of two O(mu/r) terms: ~1e-15 relative rounding each
        assert energy == pytest.approx(-MU_EARTH / (2 * a), rel=1e-12)


def test_mean_motion_and_period() -> None:
    # exact formulas; the reference value for 7000 km is 5828.516 s to the printed digits
    assert orbital_period(7000.0) == pytest.approx(5828.516, abs=1e-3)
    assert mean_motion(7000.0) * orbital_period(7000.0) == pytest.approx(2 * np.pi, rel=1e-15)


def test_lvlh_rotation_is_proper_and_maps_R_and_h_onto_axes() -> None:
    r, v = coe_to_rv(*np.array(ELLIPTIC).T)
    C = lvlh_rotation(r, v)
    assert C.shape == (len(ELLIPTIC), 3, 3)
    eye = np.broadcast_to(np.eye(3), C.shape)
    # orthonormality from cross products of unit vectors: a few ulp
    np.testing.assert_allclose(C @ np.swapaxes(C, -1, -2), eye, atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(C), 1.0, atol=1e-14)
    h = np.cross(r, v)
    rn, hn = np.linalg.norm(r, axis=-1), np.linalg.norm(h, axis=-1)
    zeros = np.zeros_like(rn)
    # images of R and h should be exact up to rounding relative to their norms
    np.testing.assert_allclose(
        np.einsum("nij,nj->ni", C, r), np.stack([rn, zeros, zeros], -1), atol=1e-12 * rn.max()
    )
    np.testing.assert_allclose(
        np.einsum("nij,nj->ni", C, h), np.stack([zeros, zeros, hn], -1), atol=1e-12 * hn.max()
    )


def test_eci_hill_round_trip_batched() -> None:
    rng = np.random.default_rng(0)
    R, V = coe_to_rv(*np.array(ELLIPTIC).T)
    r = R + rng.normal(scale=1.0, size=R.shape)
    v = V + rng.normal(scale=1e-3, size=V.shape)
    rho, rho_dot = eci_to_hill(R, V, r, v)
    r2, v2 = hill_to_eci(R, V, rho, rho_dot)
    # absolute positions ~3e4 km so rounding is ~1e-11 km; velocities ~10 km/s
    np.testing.assert_allclose(r2, r, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v2, v, rtol=0, atol=1e-12)


def test_trailing_deputy_sits_behind_along_track_at_rest() -> None:
    a, dtheta = 6778.0, 1e-4
    coe = (a, 0.0, 45 * DEG, 270 * DEG, 0.0, 10 * DEG)
    R, V = coe_to_rv(*coe)
    r, v = coe_to_rv(*coe[:5], coe[5] - dtheta)
    rho, rho_dot = eci_to_hill(R, V, r, v)
    # exact answer is a(cos dth - 1, -sin dth, 0); differences from (0, -a dth, 0) are O(a dth^2)
    np.testing.assert_allclose(rho, [0.0, -a * dtheta, 0.0], atol=a * dtheta**2)
    np.testing.assert_allclose(
        rho, a * np.array([np.cos(dtheta) - 1, -np.sin(dtheta), 0]), atol=1e-10
    )  # rounding of ~7000 km positions: ~1e-12 km
    # rigid co-rotation: relative velocity in Hill frame is zero up to velocity rounding
    np.testing.assert_allclose(rho_dot, 0.0, atol=1e-12)


def test_hill_velocity_is_time_derivative_of_hill_position() -> None:
    R0, V0 = coe_to_rv(8000.0, 0.2, 0.7, 0.3, 1.1, 0.9)
    r0, v0 = R0 + np.array([0.5, -1.2, 0.8]), V0 + np.array([1e-3, 2e-4, -5e-4])
    f, h = _orbit_rhs(np.zeros(3)), 0.05
    states = [
        _rk4(f, np.concatenate([x, y]), s * h, 1)
        for x, y in ((R0, V0), (r0, v0))
        for s in (-1.0, 1.0)
    ]
    rho_m, _ = eci_to_hill(states[0][:3], states[0][3:], states[2][:3], states[2][3:])
    rho_p, _ = eci_to_hill(states[1][:3], states[1][3:], states[3][:3], states[3][3:])
    _, rho_dot = eci_to_hill(R0, V0, r0, v0)
    # central difference with h=0.05 s: truncation ~ h^2 |rho'''| ~ 1e-11 km/s; rho_dot ~ 1e-3
    np.testing.assert_allclose((rho_p - rho_m) / (2 * h), rho_dot, atol=1e-9)


@pytest.mark.parametrize("a_extra", [np.zeros(3), np.array([2e-6, -3e-6, 5e-6])])
def test_lvlh_angular_velocity_and_acceleration_match_finite_differences(
    a_extra: np.ndarray,
) -> None:
    f = _orbit_rhs(a_extra)
    R0, V0 = coe_to_rv(9000.0, 0.3, 0.9, 0.4, 0.2, 0.1)
    y = np.concatenate([R0, V0])
    A = None if not a_extra.any() else (lambda s: f(s)[3:])
    h = 0.05
    for _ in range(6):  # sample points along a numerically integrated orbit
        y = _rk4(f, y, 10.0, 150)
        ym, yp = _rk4(f, y, -h, 1), _rk4(f, y, h, 1)
        C_dot = (lvlh_rotation(yp[:3], yp[3:]) - lvlh_rotation(ym[:3], ym[3:])) / (2 * h)
        omega_fd = _skew_to_vec(C_dot.T @ lvlh_rotation(y[:3], y[3:]))
        acc = [None if A is None else A(s) for s in (y, ym, yp)]
        omega, omega_dot = lvlh_angular_velocity(y[:3], y[3:], acc[0])
        wm, _ = lvlh_angular_velocity(ym[:3], ym[3:], acc[1])
        wp, _ = lvlh_angular_velocity(yp[:3], yp[3:], acc[2])
        # O(h^2) truncation ~ (h * 3n)^2 / 6 ~ 4e-9 relative; 1e-7 keeps margin over rounding
        np.testing.assert_allclose(omega_fd, omega, atol=1e-7 * float(np.linalg.norm(omega)))
        # omega_dot ~ 1e-7 rad/s^2; same truncation argument, rounding ~1e-17/(2h) rad/s^2
        np.testing.assert_allclose(
            (wp - wm) / (2 * h), omega_dot, atol=1e-6 * float(np.linalg.norm(omega_dot))
        )
        if A is None:
            # documented Keplerian closed form
            r2 = y[:3] @ y[:3]
            np.testing.assert_allclose(omega_dot, -2 * (y[:3] @ y[3:]) / r2 * omega, rtol=1e-12)
        else:
            assert abs(omega @ lvlh_rotation(y[:3], y[3:])[0]) > 1e-9  # x part is exercised


def test_cw_transition_is_identity_at_zero_and_a_semigroup() -> None:
    n = mean_motion(6778.0)
    # Phi(0) has exact 0/1 entries except s/n = 0 and 1 - c = 0 exactly
    np.testing.assert_array_equal(cw_state_transition(n, 0.0), np.eye(6))
    t1, t2 = 700.0, 1900.0
    P12 = cw_state_transition(n, t1) @ cw_state_transition(n, t2)
    # entries up to 1/n ~ 900 s and 6 n t ~ 15; products accumulate ~1e-13 relative rounding
    np.testing.assert_allclose(cw_state_transition(n, t1 + t2), P12, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "x0", [np.array([10.0, 0, 0, 0, 0, 0]), np.array([10.0, -5.0, 3.0, 0.01, -0.02, 0.004])]
)
def test_cw_propagation_matches_rk4_of_linear_odes(x0: np.ndarray) -> None:
    n = mean_motion(6778.0)

    def f(s: np.ndarray) -> np.ndarray:
        x, _y, z, xd, yd, zd = s
        return np.array([xd, yd, zd, 2 * n * yd + 3 * n**2 * x, -2 * n * xd, -(n**2) * z])

    # lengths in metres here; RK4 with dt=0.5 s has local error ~(n dt)^5 ~ 1e-17 relative
    expected = _rk4(f, x0, 0.5, 1200)
    got = cw_propagate(x0, n, 600.0)
    np.testing.assert_allclose(got[:3], expected[:3], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got[3:], expected[3:], rtol=0, atol=1e-12)


def test_cw_football_orbit_is_bounded_and_periodic() -> None:
    n = mean_motion(6778.0)
    x0 = np.array([10.0, 0.0, 2.0, 0.0, -2 * n * 10.0, 0.0])
    t = np.linspace(0.0, 2 * np.pi / n, 721)
    traj = cw_propagate(x0, n, t)
    assert traj.shape == (721, 6)
    # exact 2:1 ellipse: |y| <= 2 x0 and |x| <= x0, up to rounding of ~10 m values
    assert np.abs(traj[:, 1]).max() <= 20.0 + 1e-9
    assert np.abs(traj[:, 0]).max() <= 10.0 + 1e-9
    # after one period the secular terms cancel; sin(2 pi) ~ 2e-16 times 6 n t etc.
    np.testing.assert_allclose(traj[-1], x0, rtol=0, atol=1e-9)


def test_cw_propagate_broadcasts_batches_of_states_and_times() -> None:
    n = mean_motion(7000.0)
    x0 = np.random.default_rng(1).normal(size=(5, 6))
    t = np.linspace(0.0, 3000.0, 4)
    out = cw_propagate(x0, n, t[:, None])
    assert out.shape == (4, 5, 6)
    # same matrix-vector product computed one by one: rounding only
    np.testing.assert_allclose(out[2, 3], cw_state_transition(n, t[2]) @ x0[3], rtol=1e-14)
