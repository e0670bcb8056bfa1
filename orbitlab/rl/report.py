"""A report over training runs of one task: per seed, the median and the worst, and curves.

    orbitlab train -m seed=0,1,2,3,4 task=docking
    orbitlab runs report runs/Docking target=0.9

Every run directory below the given folder (one holding a `metrics.json`, as
`orbitlab train` writes it) is one row: its seed (`.hydra/config.yaml`), the final policy's
score on fresh worlds with a 95 % interval, the best segment checkpoint's score when the run
selected one (`select_best=true`), wall time and env steps. Then the median and the worst
seed, and a learning-curve picture from the runs' tensorboard files: one line per seed, the
curve tag against env steps, the target as a dashed line.

The score is `success_rate` unless `metric=` names another number of `metrics.json` (top
level, or in `final_errors` / `final_terms`); success_rate and mean_return are higher-is-
better, every other metric (errors, times, effort) lower-is-better.
The interval of a success rate is Wilson's score interval over the evaluation's episodes;
that of a final error the evaluation's percentile bootstrap of its mean over the worlds
(`final_errors_ci95` in `metrics.json`).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbitlab.stats import wilson_interval

SUCCESS = "success_rate"
"""The default score."""
HIGHER_IS_BETTER = frozenset({SUCCESS, "mean_return"})
"""Metrics where more is better; every other one (errors, times, effort) is lower-is-better."""
CURVE_TAGS = ("Episode/success_rate", "Train/mean_reward")
"""Tensorboard tags tried for the curve, in order (`curve=` picks another)."""


@dataclass
class RunRow:
    """One training run."""

    path: Path
    """Its run directory."""
    seed: int | None
    """Its training seed (None: no saved config)."""
    score: float
    """The final policy's score (the report's metric)."""
    interval: tuple[float, float] | None
    """95 % interval of the score (success rates only)."""
    best: float | None
    """The best segment checkpoint's success rate on the selection worlds (None: no
    selection)."""
    train_s: float
    """Training wall time, s."""
    env_steps: int
    """Env steps trained."""
    steps_per_iteration: float
    """Env steps per training iteration (tensorboard's step unit)."""
    curve: list[tuple[float, float]] = field(default_factory=list)
    """(env steps, value) of the curve tag."""


@dataclass
class Report:
    """The rows of one task's runs and their summary."""

    task: str
    metric: str
    higher_is_better: bool
    rows: list[RunRow]
    curve_tag: str | None

    @property
    def median(self) -> float:
        return statistics.median(r.score for r in self.rows)

    @property
    def worst(self) -> RunRow:
        pick = min if self.higher_is_better else max
        return pick(self.rows, key=lambda r: r.score)

    def meets(self, target: float) -> int:
        """How many runs reach `target`."""
        if self.higher_is_better:
            return sum(r.score >= target for r in self.rows)
        return sum(r.score <= target for r in self.rows)


def _score(metrics: dict[str, Any], metric: str) -> float | None:
    for source in (metrics, metrics.get("final_errors") or {}, metrics.get("final_terms") or {}):
        value = source.get(metric)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _interval(metrics: dict[str, Any], metric: str, score: float) -> tuple[float, float] | None:
    """The score's 95 % interval: Wilson's for the success rate, the evaluation's bootstrap
    interval for a final error (`final_errors_ci95`), else None."""
    if metric == SUCCESS:
        episodes = int(metrics.get("episodes") or 0)
        return wilson_interval(score * episodes, episodes)
    pair = (metrics.get("final_errors_ci95") or {}).get(metric)
    if not (isinstance(pair, list | tuple) and len(pair) == 2):
        return None
    finite = all(isinstance(v, int | float) and math.isfinite(v) for v in pair)
    return (float(pair[0]), float(pair[1])) if finite else None


def _seed(run: Path) -> int | None:
    config = run / ".hydra" / "config.yaml"
    if not config.is_file():
        return None
    import yaml

    try:
        seed = (yaml.safe_load(config.read_text()) or {}).get("seed")
    except yaml.YAMLError:
        return None
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None


def read_curve(run: Path, tags: tuple[str, ...]) -> tuple[str | None, list[tuple[int, float]]]:
    """(tag, [(iteration, value)]) of the first of `tags` in the run's tensorboard files."""
    files = sorted(run.glob("events.out.tfevents.*"))
    if not files:
        return None, []
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points: dict[str, list[tuple[int, float]]] = {}
    for path in files:
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        events.Reload()
        for tag in set(tags) & set(events.Tags().get("scalars", [])):
            points.setdefault(tag, []).extend((e.step, e.value) for e in events.Scalars(tag))
    for tag in tags:
        if tag in points:
            return tag, sorted(points[tag])
    return None, []


def collect(root: str | Path, metric: str = SUCCESS, curve: str | None = None) -> Report:
    """The report of every run below `root` (see the module doc); ValueError when there is
    none, when they are of several tasks, or when a run has no `metric`."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is no directory")
    runs = sorted(p.parent for p in root.rglob("metrics.json"))
    if not runs:
        raise ValueError(f"no run below {str(root)!r} (no metrics.json)")
    tasks: set[str] = set()
    tags = (curve,) if curve else CURVE_TAGS
    rows, curve_tag = [], None
    for run in runs:
        try:
            metrics = json.loads((run / "metrics.json").read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{run / 'metrics.json'}: unreadable ({error})") from None
        tasks.add(str(metrics.get("task", "?")))
        score = _score(metrics, metric)
        if score is None:
            raise ValueError(
                f"{run}: metrics.json has no number '{metric}' (try metric="
                f"success_rate or a key of final_errors: "
                f"{', '.join(metrics.get('final_errors') or {}) or 'none'})"
            )
        interval = _interval(metrics, metric, score)
        selection = metrics.get("selection") or {}
        scored = [c.get("success_rate") for c in selection.get("checkpoints") or []]
        best = max((s for s in scored if isinstance(s, int | float)), default=None)
        iterations = max(int(metrics.get("iterations") or 1), 1)
        env_steps = int(metrics.get("env_steps") or 0)
        per_iteration = env_steps / iterations
        tag, points = read_curve(run, tags)
        curve_tag = curve_tag or tag
        rows.append(
            RunRow(
                path=run,
                seed=_seed(run),
                score=score,
                interval=interval,
                best=best,
                train_s=float(metrics.get("train_s") or 0.0),
                env_steps=env_steps,
                steps_per_iteration=per_iteration,
                curve=[((i + 1) * per_iteration, v) for i, v in points],
            )
        )
    if len(tasks) > 1:
        raise ValueError(f"runs of several tasks below {str(root)!r}: {sorted(tasks)}")
    higher = metric in HIGHER_IS_BETTER
    rows.sort(key=lambda r: (r.seed is None, r.seed if r.seed is not None else 0, str(r.path)))
    return Report(tasks.pop(), metric, higher, rows, curve_tag)


def format_report(report: Report, target: float | None = None) -> str:
    """The per-seed table, the median and the worst seed (and how many reach `target`)."""
    success = report.metric == SUCCESS

    def show(value: float | None) -> str:
        if value is None:
            return "-"
        return f"{100 * value:.1f} %" if success else f"{value:.4g}"

    lines = [f"{report.task}: {len(report.rows)} runs, score: {report.metric}"]
    header = f"{'seed':>5}  {'final':>9}  {'95 % interval':>17}  {'best ckpt':>9}  "
    lines.append(header + f"{'train s':>8}  {'env steps':>11}  run")
    for r in report.rows:
        interval = f"{show(r.interval[0])} - {show(r.interval[1])}" if r.interval else "-"
        seed = "-" if r.seed is None else str(r.seed)
        lines.append(
            f"{seed:>5}  {show(r.score):>9}  {interval:>17}  {show(r.best):>9}  "
            f"{r.train_s:8.0f}  {r.env_steps:11d}  {r.path.name}"
        )
    worst = report.worst
    summary = f"median {show(report.median)}, worst {show(worst.score)} (seed {worst.seed})"
    if target is not None:
        summary += f"; {report.meets(target)} of {len(report.rows)} reach {show(target)}"
    lines.append(summary)
    return "\n".join(lines)


def plot_curves(report: Report, path: str | Path, target: float | None = None) -> Path:
    """A PNG of every run's curve against env steps (one line per seed), the target dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=110)
    seeds = [r.seed for r in report.rows]
    for r in report.rows:
        if r.curve:
            x, y = zip(*r.curve, strict=True)
            label = r.path.name if r.seed is None else f"seed {r.seed}"
            if r.seed is not None and seeds.count(r.seed) > 1:
                label += f" ({r.path.name})"
            ax.plot(x, y, lw=1.4, label=label)
    if target is not None:
        ax.axhline(target, color="k", ls="--", lw=1.0, label=f"target {target:g}")
    ax.set_xlabel("env steps")
    ax.set_ylabel(report.curve_tag or "(no curve)")
    ax.set_title(f"{report.task}: {len(report.rows)} runs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
    return path
