"""NMPC formation controller: one solve (limits, keep-out, model), a 20 s closed loop, and the
message when CasADi is missing."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
import torch

from orbitlab.agent.nmpc import (
    STATE_DIM,
    FormationNmpc,
    FormationNmpcNode,
    FormationNmpcNodeCfg,
    NmpcCfg,
    opposing_pairs,
    require_casadi,
)
from orbitlab.scene.catalog import FORMATION_ARM_M, FORMATION_THRUSTERS


def test_missing_casadi_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "casadi", None)  # makes `import casadi` fail
    with pytest.raises(ImportError, match=r"pip install 'orbitlab-sim\[nmpc\]'"):
        require_casadi()
    with pytest.raises(ImportError, match=r"orbitlab-sim\[nmpc\]"):
        FormationNmpc(NmpcCfg())


needs_casadi = pytest.mark.skipif(
    importlib.util.find_spec("casadi") is None,
    reason="needs CasADi: pip install 'orbitlab-sim[nmpc]'",
)


def _state(pos=(0.0, 0.0, 0.0), vel=(0.0, 0.0, 0.0)) -> np.ndarray:
    x = np.zeros(STATE_DIM)
    x[0:3], x[3:6], x[6] = pos, vel, 1.0
    return x


def _still_leader(steps: int) -> np.ndarray:
    return np.tile(_state(), (steps + 1, 1))


@needs_casadi
def test_thruster_pairs_of_the_formation_flyer():
    pairs = opposing_pairs(FORMATION_THRUSTERS)
    assert len(pairs) == 6  # 12 thrusters in opposing pairs
    with pytest.raises(ValueError, match="no opposing partner"):
        opposing_pairs(FORMATION_THRUSTERS[:1])


@needs_casadi
def test_solve_respects_thruster_limits_and_keep_out():
    """The slot is on the far side of the leader: the plan goes around it (keep-out), every
    planned wrench is producible by the 12 x 1.5 N thrusters (force-torque pairs share them:
    |F_x| + |tau_y| / arm <= 3 N), and the plan follows the model."""
    steps, d_min = 20, 0.45
    cfg = NmpcCfg(
        horizon_steps=steps,
        thruster_pairs=opposing_pairs(FORMATION_THRUSTERS),
        min_distance_m=d_min,
        num_obstacles=2,
    )
    nmpc = FormationNmpc(
        cfg, slot_offset_m=(1.0, 0.05, 0.0), attitude_offset=(np.cos(0.5), 0.0, 0.0, np.sin(0.5))
    )
    x0 = _state(pos=(-1.0, 0.0, 0.0), vel=(0.2, 0.0, 0.0))
    leader = _still_leader(steps)
    other = np.tile([3.0, 3.0, 0.0], (steps + 1, 1))
    sol = nmpc.solve(x0, leader, [leader[:, :3], other])
    assert sol.success, sol.status
    # Keep-out from the leader at every planned step (soft constraint, slack ~ 0).
    distance = np.linalg.norm(sol.states[1:, :3] - leader[1:, :3], axis=1)
    assert distance.min() >= d_min - 1e-3 and sol.max_slack < 1e-4
    # Thruster limits: the pair thrusts are boxed, so every wrench is in the exact polytope.
    assert all(nmpc.within_limits(w) for w in sol.wrenches)
    for force, torque in ((0, 4), (1, 5), (2, 3)):  # F_x-tau_y, F_y-tau_z, F_z-tau_x share
        load = np.abs(sol.wrenches[:, force]) + np.abs(sol.wrenches[:, torque]) / FORMATION_ARM_M
        assert load.max() <= 3.0 + 1e-6
    assert np.abs(sol.wrenches).max() > 0.5  # a real manoeuvre, not an idle plan
    # The plan is consistent with the model it was solved on.
    np.testing.assert_allclose(nmpc.propagate(x0, sol.wrench), sol.states[1], atol=1e-6)
    # Warm started re-solve from the next state converges too, faster or as fast.
    again = nmpc.solve(sol.states[1], leader, [leader[:, :3], other])
    assert again.success and again.iterations <= sol.iterations


@needs_casadi
def test_wrench_box_without_layout_saturates():
    steps = 10
    nmpc = FormationNmpc(
        NmpcCfg(horizon_steps=steps, max_force_n=0.2, max_torque_nm=0.01, num_obstacles=0),
        slot_offset_m=(0.0, 5.0, 0.0),
    )
    sol = nmpc.solve(_state(), _still_leader(steps))
    assert np.abs(sol.wrenches[:, :3]).max() <= 0.2 + 1e-6
    assert sol.wrench[1] == pytest.approx(0.2, abs=1e-3)  # pushes toward the far slot at the cap


@needs_casadi
def test_node_checks_its_period():
    cfg = FormationNmpcNodeCfg(
        period_s=0.4,
        nmpc=NmpcCfg(horizon_steps=5),
        agents=("a",),
        slot_offsets_m=((0.0, 0.0, 0.0),),
    )
    with pytest.raises(ValueError, match="must equal the model step"):
        FormationNmpcNode(cfg, "nmpc", 1, 0.2)


@needs_casadi
@pytest.mark.slow
def test_closed_loop_20s_keeps_the_formation():
    """The formation scenario with NMPC followers, 20 s (100 solves per follower): the slot
    error stays bounded and shrinks from the reset offset, no failure, no close approach."""
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks.formation import geometry as geo
    from orbitlab_tasks.formation.nmpc import NMPC_NODE, nmpc_cfg

    env = ManagerBasedRLEnv(nmpc_cfg(1))
    env.reset(seed=1)
    start = geo.slot_errors(env).norm(dim=-1)
    worst, closest = 0.0, np.inf
    for _ in range(100):
        _, _, terminated, truncated, _ = env.step(torch.zeros(1, 0))
        assert not bool((terminated | truncated).any())
        error = geo.slot_errors(env).norm(dim=-1)
        worst = max(worst, float(error.max()))
        pos = [env.scene.entities[n].data.root_pos_w[0] for n in (geo.LEADER, *geo.FOLLOWERS)]
        closest = min(
            closest, *(float((pos[i] - pos[j]).norm()) for i, j in ((0, 1), (0, 2), (1, 2)))
        )
    final = geo.slot_errors(env).norm(dim=-1)
    assert worst < max(0.2, float(start.max()) + 0.05)
    assert float(final.max()) < 0.05 and closest > 0.35
    node = env.agent.node(NMPC_NODE)
    assert all(len(t) == 100 for t in node.solve_times_s.values())
    assert sum(node.failures.values()) == 0
