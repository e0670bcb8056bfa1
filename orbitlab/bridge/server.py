"""The simulator side of the bridge: ZeroMQ sockets, topic handshake, pacing, lockstep.

    server = BridgeServer(SceneAdapter(scene), BridgeCfg(rate_hz=50, accel=1.0))
    print(server.endpoints)
    server.run()                    # until server.stop() / Ctrl-C
    server.close()

One bridge tick advances the simulation by `rate_hz`'s period (a whole number of physics
steps) and then publishes the clock and every due telemetry topic:

1. wait until the next state is due on the wall clock (paced) - or not at all (accel = 0) -
   while draining commands into per-topic latest-value buffers;
2. without a heartbeat: with `require_bridge` pause here (and re-anchor the pacing clock
   when the link returns); otherwise go on without publishing;
3. in lockstep: wait until every command topic claimed by a live client (or listed in
   `lockstep_topics`) has a message newer than the last published state;
4. hand changed commands to the simulation, step, publish.

With `relay_topics`, frames that clients publish on those (non-simulation) topics are
re-sent unchanged on the telemetry socket, so controllers can share data over the bridge
(e.g. a leader's predicted trajectory for its followers).

Bad input never stops the loop: every frame is checked against the frame schema before
use (`schema`: size, nesting depth, field counts and names, meta types), and each rejected
message gives a log line and a message on /bridge/orbitlab/out/diagnostics ({level, code,
message, topic, suppressed}), both throttled to `diagnostics_per_s`. A frame whose
handling raises anything else (a bug) is counted ('internal_error'), logged with its
traceback and reported the same way, and the loop goes on. The heartbeat thread has the
same per-frame guard; should it end anyway, `tick` raises HeartbeatThreadError here in the
server's thread (the process does not run on headless).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Self

import zmq

from orbitlab.bridge import protocol
from orbitlab.bridge.config import BridgeCfg, BridgeStats, frame_limits
from orbitlab.bridge.connections import ConnectionWatch
from orbitlab.bridge.flow import FlowWindow
from orbitlab.bridge.heartbeat import HeartbeatMonitor, HeartbeatThreadError
from orbitlab.bridge.ownership import Claims
from orbitlab.bridge.pacing import Pacer, PacerCfg
from orbitlab.bridge.schema import FrameLimits, FrameSchema, shown
from orbitlab.bridge.security import CurveServer, exposure_warning
from orbitlab.bridge.topics import CommandSlot, TopicSpec, TopicTable
from orbitlab.bridge.wire import batch_io_threads, drain, send_frame, send_frames, shed

log = logging.getLogger("orbitlab.bridge")
COMMAND_TYPES = {t.msg_type: t for t in protocol.COMMAND_TOPICS.values()}
HOUSEKEEPING_S = 0.02
"""Wall seconds between two housekeeping frames (clock reset, topic requests) at least."""
HOUSEKEEPING_IDLE_S = 0.25
"""Without telemetry for this long (wall s), housekeeping frames go out on their own."""
ROS_CLOCK_RETRY_S = 0.25
"""'ros' mode: the clock reset is re-sent this often until acknowledged, wall s."""
HEARTBEAT_MAX_BYTES = 4096
"""Largest heartbeat frame read, bytes (a ping is ~40): larger ones are reported, and over
64 KiB ZeroMQ closes the sender's connection."""
__all__ = ["BridgeCfg", "BridgeServer", "BridgeStats", "HeartbeatThreadError"]


