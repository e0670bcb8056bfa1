"""Optional authentication of the bridge (ZeroMQ CURVE) and the warning for exposed ports.

With CURVE the simulator is the CURVE server on all three of its sockets (whether it binds
or connects) and every client a CURVE client: ZeroMQ encrypts each connection and a ZAP
handler (pyzmq's `ThreadAuthenticator`) admits only clients whose public key file is in
the allowed directory. Keys are the files `zmq.auth.create_certificates(dir, name)` writes:
`name.key` (public) and `name.key_secret` (public and secret). The check is made once per
connection, in ZeroMQ's threads: no per-frame cost in Python.

    server: BridgeCfg(host="0.0.0.0", curve_secret_key_file="keys/server.key_secret",
                      curve_clients_dir="keys/clients")
    client: ClientCfg(host=..., curve_secret_key_file="keys/clients/me.key_secret",
                      curve_server_key_file="keys/server.key")

The public ROS 2 node does not speak CURVE: in 'ros' mode use it on loopback only.
"""

from __future__ import annotations

import ipaddress
import logging
import os

import zmq
import zmq.auth

log = logging.getLogger("orbitlab.bridge")
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or 'localhost') can be reached from this machine only."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name or '*': may be reachable from elsewhere
        return False


def exposure_warning(host: str, authenticated: bool) -> str | None:
    """The warning for serving `host` without authentication, or None when it is fine."""
    if authenticated or is_loopback(host):
        return None
    return (
        f"bridge: host '{host}' is not a loopback address and no authentication is "
        "set: any machine that reaches these ports can command every spacecraft, spoof "
        "heartbeats and claim lockstep topics; set curve_secret_key_file and "
        "curve_clients_dir (see docs/bridge.md) or use host=127.0.0.1"
    )


def _load(path: str, what: str, secret: bool) -> tuple[bytes, bytes | None]:
    if not os.path.isfile(path):
        raise ValueError(
            f"{what}: no key file '{path}' (make keys with zmq.auth.create_certificates)"
        )
    public, secret_key = zmq.auth.load_certificate(path)
    if secret and secret_key is None:
        raise ValueError(f"{what}: '{path}' holds no secret key (give the .key_secret file)")
    return public, secret_key


class CurveServer:
    """The simulator's CURVE keys and the authenticator that admits listed clients."""

    def __init__(self, context: zmq.Context, secret_key_file: str, clients_dir: str):
        if not zmq.has("curve"):
            raise ValueError("curve_secret_key_file is set but this libzmq has no CURVE")
        if not os.path.isdir(clients_dir):
            raise ValueError(
                f"curve_clients_dir: no directory '{clients_dir}' (it holds the "
                "allowed clients' public .key files)"
            )
        self.public, self.secret = _load(secret_key_file, "curve_secret_key_file", True)
        from zmq.auth.thread import ThreadAuthenticator

        self.auth = ThreadAuthenticator(context, log=log.getChild("auth"))
        self.auth.start()
        self.auth.configure_curve(domain="*", location=clients_dir)

    def setup(self, socket: zmq.Socket) -> None:
        """Make `socket` a CURVE server (before bind/connect)."""
        socket.curve_secretkey = self.secret
        socket.curve_publickey = self.public
        socket.curve_server = True

    def close(self) -> None:
        self.auth.stop()


def client_setup(secret_key_file: str, server_key_file: str):
    """A function making a client socket a CURVE client of the server with that public key
    (before connect/bind); None when both files are '' (no authentication)."""
    if not secret_key_file and not server_key_file:
        return None
    if not (secret_key_file and server_key_file):
        raise ValueError(
            "CURVE needs both curve_secret_key_file and curve_server_key_file, "
            f"got {secret_key_file!r} and {server_key_file!r}"
        )
    public, secret = _load(secret_key_file, "curve_secret_key_file", True)
    server_public, _ = _load(server_key_file, "curve_server_key_file", False)

    def setup(socket: zmq.Socket) -> None:
        socket.curve_secretkey = secret
        socket.curve_publickey = public
        socket.curve_serverkey = server_public

    return setup
