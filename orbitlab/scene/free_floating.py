"""Momentum and generalized Jacobian of a free-floating multibody spacecraft (torch, batched).

A spacecraft whose root body has a free joint and carries jointed links (an arm, a gripper)
conserves its total momentum when nothing outside acts on it, so a joint motion moves the
root as well. Per world, over the spacecraft's own dofs q' (its free joint first, then its
other joints, in MuJoCo's dof order):

- the momentum matrix A (6 x nv): h = [P; L] = A q', with P the total linear momentum
  (N s) and L the angular momentum about the spacecraft's centre of mass (N m s), both in
  world axes (MuJoCo's `mj_jacSubtreeCom` times the mass, and `mj_angmomMat`, for a
  spacecraft that is a subtree of the world body);
- the Jacobian of a point fixed to one of its bodies, J (6 x nv): [v; w] = J q', the
  point's velocity (m/s) and its body's angular velocity (rad/s), world axes;
- the generalized Jacobian (Umetani and Yoshida, 1989): with A = [A_b A_m] and
  J = [J_b J_m] split between the free joint's 6 dofs and the joints',
  J* = J_m - J_b A_b^-1 A_m gives the point's velocity from the joint rates alone when the
  momentum is zero, and the root's velocity is then -A_b^-1 A_m q_m'.

MuJoCo's free joint: qvel[0:3] is the root origin's velocity in world axes, qvel[3:6] the
root's angular velocity in its own axes. The inputs are MuJoCo's position-dependent fields
(`xpos`, `xmat`, `xipos`, `ximat`, `xanchor`, `xaxis`) of the current state.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import torch

FIELDS = ("xpos", "xmat", "xipos", "ximat", "xanchor", "xaxis")
"""The MjData fields the kinematics read, (N, nbody or njnt, 3 or 9)."""


@dataclass(frozen=True)
class Kinematics:
    """One state's momentum matrix and body Jacobians, (N, ...) float64, world axes."""

    com: torch.Tensor
    """Centre of mass of the spacecraft, m, (N, 3)."""
    mass: float
    """Total mass, kg."""
    momentum_matrix: torch.Tensor
    """A, (N, 6, nv): [P (N s); L about `com` (N m s)] = A q'."""
    omega_jac: torch.Tensor
    """Angular-velocity Jacobian of each body, (N, nbody, 3, nv)."""
    axis: torch.Tensor
    """World axis of each dof, (N, nv, 3)."""
    anchor: torch.Tensor
    """A point on each rotational dof's axis, m, (N, nv, 3)."""


