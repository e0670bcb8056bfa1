"""What a training run was made with: Python, the libraries and orbitlab's source revision.

Written into each run's metrics.json (`orbitlab train`), so that two runs of the same seed
and config that learn differently can be told apart by what they ran on.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "orbitlab",
    "torch",
    "numpy",
    "mujoco",
    "mujoco-warp",
    "warp-lang",
    "gymnasium",
    "rsl-rl-lib",
    "stable-baselines3",
    "rl-games",
    "hydra-core",
)
"""The distributions whose versions a run records (None: not installed)."""

SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the `orbitlab` package: a git checkout when installed editable."""


def package_versions() -> dict[str, str | None]:
    """Installed version of each of `PACKAGES`, None where not installed."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(SOURCE_ROOT), *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout.strip()


def source_revision() -> dict[str, Any] | None:
    """The git commit of the checkout orbitlab runs from and whether tracked files differ
    from it; None when orbitlab is not imported from a git checkout (e.g. a wheel) or git
    cannot tell."""
    if not (SOURCE_ROOT / ".git").exists():
        return None
    try:
        commit = _git("rev-parse", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "modified": bool(changed)}


def run_environment() -> dict[str, Any]:
    """Python, machine, library versions and source revision of this process."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "source": source_revision(),
    }
