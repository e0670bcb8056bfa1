"""The world: entity configs compiled into one scene replicated over every world.

from orbitlab.scene import Scene, SceneCfg, SpacecraftCfg
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitlab.lazy import lazy_exports

if TYPE_CHECKING:
    from orbitlab.scene.entities import EntityCfg, MarkerCfg, PassiveObjectCfg, SpacecraftCfg
    from orbitlab.scene.handles import EntityData, EntityHandle, MarkerHandle
    from orbitlab.scene.scene import Scene, SceneCfg

_EXPORTS = {
    "EntityCfg": "orbitlab.scene.entities",
    "EntityData": "orbitlab.scene.handles",
    "EntityHandle": "orbitlab.scene.handles",
    "MarkerCfg": "orbitlab.scene.entities",
    "MarkerHandle": "orbitlab.scene.handles",
    "PassiveObjectCfg": "orbitlab.scene.entities",
    "Scene": "orbitlab.scene.scene",
    "SceneCfg": "orbitlab.scene.scene",
    "SpacecraftCfg": "orbitlab.scene.entities",
}
"""Public name -> the module it is imported from on first access."""

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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
