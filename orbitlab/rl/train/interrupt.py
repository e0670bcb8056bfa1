"""Ctrl-C during training, taken at the next env step.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives: inside an
RL library's update, a checkpoint write, a logger's lock or a `finally` block, where it can
be lost or leave a half-done state behind. While `interrupt_at_env_steps()` is active the
first Ctrl-C only notes the request; the env wrappers call `raise_if_requested()` at the
start of every env step, so the KeyboardInterrupt starts there, with only the library's
rollout loop above it, and the run saves its checkpoint and exits as before. A second
Ctrl-C raises at once, wherever the run is.

A PPO update running when Ctrl-C arrives finishes first: the run stops at the first env
step after it (well under a second at the shipped sizes).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_requested = False


def requested() -> bool:
    """Whether Ctrl-C was pressed while `interrupt_at_env_steps()` is active."""
    return _requested


def raise_if_requested() -> None:
    """KeyboardInterrupt if Ctrl-C was pressed (the env wrappers' step calls this)."""
    if _requested:
        raise KeyboardInterrupt


def _note(signum, frame) -> None:
    global _requested
    if _requested:  # the second Ctrl-C: now
        signal.default_int_handler(signum, frame)
    _requested = True


@contextlib.contextmanager
def interrupt_at_env_steps() -> Iterator[None]:
    """Within the block (on the main thread), the first SIGINT is raised at the next env
    step; outside it, and on other threads, nothing changes."""
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _note)
    _requested = False
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested = False
