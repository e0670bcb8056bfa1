"""Resume continues the run it names: its saved config, its library and algorithm, past
unreadable checkpoints, and a completed run is evaluated instead of failing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orbitlab.rl.train.common import find_resume_checkpoint
from orbitlab.rl.train.resume import resumed_config, same_algorithm, user_values

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train.py"


def saved_run(root: Path, name: str, agent: dict) -> Path:
    run = root / "Detumble-RW" / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(json.dumps({"agent": agent}))  # YAML superset
    (run / "model_50.zip").write_bytes(b"x")
    return run


def test_resume_true_takes_the_latest_run_of_the_same_algorithm(tmp_path):
    ppo = saved_run(tmp_path, "2026-01-01_00-00-00", {"library": "sb3", "algorithm": "PPO"})
    saved_run(tmp_path, "2026-01-02_00-00-00", {"library": "sb3", "algorithm": "SAC"})  # newer
    match = same_algorithm({"library": "sb3", "algorithm": "PPO"})
    found = find_resume_checkpoint(True, tmp_path, "Detumble-RW", None, "model_*.zip", None, match)
    assert found == ppo / "model_50.zip"


def test_an_unreadable_checkpoint_is_skipped_with_a_warning(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("model_1.pt", "model_3.pt"):
        (run / name).write_bytes(b"")

    def is_resumable(path: Path) -> bool:
        if path.name == "model_3.pt":
            raise OSError(22, "Invalid argument")  # a torn file
        return True

    assert find_resume_checkpoint(run, tmp_path, "T", None, "model_*.pt", is_resumable) == (
        run / "model_1.pt"
    )
    assert "skipping unreadable checkpoint" in capsys.readouterr().err


def test_saved_config_wins_except_what_the_user_sets():
    current = {"num_envs": 256, "seed": 0, "agent": {"max_iterations": 100, "save_interval": 50}}
    saved = {"num_envs": 128, "seed": 3, "agent": {"max_iterations": 20, "save_interval": 10}}
    overrides = ["agent=rsl_rl_ppo", "agent.max_iterations=40", "resume=true"]
    assert user_values(overrides) == ["agent.max_iterations=40"]
    merged = resumed_config(current, saved, overrides)
    assert merged["num_envs"] == 128 and merged["seed"] == 3
    assert merged["agent"] == {"max_iterations": 40, "save_interval": 10}


def run_train(tmp_path: Path, name: str, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "eval_num_envs=2",
            "export=false",
            *overrides,
            f"runs_root={tmp_path / 'runs'}",
            f"hydra.run.dir={tmp_path / name}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_resume_uses_the_runs_config_and_evaluates_a_completed_run(tmp_path):
    pytest.importorskip("rsl_rl")
    first = run_train(
        tmp_path,
        "runs/Detumble-RW/2026-01-01_00-00-00",
        "num_envs=4",
        "agent.max_iterations=2",
        "agent.save_interval=1",
        "agent.num_steps_per_env=4",
    )
    assert first.returncode == 0, first.stderr[-2000:]
    # today's defaults (256 worlds, save_interval 50) would refuse iteration 2 as a segment start
    more = run_train(tmp_path, "more", "resume=true", "agent.max_iterations=3")
    assert more.returncode == 0, more.stderr[-2000:]
    config = (tmp_path / "more" / ".hydra" / "config.yaml").read_text()
    assert "num_envs: 4" in config and "save_interval: 1" in config
    assert (tmp_path / "more" / "model_2.pt").exists()
    # nothing left to train: the completed run's last checkpoint is evaluated
    done = run_train(tmp_path, "done", f"resume={tmp_path / 'more'}")
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = json.loads((tmp_path / "done" / "metrics.json").read_text())
    assert metrics["checkpoint"].endswith("more/model_2.pt") and "success_rate" in metrics
