"""scripts/train.py: hydra overrides reach the env, and a run leaves its artifacts."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orbitlab.rl.provenance import package_versions


def torch_version() -> str | None:
    return package_versions()["torch"]


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train.py"


def test_train_writes_config_checkpoint_and_metrics(tiny_rsl_rl_run):
    run, result = tiny_rsl_rl_run.run, tiny_rsl_rl_run.result
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Could not find git repository" not in result.stdout  # only under verbose=true
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"] == "Detumble-RW" and metrics["iterations"] == 4
    assert metrics["episodes"] == 4  # the eval_num_envs override reached the env
    # evaluated, then exported: the check passes on the task's own observations
    assert "export_warning" not in metrics, metrics.get("export_warning")
    assert metrics["exported"]["max_diff_onnx"] <= metrics["exported"]["tolerance"]
    assert sorted(run.glob("model_*.pt"))  # checkpoints (the last also on Ctrl-C)
    # select_best: both segment checkpoints scored on their own worlds, the best evaluated
    selection = metrics["selection"]
    scored = [Path(c["checkpoint"]).name for c in selection["checkpoints"]]
    assert scored == ["model_1.pt", "model_3.pt"]
    best = max(selection["checkpoints"], key=lambda c: (c["success_rate"], c["mean_return"]))
    assert metrics["checkpoint"] == selection["selected"] == best["checkpoint"]
    assert metrics["last_checkpoint"].endswith("model_3.pt")
    # what the run was made with: library versions and the source revision
    packages = metrics["environment"]["packages"]
    assert packages["torch"] == torch_version() and packages["rsl-rl-lib"]
    config = (run / ".hydra" / "config.yaml").read_text()
    assert "num_envs: 8" in config and "max_iterations: 4" in config


def test_train_rejects_an_unknown_task(tmp_path):
    pytest.importorskip("hydra")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "task=nope", f"hydra.run.dir={tmp_path / 'run'}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0 and "nope" in (result.stderr + result.stdout)


def test_play_scores_a_trained_checkpoint(tiny_rsl_rl_run, tmp_path):
    assert tiny_rsl_rl_run.result.returncode == 0, tiny_rsl_rl_run.result.stderr[-2000:]
    checkpoint = max(tiny_rsl_rl_run.run.glob("model_*.pt"))
    out = tmp_path / "score.json"
    play = SCRIPT.parent / "play.py"
    result = subprocess.run(
        [
            sys.executable,
            str(play),
            f"checkpoint={checkpoint}",
            "num_envs=2",
            "max_steps=20",
            f"json={out}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    score = json.loads(out.read_text())
    assert score["task"] == "Detumble-RW" and score["agent"] == "checkpoint"


TINY = ["num_envs=8", "eval_num_envs=2", "export=false", "agent.save_interval=2"]
NO_EVAL = ["num_envs=8", "eval_num_envs=0", "export=false", "agent.save_interval=2"]
"""For runs whose final score is not checked (the evaluation episode is most of their time)."""


def train(
    tmp_path, name: str, *overrides: str, env: dict | None = None, base: list[str] = TINY
) -> Path:
    """Train into tmp_path/name (runs_root tmp_path unless the overrides give one)."""
    run = tmp_path / name
    root = [] if any(o.startswith("runs_root=") for o in overrides) else [f"runs_root={tmp_path}"]
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *base, *overrides, f"hydra.run.dir={run}", *root],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return run


def weights(path: Path) -> dict:
    import io
    import zipfile

    import torch

    if path.suffix == ".zip":
        return torch.load(io.BytesIO(zipfile.ZipFile(path).read("policy.pth")))
    return torch.load(path, weights_only=False)["actor_state_dict"]


def assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for key in wa:
        assert bool((wa[key] == wb[key]).all()), key


@pytest.mark.parametrize(
    "agent, overrides, last",
    [
        pytest.param(
            "rsl_rl_ppo", ["agent.num_steps_per_env=8"], "model_5.pt", marks=pytest.mark.slow
        ),
        pytest.param(
            "sb3_ppo",
            ["agent.n_steps=8", "agent.batch_size=32", "trust_checkpoint=true"],
            "model_6.zip",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_resume_true_repeats_the_uninterrupted_run(tmp_path, agent, overrides, last):
    """Interrupted after 4 of 6 iterations and resumed with resume=true (the latest run of the
    task under runs_root) = the uninterrupted run, bit for bit, even though the resumed
    process never saw the first run's worlds; with nothing to resume, a clear error."""
    pytest.importorskip("rsl_rl" if agent.startswith("rsl") else "stable_baselines3")
    args = [f"agent={agent}", *overrides]
    runs = tmp_path / "runs"
    nothing = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            *NO_EVAL,
            *args,
            "resume=true",
            f"runs_root={runs}",
            f"hydra.run.dir={tmp_path / 'x'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert nothing.returncode != 0 and "no resumable checkpoint" in nothing.stderr
    whole = train(tmp_path, "whole", *args, "agent.max_iterations=6", base=NO_EVAL)
    first = train(
        runs / "Detumble-RW", "2026-01-01_00-00-00", *args, "agent.max_iterations=4", base=NO_EVAL
    )
    resumed = train(
        tmp_path,
        "resumed",
        *args,
        "agent.max_iterations=6",
        "resume=true",
        f"runs_root={runs}",
        base=NO_EVAL,
    )
    assert_same_weights(whole / last, resumed / last)
    metrics = json.loads((resumed / "metrics.json").read_text())
    assert metrics["iterations"] == 6 and "success_rate" not in metrics  # not evaluated
    assert Path(metrics["resumed_from"]).parent == first
    earlier = min(whole.glob(f"model_*{Path(last).suffix}"))
    with pytest.raises(AssertionError):  # and the comparison does tell weights apart
        assert_same_weights(earlier, resumed / last)


