"""Hostile frames on the bridge's command and heartbeat ports, against a live BridgeServer.

One server (`StandInSim`, 100 Hz real time) serves in a thread of this process; a watcher
`Client` reads its diagnostics and clock; raw PUB sockets send the hostile frames. A case
is clean when a one-line diagnostics message arrives, the server's threads live, no frame
raised inside it (`internal_errors`), its clock advances and sc0's command was not replaced.
"""

from __future__ import annotations

import json
import math
import threading
import time
from contextlib import contextmanager

import psutil
import zmq

from orbitlab.bridge import BridgeCfg, BridgeServer, Client, StandInCfg, StandInSim
from orbitlab.robustness import CLEAN, CRASH, UNCLEAR, WRONG, Case

FORCE = "CmdForceBodyMsgPayload"
SENTINEL = [0.25, 0.0, 0.0]
"""sc0's force before each case: a refused frame must leave it."""
SCALE = {"topics": 2000, "field_names": 100, "client_ids": 300}
"""Scaled-down floods (the soak and hardening tests run 100x more): distinct topic names,
30 KB field names, client ids (max_clients = 256)."""


class Bench:
    """The served bridge, its watcher and one hostile PUB per port."""

    def __init__(self):
        self.server = BridgeServer(
            StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01)),
            BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, rate_hz=100.0),
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"stop": self.stop}, daemon=True
        )
        self.thread.start()
        port = {k: int(v.rsplit(":", 1)[1]) for k, v in self.server.endpoints.items()}
        self.client = Client(
            pub_port=port["telemetry"],
            sub_port=port["commands"],
            heartbeat_port=port["heartbeat"],
            namespaces=("sc0",),
        )
        self.client.wait_connected(timeout_s=20.0)
        self.sockets = {}
        for key in ("commands", "heartbeat"):
            sock = self.client.context.socket(zmq.PUB)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.server.endpoints[key])
            self.sockets[key] = sock
        self.settle(0.4)  # the server's subscriptions reach the new PUBs
        self._flooded = False

    def close(self) -> None:
        for sock in self.sockets.values():
            sock.close()
        self.client.close()
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.server.close()

    def settle(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.client.poll(0.01)

    def wait(self, predicate, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate():
                return True
            self.client.poll(0.01)
        return predicate()

    def attempt(self, port: str, frames: list, expect_drop: bool = False, huge_ok: bool = False):
        """Send `frames` (bytes, or lists of parts: multipart) on `port`; classify."""
        server, client = self.server, self.client
        client.publish_force("sc0", SENTINEL)
        if not self.wait(lambda: list(server.sim.wrench[0, :3]) == SENTINEL, 2.0):
            return CRASH, "the bridge stopped taking good commands before this case"
        # diagnostics are throttled per wall second: a flood case starts a fresh second
        self.settle(1.1 if len(frames) > 10 or self._flooded else 0.05)
        self._flooded = len(frames) > 10
        client.diagnostics.clear()
        errors, rss0 = server.stats.internal_errors, _rss_mb()
        sock = self.sockets[port]
        for frame in frames:
            try:
                if isinstance(frame, list):
                    sock.send_multipart(frame, zmq.NOBLOCK)
                else:
                    sock.send(frame, zmq.NOBLOCK)
            except zmq.Again:
                pass
        codes = {"connection_dropped"} if expect_drop else None

        def reported():
            return any(codes is None or d["code"] in codes for d in client.diagnostics)

        got = self.wait(reported, 3.0 if expect_drop else 1.5)
        ticks = server.stats.ticks
        serving = self.wait(lambda: server.stats.ticks > ticks + 5, 2.0)
        if expect_drop:
            self.settle(0.3)  # the hostile PUB reconnects and is subscribed again
        growth = _rss_mb() - rss0
        if not self.thread.is_alive() or not server.heartbeat._thread.is_alive():
            return CRASH, "a bridge thread died"
        if server.stats.internal_errors > errors:
            return CRASH, f"{server.stats.internal_errors - errors} internal errors (tracebacks)"
        if not serving:
            return CRASH, "the clock stopped"
        if growth > 20.0:
            return WRONG, f"RSS grew by {growth:.1f} MB"
        applied = list(server.sim.wrench[0, :3]) != SENTINEL
        if not got:
            if huge_ok:
                return CLEAN, f"accepted as a finite value (sc0 wrench {server.sim.wrench[0]})"
            return WRONG, "no diagnostics message" + (" and sc0's command replaced" * applied)
        diag = next(d for d in client.diagnostics if codes is None or d["code"] in codes)
        text = f"{diag['code']}: {diag['message']}"
        if applied and not huge_ok:
            return WRONG, f"reported ({text}) but sc0's command replaced"
        if "\n" in diag["message"] or len(diag["message"]) > 400:
            return UNCLEAR, text
        return CLEAN, f"{text} (RSS {growth:+.1f} MB)"


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _frame(**fields) -> bytes:
    return json.dumps(fields).encode()


def _command(**overrides) -> bytes:
    fields = {"namespace": "sc0", "msg_type": FORCE, "topic_name": "cmd_force"}
    fields["forceRequestBody"] = [1.0, 0.0, 0.0]
    fields.update(overrides)
    return json.dumps(fields, allow_nan=True).encode()


BAD_META = [1, 2.5, True, [], {}, ["x"], {"a": 1}]
NOT_JSON = [b"\xff\xfe\xfd", b"{", b"not json", b"\x00" * 16, b"[1,2", b'{"a":}', b"'x'", b"NaN"]
DEEP = {
    f"{shape} {levels}": body
    for levels in (999, 5000)
    for shape, body in {
        "array": b"[" * levels + b"]" * levels,
        "object": b'{"a":' * levels + b"1" + b"}" * levels,
    }.items()
}
SIZES = {"64 KiB + 1": 65_537, "300 KB": 300_000, "1 MiB": 2**20}
BAD_NUMBERS = {"NaN": math.nan, "inf": math.inf, "-inf": -math.inf}
BAD_VECTORS = {"[]": [], "[1]": [1], "[1,2]": [1, 2], "4 numbers": [1, 2, 3, 4], '"abc"': "abc"}
BAD_VECTORS['["1","2","3"]'] = ["1", "2", "3"]


def _pad(size: int) -> bytes:
    head = b'{"namespace":"sc0","pad":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def command_cases(bench) -> list[Case]:
    cases = []

    def add(name, frames, **kw):
        cases.append(
            Case("bridge: command port", name, lambda: bench().attempt("commands", frames, **kw))
        )

    for key in ("namespace", "topic_name", "msg_type", "client"):
        for value in BAD_META:
            add(f"{key}={json.dumps(value)}", [_command(**{key: value})])
    for name, body in DEEP.items():
        add(f"deep nesting, {name}", [body])
    for name, size in SIZES.items():
        add(f"frame of {name}", [_pad(size)], expect_drop=size > 262144)
    for body in NOT_JSON:
        add(f"non-JSON {body[:12]!r}", [body])
    add("empty frame", [b""])
    add("multipart [empty, junk]", [[b"", b"junk"]])
    add("multipart [command, junk]", [[_command(forceRequestBody=[1, 2]), b"{"]])
    add("unknown topic_name", [_command(topic_name="nope", msg_type=None)])
    add("unknown msg_type", [_command(topic_name=None, msg_type="NopeMsgPayload")])
    add("unknown namespace", [_command(namespace="sc9")])
    add("other spacecraft's topic", [_command(topic_name="/sc1/bsk/in/cmd_force")])
    add("an out topic as command", [_command(topic_name="/sc0/bsk/out/cmd_force")])
    for topic, field_name in (
        ("cmd_force", "forceRequestBody"),
        ("cmd_torque", "torqueRequestBody"),
    ):
        msg_type = "CmdForceBodyMsgPayload" if topic == "cmd_force" else "CmdTorqueBodyMsgPayload"
        for name, number in BAD_NUMBERS.items():
            body = {"topic_name": topic, "msg_type": msg_type, field_name: [number, 0.0, 0.0]}
            if field_name != "forceRequestBody":
                body["forceRequestBody"] = None
            add(f"{topic} {name}", [_strip_none(_command(**body))])
        body = {"topic_name": topic, "msg_type": msg_type, field_name: [1e400, 0, 0]}
        add(f"{topic} 1e400 (inf in JSON)", [_strip_none(_command(**body, **_other(field_name)))])
        body = {"topic_name": topic, "msg_type": msg_type, field_name: [1e308, 0, 0]}
        add(
            f"{topic} 1e308 (finite)",
            [_strip_none(_command(**body, **_other(field_name)))],
            huge_ok=True,
        )
        for name, vector in BAD_VECTORS.items():
            body = {"topic_name": topic, "msg_type": msg_type, field_name: vector}
            add(f"{topic} vector {name}", [_strip_none(_command(**body, **_other(field_name)))])
    head, tail = b'{"namespace":"sc0","topic_name":"', b'","forceRequestBody":[2.0,0,0]}'
    add(
        f"{SCALE['topics']} distinct topic names",
        [head + b"t%d" % i + tail for i in range(SCALE["topics"])],
    )
    add(
        f"{SCALE['field_names']} distinct 30 KB field names",
        [
            b'{"namespace":"sc0","topic_name":"cmd_force","%05d' % i + b"f" * 30_000 + b'":[0,0,0]}'
            for i in range(SCALE["field_names"])
        ],
    )
    add("65 fields", [json.dumps({f"f{i}": 0 for i in range(65)}).encode()])
    add("300-character namespace", [_command(namespace="s" * 300)])
    return cases


def _other(field_name: str) -> dict:
    return {} if field_name == "forceRequestBody" else {"forceRequestBody": None}


def _strip_none(frame: bytes) -> bytes:
    fields = json.loads(frame)
    return json.dumps({k: v for k, v in fields.items() if v is not None}, allow_nan=True).encode()


def heartbeat_cases(bench) -> list[Case]:
    cases = []

    def add(name, frames, **kw):
        cases.append(
            Case("bridge: heartbeat port", name, lambda: bench().attempt("heartbeat", frames, **kw))
        )

    add("not a ping", [_frame(msg="pong")])
    add("no msg field", [_frame(client="x")])
    for value in BAD_META:
        add(f"client={json.dumps(value)}", [_frame(msg="ping", client=value)])
        add(f"msg={json.dumps(value)}", [_frame(msg=value)])
    for name, body in DEEP.items():
        add(f"deep nesting, {name}", [body])
    for name, size in {"5 KB": 5000, "70 KB": 70_000, "1 MiB": 2**20}.items():
        add(f"frame of {name}", [_pad(size)], expect_drop=size > 65536)
    for body in NOT_JSON:
        add(f"non-JSON {body[:12]!r}", [body])
    add("empty frame", [b""])
    add("multipart [ping, junk]", [[b'{"msg":"ping"}', b"junk"]])
    add("300-character client id", [_frame(msg="ping", client="c" * 300)])
    add(
        f"{SCALE['client_ids']} client ids (max_clients 256)",
        [_frame(msg="ping", client=f"id{i}") for i in range(SCALE["client_ids"])],
    )
    return cases


@contextmanager
def bench_factory():
    """A callable giving the shared Bench (started on first use), closed at the end."""
    holder: list[Bench] = []

    def get() -> Bench:
        if not holder:
            holder.append(Bench())
        return holder[0]

    try:
        yield get
    finally:
        if holder:
            holder[0].close()
