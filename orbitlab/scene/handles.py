"""Handles to a scene's entities and markers: ids resolved once, torch state views."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

if TYPE_CHECKING:
    from orbitlab.scene.scene import Scene


class EntityData:
    """An entity's root state in every world, (num_envs, ...) tensors named by frame.

    Suffixes name the frame of the axes: `_w` the world frame of the scene (ECI axes,
    origin at each world's chief, so positions are relative to the chief), `_b` the root
    body's axes. Quaternions are (w, x, y, z), body -> world. The state fields are live
    views of the simulation's `qpos`/`qvel` (free joint: linear velocity in world axes,
    angular velocity in body axes): they follow every step, and writing into them edits
    the state (call `scene.refresh_worlds(worlds)` afterwards, or use
    `EntityHandle.set_root_state`). The rotated fields (`root_ang_vel_w`, `root_lin_vel_b`)
    are new tensors computed on each access. Every field raises a ValueError on an entity
    whose root has no free joint.
    """

    def __init__(self, entity: EntityHandle):
        self._entity = entity
        self._view = entity.scene.view
        self._pos = slice(entity.qpos_adr, entity.qpos_adr + 3)
        self._quat = slice(entity.qpos_adr + 3, entity.qpos_adr + 7)
        self._lin = slice(entity.dof_adr, entity.dof_adr + 3)
        self._ang = slice(entity.dof_adr + 3, entity.dof_adr + 6)

    def _state(self, field: str, part: slice) -> torch.Tensor:
        self._entity._require_free()
        return self._view.array(field)[:, part]

    @property
    def root_pos_w(self) -> torch.Tensor:
        """Root body origin relative to the chief, world (ECI) axes, m, (N, 3); live view."""
        return self._state("qpos", self._pos)

    @property
    def root_quat_w(self) -> torch.Tensor:
        """Root attitude quaternion (w, x, y, z), body -> world, (N, 4); live view."""
        return self._state("qpos", self._quat)

    @property
    def root_lin_vel_w(self) -> torch.Tensor:
        """Root body origin velocity relative to the chief frame, world axes, m/s, (N, 3);
        live view."""
        return self._state("qvel", self._lin)

    @property
    def root_ang_vel_b(self) -> torch.Tensor:
        """Root angular velocity (inertial) in body axes, rad/s, (N, 3); live view."""
        return self._state("qvel", self._ang)

    @property
    def root_rot_mat_w(self) -> torch.Tensor:
        """Root rotation matrix body -> world from the (normalised) quaternion, float64
        (N, 3, 3); computed on access."""
        self._entity._require_free()
        return self._view.body_rotation(self._entity.root_body)

    @property
    def root_ang_vel_w(self) -> torch.Tensor:
        """Root angular velocity in world axes, rad/s, float64 (N, 3); computed on access."""
        omega_b = self.root_ang_vel_b.to(torch.float64)
        return (self.root_rot_mat_w @ omega_b[..., None])[..., 0]

    @property
    def root_lin_vel_b(self) -> torch.Tensor:
        """Root body origin velocity relative to the chief frame in body axes, m/s, float64
        (N, 3); computed on access."""
        vel_w = self.root_lin_vel_w.to(torch.float64)
        return (self.root_rot_mat_w.transpose(-1, -2) @ vel_w[..., None])[..., 0]


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
        self.data = EntityData(self)
        """The root state in every world, as named tensors whose suffix gives the frame."""

    def _require_free(self) -> None:
        if not self.free:
            raise ValueError(f"entity '{self.name}': its root body has no free joint")

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
        d = self.data
        parts = (
            (d.root_pos_w, pos_m),
            (d.root_quat_w, quat),
            (d.root_lin_vel_w, lin_vel_mps),
            (d.root_ang_vel_b, ang_vel_body),
        )
        for target, value in parts:
            if value is not None:
                target[worlds] = torch.as_tensor(value, dtype=target.dtype, device=target.device)
        self.scene.view.invalidate()
        if refresh:
            self.scene.refresh_worlds(_world_ids(self.scene, worlds))

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


def _world_ids(scene: Scene, worlds) -> torch.Tensor:
    """`worlds` (ids, or a slice of every world) as a 1-D id tensor on the scene's device."""
    if isinstance(worlds, slice):
        return scene.all_worlds[worlds]
    return torch.as_tensor(worlds, device=scene.device).reshape(-1)


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
