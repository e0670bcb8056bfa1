"""Environment benchmark: env-steps/s of each task with random actions, and the framework tax.

For each task and env count, interleaved trials time (a) `env.step(random action)` and
(b) the bare orbit-coupled physics of the same worlds for the same number of physics
steps (`scene.data.step(decimation)`). The framework tax is (a)/(b) - 1: what the
managers, actuator models, sensors and agent graph add to the physics. Because that
difference of two noisy timings swings by +-10 points on a shared 2-core machine, the
framework's own work is also timed alone (the env step with the physics call stubbed
out) and reported over (b). A reset of a random 10% of the envs is timed against one
env step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
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


def measure_task(task: str, num_envs: int, cfg: EnvBenchCfg) -> dict[str, float]:
    env = ManagerBasedRLEnv(make_env_cfg(task, num_envs, backend=cfg.backend, device=cfg.device))
    gen = torch.Generator(device=env.device).manual_seed(0)
    dim = env.action_manager.total_dim

    def env_step():
        env.step(2 * torch.rand((num_envs, dim), generator=gen, device=env.device) - 1)

    def physics():
        env.scene.data.step(env.cfg.decimation)

    def framework_only():  # the same env step with the physics call stubbed out
        real = env.scene.data.step
        env.scene.data.step = lambda nstep=1: None
        try:
            env_step()
        finally:
            env.scene.data.step = real

    def reset_subset():
        ids = torch.randperm(num_envs, generator=gen, device=env.device)[: max(1, num_envs // 10)]
        env._reset_idx(ids)

    env_step()
    physics()
    env_times, phys_times, reset_times, alone_times = [], [], [], []
    for _ in range(cfg.trials):
        env_times.append(_time(env_step, cfg.steps))
        phys_times.append(_time(physics, cfg.steps))
        reset_times.append(_time(reset_subset, 2))
        alone_times.append(_time(framework_only, cfg.steps))
    t_env, t_phys, t_reset, t_alone = (
        float(np.median(x)) for x in (env_times, phys_times, reset_times, alone_times)
    )
    env.close()
    return {
        "env_steps_per_s": num_envs / t_env,
        "physics_steps_per_s": num_envs * env.cfg.decimation / t_phys,
        "framework_tax": t_env / t_phys - 1.0,
        "framework_alone_over_physics": t_alone / t_phys,
        "reset_10pct_over_step": t_reset / t_env,
    }


def measure_env(
    cfg: EnvBenchCfg, on_row: Callable[[dict], None] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """{task: {num_envs: {env_steps_per_s, physics_steps_per_s, framework_tax, ...}}}.

    `on_row(results)` is called after every (task, num_envs) row, so that a caller can
    write what is done before a time limit cuts the run short.
    """
    results: dict[str, dict[str, dict[str, float]]] = {}
    for task in cfg.tasks:
        for n in cfg.num_envs:
            results.setdefault(task, {})[str(n)] = measure_task(task, n, cfg)
            if on_row is not None:
                on_row(results)
    return results


def format_env(results) -> str:
    lines = [
        (
            f"{'task':<14} {'envs':>6} {'env steps/s':>12} {'physics steps/s':>16} "
            f"{'framework tax':>14} {'alone/physics':>14} {'reset 10%/step':>15}"
        )
    ]
    for task, rows in results.items():
        for n, r in rows.items():
            lines.append(
                f"{task:<14} {n:>6} {r['env_steps_per_s']:>12,.0f} "
                f"{r['physics_steps_per_s']:>16,.0f} {r['framework_tax']:>14.1%} "
                f"{r['framework_alone_over_physics']:>14.1%} "
                f"{r['reset_10pct_over_step']:>15.2f}"
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
