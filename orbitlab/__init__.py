"""orbitlab: robot-learning environments for spacecraft.

MuJoCo multibody dynamics in a chief-centred frame coupled to an absolute
reference orbit, batched over many worlds. The physics core:

    from orbitlab import SimSpec, SurfaceCfg, OrbitInit
    spec = SimSpec.from_xml_path(path)
    model = spec.compile(timestep=0.01)
    data = model.make_data(nworld=4096, orbit=OrbitInit(...))
    data.step()

Importing `orbitlab` (or `orbitlab.orbit`) loads numpy only: the names that need Warp and
MuJoCo (`SimSpec`, `OrbitData`, the element configs, ...) are imported on first use, so a
process that only uses the orbit math or the bridge client pays for neither Warp, MuJoCo nor
torch. Warp starts quietly on its first import by an orbitlab module (`orbitlab.quiet`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports
from orbitlab.orbit.constants import CentralBodyCfg, OrbitInit

if TYPE_CHECKING:
    from orbitlab.sim.data import OrbitData
    from orbitlab.sim.elements import (
        ControlMomentGyroCfg,
        MagneticDipoleCfg,
        MagnetorquerCfg,
        ReactionWheelCfg,
        SurfaceCfg,
        ThrusterCfg,
    )
    from orbitlab.sim.model import OrbitModel
    from orbitlab.sim.spec import OrbitLayerCfg, SimSpec

__version__ = "0.1.0"

_LAZY = {
    "OrbitData": "orbitlab.sim.data",
    "ControlMomentGyroCfg": "orbitlab.sim.elements",
    "MagneticDipoleCfg": "orbitlab.sim.elements",
    "MagnetorquerCfg": "orbitlab.sim.elements",
    "ReactionWheelCfg": "orbitlab.sim.elements",
    "SurfaceCfg": "orbitlab.sim.elements",
    "ThrusterCfg": "orbitlab.sim.elements",
    "OrbitModel": "orbitlab.sim.model",
    "OrbitLayerCfg": "orbitlab.sim.orbit_layer",
    "SimSpec": "orbitlab.sim.spec",
}
"""Public names imported from their module on first access (PEP 562)."""

__all__ = [
    "CentralBodyCfg",
    "ControlMomentGyroCfg",
    "MagneticDipoleCfg",
    "MagnetorquerCfg",
    "OrbitData",
    "OrbitInit",
    "OrbitLayerCfg",
    "OrbitModel",
    "ReactionWheelCfg",
    "SimSpec",
    "SurfaceCfg",
    "ThrusterCfg",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
