"""Process-level cases: concurrent runs and signals, each on real `orbitlab` processes.

- concurrency: two `orbitlab train` runs started at the same moment (4 worlds, one
  iteration) must both exit 0 with two distinct run directories; two `record` runs into
  different files must both exit 0 with every demo in each file.
- signals: SIGINT during `orbitlab train` must exit 130 and leave a checkpoint that
  `resume=<run dir>` picks up; SIGKILL during training, sent the moment a checkpoint is
  being written, must leave every `model_*.pt` loadable (`torch.load(weights_only=True)`);
  SIGKILL during `record` must leave `<out>.partial` readable with at least every demo the
  session had reported kept.

Every process runs under `TIMEOUT_S`; a case that does not finish in time is a wrong
result. The cases take about a minute each on a 2-core machine (docs/robustness.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from orbitlab.robustness import CLEAN, CRASH, WRONG, Case

TIMEOUT_S = 120
TASK = "Detumble-RW"
TRAIN = ["train", f"task={TASK}", "num_envs=4", "eval_num_envs=4", "export=false"]


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A temporary directory with the scripted device's commands."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "commands.npy", np.full((16, 6), 0.5))
        yield Path(tmp)


def spawn(argv: list[str], cwd: Path, name: str) -> subprocess.Popen:
    """`orbitlab argv` in `cwd`, stdout and stderr to `<name>.out` / `<name>.err` there."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "ORBITLAB_TASK_MODULES"):
        env.pop(key, None)
    with open(cwd / f"{name}.out", "w") as out, open(cwd / f"{name}.err", "w") as err:
        return subprocess.Popen(  # the child keeps its own copies of the two files
            [sys.executable, "-m", "orbitlab.cli.dispatch", *argv],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
        )


def finish(process: subprocess.Popen, timeout_s: float = TIMEOUT_S) -> int | None:
    """The exit status, or None after killing a process still running at `timeout_s`."""
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def wait_for(test: Callable[[], bool], timeout_s: float = TIMEOUT_S, poll_s: float = 0.05) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if test():
            return True
        time.sleep(poll_s)
    return False


def _err(cwd: Path, name: str) -> str:
    lines = [x for x in (cwd / f"{name}.err").read_text().splitlines() if x.strip()]
    return lines[-1] if lines else "(no stderr)"


def _traceback(cwd: Path, *names: str) -> str | None:
    for name in names:
        if "Traceback" in (cwd / f"{name}.err").read_text():
            return f"{name}: {_err(cwd, name)}"
    return None


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in (root / TASK).glob("*") if p.is_dir())


def _unloadable(run: Path) -> list[str]:
    """The run's model_*.pt that torch.load(weights_only=True) cannot read, with why."""
    import torch

    bad = []
    for path in sorted(run.glob("model_*.pt")):
        try:
            torch.load(path, weights_only=True, map_location="cpu")
        except Exception as error:  # noqa: BLE001  (any failure is the finding)
            bad.append(f"{path.name}: {type(error).__name__}")
    return bad


# ------------------------------------------------------------------ concurrency
def two_trainings(tmp: Path) -> tuple[str, str]:
    root = tmp / "concurrent_runs"
    argv = [*TRAIN, "agent.max_iterations=1", f"runs_root={root}"]
    first, second = spawn(argv, tmp, "train_a"), spawn(argv, tmp, "train_b")
    codes = finish(first), finish(second)
    if (crash := _traceback(tmp, "train_a", "train_b")) is not None:
        return CRASH, crash
    runs = run_dirs(root)
    if codes != (0, 0) or len(runs) != 2:
        return WRONG, f"exit {codes}, run directories {[p.name for p in runs]}"
    missing = [p.name for p in runs if not (p / "metrics.json").is_file()]
    if missing:
        return WRONG, f"no metrics.json in {missing}"
    return CLEAN, f"both exit 0, run directories {runs[0].name} and {runs[1].name}"


def two_recordings(tmp: Path) -> tuple[str, str]:
    from orbitlab.demos.hdf5 import DemoReader

    def argv(out: str) -> list[str]:
        return [
            "record",
            "task=Docking",
            "device=scripted",
            f"script={tmp / 'commands.npy'}",
            "keep=all",
            "num_demos=2",
            "max_steps=5",
            "rate_hz=0",
            f"out={tmp / out}",
        ]

    first, second = spawn(argv("a.hdf5"), tmp, "rec_a"), spawn(argv("b.hdf5"), tmp, "rec_b")
    codes = finish(first), finish(second)
    if (crash := _traceback(tmp, "rec_a", "rec_b")) is not None:
        return CRASH, crash
    if codes != (0, 0):
        return WRONG, f"exit {codes}: {_err(tmp, 'rec_a')} | {_err(tmp, 'rec_b')}"
    counts = []
    for out in ("a.hdf5", "b.hdf5"):
        reader = DemoReader(tmp / out)
        counts.append(len(reader.demos))
        reader.file.close()
    if counts != [2, 2]:
        return WRONG, f"demos in the two files: {counts} (expected 2 each)"
    return CLEAN, "both exit 0, 2 demos in each file"


