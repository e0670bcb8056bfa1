"""The status line an operator flies by while recording demonstrations.

    t 12.3 s | dist 8.42 m | closing +0.118 m/s | axis 2.1 deg | keyboard | demos 3/10 | step 123

`read_status(env, ...)` reads world 0 once into a `TeleopStatus`: the episode time, and what
the task's own terms compute about its goal (a task registers a `status` function with its
`TaskSpec`, returning a `TaskReading` of per-world tensors): the distance to the goal and the
closing speed (positive while closing), or an attitude / rate error. A task without one
shows the time, the device and the counts only. `format_status` writes one line with units;
`StatusLine` shows it at a bounded rate: rewritten in place ('\\r') at most `tty_hz` times a
wall-clock second on a terminal, else one plain line every `log_interval_s`, so logs stay
readable; and as a text overlay in the live viewer when one is given.

Only `StatusLine.update` reads the env (world 0, a few host reads per displayed update, never
inside `env.step`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import torch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.managers.scene_entity_cfg import SceneEntityCfg


@dataclass(frozen=True)
class Measure:
    """A named error a task shows instead of (or beside) a goal distance."""

    label: str
    """Short name, e.g. '|omega|', 'pointing'."""
    unit: str
    """Its unit as shown, e.g. 'deg/s'."""
    value: torch.Tensor
    """(N,) one value per world, in `unit`."""
    digits: int = 2
    """Decimals shown."""


@dataclass(frozen=True)
class TaskReading:
    """What a task's status function returns: per-world (N,) tensors, any of them None."""

    distance_m: torch.Tensor | None = None
    """Distance to the goal, m."""
    closing_speed_m_s: torch.Tensor | None = None
    """Rate at which that distance shrinks, m/s (positive while closing)."""
    errors: tuple[Measure, ...] = ()
    """Further errors to show (attitude, rate, per-follower distances)."""


TaskStatusFn = Callable[["ManagerBasedRLEnv"], TaskReading]
"""A task's status function: env -> `TaskReading` (registered as `TaskSpec.status`)."""


@dataclass(frozen=True)
class TeleopStatus:
    """One world's status while recording."""

    time_s: float
    """Episode time, s."""
    distance_m: float | None
    """Distance to the goal, m (None: the task has no goal position)."""
    closing_speed_m_s: float | None
    """Closing speed, m/s, positive while closing (None: no goal position)."""
    error: str
    """The task's other errors as text with units ('' when none)."""
    device: str
    """The input device: keyboard, gamepad, spacemouse, scripted, ..."""
    demos_done: int
    """Demos saved so far."""
    demos_wanted: int
    """Demos requested."""
    steps: int
    """Env steps of the demo in progress."""
    paused: bool = False
    """The device is paused (no env steps)."""

    def fields(self) -> list[tuple[str, str]]:
        """(label, value with unit) pairs in display order."""
        out = [("t", f"{self.time_s:.1f} s")]
        if self.distance_m is not None:
            out.append(("dist", f"{self.distance_m:.2f} m"))
        if self.closing_speed_m_s is not None:
            out.append(("closing", f"{self.closing_speed_m_s:+.3f} m/s"))
        if self.error:
            out.append(("error", self.error))
        out.append(("device", self.device + (" (paused)" if self.paused else "")))
        out.append(("demos", f"{self.demos_done}/{self.demos_wanted}"))
        out.append(("step", str(self.steps)))
        return out


def resolved(env: ManagerBasedRLEnv, cfg: SceneEntityCfg) -> SceneEntityCfg:
    """`cfg` resolved against `env`'s scene, once per env (for a task's status function,
    which gets the env alone)."""
    cache = env.__dict__.setdefault("_status_entities", {})
    if id(cfg) not in cache:  # SceneEntityCfg is not hashable; keep it alive with its copy
        cache[id(cfg)] = (cfg, cfg.resolve(env.scene, "status"))
    return cache[id(cfg)][1]


def task_status_fn(task: str) -> TaskStatusFn | None:
    """The status function a task registered (`TaskSpec.status`), None if it has none."""
    from orbitlab.registry import get_task

    return get_task(task).status


