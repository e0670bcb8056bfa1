"""Shared pieces of the `key=value` command lines of scripts/ (play, record, replay, bridge)."""

from __future__ import annotations

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def parse_key_values(argv: list[str], defaults: dict[str, str]) -> dict[str, str]:
    """`defaults` overridden by `key=value` items; SystemExit naming a bad item otherwise."""
    args = dict(defaults)
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in defaults:
            raise SystemExit(f"bad argument '{item}': use key=value with key in "
                             f"{', '.join(defaults)}")
        args[key] = value
    return args


def flag(args: dict[str, str], key: str) -> bool:
    """A true/false argument; SystemExit naming it when it is neither."""
    value = args[key].lower()
    if value not in TRUE + FALSE:
        raise SystemExit(f"{key} must be true or false, got '{args[key]}'")
    return value in TRUE
