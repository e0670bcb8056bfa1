"""Progress of long phases: rollouts (final evaluation, checkpoint selection, play) and the
training run as a whole.

* `RolloutProgress`: a tqdm bar over one rollout's env steps, fed by the rollout's observer
  hook (`orbitlab.envs.evaluate.StepObserver`), with the count of worlds whose episode has
  ended. It draws only on a terminal (tqdm's `disable=None`) and only when tqdm is installed
  (extra `demos` / `dev`), so logs and tests stay clean.
* `progress_bar`: the same kind of bar over any count (benchmark rows, simulated seconds).
* `RunClock`: the elapsed time and the ETA of the whole run across checkpoint segments
  (rsl-rl's own ETA covers the current segment only), one line per segment.
"""

from __future__ import annotations

import sys
import time
from typing import Any


def progress_bar(desc: str, total: float, unit: str = "it") -> Any:
    """A tqdm bar on stderr, drawn only on a terminal; None without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False, file=sys.stderr)


class RolloutProgress:
    """A progress bar of one rollout (env steps), usable as a rollout observer."""

    def __init__(self, desc: str, total_steps: int, num_envs: int):
        self.num_envs, self.resets, self.steps = num_envs, 0, 0
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
            return
        self.bar = tqdm(
            total=int(total_steps),
            desc=desc,
            unit="step",
            disable=None,
            leave=False,
            file=sys.stderr,
        )

    def observe(self, env: Any, terms: dict, outputs: dict) -> None:
        """Called after the reset (not counted) and after every env step."""
        if self.resets == 0:
            self.resets = 1
            return
        self.steps += 1
        if self.bar is not None:
            self.bar.update(1)

    def episode_ended(self, ended: Any) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"ended {int(ended.sum())}/{self.num_envs}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def rollout_progress(desc: str, env: Any, max_steps: int | None = None) -> RolloutProgress:
    """A `RolloutProgress` sized to `env`'s episode (or `max_steps` env steps)."""
    return RolloutProgress(desc, max_steps or env.max_episode_length, env.num_envs)


def format_s(seconds: float) -> str:
    """'1:02:03' style duration."""
    seconds = max(round(seconds), 0)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class RunClock:
    """Elapsed time and ETA of a run of `total` iterations that starts at `start` (a resume)."""

    def __init__(self, start: int, total: int):
        self.start, self.total, self.began = int(start), int(total), time.perf_counter()

    def line(self, done: int) -> str:
        """'run: 100/800 iterations, 0:01:10 elapsed, ETA 0:08:10' after `done` iterations."""
        elapsed = time.perf_counter() - self.began
        per_iteration = elapsed / max(done - self.start, 1)
        eta = per_iteration * (self.total - done)
        return (
            f"run: {done}/{self.total} iterations, {format_s(elapsed)} elapsed, ETA {format_s(eta)}"
        )
