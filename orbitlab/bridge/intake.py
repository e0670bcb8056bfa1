"""The bridge server's inbound side: draining the command socket, checking every frame,
and taking commands, topic confirmations, clock reset acknowledgements, pings and relayed
frames (`BridgeCfg.relay_topics`).
"""

from __future__ import annotations

import logging
import time

from orbitlab.bridge import protocol
from orbitlab.bridge.publish import HOUSEKEEPING_IDLE_S
from orbitlab.bridge.schema import shown
from orbitlab.bridge.topics import CommandSlot, TopicTable
from orbitlab.bridge.wire import drain, send_frame, shed

log = logging.getLogger("orbitlab.bridge")
COMMAND_TYPES = {t.msg_type: t for t in protocol.COMMAND_TOPICS.values()}


class CommandIntake:
    """`BridgeServer`'s command intake and relay (a mixin).

    Reads `cfg`, `table`, `sub`, `poller`, `pub`, `schema`, `heartbeat`, `claims`, `flow`,
    `_ros`, `_linked`, `_max_bytes`, `_relay_keys`, `_published_at`; writes `stats`,
    `_clock` (acked), `_senders`, `_fresh`, `_routes`, `_routes_full_reported`,
    `_relay_frames`, the slots (value, fresh, counts, owner) and the handshakes (confirmed,
    success). Calls `_diagnose`, `_housekeeping`, `_publish_state` (`publish.StatePublisher`)
    and `_read_subscriptions` (`link.LinkControl`).
    """

    def service(self, timeout_s: float = 0.0) -> int:
        """Wait up to `timeout_s` for commands, then handle at most `max_drain` frames, for
        at most `max_drain_s` (a flood of costly frames cannot stall the clock)."""
        handled = 0
        if self._ros:
            self._read_subscriptions()
        if timeout_s <= 0.0 or self.poller.poll(timeout_s * 1e3):
            c = self.cfg
            until = time.monotonic() + c.max_drain_s
            handled = drain(self.sub, self.handle, c.max_drain, until)
            if handled >= 16 and time.monotonic() > until:
                handled += self._shed()
            self._touch_senders()
        if time.monotonic() - self._published_at >= HOUSEKEEPING_IDLE_S:
            self._housekeeping()  # no telemetry for a while (paused, slow ticks)
        return handled

    def _shed(self) -> int:
        """Overloaded (a drain used all of `max_drain_s`): drop waiting frames over
        `shed_frame_bytes` unread, so that no client's queue holds more than recv_hwm x
        shed_frame_bytes; returns how many others were handled."""
        c = self.cfg
        handled, dropped = shed(
            self.sub, self.handle, c.shed_frame_bytes, c.max_drain, time.monotonic() + c.max_drain_s
        )
        if dropped:
            self.stats.shed += dropped
            self._diagnose(
                "overloaded",
                f"{dropped} frames over shed_frame_bytes = "
                f"{c.shed_frame_bytes} dropped unread ({self.stats.shed} so far): "
                "frames arrive faster than the bridge can check them",
                level="warn",
            )
        return handled

    def _touch_senders(self) -> None:
        """Mark the clients whose commands the last drain took as heard (once per drain)."""
        for client in self._senders:
            self.heartbeat.touch(client)
        self._senders.clear()

    def handle(self, frame: bytes) -> None:
        """Handle one frame from the command socket (never raises: bad input is rejected
        and reported, anything unexpected counted as 'internal_error')."""
        try:
            if len(frame) > self._max_bytes:
                self.schema.check_size(frame)
            command = protocol.decode_command(frame)
            if command is not None and self._typed_command(command):
                return
            message = self.schema.decode(frame)
            if "topic_confirmation" in message:
                self._confirm(message)
            elif "clock_reset_ack" in message:
                first = not self._clock["acked"]
                self._clock["acked"] = True
                if first and self._ros and self._linked:
                    self._publish_state()  # the state at the reset time: the node has none
            elif message.get("msg") == "ping":
                self.heartbeat.touch(str(message.get("client", "")))
            elif self._relay_keys and is_relayed(message, self._relay_keys):
                self._relay(frame, message)
            else:
                self._command(message)
        except protocol.ProtocolError as error:
            self.stats.rejected[error.code] = self.stats.rejected.get(error.code, 0) + 1
            self._diagnose(error.code, str(error), topic=error.topic)
        except Exception as error:  # noqa: BLE001 - the per-frame guard: a bug, not input
            try:
                self._internal_error(error, frame)
            except Exception:  # even reporting failed: the log line only
                log.exception("bridge: handling a frame raised")

    def _internal_error(self, error: Exception, frame: bytes) -> None:
        """Count, log (with the traceback while not throttled) and report a frame whose
        handling raised unexpectedly; the loop serves on."""
        self.stats.internal_errors += 1
        self.stats.rejected["internal_error"] = self.stats.rejected.get("internal_error", 0) + 1
        if self._diagnose(
            "internal_error",
            f"handling a frame raised {error!r} (a bridge bug; frame: {shown(bytes(frame[:80]))})",
        ):
            log.error("bridge: traceback of the internal error", exc_info=error)

    # --------------------------------------------------------------- commands
    def _command(self, message: dict) -> None:
        # the schema made these strings (or None): hashable, of bounded length
        key = (message.get("namespace"), message.get("topic_name"), message.get("msg_type"))
        route = self._routes.get(key)
        if route is None:  # first command of this spelling: checked and routed once
            route = route_command(self.table, *key, message)
            if len(self._routes) < self.cfg.max_routes:
                self._routes[key] = route
            elif not self._routes_full_reported:
                self._routes_full_reported = True
                self._diagnose(
                    "too_many_routes",
                    f"{self.cfg.max_routes} command spellings "
                    "(max_routes) cached: new ones are routed on every frame",
                    level="warn",
                )
        slot, parse = route
        self._accept(slot, parse(message), message.get("client") or "")

    def _typed_command(self, command) -> bool:
        """Take a `protocol.decode_command` result of an already routed topic whose vector is
        exactly the topic's; False (nothing done) for anything else."""
        route = self._routes.get((command.namespace, command.topic_name, command.msg_type))
        if route is None:
            return False
        slot, parse = route
        values = parse.from_command(command)
        if values is None:
            return False
        self._accept(slot, values, command.client or "")
        return True

    def _accept(self, slot: CommandSlot, values: list[float], client: str) -> None:
        """Keep a command's vector as its topic's latest value (unless over the topic's
        inbound rate limit: then the frame is dropped) and note its sender as heard."""
        if slot.spec.bounds is not None:
            check_bounds(slot.spec, values)
        if client:
            self._senders.add(client)  # touched once per drain (`service`)
        if self.claims is not None:
            self.claims.admit(slot.spec.namespace, client, slot.spec.path)
        if slot.bucket is not None and not slot.bucket.take(time.monotonic()):
            slot.dropped += 1
            self.stats.rate_dropped += 1
            self._diagnose(
                "rate_limited",
                f"{slot.spec.path}: over "
                f"{self.cfg.max_command_rate_hz} Hz, frame dropped "
                f"({slot.dropped} so far)",
                topic=slot.spec.path,
                level="warn",
            )
            return
        slot.value = values
        if not slot.fresh:
            slot.fresh = True
            self._fresh.append(slot)
        slot.received += 1
        self.stats.commands += 1
        if self.cfg.lockstep and slot.owner is None:
            slot.owner = client

    def _confirm(self, message: dict) -> None:
        rid = message.get("request_id")
        if self.flow is not None and isinstance(rid, str):
            seq = protocol.flow_seq(rid)
            if seq is not None:
                self.flow.answered(seq)
                return
        handshake = self.table.handshakes.get(rid) if isinstance(rid, str) else None
        if handshake is None:
            raise protocol.ProtocolError(
                "unknown_topic", f"confirmation of unknown request '{rid}'", str(rid)
            )
        handshake.confirmed = True
        handshake.success = bool(message.get("success", False))
        if not handshake.success:
            log.info("bridge: %s not created on the other side", handshake.spec.path)
        spec = handshake.spec
        client = message.get("client") or ""
        if spec.direction == "in" and handshake.success and self.claims is not None:
            self.claims.admit(spec.namespace, client, spec.path)
        if spec.direction == "in" and handshake.success and self.cfg.lockstep and not self._ros:
            # (the public node confirms every input topic: lockstep would wait for all)
            slot = self.table.inputs[spec.key]
            if slot.owner is None:
                slot.owner = client

    # ------------------------------------------------------------------ relay
    def _relay(self, frame: bytes, message: dict) -> None:
        """Re-send a client's frame on the telemetry socket (kept with the state's frames, so
        that lockstep's re-sending reaches late subscribers too)."""
        client = message.get("client")
        if client:
            self._senders.add(client)
        if not send_frame(self.pub, frame):
            return
        if self.flow is not None:
            self.flow.count(1)
        self.stats.relayed += 1
        key = (message["namespace"], protocol.short_topic(message["topic_name"]))
        self._relay_frames[key] = bytes(frame)  # the latest per relay topic: bounded


