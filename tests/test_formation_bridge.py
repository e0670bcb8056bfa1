"""The formation study over the bridge with three processes (simulator, leader, followers):
they talk (lockstep: one command per spacecraft and topic per tick, one relayed leader plan per
tick), the NMPC followers keep the formation and every process exits cleanly."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("zmq")
pytest.importorskip("casadi")

from orbitlab_tasks.formation.bridge_study import StudyCfg, gravity_gradient, hill_frame, run_study

TARGET_M = 0.17
"""The seed's bound on the formation in simulation, m."""


def _check(result, seconds: float, period: float = 0.2) -> None:
    ticks = round(seconds / period)
    assert result.returncodes == {"sim": 0, "leader": 0, "followers": 0}
    assert result.ticks == ticks and result.sim_time_s == pytest.approx(seconds)
    stats = result.sim["stats"]
    assert stats["rejected"] == {}
    assert stats["commands"] == 6 * ticks  # force and torque of three spacecraft per tick
    assert set(result.sim["received"].values()) == {ticks}
    assert stats["relayed"] == ticks  # the leader's plan, once per tick
    assert result.control_rate_hz == pytest.approx(1.0 / period)
    assert result.leader["updates"] == ticks and result.followers["updates"] == ticks
    assert result.leader["last_time_s"] == pytest.approx(seconds)
    assert all(len(s) == ticks for s in result.followers["solve_s"].values())
    assert np.isfinite(result.formation_error_m)
    assert result.formation_error_m < TARGET_M


def test_hill_frame_and_gravity_gradient():
    r, v = np.array([6.778e6, 0.0, 0.0]), np.array([0.0, 7668.6, 0.0])
    C, omega = hill_frame(r, v)
    assert np.allclose(C, np.eye(3))
    assert omega[2] == pytest.approx(7668.6 / 6.778e6)
    G = gravity_gradient(r)
    n2 = 398600.4418e9 / 6.778e6**3
    assert np.allclose(np.diag(G), [2 * n2, -n2, -n2])


def test_three_process_study_short(tmp_path, monkeypatch):
    seconds = 6.0
    shown = []

    class Bar:  # records what the terminal progress bar would show
        n = 0.0

        def refresh(self):
            shown.append(self.n)

        def close(self):
            pass

    monkeypatch.setattr("orbitlab.rl.progress.progress_bar", lambda *args, **kwargs: Bar())
    result = run_study(
        StudyCfg(
            seconds=seconds, startup_timeout_s=120.0, step_timeout_s=60.0, run_timeout_s=600.0
        ),
        tmp_path,
    )
    _check(result, seconds)
    # the bar follows the simulated time up to its end
    assert shown == sorted(shown) and shown[-1] == pytest.approx(seconds)
    log = np.load(tmp_path / "sim.npz")
    assert log["t"].shape == (30,) and log["pos"].shape == (30, 3, 3)
    # the followers' commands reached the simulator: their held wrenches are not all zero
    assert np.abs(log["wrench"][:, 1:]).max() > 0.0
    # the leader holds its first waypoint (the reference point), so it barely moves
    assert np.abs(log["pos"][:, 0]).max() < 0.05


@pytest.mark.slow
def test_three_process_study_full_episode(tmp_path):
    result = run_study(StudyCfg(seconds=160.0, run_timeout_s=1800.0), tmp_path)
    _check(result, 160.0)
    assert result.followers["not_converged"] == {"follower_1": 0, "follower_2": 0}
