"""Station-keeping: a 6U CubeSat inspector holds a point 10 m behind a defunct satellite.

The tutorial task of docs/tutorial.md, in one file with public imports only. The inspector
(the shipped 6U CubeSat given a six-thruster cold-gas pack) starts within 2 m and 5 mm/s
of its hold point on the client's V-bar; the policy commands a force in the Hill frame
(x radial, y along-track, z orbit normal), which a custom action term turns into thruster
forces. Relative motion is the real thing: differential gravity (Clohessy-Wiltshire and
beyond), drag and SRP on both spacecraft. Success: within 0.2 m and 2 mm/s of the point
for 30 s; drifting 20 m away ends the episode as a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from orbitlab.actuators import ThrusterGroupCfg
from orbitlab.envs import ManagerBasedRLEnvCfg, mdp
from orbitlab.managers import (
    ActionTerm,
    ActionTermCfg,
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    SceneEntityCfg,
    TerminationTermCfg,
)
from orbitlab.registry import TaskSpec, register_task
from orbitlab.scene import SceneCfg, spacecraft
from orbitlab.sim import ThrusterCfg

if TYPE_CHECKING:
    from orbitlab.envs import ManagerBasedRLEnv

HOLD_POINT_M = (0.0, -10.0, 0.0)
"""The hold point relative to the client, Hill axes, m: 10 m behind it on the V-bar."""
MAX_THRUST_N = 0.05
"""Each cold-gas thruster's force, N (~4.5 mm/s^2 on the 11.2 kg 6U)."""
THRUSTER_AXES = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))
"""Force directions of the six thrusters, body axes (through the COM: no torque)."""
INSPECTOR, CLIENT = SceneEntityCfg("inspector"), SceneEntityCfg("client")


# -------------------------------------------------------------------- the scene
def inspector_cfg():
    """The shipped 6U CubeSat with six thrusters on its faces, +x -x +y -y +z -z (body)."""
    sat = spacecraft.cubesat_6u()
    for i, direction in enumerate(THRUSTER_AXES):
        sat.elements.thrusters.append(
            ThrusterCfg(
                name=f"cg{i}", body_name="bus", direction_body=direction, max_force=MAX_THRUST_N
            )
        )
    sat.actuators = {"rcs": ThrusterGroupCfg(mode="continuous")}
    sat.sensors = {}
    return sat


