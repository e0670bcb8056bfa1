"""Discrete LQR design on the Clohessy-Wiltshire model (numpy: controller processes use it
without torch; `orbitlab.agent.formation` gives the same functions on torch tensors).

Hill frame: x radial (outward), y along-track, z orbit normal. With mean motion n (rad/s), mass
m (kg) and force F (N) in Hill axes, the CW equations are

    x'' - 2 n y' - 3 n^2 x = F_x / m,    y'' + 2 n x' = F_y / m,    z'' + n^2 z = F_z / m.

State s = [x, y, z, x', y', z'] (m, m/s). Over a hold period T the force is constant (zero-order
hold), so s_{k+1} = Phi(T) s_k + Gamma(T) F_k with the closed-form state transition matrix Phi
and Gamma = int_0^T Phi(t) dt [0; I/m]. Terms like sin(nT) - nT are evaluated by series for
small nT, so both stay accurate to rounding at controller periods of a fraction of a second.
"""

from __future__ import annotations

import math

import numpy as np


def _sin_minus_x(x: float) -> float:
    """sin(x) - x without cancellation for small |x| (Taylor series to x^15)."""
    if abs(x) >= 0.1:
        return math.sin(x) - x
    term, total, x2 = x, 0.0, x * x
    for k in range(1, 8):
        term *= -x2 / ((2 * k) * (2 * k + 1))
        total += term
    return total


def _trig(n: float, t: float) -> tuple[float, float, float, float]:
    """(x, sin x, 1 - cos x, sin x - x) for x = n t, each free of cancellation."""
    if not (math.isfinite(n) and n > 0.0):
        raise ValueError(f"mean motion must be finite and > 0 rad/s, got {n}")
    x = n * t
    return x, math.sin(x), 2.0 * math.sin(0.5 * x) ** 2, _sin_minus_x(x)


def cw_stm(n: float, t: float) -> np.ndarray:
    """CW state transition matrix Phi(t), (6, 6) float64, for state [pos m, vel m/s].

    Args:
        n: mean motion, rad/s (> 0).
        t: elapsed time, s.
    """
    x, s, omc, smx = _trig(n, t)
    c = 1.0 - omc
    rows = [
        [4.0 - 3.0 * c, 0, 0, s / n, 2.0 * omc / n, 0],
        [6.0 * smx, 1, 0, -2.0 * omc / n, (4.0 * smx + x) / n, 0],
        [0, 0, c, 0, 0, s / n],
        [3.0 * n * s, 0, 0, c, 2.0 * s, 0],
        [-6.0 * n * omc, 0, 0, -2.0 * s, 1.0 - 4.0 * omc, 0],
        [0, 0, -n * s, 0, 0, c],
    ]
    return np.array(rows, dtype=np.float64)


def cw_zoh_input(n: float, t: float, mass_kg: float) -> np.ndarray:
    """Exact zero-order-hold input matrix Gamma(t), (6, 3): state change per constant force, N.

    Gamma = (1/m) int_0^t Phi(tau)[:, 3:6] dtau, integrated in closed form.

    Args:
        n: mean motion, rad/s (> 0).
        t: hold time, s.
        mass_kg: spacecraft mass, kg (> 0).
    """
    if not mass_kg > 0:
        raise ValueError(f"mass_kg must be > 0, got {mass_kg}")
    _, s, omc, smx = _trig(n, t)
    n2 = n * n
    rows = [
        [omc / n2, -2.0 * smx / n2, 0],
        [2.0 * smx / n2, 4.0 * omc / n2 - 1.5 * t * t, 0],
        [0, 0, omc / n2],
        [s / n, 2.0 * omc / n, 0],
        [-2.0 * omc / n, 4.0 * s / n - 3.0 * t, 0],
        [0, 0, s / n],
    ]
    return np.array(rows, dtype=np.float64) / mass_kg


def riccati_map(
    P: np.ndarray, A: np.ndarray, B: np.ndarray, Q: np.ndarray, R: np.ndarray
) -> np.ndarray:
    """Right side of the DARE: Q + A^T P A - A^T P B (R + B^T P B)^-1 B^T P A."""
    PA, PB = P @ A, P @ B
    return Q + A.T @ PA - (A.T @ PB) @ np.linalg.solve(R + B.T @ PB, PB.T @ A)


def lqr_gain(P: np.ndarray, A: np.ndarray, B: np.ndarray, R: np.ndarray) -> np.ndarray:
    """K = (R + B^T P B)^-1 B^T P A, so that u = -K s."""
    return np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def solve_dare(
    A: np.ndarray,
    B: np.ndarray,
    Q: np.ndarray,
    R: np.ndarray,
    *,
    rtol: float = 1e-14,
    max_iterations: int = 100_000,
) -> np.ndarray:
    """Stabilising solution P of the discrete algebraic Riccati equation, float64.

    Doubling first (P after 2^k steps of the Riccati recursion from P = 0, so convergence is
    quadratic even when the closed loop is slow), then plain fixed-point iterations of
    P <- riccati_map(P) until the relative change is below `rtol` (Frobenius norm).
    RuntimeError if that does not happen within `max_iterations`.
    """
    eye = np.eye(A.shape[0])
    a, g, h = A, B @ np.linalg.solve(R, B.T), Q
    for _ in range(64):
        w = eye + g @ h
        wa, wg = np.linalg.solve(w, a), np.linalg.solve(w, g)
        h_next = h + a.T @ h @ wa
        g = g + a @ wg @ a.T
        a = a @ wa
        h_next, g = 0.5 * (h_next + h_next.T), 0.5 * (g + g.T)
        done = float(np.linalg.norm(h_next - h)) <= rtol * float(np.linalg.norm(h_next))
        h = h_next
        if done:
            break
    P = h
    for _ in range(max_iterations):
        P_next = riccati_map(P, A, B, Q, R)
        P_next = 0.5 * (P_next + P_next.T)
        if float(np.linalg.norm(P_next - P)) <= rtol * float(np.linalg.norm(P_next)):
            return P_next
        P = P_next
    raise RuntimeError(f"solve_dare: no convergence to rtol {rtol} in {max_iterations} steps")
