"""A scene's sensors as one Warp kernel per physics step, one thread per world.

Gyros, star trackers, magnetometers, GNSS receivers, relative-navigation sensors and docking
latches run in one launch (`sensor_kernel`, split across cores on the CPU by `WorldLaunch`, a single launch
on a GPU, no host read); other kinds keep their torch `Sensor.update`. The kernel does what
`Sensor.update` does: each world's timer (`step_count % period == 0`), truth, bias walk,
white noise, hold and sample counter (and a latch's closed flag); latency stays the
sensors' `DelayLine`. The noise is
the reference's bit for bit (`orbitlab.fw.rng`); truths follow the torch formulas in the
same operation order and agree with them to rounding (a few ulp).

The kernel writes into the sensors' own tensors: each fused sensor's `held`, `truth_value`,
`world_bias`, `samples` and `noise_key` become column views of one array per quantity,
so its state (`orbitlab.stateful`), resets and reseeding work unchanged.
`SceneCfg.fused_sensors = False` keeps every sensor on its torch update (the reference).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from orbitlab import sync
from orbitlab.cycle import Timing, timing_in_cycle
from orbitlab.fw.rng import quantile_table, salt_array
from orbitlab.fw.sensor_kernel import (
    DOCKING_LATCH,
    GNSS,
    GYRO,
    MAGNETOMETER,
    MAX_NOISE_DIM,
    RELATIVE_NAV,
    STAR_TRACKER,
    SensorRows,
    sensor_kernel,
)
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sensors.base import Sensor
from orbitlab.sensors.inertial import Gyro, Magnetometer, StarTracker
from orbitlab.sensors.navigation import (
    DockingLatch,
    Gnss,
    RelativeNav,
    RelativeNavCfg,
)
from orbitlab.sim.launch import WorldLaunch

KINDS: dict[type, int] = {
    Gyro: GYRO,
    StarTracker: STAR_TRACKER,
    Magnetometer: MAGNETOMETER,
    RelativeNav: RELATIVE_NAV,
    Gnss: GNSS,
    DockingLatch: DOCKING_LATCH,
}
"""Sensor classes the kernel runs (exactly these classes: a subclass may change the
model, so it keeps its torch update)."""


def fusable(sensor: Sensor) -> bool:
    """Whether `sensor_kernel` runs this sensor (its exact class is one of `KINDS`)."""
    return type(sensor) in KINDS


class SensorStage:
    """Updates a scene's sensors after each physics step: the fusable ones in one kernel
    launch, the others with their own torch `update` (`fused=False`: all of them)."""

    def __init__(self, sensors: dict[str, Sensor], fused: bool = True):
        chosen = [s for s in sensors.values() if fused and fusable(s)]
        self.fused = chosen
        self.others = [s for s in sensors.values() if not any(s is f for f in chosen)]
        self._delayed = [s for s in chosen if s.delay.steps > 0]
        self._launch: WorldLaunch | None = None
        self.held_values: torch.Tensor | None = None
        """Every fused sensor's held (last sampled) values, column after column, (N, cols)
        float64 (None without fused sensors); `held_columns` gives a sensor's columns."""
        self._held_columns: dict[int, tuple[int, int]] = {}
        self._needs_frames = False
        self._periods = sorted({s.period_steps for s in chosen})
        self._skip_idle = bool(chosen) and sync.host_reads_are_free(chosen[0].view.device)
        """On the CPU, where a host read is free, skip the launch when no world is due."""
        self.cycle = 0
        """The cycle `compile` fixed (0: none; every update reads the timers)."""
        self._launch_at: list[Timing | None] = []
        self._idle_at: list[frozenset[int]] = []
        if chosen:
            self._build(chosen)

    def compile(self, cycle: int) -> None:
        """Fix the stage's schedule for physics steps that come in cycles of `cycle` (an
        env's decimation; `orbitlab.cycle`): `update(phase)` then skips the launch when no
        fused sensor's timer can be due and reads no timer when one is due in every world,
        and holds (latency only) the torch sensors no world is due for. The readings are
        those of the uncompiled stage, bit for bit."""
        if not (isinstance(cycle, int) and cycle >= 1):
            raise ValueError(f"SensorStage.compile: cycle = {cycle!r} must be an int >= 1")
        self.cycle = cycle
        self._launch_at = []
        for phase in range(cycle):
            timings = {timing_in_cycle(period, cycle, phase) for period in self._periods}
            self._launch_at.append(
                "every" if "every" in timings else "timer" if "timer" in timings else None
            )
        self._idle_at = [
            frozenset(
                i
                for i, sensor in enumerate(self.others)
                if type(sensor).update is Sensor.update  # its `hold` is what its update does
                and timing_in_cycle(sensor.period_steps, cycle, phase) is None
            )
            for phase in range(cycle)
        ]

    def update(self, count: int | None = None) -> None:
        """After a physics step: sample the due worlds of every sensor, apply latency.

        `count`: every world's physics-step count modulo the cycle of `compile` (the index
        of the physics step in the env step, plus one); None: no cycle, the timers are read."""
        phase = None if count is None or not self.cycle else count % self.cycle
        if self._launch is not None:
            timing = "timer" if phase is None else self._launch_at[phase]
            if timing == "every" or (timing == "timer" and self._any_due()):
                if self._needs_frames:
                    self.fused[0].view.frames()  # once per state, shared with every reader
                self._launch.launch()
            for sensor in self._delayed:
                sensor.value = sensor.delay.push(sensor.held)
        idle = frozenset() if phase is None else self._idle_at[phase]
        for i, sensor in enumerate(self.others):
            if i in idle:
                sensor.hold()
            else:
                sensor.update()

    def held_columns(self, sensor: Sensor) -> tuple[int, int] | None:
        """(first, end) columns of `held_values` that are `sensor.value` (a fused sensor
        without latency); None for any other sensor (its value is its own tensor)."""
        if sensor.delay.steps > 0:
            return None
        return self._held_columns.get(id(sensor))

    def _any_due(self) -> bool:
        """Whether some world's timer is due for some fused sensor (always True on a GPU)."""
        if not self._skip_idle:
            return True
        steps = self.fused[0].view.step_count
        for period in self._periods:
            if bool(((steps % period) == 0).any()):
                return True
        return False

    def close(self) -> None:
        if self._launch is not None:
            self._launch.close()
            self._launch = None

    # ------------------------------------------------------------------ build
    def _build(self, sensors: list[Sensor]) -> None:
        view = sensors[0].view
        data, n, device = view.data, view.num_worlds, view.device
        dev = str(device)
        dims = [s.dim for s in sensors]
        noise_dims = [s.noise_dim for s in sensors]
        out_cols = np.concatenate([[0], np.cumsum(dims)[:-1]]).astype(int)
        noise_cols = np.concatenate([[0], np.cumsum(noise_dims)[:-1]]).astype(int)
        kw = {"dtype": torch.float64, "device": device}
        held = torch.zeros((n, sum(dims)), **kw)
        truth = torch.zeros((n, sum(dims)), **kw)
        world_bias = torch.zeros((n, sum(noise_dims)), **kw)
        samples = torch.zeros((n, len(sensors)), dtype=torch.long, device=device)
        keys = torch.zeros((n, len(sensors)), dtype=torch.long, device=device)
        latched = torch.zeros((n, len(sensors)), dtype=torch.bool, device=device)
        for s, (sensor, o, c) in enumerate(zip(sensors, out_cols, noise_cols, strict=True)):
            # the sensor's tensors become column views of the shared arrays (values kept)
            views = {
                "held": held[:, o : o + sensor.dim],
                "truth_value": truth[:, o : o + sensor.dim],
                "world_bias": world_bias[:, c : c + sensor.noise_dim],
                "samples": samples[:, s],
                "noise_key": keys[:, s],
            }
            if isinstance(sensor, DockingLatch):
                views["latched"] = latched[:, s]
            for name, column in views.items():
                column.copy_(getattr(sensor, name))
                setattr(sensor, name, column)
            if sensor.delay.steps == 0:
                sensor.value = sensor.held
        self._arrays = (held, truth, world_bias, samples, keys, latched)  # alive for the launch
        self.held_values = held
        self._held_columns = {
            id(sensor): (int(o), int(o) + sensor.dim) for sensor, o in zip(sensors, out_cols)
        }
        self._rows = _rows(sensors, view, out_cols, noise_cols, dev)
        self._needs_frames = any(
            s.site >= 0
            or isinstance(s, (RelativeNav, Gnss, DockingLatch))
            or view.free_joint(s.body) is None
            for s in sensors
        )
        frames = data.body_frames()
        inputs = [
            self._rows,
            len(sensors),
            wp.from_torch(view.step_count),
            wp.from_torch(view.episode),
            wp.from_torch(view.array("qpos")),
            wp.from_torch(view.array("qvel")),
            wp.from_torch(view.array("R"), dtype=wp.vec3d),
            wp.from_torch(view.array("V"), dtype=wp.vec3d),
            wp.from_torch(view.array("mag_field_eci"), dtype=wp.vec3d),
            frames,
            wp.from_torch(keys),
            wp.from_torch(samples),
            wp.from_torch(world_bias),
            wp.from_torch(held),
            wp.from_torch(truth),
            wp.from_torch(latched),
        ]
        self._launch = WorldLaunch(sensor_kernel, n, inputs, dev, data.kernel_threads)


