"""Which runtime class each actuator and sensor config builds, and name resolution."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from orbitlab.sensors import inertial, navigation
from orbitlab.sensors.camera import Camera, CameraCfg

if TYPE_CHECKING:
    from orbitlab.scene.scene import Scene

ACTUATORS = {
    ThrusterGroupCfg: ThrusterGroup,
    ReactionWheelGroupCfg: ReactionWheelGroup,
    MagnetorquerGroupCfg: MagnetorquerGroup,
    ControlMomentGyroGroupCfg: ControlMomentGyroGroup,
}
SENSORS = {
    inertial.GyroCfg: inertial.Gyro,
    inertial.AccelerometerCfg: inertial.Accelerometer,
    inertial.StarTrackerCfg: inertial.StarTracker,
    inertial.MagnetometerCfg: inertial.Magnetometer,
    inertial.SunSensorCfg: inertial.SunSensor,
    navigation.GnssCfg: navigation.Gnss,
    navigation.RelativeNavCfg: navigation.RelativeNav,
    navigation.RangeBearingCfg: navigation.RangeBearing,
    navigation.DockingLatchCfg: navigation.DockingLatch,
}
TARGETED = (navigation.RelativeNavCfg, navigation.RangeBearingCfg, navigation.DockingLatchCfg)


def register_sensor(cfg_type: type, sensor_type: type) -> None:
    """Make a new sensor config type buildable by scenes."""
    SENSORS[cfg_type] = sensor_type


def make_actuator(cfg, key: str, scene: Scene, entity: str, index: dict[str, dict[str, int]]):
    """Build an actuator group of `entity` from its config."""
    ctx = scene.actuator_context
    if isinstance(cfg, WrenchGroupCfg):
        body = scene.body_id(f"{entity}/{cfg.body}" if cfg.body else entity)
        return WrenchGroup(cfg, key, ctx, body)
    if isinstance(cfg, MujocoActuatorGroupCfg):
        return MujocoActuatorGroup(cfg, key, ctx, _mujoco_actuators(cfg, key, scene, entity))
    group_type = ACTUATORS.get(type(cfg))
    if group_type is None:
        raise ValueError(f"actuator group '{key}': unknown config type {type(cfg).__name__}")
    names = index[group_type.kind]
    selected = list(names) if cfg.elements is None else list(cfg.elements)
    missing = [n for n in selected if n not in names]
    if missing:
        raise ValueError(
            f"actuator group '{key}': no {group_type.kind} named {missing} on "
            f"entity '{entity}' (it has: {', '.join(names) or 'none'})"
        )
    if not selected:
        raise ValueError(f"actuator group '{key}': entity '{entity}' has no {group_type.kind}")
    return group_type(cfg, key, ctx, [names[n] for n in selected])


def _mujoco_actuators(cfg, key: str, scene: Scene, entity: str) -> list[int]:
    m = scene.mj_model
    own = {
        m.actuator(i).name.removeprefix(f"{entity}/"): i
        for i in range(m.nu)
        if m.actuator(i).name.startswith(f"{entity}/")
    }
    selected = list(own) if cfg.elements is None else list(cfg.elements)
    missing = [n for n in selected if n not in own]
    if missing or not selected:
        raise ValueError(
            f"actuator group '{key}': no MJCF actuators named {missing or 'any'} "
            f"on entity '{entity}' (it has: {', '.join(own) or 'none'})"
        )
    return [own[n] for n in selected]


def make_sensor(cfg, key: str, scene: Scene, entity: str, stream: int):
    """Build a sensor of `entity` from its config."""
    if isinstance(cfg, CameraCfg):
        return Camera(cfg, key, scene.view, f"{entity}/{cfg.camera}")
    sensor_type = SENSORS.get(type(cfg))
    if sensor_type is None:
        raise ValueError(f"sensor '{key}': unknown config type {type(cfg).__name__}")
    site = scene.site_id(f"{entity}/{cfg.site}") if cfg.site else -1
    if cfg.body:
        body = scene.body_id(f"{entity}/{cfg.body}")
    elif site >= 0:  # a site alone fixes the sensor to the site's body
        body = int(scene.mj_model.site_bodyid[site])
    else:
        body = scene.body_id(entity)
    kwargs = {}
    if isinstance(cfg, TARGETED):
        if not cfg.target:
            raise ValueError(f"sensor '{key}': target must name an entity or 'entity/body'")
        kwargs["target_body"] = scene.body_id(cfg.target)
        kwargs["target_site"] = scene.site_id(cfg.target_site) if cfg.target_site else -1
        if kwargs["target_site"] >= 0:  # the site's own body carries it
            kwargs["target_body"] = int(scene.mj_model.site_bodyid[kwargs["target_site"]])
    return sensor_type(cfg, key, scene.view, body, stream, site, **kwargs)
