"""The bridge server's diagnostics: a log line and a message on
/bridge/orbitlab/out/diagnostics ({level, code, message, topic, suppressed}) per report,
both throttled to `BridgeCfg.diagnostics_per_s`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from orbitlab.bridge import protocol
from orbitlab.bridge.config import BridgeCfg

log = logging.getLogger("orbitlab.bridge")


class Diagnostics:
    """Reports throttled to `cfg.diagnostics_per_s` a second (counted while throttled: the
    next message that goes out says how many were suppressed).

    `send` publishes a message (None: the log line only, e.g. in 'ros' mode, whose node
    knows no diagnostics type); `time_s` gives the simulation time, s, that it carries.
    """

    def __init__(
        self,
        cfg: BridgeCfg,
        send: Callable[[dict], object] | None,
        time_s: Callable[[], float],
    ):
        self.cfg = cfg
        self.send = send
        self.time_s = time_s
        self.window = time.monotonic()
        """Start of the current one-second throttling window, monotonic s."""
        self.count = 0
        """Reports in the current window."""
        self.suppressed = 0
        """Reports throttled since the last message sent."""

    def report(self, code: str, message: str, topic: str = "", level: str = "error") -> bool:
        """A log line and a diagnostics message, at most `diagnostics_per_s` per second;
        False when throttled (only counted)."""
        now = time.monotonic()
        if now - self.window >= 1.0:
            self.window, self.count = now, 0
        if self.count >= self.cfg.diagnostics_per_s:
            self.suppressed += 1
            return False
        self.count += 1
        {"info": log.info, "warn": log.warning}.get(level, log.error)(
            "bridge %s: %s", code, message
        )
        if self.send is None:  # ('ros' mode) the node knows no diagnostics type
            self.suppressed = 0
            return True
        t = self.time_s()
        self.send(
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
                    "suppressed": self.suppressed,
                },
            )
        )
        self.suppressed = 0
        return True
