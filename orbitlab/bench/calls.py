"""Python calls and torch operations per call of a function: what the env step dispatches.

On a GPU each torch operation is at least one kernel launch and each Python call costs
host time whatever the batch size, so these counts, not only seconds, say how far the step
is from a few fused kernels. Counted over a few steady calls:

* Python calls: `cProfile`'s total (functions, methods and builtins, each call once);
* torch operations: every torch function or tensor method entered (`TorchFunctionMode`),
  nested ones included;
* Warp launches (`dispatches_per_call`): recorded launches replayed (`WorldLaunch.launch`,
  one however many CPU threads share it), direct `wp.launch` calls and CUDA graph launches;
* MuJoCo calls: the C batch calls of the CPU backend (`mujoco.batch` forward and step).

On a GPU each torch operation and each Warp launch is a kernel launch (a CUDA graph replays
many for one), so their sum is the step's kernel-launch count there.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from dataclasses import dataclass

from torch.overrides import TorchFunctionMode

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch

_MUJOCO_CALLS = ("<built-in method mujoco._batch.forward>", "<built-in method mujoco._batch.step>")


def _code_key(function) -> tuple[str, int, str]:
    """A Python function's key in a profile's table (file, first line, name)."""
    code = function.__code__
    return code.co_filename, code.co_firstlineno, code.co_name


_LAUNCHES = tuple(_code_key(f) for f in (WorldLaunch.launch, wp.launch, wp.capture_launch))


@dataclass(frozen=True)
class Dispatches:
    """What one call of a function dispatches, each averaged over a few calls."""

    python_calls: float
    torch_ops: float
    warp_launches: float
    mujoco_calls: float


class _TorchCalls(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def calls_per_call(fn: Callable[[], object], repeats: int = 5) -> tuple[float, float]:
    """(Python calls, torch operations) per call of `fn` (`dispatches_per_call`)."""
    counts = dispatches_per_call(fn, repeats)
    return counts.python_calls, counts.torch_ops


def dispatches_per_call(fn: Callable[[], object], repeats: int = 5) -> Dispatches:
    """Python calls, torch operations, Warp launches and MuJoCo calls per call of `fn`, each
    averaged over `repeats` calls (the torch operations counted in a second pass, so that
    neither counter sees the other's overhead)."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        for _ in range(repeats):
            fn()
    finally:
        profile.disable()
    # (file, first line, name) -> calls, recursive ones included: the table `print_stats`
    # prints (`get_stats_profile` keys it by name alone, merging same-named functions)
    table = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    per_function = {key: row[1] for key, row in table.items()}
    launches = sum(per_function.get(key, 0) for key in _LAUNCHES)
    mujoco = sum(n for (_, _, name), n in per_function.items() if name in _MUJOCO_CALLS)
    with _TorchCalls() as torch_calls:
        for _ in range(repeats):
            fn()
    return Dispatches(
        python_calls=sum(per_function.values()) / repeats,
        torch_ops=torch_calls.count / repeats,
        warp_launches=launches / repeats,
        mujoco_calls=mujoco / repeats,
    )
