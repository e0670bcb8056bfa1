"""Checkpoints never run code: rsl-rl ones load weights-only, pickles need explicit trust.

Regression tests ("a checkpoint runs code"): a crafted model.pt beside a copied
.hydra/config.yaml ran os.system through play, export and resume.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from orbitlab.cli import run
from orbitlab.rl.checkpoints import (
    CheckpointError,
    UntrustedCheckpointError,
    load_torch_checkpoint,
    require_trust,
)

ROOT = Path(__file__).resolve().parents[1]
RUN_CONFIG = """task:
  name: Detumble-RW
agent:
  library: {library}
  max_iterations: 4
  num_steps_per_env: 8
  hidden_dims: [64, 64]
  learning_rate: 0.001
  init_std: 0.5
  save_interval: 2
seed: 0
"""


class Payload:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture
def crafted_run(tmp_path) -> tuple[Path, Path]:
    """(a run directory holding a crafted model_3.pt and a run config, the marker file the
    payload would create)."""
    run_dir, marker = tmp_path / "run", tmp_path / "code_ran"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text(RUN_CONFIG.format(library="rsl_rl"))
    torch.save(
        {"actor_state_dict": Payload(marker), "iter": 3, "infos": {"resumable": True}},
        run_dir / "model_3.pt",
    )
    return run_dir, marker


def script(name: str):
    """scripts/<name>.py as a module (in process: no second torch start-up)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_crafted_checkpoint_does_not_run_code_on_load(crafted_run):
    run_dir, marker = crafted_run
    with pytest.raises(CheckpointError, match="not a readable checkpoint.*GLOBAL"):
        load_torch_checkpoint(run_dir / "model_3.pt")
    assert not marker.exists()


def test_crafted_checkpoint_does_not_run_code_through_play(crafted_run):
    run_dir, marker = crafted_run
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "play.py"),
            f"checkpoint={run_dir / 'model_3.pt'}",
            "num_envs=2",
            "max_steps=2",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1 and not marker.exists()
    assert "is not a readable checkpoint" in result.stderr and "Traceback" not in result.stderr


def test_crafted_checkpoint_does_not_run_code_through_export(crafted_run, capsys):
    pytest.importorskip("onnx")
    run_dir, marker = crafted_run
    assert run(script("export").main, [f"checkpoint={run_dir / 'model_3.pt'}"], "export") == 1
    assert "is not a readable checkpoint" in capsys.readouterr().err
    assert not marker.exists() and not (run_dir / "exported").exists()


def test_crafted_checkpoint_does_not_run_code_through_resume(crafted_run, tmp_path):
    pytest.importorskip("hydra")
    run_dir, marker = crafted_run
    new_run = tmp_path / "resumed"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "train.py"),
            "num_envs=8",
            f"resume={run_dir}",
            f"hydra.run.dir={new_run}",
            f"runs_root={tmp_path}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "is not a readable checkpoint" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists() and not new_run.exists()  # no run directory left behind


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"\x80\x02garbage" * 4, "no torch checkpoint of weights"),  # 'invalid load key' before
        (b"", "not a readable checkpoint"),
        (b"hello checkpoint\n", "no torch file"),  # a KeyError escaped before
    ],
)
def test_corrupted_checkpoint_is_named(tmp_path, content, reason):
    path = tmp_path / "model_1.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=reason) as info:
        load_torch_checkpoint(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_truncated_checkpoint_is_named(tmp_path):
    path = tmp_path / "model_1.pt"
    torch.save({"actor_state_dict": {"w": torch.zeros(64, 64)}}, path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(CheckpointError, match="is not a readable checkpoint"):
        load_torch_checkpoint(path)


def test_orbitlab_checkpoint_round_trips_weights_only(tmp_path):
    path = tmp_path / "model_1.pt"
    saved = {
        "actor_state_dict": {"w": torch.ones(2)},
        "iter": 1,
        "infos": {"resumable": True, "curriculum": {"distance": {"level": 0.5}}},
    }
    torch.save(saved, path)
    loaded = load_torch_checkpoint(path)
    assert loaded["iter"] == 1 and loaded["infos"] == saved["infos"]


def test_pickles_need_trust(tmp_path):
    """SB3 zips, rl-games checkpoints and VecNormalize pickles are refused untrusted."""
    path = tmp_path / "model_2.zip"
    path.write_bytes(b"anything: it is never opened")
    with pytest.raises(UntrustedCheckpointError, match="unpickling can run code.*trust_checkp"):
        require_trust(path, False, "the Stable-Baselines3 model")
    require_trust(path, True, "the Stable-Baselines3 model")


@pytest.mark.parametrize("library, suffix", [("sb3", ".zip"), ("rl_games", ".pth")])
def test_load_policy_refuses_untrusted_pickles(tmp_path, library, suffix):
    from orbitlab.rl.policies import load_policy

    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(RUN_CONFIG.format(library=library))
    checkpoint = tmp_path / f"model_2{suffix}"
    checkpoint.write_bytes(b"never unpickled")
    with pytest.raises(UntrustedCheckpointError, match="trust_checkpoint=true"):
        load_policy(None, checkpoint)


def test_export_refuses_untrusted_sb3_zip_and_vec_normalize(tmp_path, capsys):
    pytest.importorskip("onnx")
    from orbitlab.rl.export import export_policy

    model, stats = tmp_path / "ppo.zip", tmp_path / "vecnormalize.pkl"
    model.write_bytes(b"never unpickled")
    stats.write_bytes(b"never unpickled")
    with pytest.raises(UntrustedCheckpointError, match="Stable-Baselines3 model"):
        export_policy(model, run_cfg={"agent": {"library": "sb3"}})
    argv = [f"checkpoint={model}", f"vec_normalize={stats}"]
    assert run(script("export").main, argv, "export") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unpickling can run code" in err


def test_sb3_resume_needs_trust(tmp_path):
    pytest.importorskip("stable_baselines3")
    from orbitlab.rl.train import sb3
    from orbitlab.rl.train.common import TrainSettings

    checkpoint = tmp_path / "model_2.zip"
    checkpoint.write_bytes(b"never unpickled")
    agent = {
        "library": "sb3",
        "algorithm": "PPO",
        "n_steps": 8,
        "max_iterations": 4,
        "save_interval": 2,
    }
    settings = TrainSettings("Detumble-RW", agent, tmp_path, num_envs=2, resume_from=checkpoint)
    with pytest.raises(UntrustedCheckpointError, match="resume"):
        sb3.train(settings)


def test_copied_run_config_is_checked(tmp_path):
    from orbitlab.rl.policies import run_config

    shutil.copy(__file__, tmp_path / "model_1.pt")
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text("agent: [unclosed\n")
    with pytest.raises(CheckpointError, match="run config .* is not readable"):
        run_config(tmp_path / "model_1.pt")
