"""Nonlinear MPC for leader-follower formation flying (the seed study's controller), on CasADi.

`FormationNmpc` is the env-independent core: one optimal control problem per follower,

    min  sum_{n<N} l(x_n, u_n) + l_f(x_N)
    s.t. x_0 = x_k,  x_{n+1} = f(x_n, u_n),  |d_{n,i}| <= T_i,
         |p_n - o_{b,n}|^2 + s_{b,n} >= d_min^2,  s >= 0        (keep-out, soft)

with state x = [p (3) m, v (3) m/s, q (4), w (3) rad/s] (13): Hill position and velocity of
the follower relative to the chief, its attitude body -> Hill (w, x, y, z) and its body rate
(inertial, body axes). The input is the net thrust d (N) of each opposing thruster pair of the
layout (6 pairs for the formation flyer), so the thrusters' limits are exact boxes; the body
wrench is u = [F_B, tau_B] = M d. Without a layout the input is the wrench itself, boxed per axis.

Dynamics f: one or more RK4 steps over dt of the Clohessy-Wiltshire equations with the body
force rotated into Hill axes, p'' = CW(p, p') + R(q) F_B / m, the attitude kinematics relative
to the rotating Hill frame, q' = q (x) (0, w - R(q)^T n z) / 2, and Euler's equation
J w' = tau - w x J w. Stage cost (the spec's eq. 5, Q and R of its section V-A):

    l = |p - p_r|^2_Qp + |v - v_r|^2_Qv + Q_q (1 - (q . q_r)^2) + |w - w_r|^2_Qw + |u|^2_R,

terminal cost l_f = P-weighted state error with P = terminal_factor x Q. The spec writes the
attitude term as a squared norm of 1 - (q . q_r)^2; it is used unsquared here (~ Q_q theta^2 / 4
for an error angle theta, the reading of the formation task's baseline), since the square would
be quartic and nearly flat near zero error. The reference is the
leader's shared predicted trajectory plus the slot offset (eq. 7): p_r = p_L + dp, v_r = v_L,
q_r = dq (x) q_L, w_r = w_L. The obstacles o_b are the other agents' shared trajectories.

`orbitlab.agent.nmpc.FormationNmpcNode` runs one problem per controlled agent and world
(worlds are looped; each problem keeps its own warm start) and shares each agent's plan with
the others. This module needs numpy (and CasADi to solve), not torch: a controller process
uses it alone.

CasADi is an optional dependency: pip install 'orbitlab-sim[nmpc]'.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orbitlab.orbit.rotations import quat_multiply as quat_mul

STATE_DIM = 13
"""[p (3) m, v (3) m/s, q body -> Hill (4), w body rate (3) rad/s]."""
WRENCH_DIM = 6
"""[F_B (3) N, tau_B (3) N m]."""
FAR_AWAY_M = 1.0e3
"""Position given to absent obstacles, m (the keep-out never binds there)."""
_FUNCTIONS: dict[str, tuple[Any, Any]] = {}
"""repr(NmpcCfg) -> (step function, solver), shared by problems of equal configurations."""


def require_casadi() -> Any:
    """The `casadi` module; ImportError naming the extra that provides it if it is missing."""
    try:
        import casadi
    except ImportError as error:
        raise ImportError(
            "the NMPC controller needs CasADi, which is not installed: "
            "pip install 'orbitlab-sim[nmpc]'"
        ) from error
    return casadi


@dataclass(kw_only=True)
class NmpcCfg:
    """One follower's NMPC: model, horizon, weights (the spec's), limits and solver options."""

    horizon_steps: int = 30
    """N, prediction steps."""
    dt_s: float = 0.2
    """Step of the prediction model, s (the controller's 5 Hz period)."""
    rk4_substeps: int = 1
    """RK4 steps per prediction step."""
    mean_motion_rad_s: float = 0.0011314
    """n of the chief orbit, rad/s (a = 6778 km)."""
    mass_kg: float = 17.8
    """Spacecraft mass, kg."""
    inertia_kgm2: tuple[float, float, float] = (0.315, 0.315, 0.315)
    """Principal moments of inertia, kg m^2 (body axes)."""
    q_pos: float = 1.0
    """Position weight, 1/m^2."""
    q_vel: float = 30.0
    """Velocity weight, s^2/m^2."""
    q_att: float = 1000.0
    """Weight on 1 - (q . q_ref)^2 (~ theta^2 / 4 for a small error angle theta)."""
    q_rate: float = 10.0
    """Body-rate weight, s^2/rad^2."""
    r_force: float = 0.2
    """Force weight, 1/N^2."""
    r_torque: float = 100.0
    """Torque weight, 1/(N m)^2."""
    terminal_factor: float = 20.0
    """P = terminal_factor x Q."""
    thruster_pairs: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...] | None = None
    """(position m, direction) of each opposing thruster pair, body axes; the input is the
    pair's net thrust along `direction`, boxed by +-pair_max_force_n. None: wrench input."""
    pair_max_force_n: float = 1.5
    """Thrust of one thruster, N (a pair nets -T .. +T)."""
    max_force_n: float = 3.0
    """Per-body-axis force limit when `thruster_pairs` is None, N."""
    max_torque_nm: float = 0.51
    """Per-body-axis torque limit when `thruster_pairs` is None, N m."""
    min_distance_m: float = 0.45
    """Keep-out: least centre distance to each other agent, m (soft, from step 1 on)."""
    slack_l1: float = 1.0e3
    """Linear penalty on the keep-out slack, 1/m^2."""
    slack_l2: float = 1.0e5
    """Quadratic penalty on the keep-out slack, 1/m^4."""
    num_obstacles: int = 2
    """Other agents in the keep-out constraint (absent ones are placed FAR_AWAY_M away)."""
    solver: str = "ipopt"
    """CasADi nlpsol plugin: 'ipopt' or 'sqpmethod' (with qpoases)."""
    max_iterations: int = 100
    """Solver iteration cap."""
    tolerance: float = 1.0e-6
    """Solver convergence tolerance."""
    solver_options: dict[str, Any] = field(default_factory=dict)
    """Extra options passed to casadi.nlpsol (they override the defaults)."""


