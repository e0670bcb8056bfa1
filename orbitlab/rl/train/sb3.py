"""stable-baselines3 training run (`agent.library: sb3`; PPO or SAC).

An iteration is `steps_per_iteration` env steps of every world (PPO: its `n_steps`
rollout, then the update). Checkpoints `model_<iteration>.zip` (with `model_<iteration>.json`: the
curriculum's progress; off-policy algorithms also `replay_buffer.pkl`) end each segment of
`save_interval` iterations; one written on Ctrl-C is named `model_<iteration>_interrupted.zip`.
Each file is written under a temporary name and renamed into place (`save`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from orbitlab.jsonio import write_json
from orbitlab.rl.checkpoints import require_trust
from orbitlab.rl.exporters.files import temp_path
from orbitlab.rl.progress import RunClock
from orbitlab.rl.sb3 import Sb3VecEnvWrapper
from orbitlab.rl.train.common import (
    TrainResult,
    TrainSettings,
    find_resume_checkpoint,
    segment_seed,
    segments,
)

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"PPO": PPO, "SAC": SAC}
ORBITLAB_KEYS = (
    "library",
    "algorithm",
    "policy",
    "max_iterations",
    "save_interval",
    "steps_per_iteration",
    "net_arch",
    "verbose",
)
"""Agent-config keys read here; every other key goes to the algorithm's constructor."""
REPLAY_BUFFER = "replay_buffer.pkl"


def algorithm_class(agent: dict[str, Any]) -> type[BaseAlgorithm]:
    name = agent.get("algorithm")
    if name not in ALGORITHMS:
        raise ValueError(
            f"agent.algorithm '{name}' is not an sb3 algorithm orbitlab trains "
            f"(known: {', '.join(ALGORITHMS)})"
        )
    return ALGORITHMS[name]


def steps_per_iteration(agent: dict[str, Any]) -> int:
    """Env steps per world in one iteration."""
    if agent["algorithm"] == "PPO":
        return int(agent["n_steps"])
    return int(agent["steps_per_iteration"])


class EpisodeLogCallback(BaseCallback):
    """Writes the env's episode statistics to SB3's logger under rsl-rl's tensorboard names:
    every `extras["log"]` term (`Episode_Reward/<term>`, `Episode_Termination/<term>`,
    `Episode/success_rate`; a key without '/' gets `Episode/`), averaged over the steps of
    the iteration that reset worlds, and `Train/mean_reward`, `Train/mean_episode_length`
    over the last 100 episodes.

    On-policy algorithms record at the end of each rollout and write with their own dump
    after the update; off-policy ones (SAC) are learned with `log_interval=None` and the
    callback writes once per iteration (`steps_per_iteration` env steps of every world).
    """

    def __init__(self, wrapper: Sb3VecEnvWrapper, steps_per_iteration: int):
        super().__init__()
        self.wrapper = wrapper
        self.per_iteration = steps_per_iteration * wrapper.num_envs
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.iteration = -1

    def _on_training_start(self) -> None:
        self.iteration = self.num_timesteps // self.per_iteration

    def _on_step(self) -> bool:
        for key, value in self.wrapper.episode_log.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(value)
            self.counts[key] = self.counts.get(key, 0) + 1
        return True

    def _on_rollout_end(self) -> None:
        if not isinstance(self.model, OffPolicyAlgorithm):
            self.record()
        elif self.num_timesteps // self.per_iteration > self.iteration:
            self.iteration = self.num_timesteps // self.per_iteration
            self.record()
            self.model.dump_logs()

    def record(self) -> None:
        """Put the iteration's episode statistics into the logger (written at its dump)."""
        for key, total in self.sums.items():
            self.logger.record(tensorboard_name(key), total / self.counts[key])
        self.sums.clear()
        self.counts.clear()
        episodes = self.model.ep_info_buffer
        if episodes:
            self.logger.record("Train/mean_reward", float(np.mean([e["r"] for e in episodes])))
            self.logger.record(
                "Train/mean_episode_length", float(np.mean([e["l"] for e in episodes]))
            )


def tensorboard_name(key: str) -> str:
    """rsl-rl's tensorboard tag of an `extras["log"]` key."""
    return key if "/" in key else f"Episode/{key}"


def build(agent: dict[str, Any], wrapper: Sb3VecEnvWrapper, seed: int) -> BaseAlgorithm:
    cls = algorithm_class(agent)
    kwargs = {key: value for key, value in agent.items() if key not in ORBITLAB_KEYS}
    if "net_arch" in agent:
        kwargs["policy_kwargs"] = {"net_arch": list(agent["net_arch"])}
    return cls(
        agent.get("policy", "MlpPolicy"),
        wrapper,
        seed=seed,
        device="cpu",
        verbose=int(agent.get("verbose", 1)),
        **kwargs,
    )


