"""Managers of a manager-based env, and the configs of their terms.

from orbitlab.managers import RewardTermCfg, SceneEntityCfg
"""

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
    "CurriculumTermCfg",
    "EventTermCfg",
    "ObservationGroupCfg",
    "ObservationTermCfg",
    "RewardTermCfg",
    "SceneEntityCfg",
    "TermCfg",
    "TerminationTermCfg",
]
