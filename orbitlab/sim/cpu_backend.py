"""CPU backend: all worlds in one `mujoco.batch.Batch` (float64, thread pool).

The batch is persistent and steps with `stage=mjSTAGE_VEL`, so position- and
velocity-derived fields (xipos, xmat, cvel, ...) describe the current state after
every step at no extra cost. The batch copies each bound output field out of
every world after every call, which costs ~20% of a step for three fields; so
when every body is a free-floating root the kernel reads the state rows
qpos/qvel (live views, no copies) and derives the kinematics itself, and only
otherwise binds xipos, xmat, cvel (and subtree_com for articulated drag). The
Warp arrays wrap these numpy views without copies, as they wrap MuJoCo's
`xfrc_applied` state rows (strided, written in place by the kernel).
"""

from __future__ import annotations

import mujoco
import numpy as np
import warp as wp
from mujoco import batch as mjbatch

_BODY_FIELDS = {"xipos": wp.vec3d, "xmat": wp.mat33d, "cvel": wp.spatial_vectord,
                "subtree_com": wp.vec3d, "xfrc_applied": wp.spatial_vectord,
                "qpos": wp.float64, "qvel": wp.float64}
_MODEL_FIELDS = {"body_mass": wp.float64, "body_inertia": wp.vec3d, "body_ipos": wp.vec3d}


def wrap(array: np.ndarray, dtype) -> wp.array:
    """A Warp view of a float64 numpy array whose trailing axis (or two) is `dtype`."""
    return wp.array(array, dtype=dtype, device="cpu", copy=False)


class CpuBackend:
    """MuJoCo's batched CPU simulation behind the backend interface."""

    device = "cpu"

    def __init__(self, mj_model: mujoco.MjModel, nworld: int, nthread: int = 0):
        self.mj_model = mj_model
        self.batch = mjbatch.Batch(mj_model, nworld, nthread=nthread, persistent=True)
        self.model = {name: wrap(getattr(mj_model, name)[None], dtype)
                      for name, dtype in _MODEL_FIELDS.items()}
        irot = np.zeros((1, mj_model.nbody, 9))
        for b in range(mj_model.nbody):
            mujoco.mju_quat2Mat(irot[0, b], mj_model.body_iquat[b])
        self.model["body_irot"] = wrap(irot, wp.mat33d)

    def body_field(self, name: str) -> wp.array:
        """A Warp view of a bound (nworld, ...) MjData field (bound on first use)."""
        return wrap(self.batch.bind(name), _BODY_FIELDS[name])

    @staticmethod
    def placeholder(name: str) -> wp.array:
        """A (1, 1) stand-in for a body field the kernel will not read."""
        dtype = _BODY_FIELDS[name]
        return wp.zeros((1, 1), dtype=dtype, device="cpu")

    def bind(self, name: str) -> np.ndarray:
        """A live (nworld, ...) array over an MjData field (see `mujoco.batch.Batch.bind`)."""
        return self.batch.bind(name)

    def expand(self, name: str) -> np.ndarray:
        """Give model field `name` per-world values; return the live (nworld, ...) array."""
        values = self.batch.expand(name)
        if name in _MODEL_FIELDS:
            self.model[name] = wrap(values, _MODEL_FIELDS[name])
        return values

    def forward(self) -> None:
        self.batch.forward()

    def step(self, derived: bool = True) -> None:
        """One MuJoCo step of every world.

        Args:
            derived: leave position/velocity-derived fields current at the new state
                (stage mjSTAGE_VEL); otherwise they describe the state before the
                step, as after mj_step, which spares ~25% of MuJoCo's work per step.
        """
        if derived:
            self.batch.step(stage=mujoco.mjtStage.mjSTAGE_VEL)
        else:
            self.batch.step()

    def reset(self, ids: np.ndarray | None) -> None:
        self.batch.reset(ids=ids, stage=mujoco.mjtStage.mjSTAGE_NONE)

    def check_errors(self) -> None:
        """Raise if any world reported a simulation error in the last call."""
        for sim in range(self.batch.nsim):
            message = self.batch.error(sim)
            if message:
                raise RuntimeError(f"world {sim}: {message}")
