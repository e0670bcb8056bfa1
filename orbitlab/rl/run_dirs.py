"""Run directories that two trainings can never share.

`orbitlab train` names its run directory `<runs_root>/<task>/<time>_<suffix>` through the
`orbitlab_run_dir` resolver of configs/train.yaml: the suffix is random and the directory is
made here with an exclusive `mkdir` (which fails when the name exists, on every file
system), retried with another suffix until one is new. Two trainings started in the same
second, in one process or many, on one machine or on a shared disk, get two directories.

The resolver runs when hydra needs the run directory, after the config checks
(`orbitlab.rl.train.checks.ValidateConfig`): a refused command line makes nothing.
"""

from __future__ import annotations

import secrets
from pathlib import Path


def unique_run_dir(runs_root: str, task: str, stamp: str) -> str:
    """`runs_root/task/stamp_<6 hex digits>`, newly made by this call; OSError when it
    cannot be made. (OmegaConf caches a resolver's value per config: the run directory of
    one config is resolved, and made, once.)"""
    parent = Path(runs_root) / str(task)
    parent.mkdir(parents=True, exist_ok=True)
    for _ in range(1000):
        path = parent / f"{stamp}_{secrets.token_hex(3)}"
        try:
            path.mkdir()  # exclusive: FileExistsError when another run took the name
        except FileExistsError:
            continue
        return str(path)
    raise FileExistsError(f"no free run directory name under {parent} after 1000 tries")


def register_resolver() -> None:
    """Make `${orbitlab_run_dir:root,task,time}` available to OmegaConf configs."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("orbitlab_run_dir"):
        OmegaConf.register_new_resolver("orbitlab_run_dir", unique_run_dir, use_cache=True)
