"""MuJoCo's own actuators (e.g. a robotic arm's position servos) as an actuator group.

Commands are the MJCF actuators' controls (`ctrl`, in their own units: target
angles for position servos, torques for motors), clipped to each actuator's
`ctrlrange` when it is limited; latency, lag, gains and failures apply as for
every group, and the result is written into MuJoCo's per-world `ctrl`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from orbitlab.actuators.base import ActuatorGroup, ActuatorGroupCfg


class MujocoActuatorGroup(ActuatorGroup):
    kind = "mujoco"
    array_name = "ctrl"

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, index):
        """The entity's MJCF actuators that `cfg.elements` names (None: all of them)."""
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
                f"actuator group '{name}': no MJCF actuators named {missing or 'any'} "
                f"on entity '{entity}' (it has: {', '.join(own) or 'none'})"
            )
        return cls(cfg, name, scene.actuator_context, [own[n] for n in selected])

    def __init__(self, cfg, name, ctx, actuator_ids: list[int]):
        m = ctx.data.model.mj_model
        self._limited = m.actuator_ctrllimited[actuator_ids].astype(bool)
        self._range = m.actuator_ctrlrange[actuator_ids]
        super().__init__(cfg, name, ctx, actuator_ids)

    def limits(self):
        low = np.where(self._limited, self._range[:, 0], -np.inf)
        high = np.where(self._limited, self._range[:, 1], np.inf)
        return torch.as_tensor(low), torch.as_tensor(high)

    def write(self, output):
        ctrl = self.ctx.array("ctrl")
        ctrl[:, self.ids] = output.to(ctrl.dtype)


@dataclass(kw_only=True)
class MujocoActuatorGroupCfg(ActuatorGroupCfg):
    """A group of the MJCF's actuators, named in `elements` (None: all of the entity's)."""

    class_type: type = MujocoActuatorGroup
    """The class the scene builds from this config (`MujocoActuatorGroup.from_scene`)."""