def check_bounds(spec, values: list[float]) -> None:
    """ProtocolError 'out_of_range' naming the first value of a command outside its
    topic's allowed range (`TopicSpec.bounds`): the command is refused, the last kept."""
    for index, (value, (low, high)) in enumerate(zip(values, spec.bounds, strict=False)):
        slack = 1e-9 * max(abs(low), abs(high), 1.0)
        if not low - slack <= value <= high + slack:
            field = COMMAND_TYPES[spec.msg_type].field
            raise protocol.ProtocolError(
                "out_of_range",
                f"{spec.path}: '{field}'[{index}] = {value:g} is outside the actuator's range "
                f"[{low:g}, {high:g}]: command refused, the last one kept",
                spec.path,
            )


def route_command(
    table: TopicTable, ns, topic, msg_type, message: dict
) -> tuple[CommandSlot, protocol.VectorParser]:
    """The slot of a command's (namespace, topic_name, msg_type) and its payload parser;
    raises ProtocolError naming what is missing or unknown."""
    if not isinstance(ns, str) or not ns:
        raise protocol.ProtocolError(
            "missing_field",
            f"command without a 'namespace' (fields: {', '.join(map(str, message)) or 'none'})",
        )
    if (
        topic is not None
        and not isinstance(topic, str)
        or (msg_type is not None and not isinstance(msg_type, str))
    ):
        raise protocol.ProtocolError("bad_type", "topic_name and msg_type must be strings")
    if not topic and not msg_type:
        raise protocol.ProtocolError(
            "missing_field",
            f"command to '{ns}' names neither topic_name nor msg_type",
            f"/{ns}",
        )
    slot = table.route(ns, topic, msg_type)
    spec = slot.spec
    return slot, protocol.VectorParser(COMMAND_TYPES[spec.msg_type], spec.length, spec.path)


def resolve_relay(names, table: TopicTable) -> frozenset[tuple[str, str]]:
    """The (namespace, topic) keys of `BridgeCfg.relay_topics`; raises ValueError for a
    name that is not 'namespace/topic' or that is a simulation topic."""
    keys = set()
    for name in names:
        ns, _, topic = name.strip("/").partition("/")
        if not ns or not topic or "/" in topic:
            raise ValueError(f"relay topic '{name}' must be 'namespace/topic'")
        if (ns, topic) in table.inputs or (ns, topic) in table.outputs:
            raise ValueError(f"relay topic '{name}' is a simulation topic")
        keys.add((ns, topic))
    return frozenset(keys)


def is_relayed(message: dict, keys: frozenset[tuple[str, str]]) -> bool:
    """Whether a frame is for the other clients (`BridgeCfg.relay_topics`)."""
    ns, topic = message.get("namespace"), message.get("topic_name")
    if not isinstance(ns, str) or not isinstance(topic, str):
        return False
    return (ns, protocol.short_topic(topic)) in keys
