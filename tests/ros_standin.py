"""A test-only stand-in for the parts of ROS 2 that orbitlab's ROS 2 nodes use
(`orbitlab_tasks.formation.ros_nodes`): rclpy.qos (QoSProfile and its policies), rclpy.node
(Node: subscriptions, publishers, timers, clock, logger) and the message classes of bsk_msgs,
nav_msgs, geometry_msgs, builtin_interfaces and rosgraph_msgs with the fields used.

Its `RosGraph` holds every publisher and subscription per fully qualified topic and connects
a pair only as DDS would: same message type, and the subscription's requested QoS no
stronger than the publisher's offered one:

* reliability: a RELIABLE subscription needs a RELIABLE publisher; a BEST_EFFORT one
  takes both;
* durability: a TRANSIENT_LOCAL subscription needs a TRANSIENT_LOCAL publisher; a VOLATILE
  one takes both;
* history and depth do not take part in matching.

A pair that fails is not connected and is recorded as an `IncompatibleQos` event (rclpy
reports it as an incompatible-QoS event and a warning on both sides). SYSTEM_DEFAULT and
the other policies' values depend on the middleware: the stand-in refuses to judge them.
Publishing calls every connected subscription's callback at once (no executor, no late-
joiner delivery); timers run when a test calls them.

    graph = RosGraph()
    for name, module in graph.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
"""

from __future__ import annotations

import logging
import types
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

# ----------------------------------------------------------------------------- rclpy.qos


class ReliabilityPolicy(IntEnum):
    SYSTEM_DEFAULT = 0
    RELIABLE = 1
    BEST_EFFORT = 2


class DurabilityPolicy(IntEnum):
    SYSTEM_DEFAULT = 0
    TRANSIENT_LOCAL = 1
    VOLATILE = 2


class HistoryPolicy(IntEnum):
    SYSTEM_DEFAULT = 0
    KEEP_LAST = 1
    KEEP_ALL = 2


class QoSProfile:
    """rclpy's QoSProfile: keyword arguments over rclpy's default profile (reliable,
    volatile, keep last; depth 10 when only `history` is not given)."""

    def __init__(
        self,
        *,
        history: HistoryPolicy | None = None,
        depth: int | None = None,
        reliability: ReliabilityPolicy = ReliabilityPolicy.RELIABLE,
        durability: DurabilityPolicy = DurabilityPolicy.VOLATILE,
    ):
        if history is None and depth is None:
            raise ValueError("a QoSProfile needs history or depth")
        self.history = HistoryPolicy.KEEP_LAST if history is None else HistoryPolicy(history)
        if self.history == HistoryPolicy.KEEP_LAST and not (depth is not None and depth >= 0):
            raise ValueError(f"KEEP_LAST history needs a depth >= 0, got {depth!r}")
        self.depth = depth
        self.reliability = ReliabilityPolicy(reliability)
        self.durability = DurabilityPolicy(durability)

    def __repr__(self) -> str:
        return (
            f"QoSProfile({self.reliability.name}, {self.durability.name}, "
            f"{self.history.name}, depth={self.depth})"
        )


qos_profile_default = QoSProfile(depth=10)
qos_profile_sensor_data = QoSProfile(
    reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST, depth=5
)

RELIABILITY_RANK = {ReliabilityPolicy.BEST_EFFORT: 0, ReliabilityPolicy.RELIABLE: 1}
DURABILITY_RANK = {DurabilityPolicy.VOLATILE: 0, DurabilityPolicy.TRANSIENT_LOCAL: 1}


def incompatible_policies(offered: QoSProfile, requested: QoSProfile) -> tuple[str, ...]:
    """The policies ('RELIABILITY', 'DURABILITY') on which a publisher offering `offered`
    cannot serve a subscription requesting `requested` (DDS request-vs-offered); () when
    they match. ValueError for a policy value the stand-in cannot judge."""
    for rank, a, b in (
        (RELIABILITY_RANK, offered.reliability, requested.reliability),
        (DURABILITY_RANK, offered.durability, requested.durability),
    ):
        for value in (a, b):
            if value not in rank:
                raise ValueError(f"the stand-in cannot judge {value!r} (middleware-dependent)")
    failed = []
    if RELIABILITY_RANK[offered.reliability] < RELIABILITY_RANK[requested.reliability]:
        failed.append("RELIABILITY")
    if DURABILITY_RANK[offered.durability] < DURABILITY_RANK[requested.durability]:
        failed.append("DURABILITY")
    return tuple(failed)


