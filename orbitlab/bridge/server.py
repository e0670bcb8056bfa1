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
   `lockstep_topics`) has a message newer than the last published state ('ros' mode, until
   each has had its first command: at most `lockstep_start_release_s`, see `link`);
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
import time
from typing import Self

import zmq

from orbitlab.bridge import protocol
from orbitlab.bridge.config import BridgeCfg, BridgeStats, check_lockstep, frame_limits
from orbitlab.bridge.connections import ConnectionWatch
from orbitlab.bridge.diagnostics import Diagnostics
from orbitlab.bridge.flow import FlowWindow
from orbitlab.bridge.heartbeat import HeartbeatThreadError
from orbitlab.bridge.intake import CommandIntake, resolve_relay
from orbitlab.bridge.link import LinkControl, resolve_lockstep
from orbitlab.bridge.ownership import Claims
from orbitlab.bridge.pacing import Pacer, PacerCfg
from orbitlab.bridge.publish import StatePublisher
from orbitlab.bridge.schema import FrameSchema
from orbitlab.bridge.security import CurveServer, exposure_warning
from orbitlab.bridge.sockets import open_sockets
from orbitlab.bridge.topics import CommandSlot, TopicSpec, TopicTable
from orbitlab.bridge.wire import batch_io_threads

log = logging.getLogger("orbitlab.bridge")
__all__ = ["BridgeCfg", "BridgeServer", "BridgeStats", "HeartbeatThreadError"]


class BridgeServer(CommandIntake, LinkControl, StatePublisher):
    """Serves one simulation adapter (`SceneAdapter` or `StandInSim`) over ZeroMQ.

    This class holds the state and the tick loop; its concerns live in mixins, each in its
    own module: `intake.CommandIntake` (commands, confirmations, relay), `link.LinkControl`
    (link, flow control, lockstep) and `publish.StatePublisher` (state, housekeeping).
    Sockets are opened by `sockets.open_sockets`, diagnostics throttled by
    `diagnostics.Diagnostics`.
    """

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
        check_lockstep(c)
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
        self._lockstep_keys = resolve_lockstep(c.lockstep_topics, self.table, c.mode)
        self._relay_keys = resolve_relay(c.relay_topics, self.table)
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
        self._lockstep_started = False
        """Lockstep: every required topic has had a command since the start ('ros' mode's
        start rule no longer releases ticks; `link.LinkControl._start_release`)."""
        self._commanded: set[tuple[str, str]] = set()
        """Input topics (namespace, topic) commanded since the start phase began."""
        self._lockstep_waiting_since: float | None = None
        """When lockstep began waiting for the current tick's commands, monotonic s."""
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
        self._diagnostics = Diagnostics(
            c,
            None if self._ros else self._send,  # the node knows no diagnostics type: log only
            lambda: sim.time_s,
        )
        """Throttled log lines and diagnostics messages (`_diagnose`)."""
        self._running = False
        self._closed = False
        self._routes_full_reported = False
        self._next_housekeeping = -float("inf")
        self._published_at = -float("inf")
        """When telemetry was last sent, monotonic s."""
        self._publish_state(initial=True)

    def _open_sockets(self) -> None:
        setup = self.curve.setup if self.curve is not None else None
        s = open_sockets(self.context, self.cfg, self.schema.limits, self.connections, setup)
        self.pub, self.sub, self.heartbeat = s.pub, s.sub, s.heartbeat
        self.endpoints = s.endpoints
        """Endpoints: the simulator's PUB (bound), command SUB and heartbeat SUB."""
        self.poller = s.poller

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
        self._lockstep_waiting_since = None
        for slot in self._fresh:
            self.sim.apply(slot.spec.namespace, slot.spec.topic, slot.value)
            slot.fresh = False
            self._commanded.add((slot.spec.namespace, slot.spec.topic))
        self._fresh.clear()
        self.sim.step(self.nstep)
        self.stats.ticks += 1
        self._publish_state()
        return True

    def _diagnose(self, code: str, message: str, topic: str = "", level: str = "error") -> bool:
        """A log line and a diagnostics message, at most `diagnostics_per_s` per second;
        False when throttled (only counted)."""
        return self._diagnostics.report(code, message, topic, level)

    # ------------------------------------------------------------------ reset
    def reset(self) -> None:
        """Reset the simulation to t = 0: commands cleared, clock reset sent again."""
        self.sim.reset()
        for slot in self.table.inputs.values():
            slot.value, slot.fresh = None, False
        self._fresh.clear()
        self._arm_lockstep_start()
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
