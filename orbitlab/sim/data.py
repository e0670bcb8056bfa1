"""Batched orbit-coupled data: `nworld` worlds, each with its own chief orbit.

On the CPU backend every array here is a numpy array that the kernels see
through zero-copy Warp views, so reading or writing it from Python is direct.
Derived MuJoCo fields (xipos, xmat, cvel, ...) are current after `forward()` and
after every `step()`; after editing qpos/qvel by hand, call `forward()`.

Per world: chief `R` (km), `V` (km/s), environment time `t` (s since J2000),
`env` (Sun direction, illumination, field, atmosphere at the chief),
`wrench_buffer` (the orbit layer's world force and COM torque on each body,
N and N m) and the actuator commands and states.

As with MuJoCo's own derived fields after mj_step, `env`, `wrench_buffer` and
`a_feedback` after `step()` describe the loads applied during the last step
(evaluated at its start); `forward()` re-evaluates them at the current state.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import warp as wp

from orbitlab.orbit.constants import OrbitInit
from orbitlab.sim.cpu_backend import CpuBackend, wrap
from orbitlab.sim.kernels import loads_kernel
from orbitlab.sim.kinematics import BodyFrames, BodyIndex
from orbitlab.sim.launch import WorldLaunch
from orbitlab.sim.records import WorldState

_WORLD_VECTORS = ("R", "V", "a_feedback", "seg_R0", "seg_V0", "seg_R1", "seg_V1", "seg_a_sum",
                  "sun_eci", "mag_field_eci")
_WORLD_SCALARS = ("t", "t_anchor", "eclipse", "atm_density")
# Actuator arrays: (field, element kind).
_ACTUATOR_ARRAYS = (("thruster_force", "thrusters"), ("wheel_torque", "wheels"),
                    ("wheel_torque_applied", "wheels"), ("wheel_momentum", "wheels"),
                    ("mtq_dipole", "magnetorquers"), ("cmg_rate", "cmgs"),
                    ("cmg_rate_applied", "cmgs"), ("cmg_angle", "cmgs"))


def all_free_floating(m: mujoco.MjModel) -> bool:
    """True when every body but the world is a root with exactly one free joint."""
    for b in range(1, m.nbody):
        if m.body_parentid[b] != 0 or m.body_jntnum[b] != 1:
            return False
        if m.jnt_type[m.body_jntadr[b]] != mujoco.mjtJoint.mjJNT_FREE:
            return False
    return True


@dataclass
class EnvView:
    """The environment at each world's chief (live arrays, shape (nworld, ...))."""

    sun_eci: np.ndarray
    """Unit ECI vector toward the Sun."""
    eclipse: np.ndarray
    """Illumination factor at the chief: 1 lit, 0 in shadow (fractional with penumbra)."""
    mag_field_eci: np.ndarray
    """Dipole field at the chief, T."""
    atm_omega: np.ndarray
    """Rotation vector of the co-rotating atmosphere, rad/s (the same for every world)."""
    atm_density: np.ndarray
    """Atmospheric density at the chief, kg/m^3."""


