"""What every trainer shares: the run settings, the result, seeds, files and resumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import make_env


@dataclass
class TrainSettings:
    """One training run (the resolved `configs/train.yaml`)."""

    task: str
    """Registered task name, e.g. 'Detumble-RW'."""
    agent: dict[str, Any]
    """The agent config (`configs/agent/*.yaml`); `library` selects the trainer."""
    run_dir: Path
    """Where checkpoints, logs and metrics go."""
    num_envs: int = 256
    """Parallel worlds (per process when distributed)."""
    seed: int = 0
    backend: str = "cpu"
    device: str | None = None
    """Simulation device of the warp backend (None: a GPU when present)."""
    resume_from: Path | None = None
    """Checkpoint to continue from (a resumable one: written at a segment's end)."""
    rank: int = 0
    """Process rank (torchrun), 0 when not distributed."""
    world_size: int = 1
    trust_checkpoint: bool = False
    """Allow resuming from a pickled (sb3, rl-games) checkpoint, which can run code."""
    env: dict[str, Any] = field(default_factory=dict)
    """Env config overrides (`env.<field>=...` of the command line; `orbitlab.registry`)."""
    verbose: bool = False
    """Show the learning library's own start-up output (e.g. rsl-rl's network printout)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def make_env(
        self, num_envs: int | None = None, seed: int | None = None, evaluation: bool = False
    ) -> ManagerBasedRLEnv:
        """A fresh env of the task with `num_envs` worlds (default: the run's).

        `evaluation`: without the curriculum, i.e. at the task's configured (full) ranges.
        """
        return make_env(
            self.task,
            num_envs or self.num_envs,
            variant="play" if evaluation else "train",
            seed=self.seed if seed is None else seed,
            backend=self.backend,
            device=self.device,
            env=self.env,
        )


@dataclass
class TrainResult:
    """What a finished (or interrupted) training run left."""

    checkpoint: Path
    """The last checkpoint written."""
    iterations: int
    """Learning iterations done, counted from the start of training (resumes included)."""
    env_steps: int
    """Env steps collected by this process in this invocation (all worlds)."""
    train_s: float
    """Wall time of this invocation's training, s."""
    interrupted: bool = False


def segment_seed(seed: int, iteration: int, rank: int = 0) -> int:
    """The seed of the training segment starting at `iteration` on process `rank`."""
    return (int(seed) + 1_000_003 * int(rank) + 7_919 * int(iteration)) % (2**31 - 1)


def segments(start: int, total: int, length: int) -> list[tuple[int, int]]:
    """[first, end) iteration ranges of `length` (the last may be shorter), from `start`
    (a segment boundary) to `total`."""
    if length < 1:
        raise ValueError(f"save_interval must be >= 1, got {length}")
    if start % length and start != total:
        raise ValueError(f"iteration {start} is no segment boundary (save_interval {length})")
    return [(first, min(first + length, total)) for first in range(start, total, length)]


def find_resume_checkpoint(
    resume: str | bool,
    runs_root: Path,
    task: str,
    current_run: Path | None = None,
    pattern: str = "model_*.pt",
    is_resumable=None,
    run_filter=None,
) -> Path:
    """The checkpoint that `resume` designates.

    `resume` true: the newest resumable checkpoint of the latest earlier run of `task`
    under `runs_root/<task>/`; a path: that checkpoint file, or the newest resumable
    checkpoint in that run directory. `is_resumable(path) -> bool` filters candidates (one
    that cannot be read is skipped with a warning); `run_filter(run dir) -> bool` the earlier
    runs `resume=true` considers (e.g. `resume.same_algorithm`).
    """
    from orbitlab.rl.train.resume import Usable

    check = Usable(is_resumable)

    def newest(run: Path) -> Path | None:
        candidates = sorted(run.glob(pattern), key=_iteration_of, reverse=True)
        return next((p for p in candidates if check(p)), None)

    if resume is True or str(resume).lower() == "true":
        task_runs = runs_root / task
        runs = sorted(
            (
                p
                for p in task_runs.glob("*")
                if p.is_dir()
                and (current_run is None or p.resolve() != Path(current_run).resolve())
                and (run_filter is None or run_filter(p))
            ),
            key=lambda p: p.name,
            reverse=True,
        )
        for run in runs:
            found = newest(run)
            if found is not None:
                return found
        _no_readable(check.skipped)
        raise FileNotFoundError(
            f"resume=true: no resumable checkpoint in any run under {task_runs}"
        )
    path = Path(str(resume))
    if path.is_file():
        if is_resumable is not None and not is_resumable(path):
            raise ValueError(
                f"checkpoint {path} was written mid-segment (e.g. on Ctrl-C) and "
                "cannot continue the run exactly; pass its run directory to "
                "resume from the last segment checkpoint"
            )
        return path
    if path.is_dir():
        found = newest(path)
        if found is None:
            _no_readable(check.skipped)
            raise FileNotFoundError(f"resume={path}: no resumable checkpoint ({pattern}) there")
        return found
    raise FileNotFoundError(
        f"resume={resume}: neither true nor an existing checkpoint or run directory"
    )


def _no_readable(skipped: list[str]) -> None:
    """CheckpointError (a file problem, not an argument) when only unreadable ones were found."""
    if skipped:
        from orbitlab.rl.checkpoints import CheckpointError

        raise CheckpointError(f"no readable resumable checkpoint: {'; '.join(skipped)}")


def _iteration_of(path: Path) -> int:
    digits = "".join(ch for ch in path.stem.rsplit("_", 1)[-1] if ch.isdigit())
    return int(digits) if digits else -1
