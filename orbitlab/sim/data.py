"""Batched orbit-coupled data: `nworld` worlds, each with its own chief orbit.

Per world: chief `R` (km), `V` (km/s), environment time `t` (s since J2000),
`env` (Sun direction, illumination, field, atmosphere at the chief),
`wrench_buffer` (the orbit layer's world force and COM torque on each body,
N and N m) and the actuator commands and states.

Where the arrays live depends on the backend:
* `cpu`: every array is a live numpy view that the kernel also sees through a
  zero-copy Warp array, so reading or writing it from Python is direct.
* `warp`: arrays are Warp device arrays (the same objects the kernel and
  MuJoCo-Warp use). Read them with `.numpy()` (a host copy on a GPU), write with
  `.assign(...)`, or use `data.torch(name)` for a zero-copy torch view.

After `step()`, as with MuJoCo's own derived fields after mj_step, `env`,
`wrench_buffer` and `a_feedback` describe the loads applied during that step
(evaluated at its start); `forward()` re-evaluates them at the current state.
In free-body scenes MuJoCo's derived fields (xpos, xmat, cvel, ...) after
`step()` describe the state before the step; call `forward()` before reading
them. After editing qpos/qvel by hand, call `forward()`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from orbitlab.orbit.constants import OrbitInit
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim import health
from orbitlab.sim.backends import make_backend
from orbitlab.sim.kernels import KernelLayout, loads_kernel, specialized_loads_kernel
from orbitlab.sim.kinematics import BodyFrames, BodyIndex, all_free_floating, frames_kernel
from orbitlab.sim.launch import WorldLaunch, chunk_count
from orbitlab.sim.records import WorldState
from orbitlab.sim.schema import ELEMENT_KINDS, LAYOUT_CONSTANTS, PER_ELEMENT_FIELDS, WORLD_FIELDS

SPECIALIZE_MIN_WORLDS = 1024
"""From this many worlds up, `OrbitData` compiles a loads kernel specialised to its model by
default (a few seconds once per distinct model, cached on disk; measured: ~20% less kernel
time per world-step for the benchmark spacecraft)."""


@dataclass
class EnvView:
    """The environment at each world's chief (live arrays, shape (nworld, ...))."""

    sun_eci: Any
    """Unit ECI vector toward the Sun."""
    eclipse: Any
    """Illumination factor at the chief: 1 lit, 0 in shadow (fractional with penumbra)."""
    mag_field_eci: Any
    """Dipole field at the chief, T."""
    atm_omega: np.ndarray
    """Rotation vector of the co-rotating atmosphere, rad/s (the same for every world)."""
    atm_density: Any
    """Atmospheric density at the chief, kg/m^3."""


