"""Write an actor module to TorchScript and ONNX files.

The ONNX model (opset `OPSET` = 18) has the input 'obs' (batch, obs_dim) and the output
'actions' (batch, action_dim), both with a dynamic batch dimension. Files are written
under a temporary sibling name first (`temp_path`) so that os.replace can move them into
place atomically once they pass the check. onnx and onnxruntime are optional (the
`[export]` extra) and imported only when needed (`require_onnx`).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from orbitlab.rl.exporters.quiet import quiet

EXPORT_HINT = "pip install 'orbitlab-sim[export]'"
OPSET = 18
INPUT_NAME, OUTPUT_NAME = "obs", "actions"


def require_onnx() -> tuple[Any, Any]:
    """(onnx, onnxruntime), or an ImportError that names the extra to install."""
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        raise ImportError(
            f"exporting to ONNX needs onnx, onnxscript and onnxruntime: {EXPORT_HINT}"
        ) from exc
    return onnx, onnxruntime


def temp_path(final: Path) -> Path:
    """A temporary sibling of `final` (same directory, so os.replace stays atomic)."""
    return final.with_name(f".{final.stem}.{os.getpid()}.tmp{final.suffix}")


def write_torchscript(module: nn.Module, path: Path) -> None:
    """Script `module` and save it to `path`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch >= 2.10 deprecates jit
        torch.jit.script(module).save(str(path))


def write_onnx(module: nn.Module, obs_dim: int, path: Path) -> None:
    """Export `module` to ONNX at `path`: input 'obs', output 'actions', dynamic batch."""
    require_onnx()
    batch = torch.export.Dim("batch")
    with quiet():
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
