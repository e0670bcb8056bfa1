"""Persistent buffers and a recorded launch of `allocation_kernel` for one batch size.

`ThrusterAllocator.allocate` copies the wrenches and limits of a call into the buffers of its
batch size, replays the launch (split across cores on the CPU, one launch on a GPU, no host
read) and returns copies of the outputs, so a result stays valid after later calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from orbitlab.fw.allocation_kernel import allocation_kernel, vec6d
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch


class FusedAllocation:
    """The allocation kernel over `batch` worlds of one thruster geometry."""

    def __init__(
        self,
        matrix: torch.Tensor,
        pinv: torch.Tensor,
        scale: float,
        iterations: int,
        tolerance: float,
        batch: int,
    ) -> None:
        device = matrix.device
        dev = str(device) if device.type == "cuda" else "cpu"
        self._cuda = device.type == "cuda"
        n = matrix.shape[1]

        def zeros(columns: int) -> torch.Tensor:
            return torch.zeros((batch, columns), dtype=torch.float64, device=device)

        self.wrench, self.limits, self.forces = zeros(6), zeros(n), zeros(n)
        self.achieved, self.residual = zeros(6), zeros(6)
        self.achievable = torch.zeros(batch, dtype=torch.bool, device=device)
        scratch = [zeros(n) for _ in range(3)]  # x, p, grad
        self._state = torch.zeros((batch, n), dtype=torch.int32, device=device)
        self._scratch = scratch
        columns = matrix.T.contiguous().cpu().numpy()  # (n, 6): thruster i's wrench b_i
        constants: list[Any] = [
            wp.array(np.ascontiguousarray(columns), dtype=vec6d, device=dev),
            wp.array(pinv.contiguous().cpu().numpy(), dtype=vec6d, device=dev),  # (n, 6) B^+
        ]
        self._constants = constants  # kept alive for the recorded launch
        inputs = [
            *constants,
            n,
            wp.float64(scale),
            int(iterations),
            wp.float64(tolerance),
            wp.from_torch(self.wrench, dtype=vec6d),
            wp.from_torch(self.limits),
            wp.from_torch(self._state),
            *(wp.from_torch(t) for t in scratch),
            wp.from_torch(self.forces),
            wp.from_torch(self.achieved, dtype=vec6d),
            wp.from_torch(self.residual, dtype=vec6d),
            wp.from_torch(self.achievable),
        ]
        self._launch = WorldLaunch(allocation_kernel, batch, inputs, dev, nthread=0)

    def solve(
        self, wrench: torch.Tensor, limits: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(forces, achieved, residual, achievable) for (batch, 6) wrenches and (batch, n)
        limits, new tensors each call."""
        self.wrench.copy_(wrench)
        self.limits.copy_(limits)
        if self._cuda:  # on torch's current stream, which wrote the inputs and reads the outputs
            with wp.ScopedStream(wp.stream_from_torch(self.wrench.device)):
                self._launch.launch()
        else:
            self._launch.launch()
        return (
            self.forces.clone(),
            self.achieved.clone(),
            self.residual.clone(),
            self.achievable.clone(),
        )

    def close(self) -> None:
        self._launch.close()
