"""Whether the bridge server may step: the heartbeat link, flow control toward the public
ROS 2 node ('ros' mode, `flow`) and lockstep's wait for commands.

Lockstep's start rule ('ros' mode): nothing is re-sent while lockstep waits there (a
re-sent state would repeat its stamp on the ROS topics), so a node whose subscription came
up after the first state was published would never answer, and the simulation would wait
for it forever. Until every required topic has had a command since the start (the server's
start, the link coming up, `reset`), a tick that has waited `lockstep_start_release_s`
wall seconds is therefore released: the simulation steps with the held commands (zero
before any) and publishes a new state, with a new stamp. From the first moment every
required topic has had a command, lockstep waits for every command again, without limit.
"""

from __future__ import annotations

import logging
import os
import time

import zmq

from orbitlab.bridge import protocol
from orbitlab.bridge.publish import HOUSEKEEPING_S
from orbitlab.bridge.topics import CommandSlot, TopicSpec, TopicTable
from orbitlab.bridge.wire import send_frame

log = logging.getLogger("orbitlab.bridge")
ROS_CLOCK_RETRY_S = 0.25
"""'ros' mode: the clock reset is re-sent this often until acknowledged, wall s."""


class LinkControl:
    """`BridgeServer`'s link, flow control and lockstep readiness (a mixin).

    Reads `sim`, `cfg`, `table`, `pub`, `heartbeat`, `_ros`, `_lockstep_keys`; writes
    `_linked`, `_subscribed`, `_lockstep_free`, `_lockstep_sent_at`, `_lockstep_started`,
    `_commanded`, `_lockstep_waiting_since`, `_clock`,
    `_next_housekeeping`, `stats`, `flow` (reset, probes; None without flow control), the
    pacer (re-anchored on link up) and the slots' `owner` (lost clients). Calls `service`,
    `_diagnose`, `_publish_state` and `_republish`.
    """

    _lockstep_started: bool
    _commanded: set[tuple[str, str]]
    _lockstep_waiting_since: float | None

    def linked(self) -> bool:
        """Whether any controller pinged within the heartbeat timeout."""
        return self.heartbeat.alive()

    def _check_link(self) -> bool:
        """Handle link transitions; False when the simulation must pause. Raises
        HeartbeatThreadError when the heartbeat thread has died."""
        self.heartbeat.check()
        up = self.heartbeat.alive() and (self._subscribed or not self._ros)
        if up and not self._linked:
            log.info("bridge: link up (%s)", ", ".join(sorted(self.heartbeat.clients())) or "?")
            self.table.request_all()
            if self._ros:  # maybe a new node: the clock reset first, nothing in flight
                self._clock.update(sent=0, last=-float("inf"), acked=False)
                self.flow.reset()
                # controllers on /clock timers answer a clock that moves: one step first
                self._lockstep_free = True
                self._arm_lockstep_start()  # the node's subscribers may come up late
            elif not self._clock["acked"]:  # a clock reset sent to nobody: again, first
                self._clock.update(sent=0, last=-float("inf"))
            # not at the end of the state sent now, which this tick's own follows at once
            self._next_housekeeping = time.monotonic() + HOUSEKEEPING_S
            self.pacer.reset(self.sim.time_s)
            self._linked = True
            self._publish_state()  # the current state at once: nobody has it yet
        elif self._linked and not up:
            self.stats.link_losses += 1
            self._diagnose(
                "link_lost",
                f"no heartbeat for {self.cfg.heartbeat_timeout_s} s"
                + ("; simulation paused" if self.cfg.require_bridge else ""),
                level="warn",
            )
        self._linked = up
        return up or not self.cfg.require_bridge

    def _read_subscriptions(self) -> None:
        """'ros' mode: note the node's telemetry subscription coming and going (XPUB
        messages: 1 + prefix on subscribe, 0 + prefix on the last unsubscribe)."""
        for _ in range(64):
            try:
                message = self.pub.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if message[:1] in (b"\x00", b"\x01"):
                self._subscribed = message[:1] == b"\x01"

    # --------------------------------------------------------------- lockstep
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
        """Wait (at most `max_wait_s`) for every required command topic to be fresh. Hub
        mode: the last state is re-sent every `lockstep_republish_s` for late joiners,
        counted across calls, so a short `max_wait_s` cannot starve the re-send. 'ros' mode:
        the start rule (the module doc) may release the tick instead."""
        t0 = time.monotonic()
        last_send = self._lockstep_sent_at if self._lockstep_sent_at is not None else t0
        if self._lockstep_waiting_since is None:
            self._lockstep_waiting_since = t0
        spin_until = t0 + self.cfg.lockstep_spin_s
        while True:
            required = self.required_topics()
            if required and all(s.fresh for s in required):
                self.stats.lockstep_wait_s += time.monotonic() - t0
                self._lockstep_sent_at = None  # a new state follows this step
                self._lockstep_started = True
                return True
            now = time.monotonic()
            if self._start_release(required, now):
                self.stats.lockstep_wait_s += now - t0
                self.stats.lockstep_released += 1
                return True
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

    def _arm_lockstep_start(self) -> None:
        """Begin lockstep's start phase: no topic has had a command yet."""
        self._lockstep_started = False
        self._commanded.clear()
        self._lockstep_waiting_since = None

    def _start_release(self, required: list[CommandSlot], now: float) -> bool:
        """'ros' mode's start rule: True when this tick, waiting since
        `_lockstep_waiting_since` (monotonic s), is to step without every required command;
        ends the start phase once every required topic has had a command."""
        since = self._lockstep_waiting_since
        if not self._ros or self._lockstep_started or not self._linked or since is None:
            return False
        commanded = self._commanded
        if required and all(
            s.fresh or (s.spec.namespace, s.spec.topic) in commanded for s in required
        ):
            self._lockstep_started = True
            return False
        return now - since >= self.cfg.lockstep_start_release_s

    # ------------------------------------------------------------ flow control
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


def resolve_lockstep(names, table: TopicTable, mode: str) -> list[tuple[str, str]] | None:
    """The input topics' keys of `BridgeCfg.lockstep_topics` ('namespace/topic' or a full
    topic name), or None when not given; raises ValueError for one that is no input topic."""
    if names is None:
        return None
    keys = []
    for name in names:
        if name.startswith("/"):
            ns, _, topic = protocol.split_topic(name)
        else:
            ns, _, topic = name.partition("/")
        if (ns, topic) not in table.inputs:
            raise ValueError(
                f"lockstep topic '{name}' is not an input topic (known: "
                f"{', '.join(wire_path(s.spec, mode) for s in table.inputs.values())})"
            )
        keys.append((ns, topic))
    return keys


def wire_path(spec: TopicSpec, mode: str) -> str:
    """A topic's full name as the other side knows it (/<ns>/bsk/... to the ROS 2 node)."""
    prefix = protocol.ROS_PREFIX if mode == "ros" else protocol.OWN_PREFIX
    return protocol.topic_path(spec.namespace, spec.topic, spec.direction, prefix)
