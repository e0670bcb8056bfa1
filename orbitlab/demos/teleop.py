"""Map a 6-DOF teleoperation command to a task's action vector.

A device gives c = [fx, fy, fz, tx, ty, tz] in [-1, 1] (body axes, fractions of full
scale). Each action term of the env takes its part (terms in the action manager's order):

* `ThrusterWrenchAction` (a body wrench allocated to thrusters, dim 6): the whole c; the
  term's own scale turns it into N and N m (e.g. Docking: 40 N, 4 N m per unit).
* `GraphInputAction` of dim 6 (a body wrench fed to an agent graph): the whole c.
* `GraphInputAction` of dim 3: the rotation part c[3:6].
* `ActuatorAction` on wheels, magnetorquers or CMGs (one body axis per element): the
  rotation part c[3:6] projected on the element axes, a = clip(pinv(A) c_rot, -1, 1)
  with A the (3, n) matrix of unit axes; three body-aligned wheels (Detumble-RW) or
  magnetorquers give a = c[3:6]. For magnetorquers this commands dipole fractions per
  axis, not a torque (m x B depends on the field): a direct, not an ideal, mapping.
* `ActuatorAction` on a 6-element ideal wrench group: the whole c.
* `BinaryGripperAction`: open, or closed while the device's 'grip' button (keyboard: G)
  has toggled it so; every new episode starts open (`reset`). Without a device, open.
* `JointVelocityAction` with an `end_effector` site (an arm): c is the site's twist in its
  spacecraft's root-body axes, 5 cm/s and 0.2 rad/s per unit (`ARM_SPEED_MPS`,
  `ARM_RATE_RAD_S`), turned into joint rates at the current state through the generalized
  Jacobian (zero momentum, `orbitlab.scene.free_floating`), over the term's rate limit.
Any other term raises ValueError naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from orbitlab.managers.action_manager import (
    ActuatorAction,
    BinaryGripperAction,
    GraphInputAction,
    JointVelocityAction,
    ThrusterWrenchAction,
)
from orbitlab.scene.free_floating import FIELDS, FreeFloating, damped_least_squares

ARM_SPEED_MPS = 0.05
"""An arm's end-effector speed per unit device command, m/s."""
ARM_RATE_RAD_S = 0.2
"""An arm's end-effector turn rate per unit device command, rad/s."""

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


@dataclass
class _Part:
    name: str
    matrix: torch.Tensor | None
    """(dim, 6): action part = clip(matrix @ c); None where `state_map` gives it."""
    state_map: Callable[[torch.Tensor], torch.Tensor] | None = None
    """c (6,) -> action part (dim,) at the current state (an arm's joint rates)."""


