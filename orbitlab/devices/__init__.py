"""Teleoperation devices: keyboard, gamepad, SpaceMouse, a scripted replay and a pilot.

Every device gives, per `advance()`, a normalised 6-DOF body-frame command (float32
tensor (6,), [fx, fy, fz, tx, ty, tz], each in [-1, 1]) and fires button callbacks
("reset", "pause", "quit", "save", ...); `Device.mode` says whether the caller should
treat it as a wrench or a velocity command.

    from orbitlab.devices import make_device

    with make_device("keyboard") as dev:           # terminal, no root, no window
        dev.add_callback("reset", env_reset)
        while not dev.quit_requested:
            cmd = dev.advance()

Names for `make_device`: "keyboard" (terminal), "keyboard-window" (pygame window),
"gamepad" (pygame, or evdev), "spacemouse" (hidapi), "scripted" (replay; no hardware),
"pilot" (a task's scripted operator: `orbitlab.devices.pilot`; no hardware).
Optional packages: `pip install 'orbitlab-sim[teleop]'` (pygame, hidapi); a missing one
raises `TeleopDependencyError`, missing hardware `DeviceNotFoundError`, both saying what
to install or check.
"""

from __future__ import annotations

from orbitlab.devices.base import (
    BUILTIN_BUTTONS,
    TELEOP_EXTRA,
    Device,
    DeviceCfg,
    DeviceNotFoundError,
    TeleopDependencyError,
    shape_command,
)
from orbitlab.devices.gamepad import Gamepad, GamepadCfg
from orbitlab.devices.keyboard import KeyboardCfg, TerminalKeyboard, WindowKeyboard
from orbitlab.devices.pilot import PilotCfg, PilotDevice
from orbitlab.devices.scripted import ScriptedCfg, ScriptedDevice
from orbitlab.devices.spacemouse import SpaceMouse, SpaceMouseCfg

DEVICES: dict[str, tuple[type[Device], type[DeviceCfg]]] = {
    "keyboard": (TerminalKeyboard, KeyboardCfg),
    "keyboard-window": (WindowKeyboard, KeyboardCfg),
    "gamepad": (Gamepad, GamepadCfg),
    "spacemouse": (SpaceMouse, SpaceMouseCfg),
    "scripted": (ScriptedDevice, ScriptedCfg),
    "pilot": (PilotDevice, PilotCfg),
}
"""Device name -> (class, config class)."""


def make_device(name: str, cfg: DeviceCfg | None = None) -> Device:
    """Open the device called `name` (see `DEVICES`) with `cfg` (None: its defaults).

    A plain `DeviceCfg` is accepted too: its shaping and mode fields are copied into the
    device's own config class."""
    key = name.strip().lower().replace("_", "-")
    if key not in DEVICES:
        raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    cls, cfg_cls = DEVICES[key]
    if cfg is not None and not isinstance(cfg, cfg_cls):
        if type(cfg) is not DeviceCfg:
            raise TypeError(
                f"device {key!r} needs a {cfg_cls.__name__} (or a DeviceCfg), "
                f"got {type(cfg).__name__}"
            )
        cfg = cfg_cls(
            translation_sensitivity=cfg.translation_sensitivity,
            rotation_sensitivity=cfg.rotation_sensitivity,
            deadband=cfg.deadband,
            mode=cfg.mode,
        )
    return cls(cfg)


__all__ = [
    "BUILTIN_BUTTONS",
    "DEVICES",
    "TELEOP_EXTRA",
    "Device",
    "DeviceCfg",
    "DeviceNotFoundError",
    "Gamepad",
    "GamepadCfg",
    "KeyboardCfg",
    "PilotCfg",
    "PilotDevice",
    "ScriptedCfg",
    "ScriptedDevice",
    "SpaceMouse",
    "SpaceMouseCfg",
    "TeleopDependencyError",
    "TerminalKeyboard",
    "WindowKeyboard",
    "make_device",
    "shape_command",
]
