"""Torch views of an OrbitData for the layers above the simulation (zero-copy).

`SimView` gives actuator groups, sensors and managers one place to read the
truth state as torch tensors on the simulation's device:
* `array(name)`: an orbit-layer array ('R', 'V', 'thruster_force', ...) or an
  MjData field ('qpos', 'qvel', 'qacc', ...), shared with the simulation;
* `frames()`: every body's rotation, COM, angular velocity and COM velocity in
  world axes, computed by one kernel launch at most once per physics step
  (call `invalidate()` after the state changes: the scene does so after each
  step and reset);
* `hill()`: each chief's Hill frame (rotation ECI -> Hill, and its rate);
* `memo(key, compute)`: any other quantity of the current state, computed once and
  shared by every sensor, actuator and term that asks for it.

Staleness: everything derived (frames, Hill frame, body rotations, memos) is computed at
most once per state. A state is ended by `invalidate()`: the scene calls it after every
physics step, reset and state edit (`EntityHandle.set_root_state`, `set_state`); code that
writes the state through a live view itself calls it too. Per-episode quantities (the
sensors' noise hashes) last until `end_episodes()` (a reset, a reseed, a restored state).
Returned tensors are shared: treat them as read-only.
* per-world counters `step_count` (physics steps since the world's last reset)
  and `episode` (resets so far), which drive the sensors' timers and noise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.stateful import Stateful

FRAME_FIELDS = ("Q", "com", "omega", "v_com")
T = TypeVar("T")


class SimView(Stateful):
    """Zero-copy torch access to an OrbitData's state, frames and counters."""

    state_attrs = ("step_count", "episode")

    def __init__(self, data):
        self.data = data
        self.num_worlds = data.nworld
        self.dt = data.model.timestep
        self.mj_model = data.model.mj_model
        self._arrays: dict[str, torch.Tensor] = {}
        self.device = self.array("R").device
        self.step_count = torch.zeros(self.num_worlds, dtype=torch.long, device=self.device)
        """Physics steps since each world's last reset."""
        self.episode = torch.zeros(self.num_worlds, dtype=torch.long, device=self.device)
        """Number of resets of each world."""
        self._frames: dict[str, torch.Tensor] | None = None
        self._free_adr: dict[int, tuple[int, int] | None] = {}
        self._memo: dict[object, object] = {}
        self._episodic: dict[object, object] = {}

    def episodic(self, key: object, compute: Callable[[], T]) -> T:
        """`compute()` kept under `key` until `end_episodes()`: it outlives physics steps."""
        if key not in self._episodic:
            self._episodic[key] = compute()
        return self._episodic[key]  # type: ignore[return-value]

    def end_episodes(self) -> None:
        """Forget the per-episode quantities (after a reset, a reseed or a restored state)."""
        self._episodic.clear()

    def memo(self, key: object, compute: Callable[[], T]) -> T:
        """`compute()` once per state under `key` (see the module docstring on staleness);
        the result (a tensor or a tuple of tensors) is shared: do not write to it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    def memo_get(self, key: object) -> Any:
        """The value memoised under `key` for the current state, else None."""
        return self._memo.get(key)

    def memo_put(self, key: object, value: T) -> T:
        """Memoise `value` (not None) under `key` for the current state; returns it."""
        self._memo[key] = value
        return value

    def array(self, name: str) -> torch.Tensor:
        """A live torch view of an orbit-layer array or an MjData field, (num_worlds, ...)."""
        if name not in self._arrays:
            self._arrays[name] = self.data.torch(name)
        return self._arrays[name]

    def frames(self) -> dict[str, torch.Tensor]:
        """Q (N, nbody, 3, 3) body to world; com (m), omega (rad/s), v_com (m/s): (N, nbody, 3)."""
        return self.memo("frames", self._compute_frames)

    def _compute_frames(self) -> dict[str, torch.Tensor]:
        frames = self.data.body_frames()  # recomputed in place: the torch views stay valid
        if self._frames is None:
            self._frames = {k: wp.to_torch(getattr(frames, k)) for k in FRAME_FIELDS}
        return self._frames

    def free_joint(self, body: int) -> tuple[int, int] | None:
        """(qpos address, dof address) of a free root body's joint, else None (cached)."""
        if body not in self._free_adr:
            m = self.mj_model
            jnt = m.body_jntadr[body]
            free = m.body_parentid[body] == 0 and m.body_jntnum[body] == 1 and m.jnt_type[jnt] == 0
            self._free_adr[body] = (
                (int(m.jnt_qposadr[jnt]), int(m.jnt_dofadr[jnt])) if free else None
            )
        return self._free_adr[body]

    def body_rotation(self, body: int) -> torch.Tensor:
        """Body-to-world rotation (N, 3, 3). A free root body's comes straight from its
        qpos quaternion (no kernel launch; once per state); others from `frames()`."""
        adr = self.free_joint(body)
        if adr is None:
            return self.frames()["Q"][:, body]
        return self.memo(("body_rotation", body), lambda: self._qpos_rotation(adr[0]))

    def body_quaternion(self, body: int) -> torch.Tensor:
        """Body-to-world quaternion (w, x, y, z), w >= 0, (N, 4): `quat_from_matrix` of
        `body_rotation(body)`, once per state."""
        from orbitlab.sensors.rotations import quat_from_matrix

        return self.memo(
            ("body_quaternion", body), lambda: quat_from_matrix(self.body_rotation(body))
        )

    def _qpos_rotation(self, qpos_adr: int) -> torch.Tensor:
        from orbitlab.sensors.rotations import quat_to_matrix

        return quat_to_matrix(self.array("qpos")[:, qpos_adr + 3 : qpos_adr + 7].to(torch.float64))

    def body_angular_velocity(self, body: int) -> torch.Tensor:
        """Angular velocity in BODY axes, rad/s, (N, 3): a free root body's qvel directly."""
        adr = self.free_joint(body)
        if adr is None:
            frames = self.frames()
            return (frames["omega"][:, body, None, :] @ frames["Q"][:, body])[:, 0]
        return self.array("qvel")[:, adr[1] + 3 : adr[1] + 6].to(torch.float64)

    def invalidate(self) -> None:
        """End the current state: every cached frame and memo is recomputed when next asked."""
        self._memo.clear()

    def hill(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(C_LI (N, 3, 3), omega (N, 3)): ECI -> Hill rotation (rows x radial, y along-track,
        z orbit normal) and the frame's ECI angular velocity (R x V) / |R|^2, rad/s; once
        per state."""
        return self.memo("hill", self._compute_hill)

    def _compute_hill(self) -> tuple[torch.Tensor, torch.Tensor]:
        R, V = self.array("R"), self.array("V")
        h = torch.cross(R, V, dim=-1)
        x = R / torch.linalg.vector_norm(R, dim=-1, keepdim=True)
        z = h / torch.linalg.vector_norm(h, dim=-1, keepdim=True)
        y = torch.cross(z, x, dim=-1)
        omega = h / (R * R).sum(-1, keepdim=True)
        return torch.stack([x, y, z], dim=-2), omega
