"""Kernel launches over worlds, split across CPU threads.

Warp runs a CPU kernel on one thread. `WorldLaunch` records one launch per
contiguous chunk of worlds (the kernel's first two arguments are the chunk's
world offset and its index, which selects the chunk's row of per-thread scratch
arrays) and replays them on a small thread pool; Warp releases the GIL while a
CPU kernel runs, so the chunks run in parallel. Each world's thread owns its
rows, so the result is identical for any number of threads. On a CUDA device
there is a single launch over all worlds.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import warp as wp


def resolve_thread_count(nthread: int) -> int:
    """0 means all CPUs; otherwise at least 1."""
    return max(1, os.cpu_count() or 1) if nthread == 0 else max(1, int(nthread))


def chunk_count(nworld: int, device: str, nthread: int) -> int:
    """How many chunks `WorldLaunch` splits `nworld` worlds into on `device`."""
    return min(resolve_thread_count(nthread), nworld) if device == "cpu" else 1


class WorldLaunch:
    """A recorded kernel launch over `nworld` worlds, replayed with `launch()`."""

    def __init__(self, kernel, nworld: int, inputs: list, device: str, nthread: int = 1):
        """Record `kernel(world_offset, chunk, *inputs)` over `nthread` chunks (0: all CPUs)."""
        self._pool = None
        nchunk = chunk_count(nworld, device, nthread)
        bounds = [nworld * i // nchunk for i in range(nchunk + 1)]
        self._launches = [
            wp.launch(kernel, dim=hi - lo, inputs=[lo, chunk, *inputs], device=device,
                      record_cmd=True)
            for chunk, (lo, hi) in enumerate(itertools.pairwise(bounds))
        ]
        self._pool = ThreadPoolExecutor(nchunk - 1) if nchunk > 1 else None

    def launch(self) -> None:
        if self._pool is None:
            self._launches[0].launch()
            return
        pending = [self._pool.submit(cmd.launch) for cmd in self._launches[1:]]
        self._launches[0].launch()
        for future in pending:
            future.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def __del__(self) -> None:
        self.close()
