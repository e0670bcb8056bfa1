"""Bridge soak: one hostile client class after another against a bridge in its own process
(so that its RSS is its own), while a well-behaved client watches the clock.

Per class the bridge's clock must keep advancing (at least a fifth of real time: a loaded
2-core machine, not a stall) and its RSS must not grow by more than RSS_BOUND_MB. The
default variant spends PHASE_S per class (~15 s in all); the `slow` one 10 s per class.
Run with -s to see the measured growth per class."""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
import time

import pytest

zmq = pytest.importorskip("zmq")
psutil = pytest.importorskip("psutil")

from orbitlab.bridge import Client

RSS_BOUND_MB = 20.0
"""Largest RSS growth of the bridge process under one hostile client class, MB."""
PHASE_S = 1.0
"""Wall seconds of hostile traffic per class (default variant)."""
MIN_CLOCK_RATE = 0.2
"""Least simulated seconds per wall second during a phase (1.0 asked)."""

SERVER = """
import json, sys, threading
from orbitlab.bridge import BridgeCfg, BridgeServer, StandInCfg, StandInSim
server = BridgeServer(StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01)),
                      BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, rate_hz=100.0))
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print(json.dumps(server.endpoints), flush=True)
try:
    server.run(stop=stop)
finally:
    print(json.dumps({"ticks": server.stats.ticks, "internal_errors":
                      server.stats.internal_errors, "rejected": server.stats.rejected,
                      "dropped": server.stats.connections_dropped}),
          flush=True)
    server.close()
"""


def _hostile_classes(counter):
    """name -> a function(send_command, send_heartbeat) sending one burst of that class."""
    big = b'{"namespace":"sc0","pad":"' + b"x" * 100_000 + b'"}'
    huge = b'{"namespace":"sc0","pad":"' + b"x" * 300_000 + b'"}'  # closes the connection
    mib = b'{"namespace":"sc0","pad":"' + b"x" * 2**20 + b'"}'
    deep = b"[" * 5000 + b"]" * 5000
    deep_hb = b'{"msg":' + b"[" * 999 + b"]" * 999 + b"}"
    good = (
        b'{"namespace":"sc0","msg_type":"CmdForceBodyMsgPayload","topic_name":"cmd_force",'
        b'"forceRequestBody":[0.1,0.0,0.0]}'
    )

    def flood(cmd, hb):
        for _ in range(200):
            cmd(good)

    def oversized(cmd, hb):
        for _ in range(5):
            cmd(big)
        cmd(huge)

    def megabyte(cmd, hb):  # over both ports' ZMQ_MAXMSGSIZE: connection dropped, reported
        for _ in range(5):
            cmd(mib)
            hb(mib)
        time.sleep(0.02)  # (what this process queues, at most 10 MiB per burst)

    def deep_nesting(cmd, hb):
        for _ in range(20):
            cmd(deep)
            hb(deep_hb)

    def topics(cmd, hb):
        for _ in range(200):
            i = next(counter)
            cmd(b'{"namespace":"sc0","topic_name":"t%d","forceRequestBody":[0,0,0]}' % i)
            cmd(
                b'{"namespace":"sc0","topic_name":"/x%d/bsk/in/cmd_force",'
                b'"forceRequestBody":[0,0,0]}' % i
            )

    def field_names(cmd, hb):
        for _ in range(10):
            name = b"%06d" % next(counter) + b"f" * 30_000
            cmd(b'{"namespace":"sc0","topic_name":"cmd_force","' + name + b'":[0,0,0]}')

    def client_ids(cmd, hb):
        for _ in range(200):
            i = next(counter)
            cmd(
                b'{"namespace":"sc1","msg_type":"CmdForceBodyMsgPayload","client":"id%d",'
                b'"forceRequestBody":[0.0,0.0,0.0]}' % i
            )
            hb(b'{"msg":"ping","client":"hb%d"}' % i)

    def unhashable(cmd, hb):
        for _ in range(100):
            cmd(b'{"namespace":["leader"],"topic_name":"cmd_force","forceRequestBody":[0,0,0]}')
            cmd(b'{"namespace":"sc0","topic_name":{"a":1},"msg_type":["x"]}')

    return {
        "flood": flood,
        "oversized": oversized,
        "megabyte": megabyte,
        "deep_nesting": deep_nesting,
        "topics": topics,
        "field_names": field_names,
        "client_ids": client_ids,
        "unhashable": unhashable,
    }


