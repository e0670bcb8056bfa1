"""rsl-rl PPO training run (`agent.library: rsl_rl`), single- or multi-process.

Multi-process (torchrun): every process simulates its own `num_envs` worlds with its
own seeds and PPO averages the gradients (gloo on the CPU, nccl on GPUs); only rank 0
logs and writes checkpoints.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from rsl_rl.runners import OnPolicyRunner

from orbitlab.rl.rsl_rl import RslRlVecEnvWrapper, runner_cfg_from_agent
from orbitlab.rl.train.common import (
    TrainResult,
    TrainSettings,
    find_resume_checkpoint,
    segment_seed,
    segments,
)

NEVER = 2**62
"""rsl-rl's own periodic checkpoints are off: this module saves at segment ends."""


class OrbitlabOnPolicyRunner(OnPolicyRunner):
    """rsl-rl's runner, with CPU (gloo) multi-process training, one tensorboard writer
    per run and checkpoints that say whether they can resume the run exactly."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.resumable = False
        super().__init__(*args, **kwargs)
        init_writer = self.logger.init_logging_writer

        def init_once() -> None:  # learn() runs once per segment; keep one writer
            if self.logger.writer is None:
                init_writer()

        self.logger.init_logging_writer = init_once

    def _configure_multi_gpu(self) -> None:
        """Ranks from torchrun's environment; the process group is joined (if not yet)
        with gloo on the CPU and nccl on GPUs, where each rank uses `cuda:<local rank>`."""
        world_size = int(os.getenv("WORLD_SIZE", "1"))
        if world_size <= 1:
            super()._configure_multi_gpu()
            return
        self.gpu_world_size, self.is_distributed = world_size, True
        self.gpu_local_rank = int(os.getenv("LOCAL_RANK", "0"))
        self.gpu_global_rank = int(os.getenv("RANK", "0"))
        self.cfg["multi_gpu"] = {"global_rank": self.gpu_global_rank,
                                 "local_rank": self.gpu_local_rank, "world_size": world_size}
        cuda = str(self.device).startswith("cuda")
        if cuda and self.device != f"cuda:{self.gpu_local_rank}":
            raise ValueError(f"device '{self.device}' is not this rank's "
                             f"'cuda:{self.gpu_local_rank}'")
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl" if cuda else "gloo",
                                                 rank=self.gpu_global_rank, world_size=world_size)

    def save(self, path: str, infos: dict | None = None) -> None:
        super().save(path, {"resumable": self.resumable, **(infos or {})})


def is_resumable(path: Path) -> bool:
    """Whether the checkpoint at `path` was written at a segment's end."""
    infos = torch.load(path, weights_only=False, map_location="cpu").get("infos") or {}
    return bool(infos.get("resumable"))


def train(settings: TrainSettings) -> TrainResult:
    agent = settings.agent
    total = int(agent["max_iterations"])
    env = RslRlVecEnvWrapper(settings.make_env(seed=segment_seed(settings.seed, 0,
                                                                 settings.rank)))
    runner_cfg = runner_cfg_from_agent(agent)
    runner_cfg["save_interval"] = NEVER
    log_dir = str(settings.run_dir) if settings.rank == 0 else None
    runner = OrbitlabOnPolicyRunner(env, runner_cfg, log_dir=log_dir, device=str(env.device))
    start = 0
    if settings.resume_from is not None:
        runner.load(str(settings.resume_from), map_location=str(env.device))
        start = runner.current_learning_iteration + 1
        print(f"resuming from {settings.resume_from} at iteration {start}")
    checkpoint = settings.run_dir / f"model_{max(start - 1, 0)}.pt"
    steps_per_iteration = int(agent["num_steps_per_env"]) * env.num_envs
    began, done, interrupted = time.perf_counter(), start, False
    try:
        for first, end in segments(start, total, int(agent["save_interval"])):
            with torch.inference_mode():  # rsl-rl steps the env in inference mode
                env.unwrapped.reset(seed=segment_seed(settings.seed, first, settings.rank))
            runner.current_learning_iteration = first
            runner.resumable = False
            runner.learn(num_learning_iterations=end - first)
            done = end
            checkpoint = settings.run_dir / f"model_{end - 1}.pt"
            runner.resumable = True
            if settings.rank == 0:
                runner.save(str(checkpoint))
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
    return TrainResult(checkpoint=checkpoint, iterations=done,
                       env_steps=(done - start) * steps_per_iteration,
                       train_s=time.perf_counter() - began, interrupted=interrupted)


def resume_checkpoint(resume: str | bool, runs_root: Path, task: str,
                      current_run: Path) -> Path:
    """The rsl-rl checkpoint `resume` designates (see `find_resume_checkpoint`)."""
    return find_resume_checkpoint(resume, runs_root, task, current_run, "model_*.pt",
                                  is_resumable)