class FreeFloating:
    """The momentum map of one free-floating spacecraft of a MuJoCo model.

    Args:
        mj_model: the compiled model (every world shares its structure).
        root: the spacecraft's root body, by name or id; it must be a child of the world body
            with a free joint. Its subtree (every body below it) is the spacecraft.
    """

    def __init__(self, mj_model: mujoco.MjModel, root: int | str, device=None):
        m = mj_model
        root_id = m.body(root).id if isinstance(root, str) else int(root)
        if not 0 < root_id < m.nbody:
            raise ValueError(f"root body {root!r}: not a body of the model (1..{m.nbody - 1})")
        jnt = m.body_jntadr[root_id]
        if (
            m.body_parentid[root_id] != 0
            or jnt < 0
            or m.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE
        ):
            raise ValueError(
                f"root body {m.body(root_id).name!r}: must be a child of the world body with a "
                "free joint (a free-floating spacecraft)"
            )
        bodies = [b for b in range(1, m.nbody) if m.body_rootid[b] == root_id]
        dofs = [d for d in range(m.nv) if m.body_rootid[m.dof_bodyid[d]] == root_id]
        self.mj_model = m
        self.root = root_id
        self.device = device
        kw = {"dtype": torch.float64, "device": device}
        self.bodies = torch.tensor(bodies, dtype=torch.long, device=device)
        """The spacecraft's bodies (model ids), root first."""
        self.dofs = torch.tensor(dofs, dtype=torch.long, device=device)
        """The spacecraft's dofs (model ids, its qvel columns), the free joint's 6 first."""
        self.body_mass = torch.tensor(m.body_mass[bodies], **kw)
        self.body_inertia = torch.tensor(m.body_inertia[bodies], **kw)
        self.mass = float(self.body_mass.sum())
        # moves[i, k]: dof k moves body i (dof k's body is body i or one of its ancestors).
        moves = torch.zeros((len(bodies), len(dofs)), **kw)
        for i, b in enumerate(bodies):
            chain = {b}
            while m.body_parentid[b] != 0:
                b = int(m.body_parentid[b])
                chain.add(b)
            for k, d in enumerate(dofs):
                moves[i, k] = float(int(m.dof_bodyid[d]) in chain)
        self.moves = moves
        self._index = {b: i for i, b in enumerate(bodies)}
        joints = [int(m.dof_jntid[d]) for d in dofs]
        self._dof_joint = torch.tensor(joints, dtype=torch.long, device=device)
        self._dof_body = torch.tensor(
            [int(m.dof_bodyid[d]) for d in dofs], dtype=torch.long, device=device
        )
        # Per dof: where its axis comes from, and whether it turns or slides.
        free, ball, slide = (
            mujoco.mjtJoint.mjJNT_FREE,
            mujoco.mjtJoint.mjJNT_BALL,
            mujoco.mjtJoint.mjJNT_SLIDE,
        )
        kinds = [int(m.jnt_type[j]) for j in joints]
        offsets = [d - int(m.jnt_dofadr[j]) for d, j in zip(dofs, joints, strict=True)]
        flag = {"dtype": torch.bool, "device": device}
        self._free = torch.tensor([k == free for k in kinds], **flag)
        self._uses_xaxis = torch.tensor([k not in (free, ball) for k in kinds], **flag)
        self._world_axis = torch.tensor(
            [k == free and o < 3 for k, o in zip(kinds, offsets, strict=True)], **flag
        )
        self._column = torch.tensor(
            [
                o - 3 if (k == free and o >= 3) else (o if k == ball else 0)
                for k, o in zip(kinds, offsets, strict=True)
            ],
            dtype=torch.long,
            device=device,
        )
        self._eye = torch.eye(3, **kw)[[min(o, 2) for o in offsets]]
        self.rotational = torch.tensor(
            [k != slide and not (k == free and o < 3) for k, o in zip(kinds, offsets, strict=True)],
            **flag,
        )
        """Whether each dof turns (hinge, ball, the free joint's last 3) or slides."""

    @property
    def nv(self) -> int:
        """Number of the spacecraft's dofs (6 for the free joint, then its joints')."""
        return int(self.dofs.numel())

    def body_index(self, body: int | str) -> int:
        """Row of a body (name or model id) in this map's body arrays."""
        b = self.mj_model.body(body).id if isinstance(body, str) else int(body)
        if b not in self._index:
            raise ValueError(f"body {body!r}: not part of the spacecraft rooted at {self.root}")
        return self._index[b]

    def kinematics(self, fields: dict[str, torch.Tensor]) -> Kinematics:
        """The momentum matrix and body Jacobians at one state.

        Args:
            fields: the MjData fields named in `FIELDS` at the current state, each
                (N, nbody or njnt, 3 or 9) (e.g. `{f: view.array(f) for f in FIELDS}`).
        """
        n = fields["xipos"].shape[0]
        xmat = fields["xmat"].reshape(n, -1, 3, 3)
        axis, anchor = self._dof_axes(fields, xmat)
        com_b = fields["xipos"][:, self.bodies]  # (N, nb, 3)
        rot_b = fields["ximat"].reshape(n, -1, 3, 3)[:, self.bodies]
        rot = self.rotational.to(axis.dtype)[None, None, :, None]  # (1, 1, nv, 1)
        moves = self.moves[None, :, :, None]
        # Linear velocity of each body's COM per unit dof rate: u x (c_i - p) or u.
        lever = com_b[:, :, None, :] - anchor[:, None, :, :]  # (N, nb, nv, 3)
        turn = torch.linalg.cross(axis[:, None].expand_as(lever), lever, dim=-1)
        v_jac = moves * (rot * turn + (1.0 - rot) * axis[:, None])
        w_jac = moves * rot * axis[:, None]  # (N, nb, nv, 3)
        mass = self.body_mass[None, :, None]
        com = (self.body_mass[None, :, None] * com_b).sum(1) / self.mass  # (N, 3)
        linear = (mass[..., None] * v_jac).sum(1)  # (N, nv, 3)
        inertia = rot_b @ torch.diag_embed(self.body_inertia)[None] @ rot_b.transpose(-1, -2)
        offset = (com_b - com[:, None])[:, :, None, :].expand_as(v_jac)
        angular = (
            mass[..., None] * torch.linalg.cross(offset, v_jac, dim=-1)
            + torch.einsum("nbij,nbkj->nbki", inertia, w_jac)
        ).sum(1)
        matrix = torch.cat((linear, angular), dim=-1).transpose(1, 2)  # (N, 6, nv)
        return Kinematics(
            com=com,
            mass=self.mass,
            momentum_matrix=matrix,
            omega_jac=w_jac.transpose(2, 3),
            axis=axis,
            anchor=anchor,
        )

    def point_jacobian(self, kin: Kinematics, body: int | str, point: torch.Tensor) -> torch.Tensor:
        """J (N, 6, nv): [v (m/s); w (rad/s)] of `point` (N, 3), world m, fixed to `body`."""
        i = self.body_index(body)
        rot = self.rotational.to(point.dtype)[None, :, None]
        lever = point[:, None, :] - kin.anchor
        turn = torch.linalg.cross(kin.axis, lever, dim=-1)
        moves = self.moves[i][None, :, None]
        v = moves * (rot * turn + (1.0 - rot) * kin.axis)  # (N, nv, 3)
        return torch.cat((v.transpose(1, 2), kin.omega_jac[:, i]), dim=1)

    def generalized_jacobian(self, kin: Kinematics, jacobian: torch.Tensor) -> torch.Tensor:
        """J* (N, 6, nv - 6) = J_m - J_b A_b^-1 A_m: a point's velocity from the joint rates
        of a spacecraft with zero momentum."""
        return jacobian[..., 6:] - jacobian[..., :6] @ self.root_response(kin)

    def root_response(self, kin: Kinematics) -> torch.Tensor:
        """A_b^-1 A_m (N, 6, nv - 6): minus the free joint's qvel per unit joint rate at zero
        momentum."""
        matrix = kin.momentum_matrix
        return torch.linalg.solve(matrix[..., :6], matrix[..., 6:])

    def momentum(self, kin: Kinematics, qvel: torch.Tensor) -> torch.Tensor:
        """[P (N s); L about the COM (N m s)] (N, 6), world axes, from MuJoCo's qvel (N, nv)."""
        return (kin.momentum_matrix @ qvel[:, self.dofs, None])[..., 0]

    def joint_rates(
        self,
        kin: Kinematics,
        body: int | str,
        point: torch.Tensor,
        twist: torch.Tensor,
        damping: float = 0.05,
    ) -> torch.Tensor:
        """Joint rates (N, nv - 6) that move `point` (N, 3, world m, fixed to `body`) at
        `twist` (N, 6: m/s, rad/s, world axes) with zero momentum: damped least squares
        J*^T (J* J*^T + damping^2 I)^-1 twist, which stays bounded near singularities."""
        jstar = self.generalized_jacobian(kin, self.point_jacobian(kin, body, point))
        return damped_least_squares(jstar, twist, damping)

    def _dof_axes(
        self, fields: dict[str, torch.Tensor], xmat: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each dof's world axis and a point on it, (N, nv, 3) each: a hinge's or slide's
        `xaxis` through its `xanchor`; a ball's body axes through its anchor; the free
        joint's world axes (translation) and its body's axes through the body origin."""
        frame = xmat[:, self._dof_body]  # (N, nv, 3, 3); column c is the body's axis c
        column = self._column.view(1, -1, 1, 1).expand(frame.shape[0], -1, 3, 1)
        body_axis = torch.gather(frame, 3, column)[..., 0]
        axis = torch.where(
            self._uses_xaxis[None, :, None],
            fields["xaxis"][:, self._dof_joint],
            torch.where(self._world_axis[None, :, None], self._eye[None], body_axis),
        )
        anchor = torch.where(
            self._free[None, :, None],
            fields["xpos"][:, self._dof_body],
            fields["xanchor"][:, self._dof_joint],
        )
        return axis, anchor


def damped_least_squares(
    jacobian: torch.Tensor, twist: torch.Tensor, damping: float
) -> torch.Tensor:
    """x minimising |J x - twist|^2 + damping^2 |x|^2: J^T (J J^T + damping^2 I)^-1 twist,
    for J (N, m, n) and twist (N, m); returns (N, n)."""
    eye = torch.eye(jacobian.shape[-2], dtype=jacobian.dtype, device=jacobian.device)
    gram = jacobian @ jacobian.transpose(-1, -2) + damping**2 * eye
    return (jacobian.transpose(-1, -2) @ torch.linalg.solve(gram, twist[..., None]))[..., 0]