@dataclass
class NmpcSolution:
    """One solve: the first wrench to apply and the whole plan."""

    wrench: np.ndarray
    """(6,) body wrench of the first step: force N, torque N m."""
    states: np.ndarray
    """(N + 1, 13) predicted states (the plan shared with other agents)."""
    wrenches: np.ndarray
    """(N, 6) planned body wrenches."""
    solve_time_s: float
    """Wall time of the solver call, s."""
    success: bool
    """The solver reported success."""
    status: str
    """The solver's return status."""
    iterations: int
    """Solver iterations."""
    max_slack: float
    """Largest keep-out slack, m^2 (0: keep-out met at every step)."""

    @property
    def force_n(self) -> np.ndarray:
        """(3,) body force of the first step, N."""
        return self.wrench[:3]

    @property
    def torque_nm(self) -> np.ndarray:
        """(3,) body torque of the first step, N m."""
        return self.wrench[3:]


def pair_matrix(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> np.ndarray:
    """(6, k) wrench per unit net thrust of each pair: column i = [e_i; r_i x e_i]."""
    cols = []
    for position, direction in pairs:
        e = np.asarray(direction, float) / np.linalg.norm(direction)
        cols.append(np.concatenate([e, np.cross(np.asarray(position, float), e)]))
    matrix = np.stack(cols, 1)
    if np.linalg.matrix_rank(matrix) < WRENCH_DIM:
        raise ValueError("thruster_pairs must span all six wrench axes")
    return matrix


def opposing_pairs(
    thrusters: Sequence[tuple[Sequence[float], Sequence[float]]],
) -> tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]:
    """Group a layout of (position m, direction) thrusters into opposing pairs (same position,
    opposite directions); ValueError if some thruster has no partner."""
    left = [(np.asarray(p, float), np.asarray(d, float) / np.linalg.norm(d)) for p, d in thrusters]
    pairs = []
    while left:
        p, d = left.pop(0)
        match = next(
            (i for i, (p2, d2) in enumerate(left) if np.allclose(p, p2) and np.allclose(d, -d2)),
            None,
        )
        if match is None:
            raise ValueError(f"thruster at {p.tolist()} along {d.tolist()} has no opposing partner")
        left.pop(match)
        pairs.append((tuple(p.tolist()), tuple(d.tolist())))
    return tuple(pairs)


