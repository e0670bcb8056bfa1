"""The `orbitlab` command: verbs, task spellings, tuned agents, env overrides, one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orbitlab.cli.dispatch import main
from orbitlab.cli.hydra_app import normalize


def orbitlab(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orbitlab.cli.dispatch", *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_help_lists_every_verb(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for verb in ("train", "play", "eval", "export", "record", "replay", "bench", "list"):
        assert f"  {verb}" in out


def test_list_prints_tasks_with_success_criteria_and_tuned_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "Docking  (task=docking, gym id Orbitlab-Docking-v0)" in out
    assert "tuned agent: rsl_rl: rsl_rl_ppo_docking" in out
    assert "success: |omega| < 0.5 deg/s held 60 s" in out


def test_unknown_verb_is_one_line(capsys):
    assert main(["trian"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("spelling", ["Docking", "docking", "Orbitlab-Docking-v0"])
def test_a_task_without_agent_trains_with_its_tuned_agent(spelling):
    assert normalize([f"task={spelling}"], tuned_agent=True) == [
        "agent=rsl_rl_ppo_docking",
        "task=docking",
    ]
    assert normalize([f"task={spelling}", "--cfg", "job"], True)[:2] == [
        "agent=rsl_rl_ppo_docking",
        "task=docking",
    ]


def test_the_users_agent_wins_and_sweeps_keep_the_default():
    assert normalize(["task=docking", "agent=sb3_ppo"], True) == ["task=docking", "agent=sb3_ppo"]
    assert normalize(["task=Docking,Pointing"], True) == ["task=docking,pointing"]
    assert normalize([], True) == ["agent=rsl_rl_ppo"]  # Detumble-RW's tuned PPO: the default
    assert normalize(["-m", "seed=0,1"], True) == ["-m", "agent=rsl_rl_ppo", "seed=0,1"]
    assert normalize(["--cfg", "job"], True) == ["--cfg", "job", "agent=rsl_rl_ppo"]


def test_train_cfg_job_shows_the_tuned_agent_and_env_fields(tmp_path):
    done = orbitlab("train", "task=Docking", "env.episode_length_s=120", "--cfg", "job")
    assert done.returncode == 0, done.stderr
    assert "max_iterations: 800" in done.stdout  # configs/agent/rsl_rl_ppo_docking.yaml
    assert "episode_length_s: 120" in done.stdout


@pytest.mark.parametrize(
    "argv, words",
    [
        (["train", "task=dockng"], ["unknown task 'dockng'", "did you mean 'Docking'"]),
        (["train", "env.episode_length_s=abc"], ["env.episode_length_s='abc'", "finite number"]),
        (["train", "num_envs=0"], ["num_envs=0", "integer in [1, 4194304]"]),
        (["play", "env.decimation=1.5"], ["env.decimation=1.5", "integer"]),
        (["play", "task=pointng"], ["did you mean 'Pointing'"]),
        (["eval", "num_envs=x"], ["num_envs='x'", "integer in [1, 4194304]"]),
    ],
)
def test_bad_values_are_one_line_naming_key_value_and_rule(tmp_path, argv, words):
    done = orbitlab(*argv, f"runs_root={tmp_path}" if argv[0] == "train" else "verbose=false")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)
    assert not list(tmp_path.iterdir())  # no run directory left behind


def test_play_takes_env_overrides_and_any_task_spelling(tmp_path):
    done = orbitlab(
        "play",
        "task=orbitlab-pointing-v0",
        "num_envs=2",
        "max_steps=2",
        "env.episode_length_s=50",
        f"json={tmp_path / 'score.json'}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Pointing [baseline]")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["score.json"]  # no hydra outputs


def test_bench_and_bridge_verbs_dispatch():
    done = orbitlab("bench", "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: orbitlab bench")
    done = orbitlab("bridge", "task=nope")
    assert done.returncode == 2 and "unknown task 'nope'" in done.stderr
    done = orbitlab("bridge", "task=dockng")
    assert done.returncode == 2 and "did you mean 'Docking'?" in done.stderr
    done = orbitlab("bridge", "--help")
    assert done.returncode == 0 and "lockstep_topics" in done.stdout


@pytest.mark.parametrize("verb", ["train", "play", "eval", "export", "record", "replay", "bench"])
def test_help_names_the_verb_not_the_python_module(verb, capsys):
    assert main([verb, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: orbitlab {verb} [key=value ...]"), out[:200]
    assert "dispatch" not in out and "== Config" in out


def test_play_overrides_go_on_top_of_the_runs_env():
    from orbitlab.cli.play import merged

    run_env = {"episode_length_s": 160.0, "scene": {"integrator": "Euler", "nthread": 0}}
    user = {"scene": {"nthread": 1}}
    assert merged(run_env, user) == {
        "episode_length_s": 160.0,
        "scene": {"integrator": "Euler", "nthread": 1},  # the run's integrator kept
    }
    assert merged(run_env, {}) == run_env and merged({}, user) == user
