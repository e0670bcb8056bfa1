"""Topic bookkeeping of the bridge: publishers with rate limits, per-topic latest-value
command buffers, the topic-request handshake, and inbound rate limits.

Commands are never conflated across topics: each (namespace, topic) keeps its own latest
value, so a force and a torque (or two spacecraft's commands) that arrive between two
simulation updates both take effect.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

from orbitlab.bridge import protocol


@dataclass(kw_only=True)
class TopicSpec:
    """One topic of the bridge."""

    namespace: str
    """Spacecraft (entity) name, or 'env' / 'bridge'."""
    topic: str
    """Short topic name, e.g. 'sc_states', 'cmd_force'."""
    msg_type: str
    """Message type, e.g. 'SCStatesMsgPayload'."""
    direction: str
    """'out' (simulator -> controllers) or 'in' (controllers -> simulator)."""
    max_rate_hz: float = 0.0
    """Publisher rate limit (out topics), Hz; 0: every bridge tick."""
    length: int = 3
    """Number of values of an input topic's vector."""
    bounds: tuple[tuple[float, float], ...] | None = None
    """An input topic's allowed [low, high] per value (an actuator's command range; None:
    any finite number). A command with a value outside is refused with 'out_of_range'."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.topic)

    @functools.cached_property
    def path(self) -> str:
        """orbitlab's name of the topic, /<ns>/orbitlab/<dir>/<topic>."""
        return protocol.topic_path(self.namespace, self.topic, self.direction)

    @property
    def request_id(self) -> str:
        return protocol.request_id(self.namespace, self.msg_type, self.topic, self.direction)


class RateLimiter:
    """Publishes at most `max_rate_hz` per (sim or wall) second; 0 disables the limit."""

    def __init__(self, max_rate_hz: float):
        self.period = 1.0 / max_rate_hz if max_rate_hz > 0.0 else 0.0
        self.last = -float("inf")

    def due(self, now: float) -> bool:
        """True (and counted as published) when `now` is at least one period after the last."""
        if self.period and now - self.last < self.period * (1.0 - 1e-6):
            return False
        self.last = now
        return True

    def reset(self) -> None:
        self.last = -float("inf")


class TokenBucket:
    """Inbound rate limit per topic: `rate_hz` sustained (wall clock), bursts of `burst`."""

    def __init__(self, rate_hz: float, burst: float):
        self.rate, self.burst = rate_hz, max(1.0, burst)
        self.tokens, self.stamp = self.burst, time.monotonic()

    def take(self, now: float) -> bool:
        if self.rate <= 0.0:
            return True
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class CommandSlot:
    """Latest value of one input topic."""

    spec: TopicSpec
    value: list[float] | None = None
    """The latest accepted vector (None: nothing received yet)."""
    fresh: bool = False
    """Received since the last simulation update: handed to the simulation at the next one
    (and what lockstep waits for)."""
    received: int = 0
    dropped: int = 0
    """Messages over the inbound rate limit."""
    owner: str | None = None
    """Client that claimed the topic (lockstep); '' for clients without an id."""
    bucket: TokenBucket | None = None


@dataclass
class Handshake:
    """State of one topic request: confirmed or how often and when last sent."""

    spec: TopicSpec
    confirmed: bool = False
    success: bool = False
    sent: int = 0
    last_sent: float = -float("inf")


