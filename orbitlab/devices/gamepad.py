"""Gamepad teleoperation through pygame (SDL joystick API), or evdev without pygame.

Each command component is a sum of signed input terms, written as a small expression:

    aN   axis N, in [-1, 1]
    tN   trigger axis N, mapped from [-1 (released), 1 (pressed)] to [0, 1]
    bN   button N, 0 or 1
    hxN  / hyN   hat N, x or y, in {-1, 0, 1}

e.g. "t5-t2" (right trigger minus left trigger) or "-a1". The default map fits an
Xbox-style pad under SDL on Linux (axes: 0 LX, 1 LY, 2 LT, 3 RX, 4 RY, 5 RT; buttons:
0 A, 1 B, 2 X, 3 Y, 4 LB, 5 RB, 6 Back, 7 Start):

    left stick   up/down -> +x/-x, left/right -> +y/-y
    triggers     RT -> +z, LT -> -z
    bumpers      RB -> +roll, LB -> -roll
    right stick  up/down -> +pitch/-pitch (pushing tips the nose down), left/right -> +yaw/-yaw
    A pause, B reset, Back save, Start quit

Other pads number their axes and buttons differently: print `Gamepad.state()` to see
which index moves, then set `GamepadCfg.axis_map` / `button_map`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from orbitlab.devices.base import (
    TELEOP_EXTRA,
    Device,
    DeviceCfg,
    DeviceNotFoundError,
    TeleopDependencyError,
)

_TERM = re.compile(r"\s*([+-]?)\s*(hx|hy|a|t|b)(\d+)\s*")


def _default_axis_map() -> tuple[str, ...]:
    return ("-a1", "-a0", "t5-t2", "b5-b4", "-a4", "-a3")


def _default_button_map() -> dict[int, str]:
    return {0: "pause", 1: "reset", 6: "save", 7: "quit"}


@dataclass(kw_only=True)
class GamepadCfg(DeviceCfg):
    """Axis/button mapping of a gamepad (see the module docstring for the syntax)."""

    axis_map: tuple[str, ...] = field(default_factory=_default_axis_map)
    """Six expressions, one per command component [fx, fy, fz, tx, ty, tz]."""
    button_map: dict[int, str] = field(default_factory=_default_button_map)
    """Button index -> button name (fires on press)."""
    joystick_index: int = 0
    """Which joystick (pygame index, or evdev gamepad in /dev/input order)."""
    backend: str = "auto"
    """'pygame', 'evdev' or 'auto' (pygame if installed, else evdev)."""


Term = tuple[float, str, int]


def parse_axis_expr(expr: str) -> list[Term]:
    """Parse e.g. "t5-t2" into [(+1, "t", 5), (-1, "t", 2)]."""
    terms: list[Term] = []
    pos = 0
    expr = expr.strip()
    if not expr or expr == "0":
        return terms
    while pos < len(expr):
        m = _TERM.match(expr, pos)
        if m is None or (terms and not m.group(1)):
            raise ValueError(
                f"bad gamepad axis expression {expr!r} at position {pos}; "
                "use terms like a0, -a1, t5, b4, hx0 joined by + or -"
            )
        terms.append((-1.0 if m.group(1) == "-" else 1.0, m.group(2), int(m.group(3))))
        pos = m.end()
    return terms


class GamepadState:
    """Turns raw axis/button/hat readings into the raw 6-vector and button presses.

    Trigger axes rest at -1 under SDL, but many drivers report 0 until they first
    move; a trigger axis reads as released until it has reported a value other than 0."""

    def __init__(self, axis_map: Sequence[str], button_map: dict[int, str]):
        if len(axis_map) != 6:
            raise ValueError(f"axis_map needs 6 expressions, got {len(axis_map)}")
        self.terms = [parse_axis_expr(e) for e in axis_map]
        self.button_map = dict(button_map)
        self._prev_buttons: tuple[int, ...] = ()
        self._trigger_live: set[int] = set()

    def reset(self) -> None:
        self._trigger_live.clear()

    def update(
        self, axes: Sequence[float], buttons: Sequence[int], hats: Sequence[tuple[int, int]] = ()
    ) -> tuple[np.ndarray, list[str]]:
        """Raw command (6,) in [-1, 1] and the names of buttons newly pressed."""

        def get(seq, i, default=0.0):
            return seq[i] if 0 <= i < len(seq) else default

        raw = np.zeros(6)
        for k, terms in enumerate(self.terms):
            for sign, kind, i in terms:
                if kind == "a":
                    v = float(get(axes, i))
                elif kind == "t":
                    a = float(get(axes, i, -1.0))
                    if a != 0.0:
                        self._trigger_live.add(i)
                    v = (a + 1.0) / 2.0 if i in self._trigger_live else 0.0
                elif kind == "b":
                    v = 1.0 if get(buttons, i, 0) else 0.0
                else:
                    hat = get(hats, i, (0, 0))
                    v = float(hat[0] if kind == "hx" else hat[1])
                raw[k] += sign * v
        pressed = []
        cur = tuple(1 if b else 0 for b in buttons)
        for i, name in self.button_map.items():
            if get(cur, i, 0) and not get(self._prev_buttons, i, 0):
                pressed.append(name)
        self._prev_buttons = cur
        return np.clip(raw, -1.0, 1.0), pressed


def normalize_abs(value: int, lo: int, hi: int) -> float:
    """An evdev absolute-axis value in [lo, hi] mapped to [-1, 1]."""
    if hi <= lo:
        return 0.0
    return float(np.clip(2.0 * (value - lo) / (hi - lo) - 1.0, -1.0, 1.0))


class Gamepad(Device):
    """A gamepad/joystick read through pygame (or evdev)."""

    cfg: GamepadCfg

    def __init__(self, cfg: GamepadCfg | None = None):
        super().__init__(cfg if cfg is not None else GamepadCfg())
        self._state = GamepadState(self.cfg.axis_map, self.cfg.button_map)
        backend = self.cfg.backend
        if backend not in ("auto", "pygame", "evdev"):
            raise ValueError(f"backend must be 'auto', 'pygame' or 'evdev', got {backend!r}")
        if backend == "auto":
            backend = "pygame" if _importable("pygame") else "evdev"
            if backend == "evdev" and not _importable("evdev"):
                raise TeleopDependencyError(
                    "The gamepad device needs the Python package 'pygame' (or 'evdev' on "
                    f"Linux); neither can be imported. Install with: {TELEOP_EXTRA}"
                )
        self._reader = (
            _PygameReader(self.cfg.joystick_index)
            if backend == "pygame"
            else _EvdevReader(self.cfg.joystick_index)
        )
        self.backend = backend

    @property
    def name(self) -> str:
        """The device name the backend reports."""
        return self._reader.name

    def state(self) -> tuple[list[float], list[int], list[tuple[int, int]]]:
        """Current raw (axes, buttons, hats), for finding a pad's indices."""
        return self._reader.read()

    def _extra_buttons(self) -> Iterable[str]:
        return self.cfg.button_map.values()

    def reset(self) -> None:
        super().reset()
        self._state.reset()

    def _poll(self) -> np.ndarray:
        raw, pressed = self._state.update(*self._reader.read())
        for name in pressed:
            self._press(name)
        return raw

    def close(self) -> None:
        if not self._closed:
            self._reader.close()
        super().close()

    def help_text(self) -> str:
        comps = ["fx", "fy", "fz", "tx", "ty", "tz"]
        axes = ", ".join(f"{c}={e}" for c, e in zip(comps, self.cfg.axis_map, strict=True))
        buttons = ", ".join(f"b{i}={n}" for i, n in self.cfg.button_map.items())
        return f"Gamepad '{self.name}' via {self.backend} ({self.mode}): {axes}; {buttons}"


