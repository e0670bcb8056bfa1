"""The actuator-model pipeline shared by every actuator group.

A group drives a set of physics elements of one kind (thrusters, wheels, ...)
of one spacecraft in every world. Each physics step it turns the held command
into what the physics layer applies:

    command (clipped to the limits)
      -> latency (a delay line of `latency_steps` physics steps)
      -> first-order lag (time constant `time_constant_s`)
      -> per-world gains and failures (stuck off, stuck on, degraded)
      -> the device model (PWM, friction, saturation; in the subclasses)
      -> the OrbitData actuator array (and, for misalignment or ideal wrenches,
         a correction wrench added to the bodies' applied forces)

Everything is a torch tensor of shape (num_worlds, num_elements) on the
simulation's device; nothing loops over worlds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import torch

from orbitlab import sync
from orbitlab.delay_line import DelayLine
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.actuators.context import ActuatorContext
    from orbitlab.scene.scene import Scene

STUCK_OFF, NOMINAL, STUCK_ON = -1, 0, 1


@dataclass(kw_only=True)
class FailureCfg:
    """Random failures drawn per world and element at every reset."""

    stuck_off_prob: float = 0.0
    """Probability that an element produces nothing."""
    stuck_on_prob: float = 0.0
    """Probability that an element is stuck at its full output."""
    degraded_prob: float = 0.0
    """Probability that an element's output is scaled down."""
    degraded_scale: tuple[float, float] = (0.5, 0.9)
    """Range of the scale of a degraded element (uniform)."""

    def validate(self, owner: str) -> None:
        probs = (self.stuck_off_prob, self.stuck_on_prob, self.degraded_prob)
        if any(not 0.0 <= p <= 1.0 for p in probs) or sum(probs) > 1.0:
            raise ValueError(
                f"{owner}: failure probabilities must be in [0, 1] and sum to <= 1, got {probs}"
            )
        lo, hi = self.degraded_scale
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(
                f"{owner}: degraded_scale must satisfy 0 <= lo <= hi <= 1, "
                f"got {self.degraded_scale}"
            )


@dataclass(kw_only=True)
class ActuatorGroupCfg:
    """Settings shared by every actuator group."""

    class_type: type
    """The `ActuatorGroup` subclass the scene builds from this config, with its `from_scene`."""
    elements: list[str] | None = None
    """Names of the entity's elements this group drives (None: all of its kind)."""
    latency_steps: int = 0
    """Command latency in physics steps (0: applied in the step it is set)."""
    time_constant_s: float = 0.0
    """First-order lag time constant, s (0: none)."""
    gain_range: tuple[float, float] = (1.0, 1.0)
    """Per-world, per-element gain drawn uniformly at reset (output = gain x command)."""
    failures: FailureCfg = field(default_factory=FailureCfg)
    """Random failures drawn at reset; `group.set_failure` sets them by hand."""
    misalignment_std_rad: float = 0.0
    """Std of a random small rotation of each element's axis, per world, drawn at reset, rad."""
    seed: int = 0
    """Seed of the group's random draws (gains, failures, misalignment)."""

    def validate(self, owner: str) -> None:
        if int(self.latency_steps) != self.latency_steps or self.latency_steps < 0:
            raise ValueError(
                f"{owner}: latency_steps must be an integer >= 0, got {self.latency_steps!r}"
            )
        if not (math.isfinite(self.time_constant_s) and self.time_constant_s >= 0.0):
            raise ValueError(
                f"{owner}: time_constant_s must be >= 0 s, got {self.time_constant_s!r}"
            )
        lo, hi = self.gain_range
        if not 0.0 <= lo <= hi:
            raise ValueError(
                f"{owner}: gain_range must satisfy 0 <= lo <= hi, got {self.gain_range}"
            )
        if not self.misalignment_std_rad >= 0.0:
            raise ValueError(
                f"{owner}: misalignment_std_rad must be >= 0, got {self.misalignment_std_rad!r}"
            )
        self.failures.validate(owner)


