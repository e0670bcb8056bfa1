"""The bridge server's sockets: telemetry PUB, command SUB and the heartbeat monitor.

'hub' mode binds all three (clients connect); 'ros' mode connects the command SUB and the
heartbeat to the public ROS 2 node's ports and serves telemetry on an XPUB, whose
subscription messages tell when the node's SUB is connected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import zmq

from orbitlab.bridge.config import BridgeCfg
from orbitlab.bridge.connections import ConnectionWatch
from orbitlab.bridge.heartbeat import HeartbeatMonitor
from orbitlab.bridge.schema import FrameLimits, FrameSchema

HEARTBEAT_MAX_BYTES = 4096
"""Largest heartbeat frame read, bytes (a ping is ~40): larger ones are reported, and over
64 KiB ZeroMQ closes the sender's connection."""


class Sockets(NamedTuple):
    pub: zmq.Socket
    """Telemetry out: a PUB ('hub') or an XPUB ('ros')."""
    sub: zmq.Socket
    """Commands in (subscribed to everything)."""
    heartbeat: HeartbeatMonitor
    endpoints: dict[str, str]
    """Endpoints: the simulator's PUB (bound), command SUB and heartbeat SUB."""
    poller: zmq.Poller
    """Polls the command SUB."""


def open_sockets(
    context: zmq.Context,
    cfg: BridgeCfg,
    limits: FrameLimits,
    connections: ConnectionWatch,
    setup: Callable[[zmq.Socket], None] | None = None,
) -> Sockets:
    """Create, configure and bind (or connect) the server's sockets. `limits` are the
    command port's frame limits (the heartbeat's are those, capped at HEARTBEAT_MAX_BYTES);
    `connections` watches the command and heartbeat sockets; `setup` (CURVE) is applied to
    every socket before it binds or connects."""
    c, hub = cfg, cfg.mode == "hub"
    # 'ros' mode: an XPUB, whose subscription messages tell when the node's SUB is
    # connected (frames sent before that are lost: the handshake would need a retry)
    pub_socket = context.socket(zmq.PUB if hub else zmq.XPUB)
    pub_socket.setsockopt(zmq.LINGER, 0)
    pub_socket.setsockopt(zmq.SNDHWM, c.send_hwm)
    sub_socket = context.socket(zmq.SUB)
    sub_socket.setsockopt(zmq.LINGER, 0)
    sub_socket.setsockopt(zmq.RCVHWM, c.recv_hwm)
    sub_socket.setsockopt(zmq.MAXMSGSIZE, c.drop_connection_bytes)
    sub_socket.setsockopt(zmq.SUBSCRIBE, b"")
    connections.add(sub_socket, "command")
    if setup is not None:
        setup(pub_socket)
        setup(sub_socket)

    def heartbeat_setup(socket: zmq.Socket) -> None:
        connections.add(socket, "heartbeat")
        if setup is not None:
            setup(socket)

    pub = _bind(pub_socket, c.host, c.pub_port)
    if hub:
        sub = _bind(sub_socket, c.host, c.sub_port)
    else:
        sub = _connect(sub_socket, c.host, c.sub_port)
    heartbeat = HeartbeatMonitor(
        context,
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
    endpoints = {"telemetry": pub, "commands": sub, "heartbeat": heartbeat.endpoint}
    poller = zmq.Poller()
    poller.register(sub_socket, zmq.POLLIN)
    return Sockets(pub_socket, sub_socket, heartbeat, endpoints, poller)


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