def _soak(phase_s: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    growth: dict[str, float] = {}
    try:
        endpoints = json.loads(proc.stdout.readline())
        bridge = psutil.Process(proc.pid)
        port = {k: int(v.rsplit(":", 1)[1]) for k, v in endpoints.items()}
        with Client(
            pub_port=port["telemetry"],
            sub_port=port["commands"],
            heartbeat_port=port["heartbeat"],
            namespaces=("sc0",),
        ) as watcher:
            watcher.wait_connected(timeout_s=20.0)
            _run_classes(watcher, endpoints, bridge, phase_s, growth)
        proc.stdin.close()
        summary = json.loads(proc.stdout.readline())
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert summary["internal_errors"] == 0, summary
    assert summary["rejected"].get("too_deep", 0) > 0 and summary["rejected"]["too_large"] > 0
    assert summary["dropped"] > 0, summary  # the 300 KB and 1 MiB frames' connections
    return growth


def _run_classes(watcher, endpoints, bridge, phase_s, growth) -> None:
    classes = _hostile_classes(itertools.count())
    churn = itertools.count()
    for name, burst in [*classes.items(), ("client_churn", None)]:
        rss0 = bridge.memory_info().rss / 2**20
        t_sim0, t0 = watcher.sim_time, time.monotonic()
        while time.monotonic() - t0 < phase_s:
            context = watcher.context
            cmd_sock = context.socket(zmq.PUB)
            hb_sock = context.socket(zmq.PUB)
            for sock, key in ((cmd_sock, "commands"), (hb_sock, "heartbeat")):
                sock.setsockopt(zmq.LINGER, 0)
                sock.setsockopt(zmq.SNDHWM, 1000)
                sock.connect(endpoints[key])
            _settle(watcher, 0.15)  # the bridge's subscription reaches the new sockets
            end = time.monotonic() + (phase_s / 3 if burst else 0.0)
            while burst is not None and time.monotonic() < end:
                burst(functools.partial(_send, cmd_sock), functools.partial(_send, hb_sock))
                watcher.poll()
            if burst is None:  # churn: a real client with a new id, then gone
                with Client(
                    pub_port=watcher.cfg.pub_port,
                    sub_port=watcher.cfg.sub_port,
                    heartbeat_port=watcher.cfg.heartbeat_port,
                    client_id=f"churn{next(churn)}",
                    namespaces=("sc1",),
                ) as c:
                    c.advertise("sc1", "cmd_torque")
                    c.publish_torque("sc1", [0.0, 0.0, 0.01])
                    c.poll(0.05)
            cmd_sock.close()
            hb_sock.close()
        _settle(watcher, 0.3)
        elapsed = time.monotonic() - t0
        rate = (watcher.sim_time - t_sim0) / elapsed
        growth[name] = bridge.memory_info().rss / 2**20 - rss0
        print(f"soak {name:13s}: clock {rate:4.2f} x real time, RSS {growth[name]:+6.1f} MB")
        assert rate > MIN_CLOCK_RATE, (name, rate)
        assert growth[name] <= RSS_BOUND_MB, (name, growth[name])
        assert watcher.link_alive()


def _send(sock, frame: bytes) -> None:
    try:
        sock.send(frame, zmq.NOBLOCK)
    except zmq.Again:
        pass


def _settle(client: Client, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.poll(0.01)


def test_bridge_soak_keeps_the_clock_and_bounds_memory():
    _soak(PHASE_S)


@pytest.mark.slow
def test_bridge_soak_long():
    _soak(10.0)
