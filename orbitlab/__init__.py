"""orbitlab: robot-learning environments for spacecraft.

MuJoCo multibody dynamics in a chief-centred frame coupled to an absolute
reference orbit, batched over many worlds. The physics core:

    from orbitlab import SimSpec, SurfaceCfg, OrbitInit
    spec = SimSpec.from_xml_path(path)
    model = spec.compile(timestep=0.01)
    data = model.make_data(nworld=4096, orbit=OrbitInit(...))
    data.step()
"""

import warp as _wp

# Hide Warp's start-up banner and per-module load lines (warnings still show);
# set warp.config.log_level = warp.LOG_INFO to see them.
_wp.config.log_level = _wp.LOG_WARNING

from orbitlab.quiet import init_warp as _init_warp

_init_warp()  # no "CUDA driver not found" notice on CPU-only machines (orbitlab.quiet)

from orbitlab.orbit.constants import CentralBodyCfg, OrbitInit
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
