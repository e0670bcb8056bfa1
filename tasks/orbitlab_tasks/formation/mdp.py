"""The formation task's own manager terms: per-follower observations, rewards that keep each
follower's share, terminations, the reset of the formation and the leader's waypoint command.

Per-follower reward terms return the mean over the followers (the team reward) and keep each
follower's own value in `per_follower` (N, 2), which `FollowerBatchEnv` reads back.

Per-follower observations take the follower as a resolved `SceneEntityCfg` with its
'relative_nav' and 'star_tracker' sensors (`formation_env_cfg.follower`); the team terms read
the entities of `geometry.LEADER` and `geometry.FOLLOWERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

import torch

from orbitlab.managers.command_manager import CommandTerm, CommandTermCfg
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.sensors.rotations import (
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_multiply,
    rotate_inverse,
)
from orbitlab.stateful import Stateful
from orbitlab_tasks.formation import geometry as geo

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

# ------------------------------------------------------------------ observations


def _follower_index(follower: str) -> int:
    if follower not in geo.FOLLOWERS:
        raise ValueError(f"unknown follower '{follower}'; known: {', '.join(geo.FOLLOWERS)}")
    return geo.FOLLOWERS.index(follower)


def slot_pos_error(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """Measured rho_f - rho_leader - offset, Hill axes, m (relative navigation to the leader)."""
    nav = follower.sensors["relative_nav"].value
    offset = geo.slot_offsets(env.device)[_follower_index(follower.name)]
    return -nav[:, :3] - offset


def slot_vel_error(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """Measured d/dt (rho_f - rho_leader) in the Hill frame, m/s."""
    return -follower.sensors["relative_nav"].value[:, 3:6]


def leader_attitude_error(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """Vector part of the measured error quaternion to the leader's attitude (sin(angle/2) times
    the axis, body axes)."""
    view = env.scene.view
    nav = follower.sensors["relative_nav"].value
    star = follower.sensors["star_tracker"].value
    C, _ = view.hill()
    return geo.measured_attitude_error(nav, star, C, hill_q=geo.hill_quat_of(view))[:, 1:]


def follower_last_action(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """The follower's part of the previous action (its wrench or Hill force, in [-1, 1]): the
    action holds the followers' equal parts one after the other."""
    k = _follower_index(follower.name)
    dim = env.action_manager.total_dim // len(geo.FOLLOWERS)
    return env.action_manager.action[:, dim * k : dim * (k + 1)]


