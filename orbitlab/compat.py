"""Names of the reference system's API (mjorbit) on top of orbitlab's own.

Lets a script written for that API run with only its import lines changed:

    from orbitlab.compat import MagneticBodySpec, MjoSpec, OrbitInit, SurfaceSpec, \
        mjo_forward, mjo_step
    from orbitlab.testdata import FREE_BODY_XML

orbitlab's own names are `SimSpec` (its orbit layer is `spec.orbit`),
`SurfaceCfg`, `MagneticDipoleCfg`, `OrbitModel.make_data` and `OrbitData.step`.
"""

from __future__ import annotations

from orbitlab.orbit.constants import OrbitInit
from orbitlab.sim.data import OrbitData
from orbitlab.sim.elements import MagneticDipoleCfg as MagneticBodySpec
from orbitlab.sim.elements import SurfaceCfg as SurfaceSpec
from orbitlab.sim.model import OrbitModel
from orbitlab.sim.spec import OrbitLayerCfg, SimSpec

__all__ = ["MagneticBodySpec", "MjoSpec", "OrbitInit", "SurfaceSpec", "mjo_forward", "mjo_step"]


class MjoSpec(SimSpec):
    """`SimSpec` with the reference's attribute and keyword names."""

    @property
    def mjorbit(self) -> OrbitLayerCfg:
        """The orbit layer (orbitlab: `spec.orbit`)."""
        return self.orbit

    def compile(
        self, timestep: float | None = None, *, mj_timestep: float | None = None
    ) -> OrbitModel:
        return super().compile(timestep=mj_timestep if mj_timestep is not None else timestep)


def mjo_forward(model: OrbitModel, data: OrbitData) -> None:
    """Refresh derived quantities and loads for the current state (`data.forward()`)."""
    del model
    data.forward()


def mjo_step(model: OrbitModel, data: OrbitData) -> None:
    """One orbit-coupled step of every world (`data.step()`)."""
    del model
    data.step()
