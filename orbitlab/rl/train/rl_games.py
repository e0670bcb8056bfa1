"""rl-games training run (`agent.library: rl_games`; its a2c_continuous PPO).

The agent config is rl-games' `params` block plus `max_iterations` (its max_epochs)
and `save_interval` (its save_frequency, in epochs). rl-games writes checkpoints
(`<run>/nn/*.pth`) and tensorboard summaries (`<run>/summaries/`, with the env's
episode statistics through `IsaacAlgoObserver`). Resuming loads the weights,
normalizers, optimizer and epoch counters of a checkpoint; the worlds restart from a
reset, so unlike rsl-rl and sb3 runs a resumed rl-games run does not repeat the
uninterrupted one bit for bit.

rl-games writes its checkpoints itself (`A2CAgent.save`, a plain `torch.save` in place);
`AtomicA2CAgent` overrides that public method, registered through rl-games' public
`Runner.algo_factory`, so that each `.pth` is written under a temporary name and renamed
into place: a run killed mid-write never leaves a torn checkpoint for a resume.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from rl_games.algos_torch.a2c_continuous import A2CAgent
from rl_games.common.algo_observer import IsaacAlgoObserver
from rl_games.torch_runner import Runner

from orbitlab.rl.checkpoints import require_trust, save_torch_checkpoint
from orbitlab.rl.rl_games import RlGamesVecEnvWrapper, register_rl_games_env
from orbitlab.rl.train.common import TrainResult, TrainSettings, find_resume_checkpoint

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class AtomicA2CAgent(A2CAgent):
    """rl-games' continuous PPO agent, its checkpoints written atomically."""

    def save(self, fn: str) -> None:
        """rl-games' `save` (`<fn>.pth`: the full state weights), through
        `save_torch_checkpoint` instead of an in-place `torch.save`."""
        save_torch_checkpoint(self.get_full_state_weights(), f"{fn}.pth")


def atomic_runner() -> Runner:
    """An rl-games `Runner` (with orbitlab's episode statistics observer) whose continuous
    PPO agent writes its checkpoints atomically."""
    runner = Runner(IsaacAlgoObserver())
    runner.algo_factory.register_builder("a2c_continuous", lambda **kw: AtomicA2CAgent(**kw))
    return runner


def params_for(agent: dict[str, Any], settings: TrainSettings, device: str) -> dict[str, Any]:
    """rl-games `params` for this run: actors, epochs, device, directories, seed."""
    params = copy.deepcopy(
        {k: v for k, v in agent.items() if k not in ("library", "max_iterations", "save_interval")}
    )
    config = params["config"]
    config.update(
        num_actors=settings.num_envs,
        device=device,
        device_name=device,
        train_dir=str(settings.run_dir.parent),
        full_experiment_name=settings.run_dir.name,
    )
    if "max_iterations" in agent:
        config["max_epochs"] = int(agent["max_iterations"])
    if "save_interval" in agent:
        config["save_frequency"] = int(agent["save_interval"])
    batch = int(config["horizon_length"]) * int(settings.num_envs)
    for section in (config, config.get("central_value_config") or {}):
        if "minibatch_size" in section:
            section["minibatch_size"] = fitting_minibatch(int(section["minibatch_size"]), batch)
    params["seed"] = settings.seed
    if params.get("torch_threads") == "auto":
        params["torch_threads"] = 0  # keep the scene's single torch thread
    return params


def fitting_minibatch(configured: int, batch: int) -> int:
    """The largest minibatch <= `configured` that divides the batch (horizon_length x
    num_envs samples), as rl-games requires: the configured size fits every num_envs."""
    if configured < 1:
        raise ValueError(f"agent.config.minibatch_size must be >= 1, got {configured}")
    size = min(configured, batch)
    while batch % size:
        size -= 1
    return size


def train(settings: TrainSettings) -> TrainResult:
    env = settings.make_env()
    device = str(env.device)
    register_rl_games_env(lambda **_: env)
    params = params_for(settings.agent, settings, device)
    runner = atomic_runner()
    runner.load({"params": params})
    start_frames = 0
    if settings.resume_from is not None:
        require_trust(
            settings.resume_from, settings.trust_checkpoint, "the rl-games checkpoint to resume"
        )
        start_frames = int(
            torch.load(settings.resume_from, weights_only=False, map_location="cpu").get("frame", 0)
        )
    began, interrupted = time.perf_counter(), False
    try:
        runner.run(
            {
                "train": True,
                "play": False,
                "sigma": None,
                "checkpoint": str(settings.resume_from) if settings.resume_from else None,
            }
        )
    except KeyboardInterrupt:  # rl-games saves on its own schedule; keep the newest
        interrupted = True
    checkpoint = newest_checkpoint(settings.run_dir)
    if checkpoint is None:
        raise RuntimeError(f"rl-games wrote no checkpoint under {settings.run_dir / 'nn'}")
    # written by this process into the run directory it created: its own file
    state = torch.load(checkpoint, weights_only=False, map_location="cpu")
    epochs = int(state.get("epoch", 0))
    frames = int(state.get("frame", 0))
    return TrainResult(
        checkpoint=checkpoint,
        iterations=epochs,
        env_steps=frames - start_frames,
        train_s=time.perf_counter() - began,
        interrupted=interrupted,
    )


def newest_checkpoint(run_dir: Path) -> Path | None:
    return max((run_dir / "nn").glob("*.pth"), key=lambda p: p.stat().st_mtime, default=None)


def resume_checkpoint(
    resume: str | bool, runs_root: Path, task: str, current_run: Path, run_filter=None
) -> Path:
    """The rl-games checkpoint `resume` designates (a .pth, or a run's newest)."""
    path = Path(str(resume))
    if path.is_dir() and (path / "nn").is_dir():
        path = path / "nn"
    if str(resume).lower() == "true":
        run = find_resume_checkpoint(
            True, runs_root, task, current_run, "nn/*.pth", run_filter=run_filter
        )
        return newest_checkpoint(run.parent.parent) or run
    return find_resume_checkpoint(path, runs_root, task, current_run, "*.pth")


def load_player(env: ManagerBasedRLEnv, checkpoint: Path, agent: dict[str, Any]):
    """rl-games' player of the checkpoint on `env` (batched observations, torch)."""
    wrapper = RlGamesVecEnvWrapper(env)
    params = copy.deepcopy(
        {k: v for k, v in agent.items() if k not in ("library", "max_iterations", "save_interval")}
    )
    params["config"].update(
        num_actors=env.num_envs,
        device=str(env.device),
        device_name=str(env.device),
        env_info=wrapper.get_env_info(),
    )
    if params.get("torch_threads") == "auto":
        params["torch_threads"] = 0
    runner = Runner()
    runner.load({"params": params})
    player = runner.create_player()
    player.restore(str(checkpoint))
    player.has_batch_dimension = True
    return player


def load_policy(env: ManagerBasedRLEnv, checkpoint: Path, agent: dict[str, Any]):
    """The checkpoint's deterministic actor (mean action) as `policy() -> actions`."""
    player = load_player(env, checkpoint, agent)

    def policy() -> torch.Tensor:
        obs = env.obs_buf["policy"].to(dtype=torch.float32)
        with torch.inference_mode():
            return player.get_action(obs, is_deterministic=True)

    return policy
