"""Export a trained policy to TorchScript and ONNX, and check the exports against it.

    from orbitlab.rl.export import export_policy
    result = export_policy("runs/Detumble-RW/<time>/model_99.pt")
    print(result.jit_path, result.onnx_path, result.max_diff_jit, result.max_diff_onnx)

The exported module maps a float32 observation batch (batch, obs_dim) - the actor's
observation groups concatenated in order ('policy' for orbitlab tasks) - to the
deterministic actions (batch, action_dim): the mean of the trained Gaussian, before any
clipping of the env wrapper. Observation normalization is part of the module. The ONNX
model (opset 18) has the input 'obs' and the output 'actions', both with a dynamic batch
dimension.

Both files go to `<run dir>/exported/` (default) under temporary names first and are
renamed into place (os.replace) only once they reproduce the checkpoint's actor within
the tolerance; otherwise `ExportMismatchError` is raised and nothing replaces earlier
exports.

The check runs on observations of the run's own task: `num_real_obs` worlds reset and
then driven by the policy itself for `ROLLOUT_STEPS` steps (standard normal ones only
when the run names no task). An export passes when, on every checked observation,

    max |exported action - checkpoint action| <= rtol * max(1, max |checkpoint action|)

with `rtol = DEFAULT_RTOL = 1e-5`: the scale is the action range of orbitlab's tasks
([-1, 1]), or the actor's largest output if that is wider. float32 keeps ~7 digits
and a re-ordered matrix product loses a few of them, so exports of the same network
differ by ~1e-7 of the scale; 1e-5 is ~100x that and far below any difference a
policy's behaviour would show (a perturbed weight of 1e-3 is caught).

Libraries: rsl-rl checkpoints of `scripts/train.py` runs (`model_<it>.pt` beside
`.hydra/config.yaml`, loaded weights-only), Stable-Baselines3 PPO / SAC models (`.zip`,
with the run config passed as a dict, or none) and rl-games checkpoints of
`scripts/train.py` runs (`<run>/nn/*.pth`; feed-forward a2c_continuous actors: observation
normalizer, actor MLP, mu, the player's clamp to the action bounds). SB3 and rl-games
files are unpickled, so only with `trust_checkpoint=True`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from orbitlab.rl.checkpoints import require_trust

EXPORT_HINT = "pip install 'orbitlab-sim[export]'"
OPSET = 18
INPUT_NAME, OUTPUT_NAME = "obs", "actions"
DEFAULT_RTOL = 1e-5
"""Allowed export error, relative to the action scale (see the module docstring)."""
ROLLOUT_STEPS = 8
"""Policy steps after the reset whose observations join the check."""

Reference = Callable[[torch.Tensor], torch.Tensor]
"""The checkpoint's own deterministic actor: (batch, obs_dim) -> (batch, action_dim)."""


class ExportMismatchError(RuntimeError):
    """An exported model does not reproduce the checkpoint's actions."""


@dataclass(frozen=True)
class ExportResult:
    """Where the exports went and how closely they match the checkpoint's actor."""

    jit_path: Path
    onnx_path: Path
    library: str
    obs_dim: int
    action_dim: int
    num_obs_checked: int
    max_diff_jit: float
    max_diff_onnx: float
    tolerance: float
    """The absolute bound that was applied: rtol times the action scale."""


@dataclass
class PolicySource:
    """What an exporter needs from one library's checkpoint.

    `module` maps (batch, obs_dim) float32 observations to deterministic actions and is
    what gets exported; `reference` is the library's own inference path, the yardstick;
    `real_obs` holds observations of freshly reset worlds of the run's task (or None).
    """

    library: str
    module: nn.Module
    obs_dim: int
    reference: Reference
    real_obs: torch.Tensor | None = None