# -------------------------------------------------------------------------- messages


def _message(name: str, **defaults) -> type:
    """A message class with exactly these fields (others raise AttributeError, as ROS 2
    messages do); each default is a factory."""

    def __init__(self, **values):
        for key, make in defaults.items():
            setattr(self, key, values.pop(key) if key in values else make())
        if values:
            raise AttributeError(f"{name} has no field(s) {sorted(values)}")

    def __repr__(self):
        return f"{name}({', '.join(f'{k}={getattr(self, k)!r}' for k in defaults)})"

    return type(
        name, (), {"__slots__": tuple(defaults), "__init__": __init__, "__repr__": __repr__}
    )


def _vec3() -> list[float]:
    return [0.0, 0.0, 0.0]


Time = _message("Time", sec=int, nanosec=int)
Header = _message("Header", stamp=Time, frame_id=str)
Point = _message("Point", x=float, y=float, z=float)
Quaternion = _message("Quaternion", x=float, y=float, z=float, w=lambda: 1.0)
Pose = _message("Pose", position=Point, orientation=Quaternion)
PoseStamped = _message("PoseStamped", header=Header, pose=Pose)
Path = _message("Path", header=Header, poses=list)
Clock = _message("Clock", clock=Time)
SCStatesMsgPayload = _message(
    "SCStatesMsgPayload",
    stamp=Time,
    r_bn_n=_vec3,
    v_bn_n=_vec3,
    r_cn_n=_vec3,
    v_cn_n=_vec3,
    sigma_bn=_vec3,
    omega_bn_b=_vec3,
)
HillRelStateMsgPayload = _message("HillRelStateMsgPayload", stamp=Time, r_dc_h=_vec3, v_dc_h=_vec3)
AttGuidMsgPayload = _message(
    "AttGuidMsgPayload",
    stamp=Time,
    sigma_br=_vec3,
    omega_br_b=_vec3,
    omega_rn_b=_vec3,
    domega_rn_b=_vec3,
)
CmdForceBodyMsgPayload = _message("CmdForceBodyMsgPayload", stamp=Time, forcerequestbody=_vec3)
CmdTorqueBodyMsgPayload = _message("CmdTorqueBodyMsgPayload", stamp=Time, torquerequestbody=_vec3)

# ------------------------------------------------------------------------------ graph


@dataclass(eq=False)
class Endpoint:
    """A publisher or a subscription in the graph."""

    kind: str
    """'publisher' | 'subscription'."""
    node: str
    """The node's fully qualified name."""
    topic: str
    """Fully qualified topic name."""
    msg_type: type
    qos: QoSProfile
    given: Any
    """The profile argument as passed (a QoSProfile or a depth)."""
    callback: Any = None
    peers: list[Endpoint] = field(default_factory=list)
    """Matched endpoints of the other kind on the topic."""

    def publish(self, msg) -> None:
        if not isinstance(msg, self.msg_type):
            raise TypeError(f"{self.topic}: expected {self.msg_type.__name__}, got {msg!r}")
        for sub in self.peers:
            sub.callback(msg)


@dataclass(frozen=True)
class IncompatibleQos:
    """A publisher and a subscription on one topic that did not match."""

    topic: str
    policies: tuple[str, ...]
    """'RELIABILITY', 'DURABILITY' or 'TYPE'."""
    publisher: str
    subscription: str
    """The nodes' names."""


