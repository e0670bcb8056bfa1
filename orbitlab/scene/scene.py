"""The world: a scene config compiled into one orbit-coupled model over `num_envs` worlds.

    scene = Scene(SceneCfg(num_envs=1024, entities={"sat": cubesat_3u_cfg()}))
    scene.actuators["sat/wheels"].set_command(torque_nm)   # held until changed
    scene.step()                                            # actuators -> physics -> sensors
    scene.sensors["sat/gyro"].value                         # measured, (num_envs, 3)
    scene.reset(worlds)                                     # only those worlds

Each world is its own chief frame, so entities need no spacing between
worlds. One `step()` is one physics step: every actuator group runs its
model and writes the physics layer's commands, the orbit-coupled simulation
advances, then every sensor whose timer is due samples. Names resolve to ids
once, here; a missing name raises an error naming it and what exists.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from orbitlab.actuators.base import ActuatorGroup
from orbitlab.actuators.context import ActuatorContext
from orbitlab.actuators.fused import ActuatorStage
from orbitlab.orbit.constants import OrbitInit
from orbitlab.scene.compile import assemble
from orbitlab.scene.entities import EntityCfg, MarkerCfg, SpacecraftCfg
from orbitlab.scene.handles import EntityHandle, MarkerHandle
from orbitlab.scene.welds import WeldCfg
from orbitlab.sensors.base import Sensor
from orbitlab.sensors.fused import SensorStage
from orbitlab.sim.spec import OrbitLayerCfg, SimSpec
from orbitlab.sim.views import SimView


@dataclass(kw_only=True)
class SceneCfg:
    """Everything on orbit in one world, and how many worlds."""

    num_envs: int = 1
    """Number of parallel worlds."""
    entities: dict[str, EntityCfg] = field(default_factory=dict)
    """Spacecraft and passive objects by name (the name prefixes their MJCF names)."""
    markers: dict[str, MarkerCfg] = field(default_factory=dict)
    """Visual-only markers by name."""
    welds: dict[str, WeldCfg] = field(default_factory=dict)
    """Welds between entities' bodies by name, switched per world while running
    (`Scene.set_weld_active`; e.g. a latching end effector on a grapple fixture)."""
    orbit: OrbitLayerCfg = field(default_factory=OrbitLayerCfg)
    """Switches, central body and orbit_dt (elements come from the entities)."""
    orbit_init: OrbitInit | None = None
    """Initial chief state of every world (None: 400 km circular equatorial)."""
    timestep_s: float = 0.01
    """Physics timestep, s."""
    integrator: str | None = None
    """MuJoCo integrator ('RK4', 'Euler', 'implicit', 'implicitfast'); None: RK4, which keeps
    the energy and angular momentum of tumbling bodies (see `orbitlab.sim.spec`)."""
    backend: str = "cpu"
    """'cpu' (mujoco.batch) or 'warp' (MuJoCo-Warp)."""
    device: str | None = None
    """Warp device of the 'warp' backend (default: a GPU when present)."""
    contacts_per_world: int | None = None
    """'warp' backend: contacts each world may hold; MuJoCo-Warp's pool holds num_envs x this
    many, which also bounds the broadphase's candidate pairs and sizes the convex
    narrowphase's scratch (`orbitlab.sim.contact_capacity`). None: the scene's worst case,
    every collidable pair at 8 points. Tasks set their measured peak with a margin
    (`orbitlab bench mode=contacts`); a world that overflows it is flagged and the step
    raises."""
    constraint_rows_per_world: int | None = None
    """'warp' backend: constraint rows each world may hold (MuJoCo-Warp's njmax). None: the
    scene's worst case; tasks set their measured peak with a margin."""
    nthread: int = 0
    """CPU threads (0: all cores)."""
    fused_sensors: bool = True
    """Run the gyros, star trackers, magnetometers, GNSS receivers and relative-navigation
    sensors as one Warp kernel per physics step (`orbitlab.sensors.fused`); False: each sensor's torch
    update (the reference, same noise, truths equal to rounding)."""
    fused_actuators: bool = True
    """Run the thruster, wheel (without friction), magnetorquer and CMG groups without latency
    or misalignment as one Warp kernel per physics step (`orbitlab.actuators.fused`); False:
    each group's torch `apply` (the reference, the same outputs bit for bit)."""
    torch_threads: int | None = 1
    """Torch intra-op threads when the simulation runs on the CPU (None: leave torch's
    setting). The per-step tensors are small; next to MuJoCo's batch threads, torch's
    own pool made an elementwise op on (4096, 3) float64 take ~8 ms instead of ~20 us
    single-threaded (2-core machine), so one thread is the default."""


class Scene:
    """The compiled scene: model, batched data, entities, actuators, sensors, markers."""

    def __init__(self, cfg: SceneCfg):
        if int(cfg.num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {cfg.num_envs}")
        for name in ("contacts_per_world", "constraint_rows_per_world"):
            value = getattr(cfg, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"SceneCfg.{name} must be an integer >= 1 or None, got {value!r}")
        if any(vars(cfg.orbit.elements).values()):
            raise ValueError(
                "SceneCfg.orbit.elements must be empty: declare elements on the entities"
            )
        self.cfg = cfg
        compiled = assemble(cfg.entities, cfg.markers, cfg.timestep_s, cfg.welds)
        spec = SimSpec.from_mj_spec(compiled.mj_spec)
        spec.orbit = dataclasses.replace(cfg.orbit, elements=compiled.elements)
        spec.integrator = cfg.integrator
        self.model = spec.compile(timestep=cfg.timestep_s)
        self.mj_model = self.model.mj_model
        if cfg.backend == "cpu":
            _check_world_memory(self.mj_model, int(cfg.num_envs))
        capacity: dict[str, Any] = {
            "nconmax": cfg.contacts_per_world,
            "njmax": cfg.constraint_rows_per_world,
        }
        self.data = self.model.make_data(
            nworld=cfg.num_envs,
            orbit=cfg.orbit_init,
            nthread=cfg.nthread,
            backend=cfg.backend,
            device=cfg.device,
            **(capacity if cfg.backend == "warp" else {}),
        )
        self.num_envs = int(cfg.num_envs)
        self.view = SimView(self.data)
        self.device = self.view.device
        if self.device.type == "cpu" and cfg.torch_threads is not None:
            torch.set_num_threads(int(cfg.torch_threads))
        if self.device.type == "cuda":
            # Torch writes commands that Warp's kernels and graph then read: one stream
            # (Warp's, which can be captured) orders them without host synchronization.
            from orbitlab.quiet import wp

            torch.cuda.set_stream(wp.stream_to_torch(wp.get_stream(str(self.device))))
        self.actuator_context = ActuatorContext(self.view)
        self.entities = {
            name: EntityHandle(name, compiled.roots[name], self) for name in cfg.entities
        }
        self.markers = {name: MarkerHandle(name, self) for name in cfg.markers}
        self.actuators: dict[str, ActuatorGroup] = {}
        self.sensors: dict[str, Sensor] = {}
        for name, entity in cfg.entities.items():
            if isinstance(entity, SpacecraftCfg):
                self._build_entity(name, entity, compiled.element_index[name])
        self.sensor_stage = SensorStage(self.sensors, fused=cfg.fused_sensors)
        self.actuator_stage = ActuatorStage(
            self.actuators, self.actuator_context, fused=cfg.fused_actuators
        )
        self.all_worlds = torch.arange(self.num_envs, device=self.device)
        self._refresh_deferred = False
        self.reset()

    def _build_entity(
        self, name: str, entity: SpacecraftCfg, index: dict[str, dict[str, int]]
    ) -> None:
        for group_name, group_cfg in entity.actuators.items():
            key = f"{name}/{group_name}"
            group_class = cast("type[ActuatorGroup]", group_cfg.class_type)
            self.actuators[key] = group_class.from_scene(group_cfg, key, self, name, index)
        for sensor_name, sensor_cfg in entity.sensors.items():
            key = f"{name}/{sensor_name}"
            stream = len(self.sensors)
            sensor_class = cast("type[Sensor]", sensor_cfg.class_type)
            self.sensors[key] = sensor_class.from_scene(sensor_cfg, key, self, name, stream)

    # ------------------------------------------------------------ simulation
    @property
    def physics_dt(self) -> float:
        """Physics timestep, s."""
        return self.model.timestep

    def step(self, nstep: int = 1, check: bool = True, phase: int | None = None) -> None:
        """Advance every world by `nstep` physics steps (actuators, physics, sensors).

        `check`: then raise if a MuJoCo-Warp buffer overflowed (`check()`); a caller that
        steps several times in a row (the env, once per decimation step) passes False and
        calls `check()` once at the end, as that check is a blocking copy on a GPU.
        `phase`: the index of the first of these steps in the cycle the sensors were
        compiled for (`sensor_stage.compile`, `orbitlab.cycle`; the env passes its physics
        step's index in the env step), so that the sensors read no timer; None: they do."""
        view = self.view
        for k in range(nstep):
            self.actuator_stage.apply()
            self.data.step(check=False)
            view.step_count += 1
            view.invalidate()
            self.sensor_stage.update(None if phase is None else phase + k + 1)
        if check:
            self.check()

    def check(self) -> None:
        """Raise if any world overflowed MuJoCo-Warp's contact or constraint buffers since
        the last check (nothing to check on the CPU backend)."""
        self.data.backend.check()

    def reset(
        self,
        worlds: torch.Tensor | None = None,
        orbit: OrbitInit | list[OrbitInit] | None = None,
    ) -> None:
        """Reset `worlds` (default all): state, chief orbit, actuators, sensors, markers,
        then `refresh_worlds` (a caller that edits the reset worlds further wraps both in
        `deferred_refresh`, as the env does, so that the refresh runs once at the end)."""
        worlds = (
            self.all_worlds
            if worlds is None
            else torch.as_tensor(worlds, dtype=torch.long, device=self.device)
        )
        if worlds.numel() == 0:
            return
        worlds = torch.unique(worlds)  # sorted, once each (as MuJoCo's batch reset needs)
        ids = worlds.cpu().numpy()  # the one host read: MuJoCo's reset takes host ids
        if ids[0] < 0 or ids[-1] >= self.num_envs:
            raise ValueError(f"world ids must be in [0, {self.num_envs}), got {ids[0]}..{ids[-1]}")
        orbit = orbit if orbit is not None else self.cfg.orbit_init
        self.data.reset(ids, orbit=orbit, forward=False)  # refresh_worlds runs it
        view = self.view
        view.episode[worlds] += 1
        view.step_count[worlds] = 0
        view.invalidate()
        view.end_episodes()
        self.actuator_context.external[worlds] = 0.0
        for group in self.actuators.values():
            group.reset(worlds)
        self.refresh_worlds(worlds)

    def set_orbit_state(self, worlds: torch.Tensor, R_km, V_kms, t_s) -> None:
        """Chief position (k, 3) km, velocity (k, 3) km/s and time (k,) s since J2000 of
        `worlds` (k ids; clocks restarted), then `refresh_worlds`."""
        self.data.set_orbit_state(R_km, V_kms, t_s, worlds.cpu().numpy(), forward=False)
        self.view.invalidate()
        self.refresh_worlds(worlds)

    def refresh_worlds(self, worlds: torch.Tensor) -> None:
        """After a reset or a state edit of `worlds`: MuJoCo's forward pass and the orbit-layer
        loads at their state, then their sensors restarted (one forward pass per call;
        nothing inside `deferred_refresh`, which refreshes once at its end)."""
        if self._refresh_deferred:
            return
        self.data.forward(worlds.cpu().numpy())
        self.refresh_sensors(worlds)

    @contextlib.contextmanager
    def deferred_refresh(self, worlds: torch.Tensor) -> Iterator[None]:
        """Edits of `worlds` inside the block (a reset, `set_root_state`, ...) skip their
        refresh; one `refresh_worlds(worlds)` follows the block. The env's reset wraps the
        scene reset and every reset event in it, so a reset runs the forward pass once.
        Edits of other worlds inside the block are not refreshed: pass them all."""
        if self._refresh_deferred:  # nested: the outer block refreshes (its worlds)
            yield
            return
        self._refresh_deferred = True
        try:
            yield
        finally:
            self._refresh_deferred = False
        self.refresh_worlds(worlds)

    def refresh_sensors(self, worlds: torch.Tensor) -> None:
        """Restart the sensors of `worlds` (after a reset or a state edit)."""
        self.view.invalidate()
        for sensor in self.sensors.values():
            sensor.reset(worlds)

    # ------------------------------------------------------------------ welds
    def weld_id(self, name: str) -> int:
        """Equality id of the scene-level weld `name` (`SceneCfg.welds`)."""
        if name not in self.cfg.welds:
            raise ValueError(
                f"no weld named '{name}' in the scene (welds: {', '.join(self.cfg.welds) or 'none'})"
            )
        import mujoco

        return mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_EQUALITY, name)

    def set_weld_active(self, name: str, worlds: torch.Tensor, active: torch.Tensor | bool) -> None:
        """Engage (`active` True) or release the weld `name` where the mask `worlds` (N,) is
        True; `active` is one flag or one per world (N,). No host read."""
        column = self.view.array("eq_active")[:, self.weld_id(name)]
        value = torch.as_tensor(active, device=column.device).to(column.dtype)
        column.copy_(torch.where(worlds, value, column))

    def weld_active(self, name: str) -> torch.Tensor:
        """Whether the weld `name` is engaged, per world (N,) bool."""
        return self.view.array("eq_active")[:, self.weld_id(name)] != 0

    # ------------------------------------------------------------------ names
    def body_id(self, name: str) -> int:
        """Id of a body by its scene name ('entity/body'); 'entity' alone is its root."""
        if name in self.entities:
            return self.entities[name].root_body
        return self._id("body", name)

    def site_id(self, name: str) -> int:
        return self._id("site", name)

    def _id(self, kind: str, name: str) -> int:
        import mujoco

        obj = {
            "body": mujoco.mjtObj.mjOBJ_BODY,
            "site": mujoco.mjtObj.mjOBJ_SITE,
            "camera": mujoco.mjtObj.mjOBJ_CAMERA,
        }[kind]
        i = mujoco.mj_name2id(self.mj_model, obj, name)
        if i < 0:
            count = {
                "body": self.mj_model.nbody,
                "site": self.mj_model.nsite,
                "camera": self.mj_model.ncam,
            }[kind]
            known = [mujoco.mj_id2name(self.mj_model, obj, k) for k in range(count)]
            raise ValueError(
                f"no {kind} named '{name}' in the scene (known: "
                f"{', '.join(str(k) for k in known if k)})"
            )
        return i


def _check_world_memory(mj_model, num_envs: int) -> None:
    """ArgumentError (a ValueError) naming num_envs when its worlds do not fit in this
    machine's available memory (`orbitlab.limits.world_memory_problem`)."""
    import mujoco

    from orbitlab.cli.args import ArgumentError
    from orbitlab.limits import world_memory_problem

    problem = world_memory_problem(num_envs, mujoco.MjData(mj_model).nbuffer)
    if problem is not None:
        raise ArgumentError(f"num_envs={num_envs} is invalid: {problem}")
