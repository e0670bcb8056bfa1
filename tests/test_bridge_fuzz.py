"""Property tests of the bridge's inbound frames (hypothesis): whatever the bytes, no
handler raises, nothing unchecked reaches the simulation and the state stays bounded.
Bounded in time: a few hundred examples per property, derandomized (the same examples on
every run, so CI is not flaky), no example database written."""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import pytest

pytest.importorskip("zmq")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitlab.bridge import BridgeCfg, BridgeServer, StandInCfg, StandInSim, protocol
from orbitlab.bridge.schema import FrameLimits, FrameSchema, nesting_exceeds

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""~4 s per property on the 2-core reference machine (most of it generating examples)."""

META = [
    "namespace",
    "topic_name",
    "msg_type",
    "client",
    "msg",
    "timestamp",
    "time",
    "stamp",
    "topic_confirmation",
    "clock_reset_ack",
    "request_id",
    "success",
    "direction",
]
PAYLOAD = [
    "forceRequestBody",
    "torqueRequestBody",
    "motorTorque",
    "force_request_body",
    "states",
    "x",
]
NAMES = st.sampled_from(
    [
        "sc0",
        "sc1",
        "cmd_force",
        "cmd_torque",
        "CmdForceBodyMsgPayload",
        "CmdTorqueBodyMsgPayload",
        "ping",
        "in",
        "/sc0/bsk/in/cmd_force",
        "sc0_CmdForceBodyMsgPayload_cmd_force_in",
        "plan",
        "",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | NAMES
    | st.text(max_size=20)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)
VECTORS = st.lists(
    st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(-10, 10)
    | st.booleans()
    | st.text(max_size=3),
    max_size=7,
)
MESSAGES = st.dictionaries(
    st.sampled_from(META + PAYLOAD) | st.text(max_size=12), NAMES | VECTORS | JSON, max_size=8
)


def _dump(message) -> bytes:
    return json.dumps(message).encode()  # NaN / Infinity tokens included, as Python writes


FRAMES = (
    MESSAGES.map(_dump)
    | JSON.map(_dump)
    | st.binary(max_size=200)
    | st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n)
    | st.integers(1, 3000).map(lambda n: b'{"a":' * n + b"0" + b"}" * n)
    | MESSAGES.map(_dump).flatmap(lambda f: st.integers(0, len(f)).map(lambda i: f[:i]))
)


@contextmanager
def _server(**overrides):
    sim = StandInSim(StandInCfg(num_spacecraft=2, physics_dt=0.01))
    server = BridgeServer(
        sim,
        BridgeCfg(
            pub_port=0, sub_port=0, heartbeat_port=0, relay_topics=("sc0/plan",), **overrides
        ),
    )
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def server():
    with _server(max_routes=32, max_clients=16, command_ownership=False) as s:
        yield s


@pytest.fixture(scope="module")
def owned_server():
    with _server(command_ownership=True, lockstep=True) as s:
        yield s


def _slot_values_are_checked(server: BridgeServer) -> None:
    for slot in server.table.inputs.values():
        if slot.value is not None:
            assert len(slot.value) == slot.spec.length
            assert all(type(x) is float and math.isfinite(x) for x in slot.value)


@FUZZ
@given(frames=st.lists(FRAMES, min_size=1, max_size=6))
def test_no_frame_makes_the_command_handler_raise(server, frames):
    for frame in frames:
        before = sum(server.stats.rejected.values()) + server.stats.commands
        server.handle(frame)
        assert server.stats.internal_errors == 0, frame
        assert sum(server.stats.rejected.values()) + server.stats.commands >= before
    _slot_values_are_checked(server)
    assert len(server._routes) <= 32 and len(server._relay_frames) <= 1
    assert len(server.heartbeat.clients()) <= 16
    assert server.tick()  # and the simulation steps with whatever was accepted


@FUZZ
@given(frames=st.lists(FRAMES, min_size=1, max_size=6))
def test_no_frame_makes_the_owned_lockstep_handler_raise(owned_server, frames):
    for frame in frames:
        owned_server.handle(frame)
    assert owned_server.stats.internal_errors == 0
    _slot_values_are_checked(owned_server)
    assert set(owned_server.claims.owners) <= {"sc0", "sc1"}


@FUZZ
@given(frame=FRAMES)
def test_the_schema_returns_a_bounded_object_or_a_protocol_error(frame):
    schema = FrameSchema(
        FrameLimits(max_message_bytes=4096, max_depth=4, max_fields=6, max_name_chars=10)
    )
    try:
        message = schema.decode(frame)
    except protocol.ProtocolError as error:
        assert error.code and str(error) and "\n" not in str(error)
        return
    assert isinstance(message, dict) and len(message) <= 6
    assert not nesting_exceeds(message, 4) and all(len(k) <= 10 for k in message)
    for name in ("namespace", "topic_name", "msg_type", "client"):
        assert message.get(name) is None or type(message[name]) is str


@FUZZ
@given(frame=FRAMES)
def test_no_frame_makes_the_heartbeat_handler_raise(server, frame):
    hb = server.heartbeat
    bad, errors = hb.bad, hb.errors
    hb._handle(frame)
    assert hb.errors == errors
    assert hb.bad in (bad, bad + 1)
    server._heartbeat_reports()  # the server reports them without raising
