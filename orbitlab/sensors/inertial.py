"""Attitude and inertial sensors: gyro, accelerometer, star tracker, magnetometer, sun sensor.

All outputs are in the sensor frame (the body frame, or the mount site's axes).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from orbitlab.orbit.gravity import differential_gravity_accel
from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sensors.base import Sensor, SensorCfg
from orbitlab.sensors.rotations import (
    canonical,
    quat_from_rotation_vector,
    quat_multiply,
    rotate_inverse,
)


class Gyro(Sensor):
    dim = 3

    def truth(self):
        omega_body = self.view.body_angular_velocity(self.body)
        return omega_body @ self.mount_rotation  # mount^T omega, row-wise


@dataclass(kw_only=True)
class GyroCfg(SensorCfg):
    """Rate gyro: angular velocity of the body in sensor axes, rad/s (3)."""

    class_type: type = Gyro
    """The class the scene builds from this config (`Gyro.from_scene`)."""


@wp.kernel
def _gravity_difference_kernel(
    body: CentralBody,
    use_j2: int,
    R: wp.array(dtype=wp.vec3d),
    com: wp.array2d(dtype=wp.vec3d),
    bodies: wp.array(dtype=int),
    out: wp.array2d(dtype=wp.vec3d),
):
    """g(R + r_b) - g(R) at each listed body's COM r_b (m), in m/s^2."""
    w, k = wp.tid()  # type: ignore[misc]  # Warp's stub: tid() -> int | tuple[...]
    delta = wp.float64(1.0e-3) * com[w, bodies[k]]
    out[w, k] = wp.float64(1.0e3) * differential_gravity_accel(body, use_j2, R[w], delta)


class Accelerometer(Sensor):
    dim = 3

    def __init__(self, cfg, name, view, body_id, stream, site_id=-1):
        super().__init__(cfg, name, view, body_id, stream, site_id)
        m = view.mj_model
        jnt = m.body_jntadr[self.body]
        if m.body_parentid[self.body] != 0 or m.body_jntnum[self.body] != 1 or m.jnt_type[jnt] != 0:
            raise ValueError(
                f"sensor '{name}': an accelerometer needs a free root body, "
                f"'{m.body(self.body).name}' is not one"
            )
        self.dof = int(m.jnt_dofadr[jnt])
        data = view.data
        self._device = data.device
        self._bodies = wp.array([self.body], dtype=int, device=data.device)
        self._out = wp.zeros((view.num_worlds, 1), dtype=wp.vec3d, device=data.device)
        self._out_torch = wp.to_torch(self._out)

    def truth(self):
        view, data = self.view, self.view.data
        frames = view.frames()
        frames_wp = data.body_frames()
        wp.launch(
            _gravity_difference_kernel,
            dim=(view.num_worlds, 1),
            inputs=[
                data.model.central_body,
                int(data.model.orbit.use_j2),
                data._arrays["R"],
                frames_wp.com,
                self._bodies,
            ],
            outputs=[self._out],
            device=self._device,
        )
        qacc = view.array("qacc").to(torch.float64)
        lin, ang = qacc[:, self.dof : self.dof + 3], qacc[:, self.dof + 3 : self.dof + 6]
        Q = frames["Q"][:, self.body]
        ipos = torch.as_tensor(
            view.mj_model.body_ipos[self.body], dtype=torch.float64, device=view.device
        )
        c = (Q @ ipos[:, None])[..., 0]
        omega = frames["omega"][:, self.body]
        alpha = (Q @ ang[..., None])[..., 0]  # free-joint angular dofs are in body axes
        a_com = (
            lin
            + torch.cross(alpha, c, dim=-1)
            + torch.cross(omega, torch.cross(omega, c, dim=-1), dim=-1)
        )
        specific = a_com + 1.0e3 * view.array("a_feedback") - self._out_torch[:, 0]
        return rotate_inverse(self.body_rotation(), specific)


