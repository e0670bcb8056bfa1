"""Configuration and counters of the simulator side of the bridge (`BridgeServer`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from orbitlab.bridge import protocol
from orbitlab.bridge.flow import FlowCfg
from orbitlab.bridge.schema import FrameLimits


@dataclass(kw_only=True)
class BridgeCfg:
    """Sockets, pacing, limits and security of the simulator side.

    Every inbound frame is checked before use (`schema`): at most `max_message_bytes`,
    `max_depth` levels of nesting, `max_fields` top-level fields, names and meta strings
    of `max_name_chars`; anything else is rejected with a log line and a diagnostics
    message. State that clients can grow is capped: cached command spellings
    (`max_routes`), tracked client ids (`max_clients`), queued frames per client
    (`recv_hwm`) and per subscriber (`send_hwm`).

    Security: the default host is loopback. To serve other machines, set
    `curve_secret_key_file` and `curve_clients_dir` (ZeroMQ CURVE: encrypted connections,
    only listed clients admitted; `security`, docs/bridge.md); binding a non-loopback
    address without them logs a warning. `command_ownership` stops one client from
    commanding a spacecraft another client drives.
    """

    host: str = "127.0.0.1"
    """Interface to bind (and to connect to in 'ros' mode)."""
    pub_port: int = protocol.PUB_PORT
    """Telemetry PUB (bound); 0: a free port."""
    sub_port: int = protocol.SUB_PORT
    """Command SUB; 0 (hub mode only): a free port."""
    heartbeat_port: int = protocol.HEARTBEAT_PORT
    """Heartbeat SUB; 0 (hub mode only): a free port."""
    mode: Literal["hub", "ros"] = "hub"
    """'ros': as the public node expects (the node binds 5551/5552, the simulator connects);
    'hub': the simulator binds all three, so any number of Clients can connect."""
    rate_hz: float = 0.0
    """Bridge tick rate in simulated Hz (rounded to whole physics steps); 0: every step."""
    accel: float = 1.0
    """Simulated seconds per wall second (1: real time); 0: as fast as possible."""
    lockstep: bool = False
    """Step only when every claimed command topic has a fresh message (see the module doc)."""
    lockstep_topics: tuple[str, ...] | None = None
    """Lockstep topics ('ns/topic' or full names); None: those claimed by live clients."""
    lockstep_spin_s: float = 5e-4
    """While waiting in lockstep, poll without blocking for this long before sleeping in the
    poller (wall s): lower round-trip latency for some CPU."""
    lockstep_republish_s: float = 0.1
    """While waiting in lockstep, re-send the last state this often (wall s), for late joiners."""
    lockstep_start_release_s: float = 1.0
    """'ros' mode, lockstep's start rule: until every required topic has had a command (since
    the start, the link coming up or `BridgeServer.reset`), a tick that has waited this long
    (wall s) steps with the held commands (zero before any) and publishes a new state, so
    that a node whose subscription missed the first states gets one; afterwards lockstep
    waits for every command. Longer than the controllers' first answer; inf: never."""
    require_bridge: bool = False
    """Wait for a heartbeat at start and pause while the link is lost."""
    heartbeat_timeout_s: float = protocol.HEARTBEAT_TIMEOUT_S
    """No ping for longer than this: link (or client) lost, s."""
    topic_retry_s: float = protocol.TOPIC_RETRY_S
    topic_retries: int = protocol.TOPIC_RETRIES
    telemetry_rate_hz: float = 0.0
    """Default publisher rate limit of telemetry topics without their own (sensors), Hz."""
    rate_in_wall_clock: bool = False
    """Publisher rate limits count wall-clock instead of simulated seconds."""
    max_drain: int = 2000
    """Most command frames handled per service call (a flood cannot stall a tick)."""
    max_drain_s: float = 0.002
    """... and most wall seconds spent on them per call: rejected frames cost ~10x an
    accepted command, so a flood of them is bounded in time, not only in count."""
    shed_frame_bytes: int = 1024
    """When a drain used all of `max_drain_s` (overload), waiting frames larger than this
    (bytes; a command is ~150-700) are dropped unread and reported ('overloaded'): a
    client's queue then holds at most `recv_hwm` x this (0.5 MB at the defaults) of frames
    the bridge could not check yet."""
    max_command_rate_hz: float = 0.0
    """Inbound limit per command topic, wall Hz (0: none); excess frames are dropped."""
    send_hwm: int = 20000
    """Outgoing frames queued at most per subscriber (then dropped), bounding memory."""
    recv_hwm: int = 500
    """Incoming frames queued at most per client (its queue; when full ZeroMQ stops reading
    that client's connection until the bridge has caught up): 5 ms of 100 spacecraft x
    1 kHz from one client, and with `shed_frame_bytes` what bounds a client's memory. Frames
    wait here before any check: 2000 let a flood of 30 KB frames grow the bridge's RSS by
    35 MB between drains in one soak-test run, 500 measured +0.0 MB (at most 500 x 30 KB)."""
    max_message_bytes: int = 65536
    """Larger frames (bytes) are dropped with a diagnostics message ('too_large')."""
    drop_connection_bytes: int = 262144
    """A frame larger than this (bytes) makes ZeroMQ close its sender's connection before
    it is read (the sender's socket reconnects by itself); the closed connection is
    reported ('connection_dropped', `connections`). With `recv_hwm` it bounds what one
    client can queue here."""
    max_depth: int = 8
    """Deepest nesting of objects/arrays in a frame (a command needs 2, a relayed plan 3)."""
    max_fields: int = 64
    """Most top-level fields of a frame."""
    max_name_chars: int = 256
    """Longest field name and meta string (namespace, topic_name, msg_type, client), chars."""
    max_routes: int = 1024
    """Distinct command spellings (namespace, topic_name, msg_type) whose route is cached;
    past it a new spelling is routed on every frame (slower) and this is reported once."""
    max_clients: int = 256
    """Client ids tracked (heartbeats, lockstep, ownership); when full, ids silent for
    `heartbeat_timeout_s` are forgotten first, else a new id is refused and reported (its
    commands still apply, unless `command_ownership`)."""
    command_ownership: bool = False
    """A client that advertises or commands a spacecraft's input topic owns its commands;
    other clients' commands to it are rejected ('not_owner') until the owner stops pinging
    (`ownership`)."""
    curve_secret_key_file: str = ""
    """The simulator's CURVE key file (`<name>.key_secret` of zmq.auth.create_certificates);
    with `curve_clients_dir` every socket is encrypted and only listed clients connect.
    '': no authentication."""
    curve_clients_dir: str = ""
    """Directory of the public key files (`*.key`) of the clients allowed to connect."""
    flow: FlowCfg = field(default_factory=FlowCfg)
    """'ros' mode: flow control toward the node, which buffers without bound (`flow`): the
    simulation does not step while more than `flow.window` frames are not known consumed."""
    max_lag_s: float = 0.25
    """Pacing: reset the schedule when behind by more than this, wall s."""
    diagnostics_per_s: float = 50.0
    """Diagnostics messages and log lines per wall second at most (the rest are counted)."""
    batch_io_threads: bool = True
    """Run this process's ZeroMQ I/O threads (every context's) under SCHED_BATCH (Linux) so
    that sending does not hand the CPU to them frame by frame (see
    `wire.batch_io_threads`); ~+40% round trips at 100 spacecraft x 1 kHz on the 2-core
    reference machine."""
    relay_topics: tuple[str, ...] = ()
    """Topics ('ns/topic') that clients publish for each other (e.g. a leader's shared plan):
    such a frame arriving on the command socket is re-sent unchanged on the telemetry socket
    (and re-sent with the state while lockstep waits). They must not be simulation topics.
    Empty (default): no relaying; every frame is handled as a command."""


