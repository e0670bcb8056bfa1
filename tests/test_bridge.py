"""The external bridge: handshake, clock, heartbeat, commands and telemetry, lockstep,
rejected input, reconnects and floods. Every server binds free ports and closes its sockets
(linger 0); the server runs in a thread, the client in the test."""

from __future__ import annotations

import contextlib
import itertools
import json
import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

zmq = pytest.importorskip("zmq")

from orbitlab.bridge import (
    BridgeCfg,
    BridgeServer,
    Client,
    StandInCfg,
    StandInSim,
    protocol,
)
from orbitlab.bridge.pacing import Pacer, PacerCfg

DIAG = (protocol.DIAGNOSTICS_NS, protocol.DIAGNOSTICS_TOPIC)


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


@contextmanager
def serving(sim=None, **overrides):
    """A BridgeServer on free ports, ticking in a thread (100 Hz real time by default)."""
    sim = sim or StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    kw = {
        "pub_port": 0,
        "sub_port": 0,
        "heartbeat_port": 0,
        "accel": 1.0,
        "rate_hz": 100.0,
        **overrides,
    }
    server = BridgeServer(sim, BridgeCfg(**kw))
    stop = threading.Event()
    thread = threading.Thread(target=server.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=5.0)
        server.close()
        assert not thread.is_alive()


def client_for(server: BridgeServer, **overrides) -> Client:
    e = server.endpoints
    return Client(
        pub_port=_port(e["telemetry"]),
        sub_port=_port(e["commands"]),
        heartbeat_port=_port(e["heartbeat"]),
        **overrides,
    )


def wait_until(predicate, timeout_s: float = 3.0, client: Client | None = None) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        if client is not None:
            client.poll(0.01)
        else:
            time.sleep(0.01)


# ---------------------------------------------------------------------- protocol
def test_protocol_facts():
    assert (protocol.PUB_PORT, protocol.SUB_PORT, protocol.HEARTBEAT_PORT) == (5550, 5551, 5552)
    assert (
        protocol.request_id("bskSat0", "SCStatesMsgPayload", "sc_states", "out")
        == "bskSat0_SCStatesMsgPayload_sc_states_out"
    )
    assert protocol.normalize("forceRequestBody") == protocol.normalize("force_request_body")
    assert protocol.stamp(12.5) == {"sec": 12, "nanosec": 500_000_000}
    assert protocol.split_topic("/bskSat0/bsk/in/cmd_force") == ("bskSat0", "in", "cmd_force")
    msg = protocol.telemetry("sat", "SCStatesMsgPayload", "sc_states", 1.0, {"r_BN_N": [1, 2, 3]})
    assert msg["r_bn_n"] == [1, 2, 3] and msg["stamp"] == {"sec": 1, "nanosec": 0}
    wheel = {
        "namespace": "s",
        "msg_type": "ArrayMotorTorqueMsgPayload",
        "motorTorque": [0.1, 0.2, 0.3] + [0.0] * 33,
    }
    assert protocol.parse_vector(wheel, protocol.WHEEL_TORQUE, 3, "t") == [0.1, 0.2, 0.3]


@pytest.mark.parametrize(
    "payload",
    [
        {"r_BN_N": [1.0, 2.0, 3.0], "sigma_BN": [0.0, 0.1, 0.2]},
        {},
        {"values": [1.5], "names": ['a"b', "c"]},
        {"Time": 3.0},  # lowercased it collides with the head: the plain path
        {"r_BN_N": [1.0], "r_bn_n": [2.0]},  # collide with each other: the plain path
        {"_x": 1, "class": 2, "a b": [None, True]},  # not plain identifiers
    ],
)
def test_telemetry_frames_are_the_reference_encoding(payload):
    frames = protocol.TelemetryFrames()
    for t in (0.0, 12.345678901, 1e9 + 0.5):
        frames.begin(t)
        for _ in range(2):  # the second time from the cached head and field names
            frame = frames.frame("sat", "SCStatesMsgPayload", "sc_states", payload)
            reference = protocol.encode(
                protocol.telemetry("sat", "SCStatesMsgPayload", "sc_states", t, payload)
            )
            assert frame == reference
            assert json.loads(frame)["stamp"] == protocol.stamp(t)


