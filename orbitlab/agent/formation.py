"""Relative-orbit control: discrete LQR on the Clohessy-Wiltshire model.

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
from dataclasses import dataclass

import torch

from orbitlab.agent.attitude import vector_param
from orbitlab.agent.laws import lqr_force
from orbitlab.agent.node import Node, NodeCfg
from orbitlab.orbit.constants import MU_EARTH_KM3_S2


def mean_motion(semi_major_axis_km: float, mu_km3_s2: float = MU_EARTH_KM3_S2) -> float:
    """n = sqrt(mu / a^3), rad/s."""
    return math.sqrt(mu_km3_s2 / semi_major_axis_km**3)


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


def cw_stm(n: float, t: float, *, device: torch.device | str = "cpu") -> torch.Tensor:
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
    return torch.tensor(rows, dtype=torch.float64, device=device)


def cw_zoh_input(
    n: float, t: float, mass_kg: float, *, device: torch.device | str = "cpu"
) -> torch.Tensor:
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
    return torch.tensor(rows, dtype=torch.float64, device=device) / mass_kg


def riccati_map(
    P: torch.Tensor, A: torch.Tensor, B: torch.Tensor, Q: torch.Tensor, R: torch.Tensor
) -> torch.Tensor:
    """Right side of the DARE: Q + A^T P A - A^T P B (R + B^T P B)^-1 B^T P A."""
    PA, PB = P @ A, P @ B
    return Q + A.T @ PA - (A.T @ PB) @ torch.linalg.solve(R + B.T @ PB, PB.T @ A)


def lqr_gain(P: torch.Tensor, A: torch.Tensor, B: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """K = (R + B^T P B)^-1 B^T P A, so that u = -K s."""
    return torch.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def solve_dare(
    A: torch.Tensor,
    B: torch.Tensor,
    Q: torch.Tensor,
    R: torch.Tensor,
    *,
    rtol: float = 1e-14,
    max_iterations: int = 100_000,
) -> torch.Tensor:
    """Stabilising solution P of the discrete algebraic Riccati equation, float64.

    Doubling first (P after 2^k steps of the Riccati recursion from P = 0, so convergence is
    quadratic even when the closed loop is slow), then plain fixed-point iterations of
    P <- riccati_map(P) until the relative change is below `rtol` (Frobenius norm).
    RuntimeError if that does not happen within `max_iterations`.
    """
    eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
    a, g, h = A, B @ torch.linalg.solve(R, B.T), Q
    for _ in range(64):
        w = eye + g @ h
        wa, wg = torch.linalg.solve(w, a), torch.linalg.solve(w, g)
        h_next = h + a.T @ h @ wa
        g = g + a @ wg @ a.T
        a = a @ wa
        h_next, g = 0.5 * (h_next + h_next.T), 0.5 * (g + g.T)
        done = float((h_next - h).norm()) <= rtol * float(h_next.norm())
        h = h_next
        if done:
            break
    P = h
    for _ in range(max_iterations):
        P_next = riccati_map(P, A, B, Q, R)
        P_next = 0.5 * (P_next + P_next.T)
        if float((P_next - P).norm()) <= rtol * float(P_next.norm()):
            return P_next
        P = P_next
    raise RuntimeError(f"solve_dare: no convergence to rtol {rtol} in {max_iterations} steps")


@dataclass(kw_only=True)
class CwLqrCfg(NodeCfg):
    """Discrete LQR on the CW model, held over this node's update period."""

    mean_motion_rad_s: float
    """n of the reference (leader) orbit, rad/s; see `mean_motion`."""
    mass_kg: float
    """Mass of the controlled spacecraft, kg."""
    q_pos: float | tuple[float, float, float] = 1.0
    """Diagonal state weight on the position error, 1/m^2 (scalar or per Hill axis)."""
    q_vel: float | tuple[float, float, float] = 1.0
    """Diagonal state weight on the velocity error, s^2/m^2."""
    r_force: float | tuple[float, float, float] = 1.0
    """Diagonal input weight on the force, 1/N^2 (> 0)."""
    max_force_n: float | tuple[float, float, float] = math.inf
    """Per-axis force limit, N; the command is clipped per Hill axis."""


class CwLqrNode(Node):
    """F = -K [rel_pos; rel_vel], clipped per axis, with K the infinite-horizon discrete LQR
    gain for s_{k+1} = A_d s_k + B_d F_k (CW model, zero-order hold over `update_period_s`)
    and cost sum s^T Q s + F^T R F.

    Inputs: rel_pos (N, 3) m and rel_vel (N, 3) m/s, the controlled spacecraft's state minus its
    goal, Hill axes. Output: force_hill (N, 3) N, Hill axes. Attributes: A_d (6, 6), B_d (6, 3),
    P (6, 6) the DARE solution, K (3, 6) in N/m and N s/m, closed_loop = A_d - B_d K.
    """

    input_names = ("rel_pos", "rel_vel")
    output_names = ("force_hill",)

    def __init__(
        self,
        cfg: CwLqrCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(cfg, name, num_envs, dt_s, device)
        weights = [
            vector_param(getattr(cfg, f), f, name, self.device)
            for f in ("q_pos", "q_vel", "r_force", "max_force_n")
        ]
        q_pos, q_vel, r_force, self.max_force = weights
        if bool((q_pos < 0).any() or (q_vel < 0).any() or (r_force <= 0).any()):
            raise ValueError(f"node '{name}': q_pos, q_vel must be >= 0 and r_force > 0")
        if bool((self.max_force < 0).any()):
            raise ValueError(f"node '{name}': max_force_n must be >= 0")
        T = self.update_period_s
        self.A_d = cw_stm(cfg.mean_motion_rad_s, T, device=self.device)
        self.B_d = cw_zoh_input(cfg.mean_motion_rad_s, T, cfg.mass_kg, device=self.device)
        self.Q = torch.diag(torch.cat([q_pos, q_vel]))
        self.R = torch.diag(r_force)
        self.P = solve_dare(self.A_d, self.B_d, self.Q, self.R)
        self.K = lqr_gain(self.P, self.A_d, self.B_d, self.R)
        self.closed_loop = self.A_d - self.B_d @ self.K

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        state = torch.cat([inputs["rel_pos"], inputs["rel_vel"]], dim=-1)
        return {"force_hill": lqr_force(self.K, state, self.max_force)}