class OrbitData:
    """State and buffers of `nworld` orbit-coupled worlds on one backend."""

    def __init__(self, model, nworld: int = 1, orbit: OrbitInit | list[OrbitInit] | None = None,
                 nthread: int = 0, backend: str = "cpu", kernel_threads: int = 0):
        if backend != "cpu":
            raise ValueError(f"unknown backend '{backend}' (available: 'cpu')")
        if int(nworld) < 1:
            raise ValueError(f"nworld must be >= 1, got {nworld}")
        self.model = model
        self.nworld = int(nworld)
        self._kernel_threads = kernel_threads
        self.backend = CpuBackend(model.mj_model, self.nworld, nthread=nthread)
        nbody = model.mj_model.nbody
        self._np: dict[str, np.ndarray] = {}
        state = WorldState()
        for name in _WORLD_VECTORS:
            state_array = self._alloc(name, (self.nworld, 3), np.float64)
            setattr(state, name, wrap(state_array, wp.vec3d))
        for name in _WORLD_SCALARS:
            setattr(state, name, wrap(self._alloc(name, (self.nworld,), np.float64), wp.float64))
        state.nstep = wrap(self._alloc("nstep", (self.nworld,), np.int64), wp.int64)
        state.seg_k = wrap(self._alloc("seg_k", (self.nworld,), np.int32), int)
        for name, kind in _ACTUATOR_ARRAYS:
            shape = (self.nworld, model.count(kind))
            setattr(state, name, wp.array(self._alloc(name, shape, np.float64), dtype=wp.float64,
                                          device="cpu", copy=False))
        self._state = state
        self._xfrc_user = self._alloc("xfrc_user", (self.nworld, nbody, 6), np.float64)
        self._wrench = self._alloc("wrench", (self.nworld, nbody, 6), np.float64)
        omega = np.asarray(model.orbit.central_body.omega, dtype=np.float64)
        self.env = EnvView(sun_eci=self._np["sun_eci"], eclipse=self._np["eclipse"],
                           mag_field_eci=self._np["mag_field_eci"],
                           atm_omega=np.broadcast_to(omega, (self.nworld, 3)),
                           atm_density=self._np["atm_density"])
        self._frames = BodyFrames()
        for name, dtype in (("Q", wp.mat33d), ("com", wp.vec3d), ("omega", wp.vec3d),
                            ("v_com", wp.vec3d)):
            setattr(self._frames, name, wp.zeros((self.nworld, nbody), dtype=dtype, device="cpu"))
        self._elements = model.elements("cpu")
        self._switches = model.switches()
        self._switches.from_qpos = int(all_free_floating(model.mj_model))
        self._record_launches()
        self.set_orbit(orbit)

    # ----------------------------------------------------------------- buffers
    def _alloc(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        array = np.zeros(shape, dtype=dtype)
        self._np[name] = array
        return array

    def _record_launches(self) -> None:
        """Record the loads launch (with and without advancing) once; replays skip packing."""
        mdl = self.backend.model
        from_qpos = bool(self._switches.from_qpos)
        field = self.backend.body_field

        def derived(name: str) -> wp.array:
            return self.backend.placeholder(name) if from_qpos else field(name)

        ref_pos, index = self._body_index()
        inputs = [self.model.central_body, self._switches, self._elements, self._state, index,
                  self._frames,
                  field("qpos"), field("qvel"), derived("xipos"), derived("xmat"),
                  derived("cvel"), derived(ref_pos), mdl["body_mass"], mdl["body_inertia"],
                  mdl["body_ipos"], mdl["body_irot"], wrap(self._xfrc_user, wp.spatial_vectord),
                  wrap(self._wrench, wp.spatial_vectord), field("xfrc_applied")]
        self._loads = WorldLaunch(loads_kernel, self.nworld, device="cpu",
                                  nthread=self._kernel_threads, inputs=[0, *inputs])
        self._loads_and_advance = WorldLaunch(loads_kernel, self.nworld, device="cpu",
                                              nthread=self._kernel_threads, inputs=[1, *inputs])

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
            setattr(index, name, wp.array(values.astype(np.int32), dtype=int, device="cpu"))
        return ("subtree_com" if articulated else "xipos"), index

    # ------------------------------------------------------------- simulation
    def forward(self) -> None:
        """Recompute MuJoCo's derived fields and the orbit-layer loads for the current state."""
        self.backend.forward()
        self._loads.launch()

    def step(self, nstep: int = 1) -> None:
        """Advance every world by `nstep` MuJoCo timesteps with the orbit layer."""
        for _ in range(nstep):
            self._loads_and_advance.launch()
            self.backend.step(derived=not self._switches.from_qpos)

    def set_orbit(self, orbit: OrbitInit | list[OrbitInit] | None = None,
                  worlds: np.ndarray | list[int] | None = None) -> None:
        """Set the chief state (and restart the clock) of `worlds` (default all)."""
        ids = np.arange(self.nworld) if worlds is None else np.asarray(worlds, dtype=np.int64)
        inits = orbit if isinstance(orbit, (list, tuple)) else [orbit or OrbitInit()] * len(ids)
        if len(inits) != len(ids):
            raise ValueError(f"got {len(inits)} orbits for {len(ids)} worlds")
        for world, init in zip(ids, inits, strict=True):
            R = np.asarray(init.R_eci, dtype=np.float64)
            V = np.asarray(init.V_eci, dtype=np.float64)
            if R.shape != (3,) or V.shape != (3,) or not np.all(np.isfinite(np.r_[R, V])):
                raise ValueError(f"world {world}: R_eci and V_eci must be 3 finite numbers each")
            if np.linalg.norm(R) <= self.model.orbit.central_body.radius:
                raise ValueError(f"world {world}: |R_eci| = {np.linalg.norm(R):.3f} km is inside "
                                 "the central body")
            self._np["R"][world], self._np["V"][world] = R, V
            t = init.resolved_time()
            self._np["t"][world] = self._np["t_anchor"][world] = t
        self._np["nstep"][ids] = 0
        self._np["seg_k"][ids] = 0
        self.forward()

    def reset(self, worlds: np.ndarray | list[int] | None = None,
              orbit: OrbitInit | list[OrbitInit] | None = None) -> None:
        """Reset `worlds` (default all) to the model's defaults and the given orbit."""
        ids = None if worlds is None else np.asarray(worlds, dtype=np.int64)
        self.backend.reset(ids)
        sel = slice(None) if ids is None else ids
        for name, _ in _ACTUATOR_ARRAYS:
            self._np[name][sel] = 0.0
        for i, row in enumerate(self.model.rows["cmgs"]):
            self._np["cmg_angle"][sel, i] = row["initial_angle"]
        self._xfrc_user[sel] = 0.0
        self.set_orbit(orbit, worlds=ids)

    def expand(self, name: str) -> np.ndarray:
        """Per-world values of a model field (e.g. 'body_mass', 'body_inertia'), live.

        After writing body_inertia or body_mass, call `forward()`; see
        `mujoco.batch.Batch.expand` for the fields that need set_const().
        """
        values = self.backend.expand(name)
        self._record_launches()
        return values

    # ------------------------------------------------------------------ views
    def bind(self, name: str) -> np.ndarray:
        """A live (nworld, ...) array over an MjData field, e.g. 'qpos', 'qvel'."""
        return self.backend.bind(name)

    @property
    def R(self) -> np.ndarray:
        """Chief ECI position per world, km, (nworld, 3)."""
        return self._np["R"]

    @property
    def V(self) -> np.ndarray:
        """Chief ECI velocity per world, km/s, (nworld, 3)."""
        return self._np["V"]

    @property
    def t(self) -> np.ndarray:
        """Environment time per world, s since J2000, (nworld,)."""
        return self._np["t"]

    @property
    def time(self) -> np.ndarray:
        """MuJoCo time per world (elapsed since reset), s, (nworld,)."""
        return self.backend.bind("time")

    @property
    def wrench_buffer(self) -> np.ndarray:
        """Orbit-layer world force (N) and COM torque (N m) per body, (nworld, nbody, 6).

        Includes the origin-acceleration correction and actuator contributions;
        excludes user forces in `xfrc_applied`.
        """
        return self._wrench

    @property
    def xfrc_applied(self) -> np.ndarray:
        """User-applied world force/torque per body, (nworld, nbody, 6); added to the loads."""
        return self._xfrc_user

    @property
    def a_feedback(self) -> np.ndarray:
        """Chief acceleration from drag, SRP and thrusters this step, km/s^2, (nworld, 3)."""
        return self._np["a_feedback"]

    def __getattr__(self, name: str) -> np.ndarray:
        """Actuator arrays: thruster_force, wheel_torque, wheel_momentum, mtq_dipole, ..."""
        if name != "_np" and name in self._np and name in dict(_ACTUATOR_ARRAYS):
            return self._np[name]
        raise AttributeError(name)

    def wheel_speed(self) -> np.ndarray:
        """Wheel speeds relative to their bodies, rad/s, (nworld, nwheel).

        h/I_w - a.omega with the current wheel momentum h and the body attitude and
        rate the kernel last evaluated (the start of the last step, or the last
        forward()); the body-rate part changes by far less than a step's torque.
        """
        rows = self.model.rows["wheels"]
        speeds = np.empty((self.nworld, len(rows)))
        Q, omega = self._frames.Q.numpy(), self._frames.omega.numpy()
        for i, row in enumerate(rows):
            axis = Q[:, row["body"]] @ row["axis"]
            spin = np.einsum("ni,ni->n", axis, omega[:, row["body"]])
            speeds[:, i] = self._np["wheel_momentum"][:, i] / row["inertia"] - spin
        return speeds
