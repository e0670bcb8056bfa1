"""scripts/train.py: hydra overrides reach the env, and a run leaves its artifacts."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train.py"


def test_train_writes_config_checkpoint_and_metrics(tmp_path):
    pytest.importorskip("rsl_rl")
    pytest.importorskip("hydra")
    run = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "num_envs=8", "eval_num_envs=4",
         "agent.max_iterations=2", "agent.num_steps_per_env=8", f"hydra.run.dir={run}"],
        check=False, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"] == "Detumble-RW" and metrics["iterations"] == 2
    assert metrics["episodes"] == 4  # the eval_num_envs override reached the env
    assert sorted(run.glob("model_*.pt"))  # checkpoints (the last also on Ctrl-C)
    config = (run / ".hydra" / "config.yaml").read_text()
    assert "num_envs: 8" in config and "max_iterations: 2" in config


def test_train_rejects_an_unknown_task(tmp_path):
    pytest.importorskip("hydra")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "task=nope", f"hydra.run.dir={tmp_path / 'run'}"],
        check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "nope" in (result.stderr + result.stdout)


def test_play_scores_a_trained_checkpoint(tmp_path):
    pytest.importorskip("rsl_rl")
    run = tmp_path / "run"
    subprocess.run([sys.executable, str(SCRIPT), "num_envs=8", "eval_num_envs=2",
                    "agent.max_iterations=1", "agent.num_steps_per_env=8",
                    f"hydra.run.dir={run}"], check=True, capture_output=True, timeout=600)
    checkpoint = max(run.glob("model_*.pt"))
    out = tmp_path / "score.json"
    play = SCRIPT.parent / "play.py"
    result = subprocess.run([sys.executable, str(play), f"checkpoint={checkpoint}",
                             "num_envs=2", "max_steps=20", f"json={out}"],
                            check=False, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    score = json.loads(out.read_text())
    assert score["task"] == "Detumble-RW" and score["agent"] == "checkpoint"