def _importable(module: str) -> bool:
    if module == "pygame":
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        __import__(module)
    except ImportError:
        return False
    return True


_NOT_FOUND = (
    "gamepad: no joystick #{index} found via {backend} ({count} connected). Check "
    "that it is plugged in or paired (Bluetooth), shows up in /dev/input/js* or "
    "/dev/input/event*, and that your user may read those (group 'input')."
)


class _PygameReader:
    def __init__(self, index: int):
        # Joystick events need SDL's event loop, which needs a video driver; without a
        # display use SDL's dummy driver. Read the pad even when no window has focus.
        if sys.platform.startswith("linux") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        ):
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS", "1")
        from orbitlab.devices.base import require

        pg = require("pygame", "gamepad", package="pygame-ce (or pygame)")
        self._pg = pg
        try:
            pg.display.init()
            pg.joystick.init()
        except pg.error as exc:
            raise DeviceNotFoundError(
                f"gamepad: SDL could not start ({exc}); if there is no usable display, "
                "set SDL_VIDEODRIVER=dummy."
            ) from exc
        count = pg.joystick.get_count()
        if not 0 <= index < count:
            raise DeviceNotFoundError(_NOT_FOUND.format(index=index, backend="pygame", count=count))
        self._js = pg.joystick.Joystick(index)
        self._js.init()
        self.name = self._js.get_name()

    def read(self):
        self._pg.event.pump()
        js = self._js
        axes = [js.get_axis(i) for i in range(js.get_numaxes())]
        buttons = [js.get_button(i) for i in range(js.get_numbuttons())]
        hats = [tuple(js.get_hat(i)) for i in range(js.get_numhats())]
        return axes, buttons, hats

    def close(self):
        self._js.quit()


