"""An ideal body-wrench actuator for prototyping: force and torque at a body's COM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from orbitlab.actuators.base import ActuatorGroup, ActuatorGroupCfg


class WrenchGroup(ActuatorGroup):
    """Six 'elements' (force x, y, z, torque x, y, z) on one body, applied via xfrc."""

    kind = "wrench"
    cfg: WrenchGroupCfg

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, index):
        """The wrench acts on `cfg.body` of the entity ('' : its root body)."""
        body = scene.body_id(f"{entity}/{cfg.body}" if cfg.body else entity)
        return cls(cfg, name, scene.actuator_context, body)

    def __init__(self, cfg: WrenchGroupCfg, name, ctx, body_id: int):
        if cfg.frame not in ("body", "world"):
            raise ValueError(
                f"actuator group '{name}': frame must be 'body' or 'world', got {cfg.frame!r}"
            )
        for field_name in ("max_force_n", "max_torque_nm"):
            if not getattr(cfg, field_name) > 0.0:
                raise ValueError(
                    f"actuator group '{name}': {field_name} must be > 0, "
                    f"got {getattr(cfg, field_name)!r}"
                )
        self.body = int(body_id)
        super().__init__(cfg, name, ctx, list(range(6)))

    def limits(self):
        f, t = self.cfg.max_force_n, self.cfg.max_torque_nm
        high = torch.tensor([f, f, f, t, t, t], dtype=torch.float64)
        return -high, high

    def write(self, output):
        if self.cfg.frame == "body":
            Q = self.ctx.frames()["Q"][:, self.body]
            output = torch.cat(
                [(Q @ output[:, :3, None])[..., 0], (Q @ output[:, 3:, None])[..., 0]], dim=-1
            )
        self.ctx.add_wrench(self.body, output)


@dataclass(kw_only=True)
class WrenchGroupCfg(ActuatorGroupCfg):
    """Ideal wrench: commands are [force N (3), torque N m (3)] about the body's COM."""

    class_type: type = WrenchGroup
    """The class the scene builds from this config (`WrenchGroup.from_scene`)."""

    body: str = ""
    """Body of the entity the wrench acts on ('' : the entity's root body)."""
    frame: Literal["body", "world"] = "body"
    """Axes the command is expressed in."""
    max_force_n: float = 1.0
    """Per-axis force limit, N."""
    max_torque_nm: float = 0.1
    """Per-axis torque limit, N m."""
