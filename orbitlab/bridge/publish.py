"""The bridge server's outbound side: the state (clock and due telemetry) after each step,
its re-sending for late joiners, and housekeeping (clock reset, topic requests).
"""

from __future__ import annotations

import time

from orbitlab.bridge import protocol
from orbitlab.bridge.wire import send_frame, send_frames

HOUSEKEEPING_S = 0.02
"""Wall seconds between two housekeeping frames (clock reset, topic requests) at least."""
HOUSEKEEPING_IDLE_S = 0.25
"""Without telemetry for this long (wall s), housekeeping frames go out on their own."""


class StatePublisher:
    """`BridgeServer`'s publishing, housekeeping and heartbeat reports (a mixin).

    Reads `sim`, `cfg`, `table`, `pub`, `pacer`, `heartbeat`, `connections`, `_ros`,
    `_linked`, `_telemetry`; writes `stats`, `_clock` (resends), `_last_frames`,
    `_relay_frames` (cleared), `_published_at`, `_next_housekeeping`, the handshakes' retry
    counts and `flow`'s frame counts. Calls `_diagnose`, and `_clock_retry` and
    `_send_probe` (`link.LinkControl`).
    """

    @property
    def clock_factor(self) -> float:
        """The clock frames' accelFactor: the pacing factor when paced, 0 as fast as possible
        or in lockstep (the node's `/clock` then moves only with the simulation's frames and
        holds while the simulation waits for commands)."""
        return 0.0 if self.cfg.lockstep or not self.pacer.paced else self.cfg.accel

    def _send(self, message: dict) -> bytes | None:
        frame = protocol.encode(message)
        if not send_frame(self.pub, frame):  # a PUB never blocks, but be safe
            return None
        if self.flow is not None:
            self.flow.count(1)
        self.stats.published += 1
        return frame

    def _publish_state(self, initial: bool = False) -> None:
        """The clock and every due telemetry topic of the current state, then housekeeping
        (after the telemetry: see `_housekeeping`)."""
        if not (self._linked or initial and self.heartbeat.alive()) or (
            self._ros and not self._clock["acked"]  # the clock reset before any clock frame
        ):
            self._housekeeping()
            return
        t = self.sim.time_s
        c = self.cfg
        frames = [self._send(protocol.clock(t, self.clock_factor))]
        now = time.monotonic() if c.rate_in_wall_clock else t
        due = self.table.due_outputs(now)
        telemetry = self._telemetry
        telemetry.begin(t)
        outputs = self.table.outputs
        built = []
        for key, payload in self.sim.payloads(due).items():
            spec = outputs[key]
            built.append(telemetry.frame(spec.namespace, spec.msg_type, spec.topic, payload))
        sent = send_frames(self.pub, built)  # back to back (see `wire`)
        self.stats.published += sent
        if self.flow is not None:
            self.flow.count(sent)
            if self.flow.probe_due():
                self._send_probe()
        self._last_frames = [f for f in frames if f is not None] + built[:sent]
        self._relay_frames.clear()
        self._published_at = time.monotonic()
        self._housekeeping()

    def _republish(self) -> None:
        if not self._last_frames:
            self._publish_state()
            return
        send_frames(self.pub, self._last_frames)
        if self._relay_frames:
            send_frames(self.pub, list(self._relay_frames.values()))
        self._published_at = time.monotonic()
        self._housekeeping()

    def _housekeeping(self) -> None:
        """The clock reset and topic requests, re-sent until answered (bounded retries).

        One frame per pass and a pass every `HOUSEKEEPING_S` at most, each the last frame
        of a burst of telemetry (or alone, when none was published for
        `HOUSEKEEPING_IDLE_S`): the public ROS 2 node reads telemetry through a conflating
        socket (only the newest waiting frame survives), so a request sent just before
        telemetry, or beside other requests, would be lost to it.
        """
        now = time.monotonic()
        if now < self._next_housekeeping:
            return
        self._next_housekeeping = now + HOUSEKEEPING_S
        self._heartbeat_reports()
        if self._ros and not self._linked:  # the node's SUB may not be there: lost frames
            return
        c = self.cfg
        clock = self._clock
        retry_s, retries = self._clock_retry()
        if not clock["acked"] and clock["sent"] < retries and now - clock["last"] >= retry_s:
            clock["sent"] += 1
            clock["last"] = now
            self._send(protocol.clock_reset(self.sim.time_s, self.clock_factor))
            return
        if self._ros and not clock["acked"]:
            return  # the requests once the ack proved that both directions work
        for h in self.table.handshakes.values():
            if h.confirmed or h.sent >= c.topic_retries or now - h.last_sent < c.topic_retry_s:
                continue
            h.sent += 1
            h.last_sent = now
            self.stats.requests_sent += 1
            s = h.spec
            self._send(protocol.topic_request(s.namespace, s.msg_type, s.topic, s.direction))
            if not self._ros:  # hub: one per pass (see above); the node reads every frame
                return

    def _heartbeat_reports(self) -> None:
        """Report what the heartbeat and connection threads found (they cannot use the
        telemetry socket); raises HeartbeatThreadError when the heartbeat thread has died."""
        hb = self.heartbeat
        hb.check()
        while hb.reports:
            code, message = hb.reports.popleft()
            self.stats.rejected[code] = self.stats.rejected.get(code, 0) + 1
            self._diagnose(code, message, level="warn")
        watch = self.connections
        self.stats.connections_dropped = watch.dropped
        self.stats.connections_closed = watch.closed
        while watch.reports:
            code, level, message = watch.reports.popleft()
            self._diagnose(code, message, level=level)