# ------------------------------------------------------------------ dependencies
def _require_onnx() -> tuple[Any, Any]:
    """(onnx, onnxruntime), or an ImportError that names the extra to install."""
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        raise ImportError(
            f"exporting to ONNX needs onnx, onnxscript and onnxruntime: {EXPORT_HINT}"
        ) from exc
    return onnx, onnxruntime


QUIET_LOGGERS = ("torch.onnx", "onnxscript", "onnx_ir")
"""Loggers whose INFO lines (optimizer passes, rewrite rules) an export hides."""


@contextlib.contextmanager
def _quiet():
    """Swallow the chatter of rsl-rl's runner and torch.onnx (stdout, warnings, the INFO
    logs of torch.onnx, onnxscript and onnx_ir)."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


# ------------------------------------------------------------------ run configs
def _load_run_config(checkpoint: Path, run_cfg: dict[str, Any] | None) -> dict[str, Any]:
    """The given run config, else the one saved beside `checkpoint` (`.hydra/config.yaml`)."""
    if run_cfg is not None:
        return run_cfg
    if checkpoint.suffix == ".zip":
        saved = checkpoint.resolve().parent / ".hydra" / "config.yaml"
        if not saved.is_file():
            return {"agent": {"library": "sb3"}}
    from orbitlab.rl.policies import run_config

    return run_config(checkpoint)


def _library(checkpoint: Path, run_cfg: dict[str, Any]) -> str:
    """The library that wrote `checkpoint` (run config's agent.library; .zip: sb3)."""
    library = (run_cfg.get("agent") or {}).get("library")
    if library is None and checkpoint.suffix == ".zip":
        library = "sb3"
    if not isinstance(library, str) or library not in _SOURCES:
        raise ValueError(
            f"cannot export a policy trained with agent.library={library!r}: "
            f"expected one of {', '.join(_SOURCES)}"
        )
    return library


def _task_env(run_cfg: dict[str, Any], num_envs: int):
    """A CPU env of the run's task with `num_envs` worlds, or None if the config has no task."""
    task = (run_cfg.get("task") or {}).get("name")
    if not task:
        return None
    from orbitlab.registry import make_env

    return make_env(
        task,
        num_envs,
        backend="cpu",
        seed=int(run_cfg.get("seed") or 0) + 12345,
        env=run_cfg.get("env") or {},
    )


# ------------------------------------------------------------------ rsl-rl
def _split_groups(obs: torch.Tensor, groups: list[str], dims: list[int]):
    """The concatenated (batch, obs_dim) observations as rsl-rl's TensorDict of groups."""
    from tensordict import TensorDict

    parts = torch.split(obs, dims, dim=-1)
    return TensorDict(dict(zip(groups, parts, strict=True)), batch_size=[obs.shape[0]])


def rsl_rl_source(
    checkpoint: Path, run_cfg: dict[str, Any], num_real_obs: int = 16
) -> PolicySource:
    """The actor of an rsl-rl checkpoint, rebuilt as `orbitlab.rl.rsl_rl.load_policy` does.

    The export module is rsl-rl's own TorchScript-ready copy of the actor (`as_jit()`:
    observation normalizer, MLP, deterministic output). Needs the run's task for the
    observation layout; `num_real_obs` worlds are reset for real observations.
    """
    from orbitlab.rl.policies import require_loadable_agent
    from orbitlab.rl.rsl_rl import (
        OrbitlabOnPolicyRunner,
        RslRlVecEnvWrapper,
        runner_cfg_from_agent,
    )

    require_loadable_agent(run_cfg.get("agent") or {}, checkpoint)
    env = _task_env(run_cfg, max(1, num_real_obs))
    if env is None:
        raise ValueError("an rsl-rl export needs the run config's task.name")
    try:
        wrapper = RslRlVecEnvWrapper(env)
        with _quiet():
            runner = OrbitlabOnPolicyRunner(
                wrapper, runner_cfg_from_agent(run_cfg["agent"], env), log_dir=None, device="cpu"
            )
        runner.load(str(checkpoint), map_location="cpu")
        actor = runner.get_inference_policy(device="cpu")
        if getattr(actor, "is_recurrent", False) or not hasattr(actor, "as_jit"):
            raise ValueError(
                f"only feed-forward rsl-rl actors can be exported, got {type(actor).__name__}"
            )
        groups = list(actor.obs_groups)
        shapes = env.observation_manager.shapes
        dims = [int(np.prod(shapes[group])) for group in groups]

        def reference(batch: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():
                return actor(_split_groups(batch, groups, dims))

        real_obs = task_observations(env, groups, reference)
    finally:
        env.close()

    module = actor.as_jit().to("cpu").eval()
    return PolicySource(
        "rsl_rl", module, int(actor.obs_dim), reference, real_obs if num_real_obs > 0 else None
    )


# ------------------------------------------------------------------ stable-baselines3
class _ObsNormalizer(nn.Module):
    """SB3 VecNormalize's observation step: clip((obs - mean) / sqrt(var + eps), +-clip)."""

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).reshape(1, -1))
        self.register_buffer(
            "std",
            torch.sqrt(torch.as_tensor(var, dtype=torch.float32) + float(epsilon)).reshape(1, -1),
        )
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)


