"""What a scene holds: spacecraft, passive objects and markers, as typed configs.

Every entity is one MJCF model (a file, a shipped asset name, or XML text)
attached to the scene under the prefix `<entity name>/`, so its bodies, joints,
sites and cameras are addressed as e.g. `chaser/bus`. Element configs (surfaces,
dipoles, thrusters, wheels, magnetorquers, CMGs) name bodies of the entity's own
MJCF, without the prefix; the scene adds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import mujoco
import numpy as np

from orbitlab.scene.catalog import asset_path
from orbitlab.sim.elements import ElementSet

if TYPE_CHECKING:
    from orbitlab.actuators.base import ActuatorGroupCfg
    from orbitlab.sensors.base import SensorCfg

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


def load_mjcf(mjcf: str, owner: str) -> mujoco.MjSpec:
    """An MjSpec from XML text, a file path, or the name of a shipped asset."""
    from orbitlab.sim.spec import check_finite_attributes

    text = mjcf.strip()
    if text.startswith("<"):
        check_finite_attributes(text, owner)
        return mujoco.MjSpec.from_string(text)
    path = Path(mjcf)
    if not path.is_file():
        try:
            path = asset_path(mjcf)
        except ValueError as error:
            raise ValueError(f"{owner}: mjcf '{mjcf}' is neither XML nor a file; {error}") from None
    check_finite_attributes(path.read_text(errors="replace"), f"{owner} ({path})")
    return mujoco.MjSpec.from_file(str(path))


@dataclass(kw_only=True)
class EntityCfg:
    """An MJCF model placed in the scene."""

    mjcf: str
    """MJCF XML text, a path to an MJCF file, or a shipped asset name (e.g. 'cubesat_3u')."""
    pos_m: Vec3 = (0.0, 0.0, 0.0)
    """Initial root position relative to the chief (world axes = ECI axes), m."""
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    """Initial root orientation (w, x, y, z), body to world."""
    elements: ElementSet = field(default_factory=ElementSet)
    """Orbit-layer elements on the entity's bodies (names without the entity prefix)."""


@dataclass(kw_only=True)
class SpacecraftCfg(EntityCfg):
    """A spacecraft: an MJCF model with its orbit-layer elements, actuators and sensors."""

    actuators: dict[str, ActuatorGroupCfg] = field(default_factory=dict)
    """Actuator groups by name (e.g. 'rcs', 'wheels', 'mtq'); addressed as 'entity/group'."""
    sensors: dict[str, SensorCfg] = field(default_factory=dict)
    """Sensors by name (e.g. 'gyro'); addressed as 'entity/sensor'."""


@dataclass(kw_only=True)
class PassiveObjectCfg(EntityCfg):
    """A passive object (target, debris, docking port): no actuators, no sensors of its own."""


@dataclass(kw_only=True)
class MarkerCfg:
    """A visual-only shape (goal frame, approach corridor), drawn in renders, never simulated.

    Markers are mocap bodies whose geoms have no mass and no contacts, in geom
    group `group` (cameras used as sensors hide that group). Their poses are
    per world: `scene.markers[name].set_pose(...)`.
    """

    shape: Literal["sphere", "box", "capsule", "cylinder", "frame"] = "sphere"
    """Shape; 'frame' draws three axis capsules (x red, y green, z blue)."""
    size_m: tuple[float, ...] = (0.05,)
    """MuJoCo geom size parameters, m (for 'frame': axis length and radius)."""
    rgba: tuple[float, float, float, float] = (0.1, 0.9, 0.1, 0.4)
    """Colour and opacity."""
    pos_m: Vec3 = (0.0, 0.0, 0.0)
    """Initial position relative to the chief, m."""
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    """Initial orientation (w, x, y, z)."""
    group: int = 4
    """Geom group of the marker's geoms (0-5)."""

    def add_to(self, worldbody: mujoco.MjsBody, name: str) -> None:
        """Add the marker as a mocap body named `marker/<name>`."""
        body = worldbody.add_body(name=f"marker/{name}", mocap=True, pos=self.pos_m, quat=self.quat)
        visual = {"contype": 0, "conaffinity": 0, "group": self.group, "mass": 0.0}
        if self.shape == "frame":
            length, radius = (*self.size_m, 0.01)[:2] if len(self.size_m) else (0.1, 0.01)
            for axis, rgba in zip(
                np.eye(3), ((1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1)), strict=True
            ):
                body.add_geom(
                    type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                    size=[radius, 0, 0],
                    fromto=[0, 0, 0, *(length * axis)],
                    rgba=rgba,
                    **visual,
                )
            return
        kinds = {
            "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
            "box": mujoco.mjtGeom.mjGEOM_BOX,
            "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
            "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
        }
        if self.shape not in kinds:
            raise ValueError(
                f"marker '{name}': shape must be one of {[*kinds, 'frame']}, got {self.shape!r}"
            )
        size = [*self.size_m, 0.0, 0.0][:3]
        body.add_geom(type=kinds[self.shape], size=size, rgba=self.rgba, **visual)
