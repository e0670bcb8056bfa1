"""Kernel launches over worlds, split across CPU threads.

Warp runs a CPU kernel on one thread. `WorldLaunch` records one launch per
contiguous chunk of worlds (the kernel's first two arguments are the chunk's
world offset and its index, which selects the chunk's row of per-thread scratch
arrays) and replays them: the caller runs the first chunk, persistent helper
threads the others. Warp releases the GIL while a CPU kernel runs, so the
chunks run in parallel. Each world's thread owns its rows, so the result is
identical for any number of threads. On a CUDA device there is a single launch
over all worlds.

The helpers are handed their chunk through `queue.SimpleQueue` (a C-level
queue): a round trip costs ~15 us on the 2-core reference machine, against
~40 us for `concurrent.futures`, per launch. Chunks have at least
`MIN_WORLDS_PER_CHUNK` worlds: below that a helper's round trip costs more than
its share of the kernel saves.

A CPU replay calls the kernel's entry point directly with its argument record
packed once at recording time (`_packed_cpu_call`): Warp's own replay packs the
record again on every call, ~20 us of Python per launch, which is held under the
GIL while the other chunks wait to start.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import queue
import threading

from orbitlab.quiet import wp  # Warp, started quietly


def resolve_thread_count(nthread: int) -> int:
    """0 means all CPUs; otherwise at least 1."""
    return max(1, os.cpu_count() or 1) if nthread == 0 else max(1, int(nthread))


MIN_WORLDS_PER_CHUNK = 128
"""Fewest worlds a CPU chunk gets (measured: a helper's round trip, ~50-70 us with the GIL
hand-offs, equals ~250 world evaluations of the loads kernel on one core)."""


def chunk_count(nworld: int, device: str, nthread: int) -> int:
    """How many chunks `WorldLaunch` splits `nworld` worlds into on `device`."""
    if device != "cpu":
        return 1
    return max(1, min(resolve_thread_count(nthread), nworld // MIN_WORLDS_PER_CHUNK))


def _packed_cpu_call(command):
    """A zero-argument call running a recorded CPU launch, its arguments packed once.

    Mirrors Warp's CPU replay (a ctypes record of the kernel's arguments, passed
    by reference with the launch bounds to the kernel's forward entry point) but
    builds the record here, once. The record holds the arrays' descriptors, so it
    stays valid as long as the launch's arguments do (a `WorldLaunch` is
    re-recorded whenever they change). ctypes releases the GIL during the call.
    """
    params = command.params
    fields = [
        (arg.label, type(value))
        for arg, value in zip(command.kernel.adj.args, params[1:], strict=True)
    ]
    record_type = type("KernelArgs", (ctypes.Structure,), {"_fields_": fields})
    record = record_type()
    for (name, _), value in zip(fields, params[1:], strict=True):
        setattr(record, name, value)
    bounds_ref, record_ref = ctypes.byref(params[0]), ctypes.byref(record)
    forward = command.hooks.forward

    def call(keep=(command, record)) -> None:  # keep: the record and what it points into
        forward(bounds_ref, record_ref)

    return call


class _Helper:
    """A daemon thread that replays one recorded launch each time `requests` gets True.

    It answers each request on `done`: None, or the exception the launch raised."""

    def __init__(self, call):
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._serve, args=(call,), daemon=True, name="orbitlab-kernel"
        )
        self._thread.start()

    def _serve(self, call) -> None:
        while self.requests.get():
            try:
                call()
                self.done.put(None)
            except Exception as error:  # noqa: BLE001 - re-raised by launch() on the caller's thread
                self.done.put(error)

    def stop(self) -> None:
        self.requests.put(False)


class WorldLaunch:
    """A recorded kernel launch over `nworld` worlds, replayed with `launch()`."""

    def __init__(self, kernel, nworld: int, inputs: list, device: str, nthread: int = 1):
        """Record `kernel(world_offset, chunk, *inputs)` over `nthread` chunks (0: all CPUs)."""
        self._helpers: list[_Helper] = []
        nchunk = chunk_count(nworld, device, nthread)
        bounds = [nworld * i // nchunk for i in range(nchunk + 1)]
        self._launches = [
            wp.launch(
                kernel, dim=hi - lo, inputs=[lo, chunk, *inputs], device=device, record_cmd=True
            )
            for chunk, (lo, hi) in enumerate(itertools.pairwise(bounds))
        ]
        self._calls = (
            [_packed_cpu_call(command) for command in self._launches]
            if device == "cpu"
            else [command.launch for command in self._launches]
        )
        self._helpers = [_Helper(call) for call in self._calls[1:]]

    def launch(self) -> None:
        # The queues are used directly: this runs several times per physics step, and each
        # Python call here is host time on every launch.
        for helper in self._helpers:
            helper.requests.put(True)
        error = None
        try:
            self._calls[0]()
        finally:
            for helper in self._helpers:  # every helper is waited for, even after an error
                error = helper.done.get() or error
        if error is not None:
            raise error

    def close(self) -> None:
        for helper in self._helpers:
            helper.stop()
        self._helpers = []

    def __del__(self) -> None:
        self.close()