# -------------------------------------------------------------------- the relative state
def relative_state(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """(position, velocity) of the inspector minus the hold point, Hill axes, m and m/s."""
    C, omega = env.scene.view.hill()  # ECI -> Hill rotation, Hill frame rate (rad/s)
    ins, cli = env.scene.entities["inspector"].data, env.scene.entities["client"].data
    r = (ins.root_pos_w - cli.root_pos_w).to(torch.float64)
    v = (ins.root_lin_vel_w - cli.root_lin_vel_w).to(torch.float64) - torch.cross(omega, r, dim=-1)
    hold = torch.tensor(HOLD_POINT_M, dtype=torch.float64, device=r.device)
    return (C @ r[..., None])[..., 0] - hold, (C @ v[..., None])[..., 0]


def position_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Distance to the hold point, m."""
    return torch.linalg.vector_norm(relative_state(env)[0], dim=-1)


def speed_error(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Speed relative to the hold point, m/s."""
    return torch.linalg.vector_norm(relative_state(env)[1], dim=-1)


def position_obs(env: ManagerBasedRLEnv) -> torch.Tensor:
    return relative_state(env)[0]


def velocity_obs(env: ManagerBasedRLEnv) -> torch.Tensor:
    return relative_state(env)[1]


def holding(env: ManagerBasedRLEnv) -> torch.Tensor:
    return (position_error(env) < 0.2) & (speed_error(env) < 0.002)


def drifted_away(env: ManagerBasedRLEnv) -> torch.Tensor:
    return position_error(env) > 20.0


def reset_near_hold_point(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, inspector: SceneEntityCfg, client: SceneEntityCfg
):
    """Put the inspector within 2 m and 5 mm/s of its hold point (random per world)."""
    n, gen = env_ids.numel(), env.event_manager.generator
    offset = (
        torch.rand((n, 3), generator=gen, dtype=torch.float64, device=env.device) * 2 - 1
    ) * 2.0
    drift = (
        torch.rand((n, 3), generator=gen, dtype=torch.float64, device=env.device) * 2 - 1
    ) * 0.005
    hold = torch.tensor(HOLD_POINT_M, dtype=torch.float64, device=env.device)
    C, omega = (x[env_ids] for x in env.scene.view.hill())
    r = (C.transpose(-1, -2) @ (hold + offset)[..., None])[..., 0]  # world axes
    v = (C.transpose(-1, -2) @ drift[..., None])[..., 0] + torch.cross(omega, r, dim=-1)
    base_r, base_v = client.data.root_pos_w[env_ids], client.data.root_lin_vel_w[env_ids]
    inspector.handle.set_root_state(env_ids, pos_m=base_r + r, lin_vel_mps=base_v + v)


# -------------------------------------------------------------------- the action
class HillForceAction(ActionTerm):
    """A force in Hill axes (N) -> body axes -> the +/- thruster of each body axis."""

    dim = 3

    def __init__(self, cfg: ActionTermCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.rcs = env.scene.actuators["inspector/rcs"]

    def apply(self, command: torch.Tensor) -> None:
        C, _ = self.env.scene.view.hill()
        body_to_world = self.env.scene.entities["inspector"].data.root_rot_mat_w
        force_b = (body_to_world.transpose(-1, -2) @ C.transpose(-1, -2) @ command[..., None])[
            ..., 0
        ]
        pairs = torch.stack([force_b.clamp(min=0.0), (-force_b).clamp(min=0.0)], dim=-1)
        self.rcs.set_command(pairs.reshape(-1, 6))  # +x -x +y -y +z -z


# -------------------------------------------------------------------- the env config
def env_cfg(num_envs: int = 256) -> ManagerBasedRLEnvCfg:
    """1 Hz control of a 0.1 s physics step; episodes of up to 5 min."""
    scene = SceneCfg(
        num_envs=num_envs,
        timestep_s=0.1,
        entities={"client": spacecraft.docking_target(), "inspector": inspector_cfg()},
    )
    state = {
        "position": ObservationTermCfg(func=position_obs, scale=0.5),
        "velocity": ObservationTermCfg(func=velocity_obs, scale=100.0),
        "last_action": ObservationTermCfg(func=mdp.last_action),
    }
    return ManagerBasedRLEnvCfg(
        scene=scene,
        decimation=10,
        episode_length_s=300.0,
        actions={"force": ActionTermCfg(class_type=HillForceAction, scale=MAX_THRUST_N)},
        observations={"policy": ObservationGroupCfg(terms=state)},
        rewards={
            "position": RewardTermCfg(func=position_error, weight=-0.2),
            "velocity": RewardTermCfg(func=speed_error, weight=-20.0),
            "fuel": RewardTermCfg(func=mdp.action_l2, weight=-0.01),
        },
        terminations={
            "success": TerminationTermCfg(
                func=mdp.held_for, params={"condition": holding, "duration_s": 30.0}
            ),
            "drifted_away": TerminationTermCfg(func=drifted_away),
        },
        events={
            "orbit": EventTermCfg(func=mdp.randomize_orbit, mode="reset"),
            "inspector": EventTermCfg(
                func=reset_near_hold_point,
                mode="reset",
                params={"inspector": INSPECTOR, "client": CLIENT},
            ),
        },
    )


def pd_policy(obs: torch.Tensor) -> torch.Tensor:
    """A baseline: a critically damped PD on the relative state (20 s time constant),
    in action units (multiples of MAX_THRUST_N); 11.2 kg inspector."""
    position, velocity = obs[:, 0:3] / 0.5, obs[:, 3:6] / 100.0
    force = 11.2 * (-(0.05**2) * position - 2 * 0.05 * velocity)
    return (force / MAX_THRUST_N).clamp(-1.0, 1.0).to(obs.dtype)


register_task(
    TaskSpec(
        name="Station-Keeping",
        env_cfg=env_cfg,
        success="within 0.2 m and 2 mm/s of the hold point for 30 s",
        summary="6U CubeSat inspector holds 10 m behind a defunct satellite (tutorial)",
    )
)
