"""ORU insertion's scripted baseline: align in front of the socket, then slide the ORU in.

One true-state node at the env step (`InsertionNode`): resolved-rate control of the arm on
the gripper's pose error towards a waypoint (the servicer's bus, berthed to a 400 kg
worksite, is treated as a fixed base: the fixed-base Jacobian):

1. **Align.** Until the ORU's base is on the socket's axis (within 2 mm and 0.5 deg) the
   waypoint is the seated pose backed out along the socket's axis to 3 cm before its mouth.
2. **Insert.** Then the waypoint is the seated pose, approached at most at 2 cm/s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.agent import AgentGraph, NodeCfg, SceneNode
from orbitlab.scene.free_floating import damped_least_squares
from orbitlab_tasks.insertion import mdp
from orbitlab_tasks.reach.reach_env_cfg import ArmJacobian, joint_pos

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

GAIN = 0.5
"""Commanded twist per unit pose error, 1/s."""
MAX_SPEED_MPS = 0.05
"""Largest commanded speed while aligning, m/s."""
INSERT_SPEED_MPS = 0.02
"""Largest commanded speed while inserting, m/s."""
MAX_TURN_RAD_S = 0.1
"""Largest commanded turn rate, rad/s."""
ALIGNED = (0.004, 1.5 * mdp.DEG)
"""On the socket's axis: lateral offset (m) and angle (rad) below which the ORU goes in."""
MAX_JOINT_RATE_RAD_S = 0.3
ARM_DAMPING = 0.05


def _capped(vector: torch.Tensor, largest: float | torch.Tensor) -> torch.Tensor:
    norm = vector.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    return vector * torch.clamp(largest / norm, max=1.0)


class InsertionNode(SceneNode):
    """The module docstring's steps 1 and 2. Output: joint_target (N, 6) rad for the arm's
    servos."""

    state_attrs = (*SceneNode.state_attrs, "target")
    output_names = ("joint_target",)

    def __init__(self, cfg: NodeCfg, name: str, env: ManagerBasedRLEnv):
        super().__init__(cfg, name, env)
        self.jacobian = ArmJacobian(env)
        self.target = joint_pos(env).clone()

    def reset_state(self, worlds):
        self.target[worlds] = joint_pos(self.env)[worlds]

    def compute(self, inputs):
        env = self.env
        dp, dr = mdp.grasp_error(env)
        axis = mdp.target_pose(env)[1][..., 0]  # the socket's axis, out of the socket
        out, lateral = mdp.socket_coordinates(env)
        aligned = (lateral < ALIGNED[0]) & (dr.norm(dim=-1) < ALIGNED[1])
        inside = out < mdp.SOCKET_DEPTH_M  # the base is past the socket's mouth
        go_in = aligned | inside
        backout = torch.where(go_in[:, None], 0.0, mdp.ENTRY_M) * axis
        speed = torch.where(go_in, INSERT_SPEED_MPS, MAX_SPEED_MPS)[:, None]
        linear = _capped(GAIN * (dp + backout), speed)
        angular = _capped(GAIN * dr, MAX_TURN_RAD_S)
        twist = torch.cat((linear, angular), -1)
        rates = damped_least_squares(self.jacobian(free_floating=False), twist, ARM_DAMPING)
        rates = rates.clamp(-MAX_JOINT_RATE_RAD_S, MAX_JOINT_RATE_RAD_S)
        moved = self.target + rates * self.update_period_s
        self.target.copy_(torch.where(self.due[:, None], moved, self.target))
        return {"joint_target": self.target}


def insertion_agent(env: ManagerBasedRLEnv):
    """The scripted insertion: `InsertionNode` on the arm's servos."""
    arm = NodeCfg(class_type=InsertionNode, period_s=env.step_dt).build("arm", env)
    return AgentGraph([arm]), {"joint_target": "bot/arm"}
