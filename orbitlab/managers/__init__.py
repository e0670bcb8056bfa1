"""Managers of a manager-based env, and the configs of their terms.

from orbitlab.managers import RewardTermCfg, SceneEntityCfg
"""

from orbitlab.managers.action_manager import (
    ActionTerm,
    ActionTermCfg,
    ActuatorActionCfg,
    GraphInputActionCfg,
    ThrusterForceActionCfg,
    ThrusterWrenchActionCfg,
)
from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.managers.terms import (
    CurriculumTermCfg,
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TermCfg,
    TerminationTermCfg,
)

__all__ = [
    "ActionTerm",
    "ActionTermCfg",
    "ActuatorActionCfg",
    "CommandTerm",
    "CommandTermCfg",
    "CurriculumTermCfg",
    "EventTermCfg",
    "GraphInputActionCfg",
    "ObservationGroupCfg",
    "ObservationTermCfg",
    "RewardTermCfg",
    "SceneEntityCfg",
    "TermCfg",
    "TerminationTermCfg",
    "ThrusterForceActionCfg",
    "ThrusterWrenchActionCfg",
]