def test_subscription_prefixes_pass_exactly_a_namespace_and_the_bridge_messages():
    prefixes = protocol.subscription_prefixes(["sc1", 'odd"name'])
    frames = protocol.TelemetryFrames()
    frames.begin(1.0)

    def passes(frame: bytes) -> bool:
        return any(frame.startswith(p) for p in prefixes)

    state = {"r_BN_N": [1.0, 2.0, 3.0]}
    for ns in ("sc1", 'odd"name'):
        assert passes(frames.frame(ns, "SCStatesMsgPayload", "sc_states", state))
        assert passes(protocol.encode(protocol.telemetry(ns, "M", "t", 1.0, {"Time": 1})))
    for ns in ("sc0", "sc10", "sc", "odd"):
        assert not passes(frames.frame(ns, "SCStatesMsgPayload", "sc_states", state))
    # what the simulator says itself: clock, clock reset, topic requests, diagnostics
    assert passes(protocol.encode({"sim_time": 1.0, "accelFactor": 1.0}))
    assert passes(protocol.encode({"clock_reset": True, "sim_time": 0.0, "accelFactor": 1.0}))
    assert passes(protocol.encode(protocol.topic_request("sc0", "M", "t", "out")))
    assert passes(
        protocol.encode(
            protocol.telemetry(
                protocol.DIAGNOSTICS_NS, "D", protocol.DIAGNOSTICS_TOPIC, 1.0, {"code": "x"}
            )
        )
    )


def test_command_frames_are_the_reference_encoding():
    for field, values in (("forceRequestBody", [0.5, -1e-9, 3.0]), ("motorTorque", [0.0] * 4)):
        frame = protocol.command_writer("sat", "T", "cmd", "c1", field)(123456789012, values)
        assert frame == protocol.encode(
            {
                "namespace": "sat",
                "msg_type": "T",
                "topic_name": "cmd",
                "timestamp": 123456789012,
                "client": "c1",
                field: values,
            }
        )


@pytest.mark.parametrize("value", [[0.1, -2, 3e-5], [1e308, 1e308, 0.0], [0, 0, 0]])
def test_command_fast_path_gives_the_full_checks_values(value):
    message = {
        "namespace": "s",
        "msg_type": "CmdForceBodyMsgPayload",
        "topic_name": "cmd_force",
        "timestamp": 5,
        "client": "c",
        "forceRequestBody": value,
    }
    fast = protocol.parse_vector(message, protocol.FORCE, 3, "t")
    assert fast == [float(x) for x in value] and all(type(x) is float for x in fast)
    # a spelling the fast path does not know takes the full check, same values
    message["force_request_body"] = message.pop("forceRequestBody")
    assert protocol.parse_vector(message, protocol.FORCE, 3, "t") == fast


def test_typed_command_decoding_takes_only_plain_commands():
    pytest.importorskip("msgspec")
    good = {
        "namespace": "s",
        "msg_type": "CmdForceBodyMsgPayload",
        "topic_name": "cmd_force",
        "timestamp": 5,
        "client": "c",
        "forceRequestBody": [0.5, -2, 0],
    }
    command = protocol.decode_command(json.dumps(good).encode())
    assert command.namespace == "s" and command.forceRequestBody == [0.5, -2.0, 0.0]
    assert all(type(x) is float for x in command.forceRequestBody)
    parser = protocol.VectorParser(protocol.FORCE, 3, "t")
    assert parser.from_command(command) == [0.5, -2.0, 0.0]
    assert protocol.VectorParser(protocol.FORCE, 2, "t").from_command(command) is None
    both = dict(good, torqueRequestBody=[0, 0, 1])  # a second vector: not this topic's alone
    assert parser.from_command(protocol.decode_command(json.dumps(both).encode())) is None
    for frame in (
        b'{"msg": "ping"}',
        b'{"namespace": "s", "force_request_body": [0, 0, 0]}',
        b'{"namespace": "s", "forceRequestBody": [true, 0, 0]}',
        b'{"namespace": "s", "forceRequestBody": [1e999, 0, 0]}',
        b'{"namespace": "s", "forceRequestBody": [NaN, 0, 0]}',
        b'{"namespace": 3}',
        b"[1, 2]",
        b"\xff",
    ):
        assert protocol.decode_command(frame) is None, frame


