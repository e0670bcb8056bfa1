"""The pieces of 'ros' mode that need no sockets: Basilisk payloads, flow-window bookkeeping,
the formation's conversions of Basilisk messages and shared plans."""

from __future__ import annotations

import numpy as np
import pytest

from orbitlab.bridge import protocol
from orbitlab.bridge.basilisk import ThrustAccount, matrix_to_quat, mrp, quat_to_matrix
from orbitlab.bridge.flow import FlowCfg, FlowWindow
from orbitlab_tasks.formation.ros_state import (
    chief_state,
    hill_axes,
    mrp_to_quat,
    plan_to_poses,
    poses_to_plan,
    state_13,
)


def _random_quat(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def test_mrp_and_quaternion_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = _random_quat(rng)
        q = q if q[0] >= 0 else -q
        assert np.allclose(mrp_to_quat(mrp(q)), q, atol=1e-12)
        assert np.allclose(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-12)


def test_thrust_account_integrates_delta_v_and_counts_mrp_switches():
    account = ThrustAccount(mass_kg=2.0)
    yaw = lambda a: np.array([np.cos(a / 2), 0.0, 0.0, np.sin(a / 2)])
    account.add(np.array([4.0, 0.0, 0.0]), yaw(np.pi / 2), 0.5)  # 2 m/s^2 for 0.5 s
    assert np.allclose(account.dv_b, [1.0, 0.0, 0.0])
    assert np.allclose(account.dv_n, [0.0, 1.0, 0.0])  # body x is ECI y after a 90 deg yaw
    assert np.allclose(account.accel_b, [2.0, 0.0, 0.0])
    account.add(np.zeros(3), -yaw(np.pi / 2 + 0.2), 0.5)  # the scalar part changed sign
    assert account.switches == 1


def test_flow_window_counts_frames_until_a_probe_is_answered():
    flow = FlowWindow(FlowCfg(window=10, probe_every=4))
    flow.count(5)
    assert flow.probe_due() and not flow.full()
    first = flow.next_probe()  # covers 6 frames (5 + itself)
    flow.count(6)
    second = flow.next_probe()
    assert flow.in_flight == 13 and flow.full()
    assert not flow.answered(99)
    assert flow.answered(first) and flow.in_flight == 7 and not flow.full()
    assert flow.answered(second) and flow.in_flight == 0
    assert flow.max_in_flight == 13
    rid = protocol.flow_probe("sc0", "CmdForceBodyMsgPayload", "cmd_force", 7)["request_id"]
    assert protocol.flow_seq(rid) == 7
    assert protocol.flow_seq(protocol.request_id("sc0", "X", "cmd_force", "in")) is None
    with pytest.raises(ValueError, match="probe_every must be an integer in"):
        FlowCfg(window=4, probe_every=8)


def test_basilisk_messages_give_the_formation_state_and_the_chief():
    rng = np.random.default_rng(1)
    r_c = np.array([6778e3, 1000.0, -2000.0])
    v_c = np.array([0.0, 7668.0, 100.0])
    C, omega = hill_axes(r_c, v_c)
    p_n, v_rel = rng.normal(size=3), rng.normal(size=3) * 0.01
    q_bh = _random_quat(rng)
    q_bh = q_bh if q_bh[0] >= 0 else -q_bh
    sc = {"r_bn_n": r_c + p_n, "v_bn_n": v_c + v_rel}
    trans = {"r_dc_h": C @ p_n, "v_dc_h": C @ (v_rel - np.cross(omega, p_n))}
    rot = {"sigma_br": mrp(q_bh), "omega_br_b": [0.1, 0.0, 0.0], "omega_rn_b": [0.0, 0.0, 1e-3]}
    x = state_13(trans, rot)
    assert np.allclose(x[6:10], q_bh) and np.allclose(x[10:13], [0.1, 0.0, 1e-3])
    r_est, v_est = chief_state(sc, trans)
    assert np.linalg.norm(r_est - r_c) < 1e-5 and np.linalg.norm(v_est - v_c) < 1e-6


def test_a_plan_survives_the_round_trip_through_poses():
    dt, H = 0.2, 30
    t = np.arange(H + 2) * dt
    plan = np.zeros((H + 2, 13))
    plan[:, 0] = 0.1 * t  # 0.1 m/s along x
    yaw = 0.05 * t  # 0.05 rad/s about z
    plan[:, 6], plan[:, 9] = np.cos(yaw / 2), np.sin(yaw / 2)
    poses = plan_to_poses(plan, 10.0, dt)
    # one period later: the plan shifted by one row
    back = poses_to_plan(poses, 10.0 + dt, dt, H)
    assert np.allclose(back[:, :3], plan[1:, :3]) and np.allclose(back[:, 6:10], plan[1:, 6:10])
    assert np.allclose(back[:, 3], 0.1) and np.allclose(back[:, 12], 0.05, atol=1e-6)


def test_clock_frames_survive_the_nodes_nanosecond_truncation():
    """The node publishes /clock as int(t) s + int((t - int(t)) * 1e9) ns: every tick time of
    a 0.2 s period must come out exact, or a 0.2 s timer never fires while lockstep holds."""
    for k in range(1, 5001):
        t = protocol.clock(k * 0.2, 0.0)["sim_time"]
        ns = int(t) * 10**9 + int((t - int(t)) * 1e9)
        assert ns == k * 200_000_000, (k, t)