class ActuatorGroup(Stateful):
    """One group of elements of one kind: holds the command and runs the pipeline."""

    state_attrs: ClassVar[tuple[str, ...]] = (
        "command",
        "output",
        "gain",
        "failure",
        "lag_state",
        "delay",
        "generator",
        "low",
        "high",
    )

    kind: ClassVar[str] = ""
    """Element kind in the physics layer ('thrusters', 'wheels', ...)."""
    array_name: ClassVar[str] = ""
    """OrbitData actuator array the output goes to ('thruster_force', ...)."""

    @classmethod
    def from_scene(
        cls,
        cfg: ActuatorGroupCfg,
        name: str,
        scene: Scene,
        entity: str,
        index: dict[str, dict[str, int]],
    ):
        """Build the group `name` of `entity` from `cfg`: the entity's elements of this
        group's kind that `cfg.elements` names (None: all of them); `index` maps each kind's
        element names (without the entity prefix) to their ids in the physics layer."""
        names = index[cls.kind]
        selected = list(names) if cfg.elements is None else list(cfg.elements)
        missing = [n for n in selected if n not in names]
        if missing:
            raise ValueError(
                f"actuator group '{name}': no {cls.kind} named {missing} on "
                f"entity '{entity}' (it has: {', '.join(names) or 'none'})"
            )
        if not selected:
            raise ValueError(f"actuator group '{name}': entity '{entity}' has no {cls.kind}")
        return cls(cfg, name, scene.actuator_context, [names[n] for n in selected])

    def __init__(
        self, cfg: ActuatorGroupCfg, name: str, ctx: ActuatorContext, element_ids: list[int]
    ):
        cfg.validate(f"actuator group '{name}'")
        self.cfg, self.name, self.ctx = cfg, name, ctx
        self.ids = torch.as_tensor(element_ids, dtype=torch.long, device=ctx.device)
        contiguous = (
            list(element_ids) == list(range(element_ids[0], element_ids[0] + len(element_ids)))
            if element_ids
            else False
        )
        self.columns = (
            slice(element_ids[0], element_ids[0] + len(element_ids)) if contiguous else self.ids
        )
        """Columns of the physics array: a slice when contiguous (no index scatter)."""
        self.num_worlds, self.num = ctx.num_worlds, len(element_ids)
        shape = (self.num_worlds, self.num)
        kw = {"dtype": torch.float64, "device": ctx.device}
        self.command = torch.zeros(shape, **kw)
        """The held command, in the group's units, (num_worlds, num)."""
        self.output = torch.zeros(shape, **kw)
        """What the physics layer gets this step (after every model), (num_worlds, num)."""
        self.gain = torch.ones(shape, **kw)
        self.failure = torch.zeros(shape, dtype=torch.int8, device=ctx.device)
        self.lag_state = torch.zeros(shape, **kw)
        self.delay = DelayLine(int(cfg.latency_steps), shape, device=ctx.device)
        self.alpha = (
            1.0 - math.exp(-ctx.dt / cfg.time_constant_s) if cfg.time_constant_s > 0.0 else 1.0
        )
        self.generator = torch.Generator(device=ctx.device).manual_seed(int(cfg.seed))
        low, high = self.limits()
        self.low = low.to(**kw).expand(shape).clone()
        self.high = high.to(**kw).expand(shape).clone()
        self._refuse_nonfinite = sync.host_reads_are_free(ctx.device)

    # ------------------------------------------------------------------ API
    def limits(self) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - abstract
        """Command limits per element, (num,) each, in the group's units."""
        raise NotImplementedError

    def set_command(self, command: torch.Tensor, worlds: torch.Tensor | None = None) -> None:
        """Hold a new command (clipped to the limits) for `worlds` (default all).

        A NaN or inf in the command is refused with a ValueError on the CPU; on a GPU, where
        that check would wait for the device, the worlds holding one are frozen instead
        (health code NONFINITE_COMMAND, `orbitlab.sim.health`; the env ends and resets them)
        and hold a zero command: nothing non-finite reaches an actuator."""
        command = torch.as_tensor(command, dtype=torch.float64, device=self.ctx.device)
        rows = slice(None) if worlds is None else worlds
        expected = (self.command[rows].shape[0], self.num)
        if command.shape != expected:
            raise ValueError(
                f"actuator group '{self.name}': command must have shape "
                f"{expected}, got {tuple(command.shape)}"
            )
        if self._refuse_nonfinite:
            if not torch.isfinite(command).all():
                raise ValueError(f"actuator group '{self.name}': command has NaN or inf")
        else:
            finite = torch.isfinite(command)
            self.ctx.freeze_worlds(~finite.all(dim=1), rows)
            command = torch.where(finite, command, 0.0)
        self.command[rows] = torch.minimum(torch.maximum(command, self.low[rows]), self.high[rows])

    def set_failure(self, worlds, element: int, mode: str, scale: float = 1.0) -> None:
        """Set element `element` of `worlds` to 'off', 'on', 'degraded' (x scale) or 'nominal'."""
        modes = {"off": STUCK_OFF, "on": STUCK_ON, "degraded": NOMINAL, "nominal": NOMINAL}
        if mode not in modes:
            raise ValueError(
                f"actuator group '{self.name}': failure mode must be one of "
                f"{list(modes)}, got {mode!r}"
            )
        self.failure[worlds, element] = modes[mode]
        self.gain[worlds, element] = scale if mode == "degraded" else 1.0

    def reset(self, worlds: torch.Tensor) -> None:
        """Clear the command, delay line and lag; draw gains, failures and misalignment."""
        self.command[worlds] = 0.0
        self.lag_state[worlds] = 0.0
        self.output[worlds] = 0.0
        self.delay.reset(worlds)
        self._draw_gains_and_failures(worlds)

    def apply(self) -> None:
        """Run the pipeline for one physics step and write the result to the physics layer."""
        delayed = self.delay.push(self.command)
        self.lag_state += self.alpha * (delayed - self.lag_state)
        value = self.gain * self.lag_state
        value = torch.where(self.failure == STUCK_OFF, 0.0, value)
        value = torch.where(self.failure == STUCK_ON, self.high, value)
        self.output.copy_(self.device_model(value))  # in place: it may be a fused view
        self.write(self.output)

    # ------------------------------------------------------------ subclasses
    def device_model(self, value: torch.Tensor) -> torch.Tensor:
        """The device's own model (saturation by default)."""
        return torch.minimum(torch.maximum(value, self.low), self.high)

    def write(self, output: torch.Tensor) -> None:
        """Hand the output to the physics layer."""
        self.ctx.array(self.array_name)[:, self.columns] = output

    # --------------------------------------------------------------- random
    def _uniform(self, n: int, lo: float, hi: float) -> torch.Tensor:
        u = torch.rand(
            (n, self.num), generator=self.generator, dtype=torch.float64, device=self.ctx.device
        )
        return lo + (hi - lo) * u

    def _draw_gains_and_failures(self, worlds: torch.Tensor) -> None:
        n = int(worlds.numel())
        lo, hi = self.cfg.gain_range
        gain = self._uniform(n, lo, hi)
        f = self.cfg.failures
        u = self._uniform(n, 0.0, 1.0)
        failure = torch.zeros((n, self.num), dtype=torch.int8, device=self.ctx.device)
        failure[u < f.stuck_off_prob] = STUCK_OFF
        on = (u >= f.stuck_off_prob) & (u < f.stuck_off_prob + f.stuck_on_prob)
        failure[on] = STUCK_ON
        edge = f.stuck_off_prob + f.stuck_on_prob
        degraded = (u >= edge) & (u < edge + f.degraded_prob)
        gain = torch.where(degraded, gain * self._uniform(n, *f.degraded_scale), gain)
        self.gain[worlds] = gain
        self.failure[worlds] = failure
