"""A fixed delay line over batched tensors (command latency, sensor latency)."""

from __future__ import annotations

import torch


class DelayLine:
    """Delays a (num_worlds, ...) signal by exactly `steps` pushes.

    `push(x)` stores x and returns the value pushed `steps` calls earlier (x
    itself when steps is 0). Rows reset with `reset(worlds, value)` return
    `value` until their own history has filled again, so nothing from a
    previous episode leaks into the next one.
    """

    def __init__(
        self,
        steps: int,
        shape: tuple[int, ...],
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float64,
    ):
        if steps < 0:
            raise ValueError(f"delay must be >= 0 steps, got {steps}")
        self.steps = int(steps)
        self.buffer = torch.zeros((self.steps + 1, *shape), dtype=dtype, device=device)
        self.head = 0

    def push(self, value: torch.Tensor) -> torch.Tensor:
        """Store `value`; return the value stored `steps` pushes ago."""
        if self.steps == 0:
            return value
        self.buffer[self.head] = value
        self.head = (self.head + 1) % (self.steps + 1)
        return self.buffer[self.head].clone()

    def reset(self, worlds: torch.Tensor, value: torch.Tensor | float = 0.0) -> None:
        """Fill the history of `worlds` with `value` (per world rows, or a scalar)."""
        if self.steps:
            self.buffer[:, worlds] = value
