"""Sensors with their own timers, latency and noise.

Every sensor samples its truth when its timer is due, i.e. every
`period_s / dt` physics steps counted from each world's last reset (so a world
that resets samples at once), holds that sample in between, and delivers it
`latency_s / dt` physics steps late. A sample is

    measured = truth + bias + bias_walk + std * n,

with a constant `bias` (plus a per-world random bias of std `bias_std` drawn at
reset), a random walk whose increments over a sampling interval dt_s have std
`bias_walk_std * sqrt(dt_s)`, and white noise n ~ N(0, 1) from the
counter-based generator of `noise.py` (reproducible per world), keyed per world by the
sensor's stream seed `orbitlab.seeding.stream_seed(env seed, 'sensors/<name>', cfg.seed)`
(`reseed`; the environment calls it with its seed, a bare scene uses seed 0). Subclasses
define `truth()`, may post-process in `measure()` (e.g. normalise a quaternion),
and declare `dim` (and optional `names` of the components).

Truth stays available: `sensor.truth_value` is the truth at the last sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from orbitlab import sync
from orbitlab.delay_line import DelayLine
from orbitlab.seeding import stream_seed
from orbitlab.sensors.noise import episode_hash, gaussian, gaussian_from, world_keys
from orbitlab.sensors.rotations import rotate
from orbitlab.sim.views import SimView
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    import mujoco

    from orbitlab.scene.scene import Scene


@dataclass(kw_only=True)
class SensorCfg:
    """Timing and noise shared by every sensor. Units are the sensor's own."""

    class_type: type
    """The `Sensor` subclass the scene builds from this config, with its `from_scene`."""
    body: str = ""
    """Body of the owning entity the sensor is fixed to ('' : the entity's root body)."""
    site: str = ""
    """Optional site of the entity whose axes and position define the sensor frame
    (e.g. a sun sensor's boresight +z); '' uses the body frame at its origin."""
    period_s: float = 0.0
    """Update period, s (0: every physics step); a whole number of physics steps."""
    latency_s: float = 0.0
    """Delivery latency, s; a whole number of physics steps."""
    std: float | tuple[float, ...] = 0.0
    """White-noise std per component (a scalar applies to all)."""
    bias: float | tuple[float, ...] = 0.0
    """Constant bias per component."""
    bias_std: float | tuple[float, ...] = 0.0
    """Std of a per-world constant bias drawn at reset."""
    bias_walk_std: float | tuple[float, ...] = 0.0
    """Bias random-walk density, units/sqrt(s)."""
    seed: int = 0
    """Salt of the noise seed, mixed with the environment's seed (`orbitlab.seeding`)."""

    def add_to_spec(self, spec: mujoco.MjSpec, entity: str, name: str) -> None:
        """Add what the sensor `name` of `entity` needs in the scene's MuJoCo model (e.g. a
        MuJoCo sensor whose reading it takes); called once the entity is attached under its
        prefix `<entity>/`. Most sensors need nothing."""


_WHITE_STREAM, _BIAS_STREAM = 0, 1
"""Noise streams of one key: white noise; bias (the reset draw and the random walk)."""


def _steps(value_s: float, dt: float, owner: str, field_name: str) -> int:
    steps = value_s / dt
    if not (math.isfinite(value_s) and value_s >= 0.0) or abs(steps - round(steps)) > 1e-6:
        raise ValueError(
            f"{owner}: {field_name} = {value_s} s must be >= 0 and a whole "
            f"number of physics steps of {dt} s"
        )
    return round(steps)


