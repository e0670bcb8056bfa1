"""Reports connections that ZeroMQ closed, among them those it drops for an oversized frame.

A frame larger than a socket's ZMQ_MAXMSGSIZE (`BridgeCfg.drop_connection_bytes` on the
command port, 64 KiB on the heartbeat port) is never read: libzmq sees its length in the
header, closes the connection and discards the rest, so the bridge cannot answer the frame
itself. What libzmq does report, on a socket monitor, is the disconnect
(EVENT_DISCONNECTED, measured with libzmq 4.3.5 on SUB, PULL and ROUTER sockets; the same
event as for a peer that closed its socket: no reason is given) and, ~0.1 s later, the new
connection of the sender's socket, which reconnects by itself (EVENT_ACCEPTED).

`ConnectionWatch` follows both in a daemon thread and tells the two cases apart the only
way left: a connection closed and followed within `RECONNECT_S` by a new one from the same
host was most likely dropped ('connection_dropped', a warning naming the limit); one that
was not followed was most likely closed by its client ('connection_closed', info, still
naming the limit). Both are heuristics and the messages say so. The reports queue up in
`reports` (bounded) for the server, which owns the telemetry socket, to send.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

log = logging.getLogger("orbitlab.bridge")
RECONNECT_S = 1.0
"""A new connection from the same host within this many wall seconds of a close counts as
the dropped sender reconnecting (ZeroMQ retries every 0.1 s by default)."""
EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_MONITOR_STOPPED


class ConnectionWatch:
    """Monitors sockets (`add`, before they bind) and reports their closed connections.

    `reports` holds (code, level, message) tuples, oldest first; `dropped` and `closed`
    count every classified close, reported or not. A failing event is logged and counted
    (`errors`); should the thread end anyway, the bridge goes on unmonitored (it only
    reports) and `failure` says why.
    """

    def __init__(self):
        self._monitors: dict[zmq.Socket, tuple[str, int]] = {}
        self._peers: dict[int, tuple[str, str]] = {}
        """fd -> (host, 'host:port') of the open connections (bounded by the fd limit)."""
        self._closed: collections.deque[tuple[float, str, str, str, int]] = collections.deque()
        """(when, port, host, peer, limit) of closes not yet classified, oldest first."""
        self.reports: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=64)
        self.dropped = 0
        self.closed = 0
        self.errors = 0
        self.failure: BaseException | None = None
        self.muted = False
        """Set while the bridge closes its own sockets: nothing is reported then."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, sock: zmq.Socket, port: str) -> None:
        """Monitor `sock` (call before bind/connect, in the socket's own thread), named
        `port` in the reports; its ZMQ_MAXMSGSIZE is the limit they name."""
        limit = sock.getsockopt(zmq.MAXMSGSIZE)
        self._monitors[sock.get_monitor_socket(EVENTS)] = (port, limit)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bridge-connections", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (after the monitored sockets closed) and close the monitors."""
        self.muted = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for monitor in self._monitors:  # the thread's, or never started
            monitor.close(linger=0)

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException as error:  # a bug: the bridge serves on, unmonitored
            self.failure = error
            log.critical("bridge connection monitor died: %r", error, exc_info=error)

    def _serve(self) -> None:
        poller = zmq.Poller()
        for monitor in self._monitors:
            poller.register(monitor, zmq.POLLIN)
        while not self._stop.is_set():
            for monitor, _ in poller.poll(100):
                for _ in range(100):  # bounded drain
                    if not monitor.poll(0):
                        break
                    try:
                        self._event(recv_monitor_message(monitor), *self._monitors[monitor])
                    except Exception:  # the per-event guard
                        self.errors += 1
                        if self.errors <= 3:
                            log.exception("bridge connection monitor: an event raised")
            self._classify(time.monotonic(), None)

    def _event(self, event: dict, port: str, limit: int) -> None:
        fd = event["value"]
        if event["event"] == zmq.EVENT_ACCEPTED:
            host, peer = _peer(fd)
            self._peers[fd] = (host, peer)
            self._classify(time.monotonic(), host)
        elif event["event"] == zmq.EVENT_DISCONNECTED and not self.muted:
            host, peer = self._peers.pop(fd, ("?", "an unknown peer"))
            self._closed.append((time.monotonic(), port, host, peer, limit))

    def _classify(self, now: float, reconnected_host: str | None) -> None:
        """Report the closes older than RECONNECT_S (closed by the client) and the oldest
        one from `reconnected_host` (dropped: its sender came back)."""
        while self._closed and now - self._closed[0][0] > RECONNECT_S:
            _, port, _, peer, limit = self._closed.popleft()
            self.closed += 1
            self._report(
                "connection_closed",
                "info",
                f"{port} port: connection from {peer} closed (the client disconnected, or "
                f"it sent a frame over {limit} bytes, which ZeroMQ drops unread, and did "
                "not reconnect)",
            )
        for i, (when, port, host, peer, limit) in enumerate(self._closed):
            if host == reconnected_host:
                del self._closed[i]
                self.dropped += 1
                self._report(
                    "connection_dropped",
                    "warn",
                    f"{port} port: connection from {peer} closed and a new one from "
                    f"{host} came {now - when:.2f} s later: most likely it sent a frame "
                    f"over {limit} bytes, which ZeroMQ drops unread with its connection "
                    "(else a client left and another joined)",
                )
                return

    def _report(self, code: str, level: str, message: str) -> None:
        if not self.muted:
            self.reports.append((code, level, message))


def _peer(fd: int) -> tuple[str, str]:
    """(host, 'host:port') of a connected socket's peer, ('?', ...) when unknown (closed
    meanwhile, or not TCP)."""
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            address = sock.getpeername()
    except OSError:
        return "?", "an unknown peer"
    if isinstance(address, tuple):
        return str(address[0]), f"{address[0]}:{address[1]}"
    return "?", str(address) or "a local peer"
