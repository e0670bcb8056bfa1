"""The bridge against commands outside an actuator's range, numbers beyond the float range,
startup errors and a bounded soak of hostile and valid frames (loopback only)."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

zmq = pytest.importorskip("zmq")

from orbitlab.bridge import BridgeCfg, BridgeServer, Client, StandInCfg, StandInSim

THRUST = "THRArrayCmdForceMsgPayload"


@contextmanager
def recorded(sim):
    """A BridgeServer on free loopback ports that nobody ticks, and the (code, message)
    pairs it reports."""
    server = BridgeServer(sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0))
    reported: list[tuple[str, str]] = []
    diagnose = server._diagnose

    def recording(code, message, topic="", level="error"):
        reported.append((code, message))
        return diagnose(code, message, topic, level)

    server._diagnose = recording
    try:
        yield server, reported
    finally:
        server.close()


@pytest.fixture(scope="module")
def formation_adapter():
    from orbitlab.bridge import SceneAdapter
    from orbitlab.envs.gym import load_cfg
    from orbitlab.scene.scene import Scene
    from orbitlab_tasks import task_entry

    return SceneAdapter(Scene(load_cfg(task_entry("Formation").env_cfg, num_envs=1).scene))


def _thrust(values) -> bytes:
    return json.dumps(
        {"namespace": "leader", "topic_name": "thr_array_cmd_force", "thrForce": values}
    ).encode()


def test_thruster_forces_outside_the_range_are_refused_with_a_diagnostics_message(
    formation_adapter,
):
    spec = next(s for s in formation_adapter.topics() if s.topic == "thr_array_cmd_force")
    assert spec.bounds is not None and len(spec.bounds) == spec.length
    low, high = spec.bounds[0]
    assert low == 0.0 and high > 0.0
    with recorded(formation_adapter) as (server, reported):
        good = [high / 2] * spec.length
        server.handle(_thrust(good))
        slot = server.table.route("leader", "thr_array_cmd_force", None)
        assert slot.value == good and not reported
        for bad in ([-1.0] + [0.0] * (spec.length - 1), [0.0] * (spec.length - 1) + [high * 2]):
            server.handle(_thrust(bad))
            code, message = reported[-1]
            assert code == "out_of_range", reported
            assert "'thrForce'[" in message and f"[0, {high:g}]" in message, message
            assert slot.value == good  # the last good command is kept
        assert server.stats.internal_errors == 0


def test_a_number_beyond_the_float_range_is_reported_as_non_finite():
    sim = StandInSim(StandInCfg(num_spacecraft=1, physics_dt=0.01))
    with recorded(sim) as (server, reported):
        for body in (b"[1e400, 0, 0]", b"[0, -1e400, 0]"):
            frame = b'{"namespace":"sc0","topic_name":"cmd_force","forceRequestBody":' + body + b"}"
            server.handle(frame)
            code, message = reported[-1]
            assert code == "non_finite", reported
            assert "forceRequestBody" in message and "inf" in message, message


def _bridge(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orbitlab.cli.dispatch", "bridge", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_startup_errors_end_the_process_with_one_line_and_status_2():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    busy = holder.getsockname()[1]
    free = ["pub_port=0", "sub_port=0", "heartbeat_port=0", "duration=1"]
    try:
        cases = [
            (["namespaces={nobody: x}", *free], ["namespaces", "'nobody'"]),
            (["namespaces={leader: a/b}", *free], ["'leader'", "'a/b'"]),
            (
                ["lockstep=true", "accel=0", "lockstep_topics=nope/cmd_force", *free],
                ["lockstep topic 'nope/cmd_force'"],
            ),
            (
                [f"sub_port={busy}", "pub_port=0", "heartbeat_port=0"],
                [f"sub_port={busy}", "in use"],
            ),
            (["log=bogus", *free], ["log='bogus'", "DEBUG"]),
        ]
        for argv, words in cases:
            started = time.monotonic()
            done = _bridge(*argv)
            assert done.returncode == 2, (argv, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
            assert all(word in lines[0] for word in words), (words, lines[0])
            assert time.monotonic() - started < 60
    finally:
        holder.close()


def test_the_clock_moves_under_a_mix_of_hostile_and_valid_frames():
    """A few seconds of a hostile PUB at full speed on both ports beside a valid client at
    100 Hz: the simulation time keeps advancing with real time, the valid commands land."""
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    server = BridgeServer(
        sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, rate_hz=100.0, accel=1.0)
    )
    stop = threading.Event()
    thread = threading.Thread(target=server.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    port = {k: int(v.rsplit(":", 1)[1]) for k, v in server.endpoints.items()}
    client = Client(
        pub_port=port["telemetry"],
        sub_port=port["commands"],
        heartbeat_port=port["heartbeat"],
        namespaces=("sc0",),
    )
    context = zmq.Context()
    hostile = {}
    for key in ("commands", "heartbeat"):
        sock = context.socket(zmq.PUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 1000)
        sock.connect(server.endpoints[key])
        hostile[key] = sock
    frames = [
        b"[" * 5000 + b"]" * 5000,
        b'{"namespace":"sc0","topic_name":"cmd_force","forceRequestBody":[1e400,0,0]}',
        b'{"namespace":"sc0","topic_name":"cmd_force","forceRequestBody":[NaN,0,0]}',
        b"\xff\xfe",
        b'{"namespace":' + b'"s' * 20000 + b'"}',
        b'{"msg":"ping","client":' + b"[" * 50 + b"]" * 50 + b"}",
        b"",
    ]
    try:
        client.wait_connected(timeout_s=20.0)
        time.sleep(0.3)
        samples = []
        end = time.monotonic() + 4.0
        n = 0
        while time.monotonic() < end:
            for key, sock in hostile.items():
                for frame in frames:
                    try:
                        sock.send(frame, zmq.NOBLOCK)
                    except zmq.Again:
                        pass
            n += 1
            client.publish_force("sc0", [0.5 + (n % 7) / 100.0, 0.0, 0.0])
            client.poll(0.01)
            samples.append((time.monotonic(), sim.time_s))
        assert thread.is_alive() and server.heartbeat._thread.is_alive()
        assert server.stats.internal_errors == 0
        # the clock advanced in every second of the soak, at least a quarter of real time
        marks = [samples[0]]
        for sample in samples:
            if sample[0] - marks[-1][0] >= 1.0:
                marks.append(sample)
        for (w0, t0), (w1, t1) in itertools.pairwise(marks):
            assert t1 > t0, (w0, t0, w1, t1)
        wall = samples[-1][0] - samples[0][0]
        assert samples[-1][1] - samples[0][1] > 0.25 * wall
        assert 0.5 <= sim.wrench[0, 0] < 0.6  # the valid client's commands land
        assert sum(server.stats.rejected.values()) > 100
    finally:
        for sock in hostile.values():
            sock.close()
        context.term()
        client.close()
        stop.set()
        thread.join(timeout=5.0)
        server.close()