@dataclass
class TopicTable:
    """Every topic of the bridge, indexed for routing."""

    outputs: dict[tuple[str, str], TopicSpec] = field(default_factory=dict)
    inputs: dict[tuple[str, str], CommandSlot] = field(default_factory=dict)
    limiters: dict[tuple[str, str], RateLimiter] = field(default_factory=dict)
    handshakes: dict[str, Handshake] = field(default_factory=dict)
    _unlimited: list[tuple[str, str]] | None = field(default=None, repr=False)
    _limited: list[tuple[tuple[str, str], RateLimiter]] = field(default_factory=list, repr=False)

    def add(self, spec: TopicSpec, inbound_rate_hz: float = 0.0) -> None:
        self._unlimited = None  # `due_outputs` sorts the limiters again
        if spec.direction == "out":
            self.outputs[spec.key] = spec
            self.limiters[spec.key] = RateLimiter(spec.max_rate_hz)
        else:
            bucket = (
                TokenBucket(inbound_rate_hz, inbound_rate_hz * 0.05)
                if inbound_rate_hz > 0
                else None
            )
            self.inputs[spec.key] = CommandSlot(spec, bucket=bucket)
        self.handshakes[spec.request_id] = Handshake(spec)

    def route(self, namespace: str, topic: str | None, msg_type: str | None) -> CommandSlot:
        """The input slot a command is for: by (namespace, topic_name) when the topic is
        given, else by (namespace, msg_type) when that is unique. Raises ProtocolError."""
        if topic:
            if "/" in topic:
                topic = self._short_input_topic(namespace, topic)
            slot = self.inputs.get((namespace, topic))
            if slot is None:
                raise unknown_topic_error(namespace, topic, self)
            if msg_type and msg_type != slot.spec.msg_type:
                raise protocol.ProtocolError(
                    "wrong_type",
                    f"{slot.spec.path}: msg_type must be {slot.spec.msg_type}, got {msg_type}",
                    slot.spec.path,
                )
            return slot
        found = [
            s
            for (ns, _), s in self.inputs.items()
            if ns == namespace and s.spec.msg_type == msg_type
        ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise unknown_topic_error(namespace, f"<{msg_type}>", self)
        raise protocol.ProtocolError(
            "ambiguous_topic",
            f"namespace '{namespace}' has {len(found)} input topics of type "
            f"{msg_type}: give topic_name",
            f"/{namespace}",
        )

    @staticmethod
    def _short_input_topic(namespace: str, name: str) -> str:
        """The short topic of a full input topic name, which must name `namespace` and the
        'in' direction (a command cannot reach one spacecraft under another's name)."""
        try:
            ns, direction, short = protocol.split_topic(name)
        except ValueError as error:
            raise protocol.ProtocolError(
                "unknown_topic", f"topic_name {error}", f"/{namespace}"
            ) from None
        if ns != namespace or direction != "in":
            raise protocol.ProtocolError(
                "wrong_topic",
                f"topic_name '{name}' is not an input topic of namespace "
                f"'{namespace}' (expected /{namespace}/<bsk|orbitlab>/in/<topic>)",
                f"/{namespace}",
            )
        return short

    def due_outputs(self, now: float) -> list[tuple[str, str]]:
        """The output topics to publish at `now` (sim or wall s, as the limits count)."""
        if self._unlimited is None:
            self._unlimited = [k for k, lim in self.limiters.items() if not lim.period]
            self._limited = [(k, lim) for k, lim in self.limiters.items() if lim.period]
        if not self._limited:
            return list(self._unlimited)
        return self._unlimited + [k for k, lim in self._limited if lim.due(now)]

    def request_all(self) -> None:
        """Forget every confirmation: the topics are requested again."""
        for h in self.handshakes.values():
            h.confirmed, h.success, h.sent, h.last_sent = False, False, 0, -float("inf")


def unknown_topic_error(namespace: str, topic: str, table: TopicTable) -> protocol.ProtocolError:
    known = sorted({s.spec.topic for (ns, _), s in table.inputs.items() if ns == namespace})
    if not known:
        names = sorted({ns for ns, _ in table.inputs})
        return protocol.ProtocolError(
            "unknown_topic",
            f"unknown namespace '{namespace}' (spacecraft with inputs: "
            f"{', '.join(names) or 'none'})",
            f"/{namespace}",
        )
    return protocol.ProtocolError(
        "unknown_topic",
        f"unknown input topic '{topic}' in namespace '{namespace}' (known: {', '.join(known)})",
        f"/{namespace}/{protocol.OWN_PREFIX}/in/{topic}",
    )
