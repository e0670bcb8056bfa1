"""The orbit side: constants, environment models, frames and chief propagation.

Pure math on arrays (numpy on the host, Warp functions for the kernels); nothing here
imports MuJoCo or torch. Units: km, km/s, s, float64.

    from orbitlab.orbit import OrbitInit, coe_to_rv, eci_to_hill
"""

from orbitlab.orbit.constants import CentralBodyCfg, OrbitInit
from orbitlab.orbit.frames import (
    OrbitalElements,
    coe_to_rv,
    cw_propagate,
    cw_state_transition,
    eci_to_hill,
    hill_to_eci,
    lvlh_angular_velocity,
    lvlh_rotation,
    mean_motion,
    orbital_period,
    rv_to_coe,
)

__all__ = [
    "CentralBodyCfg",
    "OrbitInit",
    "OrbitalElements",
    "coe_to_rv",
    "cw_propagate",
    "cw_state_transition",
    "eci_to_hill",
    "hill_to_eci",
    "lvlh_angular_velocity",
    "lvlh_rotation",
    "mean_motion",
    "orbital_period",
    "rv_to_coe",
]
