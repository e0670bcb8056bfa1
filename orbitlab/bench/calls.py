"""Python calls and torch operations per call of a function: what the env step dispatches.

On a GPU each torch operation is at least one kernel launch and each Python call costs
host time whatever the batch size, so these counts, not only seconds, say how far the step
is from a few fused kernels. Counted over a few steady calls:

* Python calls: `cProfile`'s total (functions, methods and builtins, each call once);
* torch operations: every torch function or tensor method entered (`TorchFunctionMode`),
  nested ones included.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable

from torch.overrides import TorchFunctionMode


class _TorchCalls(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def calls_per_call(fn: Callable[[], object], repeats: int = 5) -> tuple[float, float]:
    """(Python calls, torch operations) per call of `fn`, each averaged over `repeats` calls
    (counted in two separate passes, so that neither counter sees the other's overhead)."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        for _ in range(repeats):
            fn()
    finally:
        profile.disable()
    python_calls = pstats.Stats(profile).total_calls / repeats
    with _TorchCalls() as torch_calls:
        for _ in range(repeats):
            fn()
    return python_calls, torch_calls.count / repeats
