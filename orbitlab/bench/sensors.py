"""Sensor benchmark: a task's sensor stage, the fused kernel against the torch sensors.

For each task and env count, two envs are built from the same config, one with
`SceneCfg.fused_sensors=False` (every sensor's torch `update`, the reference), and reset
with the same seed. A trial times `steps` sensor updates of each (the env's per-physics-step
call: every world's timer advanced, the state's cache cleared, `scene.sensor_stage.update()`),
the two interleaved; medians over the trials are reported, with the Python calls and torch
operations of one update (`orbitlab.bench.calls`). The fused stage runs the gyros, star
trackers, magnetometers, GNSS receivers and relative-navigation sensors in one kernel; a
task's other sensors (latch, ...) keep their torch update in both envs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from orbitlab.bench.calls import calls_per_call
from orbitlab.bench.rows import Results, interleaved, measure_rows
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import make_env_cfg


@dataclass(kw_only=True)
class SensorBenchCfg:
    tasks: tuple[str, ...]
    """Registered task names (`orbitlab.registry`)."""
    num_envs: tuple[int, ...] = (256, 4096)
    steps: int = 20
    """Sensor updates per trial."""
    trials: int = 7
    """Interleaved trials (median reported)."""


def _updater(task: str, num_envs: int, fused: bool) -> tuple[Callable[[], None], int, int]:
    """(one sensor update of a fresh env, fused sensor count, sensor count)."""
    cfg = make_env_cfg(task, num_envs, backend="cpu")
    cfg.scene.fused_sensors = fused
    env = ManagerBasedRLEnv(cfg)
    env.reset(seed=0)
    scene, view = env.scene, env.scene.view

    def update() -> None:
        view.step_count += 1
        view.invalidate()
        scene.sensor_stage.update()

    return update, len(scene.sensor_stage.fused), len(scene.sensors)


def measure_task(task: str, num_envs: int, cfg: SensorBenchCfg) -> dict[str, float]:
    """One (task, num_envs) row: ms per update of each stage, their ratio, counts."""
    torch_update, _, count = _updater(task, num_envs, fused=False)
    fused_update, fused, _ = _updater(task, num_envs, fused=True)
    t = interleaved({"torch": torch_update, "fused": fused_update}, cfg.steps, cfg.trials)
    torch_calls, torch_ops = calls_per_call(torch_update)
    fused_calls, fused_ops = calls_per_call(fused_update)
    return {
        "sensors": count,
        "fused_sensors": fused,
        "torch_ms": 1e3 * t["torch"],
        "fused_ms": 1e3 * t["fused"],
        "speedup": t["torch"] / t["fused"],
        "torch_python_calls": torch_calls,
        "fused_python_calls": fused_calls,
        "torch_ops_torch": torch_ops,
        "torch_ops_fused": fused_ops,
    }


def measure_sensors(cfg: SensorBenchCfg, on_row: Callable[[dict], None] | None = None) -> Results:
    """{task: {num_envs: row}}; `on_row(results)` after every row."""
    return measure_rows(cfg.tasks, cfg.num_envs, lambda t, n: measure_task(t, n, cfg), on_row)


def format_sensors(results) -> str:
    """The rows as a text table."""
    width = max([len("task"), *(len(task) for task in results)])
    header = (
        f"{'task':<{width}} {'envs':>6} {'fused/all':>9} {'torch ms':>9} {'fused ms':>9} "
        f"{'speed-up':>9} {'py calls torch/fused':>21} {'torch ops torch/fused':>22}"
    )
    lines = [header]
    for task, rows in results.items():
        for n, r in rows.items():
            calls = f"{r['torch_python_calls']:,.0f} / {r['fused_python_calls']:,.0f}"
            ops = f"{r['torch_ops_torch']:,.0f} / {r['torch_ops_fused']:,.0f}"
            lines.append(
                f"{task:<{width}} {n:>6} {r['fused_sensors']:>4.0f}/{r['sensors']:<4.0f} "
                f"{r['torch_ms']:>9.2f} {r['fused_ms']:>9.2f} {r['speedup']:>8.1f}x "
                f"{calls:>21} {ops:>22}"
            )
    return "\n".join(lines)
