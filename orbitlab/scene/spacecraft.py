"""Ready-made entity configs of the bundled assets, with their actuators and sensors.

Each factory returns a fresh config (edit it freely): the MJCF asset, its
orbit-layer elements from `catalog.py`, actuator groups and a sensor suite
with representative rates and noise (values typical of CubeSat-class and
small-satellite hardware; every number carries its unit).
"""

from __future__ import annotations

from orbitlab.actuators.joints import MujocoActuatorGroupCfg
from orbitlab.actuators.momentum import (
    ControlMomentGyroGroupCfg,
    MagnetorquerGroupCfg,
    ReactionWheelGroupCfg,
)
from orbitlab.actuators.thrusters import ThrusterGroupCfg
from orbitlab.scene import catalog
from orbitlab.scene.entities import PassiveObjectCfg, Quat, SpacecraftCfg, Vec3
from orbitlab.sensors.base import SensorCfg
from orbitlab.sensors.inertial import GyroCfg, MagnetometerCfg, StarTrackerCfg, SunSensorCfg
from orbitlab.sensors.manipulator import WristForceTorqueCfg
from orbitlab.sensors.navigation import DockingLatchCfg, GnssCfg, RelativeNavCfg

ARCSEC = 4.84813681109536e-06
"""One arcsecond, rad."""


def attitude_sensors(star_tracker_period_s: float = 0.1) -> dict[str, SensorCfg]:
    """Gyro (100 Hz), magnetometer (10 Hz), sun sensor (10 Hz), star tracker, GNSS (1 Hz)."""
    return {
        "gyro": GyroCfg(site="imu", std=1e-4, bias_std=2e-5, bias_walk_std=1e-6),
        "magnetometer": MagnetometerCfg(site="imu", period_s=0.1, std=1e-7),
        "sun_sensor": SunSensorCfg(
            site="sun_sensor", period_s=0.1, std=2e-3, fov_half_angle_rad=1.05
        ),
        "star_tracker": StarTrackerCfg(
            site="star_tracker",
            period_s=star_tracker_period_s,
            std=(5 * ARCSEC, 5 * ARCSEC, 40 * ARCSEC),
        ),
        "gnss": GnssCfg(site="gnss", period_s=1.0, std=(3.0,) * 3 + (0.05,) * 3),
    }


def _cubesat(asset: str, pos_m: Vec3) -> SpacecraftCfg:
    return SpacecraftCfg(
        mjcf=asset,
        pos_m=pos_m,
        elements=catalog.asset_elements(asset),
        actuators={
            "wheels": ReactionWheelGroupCfg(time_constant_s=0.02, viscous_nms=1e-8),
            "mtq": MagnetorquerGroupCfg(time_constant_s=0.01),
        },
        sensors=attitude_sensors(),
    )


