"""Hostile and careless input to the bridge: each defect found against ade7091
as a named regression test. Most call `BridgeServer.handle` directly (no thread, no
sockets: deterministic and fast); the socket-level ones use free loopback ports."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

zmq = pytest.importorskip("zmq")
psutil = pytest.importorskip("psutil")

from orbitlab.bridge import BridgeCfg, BridgeServer, Client, StandInCfg, StandInSim, protocol
from orbitlab.bridge.heartbeat import HeartbeatMonitor, HeartbeatThreadError
from orbitlab.bridge.security import exposure_warning, is_loopback

RSS_BOUND_MB = 20.0
"""Largest RSS growth allowed under one hostile client, MB."""
FORCE = "CmdForceBodyMsgPayload"


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


class Reported(collections.deque):
    codes: collections.Counter

    def __init__(self, maxlen: int):
        super().__init__(maxlen=maxlen)
        self.codes = collections.Counter()


@contextmanager
def bare_server(**overrides):
    """A BridgeServer on free ports that nobody ticks; yields (server, diagnostics), the
    latter the last 100 (code, message) it reported, throttled or not (`reported.codes`
    counts them all)."""
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    server = BridgeServer(sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, **overrides))
    reported = Reported(maxlen=100)
    diagnose = server._diagnose

    def recording(code, message, topic="", level="error"):
        reported.append((code, message))
        reported.codes[code] += 1
        return diagnose(code, message, topic, level)

    server._diagnose = recording
    try:
        yield server, reported
    finally:
        server.close()


@contextmanager
def serving(**overrides):
    """A BridgeServer on free ports ticking at 100 Hz real time in a thread."""
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    server = BridgeServer(
        sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, rate_hz=100.0, **overrides)
    )
    stop = threading.Event()
    thread = threading.Thread(target=server.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=5.0)
        server.close()


def client_for(server: BridgeServer, **overrides) -> Client:
    e = server.endpoints
    return Client(
        pub_port=_port(e["telemetry"]),
        sub_port=_port(e["commands"]),
        heartbeat_port=_port(e["heartbeat"]),
        **overrides,
    )


def wait_until(predicate, client: Client | None = None, timeout_s: float = 5.0) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        client.poll(0.01) if client is not None else time.sleep(0.01)


def frame(**fields) -> bytes:
    return json.dumps(fields).encode()


def good_force(ns: str = "sc0", client: str = "", value=(1.0, 0.0, 0.0)) -> bytes:
    fields = {
        "namespace": ns,
        "msg_type": FORCE,
        "topic_name": "cmd_force",
        "forceRequestBody": list(value),
    }
    if client:
        fields["client"] = client
    return frame(**fields)


def one_line(message: str) -> bool:
    return "\n" not in message and 0 < len(message) < 400


# ------------------------------------------------------------ one frame kills the bridge
@pytest.mark.parametrize(
    "field, value",
    [
        ("namespace", ["leader"]),
        ("namespace", {"a": 1}),
        ("topic_name", ["cmd_force"]),
        ("topic_name", {"t": "cmd_force"}),
        ("msg_type", [FORCE]),
        ("msg_type", {"m": 1}),
        ("client", ["c"]),
    ],
)
def test_a_list_or_object_as_namespace_topic_or_type_is_a_named_error(field, value):
    with bare_server() as (server, reported):
        fields = {
            "namespace": "sc0",
            "topic_name": "cmd_force",
            "forceRequestBody": [0, 0, 0],
            field: value,
        }
        server.handle(frame(**fields))
        code, message = reported[-1]
        assert code == "bad_type" and f"'{field}' must be a string" in message
        assert type(value).__name__ in message and one_line(message)
        server.handle(good_force())  # and the next good command is taken
        assert server.stats.commands == 1 and server.tick()


@pytest.mark.parametrize("levels", [999, 5000])
@pytest.mark.parametrize("shape", ["array", "object", "in_a_field", "with_nan"])
def test_deep_nesting_on_the_command_port_is_refused(levels, shape):
    body = {
        "array": b"[" * levels + b"]" * levels,
        "object": b'{"a":' * levels + b"1" + b"}" * levels,
        "in_a_field": b'{"namespace":"sc0","x":' + b"[" * levels + b"]" * levels + b"}",
        # NaN: msgspec refuses it, so the frame takes the stdlib parser (which recurses)
        "with_nan": b'{"a":NaN,"b":' + b"[" * levels + b"]" * levels + b"}",
    }[shape]
    with bare_server() as (server, reported):
        server.handle(body)
        assert reported[-1][0] == "too_deep" and "max_depth = 8" in reported[-1][1]
        server.handle(good_force())
        assert server.stats.commands == 1 and server.tick()


@pytest.mark.parametrize("levels", [999, 5000])
def test_deep_nesting_on_the_heartbeat_port_keeps_the_link(levels):
    with serving(heartbeat_timeout_s=0.5) as server, client_for(server) as client:
        client.wait_connected()
        hostile = client.context.socket(zmq.PUB)
        hostile.setsockopt(zmq.LINGER, 0)
        hostile.connect(server.endpoints["heartbeat"])
        try:
            time.sleep(0.2)  # the subscription reaches the new PUB
            for _ in range(20):
                hostile.send(b"[" * levels + b"]" * levels)
                hostile.send(b'{"msg":' + b"[" * 999 + b"]" * 999 + b"}")
            code = "too_deep" if levels < 2000 else "too_large"  # 10 KB: over 4 KB
            wait_until(
                lambda: (
                    server.heartbeat.bad >= 40
                    and any(d["code"] == code for d in client.diagnostics)
                ),
                client,
            )
        finally:
            hostile.close()
        assert server.heartbeat._thread.is_alive()
        ticks = server.stats.ticks
        time.sleep(0.8)  # longer than the heartbeat timeout: pings still arrive
        assert server.linked() and server.heartbeat.alive(client.id)
        wait_until(lambda: server.stats.ticks > ticks + 10, client)


# ---------------------------------------------------- client-controlled memory growth
def test_200k_distinct_topic_names_leave_memory_bounded():
    with bare_server(max_routes=16) as (server, reported):
        server.handle(good_force())
        rss0 = _rss_mb()
        head, tail = b'{"namespace":"sc0","topic_name":"', b'","forceRequestBody":[2.0,0,0]}'
        for i in range(200_000):
            if i % 4 == 0:  # another spacecraft's name under sc0: never routed to sc0
                topic = b"/x%d/bsk/in/cmd_force" % i
            elif i % 4 == 1:  # valid spellings of one topic: cached up to max_routes
                topic = b"/" * (i % 200) + b"sc0/bsk/in/cmd_force/"
            else:
                topic = b"t%d" % i
            server.handle(head + topic + tail)
        growth = _rss_mb() - rss0
        assert len(server._routes) <= 16
        assert server.stats.rejected["wrong_topic"] == 50_000
        assert server.stats.rejected["unknown_topic"] == 100_000
        assert server.stats.commands == 1 + 50_000  # every valid spelling still applied
        assert reported.codes["too_many_routes"] == 1
        assert server.table.inputs[("sc0", "cmd_force")].value == [2.0, 0.0, 0.0]
        assert growth < RSS_BOUND_MB, growth


def test_a_topic_name_of_another_spacecraft_is_not_applied_to_this_one():
    with bare_server() as (server, reported):
        server.handle(
            frame(namespace="sc0", topic_name="/sc1/bsk/in/cmd_force", forceRequestBody=[5.0, 0, 0])
        )
        assert reported[-1][0] == "wrong_topic" and "'/sc1/bsk/in/cmd_force'" in reported[-1][1]
        server.handle(
            frame(
                namespace="sc0", topic_name="/sc0/bsk/out/cmd_force", forceRequestBody=[5.0, 0, 0]
            )
        )
        assert reported[-1][0] == "wrong_topic"
        assert server.stats.commands == 0


def test_3k_unique_30kb_field_names_leave_memory_bounded():
    with bare_server() as (server, reported):
        server.handle(good_force())
        rss0 = _rss_mb()
        for i in range(3000):
            name = f"{i:05d}" + "f" * 30_000
            server.handle(
                b'{"namespace":"sc0","topic_name":"cmd_force","' + name.encode() + b'":[0,0,0]}'
            )
        growth = _rss_mb() - rss0
        assert server.stats.rejected["too_long"] == 3000
        code, message = reported[-1]
        assert code == "too_long" and "30005 characters" in message and one_line(message)
        assert protocol.normalize.cache_info().currsize <= 1024
        assert growth < RSS_BOUND_MB, growth


def test_250k_distinct_client_ids_leave_memory_bounded():
    with bare_server(max_clients=100, heartbeat_timeout_s=60.0) as (server, reported):
        hb = server.heartbeat
        assert hb.touch("steady")
        rss0 = _rss_mb()
        for i in range(125_000):  # as commands (typed fast path) ...
            server.handle(
                b'{"namespace":"sc0","msg_type":"CmdForceBodyMsgPayload",'
                b'"client":"cmd-%d","forceRequestBody":[1.0,0,0]}' % i
            )
            if i % 2000 == 1999:
                server._touch_senders()  # what each drain of `service` does
        server._touch_senders()
        for i in range(125_000):  # ... and as pings on the heartbeat port
            hb._handle(b'{"msg":"ping","client":"ping-%d"}' % i)
        growth = _rss_mb() - rss0
        assert len(hb.clients()) == 100 and hb.alive("steady")  # live ids are not evicted
        assert hb.refused_clients == 250_000 - 99
        assert server.stats.commands == 125_000  # without ownership their commands apply
        server._heartbeat_reports()
        assert reported[-1][0] == "too_many_clients" and "max_clients" in reported[-1][1]
        assert growth < RSS_BOUND_MB, growth


def test_silent_client_ids_make_room_for_new_ones():
    with bare_server(max_clients=10, heartbeat_timeout_s=0.2) as (server, _):
        hb = server.heartbeat
        assert all(hb.touch(f"old{i}") for i in range(10))
        assert not hb.touch("new")
        time.sleep(0.3)
        assert hb.touch("new") and len(hb.clients()) == 1


def test_relayed_frames_kept_for_late_joiners_are_bounded():
    with bare_server(relay_topics=("sc0/plan",)) as (server, _):
        server._linked = True
        for i in range(5000):
            server.handle(
                frame(namespace="sc0", topic_name="plan", client="leader", states=[[i, 0.0]] * 30)
            )
        assert server.stats.relayed == 5000 and len(server._relay_frames) == 1
        assert b"[5000" not in server._relay_frames[("sc0", "plan")]
        assert b"[4999," in server._relay_frames[("sc0", "plan")]


@pytest.mark.parametrize("size", [70_000, 200_000])
def test_frames_over_64kb_get_a_diagnostics_message_and_keep_the_connection(size):
    with serving() as server, client_for(server) as client:
        client.wait_connected()
        client.send_raw(b'{"namespace":"sc0","pad":"' + b"x" * size + b'"}')
        wait_until(lambda: any(d["code"] == "too_large" for d in client.diagnostics), client)
        message = next(d for d in client.diagnostics if d["code"] == "too_large")["message"]
        assert f"{size + 28} bytes" in message and "max_message_bytes is 65536" in message
        client.publish_force("sc0", [3.0, 0.0, 0.0])  # the same connection still works
        wait_until(lambda: server.sim.wrench[0, 0] == 3.0, client)


def test_too_many_fields_and_long_meta_strings_are_named_errors():
    with bare_server() as (server, reported):
        server.handle(json.dumps({f"f{i}": 0 for i in range(65)}).encode())
        assert reported[-1][0] == "too_many_fields" and "max_fields is 64" in reported[-1][1]
        server.handle(frame(namespace="s" * 300, topic_name="cmd_force"))
        assert reported[-1][0] == "too_long" and "'namespace' has 300" in reported[-1][1]


# ---------------------------------------------------------------- exposure, auth
def test_binding_a_non_loopback_address_without_authentication_warns(caplog, monkeypatch):
    for host in ("127.0.0.1", "127.3.4.5", "::1", "localhost"):
        assert is_loopback(host) and exposure_warning(host, False) is None
    for host in ("0.0.0.0", "*", "192.168.1.10", "example.org", "::"):
        assert not is_loopback(host)
        assert "curve_secret_key_file" in exposure_warning(host, False)
        assert exposure_warning(host, True) is None

    class NotBound(Exception):
        pass

    def refuse(self):  # nothing is bound to 0.0.0.0 in a test
        raise NotBound

    monkeypatch.setattr(BridgeServer, "_open_sockets", refuse)
    with pytest.raises(NotBound):
        BridgeServer(StandInSim(StandInCfg()), BridgeCfg(host="0.0.0.0"))
    assert any("host '0.0.0.0' is not a loopback address" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(not zmq.has("curve"), reason="libzmq without CURVE")
def test_curve_admits_listed_clients_only(tmp_path):
    import zmq.auth

    (tmp_path / "clients").mkdir()
    zmq.auth.create_certificates(tmp_path, "server")
    zmq.auth.create_certificates(tmp_path / "clients", "friend")
    zmq.auth.create_certificates(tmp_path, "stranger")  # not in clients/
    keys = {
        "curve_secret_key_file": str(tmp_path / "server.key_secret"),
        "curve_clients_dir": str(tmp_path / "clients"),
    }
    server_key = str(tmp_path / "server.key")
    with serving(**keys) as server:
        with (
            client_for(
                server,
                curve_secret_key_file=str(tmp_path / "stranger.key_secret"),
                curve_server_key_file=server_key,
            ) as stranger,
            client_for(server) as plain,
        ):
            with pytest.raises(TimeoutError):
                stranger.wait_connected(timeout_s=1.0)
            stranger.publish_force("sc0", [9.0, 0.0, 0.0])
            plain.publish_force("sc0", [9.0, 0.0, 0.0])
            assert plain.poll(0.3) == 0 and not plain.link_alive()
        with client_for(
            server,
            curve_secret_key_file=str(tmp_path / "clients" / "friend.key_secret"),
            curve_server_key_file=server_key,
        ) as friend:
            friend.wait_connected()
            assert server.stats.commands == 0  # neither stranger's command arrived
            friend.publish_force("sc0", [1.0, 0.0, 0.0])
            wait_until(lambda: server.sim.wrench[0, 0] == 1.0, friend)
            assert server.linked()


def test_curve_config_errors_name_the_file():
    with pytest.raises(ValueError, match="curve_clients_dir"):
        BridgeServer(
            StandInSim(StandInCfg()),
            BridgeCfg(
                pub_port=0, sub_port=0, heartbeat_port=0, curve_secret_key_file="x.key_secret"
            ),
        )
    with pytest.raises(ValueError, match="no key file 'nope.key_secret'"):
        client_setup_args = ("nope.key_secret", "server.key")
        from orbitlab.bridge.security import client_setup

        client_setup(*client_setup_args)


# ------------------------------------------------------------------- ownership
def test_command_ownership_rejects_other_clients_until_the_owner_goes_silent():
    with bare_server(command_ownership=True, heartbeat_timeout_s=0.3) as (server, reported):
        server.handle(good_force("sc0", "alice", (1.0, 0, 0)))
        server.handle(good_force("sc0", "bob", (2.0, 0, 0)))
        assert reported[-1][0] == "not_owner" and "owned by client 'alice'" in reported[-1][1]
        server.handle(good_force("sc1", "bob", (3.0, 0, 0)))  # bob may have sc1
        server.handle(good_force("sc1", "alice", (4.0, 0, 0)))
        assert reported[-1][0] == "not_owner"
        assert server.table.inputs[("sc0", "cmd_force")].value == [1.0, 0.0, 0.0]
        assert server.table.inputs[("sc1", "cmd_force")].value == [3.0, 0.0, 0.0]
        # a claim by advertising (topic confirmation)
        server.handle(
            protocol.encode(
                protocol.topic_confirmation(
                    "sc0", "CmdTorqueBodyMsgPayload", "cmd_torque", "in", True, "bob"
                )
            )
        )
        assert reported[-1][0] == "not_owner"
        time.sleep(0.4)  # alice stops pinging: bob takes sc0 over
        server.handle(good_force("sc0", "bob", (5.0, 0, 0)))
        assert server.table.inputs[("sc0", "cmd_force")].value == [5.0, 0.0, 0.0]
        assert server.claims.owners == {"sc0": "bob", "sc1": "bob"}


# --------------------------------------------------------- guards of every thread
def test_a_frame_that_raises_inside_the_server_is_counted_and_the_loop_serves_on(
    monkeypatch, caplog
):
    with bare_server() as (server, reported):

        def broken(message):
            raise KeyError("bug")

        monkeypatch.setattr(server, "_confirm", broken)
        confirmation = protocol.encode(
            protocol.topic_confirmation("sc0", FORCE, "cmd_force", "in", True, "c")
        )
        for _ in range(3):
            server.handle(confirmation)
        assert server.stats.internal_errors == 3
        assert reported[-1][0] == "internal_error" and "KeyError('bug')" in reported[-1][1]
        server.handle(good_force())
        assert server.stats.commands == 1 and server.tick()
    assert any(r.exc_info for r in caplog.records)  # the traceback is in the log


def test_a_heartbeat_frame_that_raises_is_counted_and_the_thread_serves_on(monkeypatch):
    with bare_server() as (server, reported):
        hb = server.heartbeat
        calls = []

        def flaky(client):
            calls.append(client)
            if len(calls) == 1:
                raise RuntimeError("bug")
            return True

        monkeypatch.setattr(hb, "touch", flaky)
        with client_for(server, heartbeat=True) as client:
            wait_until(lambda: len(calls) >= 3)
            assert hb.errors == 1 and hb._thread.is_alive()
            client.close()
        server._heartbeat_reports()
        assert ("internal_error", "heartbeat frame raised RuntimeError('bug')") in reported


def test_a_dead_heartbeat_thread_stops_the_server_loudly(monkeypatch):
    def crash(self):
        time.sleep(0.3)  # while the server runs
        raise RuntimeError("heartbeat bug")

    monkeypatch.setattr(HeartbeatMonitor, "_serve", crash)
    sim = StandInSim(StandInCfg(num_spacecraft=1, physics_dt=0.01))
    with BridgeServer(
        sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, rate_hz=100.0)
    ) as server:
        t0 = time.monotonic()
        with pytest.raises(HeartbeatThreadError, match="heartbeat bug"):
            server.run(duration_s=10.0)
        assert time.monotonic() - t0 < 5.0  # at the next tick, not at the end of the run


def test_a_process_whose_heartbeat_thread_died_exits_non_zero():
    script = (
        "from orbitlab.bridge import BridgeCfg, BridgeServer, StandInCfg, StandInSim\n"
        "from orbitlab.bridge.heartbeat import HeartbeatMonitor\n"
        "def crash(self): raise RuntimeError('heartbeat bug')\n"
        "HeartbeatMonitor._serve = crash\n"
        "server = BridgeServer(StandInSim(StandInCfg()), BridgeCfg(pub_port=0, sub_port=0,"
        " heartbeat_port=0, rate_hz=50.0))\n"
        "try:\n    server.run(duration_s=20.0)\nfinally:\n    server.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode != 0
    assert "HeartbeatThreadError: bridge heartbeat thread died" in done.stderr


# ------------------------------------------------- frames over ZMQ_MAXMSGSIZE (dropped)
@pytest.mark.parametrize("port", ["commands", "heartbeat"])
def test_a_1mb_frame_gets_a_diagnostics_message_and_the_bridge_serves_on(port):
    with serving() as server, client_for(server) as client:
        client.wait_connected()
        hostile = client.context.socket(zmq.PUB)
        hostile.setsockopt(zmq.LINGER, 0)
        hostile.connect(server.endpoints[port])
        try:
            time.sleep(0.3)  # the bridge's subscription reaches the new PUB
            hostile.send(b'{"namespace":"sc0","pad":"' + b"x" * 2**20 + b'"}')
            wait_until(
                lambda: any(d["code"] == "connection_dropped" for d in client.diagnostics), client
            )
        finally:
            hostile.close()
        message = next(d for d in client.diagnostics if d["code"] == "connection_dropped")
        limit = {"commands": "262144", "heartbeat": "65536"}[port]
        assert f"over {limit} bytes" in message["message"] and one_line(message["message"])
        assert message["level"] == "warn" and server.stats.connections_dropped >= 1
        t0 = client.sim_time
        client.publish_force("sc0", [3.0, 0.0, 0.0])  # the bridge still serves
        wait_until(lambda: server.sim.wrench[0, 0] == 3.0 and client.sim_time > t0 + 0.1, client)


def test_a_client_that_leaves_is_reported_as_closed_not_dropped():
    with serving() as server, client_for(server) as watcher:
        watcher.wait_connected()
        with client_for(server) as leaving:
            leaving.wait_connected()
        wait_until(
            lambda: any(d["code"] == "connection_closed" for d in watcher.diagnostics), watcher
        )
        closed = [d for d in watcher.diagnostics if d["code"] == "connection_closed"]
        assert closed[0]["level"] == "info" and "drops unread" in closed[0]["message"]
        assert not any(d["code"] == "connection_dropped" for d in watcher.diagnostics)