def train(settings: TrainSettings) -> TrainResult:
    agent = settings.agent
    cls = algorithm_class(agent)
    total = int(agent["max_iterations"])
    wrapper = Sb3VecEnvWrapper(settings.make_env(seed=segment_seed(settings.seed, 0)))
    per_iteration = steps_per_iteration(agent) * wrapper.num_envs
    start = 0
    if settings.resume_from is not None:
        require_trust(
            settings.resume_from,
            settings.trust_checkpoint,
            "the Stable-Baselines3 checkpoint to resume",
        )
        model = cls.load(settings.resume_from, env=wrapper, device="cpu")
        buffer = settings.resume_from.parent / REPLAY_BUFFER
        if isinstance(model, OffPolicyAlgorithm):
            if not buffer.is_file():
                raise FileNotFoundError(f"resuming {agent['algorithm']} needs {buffer}")
            model.load_replay_buffer(buffer)
        curriculum = settings.resume_from.with_suffix(".json")
        if curriculum.is_file():
            wrapper.unwrapped.curriculum_manager.load_state_dict(
                json.loads(curriculum.read_text())["curriculum"]
            )
        start = _iteration_of(settings.resume_from)
        print(f"resuming from {settings.resume_from} at iteration {start}")
    else:
        model = build(agent, wrapper, settings.seed)
    model.set_logger(configure(str(settings.run_dir), ["stdout", "csv", "tensorboard"]))
    callback = EpisodeLogCallback(wrapper, steps_per_iteration(agent))
    log_interval = None if isinstance(model, OffPolicyAlgorithm) else 1
    checkpoint = settings.resume_from or settings.run_dir / "model_0.zip"
    began, done, interrupted = time.perf_counter(), start, False
    try:
        clock = RunClock(start, total)
        for first, end in segments(start, total, int(agent["save_interval"])):
            model.set_random_seed(segment_seed(settings.seed, first))  # env reseeds at reset
            model._last_obs = None  # SB3 then resets every world when learn() starts
            model.learn(
                (end - first) * per_iteration,
                reset_num_timesteps=False,
                callback=callback,
                log_interval=log_interval,
            )
            done = end
            checkpoint = settings.run_dir / f"model_{end}.zip"
            save(model, checkpoint)
            print(clock.line(done), flush=True)
            write_json(
                checkpoint.with_suffix(".json"),
                {"curriculum": wrapper.unwrapped.curriculum_manager.state_dict()},
            )
    except KeyboardInterrupt:
        interrupted = True
        done = model.num_timesteps // per_iteration
        checkpoint = settings.run_dir / f"model_{done}_interrupted.zip"
        save(model, checkpoint)
        print(f"interrupted: saved {checkpoint}")
    return TrainResult(
        checkpoint=checkpoint,
        iterations=done,
        env_steps=(done - start) * per_iteration,
        train_s=time.perf_counter() - began,
        interrupted=interrupted,
    )


def save(model: BaseAlgorithm, checkpoint: Path) -> None:
    """The model (and an off-policy replay buffer) beside it, each atomically: SB3 writes
    to a temporary sibling (`temp_path`, a dot name that no `model_*.zip` pattern
    matches), which is then renamed into place. A run killed mid-write leaves the previous
    files and no torn one under a final name."""
    _atomic(model.save, checkpoint)
    if isinstance(model, OffPolicyAlgorithm):
        _atomic(model.save_replay_buffer, checkpoint.parent / REPLAY_BUFFER)


def _atomic(write: Callable[[Path], object], final: Path) -> None:
    """`write(temporary sibling)`, then os.replace onto `final`; the temporary file is
    removed when the write fails."""
    tmp = temp_path(final)
    try:
        write(tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _iteration_of(path: Path) -> int:
    return int(path.stem.split("_")[1])


def resume_checkpoint(
    resume: str | bool, runs_root: Path, task: str, current_run: Path, run_filter=None
) -> Path:
    """The sb3 checkpoint `resume` designates (see `find_resume_checkpoint`)."""
    return find_resume_checkpoint(
        resume,
        runs_root,
        task,
        current_run,
        "model_*.zip",
        lambda p: not p.stem.endswith("_interrupted"),
        run_filter,
    )


def load_policy(env: ManagerBasedRLEnv, checkpoint: Path, agent: dict[str, Any]):
    """The checkpoint's deterministic actor as `policy() -> actions` on `env`."""
    import torch

    model = algorithm_class(agent).load(checkpoint, device="cpu")

    def policy() -> torch.Tensor:
        obs = env.obs_buf["policy"].detach().cpu().float().numpy()
        action, _ = model.predict(obs, deterministic=True)
        return torch.as_tensor(action, device=env.device, dtype=torch.float32)

    return policy


def checkpoints(run_dir: Path) -> list[Path]:
    """The run's segment-end checkpoints, oldest first."""
    found = [p for p in run_dir.glob("model_*.zip") if not p.stem.endswith("_interrupted")]
    return sorted(found, key=lambda p: int(p.stem.split("_")[1]))
