"""Sending frames on ZeroMQ sockets without blocking, at the lowest per-frame cost.

pyzmq's `Socket.send` is a Python wrapper (routing ids, groups) around the compiled send;
calling the compiled one directly saves ~0.5 us per frame on the 2-core reference machine,
which matters at 100 spacecraft x 1 kHz (2 x 10^5 frames per second over both processes).
Frames are best sent back to back (`send_frames`): ZeroMQ's I/O thread then picks up
several at once instead of being woken for each.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

import zmq

_send = zmq.backend.Socket.send


def send_frame(socket: zmq.Socket, frame: bytes) -> bool:
    """Queue one frame; False when the socket would block (its high-water mark)."""
    try:
        _send(socket, frame, zmq.NOBLOCK)
    except zmq.Again:
        return False
    return True


def send_frames(socket: zmq.Socket, frames: Iterable[bytes]) -> int:
    """Queue frames back to back until one would block; returns how many were queued."""
    sent = 0
    try:
        for frame in frames:
            _send(socket, frame, zmq.NOBLOCK)
            sent += 1
    except zmq.Again:
        pass
    return sent


def drain(
    socket: zmq.Socket, handle: Callable[[bytes], None], limit: int, deadline: float = float("inf")
) -> int:
    """Receive without blocking and `handle` each frame until none is waiting, `limit`
    frames were handled or the monotonic clock passed `deadline` (s; looked at every 16
    frames); returns how many."""
    recv = socket.recv
    handled = 0
    while handled < limit:
        try:
            frame = recv(zmq.NOBLOCK)
        except zmq.Again:
            break
        handled += 1
        handle(frame)
        if not handled & 15 and time.monotonic() > deadline:
            break
    return handled


def batch_io_threads() -> int:
    """Run this process's ZeroMQ I/O threads under SCHED_BATCH (Linux); returns how many.

    Each send that finds ZeroMQ's I/O thread idle wakes it, and Linux lets a woken thread
    preempt the running one: the Python thread then loses its CPU to the I/O thread once
    per frame, and each wake-up moves a single frame. A SCHED_BATCH thread does not
    preempt on wake-up; it runs when a CPU is free (at the latest at the next scheduler
    tick) and then moves every queued frame at once. Measured on the 2-core reference
    machine with 100 spacecraft at 1 kHz: ~4x less kernel time in the I/O threads and
    +40% round trips. Elsewhere than Linux there is no such policy and nothing changes (0).
    """
    if not hasattr(os, "sched_setscheduler") or not os.path.isdir("/proc/self/task"):
        return 0
    changed = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                name = comm.read().strip()
            if name.startswith("ZMQbg/IO"):
                os.sched_setscheduler(int(tid), os.SCHED_BATCH, os.sched_param(0))
                changed += 1
        except OSError:  # the thread ended meanwhile, or the policy is not allowed here
            continue
    return changed


def shed(
    socket: zmq.Socket, handle: Callable[[bytes], None], max_bytes: int, limit: int, deadline: float
) -> tuple[int, int]:
    """Overload: receive up to `limit` waiting frames without copying them; drop those over
    `max_bytes` unread and `handle` the others until the monotonic clock passes `deadline`
    (s). Returns (handled, dropped)."""
    handled = dropped = 0
    for _ in range(limit):
        try:
            frame = socket.recv(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            break
        if len(frame) > max_bytes:
            dropped += 1
            continue
        handled += 1
        handle(frame.bytes)
        if time.monotonic() > deadline:
            break
    return handled, dropped
