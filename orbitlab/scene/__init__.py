"""The world: entity configs compiled into one scene replicated over every world.

from orbitlab.scene import Scene, SceneCfg, SpacecraftCfg
"""

from orbitlab.scene.entities import EntityCfg, MarkerCfg, PassiveObjectCfg, SpacecraftCfg
from orbitlab.scene.handles import EntityData, EntityHandle, MarkerHandle
from orbitlab.scene.scene import Scene, SceneCfg

__all__ = [
    "EntityCfg",
    "EntityData",
    "EntityHandle",
    "MarkerCfg",
    "MarkerHandle",
    "PassiveObjectCfg",
    "Scene",
    "SceneCfg",
    "SpacecraftCfg",
]