def _hill_to_body(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """(N, 3, 3) Hill -> follower body rotation from the follower's own star tracker, once
    per simulation state (`SimView.memo`; shared, read-only)."""
    view = env.scene.view

    def compute() -> torch.Tensor:
        C, _ = view.hill()
        star = follower.sensors["star_tracker"].value
        return geo.hill_to_body(C.double(), star.double())

    return view.memo(("formation/hill_to_body", follower.name), compute)


def slot_pos_error_body(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """`slot_pos_error` in the follower's body axes (star tracker), m: the frame of its force
    action."""
    err = slot_pos_error(env, follower).double()
    return (_hill_to_body(env, follower) @ err[..., None])[..., 0]


def slot_vel_error_body(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """`slot_vel_error` in the follower's body axes (star tracker), m/s."""
    vel = slot_vel_error(env, follower).double()
    return (_hill_to_body(env, follower) @ vel[..., None])[..., 0]


# ------------------------------------------------ privileged observations (critic)


def true_slot_state(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """True slot error and its rate, (N, 2, 3) each, Hill axes (m, m/s); once per simulation
    state (`SimView.memo`; shared, read-only)."""
    return env.scene.view.memo("formation/true_slot_state", lambda: _true_slot_state(env))


def _true_slot_state(env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
    C, omega = env.scene.view.hill()
    C, omega = C.double(), omega.double()
    leader = env.scene.entities[geo.LEADER]
    p0, v0 = leader.data.root_pos_w.double(), leader.data.root_lin_vel_w.double()
    errs, vels = [], []
    for f in geo.FOLLOWERS:
        e = env.scene.entities[f]
        rho, rho_dot = geo.to_hill(
            C, omega, e.data.root_pos_w.double() - p0, e.data.root_lin_vel_w.double() - v0
        )
        errs.append(rho)
        vels.append(rho_dot)
    return torch.stack(errs, 1) - geo.slot_offsets(env.device), torch.stack(vels, 1)


def true_slot_body(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """True slot error and rate in the follower's true body axes, (N, 6): m, m/s; once per
    simulation state (`SimView.memo`; shared, read-only)."""
    return env.scene.view.memo(
        ("formation/true_slot_body", follower.name), lambda: _true_slot_body(env, follower)
    )


def _true_slot_body(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    k = _follower_index(follower.name)
    err, vel = true_slot_state(env)
    C, _ = env.scene.view.hill()
    M = geo.hill_to_body(C.double(), follower.data.root_quat_w.double())
    return torch.cat([(M @ err[:, k, :, None])[..., 0], (M @ vel[:, k, :, None])[..., 0]], -1)


def true_slot_hill(env: ManagerBasedRLEnv, follower: SceneEntityCfg) -> torch.Tensor:
    """True slot error and rate in Hill axes, (N, 6): m, m/s."""
    k = _follower_index(follower.name)
    err, vel = true_slot_state(env)
    return torch.cat([err[:, k], vel[:, k]], -1)


def leader_velocity_hill(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The leader's velocity relative to the chief, Hill axes, m/s (N, 3)."""
    C, omega = env.scene.view.hill()
    leader = env.scene.entities[geo.LEADER]
    return geo.to_hill(
        C.double(),
        omega.double(),
        leader.data.root_pos_w.double(),
        leader.data.root_lin_vel_w.double(),
    )[1]


def waypoint_phase(env: ManagerBasedRLEnv, command: str = "waypoint") -> torch.Tensor:
    """Time since the leader's current waypoint began, as a fraction of the hold, (N, 1)."""
    hold = cast("WaypointSchedule", env.command_manager.terms[command]).hold_steps
    return ((env.episode_length_buf % hold).float() / hold)[:, None]


# ------------------------------------------------------------------------ rewards


class PerFollowerTerm(Stateful):
    """A reward term computed per follower: returns the followers' mean, keeps each one's."""

    state_attrs: ClassVar[tuple[str, ...]] = ("per_follower",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.env = env
        self.per_follower = torch.zeros((env.num_envs, len(geo.FOLLOWERS)), device=env.device)
        """This step's value of each follower, (N, 2), in the term's units."""

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        self.per_follower = self.values(env).to(torch.float32)
        return self.per_follower.mean(-1)


class formation_error(PerFollowerTerm):
    """|rho_f - rho_leader - offset_f| (truth), m; also the task's metric.

    `episode_mean_m` (N,) is each env's time-mean over followers since its episode began
    (read it before the env resets, e.g. on the step that ends the episode)."""

    state_attrs = (*PerFollowerTerm.state_attrs, "error_integral", "elapsed_s")

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        self.error_integral = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)
        self.elapsed_s = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        error = geo.slot_errors(env).norm(dim=-1)
        fresh = env.episode_length_buf <= 1
        self.error_integral = (
            torch.where(fresh, 0.0, self.error_integral) + error.mean(-1) * env.step_dt
        )
        self.elapsed_s = torch.where(fresh, 0.0, self.elapsed_s) + env.step_dt
        return error

    @property
    def episode_mean_m(self) -> torch.Tensor:
        return self.error_integral / self.elapsed_s.clamp_min(1e-12)


class attitude_error(PerFollowerTerm):
    """Angle between each follower's attitude and the leader's (truth), rad."""

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        return geo.attitude_errors(env)


class fuel(PerFollowerTerm):
    """Sum of each follower's commanded thruster forces, N (times the step: impulse, N s)."""

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        return torch.stack(
            [env.scene.actuators[f"{f}/rcs"].command.sum(-1) for f in geo.FOLLOWERS], -1
        )


class formation_kernel(PerFollowerTerm):
    """exp(-|slot error| / sigma_m) (truth), in (0, 1]: a bounded positive reward that is
    steep near the slot (a training shaping term; the metric is `formation_error`)."""

    def __call__(self, env: ManagerBasedRLEnv, sigma_m: float = 0.05) -> torch.Tensor:
        self.per_follower = torch.exp(-geo.slot_errors(env).norm(dim=-1) / sigma_m).float()
        return self.per_follower.mean(-1)


class attitude_kernel(PerFollowerTerm):
    """exp(-angle / sigma_rad) of each follower's attitude error to the leader (truth)."""

    def __call__(self, env: ManagerBasedRLEnv, sigma_rad: float = 0.2) -> torch.Tensor:
        self.per_follower = torch.exp(-geo.attitude_errors(env) / sigma_rad).float()
        return self.per_follower.mean(-1)


class slot_velocity_error(PerFollowerTerm):
    """|d/dt (rho_f - rho_leader)| (truth, Hill frame), m/s: the slot error's rate."""

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        return true_slot_state(env)[1].norm(dim=-1)


def reference_slot_velocity(
    error_m: torch.Tensor, time_constant_s: float, max_speed_mps: float
) -> torch.Tensor:
    """The closing velocity asked of a follower at slot error e (Hill axes): -e / tau, its
    norm capped at `max_speed_mps` (m/s); a smooth field that brings it back to its slot."""
    v = -error_m / time_constant_s
    speed = v.norm(dim=-1, keepdim=True)
    return v * (max_speed_mps / speed.clamp_min(max_speed_mps))


class slot_velocity_tracking(PerFollowerTerm):
    """|rate of the slot error - reference velocity| (truth, Hill axes), m/s: each follower is
    asked to close on its slot along `reference_slot_velocity`."""

    def __call__(
        self, env: ManagerBasedRLEnv, time_constant_s: float = 10.0, max_speed_mps: float = 0.1
    ) -> torch.Tensor:
        err, vel = true_slot_state(env)
        ref = reference_slot_velocity(err, time_constant_s, max_speed_mps)
        self.per_follower = (vel - ref).norm(dim=-1).float()
        return self.per_follower.mean(-1)


class slot_velocity_kernel(PerFollowerTerm):
    """exp(-|slot error rate - reference velocity| / sigma) (truth), in (0, 1]."""

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        sigma_mps: float = 0.01,
        time_constant_s: float = 10.0,
        max_speed_mps: float = 0.1,
    ) -> torch.Tensor:
        err, vel = true_slot_state(env)
        ref = reference_slot_velocity(err, time_constant_s, max_speed_mps)
        self.per_follower = torch.exp(-(vel - ref).norm(dim=-1) / sigma_mps).float()
        return self.per_follower.mean(-1)


class action_rate(PerFollowerTerm):
    """Squared change of each follower's action components since the last step."""

    def values(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        diff = env.action_manager.action - env.action_manager.prev_action
        return diff.reshape(env.num_envs, len(geo.FOLLOWERS), -1).pow(2).sum(-1)


class failure(PerFollowerTerm):
    """1 on the step a world fails (a follower beyond `max_error_m` or a collision), for both
    of its followers (so a termination penalty weighs on the shared outcome)."""

    # The reward manager calls a term with its cfg's params; this one's are required (no
    # defaults), which `PerFollowerTerm.__call__(env)` cannot express.
    def __call__(  # type: ignore[override]
        self, env: ManagerBasedRLEnv, max_error_m: float, min_distance_m: float
    ) -> torch.Tensor:
        failed = (slot_drift(env, max_error_m) | collision(env, min_distance_m)).float()
        self.per_follower = failed[:, None].expand(-1, len(geo.FOLLOWERS)).contiguous()
        return self.per_follower.mean(-1)


# ------------------------------------------------------------------- terminations


def slot_drift(env: ManagerBasedRLEnv, max_error_m: float) -> torch.Tensor:
    """A follower is farther than `max_error_m` from its slot (truth)."""
    return (geo.slot_errors(env).norm(dim=-1) > max_error_m).any(-1)


def collision(env: ManagerBasedRLEnv, min_distance_m: float) -> torch.Tensor:
    """Two spacecraft centres closer than `min_distance_m` (the 0.326 m cubes touch below it)."""
    return env.scene.view.memo("formation/min_separation", lambda: _min_separation(env)) < (
        min_distance_m
    )


def _min_separation(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The smallest distance between two spacecraft centres, m (N,)."""
    names = (geo.LEADER, *geo.FOLLOWERS)
    pos = torch.stack([env.scene.entities[n].data.root_pos_w.double() for n in names], 1)
    gap = torch.cdist(pos, pos)
    gap = gap + torch.eye(len(names), dtype=gap.dtype, device=gap.device) * 1e9
    return gap.amin(dim=(-1, -2))


# ------------------------------------------------------------------------- events


def _uniform(env, count: int, half_width: float, dim: int = 3) -> torch.Tensor:
    u = torch.rand(
        (count, dim), generator=env.event_manager.generator, dtype=torch.float64, device=env.device
    )
    return (2.0 * u - 1.0) * half_width


def reset_formation(
    env,
    env_ids,
    pos_noise_m: float = 0.0,
    vel_noise_mps: float = 0.0,
    att_noise_rad: float = 0.0,
    rate_noise_rad_s: float = 0.0,
) -> None:
    """Leader at the chief, followers at their slots (plus uniform noise per Hill axis), all at
    rest in the Hill frame and aligned with it (followers turned by a random rotation vector of
    up to `att_noise_rad` per axis and given up to `rate_noise_rad_s` per axis)."""
    n = env_ids.numel()
    C, omega = (x[env_ids] for x in env.scene.view.hill())
    C_T = C.transpose(-1, -2)
    q_hill = quat_from_matrix(C_T)  # body axes = Hill axes
    rate_body = (C @ omega[..., None])[..., 0]  # co-rotating with the Hill frame
    zeros = torch.zeros((n, 3), dtype=torch.float64, device=env.device)
    env.scene.entities[geo.LEADER].set_root_state(
        env_ids, pos_m=zeros, quat=q_hill, lin_vel_mps=zeros, ang_vel_body=rate_body, refresh=False
    )
    offsets = geo.slot_offsets(env.device)
    for k, f in enumerate(geo.FOLLOWERS):
        rho = offsets[k] + _uniform(env, n, pos_noise_m)
        rho_dot = _uniform(env, n, vel_noise_mps)
        pos = (C_T @ rho[..., None])[..., 0]
        vel = (C_T @ rho_dot[..., None])[..., 0] + torch.cross(omega, pos, dim=-1)
        turn = quat_from_rotation_vector(_uniform(env, n, att_noise_rad))
        quat = quat_multiply(q_hill, turn)
        rate = rotate_inverse(geo.quat_to_matrix(turn), rate_body) + _uniform(
            env, n, rate_noise_rad_s
        )
        env.scene.entities[f].set_root_state(
            env_ids, pos_m=pos, quat=quat, lin_vel_mps=vel, ang_vel_body=rate, refresh=False
        )


# ----------------------------------------------------------------------- commands


class WaypointSchedule(CommandTerm):
    """command (N, 7): [position (3) m, attitude quaternion body -> Hill (4)] of the waypoint
    active at the current episode time: index = floor(t / hold_s) mod len(waypoints).

    Derived from `env.episode_length_buf` on every read, so it is right from the first physics
    step after a reset (before the command manager's first update) and switches exactly at
    multiples of hold_s."""

    def __init__(self, cfg: WaypointScheduleCfg, env: ManagerBasedRLEnv):
        super().__init__(cfg, env)
        steps = cfg.hold_s / env.step_dt
        if abs(steps - round(steps)) > 1e-9 * steps or round(steps) < 1:
            raise ValueError(
                f"waypoint hold_s {cfg.hold_s} s must be a whole number of env "
                f"steps of {env.step_dt} s"
            )
        self.hold_steps = round(steps)
        self.table = torch.tensor(
            [list(p) + list(geo.yaw_quat(yaw)) for p, yaw in cfg.waypoints],
            dtype=torch.float64,
            device=env.device,
        )

    @property
    def index(self) -> torch.Tensor:
        return (self.env.episode_length_buf // self.hold_steps) % self.table.shape[0]

    @property
    def command(self) -> torch.Tensor:
        return self.table[self.index]

    takes_masks = True

    def resample(self, worlds: torch.Tensor) -> None:
        """Nothing to draw: the schedule is fixed."""


@dataclass(kw_only=True)
class WaypointScheduleCfg(CommandTermCfg):
    """The leader's waypoint cycle: a pure function of episode time."""

    class_type: type = WaypointSchedule
    waypoints: tuple = geo.WAYPOINTS
    """((x, y, z) m in Hill axes from the reference point, yaw deg about Hill z), cycled."""
    hold_s: float = geo.WAYPOINT_HOLD_S
    """Time at each waypoint, s (a whole number of env steps)."""


# ------------------------------------------------------------------- teleoperation


def teleop_status(env: ManagerBasedRLEnv):
    """The recorder's status line: the worst follower's distance to its slot (m) and its
    closing speed (m/s, positive while closing), and each follower's distance (true slot
    state, `true_slot_state`)."""
    from orbitlab.demos.status import Measure, TaskReading
    from orbitlab.envs.mdp.observations import range_and_closing_speed

    error, rate = true_slot_state(env)
    distance, closing = range_and_closing_speed(error, rate)  # (N, followers)
    worst = distance.argmax(-1, keepdim=True)
    each = tuple(
        Measure(name.replace("follower_", "f"), "m", distance[:, i])
        for i, name in enumerate(geo.FOLLOWERS)
    )
    return TaskReading(distance.gather(-1, worst)[:, 0], closing.gather(-1, worst)[:, 0], each)