class _EvdevReader:
    """Linux evdev: axes and buttons in SDL-like order (Xbox layout)."""

    _AXES = ("ABS_X", "ABS_Y", "ABS_Z", "ABS_RX", "ABS_RY", "ABS_RZ")
    _BUTTONS = (
        "BTN_SOUTH",
        "BTN_EAST",
        "BTN_NORTH",
        "BTN_WEST",
        "BTN_TL",
        "BTN_TR",
        "BTN_SELECT",
        "BTN_START",
        "BTN_MODE",
        "BTN_THUMBL",
        "BTN_THUMBR",
    )

    def __init__(self, index: int):
        from orbitlab.devices.base import require

        ev = require(
            "evdev",
            "gamepad",
            package="evdev",
            hint=f"{TELEOP_EXTRA} (pygame), or pip install evdev",
        )
        self._ev = ev
        ecodes = ev.ecodes
        pads = []
        for path in ev.list_devices():
            try:
                dev = ev.InputDevice(path)
            except OSError:
                continue
            keys = dev.capabilities().get(ecodes.EV_KEY, [])
            if ecodes.BTN_GAMEPAD in keys or ecodes.BTN_JOYSTICK in keys:
                pads.append(dev)
            else:
                dev.close()
        if not 0 <= index < len(pads):
            for d in pads:
                d.close()
            raise DeviceNotFoundError(
                _NOT_FOUND.format(index=index, backend="evdev", count=len(pads))
            )
        self._dev = pads[index]
        for i, d in enumerate(pads):
            if i != index:
                d.close()
        self.name = self._dev.name
        self._axis_codes = [getattr(ecodes, n) for n in self._AXES]
        self._hat_codes = [(ecodes.ABS_HAT0X, ecodes.ABS_HAT0Y)]
        self._button_codes = [getattr(ecodes, n) for n in self._BUTTONS]
        self._absinfo = {
            code: self._dev.absinfo(code)
            for code, _ in self._dev.capabilities().get(ecodes.EV_ABS, [])
        }
        self._values: dict[int, int] = {c: info.value for c, info in self._absinfo.items()}
        self._pressed = set(self._dev.active_keys())

    def read(self):
        ecodes = self._ev.ecodes
        try:
            for event in self._dev.read():
                if event.type == ecodes.EV_ABS:
                    self._values[event.code] = event.value
                elif event.type == ecodes.EV_KEY:
                    (self._pressed.add if event.value else self._pressed.discard)(event.code)
        except BlockingIOError:
            pass
        axes = []
        for code in self._axis_codes:
            info = self._absinfo.get(code)
            axes.append(
                normalize_abs(self._values.get(code, 0), info.min, info.max) if info else 0.0
            )
        buttons = [1 if c in self._pressed else 0 for c in self._button_codes]
        hats = [
            (int(np.sign(self._values.get(x, 0))), -int(np.sign(self._values.get(y, 0))))
            for x, y in self._hat_codes
        ]
        return axes, buttons, hats

    def close(self):
        self._dev.close()
