"""Check written exports against the checkpoint's own actor.

An export passes when, on every checked observation,

    max |exported action - checkpoint action| <= rtol * max(1, max |checkpoint action|)

with `rtol = DEFAULT_RTOL = 1e-5`: the scale is the action range of orbitlab's tasks
([-1, 1]), or the actor's largest output if that is wider. float32 keeps ~7 digits
and a re-ordered matrix product loses a few of them, so exports of the same network
differ by ~1e-7 of the scale; 1e-5 is ~100x that and far below any difference a
policy's behaviour would show (a perturbed weight of 1e-3 is caught).

The files are reloaded from disk: TorchScript with torch.jit.load, ONNX with onnxruntime
on the CPU (after onnx's model checker).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

from orbitlab.rl.exporters.common import Reference
from orbitlab.rl.exporters.files import INPUT_NAME, OUTPUT_NAME, require_onnx

DEFAULT_RTOL = 1e-5
"""Allowed export error, relative to the action scale (see the module docstring)."""


class ExportMismatchError(RuntimeError):
    """An exported model does not reproduce the checkpoint's actions."""


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
    onnx, onnxruntime = require_onnx()
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
