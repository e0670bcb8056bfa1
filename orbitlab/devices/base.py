"""The teleoperation device interface: a 6-DOF normalised command plus buttons.

Every device produces, per `advance()`, a float32 tensor of shape (6,)

    [fx, fy, fz, tx, ty, tz]

(translation x, y, z then rotation about x, y, z, body frame: x forward, y left, z up),
each component in [-1, 1]. The raw device reading r (already in [-1, 1]) is shaped per
component as

    d = sign(r) * max(|r| - deadband, 0) / (1 - deadband)     (deadband in [0, 1))
    c = clip(sensitivity * d, -1, 1)

with `translation_sensitivity` for the first three and `rotation_sensitivity` for the
last three components (a scalar or one value per axis; a negative value flips an axis).
While paused, the command is zero.

Whether the numbers mean a wrench (force/torque fractions of the actuator limits) or a
velocity command (fractions of a velocity limit) is only a tag here, `Device.mode`,
taken from the config; the mapping to env actions is done by the caller.

Buttons are named events: "reset", "pause" (toggles `Device.paused`), "quit" (sets
`Device.quit_requested`), "save", and whatever else a device's config maps. Register
plain no-argument callables with `add_callback(button, fn)`; they run inside the
`advance()` call that sees the press, in registration order.

Devices are context managers: `with make_device("keyboard") as dev: ...` releases
the hardware (and restores the terminal) on exit, also on exceptions.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Literal, Self

import numpy as np
import torch

TELEOP_EXTRA = "pip install 'orbitlab-sim[teleop]'"
"""How to get the optional teleoperation packages (pygame-ce, hidapi)."""

BUILTIN_BUTTONS: tuple[str, ...] = ("reset", "pause", "quit", "save")
"""Button names every device accepts callbacks for (a device may never fire some)."""

CommandMode = Literal["wrench", "velocity"]


class TeleopDependencyError(ImportError):
    """An optional package a device needs is not installed; the message says which
    and how to install it."""


class DeviceNotFoundError(RuntimeError):
    """The device (or terminal) is not there or cannot be opened; the message names the
    device and what to check."""


def require(
    module: str, device: str, package: str | None = None, hint: str = TELEOP_EXTRA
) -> ModuleType:
    """Import `module` for `device`, or raise `TeleopDependencyError` naming the PyPI
    `package` (default: the module name) and the install `hint`."""
    if module == "pygame":
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TeleopDependencyError(
            f"The {device} device needs the Python package '{package or module}' "
            f"(import '{module}' failed: {exc}). Install it with: {hint}"
        ) from exc


@dataclass(kw_only=True)
class DeviceCfg:
    """Shaping and meaning of a device's 6-DOF command, shared by all devices."""

    translation_sensitivity: float | tuple[float, float, float] = 1.0
    """Gain on the translation components (x, y, z), dimensionless; a scalar or one per
    axis. The result is clipped to [-1, 1]."""
    rotation_sensitivity: float | tuple[float, float, float] = 1.0
    """Gain on the rotation components (about x, y, z), dimensionless; a scalar or one
    per axis. The result is clipped to [-1, 1]."""
    deadband: float = 0.0
    """Raw magnitudes below this, in [0, 1), give 0; larger ones are rescaled so the
    output still spans [-1, 1] continuously."""
    mode: CommandMode = "wrench"
    """What the command means downstream: 'wrench' (force/torque fractions) or
    'velocity' (linear/angular velocity fractions)."""


