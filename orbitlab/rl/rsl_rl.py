"""rsl-rl (`rsl-rl-lib` 5.x) front end of a ManagerBasedRLEnv.

`RslRlVecEnvWrapper(env)` implements rsl-rl's `VecEnv`: observations are a
`TensorDict` of the env's observation groups ('policy', 'critic', ...) in float32,
`step(actions)` returns `(obs, rewards, dones, extras)` with `dones` = terminated or
truncated (long), `extras["time_outs"]` (truncations, for value bootstrapping) and
`extras["log"]` (episode statistics of the envs reset in that step).

`ppo_runner_cfg(...)` gives a runner config dict for `rsl_rl.runners.OnPolicyRunner`::

    from rsl_rl.runners import OnPolicyRunner
    runner = OnPolicyRunner(RslRlVecEnvWrapper(env), ppo_runner_cfg(), device=str(env.device))
    runner.learn(100)
    policy = runner.get_inference_policy()   # policy(obs_tensordict) -> actions
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

import torch

try:
    from rsl_rl.env import VecEnv
    from rsl_rl.runners import OnPolicyRunner
    from tensordict import TensorDict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] not in ("rsl_rl", "tensordict"):
        raise  # installed but failing: its own error, not a false 'install it' hint
    raise ImportError(
        "orbitlab.rl.rsl_rl needs rsl-rl-lib: pip install 'orbitlab-sim[rsl-rl]'"
    ) from exc

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.checkpoints import CheckpointError, load_torch_checkpoint, save_torch_checkpoint
from orbitlab.rl.train.interrupt import raise_if_requested


class RslRlVecEnvWrapper(VecEnv):
    """A ManagerBasedRLEnv as an rsl-rl vectorized environment.

    `clip_actions`: actions are clamped to [-clip_actions, clip_actions] before they
    reach the env (None: passed through unclipped).
    """

    def __init__(self, env: ManagerBasedRLEnv, clip_actions: float | None = 1.0):
        if clip_actions is not None and clip_actions <= 0:
            raise ValueError(f"clip_actions must be positive or None, got {clip_actions}")
        self.env = env
        self.clip_actions = None if clip_actions is None else float(clip_actions)
        self.num_envs = env.num_envs
        self.num_actions = env.action_manager.total_dim
        self.max_episode_length = env.max_episode_length
        self.device = env.device
        self.cfg = env.cfg

    # ----------------------------------------------------------- properties
    @property
    def episode_length_buf(self) -> torch.Tensor:
        """The env's step counter of the current episode, (num_envs,) long."""
        return self.env.episode_length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # in place, so that the env's own references stay valid
        self.env.episode_length_buf[:] = torch.as_tensor(value, device=self.device)

    @property
    def unwrapped(self) -> ManagerBasedRLEnv:
        return self.env

    # ----------------------------------------------------------------- loop
    def _obs(self, obs: dict[str, torch.Tensor]) -> TensorDict:
        return TensorDict(
            {name: value.to(dtype=torch.float32) for name, value in obs.items()},
            batch_size=[self.num_envs],
            device=self.device,
        )

    def get_observations(self) -> TensorDict:
        """The current observations of every group (no env step)."""
        return self._obs(self.env.obs_buf)

    def reset(self) -> tuple[TensorDict, dict[str, Any]]:
        """Reset every env; returns (observations, extras)."""
        obs, extras = self.env.reset()
        return self._obs(obs), extras

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        raise_if_requested()  # Ctrl-C during training stops here (orbitlab.rl.train.interrupt)
        actions = torch.as_tensor(actions, device=self.device, dtype=torch.float32)
        if self.clip_actions is not None:
            actions = actions.clamp(-self.clip_actions, self.clip_actions)
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        dones = (terminated | truncated).to(dtype=torch.long)
        extras = dict(extras)
        extras["time_outs"] = truncated
        extras.setdefault("log", {})
        return self._obs(obs), reward.to(dtype=torch.float32), dones, extras

    def close(self) -> None:
        self.env.close()


class OrbitlabOnPolicyRunner(OnPolicyRunner):
    """rsl-rl's runner, with CPU (gloo) multi-process training, one tensorboard writer
    per run and checkpoints that say whether they can resume the run exactly."""

    def __init__(self, env: Any, train_cfg: dict, *args: Any, **kwargs: Any):
        self.resumable = False
        train_cfg = dict(train_cfg)
        mean_scale = train_cfg.pop("init_mean_scale", None)
        super().__init__(env, train_cfg, *args, **kwargs)
        if mean_scale is not None:
            scale_initial_mean(self.alg.actor, float(mean_scale))
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
        self.cfg["multi_gpu"] = {
            "global_rank": self.gpu_global_rank,
            "local_rank": self.gpu_local_rank,
            "world_size": world_size,
        }
        cuda = str(self.device).startswith("cuda")
        if cuda and self.device != f"cuda:{self.gpu_local_rank}":
            raise ValueError(
                f"device '{self.device}' is not this rank's 'cuda:{self.gpu_local_rank}'"
            )
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(
                "nccl" if cuda else "gloo", rank=self.gpu_global_rank, world_size=world_size
            )

    def save(self, path: str, infos: dict | None = None) -> None:
        """rsl-rl's `save` (the algorithm's state, `iter`, `infos` with `resumable`), written
        atomically (`save_torch_checkpoint`): a run killed mid-write never leaves a torn
        `model_*.pt` for a resume to pick up. Built from rsl-rl's public pieces
        (`alg.save()`, `logger.save_model`), as its own `save` writes in place."""
        state = self.alg.save()
        state["iter"] = self.current_learning_iteration
        state["infos"] = {"resumable": self.resumable, **(infos or {})}
        save_torch_checkpoint(state, path)
        self.logger.save_model(path, self.current_learning_iteration)

    def load(
        self,
        path: str,
        load_cfg: dict | None = None,
        strict: bool = True,
        map_location: str | None = None,
    ) -> dict:
        """rsl-rl's `load`, reading the file with `weights_only=True` (it unpickles with
        weights_only=False, which runs whatever a crafted file asks); CheckpointError when
        the file is unreadable or does not fit this runner's networks."""
        loaded = load_torch_checkpoint(path, map_location or "cpu")
        try:
            if self.alg.load(loaded, load_cfg, strict):
                self.current_learning_iteration = int(loaded["iter"])
        except (KeyError, RuntimeError, ValueError, TypeError) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise CheckpointError(
                f"checkpoint {path} does not fit this run's rsl-rl networks: {first}"
            ) from error
        return loaded.get("infos")