class OrbitData:
    """State and buffers of `nworld` orbit-coupled worlds on one backend."""

    def __init__(
        self,
        model,
        nworld: int = 1,
        orbit: OrbitInit | list[OrbitInit] | None = None,
        nthread: int = 0,
        backend: str = "cpu",
        kernel_threads: int = 0,
        device: str | None = None,
        specialize: bool | None = None,
        **backend_options,
    ):
        if isinstance(nworld, bool) or not isinstance(nworld, (int, np.integer)):
            raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
                f"nworld must be an integer >= 1, got {nworld!r}"
            )
        if not 1 <= int(nworld) < 2**31:
            raise ValueError(f"nworld must be >= 1 and < 2**31, got {nworld}")
        self.model = model
        self.nworld = int(nworld)
        self.specialize = (
            self.nworld >= SPECIALIZE_MIN_WORLDS if specialize is None else bool(specialize)
        )
        """Whether the loads kernel is compiled for this model's layout (`KernelLayout`)."""
        self._kernel_threads = kernel_threads
        self.backend = make_backend(
            backend, model.mj_model, self.nworld, nthread=nthread, device=device, **backend_options
        )
        self.device = self.backend.device
        self._arrays: dict[str, wp.array] = {}
        self._state = self._make_state()
        self._health_host = self._arrays["health"].numpy() if self.backend.per_world_calls else None
        """A live host view of the health codes where MuJoCo runs per-world calls (the CPU)."""
        nbody = model.mj_model.nbody
        self._xfrc_user = self._alloc("xfrc_user", (self.nworld, nbody), wp.spatial_vectord)
        self._wrench = self._alloc("wrench", (self.nworld, nbody), wp.spatial_vectord)
        self._qfrc_user = self._alloc("qfrc_user", (self.nworld, model.mj_model.nv), wp.float64)
        # A CPU thread runs its worlds one after another: a scratch row per thread.
        # A GPU runs them concurrently: a row per world.
        scratch_rows = (
            chunk_count(self.nworld, self.device, kernel_threads)
            if self.device == "cpu"
            else self.nworld
        )
        self._frames = self._make_frames("scratch", scratch_rows)
        self._world_frames = self._make_frames("world", self.nworld)
        omega = np.asarray(model.orbit.central_body.omega, dtype=np.float64)
        native = self.backend.native
        self.env = EnvView(
            sun_eci=native(self._arrays["sun_eci"]),
            eclipse=native(self._arrays["eclipse"]),
            mag_field_eci=native(self._arrays["mag_field_eci"]),
            atm_omega=np.broadcast_to(omega, (self.nworld, 3)),
            atm_density=native(self._arrays["atm_density"]),
        )
        self._elements = model.elements(self.device)
        self._switches = model.switches()
        self._switches.from_qpos = int(all_free_floating(model.mj_model))
        self._switches.to_qfrc = int(
            bool(self._switches.from_qpos) and self.backend.loads_as_generalized_forces
        )
        self._graph: wp.Graph | None = None
        self._switches.stage = int(self._rk4_stages())
        self.coupling = "stage" if self._switches.stage else "held"
        """How this data's step applies the loads: 'stage' (orbitlab's RK4 of the coupled
        state, the loads at every stage) or 'held' (once per step; also what 'stage' means
        with a one-stage integrator)."""
        self._record_launches()
        self._stepper = self._stage_stepper()
        self.set_orbit(orbit)

    def _rk4_stages(self) -> bool:
        """Whether the loads are evaluated at RK4's four stages: coupling 'stage' with the
        RK4 integrator. With a one-stage integrator 'stage' is the held step."""
        coupling = self.model.orbit.coupling
        if coupling not in ("stage", "held"):
            raise ValueError(f"orbit.coupling must be 'stage' or 'held', got {coupling!r}")
        m = self.model.mj_model
        if coupling == "held" or m.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4:
            return False
        why = [
            reason
            for bad, reason in (
                (
                    self.model.orbit_substeps != 1 or self.model.segment_steps != 1,
                    (
                        "orbit_dt equal to the timestep or None (got "
                        f"{self.model.orbit.orbit_dt!r} s, timestep {self.model.timestep:g} s)"
                    ),
                ),
                (m.na > 0, f"no actuator activations (the model has na = {m.na})"),
            )
            if bad
        ]
        if why:
            raise ValueError(
                f"orbit.coupling='stage' (the default) needs {'; '.join(why)}: set "
                "orbit.coupling='held' for this model"
            )
        return True

    def _stage_stepper(self):
        """The per-stage RK4 stepper when the loads are evaluated at every stage, else None."""
        if not self._switches.stage:
            return None
        from orbitlab.sim.stages import StageStepper

        prepare = None if self._switches.from_qpos else self.backend.kinematics
        return StageStepper(self, prepare, self._active_worlds)

    def _active_worlds(self) -> np.ndarray | None:
        """The healthy worlds' ids for MuJoCo's per-world calls, or None for all of them
        (always None where MuJoCo runs every world, as on MuJoCo-Warp: no host read)."""
        codes = self._health_host
        if codes is None:
            return None
        return np.flatnonzero(codes == 0) if codes.any() else None

    # ----------------------------------------------------------------- buffers
    def _alloc(self, name: str, shape: tuple[int, ...], dtype) -> wp.array:
        array = self.backend.alloc(shape, dtype)
        self._arrays[name] = array
        return array

    def _make_frames(self, prefix: str, rows: int) -> BodyFrames:
        frames = BodyFrames()
        nbody = self.model.mj_model.nbody
        for name, dtype in (
            ("Q", wp.mat33d),
            ("com", wp.vec3d),
            ("omega", wp.vec3d),
            ("v_com", wp.vec3d),
        ):
            setattr(frames, name, self._alloc(f"{prefix}_frames_{name}", (rows, nbody), dtype))
        return frames

    def _make_state(self) -> WorldState:
        """Every per-world array of `orbitlab.sim.schema.WORLD_FIELDS`, zeroed."""
        state = WorldState()
        for f in WORLD_FIELDS:
            shape = (self.nworld, self.model.count(f.per)) if f.per else (self.nworld,)
            setattr(state, f.name, self._alloc(f.name, shape, f.dtype))
        return state

    def _record_launches(self) -> None:
        """Record the loads launch (with and without advancing) once; replays skip packing."""
        mdl = self.backend.model
        from_qpos = bool(self._switches.from_qpos)
        field = self.backend.body_field

        def derived(name: str) -> wp.array:
            return self.backend.placeholder(name) if from_qpos else field(name)

        to_qfrc = bool(self._switches.to_qfrc)
        xfrc = self.backend.placeholder("xfrc_applied") if to_qfrc else field("xfrc_applied")
        qfrc = field("qfrc_applied") if to_qfrc else self.backend.placeholder("qfrc_applied")

        ref_pos, index = self._body_index()
        kernel = specialized_loads_kernel(self.kernel_layout()) if self.specialize else loads_kernel
        inputs = [
            self.model.central_body,
            self._switches,
            self._elements,
            self._state,
            index,
            self._frames,
            field("qpos"),
            field("qvel"),
            derived("xipos"),
            derived("xmat"),
            derived("cvel"),
            derived(ref_pos),
            mdl["body_mass"],
            mdl["body_inertia"],
            mdl["body_ipos"],
            mdl["body_irot"],
            self._xfrc_user,
            self._wrench,
            xfrc,
            self._qfrc_user,
            qfrc,
        ]
        self._loads = WorldLaunch(
            kernel,
            self.nworld,
            device=self.device,
            nthread=self._kernel_threads,
            inputs=[0, *inputs],
        )
        self._loads_and_advance = WorldLaunch(
            kernel,
            self.nworld,
            device=self.device,
            nthread=self._kernel_threads,
            inputs=[1, *inputs],
        )
        self._frames_launch = WorldLaunch(
            frames_kernel,
            self.nworld,
            device=self.device,
            nthread=self._kernel_threads,
            inputs=[
                self._switches.from_qpos,
                index,
                self._world_frames,
                field("qpos"),
                field("qvel"),
                derived("xipos"),
                derived("xmat"),
                derived("cvel"),
                derived(ref_pos),
                mdl["body_ipos"],
            ],
        )
        self._graph = None

    def kernel_layout(self) -> Any:
        """This model's element counts, switches and chief schedule, as a specialised
        kernel fixes them (a `KernelLayout`)."""
        counts = {kind.count: self.model.count(kind.name) for kind in ELEMENT_KINDS}
        switches = {
            name: int(getattr(self._switches, name))
            for name in LAYOUT_CONSTANTS
            if name != "nbody" and name not in counts
        }
        return KernelLayout(nbody=self.model.mj_model.nbody, **counts, **switches)

    def _body_index(self) -> tuple[str, BodyIndex]:
        """The kinematics tables, and which field holds cvel's reference points.

        MuJoCo's cvel is about subtree_com[root]. For a body alone in its tree that
        point is its own COM (xipos), so subtree_com need not be bound at all.
        """
        m = self.model.mj_model
        rootid = m.body_rootid
        tree_size = np.bincount(rootid, minlength=m.nbody)
        articulated = any(tree_size[rootid[row["body"]]] > 1 for row in self.model.rows["surfaces"])
        ref = rootid if articulated else np.arange(m.nbody)
        free_adr = np.full(m.nbody, -1)
        free_dof = np.full(m.nbody, -1)
        for b in range(1, m.nbody):
            if m.body_jntnum[b] == 1 and m.jnt_type[m.body_jntadr[b]] == mujoco.mjtJoint.mjJNT_FREE:
                free_adr[b] = m.jnt_qposadr[m.body_jntadr[b]]
                free_dof[b] = m.jnt_dofadr[m.body_jntadr[b]]
        index = BodyIndex()
        for name, values in (("qposadr", free_adr), ("dofadr", free_dof), ("cvel_ref", ref)):
            setattr(index, name, wp.array(values.astype(np.int32), dtype=int, device=self.device))
        return ("subtree_com" if articulated else "xipos"), index

    def _write_rows(self, name: str, rows: np.ndarray | slice, values) -> None:
        """Host-side write of some worlds' rows of an orbit-layer array (explicit copy on GPU)."""
        array = self._arrays[name]
        if self.device == "cpu":
            array.numpy()[rows] = values
            return
        host = array.numpy()
        host[rows] = values
        array.assign(host)

    # ------------------------------------------------------------- simulation
    def forward(self, worlds: np.ndarray | list[int] | None = None) -> None:
        """Recompute MuJoCo's derived fields and the orbit-layer loads for the current state.

        Args:
            worlds: only these worlds' MuJoCo fields (the CPU backend skips the others;
                the warp backend recomputes all). The loads kernel covers every world.
        """
        ids = None if worlds is None else np.unique(np.asarray(worlds, dtype=np.int64))
        self.backend.forward(ids)
        self._loads.launch()

    def step(self, nstep: int = 1, check: bool = True) -> None:
        """Advance every healthy world by `nstep` MuJoCo timesteps with the orbit layer.

        A world found unhealthy (see `health`) is frozen instead. On a CUDA device the
        whole step (orbit kernel + MuJoCo-Warp) is captured once as a CUDA graph and
        replayed; buffer overflows are checked once per call (a blocking device-to-host
        copy). `check=False` skips that check: callers that time the step (benchmarks)
        call `backend.check()` once afterwards instead.
        """
        if isinstance(nstep, bool) or not isinstance(nstep, (int, np.integer)) or nstep < 0:
            raise ValueError(f"nstep must be an integer >= 0, got {nstep!r}")
        derived = not self._switches.from_qpos
        if self.device.startswith("cuda"):
            if self._graph is None:
                with wp.ScopedCapture(device=self.device) as capture:
                    if self._stepper is not None:
                        self._stepper.step()
                    else:
                        self._loads_and_advance.launch()
                        self.backend.step(derived=derived)
                self._graph = capture.graph
            for _ in range(nstep):
                wp.capture_launch(self._graph)
        elif self._stepper is not None:
            for _ in range(nstep):
                self._stepper.step()
        else:
            health_codes = self._arrays["health"].numpy()  # a live view on the CPU
            for _ in range(nstep):
                self._loads_and_advance.launch()
                # Frozen worlds (health.py) are not stepped: nothing of theirs moves.
                frozen = health_codes.any()
                self.backend.step(
                    derived=derived, worlds=np.flatnonzero(health_codes == 0) if frozen else None
                )
        if check:
            self.backend.check()
        self._mark_unstable(self.backend.unstable_worlds())

    def set_orbit(
        self,
        orbit: OrbitInit | list[OrbitInit] | None = None,
        worlds: np.ndarray | list[int] | None = None,
        forward: bool = True,
    ) -> None:
        """Set the chief state (and restart the clock) of `worlds` (default all); `forward`:
        as in `set_orbit_state`."""
        ids = np.arange(self.nworld) if worlds is None else np.asarray(worlds, dtype=np.int64)
        listed = isinstance(orbit, (list, tuple))
        items: list = list(orbit) if isinstance(orbit, (list, tuple)) else [orbit]
        for item in items:
            if not isinstance(item, OrbitInit) and (listed or item is not None):
                raise TypeError(
                    f"orbit={item!r} is invalid: expected an OrbitInit (e.g. "
                    "OrbitInit(R_eci=[6778.0, 0.0, 0.0], V_eci=[0.0, 7.67, 0.0])), a list of them "
                    "(one per world) or None (400 km circular)"
                )
        if isinstance(orbit, (list, tuple)):
            if len(orbit) != len(ids):
                raise ValueError(f"got {len(orbit)} orbits for {len(ids)} worlds")
            R = np.array([_vector3(o.R_eci, w, "R_eci") for w, o in zip(ids, orbit, strict=True)])
            V = np.array([_vector3(o.V_eci, w, "V_eci") for w, o in zip(ids, orbit, strict=True)])
            t = np.array([o.resolved_time() for o in orbit])
        else:
            init = orbit or OrbitInit()
            first = int(ids[0]) if len(ids) else 0
            R = np.broadcast_to(_vector3(init.R_eci, first, "R_eci"), (len(ids), 3))
            V = np.broadcast_to(_vector3(init.V_eci, first, "V_eci"), (len(ids), 3))
            t = np.full(len(ids), init.resolved_time())
        self.set_orbit_state(R, V, t, ids, forward=forward)

    def set_orbit_state(
        self, R_km, V_kms, t_s, worlds: np.ndarray | list[int], forward: bool = True
    ) -> None:
        """Vectorized `set_orbit`: chief position (k, 3) km, velocity (k, 3) km/s and
        time (k,) s since J2000 of `worlds` (k ids); restarts their clocks. `forward`: then
        run the forward pass of those worlds (False: the caller does, after further edits)."""
        ids = np.asarray(worlds, dtype=np.int64)
        R = np.asarray(R_km, dtype=np.float64)
        V = np.asarray(V_kms, dtype=np.float64)
        t = np.asarray(t_s, dtype=np.float64)
        for name, value in (("R_km", R), ("V_kms", V)):
            if value.shape != (len(ids), 3):
                raise ValueError(f"{name} must have shape ({len(ids)}, 3), got {value.shape}")
            finite = np.all(np.isfinite(value), axis=1)
            if not finite.all():
                raise ValueError(
                    f"world {ids[np.argmin(finite)]}: R_eci and V_eci must be 3 "
                    f"finite numbers each ({name} is not)"
                )
        if t.shape != (len(ids),) or not np.all(np.isfinite(t)):
            raise ValueError(f"t_s must be {len(ids)} finite times, got {t!r}")
        inside = np.linalg.norm(R, axis=1) <= self.model.orbit.central_body.radius
        if inside.any():
            k = int(np.argmax(inside))
            raise ValueError(
                f"world {ids[k]}: |R_eci| = {np.linalg.norm(R[k]):.3f} km is "
                "inside the central body"
            )
        self._check_chief_step(R, V, ids)
        for name, values in (
            ("R", R),
            ("V", V),
            ("t", t),
            ("t_anchor", t),
            ("nstep", 0),
            ("seg_k", 0),
            ("health", 0),
        ):
            self._write_rows(name, ids, values)
        self.backend.clear_unstable(ids)
        if forward:
            self.forward(ids)

    def _check_chief_step(self, R: np.ndarray, V: np.ndarray, ids: np.ndarray) -> None:
        """ValueError if the chief's RK4 step is too long for these orbits to stay stable:
        more than 1/8 rad of mean motion (1/50 of a period) per step."""
        if not len(ids):
            return
        gm = self.model.orbit.central_body.gm
        r = np.linalg.norm(R, axis=1)
        energy = 0.5 * np.einsum("ni,ni->n", V, V) - gm / r
        a = np.where(energy < 0.0, -gm / (2.0 * np.minimum(energy, -1e-300)), r)
        # Hyperbolic or parabolic chiefs: the local rate sqrt(gm / r^3) instead.
        rate = np.sqrt(gm / np.minimum(a, r) ** 3)
        orbit_step = self.model.timestep * self.model.segment_steps / self.model.orbit_substeps
        worst = int(np.argmax(rate))
        if orbit_step * rate[worst] > 0.125:
            period = 2.0 * np.pi / rate[worst]
            raise ValueError(
                f"world {ids[worst]}: the chief's RK4 step of {orbit_step:g} s is "
                f"too long for its orbit (period {period:.0f} s): at most "
                f"{0.125 / rate[worst]:.4g} s (1/50 of a period); shorten the "
                f"timestep or orbit_dt"
            )

    def _mark_unstable(self, worlds: np.ndarray) -> None:
        """Mark `worlds` (those MuJoCo found unstable and reset) with MUJOCO_UNSTABLE."""
        if len(worlds):
            codes = self._arrays["health"].numpy()
            fresh = worlds[codes[worlds] == 0]
            if len(fresh):
                self._write_rows("health", fresh, health.MUJOCO_UNSTABLE)

    @property
    def health(self):
        """Per-world health code, (nworld,) int: 0 healthy, else why the world is frozen
        (`orbitlab.sim.health.REASONS`; live; cleared by `reset`)."""
        return self._native("health")

    def unhealthy(self) -> dict[int, str]:
        """{world: reason} of every frozen world (a host copy)."""
        codes = _host(self.health)
        return {int(w): health.describe(codes[w]) for w in np.flatnonzero(codes)}

    def reset(
        self,
        worlds: np.ndarray | list[int] | None = None,
        orbit: OrbitInit | list[OrbitInit] | None = None,
        forward: bool = True,
    ) -> None:
        """Reset `worlds` (default all) to the model's defaults and the given orbit; `forward`:
        then run their forward pass. False: only MuJoCo's position- and velocity-derived
        fields of those worlds are made current (so that their body frames can be read),
        and the caller runs `forward` after its further edits."""
        ids = None if worlds is None else np.asarray(worlds, dtype=np.int64)
        self.backend.reset(ids)
        if not forward:
            self.backend.kinematics(ids)
        rows = slice(None) if ids is None else ids
        for name in PER_ELEMENT_FIELDS:
            self._write_rows(name, rows, 0.0)
        initial = [row["initial_angle"] for row in self.model.rows["cmgs"]]
        if initial:
            self._write_rows("cmg_angle", rows, np.asarray(initial))
        self._write_rows("xfrc_user", rows, 0.0)
        self._write_rows("qfrc_user", rows, 0.0)
        self.set_orbit(orbit, worlds=ids, forward=forward)

    def expand(self, name: str):
        """Per-world values of a model field (e.g. 'body_mass', 'body_inertia'), live.

        After writing body_inertia or body_mass, call `forward()`; on the CPU backend
        see `mujoco.batch.Batch.expand` for the fields that need set_const().
        """
        values = self.backend.expand(name)
        self._record_launches()
        return values

    def world_arrays(self) -> dict[str, np.ndarray]:
        """Every per-world orbit-layer state array, by name: live host views (nworld, ...).

        The chief (R km, V km/s, t s), segment predictor, environment at the chief,
        health codes, actuator arrays and the user/orbit wrenches; not the body-frame
        scratch arrays the kernel rewrites each step. On the CPU backend these are the
        arrays themselves; exact-state capture (`orbitlab.envs.state`) reads them.
        """
        return {
            name: self.backend.native(array)
            for name, array in self._arrays.items()
            if "_frames_" not in name and array.shape[0] == self.nworld
        }

    # ------------------------------------------------------------------ views
    def bind(self, name: str):
        """The (nworld, ...) MjData field, e.g. 'qpos', 'qvel' (live; see module doc).

        When the loads go to MuJoCo as generalized forces (free-floating scenes on
        the CPU backend), 'qfrc_applied' is the user's own generalized force, which
        the kernel adds to the loads each step, like `xfrc_applied`.
        """
        if name == "qfrc_applied" and self._switches.to_qfrc:
            return self._native("qfrc_user")
        return self.backend.bind(name)

    def torch(self, name: str):
        """A zero-copy torch tensor over an orbit-layer array (e.g. 'R', 'thruster_force',
        'wrench', 'xfrc_user') or an MjData field (e.g. 'qpos')."""
        import torch

        if name in self._arrays:
            return wp.to_torch(self._arrays[name])
        field = self.bind(name)
        if not isinstance(field, np.ndarray):
            return wp.to_torch(field)
        with warnings.catch_warnings():  # derived fields such as qacc are read-only views
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(field)

    def _native(self, name: str):
        return self.backend.native(self._arrays[name])

    @property
    def kernel_threads(self) -> int:
        """CPU threads the orbit layer's kernels split worlds over (`WorldLaunch`; 0: all)."""
        return self._kernel_threads

    @property
    def R(self):
        """Chief ECI position per world, km, (nworld, 3)."""
        return self._native("R")

    @property
    def V(self):
        """Chief ECI velocity per world, km/s, (nworld, 3)."""
        return self._native("V")

    @property
    def t(self):
        """Environment time per world, s since J2000, (nworld,)."""
        return self._native("t")

    @property
    def time(self):
        """MuJoCo time per world (elapsed since reset), s, (nworld,)."""
        return self.backend.bind("time")

    @property
    def wrench_buffer(self):
        """Orbit-layer world force (N) and COM torque (N m) per body, (nworld, nbody, 6).

        Includes the origin-acceleration correction and actuator contributions;
        excludes user forces in `xfrc_applied`.
        """
        return self._native("wrench")

    @property
    def xfrc_applied(self):
        """User-applied world force/torque per body, (nworld, nbody, 6); added to the loads."""
        return self._native("xfrc_user")

    @property
    def a_feedback(self):
        """Chief acceleration from drag, SRP and thrusters this step, km/s^2, (nworld, 3)."""
        return self._native("a_feedback")

    def __getattr__(self, name: str):
        """Actuator arrays: thruster_force, wheel_torque, wheel_momentum, mtq_dipole, ..."""
        if name in PER_ELEMENT_FIELDS and "_arrays" in self.__dict__:
            return self._native(name)
        raise AttributeError(name)

    def hill_frame(self) -> tuple[np.ndarray, np.ndarray]:
        """Each chief's Hill/LVLH frame on the host: (C_LI (nworld, 3, 3), omega (nworld, 3)).

        Rows of C_LI are the radial, along-track and orbit-normal axes in ECI;
        omega is the frame's angular velocity in ECI, rad/s (point-mass rate).
        """
        from orbitlab.orbit.frames import lvlh_angular_velocity, lvlh_rotation

        R, V = _host(self.R), _host(self.V)
        omega, _ = lvlh_angular_velocity(R, V, mu=self.model.orbit.central_body.gm)
        return lvlh_rotation(R, V), omega

    def body_frames(self) -> BodyFrames:
        """Every body's rotation, COM and velocities at the current state (device arrays).

        Free bodies are read from qpos/qvel, which are always current; articulated
        scenes use MuJoCo's derived fields (current after step() and forward()).
        """
        self._frames_launch.launch()
        return self._world_frames

    @property
    def world_frames(self) -> BodyFrames:
        """The arrays `body_frames()` fills, as last filled (no launch): for kernels that
        read every body's frame after `SimView.frames()` made it current."""
        return self._world_frames

    def hill_state(self, body: int | str) -> tuple[np.ndarray, np.ndarray]:
        """A body's COM position (m) and velocity (m/s) in its chief's rotating Hill frame.

        Returns two (nworld, 3) host arrays, at the current state.
        """
        b = body if isinstance(body, int) else self.model.mj_model.body(body).id
        C, omega = self.hill_frame()
        frames = self.body_frames()
        com = frames.com.numpy()[:, b]
        v_com = frames.v_com.numpy()[:, b]
        rho = np.einsum("nij,nj->ni", C, com)
        rho_dot = np.einsum("nij,nj->ni", C, v_com - np.cross(omega, com))
        return rho, rho_dot

    def wheel_speed(self) -> np.ndarray:
        """Wheel speeds relative to their bodies, rad/s, (nworld, nwheel), on the host.

        h/I_w - a.omega from the current wheel momentum h and body attitude and rate.
        """
        rows = self.model.rows["wheels"]
        speeds = np.empty((self.nworld, len(rows)))
        frames = self.body_frames()
        Q, omega = frames.Q.numpy(), frames.omega.numpy()
        momentum = self._arrays["wheel_momentum"].numpy()
        for i, row in enumerate(rows):
            axis = Q[:, row["body"]] @ row["axis"]
            spin = np.einsum("ni,ni->n", axis, omega[:, row["body"]])
            speeds[:, i] = momentum[:, i] / row["inertia"] - spin
        return speeds


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.numpy()


def _vector3(value, world: int, name: str) -> np.ndarray:
    try:
        vec = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):  # e.g. text
        vec = np.full(1, np.nan)
    if vec.shape != (3,) or not np.all(np.isfinite(vec)):
        raise ValueError(
            f"world {world}: R_eci and V_eci must be 3 finite numbers each ({name} = {value!r})"
        )
    return vec
