"""`orbitlab.bridge.Client`: the controller side of the bridge, for Python controllers.

    with Client(ClientCfg(pub_port=5550, sub_port=5551, heartbeat_port=5552)) as client:
        client.wait_connected()
        state = client.wait_for("/leader/orbitlab/out/sc_states")
        client.publish_force("leader", [0.1, 0.0, 0.0])          # N, body axes
        client.publish_torque("leader", [0.0, 0.0, 0.01])        # N m, body axes
        print(client.clock())                                     # follows /clock

The client pings the simulator every 0.1 s from a thread (the same heartbeat as the ROS 2
node), keeps the latest message of every telemetry topic (never conflated across topics),
answers topic requests for the topics it publishes or subscribes to and acknowledges clock
resets. By default it connects to a simulator in 'hub' mode; with `bind=True` it takes the
ROS 2 node's place in front of a simulator in 'ros' mode.
"""

from __future__ import annotations

import collections
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

import zmq

from orbitlab.bridge import protocol
from orbitlab.bridge.heartbeat import HeartbeatSender
from orbitlab.bridge.security import client_setup
from orbitlab.bridge.wire import batch_io_threads, drain, send_frame, send_frames

Key = tuple[str, str]
_DIAGNOSTICS_KEY = (protocol.DIAGNOSTICS_NS, protocol.DIAGNOSTICS_TOPIC)


@dataclass(kw_only=True)
class ClientCfg:
    host: str = "127.0.0.1"
    pub_port: int = protocol.PUB_PORT
    """The simulator's telemetry PUB port."""
    sub_port: int = protocol.SUB_PORT
    """The simulator's command SUB port."""
    heartbeat_port: int = protocol.HEARTBEAT_PORT
    bind: bool = False
    """Bind the command and heartbeat ports (the ROS 2 node's role) instead of connecting."""
    namespaces: tuple[str, ...] | None = None
    """Receive only these namespaces' telemetry, and the simulator's clock, topic requests
    and diagnostics (ZeroMQ filters at the simulator, `protocol.subscription_prefixes`);
    None: everything. A controller of some spacecraft among many then never spends time on
    the others' telemetry. Frames other clients have relayed pass only when written as
    this client writes them (compact JSON, `namespace` first)."""
    client_id: str = ""
    """Id sent with commands and pings ('' : a unique one)."""
    heartbeat: bool = True
    hwm: int = 100000
    """Telemetry frames queued at most before ZeroMQ drops."""
    max_drain: int = 20000
    """Most frames handled per poll."""
    send_batch: int = 256
    """Commands that callbacks publish during `poll` are sent in bursts of at most this
    many (1: each at once)."""
    link_timeout_s: float = protocol.HEARTBEAT_TIMEOUT_S
    """The simulator counts as gone after this long without a message, s."""
    diagnostics_kept: int = 1000
    batch_io_threads: bool = True
    """Run this process's ZeroMQ I/O threads (every context's) under SCHED_BATCH (Linux; see
    `wire.batch_io_threads`)."""
    curve_secret_key_file: str = ""
    """This client's CURVE key file (`<name>.key_secret`), for a simulator with CURVE
    (`security`); its public `<name>.key` must be in the simulator's curve_clients_dir."""
    curve_server_key_file: str = ""
    """The simulator's public key file (`<name>.key`)."""


