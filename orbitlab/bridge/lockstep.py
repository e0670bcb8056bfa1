"""When a bridge tick may step: lockstep (every required command topic fresh) and, in 'ros'
mode, flow control (the node acknowledged the clock reset and keeps up with the frames).

`LockstepMixin` is part of `BridgeServer` (`server`); it uses the server's table, config,
flow window, stats and `service`.
"""

from __future__ import annotations

import logging
import os
import time

from orbitlab.bridge import protocol
from orbitlab.bridge.topics import CommandSlot, TopicSpec
from orbitlab.bridge.wire import send_frame

log = logging.getLogger("orbitlab.bridge")


class LockstepMixin:
    """Lockstep and flow-control gates of `BridgeServer.tick`."""

    def _resolve_lockstep(self, names) -> list[tuple[str, str]] | None:
        if names is None:
            return None
        keys = []
        for name in names:
            if name.startswith("/"):
                ns, _, topic = protocol.split_topic(name)
            else:
                ns, _, topic = name.partition("/")
            if (ns, topic) not in self.table.inputs:
                raise ValueError(
                    f"lockstep topic '{name}' is not an input topic (known: "
                    f"{', '.join(_wire_path(s.spec, self.cfg.mode) for s in self.table.inputs.values())})"
                )
            keys.append((ns, topic))
        return keys

    def required_topics(self) -> list[CommandSlot]:
        """The command topics lockstep waits for now."""
        if self._lockstep_keys is not None:
            return [self.table.inputs[k] for k in self._lockstep_keys]
        required = []
        for slot in self.table.inputs.values():
            if slot.owner is None:
                continue
            if not self.heartbeat.alive(slot.owner):
                self._diagnose(
                    "client_lost",
                    f"{slot.spec.path}: client '{slot.owner}' "
                    "stopped pinging; lockstep no longer waits for it",
                    topic=slot.spec.path,
                    level="warn",
                )
                slot.owner = None
                continue
            required.append(slot)
        return required

    def _lockstep_ready(self, max_wait_s: float) -> bool:
        """Wait (at most `max_wait_s`) for every required command topic to be fresh. The
        last state is re-sent every `lockstep_republish_s` for late joiners, counted across
        calls, so a short `max_wait_s` cannot starve the re-send."""
        t0 = time.monotonic()
        last_send = self._lockstep_sent_at if self._lockstep_sent_at is not None else t0
        spin_until = t0 + self.cfg.lockstep_spin_s
        while True:
            required = self.required_topics()
            if required and all(s.fresh for s in required):
                self.stats.lockstep_wait_s += time.monotonic() - t0
                self._lockstep_sent_at = None  # a new state follows this step
                return True
            now = time.monotonic()
            if now - t0 >= max_wait_s:
                self.stats.lockstep_wait_s += now - t0
                self._lockstep_sent_at = last_send
                return False
            if not self._ros and now - last_send >= self.cfg.lockstep_republish_s:
                last_send = self._lockstep_sent_at = now
                self._republish()
            if now < spin_until:
                if not self.service(0.0):
                    os.sched_yield()  # let ZeroMQ's (SCHED_BATCH) I/O thread move the frames
            else:
                self.service(min(0.01, max(0.0, max_wait_s - (now - t0))))

    def _flow_ready(self, max_wait_s: float) -> bool:
        """'ros' mode: wait (at most `max_wait_s`) until the node has acknowledged the clock
        reset and holds at most `flow.window` unconsumed frames; False when it has not."""
        flow, t0 = self.flow, time.monotonic()
        while not self._clock["acked"] or flow.full():
            now = time.monotonic()
            retry_s, retries = self._clock_retry()
            if not self._clock["acked"] and self._clock["sent"] >= retries:
                if now - self._clock["last"] >= retry_s:
                    self._no_flow_control("the node never acknowledged the clock reset")
                    return True
            elif (
                flow.full()
                and now - flow.last_probe_wall >= flow.cfg.reprobe_s
                and not self._send_probe()
                and self._requests_exhausted()
            ):
                self._no_flow_control("the node confirmed no input topic to probe")
                return True
            if now - t0 >= max_wait_s:
                self.stats.flow_wait_s += now - t0
                return False
            self.service(min(0.005, max(0.0, max_wait_s - (now - t0))))
        self.stats.flow_wait_s += time.monotonic() - t0
        return True

    def _send_probe(self) -> bool:
        """A flow probe on a confirmed input topic (`protocol.flow_probe`); False when the
        node has confirmed none yet."""
        for h in self.table.handshakes.values():
            s = h.spec
            if s.direction == "in" and h.confirmed and h.success:
                seq = self.flow.next_probe()
                send_frame(
                    self.pub,
                    protocol.encode(protocol.flow_probe(s.namespace, s.msg_type, s.topic, seq)),
                )
                return True
        return False

    def _requests_exhausted(self) -> bool:
        return all(
            h.confirmed or h.sent >= self.cfg.topic_retries for h in self.table.handshakes.values()
        )

    def _no_flow_control(self, why: str) -> None:
        log.warning("bridge: %s: running without flow control (it may buffer without bound)", why)
        self.flow = None
        self._clock["acked"] = True


def _wire_path(spec: TopicSpec, mode: str) -> str:
    """A topic's full name as the other side knows it (/<ns>/bsk/... to the ROS 2 node)."""
    prefix = protocol.ROS_PREFIX if mode == "ros" else protocol.OWN_PREFIX
    return protocol.topic_path(spec.namespace, spec.topic, spec.direction, prefix)
