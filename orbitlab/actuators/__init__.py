"""Actuator groups: thrusters, reaction wheels, magnetorquers, CMGs, ideal wrench, joints.

from orbitlab.actuators import ThrusterGroupCfg, ReactionWheelGroupCfg
"""

from orbitlab.actuators.allocation import AllocationResult, ThrusterAllocator
from orbitlab.actuators.base import ActuatorGroup, ActuatorGroupCfg, FailureCfg
from orbitlab.actuators.joints import MujocoActuatorGroup, MujocoActuatorGroupCfg
from orbitlab.actuators.momentum import (
    ControlMomentGyroGroup,
    ControlMomentGyroGroupCfg,
    MagnetorquerGroup,
    MagnetorquerGroupCfg,
    ReactionWheelGroup,
    ReactionWheelGroupCfg,
)
from orbitlab.actuators.thrusters import ThrusterGroup, ThrusterGroupCfg
from orbitlab.actuators.wrench import WrenchGroup, WrenchGroupCfg

__all__ = [
    "ActuatorGroup",
    "ActuatorGroupCfg",
    "AllocationResult",
    "ControlMomentGyroGroup",
    "ControlMomentGyroGroupCfg",
    "FailureCfg",
    "MagnetorquerGroup",
    "MagnetorquerGroupCfg",
    "MujocoActuatorGroup",
    "MujocoActuatorGroupCfg",
    "ReactionWheelGroup",
    "ReactionWheelGroupCfg",
    "ThrusterAllocator",
    "ThrusterGroup",
    "ThrusterGroupCfg",
    "WrenchGroup",
    "WrenchGroupCfg",
]
