"""Handles to a scene's entities and markers: ids resolved once, torch state views."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

if TYPE_CHECKING:
    from orbitlab.scene.scene import Scene


class EntityHandle:
    """An entity's bodies and (when it floats freely) its root state in every world."""

    def __init__(self, name: str, root_body_name: str, scene: Scene):
        m = scene.mj_model
        self.name, self.scene = name, scene
        self.root_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, root_body_name)
        self.body_ids = [b for b in range(1, m.nbody) if m.body(b).name.startswith(f"{name}/")]
        jnt = m.body_jntadr[self.root_body]
        self.free = bool(
            m.body_jntnum[self.root_body] >= 1 and m.jnt_type[jnt] == mujoco.mjtJoint.mjJNT_FREE
        )
        self.qpos_adr = int(m.jnt_qposadr[jnt]) if self.free else -1
        self.dof_adr = int(m.jnt_dofadr[jnt]) if self.free else -1
        self.mass_kg = float(np.sum(m.body_mass[self.body_ids]))
        """Total mass of the entity's bodies, kg."""

    def _require_free(self) -> None:
        if not self.free:
            raise ValueError(f"entity '{self.name}': its root body has no free joint")

    def root_pose(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Root position relative to the chief (m) and quaternion (w, x, y, z), live views."""
        self._require_free()
        qpos = self.scene.view.array("qpos")
        return qpos[:, self.qpos_adr : self.qpos_adr + 3], qpos[
            :, self.qpos_adr + 3 : self.qpos_adr + 7
        ]

    def root_velocity(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Root linear velocity (world axes, m/s) and angular velocity (body axes, rad/s)."""
        self._require_free()
        qvel = self.scene.view.array("qvel")
        return qvel[:, self.dof_adr : self.dof_adr + 3], qvel[
            :, self.dof_adr + 3 : self.dof_adr + 6
        ]

    def set_root_state(
        self,
        worlds: torch.Tensor,
        pos_m=None,
        quat=None,
        lin_vel_mps=None,
        ang_vel_body=None,
        refresh: bool = True,
    ) -> None:
        """Write the root state of `worlds` (any subset of the four parts), then refresh
        the simulation's derived quantities and the sensors of those worlds (skip with
        `refresh=False` when the caller refreshes once after several edits, as the env's
        reset does)."""
        self._require_free()
        pos, q = self.root_pose()
        lin, ang = self.root_velocity()
        for target, value in ((pos, pos_m), (q, quat), (lin, lin_vel_mps), (ang, ang_vel_body)):
            if value is not None:
                target[worlds] = torch.as_tensor(value, dtype=target.dtype, device=target.device)
        if refresh:
            self.scene.data.forward(_ids(worlds))
            self.scene.refresh_sensors(worlds)

    def equality_id(self, name: str) -> int:
        """Id of one of the entity's equality constraints (e.g. a latch), by its MJCF name."""
        m = self.scene.mj_model
        i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, f"{self.name}/{name}")
        if i < 0:
            own = [
                m.equality(k).name.removeprefix(f"{self.name}/")
                for k in range(m.neq)
                if m.equality(k).name.startswith(f"{self.name}/")
            ]
            raise ValueError(
                f"entity '{self.name}' has no equality constraint '{name}' "
                f"(it has: {', '.join(own) or 'none'})"
            )
        return i

    def set_constraint_active(self, worlds: torch.Tensor, name: str, active: bool) -> None:
        """Engage or release a constraint (e.g. a latch holding a hinged array) in `worlds`.

        Parts that change state: a latched solar array deploys on its spring once its
        latch constraint is released. A reset restores the MJCF's initial state.
        """
        i = self.equality_id(name)
        eq_active = self.scene.view.array("eq_active")
        eq_active[worlds, i] = bool(active)


def _ids(worlds) -> np.ndarray:
    if isinstance(worlds, slice):
        return None
    return torch.as_tensor(worlds).reshape(-1).cpu().numpy()


class MarkerHandle:
    """A marker's per-world pose (a mocap body)."""

    def __init__(self, name: str, scene: Scene):
        m = scene.mj_model
        self.name, self.scene = name, scene
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"marker/{name}")
        self.mocap_id = int(m.body_mocapid[body])

    def set_pose(self, worlds: torch.Tensor, pos_m=None, quat=None) -> None:
        """Move the marker in `worlds` (position relative to the chief, m; quat w, x, y, z)."""
        view = self.scene.view
        if pos_m is not None:
            mpos = view.array("mocap_pos").view(view.num_worlds, -1, 3)
            mpos[worlds, self.mocap_id] = torch.as_tensor(
                pos_m, dtype=mpos.dtype, device=mpos.device
            )
        if quat is not None:
            mquat = view.array("mocap_quat").view(view.num_worlds, -1, 4)
            mquat[worlds, self.mocap_id] = torch.as_tensor(
                quat, dtype=mquat.dtype, device=mquat.device
            )
