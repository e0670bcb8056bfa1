"""Heartbeat: controllers ping the simulator every 0.1 s on their own socket.

`HeartbeatMonitor` (simulator side) serves the heartbeat SUB socket in a background thread
and records, per client id ('' for senders without one, such as the ROS 2 node), when it was
last heard. `HeartbeatSender` (controller side) sends `{"msg": "ping"}` from a thread.
"""

from __future__ import annotations

import logging
import threading
import time

import zmq

from orbitlab.bridge import protocol

log = logging.getLogger("orbitlab.bridge")


class HeartbeatMonitor:
    """Listens for pings on `endpoint` (bind or connect) in a daemon thread."""

    def __init__(self, context: zmq.Context, endpoint: str, bind: bool,
                 timeout_s: float = protocol.HEARTBEAT_TIMEOUT_S):
        self.timeout_s = timeout_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._socket = context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.RCVHWM, 100)
        self._socket.setsockopt(zmq.MAXMSGSIZE, 4096)
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        (self._socket.bind if bind else self._socket.connect)(endpoint)
        self.endpoint = (self._socket.getsockopt_string(zmq.LAST_ENDPOINT) if bind
                         else endpoint)
        """The endpoint (with the port picked when bound to '*')."""
        self.bad = 0
        """Heartbeat frames that were not pings."""
        self._thread = threading.Thread(target=self._run, name="bridge-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if not poller.poll(50):
                    continue
                for _ in range(100):  # bounded drain
                    try:
                        frame = self._socket.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._handle(frame)
        finally:
            self._socket.close(linger=0)

    def _handle(self, frame: bytes) -> None:
        try:
            message = protocol.decode(frame)
        except protocol.ProtocolError:
            message = {}
        if message.get("msg") != "ping":
            self.bad += 1
            if self.bad <= 3:
                log.warning("bridge heartbeat: ignored a frame that is not a ping: %r",
                            frame[:60])
            return
        self.touch(str(message.get("client", "")))

    def touch(self, client: str) -> None:
        """Mark `client` as heard now (also used for commands carrying a client id).

        A known client's time is replaced without the lock (one atomic store under the GIL
        that never resizes the table, so readers iterating under the lock are safe):
        commands touch on every frame.
        """
        last = self._last
        if client in last:
            last[client] = time.monotonic()
            return
        with self._lock:
            last[client] = time.monotonic()

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

    def __init__(self, context: zmq.Context, endpoint: str, bind: bool, client: str = "",
                 period_s: float = protocol.HEARTBEAT_PERIOD_S):
        self.period_s = period_s
        self.paused = threading.Event()
        """Set to stop pinging without closing (tests: simulate a silent client)."""
        self._stop = threading.Event()
        self._frame = protocol.encode({"msg": "ping", **({"client": client} if client else {})})
        self._socket = context.socket(zmq.PUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDHWM, 10)
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
