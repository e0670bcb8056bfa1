"""Typed `key=value` command lines of scripts/ (play, export, record, replay, demo tools).

Each script declares its arguments once, as a dict of `Arg` (a default as typed on a command
line, or `REQUIRED`, and a converter), and `parse_args` turns `argv` into typed values or
raises `ArgumentError` whose one-line message names the key, the value and what is allowed:

    ARGS = {"num_envs": Arg("64", integer(min=1)), "file": Arg(REQUIRED, existing_file)}
    args = parse_args(argv, ARGS)          # {"num_envs": 64, "file": Path(...), "verbose": False}

`run(main, argv, prog)` runs a script's `main` and turns an `ArgumentError` into that line
on stderr and exit status 2, and a `UserError` (a bad file, an untrusted checkpoint) into its
line and status 1; `verbose=true` shows the traceback instead. The converters are plain
functions `(key, text) -> value`, so they can move to another front end (hydra) unchanged.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
REQUIRED = None
"""`Arg.default` of an argument that must be given."""

Converter = Callable[[str, str], Any]
"""(key, text) -> typed value; raises ArgumentError naming the key, the text and the rule."""


class UserError(Exception):
    """A problem with the user's input that a one-line message explains (no traceback)."""


class ArgumentError(UserError, ValueError):
    """A bad command-line argument; scripts exit with status 2 on it."""


def bad(key: str, text: str, allowed: str) -> ArgumentError:
    """The one-line error for `key=text`, saying what is `allowed`."""
    return ArgumentError(f"{key}={text!r} is invalid: {allowed}")


@dataclass(frozen=True)
class Arg:
    """One argument: its default (command-line text; REQUIRED: none) and its converter."""

    default: str | None = ""
    convert: Converter | None = None
    """None: the text as it is."""


# ------------------------------------------------------------------ converters
def text(key: str, value: str) -> str:
    """Any text."""
    return value


def integer(min: int | None = None, max: int | None = None) -> Converter:
    """A converter to int within [min, max] (None: unbounded)."""

    def convert(key: str, value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise bad(key, value, f"expected an integer{_range(min, max)}") from None
        if (min is not None and number < min) or (max is not None and number > max):
            raise bad(key, value, f"expected an integer{_range(min, max)}")
        return number

    return convert


def number(min: float | None = None, max: float | None = None, min_open: bool = False) -> Converter:
    """A converter to a finite float within [min, max] ((min, max] with `min_open`)."""

    def convert(key: str, value: str) -> float:
        allowed = f"expected a finite number{_range(min, max, min_open)}"
        try:
            result = float(value.strip())
        except ValueError:
            raise bad(key, value, allowed) from None
        low_ok = min is None or (result > min if min_open else result >= min)
        if not math.isfinite(result) or not low_ok or (max is not None and result > max):
            raise bad(key, value, allowed)
        return result

    return convert


def zero_or_number(low: float, high: float, zero: str) -> Converter:
    """A converter to 0 (meaning `zero`, e.g. 'as fast as possible') or a finite float in
    [low, high]."""
    allowed = f"expected 0 ({zero}) or a finite number in [{_show(low)}, {_show(high)}]"

    def convert(key: str, value: str) -> float:
        try:
            result = float(value.strip())
        except ValueError:
            raise bad(key, value, allowed) from None
        if result != 0.0 and not (low <= result <= high):  # NaN fails both
            raise bad(key, value, allowed)
        return result

    return convert


def _range(low: float | None, high: float | None, low_open: bool = False) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{_show(low)}, {_show(high)}]"
    if low is not None:
        return f" {'>' if low_open else '>='} {_show(low)}"
    return f" <= {_show(high)}" if high is not None else ""


def _show(bound: float) -> str:
    """A bound as typed: ints in full (4194304), other numbers short (1e+06, 0.5)."""
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def boolean(key: str, value: str) -> bool:
    """true/false (also 1/0, yes/no, on/off)."""
    lowered = value.strip().lower()
    if lowered not in TRUE + FALSE:
        raise bad(key, value, "expected true or false")
    return lowered in TRUE


def choice(*options: str) -> Converter:
    """A converter that accepts one of `options`."""

    def convert(key: str, value: str) -> str:
        if value not in options:
            raise bad(key, value, f"expected one of {', '.join(options)}")
        return value

    return convert


def optional(convert: Converter) -> Converter:
    """`convert`, with the empty text meaning None (not given)."""

    def inner(key: str, value: str) -> Any:
        return None if value == "" else convert(key, value)

    return inner


def existing_file(key: str, value: str) -> Path:
    """The path of an existing readable file."""
    path = Path(value)
    if not value or not path.is_file():
        raise bad(key, value, "expected an existing file")
    if not os.access(path, os.R_OK):
        raise bad(key, value, "the file is not readable")
    return path