def shape_command(raw: np.ndarray | Iterable[float], cfg: DeviceCfg) -> np.ndarray:
    """Apply deadband, sensitivities and clipping to a raw 6-vector in [-1, 1].

    Returns a float64 numpy array of shape (6,) in [-1, 1]."""
    r = np.clip(np.asarray(raw, dtype=np.float64).reshape(6), -1.0, 1.0)
    db = float(cfg.deadband)
    if not 0.0 <= db < 1.0:
        raise ValueError(f"deadband must be in [0, 1), got {db}")
    if db > 0.0:
        r = np.sign(r) * np.maximum(np.abs(r) - db, 0.0) / (1.0 - db)
    gain = np.concatenate(
        [
            np.broadcast_to(np.asarray(cfg.translation_sensitivity, float), 3),
            np.broadcast_to(np.asarray(cfg.rotation_sensitivity, float), 3),
        ]
    )
    return np.clip(gain * r, -1.0, 1.0)


class Device(ABC):
    """A teleoperation device giving a normalised 6-DOF command and button events.

    Subclasses implement `_poll()` (read the hardware, call `_press(name)` for each
    button press seen, return the raw 6-vector in [-1, 1]) and may extend `reset()`
    and `close()`, and list their extra button names in `_extra_buttons()`.
    """

    cfg: DeviceCfg

    def __init__(self, cfg: DeviceCfg | None = None):
        self.cfg = cfg if cfg is not None else DeviceCfg()
        if self.cfg.mode not in ("wrench", "velocity"):
            raise ValueError(f"mode must be 'wrench' or 'velocity', got {self.cfg.mode!r}")
        self._callbacks: dict[str, list[Callable[[], object]]] = {}
        self._paused = False
        self._quit = False
        self._closed = False

    # ----------------------------------------------------------------- properties
    @property
    def mode(self) -> CommandMode:
        """'wrench' or 'velocity': how the caller should interpret the command."""
        return self.cfg.mode

    @property
    def paused(self) -> bool:
        """True while paused (toggled by the "pause" button); the command is zero."""
        return self._paused

    @property
    def quit_requested(self) -> bool:
        """True once the "quit" button was pressed (cleared by `reset()`)."""
        return self._quit

    @property
    def buttons(self) -> tuple[str, ...]:
        """Button names this device accepts callbacks for."""
        extra = [b for b in self._extra_buttons() if b not in BUILTIN_BUTTONS]
        return BUILTIN_BUTTONS + tuple(dict.fromkeys(extra))

    # ----------------------------------------------------------------- interface
    def add_callback(self, button: str, fn: Callable[[], object]) -> None:
        """Call `fn()` whenever `button` is pressed (during `advance()`)."""
        if button not in self.buttons:
            raise ValueError(
                f"{type(self).__name__} has no button {button!r}; known: {', '.join(self.buttons)}"
            )
        if not callable(fn):
            raise TypeError("callback must be callable")
        self._callbacks.setdefault(button, []).append(fn)

    def reset(self) -> None:
        """Zero the internal state: unpause, clear the quit flag (callbacks stay)."""
        self._paused = False
        self._quit = False

    def advance(self) -> torch.Tensor:
        """Poll the device, fire button callbacks, return the shaped command.

        Returns a float32 CPU tensor of shape (6,), [fx, fy, fz, tx, ty, tz], each in
        [-1, 1] (zeros while paused)."""
        cmd = shape_command(self._poll(), self.cfg)
        if self._paused:
            cmd[:] = 0.0
        return torch.as_tensor(cmd, dtype=torch.float32)

    def close(self) -> None:
        """Release the device (idempotent)."""
        self._closed = True

    def help_text(self) -> str:
        """A short human-readable description of the controls."""
        return f"{type(self).__name__} ({self.mode} command)"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------------- for subclasses
    @abstractmethod
    def _poll(self) -> np.ndarray | Iterable[float]:
        """Read the device; return the raw 6-vector in [-1, 1]."""

    def _extra_buttons(self) -> Iterable[str]:
        """Button names beyond `BUILTIN_BUTTONS` this device can fire."""
        return ()

    def _press(self, button: str) -> None:
        """Handle a button press: built-in effects, then the callbacks."""
        if button == "pause":
            self._paused = not self._paused
        elif button == "quit":
            self._quit = True
        for fn in list(self._callbacks.get(button, ())):
            fn()
