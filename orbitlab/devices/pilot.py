"""A scripted operator at the device: demonstrations recorded without a person.

`PilotDevice` reads its 6-DOF command and its button presses from a *pilot*, a function of
the simulation a task provides (`TaskSpec.pilot`: env -> pilot), once per `advance()`. The
recorder, the teleoperation mapping and the file are the ones a person's session uses; only
the hand on the device is a program. A pilot is how a task ships demos for behaviour cloning
that anyone can regenerate (`orbitlab record task=Capture-Arm device=pilot`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from orbitlab.devices.base import Device, DeviceCfg

Pilot = Callable[[], tuple[Sequence[float], Sequence[str]]]
"""() -> (raw 6-vector command in [-1, 1], names of the buttons pressed at this step)."""


@dataclass
class PilotCfg(DeviceCfg):
    """The pilot a `PilotDevice` relays and the buttons it may press."""

    pilot: Pilot | None = None
    """Called once per `advance()`; None: a pilot must be set with `PilotDevice.fly` before
    the first `advance()`."""
    buttons: tuple[str, ...] = ("grip",)
    """Buttons beyond the built-in ones the pilot may press."""


class PilotDevice(Device):
    """Relays a pilot's commands and button presses (see the module docstring)."""

    cfg: PilotCfg

    def __init__(self, cfg: PilotCfg | None = None):
        super().__init__(cfg if cfg is not None else PilotCfg())
        self._pilot = self.cfg.pilot

    def fly(self, pilot: Pilot) -> None:
        """Hand the device to `pilot` (a task's pilot needs the env, made after the device)."""
        self._pilot = pilot

    def _extra_buttons(self) -> Iterable[str]:
        return self.cfg.buttons

    def _poll(self) -> np.ndarray:
        if self._pilot is None:
            raise RuntimeError("PilotDevice has no pilot: pass PilotCfg(pilot=...) or call fly()")
        command, pressed = self._pilot()
        for name in pressed:
            if name not in self.buttons:
                raise ValueError(f"the pilot pressed {name!r}; this device has {self.buttons}")
            self._press(name)
        return np.asarray(command, dtype=np.float64).reshape(6)

    def help_text(self) -> str:
        return f"PilotDevice: a scripted operator flies the device ({self.mode} command)"