@dataclass(kw_only=True)
class AccelerometerCfg(SensorCfg):
    """Accelerometer: non-gravitational specific force at the body COM, sensor axes, m/s^2 (3).

    Free root bodies only: a = a_com (MuJoCo frame) + a_feedback (chief's
    non-gravitational acceleration) - [g(R + r) - g(R)], which equals thrust,
    drag, SRP, contact and user forces over the body's mass.
    """

    class_type: type = Accelerometer
    """The class the scene builds from this config (`Accelerometer.from_scene`)."""


class StarTracker(Sensor):
    dim = 4
    noisy = slice(0, 3)

    def __init__(self, cfg, name, view, body_id, stream, site_id=-1):
        super().__init__(cfg, name, view, body_id, stream, site_id)
        r = torch.as_tensor(cfg.misalignment_rad, dtype=torch.float64, device=view.device)
        self.misalignment = quat_from_rotation_vector(r)

    def truth(self):
        # The body attitude: flight software removes the known mount rotation.
        return self.view.body_quaternion(self.body)

    def measure(self, truth, noise, worlds):
        error = quat_multiply(
            self.misalignment.expand(len(worlds), 4), quat_from_rotation_vector(noise)
        )
        return canonical(quat_multiply(truth, error))


@dataclass(kw_only=True)
class StarTrackerCfg(SensorCfg):
    """Star tracker: attitude quaternion (w, x, y, z) of the BODY frame to ECI (4).

    The known mount rotation (the site) is removed, as flight software does; what
    remains are errors: `std` and `bias_std` are small-angle rotations per body
    axis, rad (3 values or one), and `misalignment_rad` is an unknown fixed mounting
    error (rotation vector, body axes).
    """

    class_type: type = StarTracker
    """The class the scene builds from this config (`StarTracker.from_scene`)."""

    misalignment_rad: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Unknown fixed mounting error, rotation vector in body axes, rad."""


class Magnetometer(Sensor):
    dim = 3

    def truth(self):
        return rotate_inverse(self.body_rotation(), self.view.array("mag_field_eci"))


@dataclass(kw_only=True)
class MagnetometerCfg(SensorCfg):
    """Magnetometer: the geomagnetic field at the chief in sensor axes, T (3)."""

    class_type: type = Magnetometer
    """The class the scene builds from this config (`Magnetometer.from_scene`)."""


class SunSensor(Sensor):
    dim = 4
    noisy = slice(0, 3)

    def truth(self):
        s = rotate_inverse(self.body_rotation(), self.view.array("sun_eci"))
        lit = self.view.array("eclipse") >= self.cfg.min_illumination
        in_fov = s[:, 2] >= torch.cos(torch.tensor(self.cfg.fov_half_angle_rad))
        valid = (lit & in_fov).to(s.dtype)
        return torch.cat([s * valid[:, None], valid[:, None]], -1)

    def measure(self, truth, noise, worlds):
        valid = truth[:, 3:]
        s = truth[:, :3] + noise
        s = s / torch.linalg.vector_norm(s, dim=-1, keepdim=True).clamp_min(1e-12)
        return torch.cat([s * valid, valid], -1)


@dataclass(kw_only=True)
class SunSensorCfg(SensorCfg):
    """Sun sensor: unit Sun vector in sensor axes and a validity flag (4).

    Valid (1) when the chief is lit (illumination >= `min_illumination`) and the
    Sun is within `fov_half_angle_rad` of the boresight (+z of the sensor frame);
    otherwise the vector reads zero and the flag 0.
    """

    class_type: type = SunSensor
    """The class the scene builds from this config (`SunSensor.from_scene`)."""

    fov_half_angle_rad: float = 1.5707963267948966
    """Half-angle of the field of view around +z, rad."""
    min_illumination: float = 0.5
    """Illumination fraction below which the sensor sees no Sun."""