def existing_files(key: str, value: str) -> list[Path]:
    """A comma-separated list of existing files (at least one)."""
    if not value.strip():
        raise bad(key, value, "expected a comma-separated list of existing files")
    return [existing_file(key, item) for item in list_items(value)]


def output_file(key: str, value: str) -> Path:
    """A path a file can be written to: not a directory, its directory exists or can be made."""
    path = Path(value)
    if not value or value.endswith(os.sep) or path.is_dir():
        raise bad(key, value, "expected a file path (not a directory)")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise bad(key, value, "its directory cannot be created")
    return path


def output_dir(key: str, value: str) -> Path:
    """A directory path (existing or to be made), not an existing file."""
    path = Path(value)
    if not value or (path.exists() and not path.is_dir()):
        raise bad(key, value, "expected a directory path (not an existing file)")
    return path


def list_items(value: str) -> list[str]:
    """The items of a list as typed (`1,2`, `[1, 2]`, or one item `1`)."""
    inner = value.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    return [item.strip() for item in inner.split(",")]


def integers(min: int | None = None, max: int | None = None) -> Converter:
    """A converter to a non-empty list of ints within [min, max] (`[1,64]`, `1,64`, `1`)."""
    one = integer(min, max)

    def convert(key: str, value: str) -> list[int]:
        try:
            return [one(key, item) for item in list_items(value)]
        except ArgumentError:
            raise bad(key, value, f"expected a list of integers{_range(min, max)}") from None

    return convert


def numbers(
    min: float | None = None, max: float | None = None, min_open: bool = False
) -> Converter:
    """A converter to a non-empty list of finite floats within [min, max] ((min, max])."""
    one = number(min, max, min_open)

    def convert(key: str, value: str) -> list[float]:
        try:
            return [one(key, item) for item in list_items(value)]
        except ArgumentError:
            allowed = f"expected a list of finite numbers{_range(min, max, min_open)}"
            raise bad(key, value, allowed) from None

    return convert


def names(key: str, value: str) -> list[str]:
    """A comma-separated list of non-empty names."""
    items = list_items(value)
    if not all(items):
        raise bad(key, value, "expected comma-separated names, none empty")
    return items


# ------------------------------------------------------------------ parsing
def parse_args(argv: Sequence[str], spec: dict[str, Arg]) -> dict[str, Any]:
    """Typed values of every key of `spec` (plus `verbose`), from `key=value` items of `argv`.

    Raises ArgumentError for an item that is no `key=value` of a known key, a key given
    twice, a value its converter refuses, or a REQUIRED key that is missing.
    """
    spec = {"verbose": Arg("false", boolean), **spec}
    given: dict[str, str] = {}
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in spec:
            raise ArgumentError(
                f"bad argument {item!r}: use key=value with key in {', '.join(spec)}"
            )
        if key in given:
            raise ArgumentError(f"{key} is given twice ({given[key]!r}, {value!r})")
        given[key] = value
    missing = [k for k, a in spec.items() if a.default is REQUIRED and k not in given]
    if missing:
        raise ArgumentError(f"missing required argument {missing[0]}=...")
    args: dict[str, Any] = {}
    for key, arg in spec.items():
        value = given.get(key, arg.default)
        args[key] = value if arg.convert is None else arg.convert(key, value)
    return args


def wants_verbose(argv: Sequence[str]) -> bool:
    """Whether `argv` asks for `verbose=true` (read before anything else is parsed)."""
    return any(
        item.partition("=")[0] == "verbose" and item.partition("=")[2].lower() in TRUE
        for item in argv
    )


def run(
    main: Callable[[list[str]], int | None], argv: list[str], prog: str, doc: str | None = None
) -> int:
    """`main(argv)`'s exit status; an ArgumentError is one line on stderr and status 2, a
    UserError one line and status 1 (both with the traceback under verbose=true); `-h` or
    `--help` prints `doc` (the command's usage) and returns 0."""
    if "-h" in argv or "--help" in argv:
        print(doc or f"usage: {prog} key=value ...")
        return 0
    try:
        return int(main(argv) or 0)
    except UserError as error:
        if wants_verbose(argv):
            raise
        print(f"{prog}: {error}", file=sys.stderr)
        return 2 if isinstance(error, ArgumentError) else 1


# ------------------------------------------------------------------ untyped (legacy)
def parse_key_values(argv: list[str], defaults: dict[str, str]) -> dict[str, str]:
    """`defaults` overridden by `key=value` items (text values); SystemExit naming a bad item."""
    try:
        args = parse_args(argv, {key: Arg(value) for key, value in defaults.items()})
    except ArgumentError as error:
        raise SystemExit(str(error)) from None
    if "verbose" not in defaults:
        del args["verbose"]
    return args


def flag(args: dict[str, str], key: str) -> bool:
    """A true/false argument; SystemExit naming it when it is neither."""
    try:
        return boolean(key, args[key])
    except ArgumentError as error:
        raise SystemExit(str(error)) from None
