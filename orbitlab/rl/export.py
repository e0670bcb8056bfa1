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

with `rtol = DEFAULT_RTOL = 1e-5` (why that bound: `orbitlab.rl.exporters.verify`).

Libraries: rsl-rl checkpoints of `scripts/train.py` runs (`model_<it>.pt` beside
`.hydra/config.yaml`, loaded weights-only), Stable-Baselines3 PPO / SAC models (`.zip`,
with the run config passed as a dict, or none) and rl-games checkpoints of
`scripts/train.py` runs (`<run>/nn/*.pth`; feed-forward a2c_continuous actors: observation
normalizer, actor MLP, mu, the player's clamp to the action bounds). SB3 and rl-games
files are unpickled, so only with `trust_checkpoint=True`.

This module is the orchestration (which library, where the files go, write, check,
replace); the pieces live in `orbitlab.rl.exporters` (one module per library's source,
`files` for writing, `verify` for the check) and their public names are re-exported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orbitlab.rl.exporters.common import (
    ROLLOUT_STEPS,
    PolicySource,
    Reference,
    task_observations,
)
from orbitlab.rl.exporters.files import (
    EXPORT_HINT,
    INPUT_NAME,
    OPSET,
    OUTPUT_NAME,
    require_onnx,
    temp_path,
    write_onnx,
    write_torchscript,
)
from orbitlab.rl.exporters.quiet import QUIET_LOGGERS
from orbitlab.rl.exporters.rl_games import (
    RL_GAMES_EXPORTABLE,
    RL_GAMES_OBS_CLIP,
    rl_games_module,
    rl_games_source,
)
from orbitlab.rl.exporters.rsl_rl import rsl_rl_source
from orbitlab.rl.exporters.sb3 import sb3_source
from orbitlab.rl.exporters.verify import (
    DEFAULT_RTOL,
    ExportMismatchError,
    action_tolerance,
    check_observations,
    max_difference,
    run_onnx,
    run_torchscript,
    verify_exports,
)

__all__ = [
    "DEFAULT_RTOL",
    "EXPORT_HINT",
    "INPUT_NAME",
    "OPSET",
    "OUTPUT_NAME",
    "QUIET_LOGGERS",
    "RL_GAMES_EXPORTABLE",
    "RL_GAMES_OBS_CLIP",
    "ROLLOUT_STEPS",
    "ExportMismatchError",
    "ExportResult",
    "PolicySource",
    "Reference",
    "action_tolerance",
    "check_observations",
    "default_export_dir",
    "export_policy",
    "load_source",
    "max_difference",
    "rl_games_module",
    "rl_games_source",
    "rsl_rl_source",
    "run_onnx",
    "run_torchscript",
    "sb3_source",
    "task_observations",
    "verify_exports",
    "write_onnx",
    "write_torchscript",
]


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


_SOURCES = {"rsl_rl": rsl_rl_source, "sb3": sb3_source, "rl_games": rl_games_source}


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
    by more than `rtol` of the action scale (`orbitlab.rl.exporters.verify`). rsl-rl
    checkpoints load weights-only; SB3 models and `vec_normalize` are pickles and need
    `trust_checkpoint`.
    """
    require_onnx()
    checkpoint = Path(checkpoint)
    source = load_source(checkpoint, run_cfg, num_real_obs, vec_normalize, trust_checkpoint)
    out = Path(out_dir) if out_dir is not None else default_export_dir(checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    jit_path, onnx_path = out / "policy.pt", out / "policy.onnx"
    tmp_jit, tmp_onnx = temp_path(jit_path), temp_path(onnx_path)
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
