"""Sensors: each samples the simulation on its own timer and holds its last value.

from orbitlab.sensors import GyroCfg, StarTrackerCfg, RelativeNavCfg
"""

from orbitlab.sensors.base import Sensor, SensorCfg
from orbitlab.sensors.camera import Camera, CameraCfg
from orbitlab.sensors.inertial import (
    Accelerometer,
    AccelerometerCfg,
    Gyro,
    GyroCfg,
    Magnetometer,
    MagnetometerCfg,
    StarTracker,
    StarTrackerCfg,
    SunSensor,
    SunSensorCfg,
)
from orbitlab.sensors.manipulator import (
    EndEffectorPose,
    EndEffectorPoseCfg,
    GrapplePose,
    GrapplePoseCfg,
    JointEncoder,
    JointEncoderCfg,
    WristForceTorque,
    WristForceTorqueCfg,
)
from orbitlab.sensors.navigation import (
    DockingLatch,
    DockingLatchCfg,
    Gnss,
    GnssCfg,
    RangeBearing,
    RangeBearingCfg,
    RelativeNav,
    RelativeNavCfg,
)

__all__ = [
    "Accelerometer",
    "AccelerometerCfg",
    "Camera",
    "CameraCfg",
    "DockingLatch",
    "DockingLatchCfg",
    "EndEffectorPose",
    "EndEffectorPoseCfg",
    "Gnss",
    "GnssCfg",
    "GrapplePose",
    "GrapplePoseCfg",
    "Gyro",
    "GyroCfg",
    "JointEncoder",
    "JointEncoderCfg",
    "Magnetometer",
    "MagnetometerCfg",
    "RangeBearing",
    "RangeBearingCfg",
    "RelativeNav",
    "RelativeNavCfg",
    "Sensor",
    "SensorCfg",
    "StarTracker",
    "StarTrackerCfg",
    "SunSensor",
    "SunSensorCfg",
    "WristForceTorque",
    "WristForceTorqueCfg",
]
