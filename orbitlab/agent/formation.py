"""Relative-orbit control: the CW-LQR node, and the design functions of `orbitlab.agent.cw` on
torch tensors (the design runs once, in numpy; see `cw` for the model)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.agent import cw
from orbitlab.agent.attitude import vector_param
from orbitlab.agent.laws import lqr_force
from orbitlab.agent.node import Node, NodeCfg


def cw_stm(n: float, t: float, *, device: torch.device | str = "cpu") -> torch.Tensor:
    """CW state transition matrix Phi(t), (6, 6) float64 on `device` (`cw.cw_stm`)."""
    return torch.as_tensor(cw.cw_stm(n, t), device=device)


def cw_zoh_input(
    n: float, t: float, mass_kg: float, *, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Zero-order-hold input matrix Gamma(t), (6, 3) float64 on `device` (`cw.cw_zoh_input`)."""
    return torch.as_tensor(cw.cw_zoh_input(n, t, mass_kg), device=device)


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def riccati_map(
    P: torch.Tensor, A: torch.Tensor, B: torch.Tensor, Q: torch.Tensor, R: torch.Tensor
) -> torch.Tensor:
    """`cw.riccati_map` on torch tensors (float64, on P's device)."""
    return torch.as_tensor(cw.riccati_map(*map(_np, (P, A, B, Q, R))), device=P.device)


def lqr_gain(P: torch.Tensor, A: torch.Tensor, B: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """`cw.lqr_gain` on torch tensors: K with u = -K s."""
    return torch.as_tensor(cw.lqr_gain(*map(_np, (P, A, B, R))), device=P.device)


def solve_dare(A: torch.Tensor, B: torch.Tensor, Q: torch.Tensor, R: torch.Tensor, **options):
    """`cw.solve_dare` on torch tensors: the stabilising DARE solution P, float64."""
    return torch.as_tensor(cw.solve_dare(*map(_np, (A, B, Q, R)), **options), device=A.device)


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


@dataclass(kw_only=True)
class CwLqrCfg(NodeCfg):
    """Discrete LQR on the CW model, held over this node's update period."""

    class_type: type | None = CwLqrNode
    """The node `build` makes from this config."""

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