def _mount(view: SimView, body: int, site: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sensor axes in body axes (3, 3) and sensor origin from the body origin (3,), m."""
    import mujoco
    import numpy as np

    m = view.mj_model
    rotation, pos = np.eye(3), np.zeros(3)
    if site >= 0:
        if m.site_bodyid[site] != body:
            raise ValueError(f"site '{m.site(site).name}' is not on body '{m.body(body).name}'")
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, m.site_quat[site])
        rotation, pos = mat.reshape(3, 3), m.site_pos[site].copy()
    kw = {"dtype": torch.float64, "device": view.device}
    return torch.as_tensor(rotation, **kw), torch.as_tensor(pos, **kw)


class Sensor(Stateful):
    """Base sensor: timer, hold, latency and noise over (num_worlds, dim) tensors."""

    state_attrs: ClassVar[tuple[str, ...]] = (
        "value",
        "held",
        "truth_value",
        "world_bias",
        "samples",
        "delay",
        "noise_key",
    )

    dim: ClassVar[int] = 0
    noisy: ClassVar[slice] = slice(None)
    """Components that receive noise and bias (e.g. not a validity flag)."""

    @classmethod
    def from_scene(cls, cfg: SensorCfg, name: str, scene: Scene, entity: str, stream: int):
        """Build the sensor `name` of `entity` from `cfg`: its site and body are named
        relative to the entity (a site alone fixes the sensor to the site's body; neither:
        the entity's root body); `stream` numbers the scene's sensors for their noise keys."""
        site = scene.site_id(f"{entity}/{cfg.site}") if cfg.site else -1
        if cfg.body:
            body = scene.body_id(f"{entity}/{cfg.body}")
        elif site >= 0:
            body = int(scene.mj_model.site_bodyid[site])
        else:
            body = scene.body_id(entity)
        return cls(cfg, name, scene.view, body, stream, site, **cls.scene_targets(cfg, name, scene))

    @classmethod
    def scene_targets(cls, cfg: SensorCfg, name: str, scene: Scene) -> dict[str, int]:
        """Extra ids a sensor kind needs from the scene (targeted sensors: the target's)."""
        return {}

    def __init__(
        self, cfg: SensorCfg, name: str, view: SimView, body_id: int, stream: int, site_id: int = -1
    ):
        self.cfg, self.name, self.view, self.body = cfg, name, view, int(body_id)
        self.stream = stream
        self.mount_rotation, self.mount_pos = _mount(view, self.body, site_id)
        self.site = int(site_id)
        ipos = torch.as_tensor(view.mj_model.body_ipos[self.body], dtype=torch.float64)
        self.mount_arm = self.mount_pos - ipos.to(view.device)
        """Sensor origin from the body's COM, body axes, m (3,)."""
        owner = f"sensor '{name}'"
        self.period_steps = max(1, _steps(cfg.period_s, view.dt, owner, "period_s"))
        latency = _steps(cfg.latency_s, view.dt, owner, "latency_s")
        n, kw = view.num_worlds, {"dtype": torch.float64, "device": view.device}
        self.std = self._per_component(cfg.std, "std")
        self.bias = self._per_component(cfg.bias, "bias")
        self.bias_std = self._per_component(cfg.bias_std, "bias_std")
        self.walk_std = self._per_component(cfg.bias_walk_std, "bias_walk_std")
        for field_name, value in (
            ("std", self.std),
            ("bias_std", self.bias_std),
            ("bias_walk_std", self.walk_std),
        ):
            if (value < 0).any():
                raise ValueError(f"{owner}: {field_name} must be >= 0, got {value.tolist()}")
        self._draws_bias = bool((self.bias_std > 0).any())
        """Whether a reset draws a per-world bias (decided once: no host read at resets)."""
        self.value = torch.zeros((n, self.dim), **kw)
        """The delivered measurement, (num_worlds, dim)."""
        self.held = torch.zeros((n, self.dim), **kw)
        self.truth_value = torch.zeros((n, self.dim), **kw)
        """Truth at the last sample, (num_worlds, dim)."""
        self.world_bias = torch.zeros((n, self.noise_dim), **kw)
        self.samples = torch.zeros(n, dtype=torch.long, device=view.device)
        self.delay = DelayLine(latency, (n, self.dim), device=view.device)
        self.worlds = torch.arange(n, device=view.device)
        self.noise_key = torch.zeros(n, dtype=torch.long, device=view.device)
        """Each world's 32-bit noise key (`noise.world_keys`), set by `reseed`; part of the
        exact state, so a restored world continues with its own noise."""
        self.reseed(0)
        self.has_walk = bool((self.walk_std > 0).any())
        self._gather_due = sync.host_reads_are_free(view.device)
        """Sample only the due worlds, found by a host read (the CPU; `orbitlab.sync`)."""
        self.has_white = bool((self.std > 0).any())

    def reseed(self, seed: int) -> None:
        """Key every world's noise by the environment seed `seed` (and `cfg.seed`)."""
        noise_seed = stream_seed(seed, f"sensors/{self.name}", self.cfg.seed)
        self.noise_key.copy_(world_keys(noise_seed, self.worlds))
        self.view.end_episodes()

    @property
    def noise_dim(self) -> int:
        return len(range(self.dim)[self.noisy])

    def _per_component(self, value, field_name: str) -> torch.Tensor:
        t = torch.as_tensor(value, dtype=torch.float64, device=self.view.device).reshape(-1)
        if t.numel() == 1:
            return t.expand(self.noise_dim).clone()
        if t.numel() != self.noise_dim:
            raise ValueError(
                f"sensor '{self.name}': {field_name} needs 1 or {self.noise_dim} "
                f"values, got {t.numel()}"
            )
        return t

    # ------------------------------------------------------------- helpers
    def body_rotation(self) -> torch.Tensor:
        """Sensor axes to world axes, (num_worlds, 3, 3) (once per state and mount)."""
        if self.site < 0:  # the mount rotation is the identity
            return self.view.body_rotation(self.body)
        return self.view.memo(
            ("sensor_rotation", self.body, self.site),
            lambda: self.view.body_rotation(self.body) @ self.mount_rotation,
        )

    def position_world(self) -> torch.Tensor:
        """Sensor origin relative to the chief, world axes, m, (num_worlds, 3) (once per
        state and mount)."""
        return self.view.memo(("sensor_position", self.body, self.site), self._position_world)

    def _position_world(self) -> torch.Tensor:
        frames = self.view.frames()
        Q = frames["Q"][:, self.body]
        return frames["com"][:, self.body] + rotate(Q, self.mount_arm)

    # ----------------------------------------------------------- subclasses
    def truth(self) -> torch.Tensor:  # pragma: no cover - abstract
        """The true value of every world now, (num_worlds, dim)."""
        raise NotImplementedError

    def measure(self, truth: torch.Tensor, noise: torch.Tensor, worlds: torch.Tensor):
        """Turn truth (k, dim) into a measurement for `worlds`; adds noise by default."""
        out = truth.clone()
        out[:, self.noisy] = out[:, self.noisy] + noise
        return out

    # ------------------------------------------------------------------ run
    def _episode_hash(self, stream: int, worlds: torch.Tensor | slice) -> torch.Tensor:
        """`noise.episode_hash` of `worlds`, kept for every world until a reset, a reseed or
        a restored state (`SimView.end_episodes`)."""
        view = self.view
        h = view.episodic(
            ("noise_hash", self.name, stream),
            lambda: episode_hash(self.noise_key, stream, view.episode),
        )
        return h[worlds]

    def _noise(
        self, worlds: torch.Tensor | slice, walk: bool, due: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Bias plus white noise of `worlds`, (k, noise_dim); `walk`: the bias walks a step
        first (only in the `due` worlds, (N,) bool, when given)."""
        view = self.view
        k = self.samples[worlds]
        if walk and self.has_walk:
            dt_s = self.period_steps * view.dt
            step = gaussian_from(self._episode_hash(_BIAS_STREAM, worlds), k, self.noise_dim)
            step = self.walk_std * math.sqrt(dt_s) * step
            if due is not None:
                step = torch.where(due[:, None], step, 0.0)
            self.world_bias[worlds] += step
        total = self.bias + self.world_bias[worlds]
        if self.has_white:
            white = gaussian_from(self._episode_hash(_WHITE_STREAM, worlds), k, self.noise_dim)
            total = total + self.std * white
        return total

    def _sample(self, worlds: torch.Tensor | slice, walk: bool = True) -> None:
        """Sample `worlds` (ids, or slice(None) for all: no gather/scatter)."""
        truth = self.truth()[worlds]
        self.truth_value[worlds] = truth
        self.held[worlds] = self.measure(truth, self._noise(worlds, walk), self.worlds[worlds])
        self.samples[worlds] += 1

    def reset(self, worlds: torch.Tensor) -> None:
        """Restart the worlds' timers, draw their random bias and take a first sample."""
        self.samples[worlds] = 0
        self.world_bias[worlds] = 0.0
        if self._draws_bias:
            ep = self.view.episode[worlds]
            minus_one = torch.full_like(worlds, -1)  # the bias draw precedes sample 0
            draw = gaussian(self.noise_key[worlds], _BIAS_STREAM, ep, minus_one, self.noise_dim)
            self.world_bias[worlds] = self.bias_std * draw
        self._sample(worlds, walk=False)  # the walk starts from the reset
        self.delay.reset(worlds, self.held[worlds])
        self.value[worlds] = self.held[worlds]

    def update(self) -> None:
        """After a physics step: sample the worlds whose timer is due, then apply latency."""
        view = self.view
        if not self._gather_due:  # on a GPU: every world computed, the due ones kept
            due = view.memo(
                ("sensor_timer", self.period_steps),
                lambda: (view.step_count % self.period_steps) == 0,
            )
            self._sample_masked(due)
            self.value = self.delay.push(self.held)
            return
        timer = view.memo_get(("sensor_timer", self.period_steps))
        if timer is None:  # one timer (and host read) per state for every sensor of a period
            due = (view.step_count % self.period_steps) == 0
            timer = view.memo_put(("sensor_timer", self.period_steps), (due, int(due.sum())))
        due, count = timer
        if count == view.num_worlds:  # worlds in step (the usual case)
            self._sample(slice(None))
        elif count:
            self._sample(self.worlds[due])
        self.value = self.delay.push(self.held)

    def hold(self) -> None:
        """After a physics step at which no world is due (a caller that knows it from a
        cycle, `orbitlab.cycle`): what `update` then does, the latency line advanced."""
        self.value = self.delay.push(self.held)

    def _sample_masked(self, due: torch.Tensor) -> None:
        """Sample the `due` worlds (N,) bool without a host read: every world's truth and
        noise computed, the others' held values, bias walks and counters kept."""
        truth = self.truth()
        self.truth_value.copy_(torch.where(due[:, None], truth, self.truth_value))
        measured = self.measure(truth, self._noise(slice(None), walk=True, due=due), self.worlds)
        self.held.copy_(torch.where(due[:, None], measured, self.held))
        self.samples += due.to(self.samples.dtype)