def cubesat_3u(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """3U CubeSat: three wheels (2e-5 kg m^2, 1e-3 N m), three 0.2 A m^2 magnetorquers."""
    return _cubesat("cubesat_3u", pos_m)


def cubesat_6u(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """6U CubeSat with deployed wings: three wheels and three magnetorquers."""
    return _cubesat("cubesat_6u", pos_m)


def formation_flyer(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """The formation free-flyer: 17.8 kg, 12 x 1.5 N thrusters on 10 Hz PWM (1 ms minimum)."""
    return SpacecraftCfg(
        mjcf="formation_flyer",
        pos_m=pos_m,
        elements=catalog.formation_flyer_elements(),
        actuators={"rcs": ThrusterGroupCfg(pwm_period_s=0.1, min_on_time_s=0.001)},
        sensors={
            "gyro": GyroCfg(site="imu", std=1e-4),
            "star_tracker": StarTrackerCfg(site="star_tracker", period_s=0.1, std=10 * ARCSEC),
            "gnss": GnssCfg(site="gnss", period_s=1.0, std=(3.0,) * 3 + (0.05,) * 3),
        },
    )


def docking_chaser(
    target: str = "target", pos_m: Vec3 = (20.0, 0.0, 0.0), quat: Quat = (0.0, 0.0, 0.0, 1.0)
) -> SpacecraftCfg:
    """Docking chaser: 16 x 22 N RCS (10 Hz PWM), three wheels, relative navigation to the
    target's port and a docking latch sensor on its probe. By default it waits 20 m out
    on +x, turned to face a target at the origin whose port looks along +x."""
    sensors = attitude_sensors()
    sensors["relative_nav"] = RelativeNavCfg(
        site="imu",
        target=target,
        target_site=f"{target}/port",
        period_s=0.1,
        std=(0.005,) * 3 + (0.001,) * 3 + (0.002,) * 3,
        range_noise_per_m=0.01,
    )
    sensors["latch"] = DockingLatchCfg(
        site="probe_tip", target=target, target_site=f"{target}/port"
    )
    return SpacecraftCfg(
        mjcf="docking_chaser",
        pos_m=pos_m,
        quat=quat,
        elements=catalog.docking_chaser_elements(),
        actuators={
            "rcs": ThrusterGroupCfg(pwm_period_s=0.1, min_on_time_s=0.01),
            "wheels": ReactionWheelGroupCfg(time_constant_s=0.05),
        },
        sensors=sensors,
    )


def docking_target(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> PassiveObjectCfg:
    """Docking target with a port on +x (the port site's +z points out of the port)."""
    return PassiveObjectCfg(
        mjcf="docking_target", pos_m=pos_m, elements=catalog.docking_target_elements()
    )


def client_sat(
    pos_m: Vec3 = (0.0, 0.0, 0.0), quat: Quat = (1.0, 0.0, 0.0, 0.0)
) -> PassiveObjectCfg:
    """A defunct 80 kg satellite with a grapple fixture (a post) on +x, for capture tasks."""
    return PassiveObjectCfg(
        mjcf="client_sat", pos_m=pos_m, quat=quat, elements=catalog.client_sat_elements()
    )


def oru(pos_m: Vec3 = (0.0, 0.0, 0.0), quat: Quat = (1.0, 0.0, 0.0, 0.0)) -> PassiveObjectCfg:
    """A 12 kg orbital replacement unit with `client_sat`'s grapple post on +x (passive)."""
    return PassiveObjectCfg(mjcf="oru", pos_m=pos_m, quat=quat, elements=catalog.oru_elements())


def oru_worksite(
    pos_m: Vec3 = (0.0, 0.0, 0.0), quat: Quat = (1.0, 0.0, 0.0, 0.0)
) -> PassiveObjectCfg:
    """A 400 kg structure panel with an ORU receptacle (a 0.22 m square socket) on +x."""
    return PassiveObjectCfg(
        mjcf="oru_worksite", pos_m=pos_m, quat=quat, elements=catalog.oru_worksite_elements()
    )


def station_module(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """ISS-like module (18 t) held by four CMGs; a large target for proximity operations."""
    return SpacecraftCfg(
        mjcf="station_module",
        pos_m=pos_m,
        elements=catalog.station_module_elements(),
        actuators={"cmgs": ControlMomentGyroGroupCfg()},
    )


def arm_bus(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """A small bus with a 6-joint arm and a gripper driven by MuJoCo position servos."""
    return SpacecraftCfg(
        mjcf="arm_bus",
        pos_m=pos_m,
        elements=catalog.arm_bus_elements(),
        actuators={"arm": MujocoActuatorGroupCfg()},
        sensors={"gyro": GyroCfg(site="imu", std=1e-4)},
    )


def servicer(pos_m: Vec3 = (0.0, 0.0, 0.0), quat: Quat = (1.0, 0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """The arm bus as a capture servicer: 16 x 10 N RCS (20 Hz PWM, 2 ms minimum on-time),
    its three wheels, the arm's six servos ('arm') and the gripper ('gripper') as separate
    groups, a gyro and a wrist force-torque sensor ('wrist_ft')."""
    return SpacecraftCfg(
        mjcf="arm_bus",
        pos_m=pos_m,
        quat=quat,
        elements=catalog.servicer_elements(),
        actuators={
            "rcs": ThrusterGroupCfg(pwm_period_s=0.05, min_on_time_s=0.002),
            "wheels": ReactionWheelGroupCfg(time_constant_s=0.05),
            "arm": MujocoActuatorGroupCfg(elements=list(ARM_JOINTS)),
            "gripper": MujocoActuatorGroupCfg(elements=["gripper"]),
        },
        sensors={
            "gyro": GyroCfg(site="imu", std=1e-4),
            "wrist_ft": WristForceTorqueCfg(site="wrist_ft", std=(0.05,) * 3 + (0.005,) * 3),
        },
    )


ARM_JOINTS = ("shoulder_yaw", "shoulder_pitch", "elbow", "wrist_pitch", "wrist_yaw", "wrist_roll")
"""The arm bus's arm joints (and their servos), base to hand."""


def solar_array_sat(pos_m: Vec3 = (0.0, 0.0, 0.0)) -> SpacecraftCfg:
    """A satellite whose hinged arrays are latched stowed until
    `scene.entities[name].set_constraint_active(worlds, 'latch_left', False)`."""
    return SpacecraftCfg(
        mjcf="solar_array_sat",
        pos_m=pos_m,
        elements=catalog.solar_array_sat_elements(),
        sensors={"gyro": GyroCfg(site="imu", std=1e-4)},
    )