class _Sb3PpoActor(nn.Module):
    """Deterministic PPO actor: action_net(mlp_extractor's policy branch(features))."""

    def __init__(self, policy, normalizer: nn.Module):
        super().__init__()
        self.normalizer = normalizer
        self.features = policy.pi_features_extractor
        self.latent = policy.mlp_extractor.policy_net
        self.action_net = policy.action_net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = self.normalizer(obs.float())
        return self.action_net(self.latent(self.features(obs)))


class _Sb3SacActor(nn.Module):
    """Deterministic SAC actor: tanh(mu(latent_pi(features)))."""

    def __init__(self, policy, normalizer: nn.Module):
        super().__init__()
        self.normalizer = normalizer
        self.features = policy.actor.features_extractor
        self.latent = policy.actor.latent_pi
        self.mu = policy.actor.mu

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = self.normalizer(obs.float())
        return torch.tanh(self.mu(self.latent(self.features(obs))))


def _sb3_model(checkpoint: Path):
    """The SB3 model (PPO or SAC, chosen by its saved policy class) on the CPU."""
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.save_util import load_from_zip_file
    from stable_baselines3.sac.policies import SACPolicy

    data, _, _ = load_from_zip_file(checkpoint, device="cpu", load_data=True)
    policy_class = (data or {}).get("policy_class")
    if isinstance(policy_class, type) and issubclass(policy_class, SACPolicy):
        return SAC.load(checkpoint, device="cpu")
    if isinstance(policy_class, type) and issubclass(policy_class, ActorCriticPolicy):
        return PPO.load(checkpoint, device="cpu")
    raise ValueError(f"'{checkpoint}' is no SB3 PPO or SAC model (policy class {policy_class!r})")


def _sb3_normalizer(vec_normalize: Path | None) -> tuple[nn.Module, Callable | None]:
    """(export module, numpy reference) of a saved VecNormalize's observation scaling."""
    if vec_normalize is None:
        return nn.Identity(), None
    with open(vec_normalize, "rb") as file:
        stats = pickle.load(file)
    if not getattr(stats, "norm_obs", False):
        return nn.Identity(), None
    if isinstance(stats.obs_rms, dict):
        raise TypeError("VecNormalize of dict observations cannot be exported")
    module = _ObsNormalizer(stats.obs_rms.mean, stats.obs_rms.var, stats.epsilon, stats.clip_obs)
    return module, stats.normalize_obs


