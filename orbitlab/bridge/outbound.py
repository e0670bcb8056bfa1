"""What the bridge sends: the state's telemetry, housekeeping (clock reset, topic requests)
and diagnostics.

`OutboundMixin` is part of `BridgeServer` (`server`).
"""

from __future__ import annotations

import logging
import time

from orbitlab.bridge import protocol
from orbitlab.bridge.wire import send_frame, send_frames

log = logging.getLogger("orbitlab.bridge")
HOUSEKEEPING_S = 0.02
"""Wall seconds between two housekeeping frames (clock reset, topic requests) at least."""
HOUSEKEEPING_IDLE_S = 0.25
"""Without telemetry for this long (wall s), housekeeping frames go out on their own."""
ROS_CLOCK_RETRY_S = 0.25
"""'ros' mode: the clock reset is re-sent this often until acknowledged, wall s."""


class OutboundMixin:
    """Telemetry, housekeeping and diagnostics of `BridgeServer`."""

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

    def _clock_retry(self) -> tuple[float, int]:
        """(s between clock resets, how many at most). 'ros' mode: every ROS_CLOCK_RETRY_S
        over the topic requests' whole retry span: the node's command PUB may connect after
        its heartbeat (ZeroMQ reconnects every 0.1 s), losing the first answer, and nothing
        else goes out before the acknowledgement."""
        c = self.cfg
        if not self._ros:
            return c.topic_retry_s, c.topic_retries
        span = c.topic_retry_s * c.topic_retries
        return ROS_CLOCK_RETRY_S, max(1, round(span / ROS_CLOCK_RETRY_S))

    def _heartbeat_reports(self) -> None:
        """Report what the heartbeat thread rejected (it cannot use the telemetry socket);
        raises HeartbeatThreadError when that thread has died."""
        hb = self.heartbeat
        hb.check()
        while hb.reports:
            code, message = hb.reports.popleft()
            self.stats.rejected[code] = self.stats.rejected.get(code, 0) + 1
            self._diagnose(code, message, level="warn")

    def _diagnose(self, code: str, message: str, topic: str = "", level: str = "error") -> bool:
        """A log line and a diagnostics message, at most `diagnostics_per_s` per second;
        False when throttled (only counted)."""
        d, now = self._diag, time.monotonic()
        if now - d["window"] >= 1.0:
            d["window"], d["count"] = now, 0
        if d["count"] >= self.cfg.diagnostics_per_s:
            d["suppressed"] += 1
            return False
        d["count"] += 1
        (log.warning if level == "warn" else log.error)("bridge %s: %s", code, message)
        if self._ros:  # the node knows no diagnostics type: the log line only
            d["suppressed"] = 0
            return True
        t = self.sim.time_s
        self._send(
            protocol.telemetry(
                protocol.DIAGNOSTICS_NS,
                "OrbitlabDiagnosticMsgPayload",
                protocol.DIAGNOSTICS_TOPIC,
                t,
                {
                    "level": level,
                    "code": code,
                    "message": message,
                    "topic": topic,
                    "suppressed": d["suppressed"],
                },
            )
        )
        d["suppressed"] = 0
        return True
