"""Compile a scene's entities and markers into one MjSpec and one element set.

Each entity's MJCF is attached under a frame at its initial pose with the
prefix `<entity>/`; its elements are copied with prefixed names and bodies.
The result is one model that every world shares.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import mujoco
import numpy as np

from orbitlab.scene.entities import EntityCfg, MarkerCfg, load_mjcf
from orbitlab.scene.welds import WeldCfg
from orbitlab.sim.elements import ElementSet


@dataclass
class CompiledScene:
    """The assembled MjSpec, merged elements and where each entity's pieces went."""

    mj_spec: mujoco.MjSpec
    elements: ElementSet
    roots: dict[str, str] = field(default_factory=dict)
    """Entity name -> prefixed name of its root body."""
    element_index: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Entity -> element kind -> unprefixed element name -> index within the kind."""


def _check_name(kind: str, name: str) -> None:
    if not name or "/" in name:
        raise ValueError(f"{kind} name {name!r} must be non-empty and contain no '/'")


def assemble(
    entities: dict[str, EntityCfg],
    markers: dict[str, MarkerCfg],
    timestep_s: float,
    welds: dict[str, WeldCfg] | None = None,
) -> CompiledScene:
    """Attach every entity under its prefix, add the welds between them and the markers
    as mocap bodies."""
    if not entities:
        raise ValueError("a scene needs at least one entity")
    root = mujoco.MjSpec()
    root.option.timestep = timestep_s
    merged = ElementSet()
    compiled = CompiledScene(mj_spec=root, elements=merged)
    for name, entity in entities.items():
        _check_name("entity", name)
        child = load_mjcf(entity.mjcf, f"entity '{name}'")
        child.option.timestep = timestep_s
        first = child.worldbody.first_body()
        if first is None:
            raise ValueError(f"entity '{name}': its MJCF has no body under the worldbody")
        compiled.roots[name] = f"{name}/{first.name}"
        frame = root.worldbody.add_frame(pos=list(entity.pos_m), quat=list(entity.quat))
        root.attach(child, frame=frame, prefix=f"{name}/")
        for sensor_name, sensor in getattr(entity, "sensors", {}).items():
            sensor.add_to_spec(root, name, sensor_name)
        compiled.element_index[name] = _merge_elements(name, entity.elements, merged)
    for name, weld in (welds or {}).items():
        weld.add_to(root, name)
    for name, marker in markers.items():
        _check_name("marker", name)
        marker.add_to(root.worldbody, name)
    _add_viewer(root)
    return compiled


def _add_viewer(root: mujoco.MjSpec, distance_m: float = 6.0) -> None:
    """A fixed camera 'viewer' looking at the chief origin from (-1, -1, 0.6) * distance."""
    eye = np.array([-1.0, -1.0, 0.6]) * distance_m / np.sqrt(2.36)
    forward = -eye / np.linalg.norm(eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    root.worldbody.add_camera(name="viewer", pos=eye, xyaxes=[*right, *up], fovy=50.0)


def _merge_elements(
    entity: str, elements: ElementSet, merged: ElementSet
) -> dict[str, dict[str, int]]:
    """Append an entity's elements with prefixed names and bodies; return their indices."""
    index: dict[str, dict[str, int]] = {}
    for kind, items in vars(elements).items():
        target = getattr(merged, kind)
        index[kind] = {}
        for item in items:
            prefixed = copy.copy(item)
            prefixed.name = f"{entity}/{item.name}"
            prefixed.body_name = f"{entity}/{item.body_name}"
            index[kind][item.name] = len(target)
            target.append(prefixed)
    return index
