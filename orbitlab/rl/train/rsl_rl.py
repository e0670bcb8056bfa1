"""rsl-rl PPO training run (`agent.library: rsl_rl`), single- or multi-process.

Multi-process (torchrun): every process simulates its own `num_envs` worlds with its
own seeds and PPO averages the gradients (gloo on the CPU, nccl on GPUs); only rank 0
logs and writes checkpoints.
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import torch

from orbitlab.rl.checkpoints import load_torch_checkpoint
from orbitlab.rl.progress import RunClock
from orbitlab.rl.rsl_rl import OrbitlabOnPolicyRunner, RslRlVecEnvWrapper, runner_cfg_from_agent
from orbitlab.rl.train.common import (
    TrainResult,
    TrainSettings,
    find_resume_checkpoint,
    segment_seed,
    segments,
)

NEVER = 2**62
"""rsl-rl's own periodic checkpoints are off: this module saves at segment ends."""


def is_resumable(path: Path) -> bool:
    """Whether the checkpoint at `path` was written at a segment's end."""
    infos = load_torch_checkpoint(path).get("infos") or {}
    return isinstance(infos, dict) and bool(infos.get("resumable"))


def segment_cuts_episodes(agent: dict, env) -> str | None:
    """A note when a training segment (save_interval x num_steps_per_env env steps; every
    segment starts by resetting every env) is shorter than the env's longest episode."""
    segment = int(agent["save_interval"]) * int(agent["num_steps_per_env"])
    longest = round(env.max_episode_length_s / env.step_dt)
    if segment >= longest:
        return None
    return (
        f"note: a training segment (save_interval x num_steps_per_env = {segment} env steps) "
        f"is shorter than an episode ({longest} steps): each segment starts by resetting every "
        f"env, so no episode runs past {segment} steps (raise save_interval to at least "
        f"{-(-longest // int(agent['num_steps_per_env']))})"
    )


EPISODE_SUMS = ("cur_reward_sum", "cur_episode_length", "cur_ereward_sum", "cur_ireward_sum")
"""rsl-rl's logger's running per-env episode sums (return, length; RND's two returns)."""


def restart_episode_sums(logger) -> None:
    """Zero the logger's running episode sums: a segment's reset ended every episode, and
    without this the next logged returns and lengths would add the cut episodes' parts
    (lengths above the task's limit)."""
    for name in EPISODE_SUMS:
        value = getattr(logger, name, None)
        if isinstance(value, torch.Tensor):
            value.zero_()


def train(settings: TrainSettings) -> TrainResult:
    agent = settings.agent
    total = int(agent["max_iterations"])
    base_env = settings.make_env(seed=segment_seed(settings.seed, 0, settings.rank))
    env = RslRlVecEnvWrapper(base_env)
    runner_cfg = runner_cfg_from_agent(agent, base_env)
    runner_cfg["save_interval"] = NEVER
    log_dir = str(settings.run_dir) if settings.rank == 0 else None
    # rsl-rl prints the whole network when a runner is built: only under verbose=true
    with (
        contextlib.nullcontext() if settings.verbose else contextlib.redirect_stdout(io.StringIO())
    ):
        runner = OrbitlabOnPolicyRunner(env, runner_cfg, log_dir=log_dir, device=str(env.device))
    if not settings.verbose:
        # rsl-rl logs the git state of its own (pip-installed, repository-less) package and
        # prints "Could not find git repository" for it: no repositories to log instead
        runner.logger.git_status_repos = []
    start = 0
    if settings.resume_from is not None:
        infos = runner.load(str(settings.resume_from), map_location=str(env.device)) or {}
        env.unwrapped.curriculum_manager.load_state_dict(infos.get("curriculum", {}))
        start = runner.current_learning_iteration + 1
        print(f"resuming from {settings.resume_from} at iteration {start}")
    checkpoint = settings.run_dir / f"model_{max(start - 1, 0)}.pt"
    steps_per_iteration = int(agent["num_steps_per_env"]) * env.num_envs
    note = segment_cuts_episodes(agent, base_env)
    if note and settings.rank == 0:
        print(note, flush=True)
    began, done, interrupted = time.perf_counter(), start, False
    clock = RunClock(start, total)
    try:
        for first, end in segments(start, total, int(agent["save_interval"])):
            with torch.inference_mode():  # rsl-rl steps the env in inference mode
                env.unwrapped.reset(seed=segment_seed(settings.seed, first, settings.rank))
            restart_episode_sums(runner.logger)
            runner.current_learning_iteration = first
            runner.resumable = False
            runner.learn(num_learning_iterations=end - first)
            done = end
            checkpoint = settings.run_dir / f"model_{end - 1}.pt"
            runner.resumable = True
            if settings.rank == 0:
                runner.save(
                    str(checkpoint), {"curriculum": env.unwrapped.curriculum_manager.state_dict()}
                )
                print(clock.line(done), flush=True)  # rsl-rl's own ETA is the segment's
    except KeyboardInterrupt:
        interrupted = True
        done = runner.current_learning_iteration + 1
        checkpoint = settings.run_dir / f"model_{runner.current_learning_iteration}.pt"
        if settings.rank == 0 and not checkpoint.exists():  # keep segment checkpoints intact
            runner.resumable = False
            runner.save(str(checkpoint))
        print(f"interrupted: saved {checkpoint}")
    finally:
        runner.logger.stop_logging_writer()
        if runner.logger.writer is not None and hasattr(runner.logger.writer, "close"):
            runner.logger.writer.close()
    return TrainResult(
        checkpoint=checkpoint,
        iterations=done,
        env_steps=(done - start) * steps_per_iteration,
        train_s=time.perf_counter() - began,
        interrupted=interrupted,
    )


def resume_checkpoint(
    resume: str | bool, runs_root: Path, task: str, current_run: Path, run_filter=None
) -> Path:
    """The rsl-rl checkpoint `resume` designates (see `find_resume_checkpoint`)."""
    return find_resume_checkpoint(
        resume, runs_root, task, current_run, "model_*.pt", is_resumable, run_filter
    )


def checkpoints(run_dir: Path) -> list[Path]:
    """The run's segment-end checkpoints, oldest first (model_0.pt, the untrained policy of
    a fresh run, excluded)."""
    found = [p for p in run_dir.glob("model_*.pt") if p.stem != "model_0" and is_resumable(p)]
    return sorted(found, key=lambda p: int(p.stem.split("_")[1]))
