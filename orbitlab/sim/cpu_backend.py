"""CPU backend: all worlds in one `mujoco.batch.Batch` (float64, thread pool).

The batch is persistent and steps with `stage=mjSTAGE_VEL`, so position- and
velocity-derived fields (xipos, xmat, ximat, cvel, subtree_com) describe the
current state after every step at no extra cost. Those bound fields are copied
out by the batch after each call into stable arrays; the Warp arrays here wrap
them without copies, as they wrap MuJoCo's `xfrc_applied` state rows (strided,
written in place by the loads kernel).
"""

from __future__ import annotations

import mujoco
import numpy as np
import warp as wp
from mujoco import batch as mjbatch

_BODY_FIELDS = {"xipos": wp.vec3d, "xmat": wp.mat33d, "ximat": wp.mat33d,
                "cvel": wp.spatial_vectord, "subtree_com": wp.vec3d,
                "xfrc_applied": wp.spatial_vectord}
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
        self.body = {name: wrap(self.batch.bind(name), dtype)
                     for name, dtype in _BODY_FIELDS.items()}
        self.model = {name: wrap(getattr(mj_model, name)[None], dtype)
                      for name, dtype in _MODEL_FIELDS.items()}
        self.body_rootid = wp.array(mj_model.body_rootid.astype(np.int32), dtype=int,
                                    device="cpu")

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

    def step(self) -> None:
        self.batch.step(stage=mujoco.mjtStage.mjSTAGE_VEL)

    def reset(self, ids: np.ndarray | None) -> None:
        self.batch.reset(ids=ids, stage=mujoco.mjtStage.mjSTAGE_NONE)

    def check_errors(self) -> None:
        """Raise if any world reported a simulation error in the last call."""
        for sim in range(self.batch.nsim):
            message = self.batch.error(sim)
            if message:
                raise RuntimeError(f"world {sim}: {message}")
