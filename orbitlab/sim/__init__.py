"""The orbit-coupled simulation: spec -> model -> batched data, on the cpu or warp backend.

from orbitlab.sim import SimSpec, SurfaceCfg
data = SimSpec.from_xml_path(path).compile(timestep=0.1).make_data(nworld=1024)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports

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

_EXPORTS = {
    "ControlMomentGyroCfg": "orbitlab.sim.elements",
    "MagneticDipoleCfg": "orbitlab.sim.elements",
    "MagnetorquerCfg": "orbitlab.sim.elements",
    "OrbitData": "orbitlab.sim.data",
    "OrbitLayerCfg": "orbitlab.sim.spec",
    "OrbitModel": "orbitlab.sim.model",
    "ReactionWheelCfg": "orbitlab.sim.elements",
    "SimSpec": "orbitlab.sim.spec",
    "SurfaceCfg": "orbitlab.sim.elements",
    "ThrusterCfg": "orbitlab.sim.elements",
}
"""Public name -> the module it is imported from on first access."""

__all__ = [
    "ControlMomentGyroCfg",
    "MagneticDipoleCfg",
    "MagnetorquerCfg",
    "OrbitData",
    "OrbitLayerCfg",
    "OrbitModel",
    "ReactionWheelCfg",
    "SimSpec",
    "SurfaceCfg",
    "ThrusterCfg",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
