"""Upper bounds of the numbers a user gives that size the work: worlds, threads, steps.

Every bound is either derived from this machine (its CPU count, its available memory) or a
documented constant (docs/robustness.md, "Bounds"), so that no value typed on a command line
can exhaust the machine's memory, start more threads than it can hold or run for ever:

* `MAX_NUM_ENVS` worlds, and no more than the machine's available memory holds
  (`check_world_memory`, from the compiled model's per-world buffer);
* `max_threads()` MuJoCo or torch threads: 4 per CPU, at least 8 (torch's own pool
  crashes the process when asked for 100000);
* `MAX_DECIMATION` physics steps per env step, timesteps in [`MIN_TIMESTEP_S`,
  `MAX_TIMESTEP_S`], episodes of at most `MAX_EPISODE_LENGTH_S` and
  `MAX_EPISODE_PHYSICS_STEPS` physics steps;
* seeds in [0, `MAX_SEED`], `MAX_STEPS` env steps, `MAX_ITERATIONS` learning iterations,
  learning rates up to `MAX_LEARNING_RATE`, initial stds up to `MAX_INIT_STD`, rates in
  [`MIN_RATE_HZ`, `MAX_RATE_HZ`] and real-time factors in [`MIN_ACCEL`, `MAX_ACCEL`]
  (0 where it means "as fast as possible");
* a warning with the estimated cost (`step_cost_warning`) before an env step or an episode
  that would take longer than `SLOW_STEP_S` / `SLOW_EPISODE_S` at `NOMINAL_WORLD_STEPS_PER_S`.

This module imports nothing heavy (no torch, no MuJoCo): the command line checks with it
before anything is built.
"""

from __future__ import annotations

import math
import os

MAX_NUM_ENVS = 1 << 22
"""Worlds of one env or simulation (4,194,304): 64 times the largest batch benchmarked;
the available memory usually bounds it lower (`check_world_memory`)."""
MAX_CONTACTS_PER_WORLD = 1 << 16
"""Contacts one world may hold on the warp backend (`SceneCfg.contacts_per_world`)."""
MAX_CONSTRAINT_ROWS_PER_WORLD = 1 << 18
"""Constraint rows one world may hold on the warp backend (`SceneCfg.constraint_rows_per_world`)."""
MAX_DECIMATION = 10_000
"""Physics steps per env step (100 s of simulated time per step at the default 0.01 s)."""
MIN_TIMESTEP_S = 1e-5
"""Smallest physics timestep, s (1e-300 overflowed the step counters)."""
MAX_TIMESTEP_S = 10.0
"""Largest physics timestep, s: a tenth of the time a wheel or a thruster pulse lasts is
already coarse; the orbit layer substeps on its own."""
MAX_EPISODE_LENGTH_S = 1e6
"""Longest episode, s (11.6 days, 185 low orbits)."""
MAX_EPISODE_PHYSICS_STEPS = 10**8
"""Physics steps in one episode of one world (episode_length_s / timestep_s)."""
MAX_STEPS = MAX_EPISODE_PHYSICS_STEPS
"""Most env steps a `max_steps` argument may ask for: no episode has more."""
MAX_SEED = 2**32 - 1
"""Largest seed: the widest every library takes (numpy's legacy RandomState, which SB3
seeds, refuses 2**32; torch 2**64)."""
MAX_ITERATIONS = 10**7
"""Learning iterations of one run (agent.max_iterations): 116 days at 1 s an iteration."""
MAX_LEARNING_RATE = 1.0
"""Largest learning rate: Adam steps of the parameters' own size (1e308 made NaN weights
in the first update)."""
MAX_INIT_STD = 100.0
"""Largest initial action std: actions are clipped to [-1, 1], so a larger one only makes
the policy's log-probabilities overflow."""
MIN_RATE_HZ, MAX_RATE_HZ = 1e-5, 1e5
"""A positive tick or step rate, Hz: at most one tick per physics step of the shortest
timestep (1 / `MIN_TIMESTEP_S`), at least one per 100,000 s (1e-300 overflowed the sleep)."""
MIN_ACCEL, MAX_ACCEL = 1e-6, 1e6
"""A positive real-time factor (simulated s per wall s); 0 is "as fast as possible"."""
NOMINAL_WORLD_STEPS_PER_S = 50_000.0
"""World-steps per second the cost estimate assumes: the slowest task's framework-inclusive
rate on a loaded 2-core CPU (docs/benchmarks.md), so the estimate errs long."""
SLOW_STEP_S = 30.0
"""An env step estimated longer than this is announced with its cost."""
SLOW_EPISODE_S = 3600.0
"""An episode (all worlds) estimated longer than this is announced with its cost."""
MEMORY_HEADROOM = 0.8
"""The share of the available memory the worlds may take."""
WORLD_OVERHEAD_BYTES = 16 * 1024
"""Per-world memory beyond MuJoCo's buffer (orbit state, torch buffers, sensor history)."""


def max_threads() -> int:
    """The most MuJoCo or torch threads a setting may ask for: 4 per CPU, at least 8."""
    return max(8, 4 * (os.cpu_count() or 1))


def available_memory_bytes() -> int | None:
    """The memory available to new allocations (Linux: MemAvailable), None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _size(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if nbytes < 1024 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} TB"


def world_memory_problem(num_envs: int, bytes_per_world: float) -> str | None:
    """What is wrong with `num_envs` worlds of `bytes_per_world` each on this machine
    (None: they fit in `MEMORY_HEADROOM` of the available memory, or it is unknown)."""
    available = available_memory_bytes()
    need = num_envs * (bytes_per_world + WORLD_OVERHEAD_BYTES)
    if available is None or need <= MEMORY_HEADROOM * available:
        return None
    fit = int(MEMORY_HEADROOM * available // (bytes_per_world + WORLD_OVERHEAD_BYTES))
    return (
        f"{num_envs} worlds need ~{_size(need)} of memory, this machine has "
        f"{_size(available)} available (at most ~{max(fit, 0)} worlds)"
    )


def duration(seconds: float) -> str:
    """`seconds` in the largest unit that keeps it readable ('3.2 h', '4.1 days')."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


def step_cost_warning(
    num_envs: int, decimation: int, timestep_s: float, episode_length_s: float
) -> str | None:
    """A one-line warning with the estimated cost when one env step or one episode of all
    worlds would be long at `NOMINAL_WORLD_STEPS_PER_S` (None: neither is)."""
    per_step = num_envs * decimation / NOMINAL_WORLD_STEPS_PER_S
    episode_steps = math.ceil(episode_length_s / (timestep_s * decimation))
    per_episode = per_step * episode_steps
    if per_step < SLOW_STEP_S and per_episode < SLOW_EPISODE_S:
        return None
    return (
        f"warning: each env step is {decimation} physics steps of {num_envs} worlds "
        f"(~{duration(per_step)} at ~{NOMINAL_WORLD_STEPS_PER_S:.0f} world-steps/s), an "
        f"episode {episode_steps} env steps (~{duration(per_episode)}); reduce num_envs, "
        "env.decimation or env.episode_length_s (or max_steps) for a shorter run"
    )


def episode_problem(timestep_s: float, episode_length_s: float) -> str | None:
    """What is wrong with an episode of `episode_length_s` at `timestep_s` (None: fine)."""
    steps = episode_length_s / timestep_s
    if steps > MAX_EPISODE_PHYSICS_STEPS:
        return (
            f"an episode of {episode_length_s:g} s at a {timestep_s:g} s timestep is "
            f"{steps:.3g} physics steps (at most {MAX_EPISODE_PHYSICS_STEPS:.0e})"
        )
    return None
