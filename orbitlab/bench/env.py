"""Environment benchmark: env-steps/s of each task with random actions, and the framework tax.

For each task and env count, two envs are built from the same config (same scene, integrator
and decimation), each with its own state:

* the *env* is timed on `env.step(random action)`: managers, actuator models, sensors, agent
  graph, resets of finished episodes, and `decimation` physics steps;
* the *reference* is a second env whose orbit-coupled physics alone is timed for the same
  `decimation` physics steps (`scene.data.step()` once per physics step, as the env calls it).
  Before each trial the env's exact state (`orbitlab.envs.state`) is copied into it, so it
  steps the same worlds from the same states, commands and loads as the env's trial that
  follows; its state is its own, so timing it neither ages the env's episodes nor lets
  them drift into states (e.g. contact) that the env would have reset.

The framework tax is (env step time) / (reference physics time) - 1: what the framework adds
to the physics it drives. That difference of two noisy timings swings by +-10 points on a
shared 2-core machine, so the framework's own work is also timed alone (the env step with its
physics call stubbed out) and reported over the reference physics. A reset of a random 10% of
the envs is timed against one env step. Trials of the four timings are interleaved and the
median of each is reported. Each row also counts the Python calls, torch operations, Warp
launches and MuJoCo calls of one env step (`orbitlab.bench.calls`), averaged over 5 steady
steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.bench.calls import dispatches_per_call
from orbitlab.bench.rows import Results, measure_rows
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.envs.state import get_state, set_state
from orbitlab.registry import make_env_cfg


@dataclass(kw_only=True)
class EnvBenchCfg:
    tasks: tuple[str, ...]
    """Registered task names (`orbitlab.registry`)."""
    num_envs: tuple[int, ...] = (1024, 4096)
    steps: int = 10
    """Env steps per trial."""
    trials: int = 5
    """Interleaved trials (median reported)."""
    backend: str = "cpu"
    device: str | None = None
    """Warp device for backend 'warp' ('cuda:0', 'cpu'; None: the env's default)."""


def _time(fn, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count


def _make_env(task: str, num_envs: int, cfg: EnvBenchCfg) -> ManagerBasedRLEnv:
    return ManagerBasedRLEnv(make_env_cfg(task, num_envs, backend=cfg.backend, device=cfg.device))


def _copy_state(env: ManagerBasedRLEnv, reference: ManagerBasedRLEnv, backend: str) -> None:
    """Put the env's exact state (every world, physics and framework) into the reference.

    Exact state capture exists on the cpu backend only: on warp the reference keeps its own
    worlds, built and reset from the same config and seed as the env's."""
    if backend == "cpu":
        set_state(reference, get_state(env))


def measure_task(task: str, num_envs: int, cfg: EnvBenchCfg) -> dict[str, float]:
    """One (task, num_envs) row: rates in steps/s, tax and ratios as fractions."""
    env = _make_env(task, num_envs, cfg)
    reference = _make_env(task, num_envs, cfg)
    decimation = env.cfg.decimation
    gen = torch.Generator(device=env.device).manual_seed(0)
    dim = env.action_manager.total_dim

    def env_step():
        env.step(2 * torch.rand((num_envs, dim), generator=gen, device=env.device) - 1)

    def physics():  # the reference's own worlds, as many physics steps as one env step
        for _ in range(decimation):
            reference.scene.data.step()

    def framework_only():  # the env step with the physics call stubbed out
        real = env.scene.data.step
        env.scene.data.step = lambda nstep=1, check=True: None
        try:
            env_step()
        finally:
            env.scene.data.step = real

    def reset_subset():
        ids = torch.randperm(num_envs, generator=gen, device=env.device)[: max(1, num_envs // 10)]
        env._reset_idx(ids)

    env_step()
    _copy_state(env, reference, cfg.backend)
    physics()
    times: dict[str, list[float]] = {"env": [], "physics": [], "reset": [], "alone": []}
    for _ in range(cfg.trials):
        _copy_state(env, reference, cfg.backend)  # the physics then steps the env's states
        times["env"].append(_time(env_step, cfg.steps))
        times["physics"].append(_time(physics, cfg.steps))
        times["reset"].append(_time(reset_subset, 2))
        times["alone"].append(_time(framework_only, cfg.steps))
    t = {key: float(np.median(value)) for key, value in times.items()}
    counts = dispatches_per_call(env_step)
    env.close()
    reference.close()
    return {
        "env_steps_per_s": num_envs / t["env"],
        "physics_steps_per_s": num_envs * decimation / t["physics"],
        "framework_tax": t["env"] / t["physics"] - 1.0,
        "framework_alone_over_physics": t["alone"] / t["physics"],
        "reset_10pct_over_step": t["reset"] / t["env"],
        "python_calls_per_step": counts.python_calls,
        "torch_calls_per_step": counts.torch_ops,
        "warp_launches_per_step": counts.warp_launches,
        "mujoco_calls_per_step": counts.mujoco_calls,
    }


def measure_env(cfg: EnvBenchCfg, on_row: Callable[[dict], None] | None = None) -> Results:
    """{task: {num_envs: {env_steps_per_s, physics_steps_per_s, framework_tax, ...}}};
    `on_row(results)` after every row (`orbitlab.bench.rows.measure_rows`)."""
    return measure_rows(cfg.tasks, cfg.num_envs, lambda t, n: measure_task(t, n, cfg), on_row)


def format_env(results) -> str:
    """The rows as a text table (task names padded to the longest)."""
    width = max([len("task"), *(len(task) for task in results)])
    lines = [
        (
            f"{'task':<{width}} {'envs':>6} {'env steps/s':>12} {'physics steps/s':>16} "
            f"{'framework tax':>14} {'alone/physics':>14} {'reset 10%/step':>15} "
            f"{'py calls/step':>14} {'torch ops/step':>15} {'warp launches/step':>19} "
            f"{'mujoco calls/step':>18}"
        )
    ]
    for task, rows in results.items():
        for n, r in rows.items():
            lines.append(
                f"{task:<{width}} {n:>6} {r['env_steps_per_s']:>12,.0f} "
                f"{r['physics_steps_per_s']:>16,.0f} {r['framework_tax']:>14.1%} "
                f"{r['framework_alone_over_physics']:>14.1%} "
                f"{r['reset_10pct_over_step']:>15.2f} "
                f"{r.get('python_calls_per_step', float('nan')):>14,.0f} "
                f"{r.get('torch_calls_per_step', float('nan')):>15,.0f} "
                f"{r.get('warp_launches_per_step', float('nan')):>19,.0f} "
                f"{r.get('mujoco_calls_per_step', float('nan')):>18,.0f}"
            )
    return "\n".join(lines)


def plot_env(results, path) -> None:
    """Throughput (env steps/s) against num_envs per task, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RuntimeError("--plot needs matplotlib: pip install 'orbitlab-sim[viz]'") from error
    fig, ax = plt.subplots(figsize=(6, 4))
    for task, rows in results.items():
        n = [int(k) for k in rows]
        ax.plot(n, [rows[k]["env_steps_per_s"] for k in rows], marker="o", label=task)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env steps / s")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
