"""The orbit-coupled simulation: spec -> model -> batched data, on the cpu or warp backend.

from orbitlab.sim import SimSpec, SurfaceCfg
data = SimSpec.from_xml_path(path).compile(timestep=0.1).make_data(nworld=1024)
"""

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
