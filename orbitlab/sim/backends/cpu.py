"""CPU backend: all worlds in one `mujoco.batch.Batch` (float64, thread pool).

The batch is not persistent: it keeps each world's state row and loads it into a
per-thread MjData for each call, so memory scales with threads rather than
worlds (1.7x faster steps at 4096 worlds than one MjData per world, measured on
the 2-core reference machine, and ~0.4 GB instead of ~1.8 GB). A derived field
bound for the first time is filled at the current state right away.

The batch copies each bound output field (xipos, xmat,
cvel, ...) out of every world after every call, which costs ~20% of a step for
three fields; so when every body is a free-floating root the kernel reads the
state rows qpos/qvel (live views, no copies), derives the kinematics itself
and MuJoCo steps plainly. Otherwise xipos, xmat, cvel (and subtree_com for
articulated drag) are bound and each step ends with stage mjSTAGE_VEL so that
they describe the new state. The Warp arrays wrap these numpy views without
copies, as they wrap MuJoCo's `xfrc_applied` state rows (strided, written in
place by the kernel). Every user-facing array is a live numpy view.
"""

from __future__ import annotations

import mujoco
import numpy as np
from mujoco import batch as mjbatch

from orbitlab.quiet import wp  # Warp, started quietly

BODY_FIELDS = {
    "xipos": wp.vec3d,
    "xmat": wp.mat33d,
    "cvel": wp.spatial_vectord,
    "subtree_com": wp.vec3d,
    "xfrc_applied": wp.spatial_vectord,
    "qpos": wp.float64,
    "qvel": wp.float64,
    "qfrc_applied": wp.float64,
    "qacc": wp.float64,
    "time": wp.float64,
}
# MjData fields held in the batch's state rows (live views, never outputs).
STATE_FIELDS = frozenset(
    (
        "qpos",
        "qvel",
        "act",
        "history",
        "qacc_warmstart",
        "ctrl",
        "qfrc_applied",
        "xfrc_applied",
        "eq_active",
        "mocap_pos",
        "mocap_quat",
        "userdata",
        "plugin_state",
        "plastic",
        "time",
    )
)
UNSTABLE_WARNINGS = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)
"""MuJoCo warnings after which it resets a world to its initial state by itself."""
_UNSTABLE_COLUMNS = np.array([int(w) for w in UNSTABLE_WARNINGS])
_NO_WORLDS = np.empty(0, dtype=np.intp)
_NO_WORLDS.flags.writeable = False
MODEL_FIELDS = {"body_mass": wp.float64, "body_inertia": wp.vec3d, "body_ipos": wp.vec3d}
ACCELERATION_OUTPUTS = frozenset(
    (
        "qacc",
        "qacc_smooth",
        "qfrc_smooth",
        "qfrc_constraint",
        "qfrc_actuator",
        "actuator_force",
        "efc_force",
        "cacc",
        "cfrc_int",
        "cfrc_ext",
        "sensordata",
    )
)
"""MjData outputs of MuJoCo's actuation and acceleration stages, which `kinematics` does not
recompute: the batch copies every bound output after each call, from per-thread scratch
data that then holds another world's values, so `kinematics` puts these back."""


def wrap(array: np.ndarray, dtype) -> wp.array:
    """A Warp view of a numpy array whose trailing axis (or two) is `dtype`."""
    return wp.array(array, dtype=dtype, device="cpu", copy=False)


def principal_axes_rotations(mj_model: mujoco.MjModel) -> np.ndarray:
    """(1, nbody, 9): body-from-principal-inertia rotation of each body (from body_iquat)."""
    irot = np.zeros((1, mj_model.nbody, 9))
    for b in range(mj_model.nbody):
        mujoco.mju_quat2Mat(irot[0, b], mj_model.body_iquat[b])
    return irot


