"""orbitlab.rl.progress: the run's ETA across segments and rollout bars that stay quiet
without a terminal."""

from __future__ import annotations

import torch

from orbitlab.rl.progress import RolloutProgress, RunClock, format_s


def test_eta_covers_the_whole_run_not_one_segment(monkeypatch):
    now = iter([100.0, 160.0])  # 60 s for the first 100 of 400 iterations
    monkeypatch.setattr("orbitlab.rl.progress.time.perf_counter", lambda: next(now))
    clock = RunClock(start=0, total=400)
    assert clock.line(100) == "run: 100/400 iterations, 0:01:00 elapsed, ETA 0:03:00"


def test_format_s_is_h_mm_ss():
    assert (format_s(3723.4), format_s(-1)) == ("1:02:03", "0:00:00")


def test_rollout_bar_counts_steps_not_the_reset_and_is_silent_off_a_terminal(capsys):
    progress = RolloutProgress("evaluation", total_steps=10, num_envs=4)
    for _ in range(4):  # the reset, then three env steps
        progress.observe(None, {}, {})
    progress.episode_ended(torch.tensor([True, False, False, True]))
    assert progress.steps == 3
    progress.close()
    assert capsys.readouterr().err == ""  # pytest's stderr is no terminal: tqdm draws nothing


def test_formation_study_counts_its_env_steps_on_a_bar(tmp_path, monkeypatch):
    """scripts/formation_study.py: one bar over the episode's env steps, closed at the end."""
    import importlib.util
    import sys
    from pathlib import Path

    import pytest

    pytest.importorskip("casadi")
    pytest.importorskip("matplotlib")
    path = Path(__file__).resolve().parents[1] / "scripts" / "formation_study.py"
    spec = importlib.util.spec_from_file_location("formation_study", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    bars = []

    class Bar:
        def __init__(self, desc: str, total: int, unit: str):
            self.desc, self.total, self.unit, self.n, self.closed = desc, total, unit, 0, False

        def update(self, n: int) -> None:
            self.n += n

        def close(self) -> None:
            self.closed = True

    def make_bar(desc: str, total: int, unit: str) -> Bar:
        bars.append(Bar(desc, total, unit))
        return bars[-1]

    monkeypatch.setattr(study, "progress_bar", make_bar)
    monkeypatch.setattr(
        sys, "argv", ["formation_study.py", "--seconds", "1", "--out", str(tmp_path)]
    )
    study.main()
    (bar,) = bars
    assert bar.desc == "formation study (1 s)" and bar.unit == "step"
    assert bar.n == bar.total >= 1 and bar.closed
    assert (tmp_path / "summary.json").is_file()