def scale_initial_mean(actor: torch.nn.Module, scale: float) -> None:
    """Scale the weights of the mean rows of the actor's output layer by `scale` and zero
    their biases: with a small scale (0.01) the new policy's mean action is ~0 in every
    state, so its first actions are the exploration noise alone, not a random function of
    the state of magnitude ~0.3 (which, on an actuator that delivers every request, acts
    as a bias: a torque that spins a spacecraft up)."""
    last = [m for m in actor.modules() if isinstance(m, torch.nn.Linear)][-1]
    rows = int(getattr(actor.distribution, "output_dim", None) or last.out_features)
    with torch.no_grad():
        last.weight[:rows] *= scale
        last.bias[:rows] = 0.0


def ppo_runner_cfg(
    num_steps_per_env: int = 32,
    hidden_dims: tuple[int, ...] = (64, 64),
    actor_groups: tuple[str, ...] = ("policy",),
    critic_groups: tuple[str, ...] = ("critic",),
    learning_rate: float = 1e-3,
    init_std: float = 0.5,
    obs_normalization: bool = True,
    save_interval: int = 50,
    init_mean_scale: float | None = None,
    **algorithm: Any,
) -> dict[str, Any]:
    """An rsl-rl 5.x `OnPolicyRunner` config for PPO with MLP actor and critic.

    The actor reads `actor_groups`, the critic `critic_groups` (orbitlab tasks have
    'policy' and the privileged 'critic'). Defaults suit small continuous-control
    tasks; `algorithm` overrides PPO's keyword arguments (gamma, entropy_coef, ...).
    `init_mean_scale` (None: rsl-rl's initialisation) scales the actor's initial mean
    output (`scale_initial_mean`; `OrbitlabOnPolicyRunner` applies it).
    """
    model = {
        "class_name": "MLPModel",
        "hidden_dims": list(hidden_dims),
        "activation": "elu",
        "obs_normalization": obs_normalization,
    }
    ppo = {
        "class_name": "PPO",
        "learning_rate": learning_rate,
        "num_learning_epochs": 5,
        "num_mini_batches": 4,
        "clip_param": 0.2,
        "gamma": 0.99,
        "lam": 0.95,
        "value_loss_coef": 1.0,
        "entropy_coef": 0.005,
        "max_grad_norm": 1.0,
        "use_clipped_value_loss": True,
        "schedule": "adaptive",
        "desired_kl": 0.01,
    }
    ppo.update(algorithm)
    extra = {} if init_mean_scale is None else {"init_mean_scale": float(init_mean_scale)}
    return {
        **extra,
        "num_steps_per_env": int(num_steps_per_env),
        "save_interval": int(save_interval),
        "obs_groups": {"actor": list(actor_groups), "critic": list(critic_groups)},
        "actor": {
            **model,
            "distribution_cfg": {
                "class_name": "GaussianDistribution",
                "init_std": init_std,
                "std_type": "scalar",
            },
        },
        "critic": dict(model),
        "algorithm": ppo,
    }


def runner_cfg_from_agent(agent: dict[str, Any], env: ManagerBasedRLEnv) -> dict[str, Any]:
    """The runner config for a `configs/agent/rsl_rl_ppo.yaml`-style mapping and `env`: the
    critic reads the env's 'critic' observation group, or 'policy' when it has none."""
    critic = "critic" if "critic" in env.cfg.observations else "policy"
    return ppo_runner_cfg(
        critic_groups=(critic,),
        num_steps_per_env=agent["num_steps_per_env"],
        hidden_dims=tuple(agent["hidden_dims"]),
        learning_rate=agent["learning_rate"],
        init_std=agent["init_std"],
        save_interval=agent["save_interval"],
        init_mean_scale=agent.get("init_mean_scale"),
        # optional PPO keyword overrides (gamma, entropy_coef, ...)
        **agent.get("algorithm", {}),
    )


def load_policy(env: ManagerBasedRLEnv, checkpoint: str, agent: dict[str, Any]):
    """A trained actor as `policy() -> actions` reading `env`'s current observations."""
    wrapper = RslRlVecEnvWrapper(env)
    # rsl-rl prints the whole network on every runner built: not for an evaluation
    with contextlib.redirect_stdout(io.StringIO()):
        runner = OrbitlabOnPolicyRunner(
            wrapper, runner_cfg_from_agent(agent, env), log_dir=None, device=str(env.device)
        )
    runner.load(checkpoint)
    actor = runner.get_inference_policy(device=str(env.device))

    def policy() -> torch.Tensor:
        with torch.inference_mode():
            return actor(wrapper.get_observations())

    return policy
