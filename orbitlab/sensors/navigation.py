"""Navigation sensors: GNSS, relative navigation, range/bearing, docking latch.

Targets are bodies of other entities (or sites on them), resolved by the scene
to ids; positions are COMs (or site origins) relative to the chief in world
axes, and `hill()` gives the chief's Hill frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from orbitlab.sensors.base import Sensor, SensorCfg, _mount
from orbitlab.sensors.rotations import (
    canonical,
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_multiply,
    rotate,
    rotate_inverse,
)


class Gnss(Sensor):
    dim = 6

    def truth(self):
        view = self.view
        frames = view.frames()
        r = self.position_world()
        omega = frames["omega"][:, self.body]
        v = frames["v_com"][:, self.body] + torch.cross(
            omega, r - frames["com"][:, self.body], dim=-1
        )
        return torch.cat([1.0e3 * view.array("R") + r, 1.0e3 * view.array("V") + v], -1)


@dataclass(kw_only=True)
class GnssCfg(SensorCfg):
    """GNSS receiver: absolute ECI position (m) and velocity (m/s) of the sensor point (6)."""

    class_type: type = Gnss
    """The class the scene builds from this config (`Gnss.from_scene`)."""


class _Targeted(Sensor):
    """A sensor that observes a point on another entity."""

    @classmethod
    def scene_targets(cls, cfg, name, scene):
        """The target's body and site ids (a site's own body carries it)."""
        if not cfg.target:
            raise ValueError(f"sensor '{name}': target must name an entity or 'entity/body'")
        target_site = scene.site_id(cfg.target_site) if cfg.target_site else -1
        target_body = scene.body_id(cfg.target)
        if target_site >= 0:
            target_body = int(scene.mj_model.site_bodyid[target_site])
        return {"target_body": target_body, "target_site": target_site}

    def __init__(
        self,
        cfg,
        name,
        view,
        body_id,
        stream,
        site_id=-1,
        *,
        target_body: int,
        target_site: int = -1,
    ):
        super().__init__(cfg, name, view, body_id, stream, site_id)
        self.target = int(target_body)
        self.target_site = int(target_site)
        self.target_rotation, self.target_pos = _mount(view, self.target, target_site)
        ipos = torch.as_tensor(view.mj_model.body_ipos[self.target], dtype=torch.float64)
        self.target_arm = self.target_pos - ipos.to(view.device)

    def target_point(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Target point position (m), velocity (m/s) relative to the chief, and its axes
        (once per state and target point: sensors and terms on one target share it)."""
        key = ("target_point", self.target, self.target_site)
        return self.view.memo(key, self._target_point)

    def _target_point(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        frames = self.view.frames()
        Q = frames["Q"][:, self.target]
        arm = rotate(Q, self.target_arm)
        omega = frames["omega"][:, self.target]
        pos = frames["com"][:, self.target] + arm
        vel = frames["v_com"][:, self.target] + torch.cross(omega, arm, dim=-1)
        return pos, vel, Q @ self.target_rotation

    def own_point(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The sensor point's position (m) and velocity (m/s) relative to the chief, world
        axes (once per state and mount)."""
        return self.view.memo(("own_point", self.body, self.site), self._own_point)

    def _own_point(self) -> tuple[torch.Tensor, torch.Tensor]:
        frames = self.view.frames()
        r = self.position_world()
        omega = frames["omega"][:, self.body]
        v = frames["v_com"][:, self.body] + torch.cross(
            omega, r - frames["com"][:, self.body], dim=-1
        )
        return r, v


class RelativeNav(_Targeted):
    dim = 10
    noisy = slice(0, 9)

    def truth(self):
        C, w = self.view.hill()
        pt, vt, Qt = self.target_point()
        po, vo = self.own_point()
        d = pt - po
        rho = rotate(C, d)
        rho_dot = rotate(C, vt - vo - torch.cross(w, d, dim=-1))
        q = quat_from_matrix(C @ Qt)
        return torch.cat([rho, rho_dot, q], -1)

    def measure(self, truth, noise, worlds):
        rng = torch.linalg.vector_norm(truth[:, :3], dim=-1, keepdim=True)
        noise = noise * (1.0 + self.cfg.range_noise_per_m * rng)
        q = canonical(quat_multiply(truth[:, 6:], quat_from_rotation_vector(noise[:, 6:])))
        return torch.cat([truth[:, :6] + noise[:, :6], q], -1)


@dataclass(kw_only=True)
class RelativeNavCfg(SensorCfg):
    """Relative navigation: target position (m), velocity (m/s) in the Hill frame and the
    target's attitude quaternion relative to the Hill frame (10 values).

    Noise is range dependent: every std (white, bias) is multiplied by
    (1 + range_noise_per_m * range). `std` has 9 components: position (3), velocity
    (3), attitude small-angle rotation (3, rad); or one value for all.
    """

    class_type: type = RelativeNav
    """The class the scene builds from this config (`RelativeNav.from_scene`)."""

    target: str = ""
    """Observed entity body as 'entity/body' (or 'entity' for its root)."""
    target_site: str = ""
    """Optional site of the target (as 'entity/site') whose origin and axes are observed."""
    range_noise_per_m: float = 0.0
    """Growth of the noise with range, 1/m."""


class RangeBearing(_Targeted):
    dim = 4
    noisy = slice(0, 3)

    def truth(self):
        pt, _, _ = self.target_point()
        po, _ = self.own_point()
        d = rotate_inverse(self.body_rotation(), pt - po)
        rng = torch.linalg.vector_norm(d, dim=-1)
        az = torch.atan2(d[:, 1], d[:, 0])
        el = torch.asin((d[:, 2] / rng.clamp_min(1e-12)).clamp(-1.0, 1.0))
        off = torch.acos((d[:, 0] / rng.clamp_min(1e-12)).clamp(-1.0, 1.0))
        valid = (rng <= self.cfg.max_range_m) & (off <= self.cfg.fov_half_angle_rad)
        valid = valid.to(d.dtype)[:, None]
        return torch.cat([torch.stack([rng, az, el], -1) * valid, valid], -1)

    def measure(self, truth, noise, worlds):
        valid = truth[:, 3:]
        return torch.cat([(truth[:, :3] + noise) * valid, valid], -1)


@dataclass(kw_only=True)
class RangeBearingCfg(SensorCfg):
    """Range (m), azimuth and elevation (rad) of a target point in the sensor frame, and a
    validity flag (4), like a LIDAR or radar locked on a target.

    Boresight is +x of the sensor frame; azimuth = atan2(y, x), elevation =
    asin(z / range). Valid when range <= max_range_m and the angle off boresight
    <= fov_half_angle_rad; invalid readings are zero.
    """

    class_type: type = RangeBearing
    """The class the scene builds from this config (`RangeBearing.from_scene`)."""

    target: str = ""
    """Observed entity body as 'entity/body' (or 'entity' for its root)."""
    target_site: str = ""
    """Optional site of the target (as 'entity/site')."""
    max_range_m: float = 100.0
    """Maximum range, m."""
    fov_half_angle_rad: float = 0.5
    """Half-angle of the field of view around +x, rad."""


class DockingLatch(_Targeted):
    state_attrs = (*_Targeted.state_attrs, "latched")
    cfg: DockingLatchCfg
    dim = 6
    noisy = slice(2, 6)

    def __init__(self, cfg, name, view, body_id, stream, site_id=-1, **target):
        super().__init__(cfg, name, view, body_id, stream, site_id, **target)
        self.latched = torch.zeros(view.num_worlds, dtype=torch.bool, device=view.device)
        """Whether each world's latch has closed (held until reset)."""

    def truth(self):
        pt, vt, Qt = self.target_point()
        po, vo = self.own_point()
        axis_port = Qt[..., :, 2]
        axis_probe = self.body_rotation()[..., :, 2]
        d = po - pt
        dist = torch.linalg.vector_norm(d, dim=-1)
        along = (d * axis_port).sum(-1)
        lateral = torch.linalg.vector_norm(d - along[:, None] * axis_port, dim=-1)
        closing = -((vo - vt) * axis_port).sum(-1)
        mis = torch.acos((-(axis_probe * axis_port).sum(-1)).clamp(-1.0, 1.0))
        cfg = self.cfg
        contact = dist <= cfg.contact_distance_m
        latch_now = (
            contact
            & (closing <= cfg.max_closing_speed_mps)
            & (lateral <= cfg.max_lateral_m)
            & (mis <= cfg.max_misalignment_rad)
        )
        self.latched |= latch_now
        return torch.stack(
            [contact.to(d.dtype), self.latched.to(d.dtype), dist, closing, lateral, mis], -1
        )

    def reset(self, worlds):
        self.latched[worlds] = False
        super().reset(worlds)


@dataclass(kw_only=True)
class DockingLatchCfg(SensorCfg):
    """Docking contact and latch: [contact, latched, distance m, closing speed m/s,
    lateral error m, misalignment rad] (6) between this entity's probe site and a
    target's port site.

    Contact: the probe tip is within `contact_distance_m` of the port. The latch
    closes (and stays closed until reset) at contact when the closing speed is
    below `max_closing_speed_mps`, the lateral error below `max_lateral_m` and the
    angle between the probe's axis and the port's inward axis below
    `max_misalignment_rad`. Both sites' +z axes carry the direction: the probe's
    points forward, the port's points out of the port.
    """

    class_type: type = DockingLatch
    """The class the scene builds from this config (`DockingLatch.from_scene`)."""

    target: str = ""
    """Target entity body ('entity/body' or 'entity')."""
    target_site: str = ""
    """The port site on the target ('entity/site')."""
    contact_distance_m: float = 0.05
    """Probe-to-port distance counted as contact, m."""
    max_closing_speed_mps: float = 0.1
    """Largest closing speed that latches, m/s."""
    max_lateral_m: float = 0.05
    """Largest lateral error that latches, m."""
    max_misalignment_rad: float = 0.0872664626
    """Largest axis misalignment that latches, rad (5 deg)."""