def _rows(sensors: list[Sensor], view, out_cols, noise_cols, device: str) -> SensorRows:
    """The per-sensor constants of `sensors` as a `SensorRows` on `device`."""
    eye = np.eye(3)

    def column(values, dtype):
        return wp.array(np.asarray(values), dtype=dtype, device=device)

    def host(t) -> np.ndarray:
        return t.detach().cpu().numpy()

    free = [view.free_joint(s.body) for s in sensors]
    rows = SensorRows()
    rows.kind = column([KINDS[type(s)] for s in sensors], int)
    rows.dim = column([s.dim for s in sensors], int)
    rows.body = column([s.body for s in sensors], int)
    rows.free_qpos = column([-1 if f is None else f[0] for f in free], int)
    rows.free_dof = column([-1 if f is None else f[1] for f in free], int)
    rows.period = column([s.period_steps for s in sensors], int)
    rows.out_col = column(out_cols, int)
    rows.noise_col = column(noise_cols, int)
    rows.noise_dim = column([s.noise_dim for s in sensors], int)
    rows.noisy_col = column([_first_noisy(s) for s in sensors], int)
    rows.has_walk = column([int(s.has_walk) for s in sensors], int)
    rows.has_white = column([int(s.has_white) for s in sensors], int)
    rows.mounted = column([int(s.site >= 0) for s in sensors], int)
    rows.mount = column([host(s.mount_rotation) for s in sensors], wp.mat33d)
    rows.mount_arm = column([host(s.mount_arm) for s in sensors], wp.vec3d)
    targets = [s if isinstance(s, (RelativeNav, DockingLatch)) else None for s in sensors]
    rows.target = column([0 if t is None else t.target for t in targets], int)
    rows.target_rotation = column(
        [eye if t is None else host(t.target_rotation) for t in targets], wp.mat33d
    )
    rows.target_arm = column(
        [np.zeros(3) if t is None else host(t.target_arm) for t in targets], wp.vec3d
    )
    rows.misalignment = column(
        [host(s.misalignment) if isinstance(s, StarTracker) else [1.0, 0, 0, 0] for s in sensors],
        wp.vec4d,
    )
    rows.range_per_m = column(
        [
            cast(RelativeNavCfg, s.cfg).range_noise_per_m if isinstance(s, RelativeNav) else 0.0
            for s in sensors
        ],
        wp.float64,
    )
    rows.latch_limits = column([_latch_limits(s) for s in sensors], wp.vec4d)
    dt = view.dt
    rows.std = column(np.concatenate([host(s.std) for s in sensors]), wp.float64)
    rows.bias = column(np.concatenate([host(s.bias) for s in sensors]), wp.float64)
    rows.walk = column(
        np.concatenate([host(s.walk_std * np.sqrt(s.period_steps * dt)) for s in sensors]),
        wp.float64,
    )
    rows.salts = salt_array(MAX_NOISE_DIM, device)
    rows.quantiles = quantile_table(device)
    return rows


def _first_noisy(sensor: Sensor) -> int:
    """The first of the sensor's noisy components (its `noisy` slice, contiguous)."""
    noisy = range(sensor.dim)[sensor.noisy]
    if noisy.step != 1:
        raise ValueError(f"sensor '{sensor.name}': the fused kernel needs contiguous noisy columns")
    return noisy.start if len(noisy) else 0


def _latch_limits(sensor: Sensor) -> tuple[float, float, float, float]:
    """A docking latch's (contact distance m, closing speed m/s, lateral error m, angle rad)
    limits; zeros for the other kinds."""
    if not isinstance(sensor, DockingLatch):
        return (0.0, 0.0, 0.0, 0.0)
    cfg = sensor.cfg
    return (
        cfg.contact_distance_m,
        cfg.max_closing_speed_mps,
        cfg.max_lateral_m,
        cfg.max_misalignment_rad,
    )