def device_name(device: object) -> str:
    """The `orbitlab.devices.DEVICES` name of a device ('keyboard', 'scripted', ...)."""
    from orbitlab.devices import DEVICES

    for name, (cls, _) in DEVICES.items():
        if type(device) is cls:
            return name
    return type(device).__name__.lower()


def _world(value: torch.Tensor | None, world: int) -> float | None:
    return None if value is None else float(value.reshape(-1)[world])


def read_status(
    env: ManagerBasedRLEnv,
    reading: TaskStatusFn | None,
    device: str,
    demos_done: int,
    demos_wanted: int,
    steps: int,
    paused: bool = False,
    world: int = 0,
) -> TeleopStatus:
    """World `world`'s status: time from the episode counter, goal and errors from the
    task's status function `reading` (None: time, device and counts only)."""
    time_s = float(env.episode_length_buf[world]) * env.step_dt
    found = reading(env) if reading is not None else TaskReading()
    error = ", ".join(
        f"{m.label} {float(m.value.reshape(-1)[world]):.{m.digits}f} {m.unit}" for m in found.errors
    )
    return TeleopStatus(
        time_s=time_s,
        distance_m=_world(found.distance_m, world),
        closing_speed_m_s=_world(found.closing_speed_m_s, world),
        error=error,
        device=device,
        demos_done=demos_done,
        demos_wanted=demos_wanted,
        steps=steps,
        paused=paused,
    )


def format_status(status: TeleopStatus) -> str:
    """One line: 't 12.3 s | dist 8.42 m | closing +0.118 m/s | keyboard | demos 3/10 | step
    123' (the error text, device and counts without their labels)."""
    bare = ("error", "device")
    return " | ".join(
        value if label in bare else f"{label} {value}" for label, value in status.fields()
    )


def overlay_text(status: TeleopStatus) -> tuple[str, str]:
    """(labels, values): two newline-separated columns for a viewer's text overlay."""
    pairs = status.fields()
    return "\n".join(p[0] for p in pairs), "\n".join(p[1] for p in pairs)


class StatusLine:
    """Shows `read_status` of world 0 at a bounded wall-clock rate.

    On a terminal (`stream.isatty()`) the line is rewritten in place with '\\r' at most
    `tty_hz` times a second; otherwise one plain line is written every `log_interval_s`.
    `overlay(status)`, if given (a live viewer's `set_status`), gets every shown status.
    `clear()` wipes the terminal line before other output; `close()` ends it."""

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        reading: TaskStatusFn | None,
        device: str,
        demos_wanted: int,
        stream: TextIO | None = None,
        tty: bool | None = None,
        tty_hz: float = 10.0,
        log_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        overlay: Callable[[TeleopStatus], None] | None = None,
    ):
        self.env, self.reading, self.device = env, reading, device
        self.demos_wanted = demos_wanted
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if isatty is not None else False
        self.tty = tty
        self.interval_s = 1.0 / tty_hz if tty else log_interval_s
        self.clock = clock
        self.overlay = overlay
        self._last: float | None = None
        self._width = 0
        self.shown = 0
        """Updates shown so far."""
        self.last: TeleopStatus | None = None
        """The status shown last."""

    def due(self) -> bool:
        """True when the next update would be shown (the interval has passed)."""
        return self._last is None or self.clock() - self._last >= self.interval_s

    def update(
        self, demos_done: int, steps: int, paused: bool = False, force: bool = False
    ) -> TeleopStatus | None:
        """Read and show the status if due (or `force`); the status shown, else None."""
        if not (force or self.due()):
            return None
        self._last = self.clock()
        status = read_status(
            self.env, self.reading, self.device, demos_done, self.demos_wanted, steps, paused
        )
        line = format_status(status)
        if self.tty:
            self.stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        if self.overlay is not None:
            self.overlay(status)
        self.shown += 1
        self.last = status
        return status

    def clear(self) -> None:
        """Wipe the terminal line (before other output; the next update redraws it)."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def close(self) -> None:
        """End the terminal line (the last status stays visible)."""
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
