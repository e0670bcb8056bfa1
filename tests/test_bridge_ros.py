"""'ros' mode against a stand-in with the public ROS 2 node's real socket behaviour
(`bsk_node_standin`: no conflation, an unbounded queue, any frame with `sim_time` is a clock
frame, unknown types never confirmed): first-request handshake, the clock reset before any
clock frame, `/clock` at the pacing factor, flow control, lockstep over a subset of topics
without duplicate stamps, lockstep's start rule (a controller that misses the first states
cannot freeze a start), and the formation scene's Basilisk topics and namespaces."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Self

import pytest

zmq = pytest.importorskip("zmq")

from bsk_node_standin import NodeStandIn

from orbitlab.bridge import BridgeCfg, BridgeServer, StandInCfg, StandInSim
from orbitlab.bridge.flow import FlowCfg


@contextmanager
def ros_bridge(node: NodeStandIn, sim=None, **overrides):
    """A 'ros'-mode BridgeServer ticking in a thread, connected to `node` (started)."""
    sim = sim or StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    kw = {
        "mode": "ros",
        "pub_port": 0,
        "sub_port": node.command_port,
        "heartbeat_port": node.heartbeat_port,
        "rate_hz": 100.0,
        "require_bridge": True,
        "heartbeat_timeout_s": 0.5,
        **overrides,
    }
    server = BridgeServer(sim, BridgeCfg(**kw))
    stop = threading.Event()
    thread = threading.Thread(target=server.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    node.start(server.endpoints["telemetry"])
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=5.0)
        server.close()
        node.close()
        assert not thread.is_alive()


def wait_until(predicate, timeout_s: float = 5.0) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def kinds(node: NodeStandIn) -> list[str]:
    return [kind for kind, _ in list(node.events)]


def test_every_request_is_confirmed_first_time_and_the_clock_reset_comes_first():
    node = NodeStandIn()
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    with ros_bridge(node, sim, rate_hz=20.0, accel=1.0) as server:
        handshakes = list(server.table.handshakes.values())
        wait_until(lambda: server._clock["acked"] and all(h.confirmed for h in handshakes))
        assert len(handshakes) == 6 and all(h.success and h.sent == 1 for h in handshakes)
        wait_until(lambda: "/sc1/bsk/out/sc_states" in node.published)
        events = kinds(node)
        assert events.index("clock_reset") < events.index("clock")
        assert events.index("clock_reset") < events.index("telemetry")
        assert "dropped" not in events  # nothing of a type the node does not know
        for kind, frame in list(node.events):
            if kind == "clock":  # only real clock frames: no payload field named sim_time
                assert set(frame) == {"sim_time", "accelFactor"} and frame["accelFactor"] == 1.0
        state = node.published["/sc1/bsk/out/sc_states"][-1]
        assert {"r_bn_n", "v_bn_n", "sigma_bn", "omega_bn_b", "stamp"} <= set(state)
        for _ in range(5):  # its commands (no topic_name, a stamp) move the right spacecraft
            node.send("sc1", "CmdForceBodyMsgPayload", forcerequestbody=[17.8, 0.0, 0.0])
            time.sleep(0.05)
        wait_until(lambda: sim.vel[1, 0] > 0.0)
        assert sim.wrench[1, 0] == 17.8 and sim.vel[0, 0] == 0.0
        assert server.stats.rejected == {}
        node.pinging = False  # the node goes silent: the simulation pauses
        wait_until(lambda: server.stats.link_losses == 1, 2.0)
        ticks = server.stats.ticks
        time.sleep(0.3)
        assert server.stats.ticks - ticks <= 1


@pytest.mark.parametrize("accel", [0.5, 4.0])
def test_the_node_clock_runs_at_the_pacing_factor(accel):
    node = NodeStandIn()
    with ros_bridge(node, accel=accel, rate_hz=50.0) as server:
        wait_until(lambda: server._clock["acked"] and server.stats.ticks > 5)
        since = time.monotonic() + 0.2
        time.sleep(1.4)
        slope = node.clock_slope(since)
    assert slope == pytest.approx(accel, rel=0.03)  # the env-field bug gave 1.0 at any factor


def test_flow_control_bounds_what_a_slow_node_holds():
    """As fast as possible, with a node that handles 2000 frames/s: the simulation waits
    for it, so the node's queue stays within the window (plus one tick's frames)."""
    node = NodeStandIn(consume_hz=2000.0)
    flow = FlowCfg(window=64, probe_every=16)
    with ros_bridge(node, accel=0.0, rate_hz=0.0, flow=flow) as server:
        wait_until(lambda: server._clock["acked"])
        time.sleep(1.5)
        # the window, one tick's frames (clock + two sc_states), a probe, and once the
        # topic requests (sent after the clock reset's acknowledgement)
        bound = flow.window + 3 + 1 + len(server.table.handshakes)
        assert server.flow.max_in_flight <= bound
        assert node.max_queue <= bound
        assert server.stats.ticks > 200  # it keeps going, at the node's pace
        assert server.stats.flow_wait_s > 0.3
        clocks = [f["sim_time"] for k, f in list(node.events) if k == "clock"]
        assert all(f["accelFactor"] == 0.0 for k, f in list(node.events) if k == "clock")
        assert clocks == sorted(clocks)


def test_lockstep_over_a_subset_of_topics_without_duplicate_stamps():
    node = NodeStandIn()
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    topic = "/sc0/bsk/out/sc_states"
    with ros_bridge(
        node, sim, accel=0.0, rate_hz=0.0, lockstep=True, lockstep_topics=("sc0/cmd_force",)
    ) as server:
        wait_until(lambda: topic in node.published)
        for i in range(30):  # one command round per state, on sc0's force only
            seen = len(node.published[topic])
            node.send("sc0", "CmdForceBodyMsgPayload", forcerequestbody=[float(i), 0.0, 0.0])
            wait_until(lambda seen=seen: len(node.published[topic]) > seen)
        time.sleep(0.3)  # no command: no step, nothing re-sent, the clock holds
        ticks = server.stats.ticks
        stamps = [m["time"] for m in node.published[topic]]
        time.sleep(0.2)
        assert server.stats.ticks == ticks and len(node.published[topic]) == len(stamps)
    assert len(stamps) == len(set(stamps)) and stamps == sorted(stamps)
    assert 30 <= ticks <= 32 and sim.wrench[0, 0] == 29.0
    assert {f["accelFactor"] for k, f in node.events if k == "clock"} == {0.0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_formation_scene_in_ros_mode_speaks_bsk_msgs_only(capsys):
    from test_bridge import _bridge_script

    script = _bridge_script()
    node = NodeStandIn()
    port = _free_port()
    node.start(f"tcp://127.0.0.1:{port}")
    argv = [
        "task=formation",
        "mode=ros",
        f"pub_port={port}",
        f"sub_port={node.command_port}",
        f"heartbeat_port={node.heartbeat_port}",
        "rate_hz=5",
        "accel=4",
        "namespaces={leader: leaderSc, follower_1: followerSc_1, follower_2: followerSc_2}",
        "duration=3",
        "log=WARNING",
    ]

    def fire():  # one thruster of followerSc_1 (Basilisk's 36-long array)
        while not node._stop.is_set():
            node.send("followerSc_1", "THRArrayCmdForceMsgPayload", thrforce=[1.0] + [0.0] * 35)
            time.sleep(0.05)

    firing = threading.Thread(target=fire, daemon=True)
    firing.start()
    try:
        assert script.main(argv) == 0
    finally:
        node.close()
    out = capsys.readouterr().out
    assert "/orbitlab/" not in out
    for path in (
        "/leaderSc/bsk/out/hill_trans_state",
        "/followerSc_1/bsk/out/hill_rot_state",
        "/followerSc_2/bsk/in/thr_array_cmd_force",
    ):
        assert path in out
    requests = {f["request_id"] for k, f in node.events if k == "request"}
    assert requests and requests <= set(node.confirmed)  # 100 % confirmed
    assert "dropped" not in kinds(node)
    state = node.published["/followerSc_1/bsk/out/sc_states"][-1]
    fields = [
        "r_bn_n",
        "v_bn_n",
        "r_cn_n",
        "v_cn_n",
        "sigma_bn",
        "omega_bn_b",
        "omegadot_bn_b",
        "totalaccumdvbdy",
        "totalaccumdv_bn_b",
        "totalaccumdv_cn_n",
        "nonconservativeaccelpntb_b",
        "mrpswitchcount",
    ]
    assert set(fields) <= set(state)
    dv = state["totalaccumdv_cn_n"]
    assert 0.0 < sum(x * x for x in dv) ** 0.5  # the thruster fired: Delta-V accumulated
    other = node.published["/followerSc_2/bsk/out/sc_states"][-1]["totalaccumdv_cn_n"]
    assert other == [0.0, 0.0, 0.0]
    assert {"r_dc_h", "v_dc_h"} <= set(node.published["/leaderSc/bsk/out/hill_trans_state"][-1])
    rot = node.published["/leaderSc/bsk/out/hill_rot_state"][-1]
    assert {"sigma_br", "omega_br_b", "omega_rn_b", "domega_rn_b"} <= set(rot)


def test_the_script_reads_namespaces_and_names_the_bad_item():
    from test_bridge import _bridge_script

    script = _bridge_script()
    assert script.namespace_map("{leader: leaderSc, follower_1: 'followerSc_1'}") == {
        "leader": "leaderSc",
        "follower_1": "followerSc_1",
    }
    assert script.namespace_map("bsk_mpc")["follower_2"] == "followerSc_2"
    with pytest.raises(SystemExit, match="item 'leader leaderSc' must be 'entity: namespace'"):
        script.parse(["namespaces={leader leaderSc}"])


def test_a_lockstep_topic_that_is_no_input_is_refused_by_its_ros_name():
    node = NodeStandIn()
    try:
        with pytest.raises(ValueError, match=r"'sc0/nope' is not an input topic .*/sc0/bsk/in/"):
            BridgeServer(
                StandInSim(StandInCfg()),
                BridgeCfg(
                    mode="ros",
                    pub_port=0,
                    sub_port=node.command_port,
                    heartbeat_port=node.heartbeat_port,
                    lockstep=True,
                    lockstep_topics=("sc0/nope",),
                ),
            )
    finally:
        node.close()


class LateController:
    """Answers every state on each namespace's `sc_states` with a `cmd_force` command, from
    the `first[ns]`-th state the node published on (counting from 0) on: a controller whose
    subscription came up after the first states were published never sees them."""

    def __init__(self, node: NodeStandIn, first: dict[str, int]):
        self.node, self.first = node, first
        self.seen = dict.fromkeys(first, 0)
        self.answering = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            for ns, first in self.first.items():
                states = self.node.published.get(f"/{ns}/bsk/out/sc_states", [])
                count = len(states)
                for i in range(self.seen[ns], count):
                    if i >= first and self.answering:
                        force = [0.1, 0.0, 0.0]
                        self.node.send(ns, "CmdForceBodyMsgPayload", forcerequestbody=force)
                self.seen[ns] = count


LOCKSTEP_BOTH = ("sc0/cmd_force", "sc1/cmd_force")


def _stamps(node: NodeStandIn, ns: str) -> list[float]:
    return [m["time"] for m in list(node.published.get(f"/{ns}/bsk/out/sc_states", []))]


def test_a_lockstep_start_does_not_freeze_when_a_controller_misses_the_first_states():
    """sc1's controller ignores the first 3 states (its subscription came up late): the state
    at the clock reset (t = 0), the free step's (0.1 s) and one released tick's; the start
    rule releases the ticks after the second and third (a new state each, no duplicate
    stamp), then lockstep is strict again: 10 s of simulated time, no step without commands."""
    node = NodeStandIn()
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    release_s = 0.2
    with (
        ros_bridge(
            node,
            sim,
            accel=0.0,
            rate_hz=10.0,
            lockstep=True,
            lockstep_topics=LOCKSTEP_BOTH,
            lockstep_start_release_s=release_s,
        ) as server,
        LateController(node, {"sc0": 0, "sc1": 3}) as controller,
    ):
        wait_until(lambda: sim.time_s >= 10.0 - 1e-9, 15.0)
        controller.answering = False
        time.sleep(0.1)  # answers in flight land
        ticks = server.stats.ticks
        time.sleep(3 * release_s)  # strict again: no command, no step
        assert server.stats.ticks - ticks <= 1
        released = server.stats.lockstep_released
    # 2 for the missed states; one more only if an answer took longer than release_s
    assert 2 <= released <= 3, (released, _stamps(node, "sc1")[:6])
    for ns in ("sc0", "sc1"):
        stamps = _stamps(node, ns)
        assert len(stamps) == len(set(stamps)) and stamps == sorted(stamps)
        assert stamps[-1] >= 10.0 - 1e-9, stamps[:6]
    assert sim.wrench[1, 0] == pytest.approx(0.1)


def test_without_the_start_rule_a_controller_that_missed_the_first_state_freezes_the_start():
    """The defect the start rule removes: released never (inf), the simulation waits at the
    free step's state (t = 0.1 s) for a command that cannot come."""
    node = NodeStandIn()
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    with (
        ros_bridge(
            node,
            sim,
            accel=0.0,
            rate_hz=10.0,
            lockstep=True,
            lockstep_topics=LOCKSTEP_BOTH,
            lockstep_start_release_s=float("inf"),
        ) as server,
        LateController(node, {"sc0": 0, "sc1": 2}),
    ):
        wait_until(lambda: len(_stamps(node, "sc1")) >= 1)
        time.sleep(1.0)
        assert server.stats.ticks == 1 and server.stats.lockstep_released == 0
        assert sim.time_s == pytest.approx(0.1)


