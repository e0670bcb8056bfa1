"""Heartbeat: controllers ping the simulator every 0.1 s on their own socket.

`HeartbeatMonitor` (simulator side) serves the heartbeat SUB socket in a background thread
and records, per client id ('' for senders without one, such as the ROS 2 node), when it was
last heard. `HeartbeatSender` (controller side) sends `{"msg": "ping"}` from a thread.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

import zmq

from orbitlab.bridge import protocol
from orbitlab.bridge.schema import FrameLimits, FrameSchema, shown

log = logging.getLogger("orbitlab.bridge")


class HeartbeatThreadError(RuntimeError):
    """The heartbeat thread died (a bug): the server raises this in its own thread rather
    than run on without ever hearing a ping again."""


class HeartbeatMonitor:
    """Listens for pings on `endpoint` (bind or connect) in a daemon thread.

    Every frame is checked by `schema` (size, depth, the ping's fields) and a frame that is
    not a ping is counted and reported (`reports`, which the server turns into diagnostics
    messages, since the telemetry socket is not this thread's); a frame can never end the
    thread (a per-frame guard logs and counts anything unexpected). Should the thread end
    anyway, `check` raises HeartbeatThreadError in the caller's thread.

    At most `max_clients` client ids are tracked; when full, ids not heard for
    `timeout_s` are forgotten first, else the new id is refused (counted, reported).
    """

    def __init__(
        self,
        context: zmq.Context,
        endpoint: str,
        bind: bool,
        timeout_s: float = protocol.HEARTBEAT_TIMEOUT_S,
        max_clients: int = 256,
        schema: FrameSchema | None = None,
        setup=None,
        drop_connection_bytes: int = 65536,
    ):
        self.timeout_s = timeout_s
        self.max_clients = max_clients
        self.schema = schema or FrameSchema(FrameLimits(max_message_bytes=4096))
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._next_sweep = -float("inf")
        self._socket = context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.RCVHWM, 100)
        # a frame over the schema's size is reported; one over this makes ZeroMQ close the
        # sender's connection before it is read (100 queued frames: at most 6.4 MB)
        self._socket.setsockopt(
            zmq.MAXMSGSIZE, max(drop_connection_bytes, self.schema.limits.max_message_bytes)
        )
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        if setup is not None:
            setup(self._socket)  # e.g. CURVE (`security`)
        (self._socket.bind if bind else self._socket.connect)(endpoint)
        self.endpoint = self._socket.getsockopt_string(zmq.LAST_ENDPOINT) if bind else endpoint
        """The endpoint (with the port picked when bound to '*')."""
        self.bad = 0
        """Heartbeat frames that were not pings."""
        self.errors = 0
        """Frames whose handling raised unexpectedly (a bug; logged, the thread went on)."""
        self.refused_clients = 0
        """New client ids refused: `max_clients` live ones already tracked, or too long."""
        self.reports: collections.deque[tuple[str, str]] = collections.deque(maxlen=64)
        """(code, message) of rejected input, oldest first, for the server to report."""
        self.failure: BaseException | None = None
        """Why the thread ended, if it ended by itself."""
        self._thread = threading.Thread(target=self._run, name="bridge-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException as error:  # a bug: recorded for `check`, never silent
            self.failure = error
            log.critical("bridge heartbeat thread died: %r", error, exc_info=error)
        finally:
            self._socket.close(linger=0)

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            for _ in range(100):  # bounded drain
                try:
                    frame = self._socket.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                try:
                    self._handle(frame)
                except Exception as error:  # the per-frame guard
                    self.errors += 1
                    self._report("internal_error", f"heartbeat frame raised {error!r}")
                    if self.errors <= 3:
                        log.exception("bridge heartbeat: handling a frame raised")

    def check(self) -> None:
        """Raise HeartbeatThreadError if the thread ended without `close`."""
        if self.failure is not None or (not self._thread.is_alive() and not self._stop.is_set()):
            raise HeartbeatThreadError(
                f"bridge heartbeat thread died: {self.failure!r}"
            ) from self.failure

    def _report(self, code: str, message: str) -> None:
        self.reports.append((code, message))

    def _handle(self, frame: bytes) -> None:
        try:
            message = self.schema.decode(frame)
            if message.get("msg") != "ping":
                raise protocol.ProtocolError(
                    "not_ping", f'heartbeat frame is not {{"msg": "ping"}}: {shown(frame)}'
                )
        except protocol.ProtocolError as error:
            self.bad += 1
            self._report(error.code, f"heartbeat: {error}")
            return
        self.touch(message.get("client") or "")

    def touch(self, client: str) -> bool:
        """Mark `client` as heard now (also used for commands carrying a client id); False
        when it is a new id that cannot be tracked (see the class docstring).

        A known client's time is replaced without the lock (one atomic store under the GIL
        that never resizes the table, so readers iterating under the lock are safe):
        commands touch on every frame.
        """
        last = self._last
        if client in last:
            last[client] = time.monotonic()
            return True
        if len(client) > self.schema.limits.max_name_chars:
            return self._refuse(
                f"client id of {len(client)} characters refused: at most "
                f"{self.schema.limits.max_name_chars}"
            )
        with self._lock:
            now = time.monotonic()
            if len(last) >= self.max_clients and now >= self._next_sweep:
                self._next_sweep = now + self.timeout_s / 4  # a flood of ids: sweep rarely
                for stale in [c for c, t in last.items() if now - t > self.timeout_s]:
                    del last[stale]
            if len(last) >= self.max_clients:
                return self._refuse(
                    f"client id {shown(client, 40)} refused: "
                    f"{self.max_clients} clients (max_clients) already heard "
                    f"within {self.timeout_s} s"
                )
            last[client] = now
        return True

    def _refuse(self, message: str) -> bool:
        self.refused_clients += 1
        self._report("too_many_clients", message)
        return False

    def alive(self, client: str | None = None) -> bool:
        """Whether `client` (None: anyone) was heard within the timeout."""
        now = time.monotonic()
        with self._lock:
            if client is None:
                return any(now - t <= self.timeout_s for t in self._last.values())
            return now - self._last.get(client, -float("inf")) <= self.timeout_s

    def clients(self) -> dict[str, float]:
        """Seconds since each client was last heard."""
        now = time.monotonic()
        with self._lock:
            return {c: now - t for c, t in self._last.items()}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


class HeartbeatSender:
    """Sends pings every `period_s` from a daemon thread until closed."""

    def __init__(
        self,
        context: zmq.Context,
        endpoint: str,
        bind: bool,
        client: str = "",
        period_s: float = protocol.HEARTBEAT_PERIOD_S,
        setup=None,
    ):
        self.period_s = period_s
        self.paused = threading.Event()
        """Set to stop pinging without closing (tests: simulate a silent client)."""
        self._stop = threading.Event()
        self._frame = protocol.encode({"msg": "ping", **({"client": client} if client else {})})
        self._socket = context.socket(zmq.PUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDHWM, 10)
        if setup is not None:
            setup(self._socket)  # e.g. CURVE (`security`)
        (self._socket.bind if bind else self._socket.connect)(endpoint)
        self._thread = threading.Thread(target=self._run, name="bridge-ping", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.period_s):
                if not self.paused.is_set():
                    try:
                        self._socket.send(self._frame, zmq.NOBLOCK)
                    except zmq.Again:
                        pass
        finally:
            self._socket.close(linger=0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
