"""MuJoCo-Warp backend: `nworld` worlds on a Warp device (a CUDA GPU, or Warp's CPU).

MuJoCo-Warp keeps the multibody state in float32 device arrays (`Data`); the
orbit layer keeps its own state (chief R, V, time, actuator states) in float64
device arrays and runs the same kernel as the CPU backend on them. Nothing is
copied to the host while stepping: users see device arrays (`native` returns
the Warp array itself; `OrbitData.torch(name)` gives a zero-copy torch view),
and host reads/writes are explicit (`.numpy()`, `.assign()`).

Contact and constraint buffers are sized from the scene's collidable geom pairs
(`orbitlab.sim.contact_capacity.worst_case`) unless given (a task's measured peak with a
margin); an overflow raises instead of dropping contacts silently.
Requires the `warp` extra (`pip install 'orbitlab-sim[warp]'`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.backends.cpu import principal_axes_rotations
from orbitlab.sim.contact_capacity import worst_case

BODY_FIELDS = {
    "xipos": wp.vec3,
    "xmat": wp.mat33,
    "cvel": wp.spatial_vector,
    "subtree_com": wp.vec3,
    "xfrc_applied": wp.spatial_vector,
    "qpos": wp.float32,
    "qvel": wp.float32,
    "qfrc_applied": wp.float32,
    "qacc": wp.float32,
    "time": wp.float32,
}
MODEL_FIELDS = ("body_mass", "body_inertia", "body_ipos")


def _import_mujoco_warp():
    try:
        import mujoco_warp
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "backend='warp' needs MuJoCo-Warp: install the 'warp' extra "
            "(pip install 'orbitlab-sim[warp]')"
        ) from error
    return mujoco_warp


@wp.kernel
def flag_buffer_overflow(
    naconmax: int,
    njmax: int,
    nacon: wp.array(dtype=int),
    ncollision: wp.array(dtype=int),
    nefc: wp.array(dtype=int),
    nefc_bit: int,
    broadphase_bit: int,
    narrowphase_bit: int,
    overflow: wp.array(dtype=int),
):
    """Mark world w's overflow flags after a forward pass, as MuJoCo-Warp's own step does
    when it advances (its `forward` alone does not): more contact candidates (broadphase)
    or contacts (narrowphase) than naconmax in all, or more constraint rows than njmax in
    the world. *_bit: the values of MuJoCo-Warp's flags NEFC, BROADPHASE and NARROWPHASE."""
    w = wp.tid()
    flags = overflow[w]
    if nefc[w] > njmax:
        flags = flags | nefc_bit
    if ncollision[0] > naconmax:
        flags = flags | broadphase_bit
    if nacon[0] > naconmax:
        flags = flags | narrowphase_bit
    overflow[w] = flags


def default_device() -> str:
    """'cuda:0' when Warp sees a GPU, else Warp's CPU device."""
    return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"


