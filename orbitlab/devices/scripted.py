"""A scripted device: replays a fixed command sequence, for tests and demo recording.

    dev = ScriptedDevice(ScriptedCfg(commands=torch.zeros(100, 6), events={50: "reset"},
                                     end="hold"))
    for _ in range(120):
        cmd = dev.advance()        # row t of `commands` (shaped), callbacks at step 50

Step t counts `advance()` calls since construction or `reset()` (0-based). Button events
are keyed by that step and fire before the step's command is returned; with
`end="loop"` they are not repeated on later passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from orbitlab.devices.base import Device, DeviceCfg


@dataclass(kw_only=True)
class ScriptedCfg(DeviceCfg):
    """Command sequence, button events and end behaviour of a `ScriptedDevice`."""

    commands: torch.Tensor | np.ndarray | Sequence[Sequence[float]] = field(
        default_factory=lambda: np.zeros((1, 6))
    )
    """Raw commands, (T, 6), one row per `advance()`; values outside [-1, 1] are clipped
    (before the sensitivities are applied)."""
    events: Mapping[int, str | Sequence[str]] = field(default_factory=dict)
    """Button presses by step: {step: "reset"} or {step: ["pause", "save"]}."""
    end: Literal["loop", "hold", "zero"] = "zero"
    """After the last row: 'loop' restarts at row 0, 'hold' repeats the last row,
    'zero' gives zeros."""


class ScriptedDevice(Device):
    """Replays `cfg.commands` row by row; fires `cfg.events` at their steps."""

    cfg: ScriptedCfg

    def __init__(self, cfg: ScriptedCfg | None = None):
        super().__init__(cfg if cfg is not None else ScriptedCfg())
        cmds = self.cfg.commands
        if isinstance(cmds, torch.Tensor):
            cmds = cmds.detach().cpu().numpy()
        self._commands = np.asarray(cmds, dtype=np.float64)
        if self._commands.ndim == 1 and self._commands.size == 6:
            self._commands = self._commands[None]
        if self._commands.ndim != 2 or self._commands.shape[1] != 6:
            raise ValueError(f"commands must have shape (T, 6), got {self._commands.shape}")
        if self.cfg.end not in ("loop", "hold", "zero"):
            raise ValueError(f"end must be 'loop', 'hold' or 'zero', got {self.cfg.end!r}")
        self._events: dict[int, tuple[str, ...]] = {
            int(k): (v,) if isinstance(v, str) else tuple(v) for k, v in self.cfg.events.items()
        }
        self._step = 0

    @property
    def step(self) -> int:
        """Number of `advance()` calls since construction or the last `reset()`."""
        return self._step

    @property
    def finished(self) -> bool:
        """True once every row has been returned at least once."""
        return self._step >= len(self._commands)

    def reset(self) -> None:
        """Restart at row 0 (and unpause)."""
        super().reset()
        self._step = 0

    def _extra_buttons(self) -> Iterable[str]:
        return [b for names in self._events.values() for b in names]

    def _poll(self) -> np.ndarray:
        t = self._step
        self._step += 1
        for name in self._events.get(t, ()):
            self._press(name)
        n = len(self._commands)
        if t < n:
            return self._commands[t]
        if self.cfg.end == "loop":
            return self._commands[t % n]
        if self.cfg.end == "hold":
            return self._commands[-1]
        return np.zeros(6)

    def help_text(self) -> str:
        return (
            f"ScriptedDevice: {len(self._commands)} steps, end={self.cfg.end}, "
            f"events at steps {sorted(self._events)} ({self.mode} command)"
        )