@dataclass
class BridgeStats:
    """Counters of a running bridge."""

    ticks: int = 0
    commands: int = 0
    """Accepted command messages."""
    rejected: dict[str, int] = field(default_factory=dict)
    """Rejected messages by code."""
    rate_dropped: int = 0
    published: int = 0
    paused_s: float = 0.0
    lockstep_wait_s: float = 0.0
    lockstep_released: int = 0
    """Lockstep ticks stepped without every required command by the start rule ('ros' mode,
    `BridgeCfg.lockstep_start_release_s`)."""
    link_losses: int = 0
    requests_sent: int = 0
    """Topic requests sent (first tries and retries)."""
    relayed: int = 0
    """Client frames relayed to the other clients (`BridgeCfg.relay_topics`)."""
    shed: int = 0
    """Frames over `shed_frame_bytes` dropped unread while overloaded."""
    flow_wait_s: float = 0.0
    """'ros' mode: wall time the simulation waited for the node to consume telemetry, s."""
    connections_dropped: int = 0
    """Connections closed and reopened at once from the same host: most likely dropped by
    ZeroMQ for a frame over `BridgeCfg.drop_connection_bytes` (`connections`)."""
    connections_closed: int = 0
    """Other closed client connections (`connections`)."""
    internal_errors: int = 0
    """Frames whose handling raised unexpectedly (a bug): logged, reported, served on."""


def check_lockstep(cfg: BridgeCfg) -> None:
    """Raise ValueError for a bad lockstep timing value of `cfg`."""
    value = cfg.lockstep_start_release_s
    if type(value) not in (int, float) or math.isnan(value) or value <= 0:
        raise ValueError(
            f"lockstep_start_release_s must be a number of wall seconds > 0 (inf: never "
            f"release), got {value!r}"
        )


def frame_limits(cfg: BridgeCfg) -> FrameLimits:
    """The command port's frame limits of a config (raises ValueError on bad values)."""
    if type(cfg.drop_connection_bytes) is not int or not (
        cfg.drop_connection_bytes == -1 or cfg.drop_connection_bytes >= cfg.max_message_bytes
    ):
        raise ValueError(
            f"drop_connection_bytes must be -1 (no limit) or >= "
            f"max_message_bytes = {cfg.max_message_bytes}, got "
            f"{cfg.drop_connection_bytes!r}"
        )
    for name in ("max_routes", "max_clients", "recv_hwm", "send_hwm", "max_drain"):
        value = getattr(cfg, name)
        if type(value) is not int or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return FrameLimits(
        max_message_bytes=cfg.max_message_bytes,
        max_depth=cfg.max_depth,
        max_fields=cfg.max_fields,
        max_name_chars=cfg.max_name_chars,
    )
