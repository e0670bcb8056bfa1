"""Pacing of the bridged simulation against the wall clock.

Simulation time t advances in bridge ticks. With a speed-up factor a > 0 the tick that
ends at t is released at wall time w0 + (t - t0) / a, where (w0, t0) is the anchor set by
`reset` (a = 1: real time). With a = 0 the simulation runs as fast as possible (or, in
lockstep, as fast as the controllers answer). When the simulation falls more than
`max_lag_s` behind its schedule (a slow step, a paused link), the anchor is moved to now,
so it never bursts to catch up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(kw_only=True)
class PacerCfg:
    accel: float = 1.0
    """Simulated seconds per wall second (0: as fast as possible)."""
    max_lag_s: float = 0.25
    """Largest lag behind the schedule, wall s, before the anchor is reset."""
    spin_s: float = 2e-4
    """Final stretch before a deadline waited by spinning (sleep is too coarse), s."""


class Pacer:
    """Turns simulation time into wall-clock release times."""

    def __init__(self, cfg: PacerCfg):
        if not cfg.accel >= 0.0:
            raise ValueError(f"accel must be >= 0 (0: as fast as possible), got {cfg.accel}")
        self.cfg = cfg
        self.anchor_wall, self.anchor_sim = time.monotonic(), 0.0
        self.resets = 0

    @property
    def paced(self) -> bool:
        return self.cfg.accel > 0.0

    def reset(self, sim_time: float) -> None:
        """Anchor the schedule at (now, sim_time): no catching up on what went before."""
        self.anchor_wall, self.anchor_sim = time.monotonic(), sim_time
        self.resets += 1

    def deadline(self, sim_time: float) -> float:
        """Wall (monotonic) time at which `sim_time` is due; -inf when unpaced."""
        if not self.paced:
            return -float("inf")
        return self.anchor_wall + (sim_time - self.anchor_sim) / self.cfg.accel

    def wait(self, sim_time: float, service: Callable[[float], None]) -> None:
        """Wait until `sim_time` is due, calling `service(timeout_s)` (which may block up to
        that long, e.g. polling sockets) meanwhile, and at least once even when already
        late (so that a simulation that cannot keep up still takes its commands);
        re-anchors when too far behind."""
        if not self.paced:
            service(0.0)
            return
        due = self.deadline(sim_time)
        serviced = False
        while True:
            remaining = due - time.monotonic()
            if remaining <= 0.0:
                if not serviced:
                    service(0.0)
                break
            serviced = True
            if remaining > self.cfg.spin_s + 1e-3:
                service(remaining - self.cfg.spin_s)
            else:
                service(0.0)
                if remaining > self.cfg.spin_s:
                    time.sleep(remaining - self.cfg.spin_s)
                else:
                    os.sched_yield()  # spinning: let other threads (ZeroMQ's, a client) run
        if time.monotonic() - due > self.cfg.max_lag_s:
            self.reset(sim_time)
