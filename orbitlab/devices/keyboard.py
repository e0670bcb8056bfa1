"""Keyboard teleoperation: a terminal backend (no root, no window) and a pygame window.

Default key map (configurable in `KeyboardCfg`; letters are case-insensitive):

    W / S   +x / -x  translate forward / back        I / K   +ty / -ty  pitch
    A / D   +y / -y  translate left / right          J / L   +tz / -tz  yaw
    Q / E   +z / -z  translate up / down             U / O   +tx / -tx  roll
    space   pause (toggle)    R  reset    C  save    G  grip (toggle)    Esc  quit

Each held key drives its axis to its value, +-1 by default (opposite keys cancel).

`TerminalKeyboard` reads stdin in cbreak mode (termios, non-blocking via select);
Ctrl+C still raises KeyboardInterrupt. Terminals send no key-up events, so a press holds
its axis for `key_first_hold_s` (long enough to bridge the terminal's auto-repeat
delay), and each auto-repeat while held extends it by `key_hold_s`; the axis drops to
0 about `key_hold_s` after the key is released. The terminal settings are restored by
`close()` (the context manager calls it, also on exceptions) and at interpreter exit.

`WindowKeyboard` opens a small pygame window and uses its real key-down/up events
(the window needs the focus); needs `pip install 'orbitlab-sim[teleop]'`.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from orbitlab.devices.base import Device, DeviceCfg, DeviceNotFoundError, require


def _default_axis_keys() -> dict[str, tuple[int, float]]:
    return {
        "w": (0, 1.0),
        "s": (0, -1.0),
        "a": (1, 1.0),
        "d": (1, -1.0),
        "q": (2, 1.0),
        "e": (2, -1.0),
        "u": (3, 1.0),
        "o": (3, -1.0),
        "i": (4, 1.0),
        "k": (4, -1.0),
        "j": (5, 1.0),
        "l": (5, -1.0),
    }


def _default_button_keys() -> dict[str, str]:
    return {"space": "pause", "r": "reset", "c": "save", "g": "grip", "esc": "quit"}


@dataclass(kw_only=True)
class KeyboardCfg(DeviceCfg):
    """Key map and hold timing of the keyboard devices.

    Key names: lower-case characters ("w", "1", ","), "space", "esc", "enter", "tab",
    "backspace", "up", "down", "left", "right"."""

    axis_keys: dict[str, tuple[int, float]] = field(default_factory=_default_axis_keys)
    """Key name -> (command index 0..5, value in [-1, 1]) while the key is held."""
    button_keys: dict[str, str] = field(default_factory=_default_button_keys)
    """Key name -> button name (fires on press)."""
    key_hold_s: float = 0.1
    """Terminal backend: hold time added by each auto-repeat of a held key, s."""
    key_first_hold_s: float = 0.6
    """Terminal backend: hold time after the first press of a key, s (should exceed the
    terminal's auto-repeat delay, typically 0.25-0.6 s)."""
    window_size: tuple[int, int] = (480, 220)
    """Window backend: window size, pixels."""


# --------------------------------------------------------------------------- key state
class KeyHold:
    """Which keys are held (until a deadline, s) and the raw command they give."""

    def __init__(self, axis_keys: dict[str, tuple[int, float]]):
        for key, (axis, _) in axis_keys.items():
            if not 0 <= axis < 6:
                raise ValueError(f"axis index of key {key!r} must be in 0..5, got {axis}")
        self.axis_keys = axis_keys
        self._until: dict[str, float] = {}

    def press(self, key: str, until: float = math.inf) -> None:
        """Hold `key` until time `until` (s; inf: until `release`); never shortens a
        running hold."""
        if key in self.axis_keys:
            self._until[key] = max(until, self._until.get(key, -math.inf))

    def release(self, key: str) -> None:
        self._until.pop(key, None)

    def clear(self) -> None:
        self._until.clear()

    def held(self, key: str, now: float) -> bool:
        return self._until.get(key, -math.inf) > now

    def command(self, now: float) -> np.ndarray:
        """Raw 6-vector in [-1, 1] from the keys held at time `now`, s."""
        self._until = {k: t for k, t in self._until.items() if t > now}
        raw = np.zeros(6)
        for key in self._until:
            axis, value = self.axis_keys[key]
            raw[axis] += value
        return np.clip(raw, -1.0, 1.0)


_CSI_FINAL = {"A": "up", "B": "down", "C": "right", "D": "left"}
_CONTROL = {
    "\r": "enter",
    "\n": "enter",
    "\t": "tab",
    "\x7f": "backspace",
    "\x08": "backspace",
    " ": "space",
}


def parse_keys(data: bytes) -> list[str]:
    """Key names from raw terminal bytes (one read's worth).

    Printable characters are lower-cased; arrow keys (ESC [ A..D or ESC O A..D) become
    "up"/"down"/"right"/"left"; other escape sequences are skipped; a lone ESC is
    "esc"; other control characters are "ctrl+<letter>"."""
    text = data.decode("latin-1")
    keys: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\x1b":
            if i + 1 < n and text[i + 1] in "[O":
                j = i + 2
                while j < n and not ("\x40" <= text[j] <= "\x7e"):
                    j += 1  # parameter bytes of a CSI sequence
                if j < n:
                    if text[j] in _CSI_FINAL and j == i + 2:
                        keys.append(_CSI_FINAL[text[j]])
                    i = j + 1
                    continue
                i = n  # truncated sequence: drop it
                continue
            keys.append("esc")
        elif ch in _CONTROL:
            keys.append(_CONTROL[ch])
        elif ord(ch) < 32:
            keys.append("ctrl+" + chr(ord(ch) + 96))
        else:
            keys.append(ch.lower())
        i += 1
    return keys


def describe_keys(cfg: KeyboardCfg) -> str:
    """A readable key map, one line per binding."""
    names = ["+x", "+y", "+z", "+roll", "+pitch", "+yaw"]
    lines = []
    for key, (axis, value) in cfg.axis_keys.items():
        label = names[axis] if value >= 0 else "-" + names[axis][1:]
        lines.append(f"  {key:>9}  {label}")
    for key, button in cfg.button_keys.items():
        lines.append(f"  {key:>9}  {button}")
    return "\n".join(lines)


class _KeyboardBase(Device):
    cfg: KeyboardCfg

    def __init__(self, cfg: KeyboardCfg | None = None, clock: Callable[[], float] | None = None):
        super().__init__(cfg if cfg is not None else KeyboardCfg())
        self._clock = clock or time.monotonic
        self._keys = KeyHold(self.cfg.axis_keys)

    def _extra_buttons(self) -> Iterable[str]:
        return self.cfg.button_keys.values()

    def reset(self) -> None:
        """Release every key, unpause."""
        super().reset()
        self._keys.clear()

    def help_text(self) -> str:
        return f"{type(self).__name__} ({self.mode} command):\n{describe_keys(self.cfg)}"


# --------------------------------------------------------------------------- terminal
class TerminalKeyboard(_KeyboardBase):
    """Keyboard on the controlling terminal (stdin), with emulated key hold.

    `reader` (tests): a callable returning the bytes available now (b"" if none); when
    given, the terminal is not touched. `clock`: seconds, monotonic."""

    def __init__(
        self,
        cfg: KeyboardCfg | None = None,
        *,
        reader: Callable[[], bytes] | None = None,
        clock: Callable[[], float] | None = None,
    ):
        super().__init__(cfg, clock)
        self._fd: int | None = None
        self._saved = None
        self._reader = reader if reader is not None else self._open_stdin()

    def _open_stdin(self) -> Callable[[], bytes]:
        try:
            import select
            import termios
            import tty
        except ImportError as exc:
            raise DeviceNotFoundError(
                "The terminal keyboard needs a POSIX terminal (termios); here use the "
                "'keyboard-window' device instead (pip install 'orbitlab-sim[teleop]')."
            ) from exc
        stdin = sys.stdin
        try:
            fd = stdin.fileno()
            is_tty = os.isatty(fd)
        except (AttributeError, ValueError, OSError):
            is_tty = False
        if not is_tty:
            raise DeviceNotFoundError(
                "keyboard: stdin is not a terminal (TTY), so keys cannot be read. Run the "
                "script in an interactive terminal (not piped, not under a job runner or "
                "pytest capture), or use the 'keyboard-window' device (pygame window)."
            )
        self._saved = termios.tcgetattr(fd)
        self._fd = fd
        tty.setcbreak(fd)  # no line buffering, no echo; keeps Ctrl+C
        atexit.register(self.close)

        def read() -> bytes:
            chunks = []
            while select.select([fd], [], [], 0.0)[0]:
                chunk = os.read(fd, 1024)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks)

        return read

    def _poll(self) -> np.ndarray:
        now = self._clock()
        for key in parse_keys(self._reader()):
            if key in self.cfg.button_keys:
                self._press(self.cfg.button_keys[key])
            elif key in self.cfg.axis_keys:
                hold = (
                    self.cfg.key_hold_s if self._keys.held(key, now) else self.cfg.key_first_hold_s
                )
                self._keys.press(key, now + hold)
        return self._keys.command(now)

    def close(self) -> None:
        """Restore the terminal settings (idempotent)."""
        if self._fd is not None and self._saved is not None:
            import termios

            try:
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            except termios.error:
                pass
            self._fd = None
            atexit.unregister(self.close)
        super().close()


