"""Run directories: two trainings started in the same second never share one."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from orbitlab.rl.run_dirs import unique_run_dir


def test_the_same_second_gives_distinct_directories_made_exclusively(tmp_path):
    made: list[str] = []
    lock = threading.Lock()

    def take():
        path = unique_run_dir(str(tmp_path), "Task", "2026-12-04_10-00-00")
        with lock:
            made.append(path)

    threads = [threading.Thread(target=take) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 16
    assert all(os.path.isdir(p) and not os.listdir(p) for p in made)
    assert all(os.path.basename(p).startswith("2026-12-04_10-00-00_") for p in made)


def test_two_trainings_started_together_keep_their_own_files(tmp_path):
    runs = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "orbitlab.cli.dispatch",
        "train",
        "num_envs=2",
        "agent.max_iterations=1",
        "eval_num_envs=0",
        "export=false",
        f"runs_root={runs}",
    ]
    started = [
        subprocess.Popen(
            [*command, f"seed={seed}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for seed in (11, 12)
    ]
    for process in started:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
    dirs = sorted((runs / "Detumble-RW").iterdir())
    assert len(dirs) == 2, dirs
    seeds = sorted(
        line.split(":")[1].strip()
        for d in dirs
        for line in (d / ".hydra" / "config.yaml").read_text().splitlines()
        if line.startswith("seed:")
    )
    assert seeds == ["11", "12"]
    for d in dirs:
        assert (d / "model_0.pt").is_file() and (d / "metrics.json").is_file()