def test_twenty_fresh_lockstep_starts_with_a_late_controller_all_reach_10_s():
    """20 fresh starts (server, node, a controller that misses sc1's first 3 states): every
    one reaches 10 s of simulated time."""
    reached = []
    for _ in range(20):
        node = NodeStandIn()
        sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
        with (
            ros_bridge(
                node,
                sim,
                accel=0.0,
                rate_hz=10.0,
                lockstep=True,
                lockstep_topics=LOCKSTEP_BOTH,
                lockstep_start_release_s=0.05,
            ) as server,
            LateController(node, {"sc0": 0, "sc1": 3}),
        ):
            end = time.monotonic() + 10.0
            while sim.time_s < 10.0 - 1e-9 and time.monotonic() < end:
                time.sleep(0.01)
            stamps = _stamps(node, "sc1")
            unique = len(stamps) == len(set(stamps)) and stamps == sorted(stamps)
            reached.append((round(sim.time_s, 6), server.stats.lockstep_released, unique))
    assert all(t >= 10.0 and unique for t, _, unique in reached), reached
    assert all(released >= 2 for _, released, _ in reached), reached  # sc1's 2 missed waits


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), "1", True, None])
def test_a_bad_start_release_is_refused_in_one_line_naming_it(value):
    with pytest.raises(ValueError) as error:
        BridgeServer(
            StandInSim(StandInCfg()),
            BridgeCfg(pub_port=0, sub_port=0, heartbeat_port=0, lockstep_start_release_s=value),
        )
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("lockstep_start_release_s must be a number of wall seconds > 0")
    assert message.endswith(f"got {value!r}")
