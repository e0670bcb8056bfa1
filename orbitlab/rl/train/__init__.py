"""Training runs of `scripts/train.py`, one module per learning library.

Every trainer module has `train(settings: TrainSettings) -> TrainResult` and
`resume_checkpoint(resume, runs_root, task, current_run) -> Path`; `trainer(library)`
imports it. Runs are reproducible on the CPU backend: training proceeds in segments of
`save_interval` iterations, each starting from a reset of every world with a seed
derived from (seed, first iteration of the segment, rank), and each ending with a
checkpoint. Resuming from such a checkpoint therefore continues exactly as the
uninterrupted run did.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from orbitlab.rl.train.common import TrainResult, TrainSettings, segment_seed

TRAINERS = {
    "rsl_rl": "orbitlab.rl.train.rsl_rl",
    "sb3": "orbitlab.rl.train.sb3",
    "rl_games": "orbitlab.rl.train.rl_games",
}


def trainer(library: str) -> ModuleType:
    """The trainer module of `library` (rsl_rl, sb3 or rl_games)."""
    if library not in TRAINERS:
        raise ValueError(f"unknown agent library '{library}' (known: {', '.join(TRAINERS)})")
    return importlib.import_module(TRAINERS[library])


__all__ = ["TRAINERS", "TrainResult", "TrainSettings", "segment_seed", "trainer"]
