"""`orbitlab runs report` over small fake runs: per seed, median, worst, the target count,
Wilson's interval, the curves picture and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orbitlab.cli.dispatch import main as orbitlab
from orbitlab.rl.report import collect, format_report, wilson_interval
from orbitlab.stats import bootstrap_mean_interval


def fake_run(root: Path, name: str, seed: int, success: float, curve: list[float], **extra):
    """A run directory as `orbitlab train` leaves it (metrics.json, the saved config, a
    tensorboard file with Episode/success_rate per iteration)."""
    from torch.utils.tensorboard import SummaryWriter

    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(f"seed: {seed}\nnum_envs: 64\n")
    metrics = {
        "task": "Docking",
        "train_s": 100.0 + seed,
        "iterations": len(curve),
        "env_steps": 1000 * len(curve),
        "episodes": 200,
        "success_rate": success,
        "final_errors": {"position_error": 1.0 - success},
        **extra,
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    writer = SummaryWriter(str(run))
    for iteration, value in enumerate(curve):
        writer.add_scalar("Episode/success_rate", value, iteration)
    writer.close()
    return run


@pytest.fixture()
def runs(tmp_path):
    root = tmp_path / "Docking"
    fake_run(root, "a", 0, 0.95, [0.0, 0.5, 0.9, 0.95])
    fake_run(root, "b", 1, 0.25, [0.0, 0.1, 0.2, 0.25])
    selection = {"checkpoints": [{"success_rate": 0.5}, {"success_rate": 0.99}]}
    fake_run(root, "c", 2, 0.92, [0.0, 0.4, 0.8, 0.92], selection=selection)
    return root


def test_wilson_interval_matches_its_closed_form():
    # k = 5 of n = 10: centre (0.5 + 1.92 / 10) / 1.384 = 0.5, half-width 0.2634
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    low, high = wilson_interval(0, 10)  # never 0 wide at the edge: (0, 0.2775)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_the_bootstrap_interval_of_a_mean_matches_the_normal_one_for_a_large_sample():
    """For 4000 values the percentile bootstrap of the mean approaches mean +- 1.96 s / sqrt(n)
    (here within 5 % of that half-width); it is reproducible, skips non-finite values and is
    (nan, nan) for none."""
    import math

    import numpy as np

    x = np.random.default_rng(7).exponential(0.3, size=4000)
    low, high = bootstrap_mean_interval(x)
    half = 1.959964 * x.std(ddof=1) / math.sqrt(x.size)
    assert abs((high - low) / 2 - half) < 0.05 * half
    assert abs((high + low) / 2 - x.mean()) < 0.1 * half
    assert bootstrap_mean_interval(x) == (low, high)
    assert bootstrap_mean_interval([*x, math.nan, math.inf]) == (low, high)
    assert all(math.isnan(v) for v in bootstrap_mean_interval([]))


def test_an_error_score_carries_the_evaluations_bootstrap_interval(tmp_path):
    root = tmp_path / "Formation"
    for seed, error in enumerate((0.08, 0.3)):
        fake_run(
            root,
            f"r{seed}",
            seed,
            0.0,
            [0.0, 0.0],
            final_errors={"formation_error": error},
            final_errors_ci95={"formation_error": [error - 0.01, error + 0.02]},
        )
    report = collect(root, metric="formation_error")
    assert [r.interval for r in report.rows] == [(0.07, 0.1), (0.29, 0.32)]
    assert "0.07 - 0.1" in format_report(report)


def test_the_report_gives_every_seed_the_median_and_the_worst(runs):
    report = collect(runs)
    assert [r.seed for r in report.rows] == [0, 1, 2]
    assert report.median == pytest.approx(0.92) and report.worst.seed == 1
    assert report.meets(0.9) == 2
    assert report.rows[2].best == pytest.approx(0.99) and report.rows[0].best is None
    assert report.rows[0].curve[-1] == (4000.0, pytest.approx(0.95))  # env steps, value
    low, high = report.rows[0].interval
    assert low < 0.95 < high and high - low < 0.1  # 200 episodes
    text = format_report(report, target=0.9)
    assert "median 92.0 %, worst 25.0 % (seed 1); 2 of 3 reach 90.0 %" in text
    errors = collect(runs, metric="position_error")
    assert errors.worst.seed == 1 and errors.meets(0.1) == 2  # lower is better


def test_the_command_prints_the_table_and_draws_the_curves(runs, tmp_path, capsys):
    out, table = tmp_path / "curves.png", tmp_path / "table.json"
    assert orbitlab(["runs", "report", str(runs), "target=0.9", f"out={out}", f"json={table}"]) == 0
    printed = capsys.readouterr().out
    assert "Docking: 3 runs" in printed and "2 of 3 reach" in printed
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(table.read_text())
    assert saved["worst_seed"] == 1 and len(saved["runs"]) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "/no/such/dir"], "DIR='/no/such/dir' is invalid: expected a directory"),
        (["report", "{root}", "metric=nope"], "has no number 'nope'"),
        (["report", "{root}", "target=x"], "target='x' is invalid"),
        (["report", "{empty}"], "no run below"),
        (["report"], "expected a directory of runs first"),
        (["nope"], "unknown subcommand 'nope'"),
    ],
)
def test_bad_input_is_one_line(runs, tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.format(root=runs, empty=tmp_path / "empty") for a in argv]
    assert orbitlab(["runs", *argv]) in (1, 2)
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_runs_of_two_tasks_are_refused(runs):
    fake_run(runs, "d", 3, 0.5, [0.5], task="Pointing")
    with pytest.raises(ValueError, match="runs of several tasks"):
        collect(runs)