def sb3_source(
    checkpoint: Path,
    run_cfg: dict[str, Any],
    num_real_obs: int = 16,
    vec_normalize: Path | None = None,
    trust_checkpoint: bool = False,
) -> PolicySource:
    """The deterministic actor of a Stable-Baselines3 PPO or SAC model (`.zip`).

    SB3's observation preprocessing is included: the float cast and flattening of a Box
    observation and, with `vec_normalize` (a pickled VecNormalize), its observation
    normalization. PPO gives the unclipped Gaussian mean, SAC the tanh-squashed one.
    Both files are unpickled, which can run code: UntrustedCheckpointError unless
    `trust_checkpoint`.
    """
    import gymnasium as gym
    from stable_baselines3 import SAC

    require_trust(checkpoint, trust_checkpoint, "the Stable-Baselines3 model")
    if vec_normalize is not None:
        require_trust(vec_normalize, trust_checkpoint, "the VecNormalize pickle")
    model = _sb3_model(checkpoint)
    policy = model.policy
    policy.set_training_mode(False)
    if not isinstance(policy.observation_space, gym.spaces.Box):
        raise TypeError(f"only Box observations can be exported, got {policy.observation_space}")
    normalizer, normalize_np = _sb3_normalizer(vec_normalize)
    actor_class = _Sb3SacActor if isinstance(model, SAC) else _Sb3PpoActor
    module = actor_class(policy, normalizer).eval()

    def reference(batch: torch.Tensor) -> torch.Tensor:
        obs = batch.cpu().numpy()
        if normalize_np is not None:
            obs = normalize_np(obs)
        with torch.no_grad():
            return policy._predict(torch.as_tensor(obs, dtype=torch.float32), deterministic=True)

    obs_dim = int(np.prod(policy.observation_space.shape))
    return PolicySource(
        "sb3", module, obs_dim, reference, _sb3_real_obs(run_cfg, num_real_obs, reference)
    )


def _sb3_real_obs(
    run_cfg: dict[str, Any], num_real_obs: int, reference: Reference
) -> torch.Tensor | None:
    """'policy' observations of the run's task driven by the actor, if it names a task."""
    env = _task_env(run_cfg, num_real_obs) if num_real_obs > 0 else None
    if env is None:
        return None
    try:
        return task_observations(env, ["policy"], reference)
    finally:
        env.close()


