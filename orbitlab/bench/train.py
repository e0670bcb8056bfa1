"""Training benchmark: rsl-rl PPO iterations per task and env count, split into collection and
learning.

Each (task, num_envs) row builds the task's env, wraps it in `RslRlVecEnvWrapper`, and runs
`OnPolicyRunner.learn(warmup + iterations)` once with `ppo_runner_cfg`'s defaults (the same
PPO as `configs/agent/rsl_rl_ppo.yaml`; MLP 64x64, 5 epochs x 4 mini-batches) and no log
directory (no TensorBoard writer, no checkpoints).

How it is measured: rsl-rl's own learn loop already times its two phases, and hands the
figures of every iteration to `runner.logger.log(collect_time=..., learn_time=...)`. The
benchmark replaces that one method on the runner's logger instance with a recorder that keeps
both figures and then calls the original. So the phases are exactly rsl-rl's:

* collection (`collect_time`, s): the `num_steps_per_env` rollout steps, each the policy's
  `act`, `env.step` (the wrapped ManagerBasedRLEnv, physics included) and the rollout storage;
* learning (`learn_time`, s): `compute_returns` (GAE) plus the PPO `update`.

Nothing of the learn loop is copied, and the figures stay right when rsl-rl reorders its
loop. Both phases are wall-clock `time.time()` intervals taken by rsl-rl. The first `warmup`
iterations (first-call allocations, lazy initialisation) are dropped; of the rest the
medians are reported, as the other benchmarks do. Without a log directory rsl-rl skips its
per-step episode book-keeping, which a logged training run (`scripts/train.py`) pays on top.
On the cpu backend the scene sets torch to its `torch_threads` (default 1) intra-op threads,
as in training; the script's header line reports the count in use.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import make_env_cfg


@dataclass(kw_only=True)
class TrainBenchCfg:
    tasks: tuple[str, ...]
    """Registered task names (`orbitlab.registry`)."""
    num_envs: tuple[int, ...] = (256, 1024)
    """Env (world) counts to measure."""
    iterations: int = 5
    """Measured PPO iterations per row (median reported)."""
    warmup: int = 1
    """Leading PPO iterations run but not reported."""
    num_steps_per_env: int = 32
    """Rollout steps per env per iteration."""
    backend: str = "cpu"
    """Simulation backend ('cpu' or 'warp')."""
    device: str | None = None
    """Warp device for backend 'warp' (None: the env's default)."""
    seed: int = 0
    """Seed of the env and of torch (policy initialisation, action sampling)."""


def _record_phases(runner) -> list[tuple[float, float]]:
    """Record (collect_time, learn_time) in s of every iteration `runner.learn` logs."""
    records: list[tuple[float, float]] = []
    original = runner.logger.log

    def log(*args, **kwargs):
        if "collect_time" not in kwargs or "learn_time" not in kwargs:
            raise RuntimeError(
                "this rsl-rl version does not pass collect_time / learn_time to "
                "Logger.log as keywords; the train benchmark cannot time it"
            )
        records.append((float(kwargs["collect_time"]), float(kwargs["learn_time"])))
        return original(*args, **kwargs)

    runner.logger.log = log  # this instance only
    return records


def measure_task(task: str, num_envs: int, cfg: TrainBenchCfg) -> dict[str, float]:
    """One row: {collect_steps_per_s, collect_s, learn_s, iteration_s, total_steps_per_s,
    learn_fraction}; rates in env steps/s, times in s per PPO iteration (medians)."""
    from rsl_rl.runners import OnPolicyRunner

    from orbitlab.rl.rsl_rl import RslRlVecEnvWrapper, ppo_runner_cfg

    env_cfg = make_env_cfg(task, num_envs, backend=cfg.backend, device=cfg.device)
    env_cfg.seed = cfg.seed
    torch.manual_seed(cfg.seed)
    env = RslRlVecEnvWrapper(ManagerBasedRLEnv(env_cfg))
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # rsl-rl prints its model summary
            runner = OnPolicyRunner(
                env,
                ppo_runner_cfg(num_steps_per_env=cfg.num_steps_per_env),
                log_dir=None,
                device=str(env.device),
            )
        records = _record_phases(runner)
        runner.learn(num_learning_iterations=cfg.warmup + cfg.iterations)
    finally:
        env.close()
    measured = records[cfg.warmup :]
    if len(measured) != cfg.iterations:
        raise RuntimeError(
            f"expected {cfg.iterations} measured iterations, recorded {len(measured)}"
        )
    collect = float(np.median([c for c, _ in measured]))
    learn = float(np.median([u for _, u in measured]))
    iteration = float(np.median([c + u for c, u in measured]))
    steps = num_envs * cfg.num_steps_per_env
    return {
        "collect_steps_per_s": steps / collect,
        "collect_s": collect,
        "learn_s": learn,
        "iteration_s": iteration,
        "total_steps_per_s": steps / iteration,
        "learn_fraction": learn / iteration,
    }


def measure_train(cfg: TrainBenchCfg) -> dict[str, dict[str, dict[str, float]]]:
    """{task: {num_envs: row of `measure_task`}}."""
    if cfg.iterations < 1 or cfg.warmup < 0 or cfg.num_steps_per_env < 1:
        raise ValueError("need iterations >= 1, warmup >= 0 and num_steps_per_env >= 1")
    return {task: {str(n): measure_task(task, n, cfg) for n in cfg.num_envs} for task in cfg.tasks}


def format_train(results) -> str:
    """A table: collection rate, learning time, total rate and iteration time per row."""
    lines = [
        (
            f"{'task':<14} {'envs':>6} {'collect steps/s':>16} {'learn s/it':>11} "
            f"{'total steps/s':>14} {'iteration s':>12} {'learn share':>12}"
        )
    ]
    for task, rows in results.items():
        for n, r in rows.items():
            lines.append(
                f"{task:<14} {n:>6} {r['collect_steps_per_s']:>16,.0f} "
                f"{r['learn_s']:>11.3f} {r['total_steps_per_s']:>14,.0f} "
                f"{r['iteration_s']:>12.3f} {r['learn_fraction']:>12.1%}"
            )
    return "\n".join(lines)