class TeleopMapping:
    """`mapping(command (6,)) -> action (1, action_dim)` float32 for one world; `device`
    (optional) gives the 'grip' button that toggles a gripper."""

    def __init__(self, env: ManagerBasedRLEnv, device=None):
        self.env = env
        self.parts: list[_Part] = []
        self.grip_closed = False
        """Whether the gripper is commanded closed (toggled by the 'grip' button)."""
        for name, term in env.action_manager.terms.items():
            if isinstance(term, JointVelocityAction) and term.cfg.end_effector:
                self.parts.append(_Part(name, None, _ArmTwist(env, term)))
            elif isinstance(term, BinaryGripperAction):
                self.parts.append(_Part(name, None, self._grip))
            else:
                self.parts.append(_Part(name, self._matrix(name, term)))
        self.action_dim = env.action_manager.total_dim
        if device is not None and "grip" in device.buttons:
            device.add_callback("grip", self.toggle_grip)

    def toggle_grip(self) -> None:
        """Close an open gripper, open a closed one."""
        self.grip_closed = not self.grip_closed

    def reset(self) -> None:
        """A new episode: the gripper open."""
        self.grip_closed = False

    def _grip(self, c: torch.Tensor) -> torch.Tensor:
        return torch.tensor([-1.0 if self.grip_closed else 1.0], dtype=torch.float64)

    @staticmethod
    def _matrix(name: str, term) -> torch.Tensor:
        eye = torch.eye(6, dtype=torch.float64)
        rotation = eye[3:]
        if isinstance(term, ThrusterWrenchAction):  # a wrench (6), or a force only (3)
            return eye if term.dim == 6 else eye[:3]
        if isinstance(term, GraphInputAction) and term.dim in (3, 6):
            return eye if term.dim == 6 else rotation
        if isinstance(term, ActuatorAction):
            group = term.group
            if group.kind == "wrench" and term.dim == 6:
                return eye
            axes = getattr(group, "axis", None)
            if axes is not None and group.kind in ("wheels", "magnetorquers", "cmgs"):
                a = torch.as_tensor(axes, dtype=torch.float64).cpu().reshape(-1, 3).T  # (3, n)
                return torch.linalg.pinv(a) @ rotation
        raise ValueError(
            f"teleop: no mapping from a 6-DOF command to action term '{name}' "
            f"({type(term).__name__}, dim {term.dim})"
        )

    def __call__(self, command: torch.Tensor) -> torch.Tensor:
        c = torch.as_tensor(command, dtype=torch.float64).reshape(6).cpu()
        parts = [
            (p.state_map(c) if p.matrix is None else p.matrix @ c).clamp(-1.0, 1.0)
            for p in self.parts
        ]
        action = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)
        return action.to(torch.float32).reshape(1, -1).to(self.env.device)

    def describe(self) -> str:
        """One line per action term: which device components drive it."""
        labels = ("fx", "fy", "fz", "tx", "ty", "tz")
        lines = []
        for p in self.parts:
            if p.state_map == self._grip:
                lines.append(f"{p.name}: open; the 'grip' button closes and opens it")
                continue
            if p.matrix is None:
                lines.append(f"{p.name}: end-effector twist [vx, vy, vz, wx, wy, wz] = c")
                continue
            rows = [
                "+".join(f"{float(w):g}*{labels[j]}" for j, w in enumerate(row) if abs(w) > 0)
                or "0"
                for row in p.matrix
            ]
            lines.append(f"{p.name}: [{', '.join(rows)}]")
        return "\n".join(lines)


class _ArmTwist:
    """c -> the joint rates (over the term's rate limit) that move an arm's end effector at
    the twist c in its root body's axes, in world 0 (teleoperation drives one world)."""

    def __init__(self, env: ManagerBasedRLEnv, term: JointVelocityAction):
        m = env.scene.mj_model
        site = env.scene.site_id(str(term.cfg.end_effector))
        self.env, self.site = env, site
        self.body = int(m.site_bodyid[site])
        self.free = FreeFloating(m, int(m.body_rootid[self.body]))
        joints = m.actuator_trnid[term.group.ids.cpu().numpy(), 0]
        dofs = self.free.dofs.tolist()
        self.columns = [dofs.index(int(m.jnt_dofadr[j])) - 6 for j in joints]
        self.root = int(m.body_rootid[self.body])
        self.scale = torch.as_tensor(term.cfg.scale, dtype=torch.float64)

    def __call__(self, c: torch.Tensor) -> torch.Tensor:
        view = self.env.scene.view
        fields = {f: view.array(f)[:1].to(torch.float64).cpu() for f in FIELDS}
        kin = self.free.kinematics(fields)
        rotation = fields["xmat"][0, self.root].reshape(3, 3)
        twist = torch.cat((rotation @ c[:3] * ARM_SPEED_MPS, rotation @ c[3:] * ARM_RATE_RAD_S))
        point = view.array("site_xpos")[:1, self.site].to(torch.float64).cpu()
        jstar = self.free.generalized_jacobian(kin, self.free.point_jacobian(kin, self.body, point))
        rates = damped_least_squares(jstar[..., self.columns], twist[None], 0.05)[0]
        return rates / self.scale
