"""`FormationNmpcNode`: the formation NMPC (`orbitlab.agent.nmpc_solver`) as an agent-graph
node, one problem per controlled agent and world (worlds are looped; each problem keeps its
own warm start), sharing each agent's plan with the others.

The solver's names are re-exported here (`from orbitlab.agent.nmpc import FormationNmpc`).
CasADi is an optional dependency: pip install 'orbitlab-sim[nmpc]'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from orbitlab.agent.nmpc_solver import (
    FAR_AWAY_M,
    STATE_DIM,
    WRENCH_DIM,
    FormationNmpc,
    NmpcCfg,
    NmpcSolution,
    opposing_pairs,
    pair_matrix,
    require_casadi,
)
from orbitlab.agent.node import Node, NodeCfg

__all__ = [
    "FAR_AWAY_M",
    "STATE_DIM",
    "WRENCH_DIM",
    "FormationNmpc",
    "FormationNmpcNode",
    "FormationNmpcNodeCfg",
    "NmpcCfg",
    "NmpcSolution",
    "opposing_pairs",
    "pair_matrix",
    "require_casadi",
]


class FormationNmpcNode(Node):
    """One `FormationNmpc` per (world, agent). Every agent keeps out of the leader's plan and
    of the other agents' plans of the previous update shifted by one step (what an agent has
    received when it solves; the first update after a reset holds them at their states)."""

    state_attrs = (*Node.state_attrs, "plans", "has_plan")
    cfg: FormationNmpcNodeCfg

    def __init__(
        self,
        cfg: FormationNmpcNodeCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        agents = tuple(cfg.agents)
        if not agents or len(cfg.slot_offsets_m) != len(agents):
            raise ValueError(f"node '{name}': give one slot offset per agent ({agents})")
        self.input_names = ("leader_plan",) + tuple(f"state/{a}" for a in agents)
        self.output_names = tuple(f"wrench/{a}" for a in agents) + tuple(
            f"plan/{a}" for a in agents
        )
        super().__init__(cfg, name, num_envs, dt_s, device)
        if abs(self.update_period_s - cfg.nmpc.dt_s) > 1e-9:
            raise ValueError(
                f"node '{name}': period {self.update_period_s} s must equal the "
                f"model step nmpc.dt_s = {cfg.nmpc.dt_s} s"
            )
        needed = (len(agents) - 1) + int(cfg.avoid_leader)
        if needed > cfg.nmpc.num_obstacles:
            raise ValueError(
                f"node '{name}': {needed} obstacles per agent, but "
                f"nmpc.num_obstacles is {cfg.nmpc.num_obstacles}"
            )
        self.agents = agents
        dqs = cfg.attitude_offsets or ((1.0, 0.0, 0.0, 0.0),) * len(agents)
        self.problems = [
            [
                FormationNmpc(cfg.nmpc, off, dq)
                for off, dq in zip(cfg.slot_offsets_m, dqs, strict=True)
            ]
            for _ in range(self.num_envs)
        ]
        H = cfg.nmpc.horizon_steps
        self.plans = np.zeros((self.num_envs, len(agents), H + 1, STATE_DIM))
        self.has_plan = np.zeros((self.num_envs, len(agents)), dtype=bool)
        self.solve_times_s: dict[str, list[float]] = {a: [] for a in agents}
        """Solver wall times per agent, s (every solve since construction)."""
        self.failures: dict[str, int] = {a: 0 for a in agents}
        """Solves whose solver did not report success, per agent."""
        self.last: list[list[NmpcSolution | None]] = [
            [None] * len(agents) for _ in range(self.num_envs)
        ]

    def reset_state(self, worlds: torch.Tensor | slice) -> None:
        ids = (
            range(self.num_envs)[worlds]
            if isinstance(worlds, slice)
            else (
                torch.arange(self.num_envs)[worlds.cpu()].tolist()
                if worlds.dtype == torch.bool
                else worlds.cpu().reshape(-1).tolist()
            )
        )
        for i in [ids] if isinstance(ids, int) else ids:
            for problem in self.problems[i]:
                problem.reset()
            self.has_plan[i] = False

    def _others(
        self, world: int | np.integer, k: int, states: np.ndarray, leader: np.ndarray
    ) -> list[np.ndarray]:
        H = self.cfg.nmpc.horizon_steps
        others = [leader[:, :3]] if self.cfg.avoid_leader else []
        for j in range(len(self.agents)):
            if j == k:
                continue
            if self.has_plan[world, j]:
                old = self.plans[world, j, :, :3]
                others.append(np.concatenate([old[1:], old[-1:]]))
            else:
                others.append(np.repeat(states[j, None, :3], H + 1, 0))
        return others

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        leader = inputs["leader_plan"].detach().cpu().double().numpy()
        states = np.stack(
            [inputs[f"state/{a}"].detach().cpu().double().numpy() for a in self.agents], 1
        )
        due = self.due.cpu().numpy()
        wrench = np.zeros((self.num_envs, len(self.agents), WRENCH_DIM))
        new_plans = self.plans.copy()
        for i in np.nonzero(due)[0]:
            for k, agent in enumerate(self.agents):
                sol = self.problems[i][k].solve(
                    states[i, k], leader[i], self._others(i, k, states[i], leader[i])
                )
                wrench[i, k] = sol.wrench
                new_plans[i, k] = sol.states
                self.last[i][k] = sol
                self.solve_times_s[agent].append(sol.solve_time_s)
                self.failures[agent] += int(not sol.success)
            self.has_plan[i] = True
        self.plans = new_plans
        f64, device = torch.float64, self.device
        out = {
            f"wrench/{a}": torch.as_tensor(wrench[:, k], dtype=f64, device=device)
            for k, a in enumerate(self.agents)
        }
        out.update(
            {
                f"plan/{a}": torch.as_tensor(self.plans[:, k], dtype=f64, device=device)
                for k, a in enumerate(self.agents)
            }
        )
        return out

    def solve_time_summary(self) -> dict[str, tuple[float, float]]:
        """(mean, max) solver wall time per agent, ms."""
        return {
            a: (
                1e3 * float(np.mean(t)) if t else math.nan,
                1e3 * float(np.max(t)) if t else math.nan,
            )
            for a, t in self.solve_times_s.items()
        }


@dataclass(kw_only=True)
class FormationNmpcNodeCfg(NodeCfg):
    """NMPC for several followers of one leader, batched over worlds by looping.

    Inputs: `leader_plan` (N_env, H + 1, 13), the leader's predicted states, and
    `state/<agent>` (N_env, 13) per agent. Outputs per agent: `wrench/<agent>` (N_env, 6) body
    force N and torque N m, `plan/<agent>` (N_env, H + 1, 13) its predicted states. Wire them
    with `inputs` / `outputs` as for any node.
    """

    class_type: type | None = FormationNmpcNode
    """The node `build` makes from this config."""

    nmpc: NmpcCfg = field(default_factory=NmpcCfg)
    """The problem of each agent."""
    agents: tuple[str, ...] = ()
    """Names of the controlled agents (followers)."""
    slot_offsets_m: tuple[tuple[float, float, float], ...] = ()
    """Each agent's slot relative to the leader, Hill axes, m."""
    attitude_offsets: tuple[tuple[float, float, float, float], ...] | None = None
    """Each agent's attitude offset dq (q_ref = dq (x) q_leader); None: identity."""
    avoid_leader: bool = True
    """Keep out of the leader's predicted trajectory."""