class CpuBackend:
    """MuJoCo's batched CPU simulation behind the backend interface."""

    device = "cpu"
    loads_as_generalized_forces = True
    """Free-floating scenes get their loads as qfrc_applied (see `OrbitData`; MuJoCo's own
    mapping of xfrc_applied costs ~20% of a free body's step here)."""
    per_world_calls = True
    """`forward`, `kinematics` and `step` can run a subset of the worlds (`ids`)."""

    def __init__(self, mj_model: mujoco.MjModel, nworld: int, nthread: int = 0):
        self.mj_model = mj_model
        self.nworld = nworld
        self.batch = mjbatch.Batch(mj_model, nworld, nthread=nthread)
        self._bound: set[str] = set()
        self._bound_acceleration: list[np.ndarray] = []
        """The bound `ACCELERATION_OUTPUTS` (live arrays), which `kinematics` keeps."""
        self._instability_seen = np.zeros(nworld, dtype=np.int64)
        self.model = {
            name: wrap(getattr(mj_model, name)[None], dtype) for name, dtype in MODEL_FIELDS.items()
        }
        self.model["body_irot"] = wrap(principal_axes_rotations(mj_model), wp.mat33d)

    def alloc(self, shape: tuple[int, ...], dtype) -> wp.array:
        """A zeroed Warp array on the CPU; `native` gives a zero-copy numpy view of it."""
        return wp.zeros(shape, dtype=dtype, device="cpu")

    @staticmethod
    def native(array: wp.array) -> np.ndarray:
        """A live numpy view (Warp CPU arrays share their memory with numpy)."""
        return array.numpy()

    def body_field(self, name: str) -> wp.array:
        """A Warp view of a bound (nworld, ...) MjData field (bound on first use)."""
        return wrap(self.bind(name), BODY_FIELDS[name])

    @staticmethod
    def placeholder(name: str) -> wp.array:
        """A (1, 1) stand-in for a body field the kernel will not read."""
        return wp.zeros((1, 1), dtype=BODY_FIELDS[name], device="cpu")

    def bind(self, name: str) -> np.ndarray:
        """A live (nworld, ...) array over an MjData field (see `mujoco.batch.Batch.bind`).

        An output field bound for the first time is computed at the current state
        (mj_forward), so that it never reads as zeros until the next call.
        """
        first = name not in self._bound and name not in STATE_FIELDS
        array = self.batch.bind(name)
        self._bound.add(name)
        if first and name in ACCELERATION_OUTPUTS:
            self._bound_acceleration.append(array)
        if first:
            self.batch.forward()
        return array

    def bound_outputs(self) -> list[str]:
        """The MjData output fields bound so far (e.g. 'qacc'), sorted: the fields that
        describe the last call and that exact-state capture must carry."""
        return sorted(self._bound - set(STATE_FIELDS))

    def expanded_fields(self) -> dict[str, np.ndarray]:
        """Model fields with per-world values (by `expand` or MuJoCo's set_const), by name:
        read-only (nworld, ...) arrays (`mujoco.batch.Batch.expanded`)."""
        fields = {name: self.batch.expanded(name) for name in sorted(mjbatch.MODEL_FIELDS)}
        return {name: values for name, values in fields.items() if values is not None}

    def expand(self, name: str) -> np.ndarray:
        """Give model field `name` per-world values; return the live (nworld, ...) array."""
        values = self.batch.expand(name)
        if name in MODEL_FIELDS:
            self.model[name] = wrap(values, MODEL_FIELDS[name])
        return values

    def forward(self, ids: np.ndarray | None = None) -> None:
        """MuJoCo's forward dynamics (mj_forward) of worlds `ids` (None: all)."""
        self.batch.forward(ids=ids)

    def kinematics(self, ids: np.ndarray | None = None) -> None:
        """Position- and velocity-derived fields (xipos, xmat, cvel, ...) of worlds `ids`
        at their current state (forward stages up to mjSTAGE_VEL); the bound outputs of the
        later stages (`ACCELERATION_OUTPUTS`, e.g. qacc) keep their values."""
        rows = slice(None) if ids is None else ids
        kept = [(array, array[rows].copy()) for array in self._bound_acceleration]
        self.batch.forward(ids=ids, stage=mujoco.mjtStage.mjSTAGE_VEL)
        for array, values in kept:
            writable = array.flags.writeable
            array.flags.writeable = True  # a read-only output view: restore what we copied
            try:
                array[rows] = values
            finally:
                array.flags.writeable = writable

    def step(self, derived: bool = True, worlds: np.ndarray | None = None) -> None:
        """One MuJoCo step of every world (or of `worlds` only).

        Args:
            derived: leave position/velocity-derived fields current at the new state
                (stage mjSTAGE_VEL); otherwise they describe the state before the
                step, as after mj_step, which spares ~25% of MuJoCo's work per step.
            worlds: the worlds to step (None: all).
        """
        if worlds is not None and not len(worlds):
            return
        if derived:
            self.batch.step(ids=worlds, stage=mujoco.mjtStage.mjSTAGE_VEL)
        else:
            self.batch.step(ids=worlds)

    def _instability_counts(self) -> np.ndarray:
        """(nworld,) how often MuJoCo reset each world for a bad qpos, qvel or qacc."""
        return self.batch.warning[:, _UNSTABLE_COLUMNS, 1].sum(axis=1)

    def unstable_worlds(self) -> np.ndarray:
        """The worlds MuJoCo found unstable (and reset) since the last call or clear."""
        counts = self._instability_counts()
        fresh = counts > self._instability_seen
        self._instability_seen = counts
        return np.flatnonzero(fresh) if fresh.any() else _NO_WORLDS

    def clear_unstable(self, ids: np.ndarray | None) -> None:
        """Forget earlier instabilities of `ids` (after a reset)."""
        self.unstable_worlds()

    def reset(self, ids: np.ndarray | None) -> None:
        self.batch.reset(ids=ids, stage=mujoco.mjtStage.mjSTAGE_NONE)

    def check(self) -> None:
        """Nothing to check: mujoco.batch raises SimulationError itself."""