# ------------------------------------------------------------------ signals
def _training(tmp: Path, name: str) -> tuple[subprocess.Popen, Path, Path | None]:
    """A long training (a checkpoint every iteration) once its third checkpoint exists."""
    root = tmp / f"{name}_runs"
    argv = [*TRAIN, "agent.max_iterations=100000", "agent.save_interval=1", f"runs_root={root}"]
    process = spawn(argv, tmp, name)

    def third() -> bool:
        runs = run_dirs(root)
        return process.poll() is not None or bool(runs and (runs[0] / "model_2.pt").exists())

    wait_for(third)
    runs = run_dirs(root)
    return process, root, runs[0] if runs else None


def sigint_training(tmp: Path) -> tuple[str, str]:
    from orbitlab.rl.train.rsl_rl import is_resumable, resume_checkpoint

    process, root, run = _training(tmp, "sigint")
    if process.poll() is not None or run is None:
        return WRONG, f"training ended before the signal (exit {process.poll()})"
    process.send_signal(signal.SIGINT)
    code = finish(process, 60)
    if (crash := _traceback(tmp, "sigint")) is not None:
        return CRASH, crash
    if code != 130:
        return WRONG, f"exit {code} after SIGINT (expected 130): {_err(tmp, 'sigint')}"
    found = resume_checkpoint(str(run), root, TASK, tmp / "elsewhere")
    if not is_resumable(found):
        return WRONG, f"{found.name} is not resumable"
    return CLEAN, f"exit 130, resume={run.name} picks {found.name}"


def sigkill_training(tmp: Path) -> tuple[str, str]:
    process, _, run = _training(tmp, "sigkill")
    if process.poll() is not None or run is None:
        return WRONG, f"training ended before the signal (exit {process.poll()})"
    writing = wait_for(lambda: any(run.glob(".model_*.tmp.pt")), 20, poll_s=0.001)
    process.kill()
    process.wait()
    bad = _unloadable(run)
    if bad:
        return WRONG, f"unloadable after SIGKILL: {', '.join(bad)}"
    count = len(list(run.glob("model_*.pt")))
    when = "during a checkpoint write" if writing else "between checkpoints"
    return CLEAN, f"killed {when}: all {count} model_*.pt load weights-only"


def sigkill_record(tmp: Path) -> tuple[str, str]:
    from orbitlab.demos.hdf5 import DemoReader, partial_path

    out = tmp / "killed.hdf5"
    argv = [
        "record",
        "task=Docking",
        "device=scripted",
        f"script={tmp / 'commands.npy'}",
        "keep=all",
        "num_demos=100000",
        "max_steps=5",
        "rate_hz=0",
        f"out={out}",
    ]
    process = spawn(argv, tmp, "rec_kill")
    log = tmp / "rec_kill.out"
    wait_for(lambda: process.poll() is not None or log.read_text().count(" kept, ") >= 3)
    if process.poll() is not None:
        return WRONG, f"record ended before the signal (exit {process.poll()})"
    process.kill()
    process.wait()
    reported = log.read_text().count(" kept, ")
    try:
        reader = DemoReader(partial_path(out))
    except Exception as error:  # noqa: BLE001  (an unreadable file is the finding)
        return WRONG, f"{partial_path(out).name} unreadable after SIGKILL: {error}"
    kept = len(reader.demos)
    reader.file.close()
    if kept < reported:
        return WRONG, f"{kept} demos in the file, {reported} reported kept before the kill"
    return CLEAN, f"{partial_path(out).name} readable: {kept} demos ({reported} reported kept)"


def cases(tmp: Path) -> list[Case]:
    """The process-level cases (`tmp`: `workspace()`)."""
    table = [
        ("concurrency", "two trainings started together", two_trainings),
        ("concurrency", "two recordings into two files", two_recordings),
        ("signals", "SIGINT during train", sigint_training),
        ("signals", "SIGKILL during a checkpoint write", sigkill_training),
        ("signals", "SIGKILL during record", sigkill_record),
    ]
    return [Case(group, name, _bind(attempt, tmp)) for group, name, attempt in table]


def _bind(attempt: Callable[[Path], tuple[str, str]], tmp: Path):
    return lambda: attempt(tmp)