class BridgeServer:
    """Serves one simulation adapter (`SceneAdapter` or `StandInSim`) over ZeroMQ."""

    def __init__(self, sim, cfg: BridgeCfg | None = None):
        self.sim, self.cfg = sim, cfg or BridgeCfg()
        self._lockstep_sent_at: float | None = None
        """When lockstep last (re)sent the state while waiting, monotonic s."""
        c = self.cfg
        if c.mode not in ("hub", "ros"):
            raise ValueError(f"mode must be 'hub' or 'ros', got {c.mode!r}")
        if c.mode == "ros" and (c.sub_port == 0 or c.heartbeat_port == 0):
            raise ValueError(
                "'ros' mode connects to the node's ports: give sub_port and heartbeat_port"
            )
        if c.rate_hz < 0 or c.accel < 0:
            raise ValueError(f"rate_hz and accel must be >= 0, got {c.rate_hz}, {c.accel}")
        self.schema = FrameSchema(frame_limits(c))
        """The command port's frame checks (`schema`)."""
        self._max_bytes = c.max_message_bytes
        if bool(c.curve_secret_key_file) != bool(c.curve_clients_dir):
            raise ValueError(
                "CURVE needs both curve_secret_key_file and curve_clients_dir, "
                f"got {c.curve_secret_key_file!r} and {c.curve_clients_dir!r}"
            )
        warning = exposure_warning(c.host, bool(c.curve_secret_key_file))
        if warning:
            log.warning(warning)
        dt = sim.physics_dt
        self.nstep = max(1, round(1.0 / (c.rate_hz * dt))) if c.rate_hz > 0 else 1
        self.tick_s = self.nstep * dt
        """Simulated seconds per bridge tick."""
        self.table = TopicTable()
        for spec in sim.topics():
            if spec.direction == "out" and spec.max_rate_hz == 0.0:
                spec.max_rate_hz = c.telemetry_rate_hz
            self.table.add(spec, c.max_command_rate_hz)
        self._lockstep_keys = self._resolve_lockstep(c.lockstep_topics)
        self._relay_keys = self._resolve_relay(c.relay_topics)
        self.stats = BridgeStats()
        self._ros = c.mode == "ros"
        self.flow = FlowWindow(c.flow) if self._ros else None
        """'ros' mode: frames sent to the node and known consumed (`flow`)."""
        self.pacer = Pacer(PacerCfg(accel=c.accel, max_lag_s=c.max_lag_s))
        self.context = zmq.Context()
        self.connections = ConnectionWatch()
        """Closed connections, among them those dropped for a frame over ZMQ_MAXMSGSIZE."""
        self.curve: CurveServer | None = None
        try:
            if c.curve_secret_key_file:
                self.curve = CurveServer(self.context, c.curve_secret_key_file, c.curve_clients_dir)
            self._open_sockets()
            self.connections.start()
        except BaseException:
            if self.curve is not None:
                self.curve.close()
            self.context.destroy(linger=0)
            raise
        if c.batch_io_threads:
            batch_io_threads()
        protocol.warn_if_slow_codec()
        self._linked = False
        self._subscribed = False
        """'ros' mode: the node's telemetry SUB is connected and subscribed (XPUB)."""
        self._lockstep_free = False
        """Lockstep: step once without waiting ('ros' mode, after the link comes up)."""
        self._clock = {"sent": 0, "last": -float("inf"), "acked": False}
        self._last_frames: list[bytes] = []
        self._telemetry = protocol.TelemetryFrames()
        self._senders: set[str] = set()
        """Ids of the clients whose commands the current drain took."""
        self._fresh: list[CommandSlot] = []
        """Input slots that received a command since the last step (`CommandSlot.fresh`)."""
        self._routes: dict[tuple, tuple[CommandSlot, protocol.VectorParser]] = {}
        """Commands' (namespace, topic_name, msg_type) -> their slot and payload parser
        (at most `max_routes` spellings)."""
        self._relay_frames: dict[tuple[str, str], bytes] = {}
        """The latest relayed frame per relay topic since the last state (re-sent with it)."""
        self.claims = (
            Claims(self.heartbeat.alive, self.heartbeat.touch) if c.command_ownership else None
        )
        """Command ownership per namespace (`BridgeCfg.command_ownership`), or None."""
        self._diag = {"window": time.monotonic(), "count": 0, "suppressed": 0}
        self._running = False
        self._closed = False
        self._routes_full_reported = False
        self._next_housekeeping = -float("inf")
        self._published_at = -float("inf")
        """When telemetry was last sent, monotonic s."""
        self._publish_state(initial=True)

    # ---------------------------------------------------------------- sockets
    def _open_sockets(self) -> None:
        c, hub = self.cfg, self.cfg.mode == "hub"
        setup = self.curve.setup if self.curve is not None else None
        # 'ros' mode: an XPUB, whose subscription messages tell when the node's SUB is
        # connected (frames sent before that are lost: the handshake would need a retry)
        self.pub = self.context.socket(zmq.PUB if hub else zmq.XPUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.SNDHWM, c.send_hwm)
        self.sub = self.context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, c.recv_hwm)
        self.sub.setsockopt(zmq.MAXMSGSIZE, c.drop_connection_bytes)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.connections.add(self.sub, "command")
        if setup is not None:
            setup(self.pub)
            setup(self.sub)

        def heartbeat_setup(socket: zmq.Socket) -> None:
            self.connections.add(socket, "heartbeat")
            if setup is not None:
                setup(socket)

        pub = _bind(self.pub, c.host, c.pub_port)
        sub = _bind(self.sub, c.host, c.sub_port) if hub else _connect(self.sub, c.host, c.sub_port)
        limits = self.schema.limits
        self.heartbeat = HeartbeatMonitor(
            self.context,
            f"tcp://{c.host}:{c.heartbeat_port or '*'}",
            bind=hub,
            timeout_s=c.heartbeat_timeout_s,
            max_clients=c.max_clients,
            setup=heartbeat_setup,
            schema=FrameSchema(
                FrameLimits(
                    max_message_bytes=min(HEARTBEAT_MAX_BYTES, limits.max_message_bytes),
                    max_depth=limits.max_depth,
                    max_fields=limits.max_fields,
                    max_name_chars=limits.max_name_chars,
                )
            ),
        )
        hb = self.heartbeat.endpoint
        self.endpoints = {"telemetry": pub, "commands": sub, "heartbeat": hb}
        """Endpoints: the simulator's PUB (bound), command SUB and heartbeat SUB."""
        self.poller = zmq.Poller()
        self.poller.register(self.sub, zmq.POLLIN)

    def close(self) -> None:
        """Close every socket (linger 0) and the context; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.connections.muted = True  # our own closes are no news
        self.heartbeat.close()
        self.pub.close(linger=0)
        self.sub.close(linger=0)
        self.connections.close()
        if self.curve is not None:
            self.curve.close()
        self.context.term()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------- loop
    def run(
        self, duration_s: float | None = None, max_ticks: int | None = None, stop=None
    ) -> BridgeStats:
        """Tick until `stop()` / `stop` (a threading.Event) is set, `duration_s` wall seconds
        passed or `max_ticks` ticks stepped."""
        self._running = True
        start = time.monotonic()
        ticks0 = self.stats.ticks
        self.pacer.reset(self.sim.time_s)
        while self._running and not (stop is not None and stop.is_set()):
            if duration_s is not None and time.monotonic() - start >= duration_s:
                break
            if max_ticks is not None and self.stats.ticks - ticks0 >= max_ticks:
                break
            self.tick()
        self._running = False
        return self.stats

    def stop(self) -> None:
        """Make `run` return after the current tick."""
        self._running = False

    def tick(self, max_wait_s: float = 0.1) -> bool:
        """One bridge tick; returns False when it did not step (paused or waiting for
        lockstep commands for `max_wait_s`)."""
        t_next = self.sim.time_s + self.tick_s
        self.pacer.wait(t_next, self.service)
        if not self._check_link():
            t0 = time.monotonic()
            self.service(min(max_wait_s, 0.05))
            self.stats.paused_s += time.monotonic() - t0
            return False
        if self.flow is not None and self._linked and not self._flow_ready(max_wait_s):
            return False
        if self.cfg.lockstep and not self._lockstep_free and not self._lockstep_ready(max_wait_s):
            return False
        self._lockstep_free = False
        for slot in self._fresh:
            self.sim.apply(slot.spec.namespace, slot.spec.topic, slot.value)
            slot.fresh = False
        self._fresh.clear()
        self.sim.step(self.nstep)
        self.stats.ticks += 1
        self._publish_state()
        return True

    @property
    def clock_factor(self) -> float:
        """The clock frames' accelFactor: the pacing factor when paced, 0 as fast as possible
        or in lockstep (the node's `/clock` then moves only with the simulation's frames and
        holds while the simulation waits for commands)."""
        return 0.0 if self.cfg.lockstep or not self.pacer.paced else self.cfg.accel

    # ------------------------------------------------------------------- link
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

    # --------------------------------------------------------------- lockstep
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

    # ---------------------------------------------------------------- inbound
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
            elif self._relay_keys and self._relayed(message):
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

    def _command(self, message: dict) -> None:
        # the schema made these strings (or None): hashable, of bounded length
        key = (message.get("namespace"), message.get("topic_name"), message.get("msg_type"))
        route = self._routes.get(key)
        if route is None:  # first command of this spelling: checked and routed once
            route = self._route(*key, message)
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

    def _route(
        self, ns, topic, msg_type, message: dict
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
        slot = self.table.route(ns, topic, msg_type)
        spec = slot.spec
        return slot, protocol.VectorParser(COMMAND_TYPES[spec.msg_type], spec.length, spec.path)

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
    def _resolve_relay(self, names) -> frozenset[tuple[str, str]]:
        keys = set()
        for name in names:
            ns, _, topic = name.strip("/").partition("/")
            if not ns or not topic or "/" in topic:
                raise ValueError(f"relay topic '{name}' must be 'namespace/topic'")
            if (ns, topic) in self.table.inputs or (ns, topic) in self.table.outputs:
                raise ValueError(f"relay topic '{name}' is a simulation topic")
            keys.add((ns, topic))
        return frozenset(keys)

    def _relayed(self, message: dict) -> bool:
        """Whether a frame is for the other clients (`BridgeCfg.relay_topics`)."""
        ns, topic = message.get("namespace"), message.get("topic_name")
        if not isinstance(ns, str) or not isinstance(topic, str):
            return False
        return (ns, protocol.short_topic(topic)) in self._relay_keys

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

    # --------------------------------------------------------------- outbound
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
        {"info": log.info, "warn": log.warning}.get(level, log.error)(
            "bridge %s: %s", code, message
        )
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

    # ------------------------------------------------------------------ reset
    def reset(self) -> None:
        """Reset the simulation to t = 0: commands cleared, clock reset sent again."""
        self.sim.reset()
        for slot in self.table.inputs.values():
            slot.value, slot.fresh = None, False
        self._fresh.clear()
        for lim in self.table.limiters.values():
            lim.reset()
        if self.claims is not None:
            self.claims.reset()
        self._clock.update(sent=0, last=-float("inf"), acked=False)
        self._next_housekeeping = -float("inf")
        self.pacer.reset(0.0)
        self._publish_state(initial=True)

    def topic_specs(self) -> list[TopicSpec]:
        return [*self.table.outputs.values(), *(s.spec for s in self.table.inputs.values())]


def _wire_path(spec: TopicSpec, mode: str) -> str:
    """A topic's full name as the other side knows it (/<ns>/bsk/... to the ROS 2 node)."""
    prefix = protocol.ROS_PREFIX if mode == "ros" else protocol.OWN_PREFIX
    return protocol.topic_path(spec.namespace, spec.topic, spec.direction, prefix)


def _bind(socket: zmq.Socket, host: str, port: int) -> str:
    if port == 0:
        socket.bind(f"tcp://{host}:*")
    else:
        socket.bind(f"tcp://{host}:{port}")
    return socket.getsockopt_string(zmq.LAST_ENDPOINT)


def _connect(socket: zmq.Socket, host: str, port: int) -> str:
    endpoint = f"tcp://{host}:{port}"
    socket.connect(endpoint)
    return endpoint