class RosGraph:
    """Publishers and subscriptions per topic, matched by DDS's rules (the module doc)."""

    def __init__(self) -> None:
        self.endpoints: list[Endpoint] = []
        self.incompatible: list[IncompatibleQos] = []
        self.time_ns = 0
        """The nodes' clock (their `/clock`), ns."""
        self.log = logging.getLogger("ros_standin")

    def add(self, endpoint: Endpoint) -> Endpoint:
        other = "subscription" if endpoint.kind == "publisher" else "publisher"
        for peer in self.endpoints:
            if peer.kind != other or peer.topic != endpoint.topic:
                continue
            pub, sub = (endpoint, peer) if endpoint.kind == "publisher" else (peer, endpoint)
            failed = incompatible_policies(pub.qos, sub.qos)
            if pub.msg_type is not sub.msg_type:
                failed = (*failed, "TYPE")
            if failed:
                event = IncompatibleQos(endpoint.topic, failed, pub.node, sub.node)
                self.incompatible.append(event)
                self.log.warning(
                    "%s: %s offers QoS that %s's request does not accept (%s): not connected",
                    event.topic,
                    event.publisher,
                    event.subscription,
                    ", ".join(failed),
                )
                continue
            pub.peers.append(sub)
            sub.peers.append(pub)
        self.endpoints.append(endpoint)
        return endpoint

    def of_node(self, name: str) -> list[Endpoint]:
        return [e for e in self.endpoints if e.node == name]

    def modules(self) -> dict[str, types.ModuleType]:
        """The stand-in modules by import name, for sys.modules."""
        Node = type("Node", (StandInNode,), {"graph": self})
        qos = _module(
            "rclpy.qos",
            QoSProfile=QoSProfile,
            ReliabilityPolicy=ReliabilityPolicy,
            DurabilityPolicy=DurabilityPolicy,
            HistoryPolicy=HistoryPolicy,
            qos_profile_default=qos_profile_default,
            qos_profile_sensor_data=qos_profile_sensor_data,
        )
        node = _module("rclpy.node", Node=Node)
        rclpy = _module("rclpy", qos=qos, node=node, init=lambda *a, **k: None)
        rclpy.shutdown = lambda *a, **k: None
        out = {"rclpy": rclpy, "rclpy.qos": qos, "rclpy.node": node}
        for package, classes in (
            ("builtin_interfaces", {"Time": Time}),
            ("std_msgs", {"Header": Header}),
            ("rosgraph_msgs", {"Clock": Clock}),
            ("geometry_msgs", {c.__name__: c for c in (Point, Quaternion, Pose, PoseStamped)}),
            ("nav_msgs", {"Path": Path}),
            (
                "bsk_msgs",
                {
                    c.__name__: c
                    for c in (
                        SCStatesMsgPayload,
                        HillRelStateMsgPayload,
                        AttGuidMsgPayload,
                        CmdForceBodyMsgPayload,
                        CmdTorqueBodyMsgPayload,
                    )
                },
            ),
        ):
            msg = _module(f"{package}.msg", **classes)
            out[package] = _module(package, msg=msg)
            out[f"{package}.msg"] = msg
        return out


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


# ------------------------------------------------------------------------------- node


@dataclass
class Timer:
    period_s: float
    callback: Any


class _Now:
    def __init__(self, ns: int):
        self.nanoseconds = ns

    def to_msg(self):
        return Time(sec=self.nanoseconds // 10**9, nanosec=self.nanoseconds % 10**9)


class _Clock:
    def __init__(self, graph: RosGraph):
        self.graph = graph

    def now(self) -> _Now:
        return _Now(self.graph.time_ns)


class StandInNode:
    """rclpy.node.Node's constructor and the entities orbitlab's nodes create."""

    graph: RosGraph

    def __init__(self, node_name: str, *, namespace: str | None = None, **_):
        ns = "/" + (namespace or "").strip("/")
        self.namespace = ns
        self.name = node_name
        self.fqn = f"{ns.rstrip('/')}/{node_name}"
        self.timers: list[Timer] = []

    def resolve(self, topic: str) -> str:
        """A topic's fully qualified name (relative names are in the node's namespace)."""
        if topic.startswith("/"):
            return topic
        return f"{self.namespace.rstrip('/')}/{topic}"

    def _qos(self, given) -> QoSProfile:
        if isinstance(given, QoSProfile):
            return given
        if isinstance(given, int) and not isinstance(given, bool):
            return QoSProfile(depth=given)  # as rclpy: a depth with the default profile
        raise TypeError(f"qos_profile must be a QoSProfile or a depth, got {given!r}")

    def create_publisher(self, msg_type, topic, qos_profile, **_) -> Endpoint:
        endpoint = Endpoint(
            "publisher",
            self.fqn,
            self.resolve(topic),
            msg_type,
            self._qos(qos_profile),
            qos_profile,
        )
        return self.graph.add(endpoint)

    def create_subscription(self, msg_type, topic, callback, qos_profile, **_) -> Endpoint:
        endpoint = Endpoint(
            "subscription",
            self.fqn,
            self.resolve(topic),
            msg_type,
            self._qos(qos_profile),
            qos_profile,
            callback,
        )
        return self.graph.add(endpoint)

    def create_timer(self, timer_period_sec: float, callback, **_) -> Timer:
        timer = Timer(timer_period_sec, callback)
        self.timers.append(timer)
        return timer

    def get_clock(self) -> _Clock:
        return _Clock(self.graph)

    def get_logger(self) -> logging.Logger:
        return logging.getLogger(self.fqn)
