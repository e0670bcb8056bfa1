"""The schema every inbound frame is checked against before any of its fields is used.

A frame from the command or heartbeat port passes, in this order:

1. its size: over `FrameLimits.max_message_bytes` -> 'too_large' (one `len()`);
2. the typed fast path of commands (`protocol.decode_command`, msgspec in C: known fields
   of known types only, so it cannot nest) - or else
3. `FrameSchema.decode`: msgspec decodes into a JSON type that cannot nest deeper than
   `max_depth` (objects and arrays), so a deeper frame is refused in C at that depth
   ('too_deep') and no decoder recurses further (`[` x 5000 included); then at most
   `max_fields` top-level fields, names of at most `max_name_chars` characters, and the
   meta fields (`namespace`, `topic_name`, `msg_type`, `client`, `msg`, `direction`,
   `request_id`) strings of bounded length ('bad_type' / 'too_long' / 'too_many_fields').

Frames that msgspec cannot parse (NaN tokens, which Python's json writes) take the standard
library's parser, whose RecursionError is caught and whose result is depth-checked (rare:
such frames are then rejected with a clearer message by the payload check).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from orbitlab.bridge.protocol import ProtocolError, _msgspec

META_STRINGS = ("namespace", "topic_name", "msg_type", "client", "msg", "direction")
"""Meta fields that must be strings (or null) of at most `max_name_chars` characters."""
LONG_META_STRINGS = ("request_id",)
"""... of at most 4 x `max_name_chars` (a request id joins four names)."""


@dataclass(frozen=True)
class FrameLimits:
    """Bounds of one inbound frame (see the module docstring)."""

    max_message_bytes: int = 65536
    """Largest frame, bytes."""
    max_depth: int = 8
    """Deepest nesting of objects and arrays (a command needs 2, a relayed plan 3)."""
    max_fields: int = 64
    """Most top-level fields."""
    max_name_chars: int = 256
    """Longest field name and meta string, characters."""

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_depth", "max_fields", "max_name_chars"):
            value = getattr(self, name)
            if type(value) is not int or value < (2 if name == "max_depth" else 1):
                raise ValueError(
                    f"{name} must be an integer >= {2 if name == 'max_depth' else 1}, got {value!r}"
                )


def shown(value: Any, chars: int = 60) -> str:
    """repr() of a checked value, cut to `chars` characters (for error messages)."""
    text = repr(value)
    return text if len(text) <= chars else text[:chars] + "..."


def _bounded_json_type(depth: int):
    """A type of JSON values nesting at most `depth` arrays/objects (0: scalars only)."""
    scalar = Union[str, int, float, bool, None]  # noqa: UP007 - msgspec needs typing.Union
    value = scalar
    for _ in range(depth):
        value = Union[str, int, float, bool, None, list[value], dict[str, value]]  # noqa: UP007
    return value


class FrameSchema:
    """Decodes and checks frames against `FrameLimits` (raises ProtocolError)."""

    def __init__(self, limits: FrameLimits | None = None):
        self.limits = limits = limits or FrameLimits()
        self._decode = (
            _msgspec.json.Decoder(_bounded_json_type(limits.max_depth)).decode
            if _msgspec is not None
            else None
        )

    def check_size(self, frame: bytes) -> None:
        """'too_large' for a frame over `max_message_bytes`."""
        if len(frame) > self.limits.max_message_bytes:
            raise ProtocolError(
                "too_large",
                f"frame of {len(frame)} bytes refused: "
                f"max_message_bytes is {self.limits.max_message_bytes}",
            )

    def decode(self, frame: bytes) -> dict[str, Any]:
        """The checked JSON object of a frame (size, depth, fields, meta types)."""
        self.check_size(frame)
        value = self._parse(frame)
        if not isinstance(value, dict):
            raise ProtocolError(
                "malformed_json", f"message must be a JSON object, got {type(value).__name__}"
            )
        self.check_fields(value)
        return value

    def _parse(self, frame: bytes) -> Any:
        if self._decode is not None:
            try:
                return self._decode(frame)
            except _msgspec.ValidationError as error:
                if "out of range" not in str(error):  # the other type error: too deep
                    raise ProtocolError(
                        "too_deep",
                        "frame nests objects/arrays deeper than max_depth = "
                        f"{self.limits.max_depth}",
                    ) from None
                # a number beyond the float range (1e400): the reference parser reads it
                # as inf, which the payload check reports as non-finite, naming the field
            except (_msgspec.DecodeError, UnicodeDecodeError):
                pass  # NaN tokens and the like: the reference parser below
        try:
            value = json.loads(frame)
        except RecursionError:
            value = None
            deep = True
        except (ValueError, UnicodeDecodeError) as error:
            text = bytes(frame[:60]).decode("utf-8", "replace")
            raise ProtocolError("malformed_json", f"malformed JSON ({error}): {text!r}") from None
        else:
            deep = nesting_exceeds(value, self.limits.max_depth)
        if deep:
            raise ProtocolError(
                "too_deep",
                f"frame nests objects/arrays deeper than max_depth = {self.limits.max_depth}",
            )
        return value

    def check_fields(self, message: dict[str, Any]) -> None:
        """Top-level field count, name lengths and the meta fields' types."""
        lim = self.limits
        if len(message) > lim.max_fields:
            raise ProtocolError(
                "too_many_fields",
                f"frame has {len(message)} fields, max_fields is {lim.max_fields}",
            )
        if message and max(map(len, message)) > lim.max_name_chars:
            name = next(n for n in message if len(n) > lim.max_name_chars)
            raise ProtocolError(
                "too_long",
                f"field name {shown(name, 40)} has "
                f"{len(name)} characters, max_name_chars is "
                f"{lim.max_name_chars}",
            )
        for name in _META.keys() & message.keys():
            value = message[name]
            if value is not None and (
                type(value) is not str or len(value) > _META[name] * lim.max_name_chars
            ):
                _meta_error(name, value, _META[name] * lim.max_name_chars)


_META = {**dict.fromkeys(META_STRINGS, 1), **dict.fromkeys(LONG_META_STRINGS, 4)}
"""Meta field -> its longest value in units of `max_name_chars`."""


def _meta_error(name: str, value: Any, max_chars: int) -> None:
    if type(value) is not str:
        raise ProtocolError(
            "bad_type", f"'{name}' must be a string, got {type(value).__name__} {shown(value)}"
        )
    raise ProtocolError(
        "too_long",
        f"'{name}' has {len(value)} characters, at most {max_chars} allowed: {shown(value, 40)}",
    )


def nesting_exceeds(value: Any, max_depth: int) -> bool:
    """Whether a decoded JSON value nests objects/arrays deeper than `max_depth`
    (iterative: safe on any depth)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth >= max_depth:
            return True
        stack.extend((child, depth + 1) for child in item)
    return False