# ------------------------------------------------------------------------------ core


class FormationNmpc:
    """One follower's NMPC (env-independent: numpy in, numpy out; usable from any process).

    `solve(follower_state, leader_trajectory, others)` returns an `NmpcSolution` whose `wrench`
    is the body force (N) and torque (N m) to hold for the next `dt_s`. Successive calls warm
    start from the previous plan shifted by one step; `reset()` forgets it.
    """

    def __init__(
        self,
        cfg: NmpcCfg,
        slot_offset_m: Sequence[float] = (0.0, 0.0, 0.0),
        attitude_offset: Sequence[float] = (1.0, 0.0, 0.0, 0.0),
    ) -> None:
        self.ca = require_casadi()
        if cfg.horizon_steps < 1 or not cfg.dt_s > 0 or cfg.rk4_substeps < 1:
            raise ValueError("NmpcCfg: horizon_steps, dt_s and rk4_substeps must be positive")
        self.cfg = cfg
        self.offset = np.asarray(slot_offset_m, float).reshape(3)
        self.dq = np.asarray(attitude_offset, float).reshape(4)
        self.dq = self.dq / np.linalg.norm(self.dq)
        if cfg.thruster_pairs is not None:
            self.input_matrix = pair_matrix(cfg.thruster_pairs)
            self.input_bound = np.full(self.input_matrix.shape[1], cfg.pair_max_force_n)
        else:
            self.input_matrix = np.eye(WRENCH_DIM)
            self.input_bound = np.array([cfg.max_force_n] * 3 + [cfg.max_torque_nm] * 3)
        self.input_dim = self.input_matrix.shape[1]
        key = repr(cfg)  # problems of equal configs share their (stateless) CasADi functions
        if key not in _FUNCTIONS:
            self.step = self._step_function()
            _FUNCTIONS[key] = (self.step, self._build())
        self.step, self.solver = _FUNCTIONS[key]
        """step: CasADi Function (x (13), u wrench (6)) -> x after dt_s; solver: the nlpsol."""
        self._bounds()
        self.reset()

    # -------------------------------------------------------------- model
    def _rhs(self, x: Any, u: Any) -> Any:
        ca, cfg = self.ca, self.cfg
        n = cfg.mean_motion_rad_s
        p, v, q, w = x[0:3], x[3:6], x[6:10], x[10:13]
        qw, qx, qy, qz = q[0], q[1], q[2], q[3]
        rot = ca.vertcat(
            ca.horzcat(
                1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)
            ),
            ca.horzcat(
                2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)
            ),
            ca.horzcat(
                2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)
            ),
        )
        force_hill = rot @ u[0:3]
        accel = ca.vertcat(3 * n * n * p[0] + 2 * n * v[1], -2 * n * v[0], -n * n * p[2])
        accel = accel + force_hill / cfg.mass_kg
        rel = w - rot.T @ ca.DM([0.0, 0.0, n])  # body rate relative to the rotating Hill frame
        qdot = 0.5 * ca.vertcat(
            -qx * rel[0] - qy * rel[1] - qz * rel[2],
            qw * rel[0] + qy * rel[2] - qz * rel[1],
            qw * rel[1] - qx * rel[2] + qz * rel[0],
            qw * rel[2] + qx * rel[1] - qy * rel[0],
        )
        J = ca.DM(cfg.inertia_kgm2)
        wdot = (u[3:6] - ca.cross(w, J * w)) / J
        return ca.vertcat(v, accel, qdot, wdot)

    def _step_function(self) -> Any:
        ca = self.ca
        x, u = ca.SX.sym("x", STATE_DIM), ca.SX.sym("u", WRENCH_DIM)
        h = self.cfg.dt_s / self.cfg.rk4_substeps
        y = x
        for _ in range(self.cfg.rk4_substeps):
            k1 = self._rhs(y, u)
            k2 = self._rhs(y + 0.5 * h * k1, u)
            k3 = self._rhs(y + 0.5 * h * k2, u)
            k4 = self._rhs(y + h * k3, u)
            y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return ca.Function("nmpc_step", [x, u], [y])

    def propagate(self, state: np.ndarray, wrench: np.ndarray) -> np.ndarray:
        """The model's state (13,) after holding `wrench` (6,) [N, N m] for dt_s."""
        return np.asarray(self.step(state, wrench)).reshape(STATE_DIM)

    # ---------------------------------------------------------------- NLP
    def _weights(self) -> np.ndarray:
        c = self.cfg
        return np.array([c.q_pos] * 3 + [c.q_vel] * 3 + [c.q_att] + [c.q_rate] * 3)

    def _stage(self, x: Any, r: Any, weights: np.ndarray) -> Any:
        ca = self.ca
        dp, dv, dw = x[0:3] - r[0:3], x[3:6] - r[3:6], x[10:13] - r[10:13]
        dot = ca.dot(x[6:10], r[6:10])
        return (
            weights[0] * ca.sumsqr(dp)
            + weights[3] * ca.sumsqr(dv)
            + weights[6] * (1 - dot * dot)
            + weights[7] * ca.sumsqr(dw)
        )

    def _build(self) -> Any:
        ca, c = self.ca, self.cfg
        N, K, nu = c.horizon_steps, c.num_obstacles, self.input_dim
        X = ca.SX.sym("X", STATE_DIM, N + 1)
        D = ca.SX.sym("D", nu, N)
        S = ca.SX.sym("S", K, N)
        x0 = ca.SX.sym("x0", STATE_DIM)
        ref = ca.SX.sym("ref", STATE_DIM, N + 1)
        obs = ca.SX.sym("obs", 3, K * (N + 1))
        M = ca.DM(self.input_matrix)
        R = ca.DM(np.diag([c.r_force] * 3 + [c.r_torque] * 3))
        H = M.T @ R @ M
        weights = self._weights()
        cost, g = 0, [X[:, 0] - x0]
        for n in range(N):
            u = M @ D[:, n]
            cost += self._stage(X[:, n], ref[:, n], weights) + D[:, n].T @ H @ D[:, n]
            g.append(X[:, n + 1] - self.step(X[:, n], u))
        cost += self._stage(X[:, N], ref[:, N], c.terminal_factor * weights)
        keep_out = []
        for n in range(1, N + 1):
            for b in range(K):
                diff = X[0:3, n] - obs[:, b * (N + 1) + n]
                keep_out.append(ca.sumsqr(diff) + S[b, n - 1] - c.min_distance_m**2)
        cost += c.slack_l1 * ca.sum1(ca.vec(S)) + c.slack_l2 * ca.sumsqr(S)
        w = ca.vertcat(ca.vec(X), ca.vec(D), ca.vec(S))
        p = ca.vertcat(x0, ca.vec(ref), ca.vec(obs))
        nlp = {"x": w, "p": p, "f": cost, "g": ca.vertcat(*g, *keep_out)}
        return ca.nlpsol("nmpc", c.solver, nlp, self._solver_options())

    def _bounds(self) -> None:
        c = self.cfg
        N, K, nu = c.horizon_steps, c.num_obstacles, self.input_dim
        self._n_eq, self._n_keep = STATE_DIM * (N + 1), N * K
        nx = STATE_DIM * (N + 1)
        self._slices = (slice(0, nx), slice(nx, nx + nu * N), slice(nx + nu * N, None))
        inf = np.inf
        self.lbx = np.concatenate(
            [np.full(nx, -inf), np.tile(-self.input_bound, N), np.zeros(K * N)]
        )
        self.ubx = np.concatenate(
            [np.full(nx, inf), np.tile(self.input_bound, N), np.full(K * N, inf)]
        )
        self.lbg = np.zeros(self._n_eq + self._n_keep)
        self.ubg = np.concatenate([np.zeros(self._n_eq), np.full(self._n_keep, inf)])

    def _solver_options(self) -> dict[str, Any]:
        c = self.cfg
        if c.solver == "ipopt":
            opts: dict[str, Any] = {
                "print_time": False,
                "ipopt.print_level": 0,
                "ipopt.sb": "yes",
                "ipopt.max_iter": c.max_iterations,
                "ipopt.tol": c.tolerance,
                "ipopt.acceptable_tol": 1e3 * c.tolerance,
                "ipopt.warm_start_init_point": "yes",
                "ipopt.warm_start_bound_push": 1e-6,
                "ipopt.warm_start_mult_bound_push": 1e-6,
                "ipopt.mu_init": 1e-3,
            }
        elif c.solver == "sqpmethod":
            opts = {
                "print_time": False,
                "print_header": False,
                "print_iteration": False,
                "print_status": False,
                "max_iter": c.max_iterations,
                "tol_pr": c.tolerance,
                "tol_du": c.tolerance,
                "qpsol": "qpoases",
                "qpsol_options": {"printLevel": "none", "error_on_fail": False},
                "error_on_fail": False,
            }
        else:
            opts = {"print_time": False}
        opts.update(c.solver_options)
        return opts

    # --------------------------------------------------------------- solve
    def reset(self) -> None:
        """Forget the warm start (the next solve starts from the reference)."""
        self._guess: np.ndarray | None = None
        self._lam_g: np.ndarray | None = None
        self._lam_x: np.ndarray | None = None

    def reference(self, leader_trajectory: np.ndarray) -> np.ndarray:
        """(N + 1, 13) follower reference from the leader's (N + 1, 13) predicted states:
        p_L + offset, v_L, dq (x) q_L, w_L (eq. 7 of the spec)."""
        ref = np.array(leader_trajectory, float, copy=True)
        ref[:, 0:3] += self.offset
        ref[:, 6:10] = quat_mul(self.dq, ref[:, 6:10])
        return ref

    def _obstacles(self, others: Sequence[np.ndarray] | None) -> np.ndarray:
        N, K = self.cfg.horizon_steps, self.cfg.num_obstacles
        out = np.full((K, N + 1, 3), FAR_AWAY_M)
        others = [] if others is None else list(others)
        if len(others) > K:
            raise ValueError(f"{len(others)} obstacle trajectories, but num_obstacles is {K}")
        for b, traj in enumerate(others):
            traj = np.asarray(traj, float)
            if traj.shape != (N + 1, 3) and traj.shape != (N + 1, STATE_DIM):
                raise ValueError(
                    f"obstacle trajectory must be ({N + 1}, 3) positions or "
                    f"({N + 1}, 13) states, got {traj.shape}"
                )
            out[b] = traj[:, :3]
        return out

    def _initial_guess(self, x0: np.ndarray, ref: np.ndarray) -> np.ndarray:
        N = self.cfg.horizon_steps
        if self._guess is not None:
            X, D, S = (self._guess[s] for s in self._slices)
            X = X.reshape(N + 1, STATE_DIM)
            D = D.reshape(N, self.input_dim)
            S = S.reshape(N, self.cfg.num_obstacles)
            X = np.concatenate([X[1:], X[-1:]])
            D = np.concatenate([D[1:], D[-1:]])
            S = np.concatenate([S[1:], S[-1:]])
        else:
            X = ref.copy()
            D = np.zeros((N, self.input_dim))
            S = np.zeros((N, self.cfg.num_obstacles))
        X[0] = x0
        return np.concatenate([X.reshape(-1), D.reshape(-1), S.reshape(-1)])

    def solve(
        self,
        follower_state: np.ndarray,
        leader_trajectory: np.ndarray,
        others: Sequence[np.ndarray] | None = None,
    ) -> NmpcSolution:
        """Solve the OCP from `follower_state` and return the plan.

        Args:
            follower_state: (13,) [p m, v m/s (Hill, relative to the chief), q body -> Hill,
                w rad/s (body)].
            leader_trajectory: (N + 1, 13) the leader's predicted states at t_k + n dt_s.
            others: up to `num_obstacles` trajectories, each (N + 1, 3) Hill positions in m
                (or (N + 1, 13) states), of the agents to keep `min_distance_m` from; the
                leader is usually one of them.
        """
        N = self.cfg.horizon_steps
        x0 = np.asarray(follower_state, float).reshape(STATE_DIM)
        leader = np.asarray(leader_trajectory, float)
        if leader.shape != (N + 1, STATE_DIM):
            raise ValueError(
                f"leader_trajectory must be ({N + 1}, {STATE_DIM}), got {leader.shape}"
            )
        ref = self.reference(leader)
        signs = np.where(ref[:, 6:10] @ x0[6:10] < 0, -1.0, 1.0)  # same hemisphere as x0
        ref[:, 6:10] *= signs[:, None]
        obs = self._obstacles(others)
        params = np.concatenate([x0, ref.reshape(-1), obs.reshape(-1, 3).reshape(-1)])
        guess = self._initial_guess(x0, ref)
        kwargs: dict[str, Any] = {
            "x0": guess,
            "p": params,
            "lbx": self.lbx,
            "ubx": self.ubx,
            "lbg": self.lbg,
            "ubg": self.ubg,
        }
        if self._lam_g is not None:
            kwargs["lam_g0"], kwargs["lam_x0"] = self._lam_g, self._lam_x
        start = time.perf_counter()
        result = self.solver(**kwargs)
        elapsed = time.perf_counter() - start
        stats = self.solver.stats()
        w = np.asarray(result["x"]).reshape(-1)
        if not np.all(np.isfinite(w)):
            self.reset()
            w = guess
        else:
            self._guess = w
            self._lam_g = np.asarray(result["lam_g"]).reshape(-1)
            self._lam_x = np.asarray(result["lam_x"]).reshape(-1)
        X = w[self._slices[0]].reshape(N + 1, STATE_DIM)
        D = np.clip(
            w[self._slices[1]].reshape(N, self.input_dim), -self.input_bound, self.input_bound
        )
        S = w[self._slices[2]]
        wrenches = D @ self.input_matrix.T
        return NmpcSolution(
            wrench=wrenches[0].copy(),
            states=X,
            wrenches=wrenches,
            solve_time_s=elapsed,
            success=bool(stats.get("success", False)),
            status=str(stats.get("return_status", "")),
            iterations=int(stats.get("iter_count", -1)),
            max_slack=float(S.max()) if S.size else 0.0,
        )

    def within_limits(self, wrench: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether a body wrench (6,) can be produced within the input bounds (pairs: the
        exact pair thrusts, since the pair matrix is square and invertible)."""
        d = np.linalg.lstsq(self.input_matrix, np.asarray(wrench, float), rcond=None)[0]
        exact = np.allclose(self.input_matrix @ d, wrench, atol=tol)
        return bool(exact and np.all(np.abs(d) <= self.input_bound + tol))


# ------------------------------------------------------------------------------ node


__all__ = [
    "FAR_AWAY_M",
    "STATE_DIM",
    "WRENCH_DIM",
    "FormationNmpc",
    "NmpcCfg",
    "NmpcSolution",
    "opposing_pairs",
    "pair_matrix",
    "require_casadi",
]
