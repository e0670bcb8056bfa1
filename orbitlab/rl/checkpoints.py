"""Loading checkpoints without running code from them.

orbitlab's own rsl-rl checkpoints (`model_<it>.pt` of `scripts/train.py`) hold only tensors,
state dicts, ints, floats, strings and dicts (rsl-rl 5.x `OnPolicyRunner.save`: actor, critic
and optimizer state dicts, `iter`, and orbitlab's `infos` of plain values), so they load with
`torch.load(weights_only=True)`, which refuses any other pickled object instead of building
it. `SAFE_GLOBALS` is the allowlist of extra types beyond torch's own; it is empty because
orbitlab saves nothing else (`torch.serialization.get_unsafe_globals_in_checkpoint` lists
what a file would need).

Stable-Baselines3 zips (cloudpickle), rl-games checkpoints and VecNormalize pickles can only
be read by unpickling arbitrary objects, which can run any code the file's author chose.
They load only with `trust=True` (`trust_checkpoint=true` on command lines); otherwise
`UntrustedCheckpointError` says why.

`save_torch_checkpoint` writes a checkpoint atomically: a temporary sibling (a dot name,
which no `model_*.pt` pattern matches), flushed to disk, then `os.replace`. A process
killed mid-write (SIGKILL, power loss after the rename excepted) leaves the previous
checkpoint and no torn file under the final name.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from orbitlab.cli import UserError
from orbitlab.rl.exporters.files import temp_path

SAFE_GLOBALS: list[Any] = []
"""Types beyond torch's weights-only defaults that orbitlab's checkpoints hold (none)."""


class CheckpointError(UserError):
    """A checkpoint that cannot be read (missing, truncated, corrupted, not a checkpoint)."""


class UntrustedCheckpointError(UserError):
    """Loading this file would unpickle it, and it was not marked trusted."""


def load_torch_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu"
) -> dict[str, Any]:
    """The dict of an orbitlab torch checkpoint, loaded with `weights_only=True`.

    Raises CheckpointError naming the file when it is missing, not a torch file, corrupted,
    or holds objects other than weights and plain values (e.g. a crafted pickle).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist or is no file")
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            loaded = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            f"checkpoint {path} is not a readable checkpoint: {_refusal(error)}"
        ) from error
    except (KeyError, IndexError) as error:  # torch's legacy reader on a text file
        raise CheckpointError(
            f"checkpoint {path} is not a readable checkpoint: no torch file "
            f"({type(error).__name__} {error} in its header)"
        ) from error
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile) as error:
        raise CheckpointError(
            f"checkpoint {path} is not a readable checkpoint: {_first_line(error)}"
        ) from error
    if not isinstance(loaded, dict):
        raise CheckpointError(
            f"checkpoint {path} is not a readable checkpoint: it holds a "
            f"{type(loaded).__name__}, not a dict"
        )
    return loaded


def save_torch_checkpoint(state: Any, path: str | Path) -> None:
    """`torch.save(state)` to `path`, atomically: written and fsynced under `temp_path(path)`,
    then renamed into place. On any error the temporary file is removed and `path` keeps
    what it held before."""
    final = Path(path)
    tmp = temp_path(final)
    try:
        with open(tmp, "wb") as file:
            torch.save(state, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def require_trust(path: str | Path, trust: bool, what: str) -> None:
    """UntrustedCheckpointError unless `trust`: `path` (a `what`) is read by unpickling."""
    if not trust:
        raise UntrustedCheckpointError(
            f"refusing to load {what} {path}: it is a pickle, and unpickling can run code; "
            f"pass trust_checkpoint=true (API: trust_checkpoint=True) if you trust this file"
        )
    if not Path(path).is_file():
        raise CheckpointError(f"checkpoint {path} does not exist or is no file")


def _refusal(error: pickle.UnpicklingError) -> str:
    """The gist of torch's multi-line weights-only refusal."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = next(
        (line for line in lines[1:] if not line.startswith(("Check the", "Please"))),
        lines[0] if lines else type(error).__name__,
    )
    if "GLOBAL" in detail:
        return (
            f"it asks to build objects that weights-only loading refuses, as a crafted "
            f"or foreign pickle does ({detail})"
        )
    return f"no torch checkpoint of weights ({detail.removeprefix('WeightsUnpickler error: ')})"


def _first_line(error: BaseException) -> str:
    message = str(error).strip()
    return message.splitlines()[0] if message else type(error).__name__