# ------------------------------------------------------------------ rl-games
class _RlGamesActor(nn.Module):
    """Deterministic rl-games a2c_continuous actor: the observation normalizer
    (clip((obs - mean) / sqrt(var + eps), +-5)), the actor MLP, mu, and the player's
    clamp to [-1, 1] rescaled to the action bounds when `clip_actions`."""

    def __init__(self, network, normalizer: nn.Module, bounds: tuple[torch.Tensor, ...] | None):
        super().__init__()
        self.normalizer = normalizer
        self.mlp = network.actor_mlp
        self.mu = network.mu
        self.mu_act = network.mu_act
        self.clip = bounds is not None
        low, high = bounds if bounds is not None else (torch.zeros(1), torch.zeros(1))
        self.register_buffer("low", low.detach().to("cpu", torch.float32).reshape(1, -1))
        self.register_buffer("high", high.detach().to("cpu", torch.float32).reshape(1, -1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        actions = self.mu_act(self.mu(self.mlp(self.normalizer(obs.float()))))
        if self.clip:
            actions = torch.clamp(actions, -1.0, 1.0)
            actions = actions * (self.high - self.low) / 2.0 + (self.high + self.low) / 2.0
        return actions


RL_GAMES_EXPORTABLE = "feed-forward a2c_continuous actors (actor_critic MLP, no RNN or CNN)"


def rl_games_module(player) -> nn.Module:
    """The export module of an rl-games player; ValueError for what it cannot express."""
    model = player.model
    network = getattr(model, "a2c_network", None)
    shape = {
        name: getattr(network, name, None)
        for name in ("is_continuous", "has_rnn", "has_cnn", "actor_mlp", "mu", "mu_act")
    }
    if (
        shape["is_continuous"] is not True
        or shape["has_rnn"] is not False
        or shape["has_cnn"] is not False
        or any(shape[name] is None for name in ("actor_mlp", "mu", "mu_act"))
    ):
        raise ValueError(
            f"cannot export rl-games model {type(network).__name__}: only "
            f"{RL_GAMES_EXPORTABLE} are supported"
        )
    normalizer: nn.Module = nn.Identity()
    if getattr(model, "normalize_input", False):
        stats = model.running_mean_std
        if getattr(stats, "norm_only", False) or getattr(stats, "per_channel", False):
            raise ValueError(
                "cannot export an rl-games observation normalizer with norm_only or "
                "per_channel: only the default (mean, variance, clip 5) is supported"
            )
        normalizer = _ObsNormalizer(
            stats.running_mean.cpu().numpy(),
            stats.running_var.cpu().numpy(),
            float(stats.epsilon),
            RL_GAMES_OBS_CLIP,
        )
    bounds = (player.actions_low, player.actions_high) if player.clip_actions else None
    return _RlGamesActor(network, normalizer, bounds).to("cpu").eval()


RL_GAMES_OBS_CLIP = 5.0
"""rl-games' RunningMeanStd clamps normalized observations to [-5, 5]."""


def rl_games_source(
    checkpoint: Path,
    run_cfg: dict[str, Any],
    num_real_obs: int = 16,
    trust_checkpoint: bool = False,
) -> PolicySource:
    """The deterministic actor of an rl-games checkpoint (`<run>/nn/*.pth`) of a
    `scripts/train.py` run: the player's mean action, as `orbitlab play` uses it.

    The checkpoint is a pickle, which can run code: UntrustedCheckpointError unless
    `trust_checkpoint`. Needs the run's task (observation and action spaces)."""
    from orbitlab.rl.policies import require_loadable_agent
    from orbitlab.rl.train.rl_games import load_player

    require_trust(checkpoint, trust_checkpoint, "the rl-games checkpoint")
    require_loadable_agent(run_cfg.get("agent") or {}, checkpoint)
    env = _task_env(run_cfg, max(1, num_real_obs))
    if env is None:
        raise ValueError("an rl-games export needs the run config's task.name")
    try:
        with _quiet():
            player = load_player(env, checkpoint, run_cfg["agent"])
        module = rl_games_module(player)

        def reference(batch: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():
                return player.get_action(batch.to(env.device), is_deterministic=True).cpu()

        real_obs = task_observations(env, ["policy"], reference)
        obs_dim = int(np.prod(env.observation_manager.shapes["policy"]))
    finally:
        env.close()
    return PolicySource(
        "rl_games", module, obs_dim, reference, real_obs if num_real_obs > 0 else None
    )


def task_observations(
    env, groups: list[str], reference: Reference, steps: int = ROLLOUT_STEPS
) -> torch.Tensor:
    """(num_envs * (steps + 1), obs_dim) observations of `env`: the reset ones, then those
    of `steps` steps driven by `reference` (actions clamped to the tasks' [-1, 1])."""
    obs, _ = env.reset()
    batches = []
    for step in range(steps + 1):
        flat = torch.cat([obs[group].reshape(env.num_envs, -1) for group in groups], dim=-1)
        batches.append(flat.to("cpu", torch.float32))
        if step < steps:
            actions = reference(batches[-1]).to(env.device).clamp(-1.0, 1.0)
            obs, *_ = env.step(actions)
    return torch.cat(batches)


_SOURCES = {"rsl_rl": rsl_rl_source, "sb3": sb3_source, "rl_games": rl_games_source}


# ------------------------------------------------------------------ writing
def _temp_path(final: Path) -> Path:
    """A temporary sibling of `final` (same directory, so os.replace stays atomic)."""
    return final.with_name(f".{final.stem}.{os.getpid()}.tmp{final.suffix}")


def write_torchscript(module: nn.Module, path: Path) -> None:
    """Script `module` and save it to `path`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch >= 2.10 deprecates jit
        torch.jit.script(module).save(str(path))


def write_onnx(module: nn.Module, obs_dim: int, path: Path) -> None:
    """Export `module` to ONNX at `path`: input 'obs', output 'actions', dynamic batch."""
    _require_onnx()
    batch = torch.export.Dim("batch")
    with _quiet():
        torch.onnx.export(
            module,
            (torch.zeros(2, obs_dim),),
            str(path),
            input_names=[INPUT_NAME],
            output_names=[OUTPUT_NAME],
            opset_version=OPSET,
            dynamic_shapes=({0: batch},),
            external_data=False,
            verbose=False,
        )


# ------------------------------------------------------------------ verification
def check_observations(
    obs_dim: int, num_random: int = 256, real_obs: torch.Tensor | None = None, seed: int = 0
) -> torch.Tensor:
    """The task's own observations `real_obs` if there are any, else `num_random` standard
    normal ones (a run that names no task)."""
    if real_obs is not None and real_obs.numel():
        return real_obs.reshape(-1, obs_dim).to(torch.float32)
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(num_random, obs_dim, generator=generator)


def action_tolerance(expected: torch.Tensor, rtol: float = DEFAULT_RTOL) -> float:
    """The absolute bound for export errors: `rtol` times the action scale, which is
    max(1, max |expected|) (orbitlab's actions span [-1, 1])."""
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return rtol * scale


def run_torchscript(path: Path, obs: torch.Tensor) -> torch.Tensor:
    """Actions of the TorchScript file at `path`, reloaded from disk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path), map_location="cpu").eval()
    with torch.no_grad():
        return module(obs)


def run_onnx(path: Path, obs: torch.Tensor) -> torch.Tensor:
    """Actions of the ONNX file at `path`, run with onnxruntime (CPU)."""
    onnx, onnxruntime = _require_onnx()
    onnx.checker.check_model(str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (actions,) = session.run([OUTPUT_NAME], {INPUT_NAME: obs.numpy().astype(np.float32)})
    return torch.from_numpy(actions)


def max_difference(actions: torch.Tensor, expected: torch.Tensor, what: str) -> float:
    """max |actions - expected|; ExportMismatchError on a shape mismatch or non-finite values."""
    if tuple(actions.shape) != tuple(expected.shape):
        raise ExportMismatchError(
            f"{what} gives actions of shape {tuple(actions.shape)}, "
            f"the checkpoint {tuple(expected.shape)}"
        )
    diff = (actions.double() - expected.double()).abs().max().item()
    if not np.isfinite(diff):
        raise ExportMismatchError(f"{what} gives non-finite actions")
    return float(diff)


def verify_exports(
    reference: Reference,
    jit_path: Path,
    onnx_path: Path,
    obs: torch.Tensor,
    rtol: float = DEFAULT_RTOL,
) -> tuple[float, float, float]:
    """(max diff TorchScript, max diff ONNX, tolerance) against `reference` on `obs`; the
    tolerance is `action_tolerance(reference actions, rtol)`.

    Raises ExportMismatchError if either difference exceeds it.
    """
    expected = reference(obs).detach().to("cpu", torch.float32)
    tolerance = action_tolerance(expected, rtol)
    diff_jit = max_difference(run_torchscript(jit_path, obs), expected, "the TorchScript export")
    diff_onnx = max_difference(run_onnx(onnx_path, obs), expected, "the ONNX export")
    bad = [
        f"{name} differs by {diff:.3g}"
        for name, diff in (("TorchScript", diff_jit), ("ONNX", diff_onnx))
        if not diff <= tolerance
    ]
    if bad:
        raise ExportMismatchError(
            f"exported policy does not match the checkpoint's actor on "
            f"{obs.shape[0]} observations: {'; '.join(bad)} "
            f"(tolerance {tolerance:.3g} = {rtol:g} of the action "
            f"scale)"
        )
    return diff_jit, diff_onnx, tolerance


# ------------------------------------------------------------------ entry point
def load_source(
    checkpoint: str | Path,
    run_cfg: dict[str, Any] | None = None,
    num_real_obs: int = 16,
    vec_normalize: str | Path | None = None,
    trust_checkpoint: bool = False,
) -> PolicySource:
    """The exportable actor of `checkpoint`, whichever library trained it."""
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise FileNotFoundError(f"checkpoint '{checkpoint}' does not exist or is no file")
    run_cfg = _load_run_config(checkpoint, run_cfg)
    library = _library(checkpoint, run_cfg)
    if library == "sb3":
        return sb3_source(
            checkpoint,
            run_cfg,
            num_real_obs,
            None if vec_normalize is None else Path(vec_normalize),
            trust_checkpoint,
        )
    if vec_normalize is not None:
        raise ValueError("vec_normalize applies to Stable-Baselines3 models only")
    if library == "rl_games":
        return rl_games_source(checkpoint, run_cfg, num_real_obs, trust_checkpoint)
    return _SOURCES[library](checkpoint, run_cfg, num_real_obs)


def default_export_dir(checkpoint: Path) -> Path:
    """`<run dir>/exported`: the checkpoint's folder, or the run above rl-games' `nn/`."""
    folder = checkpoint.resolve().parent
    if folder.name == "nn" and (folder.parent / ".hydra").is_dir():
        folder = folder.parent
    return folder / "exported"


def export_policy(
    checkpoint: str | Path,
    out_dir: str | Path | None = None,
    *,
    run_cfg: dict[str, Any] | None = None,
    rtol: float = DEFAULT_RTOL,
    num_random_obs: int = 256,
    num_real_obs: int = 16,
    vec_normalize: str | Path | None = None,
    trust_checkpoint: bool = False,
) -> ExportResult:
    """Write `policy.pt` (TorchScript) and `policy.onnx` of `checkpoint`'s deterministic actor.

    `out_dir` defaults to `<run dir>/exported` (the checkpoint's directory, or the run
    directory above rl-games' `nn/`). `run_cfg` is the run's
    train config (default: the `.hydra/config.yaml` beside the checkpoint; an SB3 `.zip`
    needs none). The files are checked against the checkpoint's actor on the task's
    observations (`num_real_obs` worlds; `num_random_obs` standard normal ones if the run
    names no task) before they replace earlier exports; ExportMismatchError if they differ
    by more than `rtol` of the action scale (module docstring). rsl-rl checkpoints load
    weights-only; SB3 models and `vec_normalize` are pickles and need `trust_checkpoint`.
    """
    _require_onnx()
    checkpoint = Path(checkpoint)
    source = load_source(checkpoint, run_cfg, num_real_obs, vec_normalize, trust_checkpoint)
    out = Path(out_dir) if out_dir is not None else default_export_dir(checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    jit_path, onnx_path = out / "policy.pt", out / "policy.onnx"
    tmp_jit, tmp_onnx = _temp_path(jit_path), _temp_path(onnx_path)
    try:
        write_torchscript(source.module, tmp_jit)
        write_onnx(source.module, source.obs_dim, tmp_onnx)
        obs = check_observations(source.obs_dim, num_random_obs, source.real_obs)
        diff_jit, diff_onnx, tolerance = verify_exports(
            source.reference, tmp_jit, tmp_onnx, obs, rtol
        )
        os.replace(tmp_jit, jit_path)
        os.replace(tmp_onnx, onnx_path)
    finally:
        for tmp in (tmp_jit, tmp_onnx):
            tmp.unlink(missing_ok=True)
    action_dim = int(source.reference(obs[:1]).shape[-1])
    return ExportResult(
        jit_path,
        onnx_path,
        source.library,
        source.obs_dim,
        action_dim,
        int(obs.shape[0]),
        diff_jit,
        diff_onnx,
        tolerance,
    )