class Client:
    """Subscribe to telemetry, publish commands, follow the simulation clock."""

    def __init__(self, cfg: ClientCfg | None = None, **overrides):
        cfg = cfg or ClientCfg()
        for key, value in overrides.items():
            if not hasattr(cfg, key):
                raise TypeError(f"unknown client option '{key}'")
            setattr(cfg, key, value)
        if isinstance(cfg.namespaces, str):
            raise TypeError(
                f"namespaces must be a tuple of namespaces, got the string {cfg.namespaces!r}"
            )
        self.cfg = cfg
        self.id = cfg.client_id or f"c{os.getpid()}-{uuid.uuid4().hex[:6]}"
        setup = client_setup(cfg.curve_secret_key_file, cfg.curve_server_key_file)
        self.context = zmq.Context()
        self.sub = self.context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        if setup is not None:
            setup(self.sub)
        self.sub.setsockopt(zmq.RCVHWM, cfg.hwm)
        for prefix in (
            [b""] if cfg.namespaces is None else protocol.subscription_prefixes(cfg.namespaces)
        ):
            self.sub.setsockopt(zmq.SUBSCRIBE, prefix)
        self.sub.connect(f"tcp://{cfg.host}:{cfg.pub_port}")
        # An XPUB sends like a PUB and also hands us the simulator's subscription, so that
        # `wait_connected` can tell when commands will be delivered (a PUB silently drops
        # what it sends before its peer has subscribed).
        self.pub = self.context.socket(zmq.XPUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.SNDHWM, cfg.hwm)
        if setup is not None:
            setup(self.pub)
        command = f"tcp://{cfg.host}:{cfg.sub_port}"
        self.pub.bind(command) if cfg.bind else self.pub.connect(command)
        self.heartbeat = (
            HeartbeatSender(
                self.context,
                f"tcp://{cfg.host}:{cfg.heartbeat_port}",
                bind=cfg.bind,
                client=self.id,
                setup=setup,
            )
            if cfg.heartbeat
            else None
        )
        if cfg.batch_io_threads:
            batch_io_threads()
        protocol.warn_if_slow_codec()
        self.poller = zmq.Poller()
        self.poller.register(self.sub, zmq.POLLIN)
        self.latest_messages: dict[Key, dict] = {}
        self._counts: dict[Key, int] = {}
        self.callbacks: dict[Key, list[Callable[[dict], None]]] = {}
        self.clock_callbacks: list[Callable[[float], None]] = []
        """Called with each clock message's sim_time, s (inside `poll`); see `on_clock`."""
        self.advertised: dict[Key, str] = {}
        """Input topics this client publishes: (ns, topic) -> msg_type."""
        self.subscribed: set[Key] = set()
        self._writers: dict[Key, Callable[[int, list[float]], bytes]] = {}
        """(namespace, topic) -> its bound command writer (`protocol.command_writer`)."""
        self.diagnostics: collections.deque[dict] = collections.deque(maxlen=cfg.diagnostics_kept)
        self.topic_requests: dict[str, dict] = {}
        self.clock_resets = 0
        self.sim_time = 0.0
        """Simulation time of the last clock message, s."""
        self.accel = 0.0
        """accelFactor of the last clock message."""
        self._clock_wall = time.monotonic()
        self._clock_out = 0.0
        self._last_heard = -float("inf")
        self._subscribers = 0
        self._closed = False
        self._outbox: list[bytes] | None = None
        """While `poll` runs callbacks: their frames, sent together when it returns."""

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.heartbeat is not None:
            self.heartbeat.close()
        self.sub.close(linger=0)
        self.pub.close(linger=0)
        self.context.term()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- topics
    @staticmethod
    def _key(topic: str | Key, namespace: str | None = None) -> Key:
        if isinstance(topic, tuple):
            return topic
        if namespace is not None:
            return (namespace, topic)
        ns, _, short = protocol.split_topic(topic)
        return (ns, short)

    def subscribe(self, topic: str | Key, callback: Callable[[dict], None] | None = None) -> Key:
        """Take interest in a telemetry topic ('/<ns>/orbitlab/out/<topic>' or (ns, topic)),
        optionally calling `callback(message)` on each arrival (inside `poll`)."""
        key = self._key(topic)
        self.subscribed.add(key)
        if callback is not None:
            self.callbacks.setdefault(key, []).append(callback)
        return key

    def on_clock(self, callback: Callable[[float], None]) -> None:
        """Call `callback(sim_time)` (s) on every clock message, inside `poll`: each tick's
        clock, even when several arrive in one poll (`sim_time` keeps only the last)."""
        self.clock_callbacks.append(callback)

    def advertise(self, namespace: str, topic: str, msg_type: str | None = None) -> None:
        """Declare an input topic this client publishes (claims it for lockstep)."""
        msg_type = msg_type or protocol.COMMAND_TOPICS[topic].msg_type
        self.advertised[(namespace, topic)] = msg_type
        self._send(protocol.topic_confirmation(namespace, msg_type, topic, "in", True, self.id))

    # ------------------------------------------------------------- commands
    def publish(self, namespace: str, topic: str, msg_type: str | None = None, **fields) -> None:
        """Send a command: payload `fields` (Basilisk names, e.g. forceRequestBody=[...])."""
        msg_type = msg_type or protocol.COMMAND_TOPICS[topic].msg_type
        if (namespace, topic) not in self.advertised:
            self.advertised[(namespace, topic)] = msg_type
        message = {
            "namespace": namespace,
            "msg_type": msg_type,
            "topic_name": topic,
            "timestamp": int(self.clock() * 1e9),
            "client": self.id,
            **fields,
        }
        self._send(message)

    def _publish_vector(self, namespace: str, topic: str, values) -> None:
        """`publish` of a command type's vector field, through a writer bound to the topic
        once (the per-spacecraft commands of a 1 kHz loop)."""
        write = self._writers.get((namespace, topic)) or self._writer(namespace, topic)
        self._queue(write(int(self.clock() * 1e9), list(map(float, values))))

    def _writer(self, namespace: str, topic: str) -> Callable[[int, list[float]], bytes]:
        ctype = protocol.COMMAND_TOPICS[topic]
        self.advertised.setdefault((namespace, topic), ctype.msg_type)
        write = self._writers[(namespace, topic)] = protocol.command_writer(
            namespace, ctype.msg_type, topic, self.id, ctype.field
        )
        return write

    def publish_force(self, namespace: str, force_n) -> None:
        """Body force, N, body axes (3)."""
        self._publish_vector(namespace, "cmd_force", force_n)

    def publish_torque(self, namespace: str, torque_nm) -> None:
        """Body torque about the centre of mass, N m, body axes (3)."""
        self._publish_vector(namespace, "cmd_torque", torque_nm)

    def publish_wheel_torque(self, namespace: str, torque_nm) -> None:
        """Wheel motor torques, N m (one per wheel)."""
        self._publish_vector(namespace, "cmd_wheel_torque", torque_nm)

    def send_raw(self, frame: bytes) -> None:
        """Send any frame on the command socket (tests of the simulator's input checks)."""
        self.pub.send(frame)

    def _send(self, message: dict) -> None:
        self._queue(protocol.encode(message))

    def _queue(self, frame: bytes) -> None:
        """Send a frame now, or with the others when `poll` is running callbacks."""
        outbox = self._outbox
        if outbox is None:
            send_frame(self.pub, frame)
            return
        outbox.append(frame)
        if len(outbox) >= self.cfg.send_batch:
            send_frames(self.pub, outbox)
            outbox.clear()

    # -------------------------------------------------------------- receiving
    def poll(self, timeout_s: float = 0.0) -> int:
        """Wait up to `timeout_s` for telemetry, then handle what arrived (bounded).

        What callbacks publish meanwhile is sent in one burst when the frames that had
        arrived are handled (sooner once `send_batch` are queued, or when a callback
        polls or waits itself).
        """
        if timeout_s > 0.0 and not self.poller.poll(timeout_s * 1e3):
            return 0
        outer = self._outbox is None
        if outer:
            self._outbox = []
        elif self._outbox:  # a callback polls (waits) again: what it published goes out now
            send_frames(self.pub, self._outbox)
            self._outbox.clear()
        handled = 0
        try:
            handled = drain(self.sub, self._handle, self.cfg.max_drain)
        finally:
            if handled:
                self._last_heard = time.monotonic()
            if outer:
                outbox, self._outbox = self._outbox, None
                send_frames(self.pub, outbox)  # back to back (see `wire`)
        return handled

    def _count_subscribers(self) -> None:
        """Read the (un)subscriptions the simulator's command socket sent to our XPUB."""
        while True:
            try:
                event = self.pub.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if event[:1] == b"\x01":
                self._subscribers += 1
            elif event[:1] == b"\x00":
                self._subscribers = max(0, self._subscribers - 1)

    def commands_connected(self) -> bool:
        """Whether the simulator's command socket has subscribed to this client's commands
        (before that, ZeroMQ drops what the client publishes)."""
        self._count_subscribers()
        return self._subscribers > 0

    def _handle(self, frame: bytes) -> None:
        try:
            message = protocol.decode(frame)
        except protocol.ProtocolError:
            return
        ns, topic = message.get("namespace"), message.get("topic_name")
        if ns is not None and topic is not None and "topic_request" not in message:
            key = (ns, topic)  # telemetry (the bulk), then the bridge's own messages
            self.latest_messages[key] = message
            self._counts[key] = self._counts.get(key, 0) + 1
            if key == _DIAGNOSTICS_KEY:
                self.diagnostics.append(message)
            for callback in self.callbacks.get(key, ()):
                callback(message)
        elif "topic_request" in message:
            self._answer_request(message)
        elif "clock_reset" in message:
            self.clock_resets += 1
            self.sim_time, self.accel = 0.0, float(message.get("accelFactor", 0.0))
            self._clock_wall, self._clock_out = time.monotonic(), 0.0
            self._send({"clock_reset_ack": True, "sim_time": 0.0, "accelFactor": self.accel})
        elif "sim_time" in message and "namespace" not in message:
            self.sim_time = float(message["sim_time"])
            self.accel = float(message.get("accelFactor", 0.0))
            self._clock_wall = time.monotonic()
            for clock_callback in self.clock_callbacks:
                clock_callback(self.sim_time)

    def _answer_request(self, message: dict) -> None:
        rid = str(message.get("request_id", ""))
        self.topic_requests[rid] = message
        key = (message.get("namespace"), message.get("topic_name"))
        direction = message.get("direction")
        if (direction == "in" and key in self.advertised) or (
            direction == "out" and key in self.subscribed
        ):
            self._send(
                protocol.topic_confirmation(
                    key[0], message.get("msg_type", ""), key[1], direction, True, self.id
                )
            )

    # ------------------------------------------------------------------ views
    @property
    def counts(self) -> collections.Counter[Key]:
        """Messages received per telemetry topic (a copy)."""
        return collections.Counter(self._counts)

    def latest(self, topic: str | Key, namespace: str | None = None) -> dict | None:
        """The latest message of a telemetry topic (None: none yet)."""
        return self.latest_messages.get(self._key(topic, namespace))

    def wait_for(
        self,
        topic: str | Key,
        timeout_s: float = 5.0,
        newer_than: float | None = None,
        predicate: Callable[[dict], bool] | None = None,
    ) -> dict:
        """Poll until `topic` has a message (with `time` > `newer_than`, passing `predicate`)."""
        key = self._key(topic)
        self.subscribed.add(key)
        end = time.monotonic() + timeout_s
        while True:
            message = self.latest_messages.get(key)
            if (
                message is not None
                and (newer_than is None or message["time"] > newer_than)
                and (predicate is None or predicate(message))
            ):
                return message
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"no message on {protocol.topic_path(*key, 'out')} within {timeout_s} s"
                )
            self.poll(min(remaining, 0.05))

    def wait_connected(self, timeout_s: float = 5.0) -> None:
        """Poll until the simulator's clock has been heard and its command socket has
        subscribed to this client (so that the next command is delivered)."""
        end = time.monotonic() + timeout_s
        while not (self.link_alive() and self.commands_connected()):
            if time.monotonic() > end:
                missing = (
                    "clock from the simulator"
                    if not self.link_alive()
                    else "subscription of the simulator's command socket"
                )
                raise TimeoutError(f"no {missing} within {timeout_s} s")
            self.poll(0.05)

    def link_alive(self) -> bool:
        """Whether the simulator was heard within `link_timeout_s`."""
        return time.monotonic() - self._last_heard <= self.cfg.link_timeout_s

    def clock(self) -> float:
        """The simulation clock as /clock gives it: the last sim_time plus wall time since x
        accelFactor, never going backwards (except after a clock reset), s."""
        now = self.sim_time + (time.monotonic() - self._clock_wall) * self.accel
        self._clock_out = max(self._clock_out, now)
        return self._clock_out