# --------------------------------------------------------------------------- window
_PYGAME_NAMES = {"escape": "esc", "return": "enter"}


class WindowKeyboard(_KeyboardBase):
    """Keyboard through a small pygame window with real key-down/up events (the window
    must have the focus); closing the window presses "quit"."""

    def __init__(self, cfg: KeyboardCfg | None = None, *, clock: Callable[[], float] | None = None):
        super().__init__(cfg, clock)
        pg = require("pygame", "keyboard-window", package="pygame-ce (or pygame)")
        self._pg = pg
        try:
            pg.display.init()
            pg.font.init()
            self._screen = pg.display.set_mode(self.cfg.window_size)
        except pg.error as exc:
            raise DeviceNotFoundError(
                f"keyboard-window: pygame could not open a window ({exc}); check that a "
                "display is available (DISPLAY / WAYLAND_DISPLAY), or use the terminal "
                "'keyboard' device."
            ) from exc
        pg.display.set_caption("orbitlab teleop (keep this window focused)")
        self._draw_help()

    def _draw_help(self) -> None:
        pg = self._pg
        self._screen.fill((20, 20, 30))
        try:
            font = pg.font.Font(None, 20)
        except (pg.error, NotImplementedError, ImportError):  # no font module: blank window
            pg.display.flip()
            return
        lines = ["orbitlab teleop - keys:"] + describe_keys(self.cfg).splitlines()
        cols = 2
        per_col = math.ceil(len(lines) / cols)
        for i, line in enumerate(lines):
            surf = font.render(line.strip(), True, (220, 220, 220))
            x = 10 + (i // per_col) * (self.cfg.window_size[0] // cols)
            self._screen.blit(surf, (x, 10 + (i % per_col) * 20))
        pg.display.flip()

    def key_name(self, key_code: int) -> str:
        """Our key name of a pygame key code."""
        name = self._pg.key.name(key_code).lower()
        return _PYGAME_NAMES.get(name, name)

    def _poll(self) -> np.ndarray:
        pg = self._pg
        for event in pg.event.get():
            if event.type == pg.QUIT:
                self._press("quit")
            elif event.type == pg.KEYDOWN:
                name = self.key_name(event.key)
                if name in self.cfg.button_keys:
                    self._press(self.cfg.button_keys[name])
                else:
                    self._keys.press(name)
            elif event.type == pg.KEYUP:
                self._keys.release(self.key_name(event.key))
        return self._keys.command(self._clock())

    def close(self) -> None:
        """Close the window (idempotent)."""
        if not self._closed and getattr(self, "_pg", None) is not None:
            self._pg.display.quit()
        super().close()