def test_ctrl_c_keeps_a_checkpoint_that_is_not_taken_for_a_segment_end(tmp_path, monkeypatch):
    pytest.importorskip("rsl_rl")
    from orbitlab.rl.train import TrainSettings
    from orbitlab.rl.train import rsl_rl as trainer

    learn = trainer.OrbitlabOnPolicyRunner.learn
    calls = []

    def interrupted_learn(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # Ctrl-C during the second segment, after one iteration
            learn(self, 1)
            raise KeyboardInterrupt
        return learn(self, *args, **kwargs)

    monkeypatch.setattr(trainer.OrbitlabOnPolicyRunner, "learn", interrupted_learn)
    agent = {
        "library": "rsl_rl",
        "max_iterations": 6,
        "num_steps_per_env": 4,
        "hidden_dims": [16],
        "learning_rate": 1e-3,
        "init_std": 0.5,
        "save_interval": 2,
    }
    result = trainer.train(
        TrainSettings(task="Detumble-RW", agent=agent, run_dir=tmp_path, num_envs=4)
    )
    assert result.interrupted and result.checkpoint == tmp_path / "model_2.pt"
    assert not trainer.is_resumable(result.checkpoint)
    assert trainer.is_resumable(tmp_path / "model_1.pt")
    assert (
        trainer.resume_checkpoint(tmp_path, tmp_path, "x", tmp_path / "y")
        == tmp_path / "model_1.pt"
    )
    with pytest.raises(ValueError, match="mid-segment"):
        trainer.resume_checkpoint(result.checkpoint, tmp_path, "x", tmp_path / "y")


@pytest.mark.slow
def test_sb3_sac_and_rl_games_train_and_their_checkpoints_play(tmp_path):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("rl_games")
    runs = {
        "sac": train(
            tmp_path,
            "sac",
            "agent=sb3_sac",
            "agent.max_iterations=2",
            "agent.steps_per_iteration=4",
            "agent.learning_starts=8",
            "agent.batch_size=16",
            "agent.buffer_size=1000",
        ),
        "rl_games": train(
            tmp_path,
            "rlg",
            "agent=rl_games_ppo",
            "agent.max_iterations=2",
            "agent.config.horizon_length=8",
            "agent.config.minibatch_size=32",
            "agent.config.central_value_config.minibatch_size=32",
        ),
    }
    assert (runs["sac"] / "replay_buffer.pkl").is_file()
    for name, run in runs.items():
        metrics = json.loads((run / "metrics.json").read_text())
        assert metrics["iterations"] == 2 and metrics["episodes"] == 2, name
        checkpoint = Path(metrics["checkpoint"])
        play = [
            sys.executable,
            str(SCRIPT.parent / "play.py"),
            f"checkpoint={checkpoint}",
            "num_envs=2",
            "max_steps=5",
        ]
        result = subprocess.run(
            [*play, "trust_checkpoint=true"],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, (name, result.stderr[-2000:])
        # a pickle (sb3 zip, rl-games .pth) is not loaded unless trusted, and play says why
        refused = subprocess.run(play, check=False, capture_output=True, text=True, timeout=600)
        assert refused.returncode == 1 and "unpickling can run code" in refused.stderr, name
        assert "Traceback" not in refused.stderr


@pytest.mark.slow
def test_multirun_sweeps_with_the_basic_launcher(tmp_path):
    pytest.importorskip("rsl_rl")
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "-m",
            *TINY,
            "seed=0,1",
            "agent.max_iterations=1",
            "agent.num_steps_per_env=4",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seeds = sorted(
        json.loads((tmp_path / "sweep" / str(k) / "metrics.json").read_text())["checkpoint"]
        for k in (0, 1)
    )
    assert len(seeds) == 2
    for k, seed in ((0, 0), (1, 1)):
        assert (
            f"seed: {seed}" in (tmp_path / "sweep" / str(k) / ".hydra" / "config.yaml").read_text()
        )


@pytest.mark.slow
def test_multirun_sweeps_with_the_joblib_launcher(tmp_path):
    """`-m hydra/launcher=joblib`: hydra's joblib launcher (extra 'sweeps') runs the two
    jobs of the sweep in parallel worker processes, each a complete run of its own."""
    pytest.importorskip("rsl_rl")
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    sweep = tmp_path / "sweep"
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "seed=0,1",
            "agent.max_iterations=1",
            "num_envs=4",
            "agent.num_steps_per_env=2",
            "eval_num_envs=0",
            "export=false",
            f"hydra.sweep.dir={sweep}",
            f"runs_root={tmp_path}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in result.stdout + result.stderr
    for job in (0, 1):
        run = sweep / str(job)
        assert json.loads((run / "metrics.json").read_text())["iterations"] == 1
        assert f"seed: {job}" in (run / ".hydra" / "config.yaml").read_text()
        assert "JoblibLauncher" in (run / ".hydra" / "hydra.yaml").read_text()


@pytest.mark.slow
def test_torchrun_two_processes_share_one_run(tmp_path):
    pytest.importorskip("rsl_rl")
    import os

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            str(SCRIPT),
            *TINY,
            "agent.max_iterations=2",
            "agent.num_steps_per_env=4",
            f"runs_root={tmp_path}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    runs = [p for p in (tmp_path / "Detumble-RW").iterdir()]
    assert len(runs) == 1  # rank 1's launcher directory was folded into rank 0's
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert metrics["world_size"] == 2 and metrics["env_steps"] == 2 * 4 * 8


def test_ctrl_c_exits_130_and_says_where_the_checkpoint_is(tmp_path, capsys):
    import importlib.util
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from orbitlab.rl.train import distributed as dist
    from orbitlab.rl.train.common import TrainResult

    spec = importlib.util.spec_from_file_location("train_cli", SCRIPT)
    train_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_cli)
    checkpoint = tmp_path / "model_3.pt"
    module = SimpleNamespace(train=lambda settings: TrainResult(checkpoint, 3, 96, 1.0, True))
    settings = SimpleNamespace(task="Detumble-RW", run_dir=tmp_path, seed=0)
    cfg = OmegaConf.create({"agent": {"library": "rsl_rl"}})
    with pytest.raises(SystemExit) as exit_info:
        train_cli.train(cfg, module, dist.ProcessInfo(), settings)
    assert exit_info.value.code == 130
    assert f"interrupted: the last checkpoint is {checkpoint}" in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()
