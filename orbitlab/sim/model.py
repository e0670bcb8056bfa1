"""The compiled orbit-coupled model: a MuJoCo model plus validated element tables."""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from orbitlab.orbit.constants import OrbitInit
from orbitlab.orbit.types import CentralBody, central_body_struct
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.data import OrbitData
from orbitlab.sim.orbit_layer import LOAD_SWITCHES, OrbitLayerCfg
from orbitlab.sim.records import Elements, Switches
from orbitlab.sim.schema import ELEMENT_KINDS


class OrbitModel:
    """A compiled orbit-coupled model shared by every world.

    Attributes:
        mj_model: the MuJoCo model (uniform gravity zeroed).
        orbit: a private copy of the orbit-layer config it was compiled from.
        rows: validated element rows by kind (body ids, normalised axes, limits).
        orbit_substeps, segment_steps: the chief schedule derived from orbit_dt.
    """

    def __init__(self, mj_model: mujoco.MjModel, orbit: OrbitLayerCfg):
        self.mj_model = mj_model
        self.orbit = copy.deepcopy(orbit)
        self.central_body: CentralBody = central_body_struct(self.orbit.central_body)
        self.rows = self.orbit.elements.resolve(mj_model)
        self.orbit_substeps, self.segment_steps = self.orbit.schedule(mj_model.opt.timestep)
        if not np.any(mj_model.body_mass > 0.0):
            raise ValueError("the model has no body with positive mass")

    @property
    def timestep(self) -> float:
        """MuJoCo timestep, s."""
        return float(self.mj_model.opt.timestep)

    def count(self, kind: str) -> int:
        """Number of elements of a kind ('surfaces', 'thrusters', 'wheels', ...)."""
        return len(self.rows[kind])

    def switches(self) -> Switches:
        sw = Switches()
        for name in LOAD_SWITCHES:
            setattr(sw, name, int(bool(getattr(self.orbit, name))))
        sw.penumbra = int(bool(self.orbit.use_penumbra))
        sw.timestep = self.timestep
        sw.orbit_substeps = self.orbit_substeps
        sw.segment_steps = self.segment_steps
        sw.from_qpos = 0
        sw.to_qfrc = 0
        sw.stage = 0
        return sw

    def elements(self, device: str) -> Elements:
        """The element tables as a Warp record on `device`."""
        el = Elements()
        for kind in ELEMENT_KINDS:
            rows = self.rows[kind.name]
            for column in kind.columns:
                values = np.array([row[column.key] for row in rows])
                if column.dtype is wp.vec3d:
                    values = values.reshape(len(rows), 3).astype(np.float64)
                elif column.dtype is int:
                    values = values.astype(np.int32)
                else:
                    values = values.astype(np.float64)
                setattr(el, column.field, wp.array(values, dtype=column.dtype, device=device))
        return el

    def make_data(
        self,
        nworld: int = 1,
        orbit: OrbitInit | list[OrbitInit] | None = None,
        nthread: int = 0,
        backend: str = "cpu",
        kernel_threads: int = 0,
        device: str | None = None,
        specialize: bool | None = None,
        **backend_options,
    ):
        """Allocate `nworld` worlds, each starting on `orbit` (one, or one per world).

        Args:
            nworld: number of parallel worlds.
            orbit: initial chief state(s); None is a 400 km circular equatorial orbit.
            nthread: CPU threads for MuJoCo's batch (0: all cores).
            backend: 'cpu' (mujoco.batch, float64) or 'warp' (MuJoCo-Warp, float32
                multibody state, float64 orbit layer; extra `warp`).
            kernel_threads: CPU threads for the orbit-layer kernel (0: all cores);
                worlds are split in contiguous chunks, results are identical for
                any count.
            device: Warp device of the 'warp' backend ('cuda:0', 'cpu'; default: a GPU
                when there is one).
            specialize: compile the orbit-layer kernel for this model's element counts
                and switches (faster steps, bit-identical results; a few seconds of
                compilation once per distinct model, cached on disk). None: from
                `orbitlab.sim.data.SPECIALIZE_MIN_WORLDS` (1024) worlds up.
            backend_options: 'warp' only: nconmax, njmax (contacts and constraint
                rows per world; by default sized from the scene's geom pairs).
        """
        return OrbitData(
            self,
            nworld=nworld,
            orbit=orbit,
            nthread=nthread,
            backend=backend,
            kernel_threads=kernel_threads,
            device=device,
            specialize=specialize,
            **backend_options,
        )
