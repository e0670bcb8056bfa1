"""Flow control toward a peer that buffers without bound (the public ROS 2 node).

The public node reads telemetry into an unbounded queue (its SUB socket's CONFLATE and
RCVHWM are set after `connect()`, where libzmq ignores them) and handles it in its ROS
thread. A simulator faster than that thread grows the node's memory and delays its
`/clock`. So the simulator counts the frames it sends and, every `probe_every` frames,
sends a probe (`protocol.flow_probe`) whose answer says that the node has consumed every
frame before it. The simulation does not step while more than `window` frames are
unconfirmed: the node never holds more than about `window` + one tick's frames.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass


@dataclass(kw_only=True)
class FlowCfg:
    window: int = 256
    """Most telemetry frames in flight (sent, not yet known consumed) before stepping waits."""
    probe_every: int = 32
    """A probe after at least this many frames (and at the end of every tick's burst)."""
    reprobe_s: float = 0.5
    """No answer for this long (wall s) while waiting: probe again (one may have been lost)."""

    def __post_init__(self) -> None:
        if type(self.window) is not int or self.window < 1:
            raise ValueError(f"flow window must be an integer >= 1, got {self.window!r}")
        if type(self.probe_every) is not int or not 1 <= self.probe_every <= self.window:
            raise ValueError(
                f"flow probe_every must be an integer in [1, window = {self.window}], "
                f"got {self.probe_every!r}"
            )


class FlowWindow:
    """Frames sent and known consumed; which probes are outstanding."""

    def __init__(self, cfg: FlowCfg | None = None):
        self.cfg = cfg or FlowCfg()
        self.sent = 0
        """Frames sent since `reset`."""
        self.consumed = 0
        """Frames the peer is known to have consumed (up to the last answered probe)."""
        self.seq = 0
        self._probes: deque[tuple[int, int]] = deque()
        """(probe number, frames sent up to it), oldest first."""
        self._probed_at = 0
        """`sent` when the last probe went out."""
        self.last_probe_wall = -float("inf")
        self.max_in_flight = 0
        """Largest `in_flight` seen (the measured bound of what the peer held unread)."""

    def reset(self) -> None:
        """A new peer (link up): nothing in flight."""
        self.__init__(self.cfg)

    @property
    def in_flight(self) -> int:
        return self.sent - self.consumed

    def count(self, frames: int) -> None:
        self.sent += frames
        self.max_in_flight = max(self.max_in_flight, self.sent - self.consumed)

    def probe_due(self) -> bool:
        return self.sent - self._probed_at >= self.cfg.probe_every

    def full(self) -> bool:
        return self.in_flight > self.cfg.window

    def next_probe(self) -> int:
        """Register a probe (sent right after the frames counted so far); its number."""
        self.seq += 1
        self.count(1)  # the probe itself
        self._probes.append((self.seq, self.sent))
        self._probed_at = self.sent
        self.last_probe_wall = time.monotonic()
        if len(self._probes) > 4 * self.cfg.window:  # never answered: forget the oldest
            self._probes.popleft()
        return self.seq

    def answered(self, seq: int) -> bool:
        """Note probe `seq`'s answer; False for a number never sent or already superseded."""
        if seq > self.seq:
            return False
        while self._probes and self._probes[0][0] < seq:
            self._probes.popleft()
        if not self._probes or self._probes[0][0] != seq:
            return False
        _, upto = self._probes.popleft()
        self.consumed = max(self.consumed, upto)
        return True
