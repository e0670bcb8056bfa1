"""What the per-task benchmarks share: one row per (task, env count), and interleaved timing."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Results = dict[str, dict[str, dict[str, float]]]
"""{task: {num_envs (as text): row}}."""


def measure_rows(
    tasks: Sequence[str],
    num_envs: Sequence[int],
    measure: Callable[[str, int], dict[str, float]],
    on_row: Callable[[Results], None] | None = None,
) -> Results:
    """`measure(task, n)` for every task and env count; `on_row(results)` after every row,
    so that a caller can write what is done before a time limit cuts the run short."""
    results: Results = {}
    for task in tasks:
        for n in num_envs:
            results.setdefault(task, {})[str(n)] = measure(task, n)
            if on_row is not None:
                on_row(results)
    return results


def interleaved(calls: dict[str, Callable[[], Any]], steps: int, trials: int) -> dict[str, float]:
    """Median seconds per call of each function: one warm-up call each (kernel load,
    caches), then `trials` rounds of `steps` calls of each in turn."""
    times: dict[str, list[float]] = {key: [] for key in calls}
    for fn in calls.values():
        fn()
    for _ in range(trials):
        for key, fn in calls.items():
            start = time.perf_counter()
            for _ in range(steps):
                fn()
            times[key].append((time.perf_counter() - start) / steps)
    return {key: float(np.median(value)) for key, value in times.items()}