class WarpBackend:
    """MuJoCo-Warp behind the backend interface."""

    loads_as_generalized_forces = True
    """Free-floating scenes get their loads as qfrc_applied, as on the CPU backend: both
    backends then hold a step's loads in the same coordinates (the free joints' world-axes
    force and body-axes torque) over MuJoCo's integration."""
    per_world_calls = False
    """MuJoCo-Warp runs every world in each call (`ids` arguments are ignored)."""

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        nworld: int,
        device: str | None = None,
        nconmax: int | None = None,
        njmax: int | None = None,
    ):
        self.mjw = _import_mujoco_warp()
        self.mj_model = mj_model
        self.nworld = nworld
        self.device = str(wp.get_device(device or default_device()))
        ncon, nrow = worst_case(mj_model)
        with wp.ScopedDevice(self.device):
            self.m = self.mjw.put_model(mj_model)
            self.nconmax = max(1, ncon if nconmax is None else int(nconmax))
            """Contacts per world: the pool holds nworld x this many."""
            self.d = self.mjw.make_data(
                mj_model,
                nworld=nworld,
                nconmax=self.nconmax,
                njmax=max(1, nrow if njmax is None else int(njmax)),
            )
        self.model = {name: getattr(self.m, name) for name in MODEL_FIELDS}
        self.model["body_irot"] = wp.array(
            principal_axes_rotations(mj_model), dtype=wp.mat33d, device=self.device
        )

    def alloc(self, shape: tuple[int, ...], dtype) -> wp.array:
        return wp.zeros(shape, dtype=dtype, device=self.device)

    @staticmethod
    def native(array: wp.array) -> wp.array:
        """Device arrays are handed out as they are; read them with `.numpy()`."""
        return array

    def body_field(self, name: str) -> wp.array:
        return getattr(self.d, name)

    def placeholder(self, name: str) -> wp.array:
        dtype = BODY_FIELDS[name]
        return wp.zeros((1, 1), dtype=dtype, device=self.device)  # type: ignore[call-overload]

    def bind(self, name: str) -> wp.array:
        """MuJoCo-Warp's (nworld, ...) device array for an MjData field."""
        return getattr(self.d, name)

    def expand(self, name: str) -> wp.array:
        """Give model field `name` one row per world; return the (nworld, ...) device array.

        MuJoCo-Warp indexes batched model fields by world % rows, so this only
        replaces the shared row by per-world copies.
        """
        current = getattr(self.m, name)
        if current.shape[0] != self.nworld:
            rows = np.repeat(current.numpy()[:1], self.nworld, axis=0)
            current = wp.array(rows, dtype=current.dtype, device=self.device)
            setattr(self.m, name, current)
            if name in self.model:
                self.model[name] = current
        return current

    def forward(self, ids=None) -> None:
        """Every world (MuJoCo-Warp has no per-world forward; `ids` is accepted and ignored).
        Buffer overflows are flagged per world (see `check`), as after a step."""
        flags = self.mjw.OverflowType
        with wp.ScopedDevice(self.device):
            self.mjw.forward(self.m, self.d)
            wp.launch(
                flag_buffer_overflow,
                dim=self.nworld,
                inputs=[
                    self.d.naconmax,
                    self.d.njmax,
                    self.d.nacon,
                    self.d.ncollision,
                    self.d.nefc,
                    int(flags.NEFC),
                    int(flags.BROADPHASE),
                    int(flags.NARROWPHASE),
                ],
                outputs=[self.d.overflow],
            )

    def kinematics(self, ids=None) -> None:
        """Position- and velocity-derived fields (xipos, xmat, subtree_com, cvel) of every
        world at its current state (`ids` is accepted and ignored)."""
        with wp.ScopedDevice(self.device):
            self._kinematics()

    def _kinematics(self) -> None:
        self.mjw.kinematics(self.m, self.d)
        self.mjw.com_pos(self.m, self.d)
        self.mjw.com_vel(self.m, self.d)

    def step(self, derived: bool = True, worlds: np.ndarray | None = None) -> None:
        """One MuJoCo-Warp step; with `derived`, kinematics refreshed at the new state.

        MuJoCo-Warp steps every world: `worlds` is ignored. A frozen world (see
        `orbitlab.sim.health`) keeps stepping in MuJoCo-Warp, where worlds are
        independent, while its chief, clock and actuator states stay frozen.
        """
        with wp.ScopedDevice(self.device):
            self.mjw.step(self.m, self.d)
            if derived:
                self._kinematics()

    def reset(self, ids: np.ndarray | None) -> None:
        with wp.ScopedDevice(self.device):
            if ids is None:
                self.mjw.reset_data(self.m, self.d)
                return
            mask = np.zeros(self.nworld, dtype=bool)
            mask[np.asarray(ids)] = True
            self.mjw.reset_data(self.m, self.d, reset=wp.array(mask, dtype=bool))

    @staticmethod
    def unstable_worlds() -> np.ndarray:
        """MuJoCo-Warp does not reset unstable worlds: the loads kernel's checks apply."""
        return np.zeros(0, dtype=np.int64)

    def clear_unstable(self, ids: np.ndarray | None) -> None:
        """Nothing to clear (see `unstable_worlds`)."""

    def check(self) -> None:
        """Raise if any world overflowed its contact or constraint buffers."""
        flags = self.mjw.OverflowType
        buffers = int(flags.ALL & ~(flags.ITERATIONS | flags.LS_ITERATIONS))
        overflow = self.d.overflow.numpy() & buffers
        bad = np.flatnonzero(overflow)
        if bad.size:
            which = flags(int(overflow[bad[0]]))
            raise RuntimeError(
                f"MuJoCo-Warp buffer overflow in {bad.size} world(s) (first: world {bad[0]}, "
                f"{which!r}); physics of those worlds is wrong. Raise the capacity: "
                f"SceneCfg.contacts_per_world (now {self.nconmax}) or "
                f"constraint_rows_per_world (now {self.d.njmax}), or make_data(nconmax=..., "
                "njmax=...)."
            )