def test_protocol_without_msgspec_reads_and_writes_the_same_messages():
    """msgspec is the extra's fast codec; without it the standard library does the same."""
    import subprocess
    import sys

    code = """
import json, sys
sys.modules["msgspec"] = None  # as if not installed
from orbitlab.bridge import protocol
assert protocol.decode_command(b'{"namespace": "s", "forceRequestBody": [0, 0, 0]}') is None
frames = protocol.TelemetryFrames()
frames.begin(1.5)
print(frames.frame("n", "m", "t", {"r_BN_N": [1.0, 2.5e-7, 3.0]}).decode())
message = {"namespace": "s", "forceRequestBody": [1, 2, 3]}
print(json.dumps(protocol.parse_vector(message, protocol.FORCE, 3, "t")))
print(protocol.command_writer("s", "T", "cmd", "c", "forceRequestBody")(5, [1.0, 2.0]).decode())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    frames = protocol.TelemetryFrames()
    frames.begin(1.5)
    assert json.loads(out[0]) == json.loads(
        frames.frame("n", "m", "t", {"r_BN_N": [1.0, 2.5e-7, 3.0]})
    )
    assert json.loads(out[1]) == [1.0, 2.0, 3.0]
    assert json.loads(out[2]) == json.loads(
        protocol.command_writer("s", "T", "cmd", "c", "forceRequestBody")(5, [1.0, 2.0])
    )


def test_pacer_real_time_and_catch_up_reset():
    pacer = Pacer(PacerCfg(accel=10.0, max_lag_s=0.05))
    pacer.reset(0.0)
    start = time.monotonic()
    pacer.wait(0.5, lambda timeout: time.sleep(timeout))  # 0.5 s simulated at 10x
    assert 0.045 <= time.monotonic() - start < 0.2
    time.sleep(0.2)  # fall behind by more than max_lag_s: re-anchored, no burst
    calls = []
    pacer.wait(0.6, calls.append)
    assert pacer.resets == 2
    assert calls == [0.0]  # late, yet the sockets are serviced once (commands are not starved)


def test_a_simulation_behind_its_schedule_still_takes_commands():
    """Asked for far more than it can do (every tick late), the bridge still applies each
    command: the pacer services the sockets once per tick even without time to wait."""
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    with serving(sim, accel=1e6) as server, client_for(server) as client:
        client.wait_connected()
        for value in (1.0, 2.0, 3.0):
            client.publish_force("sc1", [value, 0.0, 0.0])
            wait_until(lambda value=value: sim.wrench[1, 0] == value, client=client)
        assert server.pacer.resets > 0  # it was indeed behind


# -------------------------------------------------------------- handshake, clock
def test_topic_handshake_and_clock_reset():
    with serving() as server, client_for(server) as client:
        client.subscribe("/sc0/orbitlab/out/sc_states")
        client.advertise("sc0", "cmd_force")
        rid_out = protocol.request_id("sc0", "SCStatesMsgPayload", "sc_states", "out")
        rid_in = protocol.request_id("sc0", "CmdForceBodyMsgPayload", "cmd_force", "in")
        wait_until(lambda: rid_out in client.topic_requests, client=client)
        request = client.topic_requests[rid_out]
        assert request["topic_request"] is True and request["direction"] == "out"
        wait_until(
            lambda: (
                server.table.handshakes[rid_out].confirmed
                and server.table.handshakes[rid_in].confirmed
            ),
            client=client,
        )
        assert server.table.handshakes[rid_in].success
        # the clock reset of the start is acknowledged ...
        wait_until(lambda: server._clock["acked"], client=client)
        assert client.clock_resets >= 1
        # ... and the clock follows the simulation, never backwards
        wait_until(lambda: client.sim_time > 0.2, client=client)
        readings = []
        for _ in range(20):
            client.poll(0.005)
            readings.append(client.clock())
        assert readings == sorted(readings) and client.accel == 1.0
        assert abs(client.clock() - server.sim.time_s) < 0.2


def test_heartbeat_timeout_pauses_with_require_bridge():
    with serving(require_bridge=True, heartbeat_timeout_s=0.3) as server:
        time.sleep(0.2)
        assert server.stats.ticks == 0  # waits for a heartbeat at start
        with client_for(server) as client:
            wait_until(lambda: server.stats.ticks > 5, client=client)
            requests_before = server.stats.requests_sent
            client.heartbeat.paused.set()  # the controller goes silent
            wait_until(lambda: server.stats.link_losses == 1, client=client)
            ticks = server.stats.ticks
            time.sleep(0.3)
            assert server.stats.ticks - ticks <= 1  # paused
            wait_until(
                lambda: any(d["code"] == "link_lost" for d in client.diagnostics), client=client
            )
            resets = server.pacer.resets
            client.heartbeat.paused.clear()
            wait_until(lambda: server.stats.ticks > ticks + 5, client=client)
            assert server.pacer.resets > resets  # no catching up after the pause
            # topics requested again after the link returned
            assert server.stats.requests_sent > requests_before


def test_without_require_bridge_simulation_runs_alone():
    with serving() as server:
        wait_until(lambda: server.stats.ticks > 10)
        assert not server.linked()


# ------------------------------------------------------- commands and telemetry
def test_client_commands_formation_spacecraft_and_reads_telemetry():
    from orbitlab.bridge import SceneAdapter
    from orbitlab.envs.gym import load_cfg
    from orbitlab.scene.scene import Scene
    from orbitlab_tasks import task_entry

    scene = Scene(load_cfg(task_entry("Formation").env_cfg, num_envs=1).scene)
    adapter = SceneAdapter(scene)
    with serving(adapter, accel=0.0, rate_hz=10.0) as server, client_for(server) as client:
        state = client.wait_for("/leader/orbitlab/out/sc_states")
        assert set(state) >= {
            "namespace",
            "msg_type",
            "topic_name",
            "time",
            "stamp",
            "r_bn_n",
            "v_bn_n",
            "sigma_bn",
            "omega_bn_b",
        }
        r = sum(x * x for x in state["r_bn_n"]) ** 0.5
        assert 6.7e6 < r < 6.8e6  # metres, inertial
        f1 = client.wait_for("/follower_1/orbitlab/out/hill_states")
        assert f1["r_bh_h"] == pytest.approx([-1.0, 0.3, 0.0], abs=0.05)
        env = client.wait_for("/env/orbitlab/out/environment")
        assert 0.0 <= env["eclipse"] <= 1.0 and len(env["sun_eci"]) == 3
        client.wait_for("/follower_1/orbitlab/out/relative_nav")
        # push the leader along body x and turn it about z (body axes)
        t0 = client.latest("/leader/orbitlab/out/hill_states")["time"]
        for _ in range(3):
            client.publish_force("leader", [1.0, 0.0, 0.0])
            client.publish_torque("leader", [0.0, 0.0, 0.05])
            client.poll(0.05)
        out = client.wait_for(
            "/leader/orbitlab/out/rcs_output", predicate=lambda m: sum(m["command"]) > 0.5
        )
        assert max(out["command"]) <= 1.5
        hill = client.wait_for("/leader/orbitlab/out/hill_states", newer_than=t0 + 1.0)
        rate = client.wait_for("/leader/orbitlab/out/sc_states", newer_than=t0 + 1.0)
        assert rate["omega_bn_b"][2] > 0.02  # ~0.05 N m / 0.315 kg m^2 over > 1 s
        speed = sum(v * v for v in hill["v_bh_h"]) ** 0.5
        assert speed > 0.03  # ~1 N / 17.8 kg over > 1 s
        assert server.stats.rejected == {}


def test_a_client_of_some_namespaces_receives_only_their_telemetry():
    sim = StandInSim(StandInCfg(num_spacecraft=11))  # sc0 .. sc10: 'sc1' prefixes 'sc10'
    with serving(sim) as server, client_for(server, namespaces=("sc1",)) as client:
        client.wait_connected()
        client.wait_for("/sc1/orbitlab/out/sc_states", predicate=lambda m: m["time"] > 0.2)
        assert {ns for ns, _ in client.counts} == {"sc1"}
        assert client.sim_time > 0.2 and client.clock_resets >= 1
        assert client.topic_requests  # the simulator's own messages still arrive
        client.publish_force("sc10", [1.0, 2.0, 3.0])  # commanding is not filtered
        wait_until(lambda: sim.wrench[10, 0] == 1.0, client=client)
    with pytest.raises(TypeError, match="tuple of namespaces"):
        Client(namespaces="sc1")


@pytest.mark.parametrize("wall_clock", [False, True])
def test_publisher_rate_limits_in_simulated_or_wall_seconds(wall_clock):
    """Ticks at 100 Hz of simulated time; the states are limited to 25 Hz, counted in
    simulated seconds (every 4th tick exactly) or, at 4x speed, in wall seconds (every
    16th tick on schedule; a loaded machine's late or bursting ticks move that); the clock
    goes out every tick."""
    sim = StandInSim(StandInCfg(num_spacecraft=1, physics_dt=0.01))
    accel = 4.0 if wall_clock else 1.0
    with (
        serving(sim, accel=accel, telemetry_rate_hz=25.0, rate_in_wall_clock=wall_clock) as server,
        client_for(server) as client,
    ):
        times: list[float] = []
        clocks: list[float] = []
        client.subscribe(("sc0", "sc_states"), lambda m: times.append(m["time"]))
        client.wait_connected()
        client.on_clock(clocks.append)  # every clock message, however many arrive per poll
        start = client.sim_time
        while client.sim_time < start + (6.0 if wall_clock else 3.0):  # >= 1.5 s of wall
            client.poll(0.01)
    steps = [round(b / 0.01) - round(a / 0.01) for a, b in itertools.pairwise(times)]
    assert len(steps) >= 15
    if wall_clock:
        assert 10 <= statistics.median(steps) <= 22  # 16 on schedule (not 4, not 1)
    else:
        assert set(steps) == {4}
    clock_steps = [round((b - a) / 0.01) for a, b in itertools.pairwise(clocks)]
    assert set(clock_steps) == {1}  # every tick, none skipped or repeated


def test_force_and_torque_are_not_conflated():
    sim = StandInSim(StandInCfg(num_spacecraft=2))
    with serving(sim) as server, client_for(server) as client:
        client.wait_connected()
        # four commands for two spacecraft in one burst: all must take effect
        client.publish_force("sc0", [1.0, 2.0, 3.0])
        client.publish_torque("sc0", [0.1, 0.2, 0.3])
        client.publish_force("sc1", [4.0, 5.0, 6.0])
        client.publish_torque("sc1", [0.4, 0.5, 0.6])
        wait_until(lambda: sim.wrench[1, 5] == 0.6 and sim.wrench[0, 0] == 1.0, client=client)
        assert sim.wrench.tolist() == [[1, 2, 3, 0.1, 0.2, 0.3], [4, 5, 6, 0.4, 0.5, 0.6]]
        assert server.stats.commands == 4


def test_commands_published_from_callbacks_go_out_when_poll_returns():
    """The benchmark's pattern: answer every state with a command from its callback. The
    commands are queued while poll drains and sent together when it returns (here however
    many a drain answers: no `send_batch` bursts in between)."""
    sim = StandInSim(StandInCfg(num_spacecraft=3))
    with (
        serving(sim, accel=0.0, rate_hz=0.0) as server,
        client_for(server, send_batch=10**9) as client,
    ):
        answered = []

        def answer(message):
            client.publish_force(message["namespace"], [1.0, 0.0, 0.0])
            answered.append(message["namespace"])
            assert client._outbox  # queued, not yet sent

        for name in sim.names:
            client.subscribe((name, "sc_states"), answer)
        client.wait_connected()
        wait_until(lambda: len(set(answered)) == 3, client=client)
        assert client._outbox is None  # poll returned: nothing left behind
        wait_until(lambda: (sim.wrench[:, 0] == 1.0).all(), client=client)
        assert server.stats.rejected == {}


def test_a_callback_waiting_for_the_answer_to_its_command_gets_it():
    """Lockstep steps only when the command arrives: a callback that publishes and then
    waits for the next state must have its command sent before it waits."""
    sim = StandInSim(StandInCfg(num_spacecraft=1, physics_dt=0.01))
    with (
        serving(
            sim, accel=0.0, rate_hz=0.0, lockstep=True, lockstep_topics=("sc0/cmd_force",)
        ) as server,
        client_for(server) as client,
    ):
        answers, asked = [], []

        def answer_and_wait(message):
            if asked:  # the states that arrive while it waits
                return
            asked.append(message["time"])
            client.publish_force("sc0", [1.0, 0.0, 0.0])
            answers.append(
                client.wait_for(
                    "/sc0/orbitlab/out/sc_states", timeout_s=3.0, newer_than=message["time"]
                )
            )

        client.subscribe(("sc0", "sc_states"), answer_and_wait)
        client.wait_connected()
        wait_until(lambda: bool(answers), client=client, timeout_s=5.0)
        assert sim.wrench[0, 0] == 1.0


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getscheduler"), reason="Linux only")
def test_zeromq_io_threads_run_as_batch_threads():
    import os

    sim = StandInSim(StandInCfg())
    server = BridgeServer(sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0))
    try:
        tasks = Path("/proc/self/task")
        io_threads = [
            int(task.name)
            for task in tasks.iterdir()
            if (task / "comm").read_text().startswith("ZMQbg/IO")
        ]
        assert io_threads
        assert all(os.sched_getscheduler(tid) == os.SCHED_BATCH for tid in io_threads)
    finally:
        server.close()


def test_commands_routed_by_msg_type_without_topic_name():
    sim = StandInSim(StandInCfg(num_spacecraft=1))
    with serving(sim) as server, client_for(server) as client:
        client.wait_connected()
        # what the ROS 2 node sends: namespace, msg_type, timestamp and the payload
        client.send_raw(
            json.dumps(
                {
                    "namespace": "sc0",
                    "msg_type": "CmdTorqueBodyMsgPayload",
                    "timestamp": 123,
                    "torque_request_body": [0, 0, 1],
                }
            ).encode()
        )
        wait_until(lambda: sim.wrench[0, 5] == 1.0, client=client)
        assert server.stats.rejected == {}


# 'ros' mode (the public ROS 2 node's socket behaviour): tests/test_bridge_ros.py


# -------------------------------------------------------------------- lockstep
def test_lockstep_steps_once_per_command_round():
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    with (
        serving(sim, accel=0.0, rate_hz=0.0, lockstep=True) as server,
        client_for(server) as client,
    ):
        last = client.wait_for("/sc0/orbitlab/out/sc_states")["time"]
        times = [last]
        for i in range(50):
            client.publish_force("sc0", [float(i), 0.0, 0.0])
            last = client.wait_for("/sc0/orbitlab/out/sc_states", newer_than=last)["time"]
            times.append(last)
        steps = [round((b - a) / 0.01) for a, b in itertools.pairwise(times)]
        assert steps == [1] * 50  # exactly one tick per command
        assert sim.wrench[0, 0] == 49.0
        ticks = server.stats.ticks
        time.sleep(0.3)  # no command: no step (the state is re-sent for late joiners)
        assert server.stats.ticks == ticks
        client.poll()
        assert client.latest("/sc0/orbitlab/out/sc_states")["time"] == last


def test_lockstep_releases_a_vanished_client():
    with (
        serving(accel=0.0, rate_hz=0.0, lockstep=True, heartbeat_timeout_s=0.3) as server,
        client_for(server) as a,
        client_for(server) as b,
    ):
        a.wait_connected()
        b.wait_connected()

        def both_claimed() -> bool:
            # A ZeroMQ publisher drops what it sends before its connection is up (the slow
            # joiner), so both clients keep claiming until the server has heard each of them.
            a.publish_force("sc0", [1.0, 0.0, 0.0])
            b.publish_force("sc1", [1.0, 0.0, 0.0])
            return len(server.required_topics()) == 2

        wait_until(both_claimed, timeout_s=5.0, client=a)
        b.close()  # vanishes without a word
        ticks = server.stats.ticks
        for _ in range(40):  # a alone: blocked until b's heartbeat times out
            a.publish_force("sc0", [1.0, 0.0, 0.0])
            a.poll(0.02)
        assert server.stats.ticks > ticks
        assert any(d["code"] == "client_lost" for d in a.diagnostics)


# ------------------------------------------------------------------ robustness
BAD_FRAMES = {
    "malformed_json": b'{"namespace": "sc0", "msg_type": ',
    "not_object": b"[1, 2, 3]",
    "unknown_topic": json.dumps(
        {
            "namespace": "sc0",
            "topic_name": "cmd_warp",
            "msg_type": "CmdForceBodyMsgPayload",
            "forceRequestBody": [0, 0, 0],
        }
    ).encode(),
    "unknown_namespace": json.dumps(
        {"namespace": "ghost", "msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": [0, 0, 0]}
    ).encode(),
    "unknown_field": json.dumps(
        {
            "namespace": "sc0",
            "msg_type": "CmdForceBodyMsgPayload",
            "forceRequestBody": [0, 0, 0],
            "thrustLevel": 3,
        }
    ).encode(),
    "wrong_shape": json.dumps(
        {"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": [1, 2]}
    ).encode(),
    "not_a_list": json.dumps(
        {"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": 3.0}
    ).encode(),
    "nan": b'{"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", '
    b'"forceRequestBody": [NaN, 0, 0]}',
    "infinity": b'{"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", '
    b'"forceRequestBody": [0, Infinity, 0]}',
    "string_value": json.dumps(
        {"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": [0, "1", 0]}
    ).encode(),
    "no_namespace": json.dumps(
        {"msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": [0, 0, 0]}
    ).encode(),
    "wrong_msg_type": json.dumps(
        {
            "namespace": "sc0",
            "topic_name": "cmd_force",
            "msg_type": "CmdTorqueBodyMsgPayload",
            "torqueRequestBody": [0, 0, 0],
        }
    ).encode(),
    "not_utf8": b"\xff\xfe\x00garbage",
    "huge_integer": b'{"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", '
    b'"forceRequestBody": [1' + b"0" * 400 + b", 0, 0]}",
    "opposite_infinities": b'{"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", '
    b'"forceRequestBody": [Infinity, -Infinity, 0]}',
    "bool_value": json.dumps(
        {"namespace": "sc0", "msg_type": "CmdForceBodyMsgPayload", "forceRequestBody": [True, 0, 0]}
    ).encode(),
}
EXPECTED_CODE = {
    "malformed_json": "malformed_json",
    "not_object": "malformed_json",
    "unknown_topic": "unknown_topic",
    "unknown_namespace": "unknown_topic",
    "unknown_field": "unknown_field",
    "wrong_shape": "bad_shape",
    "not_a_list": "bad_shape",
    "nan": "non_finite",
    "infinity": "non_finite",
    "string_value": "bad_type",
    "no_namespace": "missing_field",
    "wrong_msg_type": "wrong_type",
    "not_utf8": "malformed_json",
    "huge_integer": "non_finite",
    "opposite_infinities": "non_finite",
    "bool_value": "bad_type",
}


def test_bad_input_is_reported_and_the_simulation_keeps_stepping(caplog):
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    with serving(sim) as server, client_for(server) as client:
        client.wait_connected()
        # a good command of the bad frames' spelling first: their route is then cached and
        # they reach the typed fast path, which must hand them to the full checks
        client.send_raw(
            json.dumps(
                {
                    "namespace": "sc0",
                    "msg_type": "CmdForceBodyMsgPayload",
                    "forceRequestBody": [0, 0, 0],
                }
            ).encode()
        )
        wait_until(lambda: server.stats.commands == 1, client=client)
        for case, frame in BAD_FRAMES.items():
            ticks = server.stats.ticks
            n = len(client.diagnostics)
            client.send_raw(frame)
            wait_until(lambda n=n: len(client.diagnostics) > n, client=client)
            diag = client.diagnostics[-1]
            assert diag["code"] == EXPECTED_CODE[case], (case, diag)
            assert diag["level"] == "error" and diag["message"]
            wait_until(lambda ticks=ticks: server.stats.ticks > ticks + 1, client=client)
        assert sim.wrench.tolist() == [[0.0] * 6] * 2  # nothing bad got through
        client.publish_force("sc0", [1.0, 0.0, 0.0])  # a good one still does
        wait_until(lambda: sim.wrench[0, 0] == 1.0, client=client)
        assert sum(server.stats.rejected.values()) == len(BAD_FRAMES)
    assert any("bridge non_finite" in r.getMessage() for r in caplog.records)


def test_clients_can_vanish_and_reconnect():
    with serving() as server:
        for _ in range(3):
            client = client_for(server)
            client.wait_connected()
            before = server.stats.commands
            client.publish_force("sc0", [0.5, 0.0, 0.0])
            wait_until(lambda before=before: server.stats.commands > before, client=client)
            client.wait_for("/sc0/orbitlab/out/sc_states")
            client.close()  # gone without a goodbye, pending frames dropped (linger 0)
        ticks = server.stats.ticks
        wait_until(lambda: server.stats.ticks > ticks + 5)  # the simulation never cared


def test_a_flooding_client_cannot_stall_the_simulation(caplog):
    sim = StandInSim(StandInCfg(num_spacecraft=1, physics_dt=0.005))
    with (
        serving(
            sim, rate_hz=200.0, max_drain=200, recv_hwm=1000, max_command_rate_hz=500.0
        ) as server,
        client_for(server) as client,
    ):
        client.wait_connected()
        frame = protocol.encode(
            {
                "namespace": "sc0",
                "msg_type": "CmdForceBodyMsgPayload",
                "forceRequestBody": [1.0, 0.0, 0.0],
            }
        )
        ticks, t0 = server.stats.ticks, time.monotonic()
        sent = 0
        while time.monotonic() - t0 < 1.0:
            for _ in range(500):
                try:
                    client.pub.send(frame, zmq.NOBLOCK)
                    sent += 1
                except zmq.Again:
                    break
            client.poll()
        elapsed = time.monotonic() - t0
        rate = (server.stats.ticks - ticks) / elapsed
        assert sent > 5000
        # 200 Hz asked: a stalled sim would tick ~0 times; 20/s leaves room for a loaded machine
        assert rate > 20.0
        assert server.stats.rate_dropped > 0  # over 500 Hz on one topic: dropped
        assert server.stats.commands < sent

        def throttled_diagnostic_heard() -> bool:
            # a diagnostic carries how many were suppressed before it: keep flooding until one
            # does (a loaded machine may drain fewer than 50 a second in the first burst)
            for _ in range(100):
                with contextlib.suppress(zmq.Again):
                    client.pub.send(frame, zmq.NOBLOCK)
            return any(
                d["code"] == "rate_limited" and d["suppressed"] > 0 for d in client.diagnostics
            )

        wait_until(throttled_diagnostic_heard, client=client, timeout_s=10.0)
    # diagnostics and log lines are throttled (50 per second by default)
    assert len([r for r in caplog.records if "rate_limited" in r.getMessage()]) <= 50 * 4


def test_servers_close_their_ports():
    sim = StandInSim(StandInCfg())
    server = BridgeServer(sim, BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0))
    endpoints = dict(server.endpoints)
    server.close()
    server.close()  # twice is fine
    again = BridgeServer(
        sim,
        BridgeCfg(
            pub_port=_port(endpoints["telemetry"]),
            sub_port=_port(endpoints["commands"]),
            heartbeat_port=_port(endpoints["heartbeat"]),
        ),
    )
    again.close()


# -------------------------------------------------------------------- the script
def _bridge_script():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "bridge.py"
    spec = importlib.util.spec_from_file_location("bridge_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bridge_script_serves_a_task_and_names_its_topics(capsys):
    script = _bridge_script()
    assert (
        script.main(
            [
                "task=Formation",
                "pub_port=0",
                "sub_port=0",
                "heartbeat_port=0",
                "rate_hz=20",
                "accel=4",
                "duration=0.5",
                "log=WARNING",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "task Formation, hub mode, tick 0.05 s" in out
    for path in (
        "/leader/orbitlab/out/sc_states",
        "/follower_1/orbitlab/in/cmd_force",
        "/env/orbitlab/out/environment",
    ):
        assert path in out
    assert "stopped at t = " in out
    for bad, message in (
        ("mode=tcp", "mode must be hub or ros"),
        ("lockstep=maybe", "lockstep must be true or false"),
        ("task=nosuch", "unknown task 'nosuch'"),
    ):
        assert script.main([bad, "pub_port=0", "sub_port=0", "heartbeat_port=0"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
