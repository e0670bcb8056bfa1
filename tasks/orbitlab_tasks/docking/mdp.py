"""Docking geometry and the task's manager terms.

Frames: the port frame is the target's 'port' site (+z out of the port, towards the
chaser); the chaser docks with its body +x (the probe axis) along the port's -z. The
"docking attitude" of the chaser is body axes = (-z, -y, -x) of the port frame, so
`DOCKING_ROTATION` (body -> port) is a 180 deg turn about the port's (x - z)
bisector. Positions below are the chaser's probe tip relative to the port, in port
axes: `along` = z (distance out of the port), `lateral` = |(x, y)|.

Two views of the same quantities:
* truth (`truth_state`), read from the simulation through the latch sensor's
  geometry: for rewards, terminations and the critic;
* measured (`measured_state`), built only from sensor readings (relative nav,
  star tracker, gyro, GNSS): for the policy and the baseline agent.

The terms take the chaser as a resolved `SceneEntityCfg` (`docking_env_cfg.CHASER`: its
sites 'probe_tip' and 'imu' and its sensors relative_nav, star_tracker, gyro, gnss, latch).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import mujoco
import numpy as np
import torch

from orbitlab.envs.mdp.observations import range_and_closing_speed
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.sensors.rotations import (
    lvlh_rotation,
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_to_matrix,
    rotate,
    rotate_inverse,
    rotation_vector_from_quat,
)
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.sensors.navigation import DockingLatch

DEG = math.pi / 180.0

DOCKING_ROTATION = ((0.0, 0.0, -1.0), (0.0, -1.0, 0.0), (-1.0, 0.0, 0.0))
"""Chaser body axes -> port axes at the docking attitude (columns: body x, y, z in port
axes): probe (+x) along the port's -z, body +z along the port's -x."""


# ------------------------------------------------------------------ rotations
def docking_rotation(like: torch.Tensor) -> torch.Tensor:
    """`DOCKING_ROTATION` as a (3, 3) tensor of `like`'s dtype and device."""
    return torch.tensor(DOCKING_ROTATION, dtype=like.dtype, device=like.device)


def error_quaternion_from(body_to_port: torch.Tensor) -> torch.Tensor:
    """Quaternion (N, 4), w >= 0, of the chaser's rotation away from the docking attitude
    (body axes)."""
    return quat_from_matrix(docking_rotation(body_to_port).T @ body_to_port)


def attitude_error_from(body_to_port: torch.Tensor) -> torch.Tensor:
    """Vector part (N, 3) of the quaternion of the chaser's rotation away from the docking
    attitude (body axes; ~ half the error angle times its axis)."""
    return error_quaternion_from(body_to_port)[:, 1:]


def hill_from_gnss(gnss: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ECI -> Hill rotation (N, 3, 3) and the Hill frame's rate (N, 3) in Hill axes, rad/s,
    from a GNSS reading [r (m), v (m/s)] in ECI (the chaser's own orbit: within metres
    of the chief's, so its Hill frame agrees with the chief's to ~1e-6 rad)."""
    r, v = gnss[:, :3], gnss[:, 3:6]
    rate = torch.linalg.vector_norm(torch.cross(r, v, dim=-1), dim=-1) / (r * r).sum(-1)
    omega = torch.zeros_like(r)
    omega[:, 2] = rate
    return lvlh_rotation(r, v), omega


def site_in_root(mj_model: mujoco.MjModel, site: str | int, root_body: int) -> np.ndarray:
    """Position (3,) of a site (name or id) in its root body's frame, m (walks up the fixed
    bodies)."""
    sid = (
        site
        if isinstance(site, int)
        else mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_SITE, site)
    )
    if sid < 0:
        raise ValueError(f"no site '{site}' in the scene")
    pos, body = mj_model.site_pos[sid].copy(), int(mj_model.site_bodyid[sid])
    while body != root_body:
        if body == 0:
            raise ValueError(f"site '{site}' is not on a descendant of body {root_body}")
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, mj_model.body_quat[body])
        pos = mat.reshape(3, 3) @ pos + mj_model.body_pos[body]
        body = int(mj_model.body_parentid[body])
    return pos


def _site(chaser: SceneEntityCfg, name: str) -> int:
    return chaser.site_ids[chaser.site_names.index(name)]


def _latch(chaser: SceneEntityCfg) -> DockingLatch:
    """The chaser's latch sensor (a `DockingLatchCfg` in the task's scene)."""
    return cast("DockingLatch", chaser.sensors["latch"])


def probe_lever(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> torch.Tensor:
    """Probe tip minus the relative-nav point (site 'imu'), chaser body axes, m (3,)."""
    m, root = env.scene.mj_model, chaser.handle.root_body
    tip, imu = _site(chaser, "probe_tip"), _site(chaser, "imu")
    lever = site_in_root(m, tip, root) - site_in_root(m, imu, root)
    return torch.as_tensor(lever, dtype=torch.float64, device=env.device)


# ------------------------------------------------------------ docking states
def measured_state(
    nav: torch.Tensor,
    star: torch.Tensor,
    gyro: torch.Tensor,
    gnss: torch.Tensor,
    lever: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """The docking state from sensor readings only.

    Args: relative nav (N, 10) [target port pos m, vel m/s (Hill, rotating-frame
    derivative), port-to-Hill quaternion]; star tracker (N, 4) body -> ECI; gyro (N, 3)
    rad/s body; GNSS (N, 6); `lever` (3,) probe tip minus nav point, body axes.

    Returns: 'pos' and 'vel' (N, 3), the probe tip relative to the port in port axes (m,
    m/s; the velocity is inertial, i.e. the port is taken as inertially fixed);
    'body_to_port', 'body_to_hill', 'port_to_hill', 'eci_to_hill' (N, 3, 3).
    """
    eci_to_hill, omega_hill = hill_from_gnss(gnss)
    body_to_hill = eci_to_hill @ quat_to_matrix(star)
    port_to_hill = quat_to_matrix(nav[:, 6:10])
    rho, rho_dot = nav[:, :3], nav[:, 3:6]
    lever_b = lever.expand_as(gyro)
    pos_h = -rho + rotate(body_to_hill, lever_b)
    vel_h = -(rho_dot + torch.cross(omega_hill, rho, dim=-1)) + rotate(
        body_to_hill, torch.cross(gyro, lever_b, dim=-1)
    )
    hill_to_port = port_to_hill.transpose(-1, -2)
    return {
        "pos": rotate_inverse(port_to_hill, pos_h),
        "vel": rotate_inverse(port_to_hill, vel_h),
        "body_to_port": hill_to_port @ body_to_hill,
        "body_to_hill": body_to_hill,
        "port_to_hill": port_to_hill,
        "eci_to_hill": eci_to_hill,
    }


def measured_state_env(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> dict[str, torch.Tensor]:
    """`measured_state` from the chaser's current sensor readings, once per simulation state
    (`SimView.memo`: every term of a step shares it; shared, read-only)."""
    return env.scene.view.memo(
        ("docking/measured", chaser.name), lambda: _measured_state_env(env, chaser)
    )


def _measured_state_env(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> dict[str, torch.Tensor]:
    s = chaser.sensors
    levers = env.__dict__.setdefault("_docking_levers", {})
    if chaser.name not in levers:
        levers[chaser.name] = probe_lever(env, chaser)
    return measured_state(
        s["relative_nav"].value,
        s["star_tracker"].value,
        s["gyro"].value,
        s["gnss"].value,
        levers[chaser.name],
    )


def truth_state(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> dict[str, torch.Tensor]:
    """True probe tip position / velocity relative to the port (port axes, m, m/s), the
    chaser's body -> port rotation, and the latch sensor's misalignment (rad); once per
    simulation state (`SimView.memo`; shared, read-only)."""
    return env.scene.view.memo(("docking/truth", chaser.name), lambda: _truth_state(env, chaser))


def _truth_state(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> dict[str, torch.Tensor]:
    latch = _latch(chaser)
    port_pos, port_vel, port_axes = latch.target_point()
    tip_pos, tip_vel = latch.own_point()
    world_to_port = port_axes.transpose(-1, -2)
    body = env.scene.view.frames()["Q"][:, chaser.handle.root_body]
    probe_axis = latch.body_rotation()[..., :, 2]
    mis = torch.acos((-(probe_axis * port_axes[..., :, 2]).sum(-1)).clamp(-1.0, 1.0))
    return {
        "pos": rotate_inverse(port_axes, tip_pos - port_pos),
        "vel": rotate_inverse(port_axes, tip_vel - port_vel),
        "body_to_port": world_to_port @ body,
        "misalignment": mis,
    }


def approach_speed_limit(
    range_m: torch.Tensor, final_mps: float, max_mps: float, time_constant_s: float
) -> torch.Tensor:
    """Glideslope speed: final_mps + range / time_constant_s, capped at max_mps, m/s."""
    return (final_mps + range_m.clamp_min(0.0) / time_constant_s).clamp(max=max_mps)


# --------------------------------------------------------------- observations
def state_of(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool
) -> dict[str, torch.Tensor]:
    """`truth_state` if `truth`, else `measured_state_env`."""
    return truth_state(env, chaser) if truth else measured_state_env(env, chaser)


def error_quaternion(env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool) -> torch.Tensor:
    """`error_quaternion_from` of the true or measured body -> port rotation, once per
    simulation state (shared, read-only)."""
    return env.scene.view.memo(
        ("docking/error_quaternion", chaser.name, bool(truth)),
        lambda: error_quaternion_from(state_of(env, chaser, truth)["body_to_port"]),
    )


def rotation_vector(env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool) -> torch.Tensor:
    """`rotation_vector_from` of the true or measured body -> port rotation, once per
    simulation state (shared, read-only)."""
    return env.scene.view.memo(
        ("docking/rotation_vector", chaser.name, bool(truth)),
        lambda: rotation_vector_from_quat(error_quaternion(env, chaser, truth)),
    )


def tip_position(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool = False
) -> torch.Tensor:
    """Probe tip relative to the port, port axes, m (N, 3)."""
    return state_of(env, chaser, truth)["pos"]


def tip_velocity(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool = False
) -> torch.Tensor:
    """Probe tip velocity relative to the port, port axes, m/s (N, 3)."""
    return state_of(env, chaser, truth)["vel"]


def docking_attitude_error(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool = False
) -> torch.Tensor:
    """Vector part of the error quaternion from the docking attitude (N, 3)."""
    return error_quaternion(env, chaser, truth)[:, 1:]


def latch_features(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> torch.Tensor:
    """Latch sensor [contact, latched, distance, closing speed, lateral, misalignment],
    normalised: distance by 10 m, speed by the latch's 0.1 m/s, lateral by its 5 cm,
    misalignment by its 5 deg; each clipped to +-10 (N, 6)."""
    latch = _latch(chaser)
    cfg = latch.cfg
    scale = torch.tensor(
        [
            1.0,
            1.0,
            0.1,
            1.0 / cfg.max_closing_speed_mps,
            1.0 / cfg.max_lateral_m,
            1.0 / cfg.max_misalignment_rad,
        ],
        dtype=torch.float64,
        device=env.device,
    )
    return (latch.value * scale).clamp(-10.0, 10.0)


def body_rates(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> torch.Tensor:
    """True body rates, rad/s (N, 3) (privileged)."""
    return chaser.data.root_ang_vel_b


# ---------------------------------------------------------------- terminations
class capture(Stateful):
    """The latch sensor has closed, split by how the probe arrived (`soft` True: a soft
    capture, the task's success; False: a hard impact, a failure).

    The latch checks the closing speed in the physics step it closes; a probe that hits
    the receptacle too fast rebounds and passes through a slow instant while still in
    contact distance, which the latch accepts. So the approach is soft only if the
    closing speed along the port axis was within the latch's limit at the last
    `window_steps` environment steps too (the pre-impact speed is among them).
    """

    state_attrs = ("history",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        window = int(cfg.params.get("window_steps", 3))
        self.history = torch.zeros((env.num_envs, window), dtype=torch.float64, device=env.device)

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        chaser: SceneEntityCfg,
        soft: bool = True,
        window_steps: int = 3,
    ) -> torch.Tensor:
        latch = _latch(chaser)
        closing = -truth_state(env, chaser)["vel"][:, 2]
        fresh = (env.episode_length_buf <= 1)[:, None]
        self.history = torch.where(
            fresh, closing[:, None], torch.cat([self.history[:, 1:], closing[:, None]], -1)
        )
        gentle = self.history.amax(-1) <= latch.cfg.max_closing_speed_mps
        return latch.latched & (gentle if soft else ~gentle)


def target_contact(
    env: ManagerBasedRLEnv, target: SceneEntityCfg, threshold: float = 1e-6
) -> torch.Tensor:
    """Any contact force on the target: its free joint's constraint force (N, N m).

    The scene holds no other constraints (no equalities, limits or world geoms), so a
    non-zero `qfrc_constraint` on the target's six free-joint DOFs means a contact
    between the chaser and the target in the last physics step. Works on both backends
    (MuJoCo's solver output, bound like qpos), unlike per-contact records.
    """
    handle = target.handle
    qfrc = env.scene.view.array("qfrc_constraint")[:, handle.dof_adr : handle.dof_adr + 6]
    return qfrc.abs().amax(-1) > threshold


def in_port(
    pos: torch.Tensor,
    throat_half_width_m: float = 0.08,
    mouth_depth_m: float = 0.30,
    funnel_slope: float = 0.733,
    margin_m: float = 0.05,
) -> torch.Tensor:
    """The probe tip is inside the drogue's funnel (with a margin): contacts there are part
    of docking, not collisions. Funnel: half-width 0.08 m at the port, growing by 0.733 m
    per m (36.25 deg half-angle) to the mouth 0.30 m out."""
    along = pos[:, 2]
    lateral = torch.linalg.vector_norm(pos[:, :2], dim=-1)
    width = throat_half_width_m + funnel_slope * along.clamp(0.0, mouth_depth_m)
    return (
        (along >= -margin_m) & (along <= mouth_depth_m + margin_m) & (lateral <= width + margin_m)
    )


def collision(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, target: SceneEntityCfg
) -> torch.Tensor:
    """Chaser-target contact while the probe tip is not inside the port's funnel."""
    return target_contact(env, target) & ~in_port(truth_state(env, chaser)["pos"])


def left_corridor(
    env: ManagerBasedRLEnv,
    chaser: SceneEntityCfg,
    half_angle_deg: float = 30.0,
    cone_start_m: float = 2.0,
    max_range_m: float = 45.0,
) -> torch.Tensor:
    """The probe tip left the approach corridor: beyond `cone_start_m` from the port, more
    than `half_angle_deg` off the port axis; inside it, further from the axis than the
    cone's radius there; behind the port plane; or beyond `max_range_m`."""
    pos = truth_state(env, chaser)["pos"]
    rng = torch.linalg.vector_norm(pos, dim=-1)
    along = pos[:, 2]
    lateral = torch.linalg.vector_norm(pos[:, :2], dim=-1)
    half = half_angle_deg * DEG
    outside_cone = (rng > cone_start_m) & (along < rng * math.cos(half))
    outside_tube = (rng <= cone_start_m) & (lateral > cone_start_m * math.sin(half))
    return outside_cone | outside_tube | (along < -0.2) | (rng > max_range_m)


# -------------------------------------------------------------------- rewards
def progress(
    env: ManagerBasedRLEnv,
    chaser: SceneEntityCfg,
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
) -> torch.Tensor:
    """Range rate towards the port, m/s, capped at the glideslope speed for the range (no
    reward for rushing in); its time integral is the range gained."""
    state = truth_state(env, chaser)
    rng, closing = range_and_closing_speed(state["pos"], state["vel"])
    return torch.minimum(closing, approach_speed_limit(rng, final_mps, max_mps, time_constant_s))


def misalignment(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> torch.Tensor:
    """Angle between the probe axis and the port's inward axis, rad."""
    return truth_state(env, chaser)["misalignment"]


def overspeed(
    env: ManagerBasedRLEnv,
    chaser: SceneEntityCfg,
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
) -> torch.Tensor:
    """Closing speed along the port axis above the glideslope speed for the range, m/s."""
    state = truth_state(env, chaser)
    rng = torch.linalg.vector_norm(state["pos"], dim=-1)
    limit = approach_speed_limit(rng, final_mps, max_mps, time_constant_s)
    return (-state["vel"][:, 2] - limit).clamp_min(0.0)


def thruster_force_sum(env: ManagerBasedRLEnv, actuator_cfg: SceneEntityCfg) -> torch.Tensor:
    """Sum of the commanded forces of the thruster group of `actuator_cfg`, N (propellant
    flow is proportional)."""
    return actuator_cfg.actuator.command.sum(-1)


def termination_impulse(env: ManagerBasedRLEnv, terms: tuple[str, ...]) -> torch.Tensor:
    """1 / step_dt when any of the named terminations fired this step (weight = the
    one-off reward)."""
    last = env.termination_manager.last
    fired = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    for name in terms:
        fired |= last[name]
    return fired.to(torch.float32) / env.step_dt


# --------------------------------------------------------------------- events
def reset_chaser_in_corridor(
    env: ManagerBasedRLEnv,
    env_ids: torch.Tensor,
    chaser: SceneEntityCfg,
    range_m: tuple[float, float],
    max_lateral_m: float,
    max_speed_mps: float,
    max_attitude_deg: float,
    max_rate_deg_s: float,
    max_lateral_per_range: float | None = None,
) -> None:
    """Put the probe tip `range_m` out along the port axis with a lateral offset (uniform
    in a disc of radius `max_lateral_m`, or `max_lateral_per_range` x the tip's distance
    along the axis where that is smaller), the chaser near the docking attitude (random
    axis, angle up to `max_attitude_deg`), a velocity uniform in +-`max_speed_mps` per
    axis (world axes, relative to the chief) and body rates in +-`max_rate_deg_s`."""
    gen, kw = env.event_manager.generator, {"dtype": torch.float64, "device": env.device}
    n = env_ids.numel()

    def uniform(*shape):
        return torch.rand(shape, generator=gen, **kw)

    env.scene.view.invalidate()
    latch = _latch(chaser)
    port_pos, _, port_axes = (x[env_ids] for x in latch.target_point())
    rng = range_m[0] + (range_m[1] - range_m[0]) * uniform(n)
    max_radius = torch.full_like(rng, max_lateral_m)
    if max_lateral_per_range is not None:
        max_radius = max_radius.clamp(max=max_lateral_per_range * rng)
    radius = max_radius * uniform(n).sqrt()
    phi = 2.0 * math.pi * uniform(n)
    tip_port = torch.stack([radius * torch.cos(phi), radius * torch.sin(phi), rng], -1)
    tip = port_pos + (port_axes @ tip_port[..., None])[..., 0]
    axis = torch.randn((n, 3), generator=gen, **kw)
    axis = axis / torch.linalg.vector_norm(axis, dim=-1, keepdim=True)
    angle = max_attitude_deg * DEG * uniform(n)
    tilt = quat_to_matrix(quat_from_rotation_vector(axis * angle[:, None]))
    body = port_axes @ docking_rotation(port_axes) @ tilt
    tip_in_root = torch.as_tensor(
        site_in_root(env.scene.mj_model, _site(chaser, "probe_tip"), chaser.handle.root_body),
        **kw,
    )
    root = tip - (body @ tip_in_root.expand(n, 3)[..., None])[..., 0]
    chaser.handle.set_root_state(
        env_ids,
        pos_m=root,
        quat=quat_from_matrix(body),
        lin_vel_mps=max_speed_mps * (2.0 * uniform(n, 3) - 1.0),
        ang_vel_body=max_rate_deg_s * DEG * (2.0 * uniform(n, 3) - 1.0),
        refresh=False,  # the env refreshes once after every reset event
    )


# ------------------------------------------------- RL shaping (reference velocity field)
def probe_misalignment_from(body_to_port: torch.Tensor) -> torch.Tensor:
    """Angle between the probe (body +x) and the port's inward axis (-z), rad (N,)."""
    return torch.acos((-body_to_port[:, 2, 0]).clamp(-1.0, 1.0))


def reference_velocity(
    pos: torch.Tensor,
    misalignment: torch.Tensor,
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
    speed_fraction: float = 0.85,
    lateral_time_s: float = 8.0,
    max_lateral_mps: float = 0.1,
    align_range_m: float = 3.0,
    align_deg: float = 2.5,
) -> torch.Tensor:
    """Desired probe tip velocity (port axes, m/s, (N, 3)) at tip position `pos`: the
    baseline's guidance as a smooth field. Lateral: -offset / `lateral_time_s`, capped at
    `max_lateral_mps`. Closing: `speed_fraction` x the glideslope speed v(r), faded out
    linearly while the tip is between 1 and 2 x (2 cm + 0.1 r) off the axis, and, within
    `align_range_m`, while the probe is between 1 and 2 x `align_deg` misaligned."""
    rng = torch.linalg.vector_norm(pos, dim=-1)
    lat_vec = pos[:, :2]
    lat = torch.linalg.vector_norm(lat_vec, dim=-1)
    v_lat = -lat_vec / lateral_time_s
    v_lat = (
        v_lat * ((max_lateral_mps / (lat / lateral_time_s).clamp_min(1e-9)).clamp(max=1.0))[:, None]
    )
    allowed = 0.02 + 0.1 * rng
    gate = (2.0 - lat / allowed).clamp(0.0, 1.0)
    align = (2.0 - misalignment / (align_deg * DEG)).clamp(0.0, 1.0)
    gate = gate * torch.where(rng < align_range_m, align, torch.ones_like(align))
    closing = speed_fraction * approach_speed_limit(rng, final_mps, max_mps, time_constant_s) * gate
    return torch.cat([v_lat, -closing[:, None]], -1)


def velocity_error(
    env: ManagerBasedRLEnv,
    chaser: SceneEntityCfg,
    truth: bool = False,
    body_axes: bool = False,
    **glideslope,
) -> torch.Tensor:
    """Tip velocity minus `reference_velocity` at the tip position, m/s (N, 3), in port
    axes (or chaser body axes: the axes of the force action). Measured (sensor-only)
    unless `truth`."""
    state = state_of(env, chaser, truth)
    mis = probe_misalignment_from(state["body_to_port"])
    err = state["vel"] - reference_velocity(state["pos"], mis, **glideslope)
    if body_axes:
        err = rotate_inverse(state["body_to_port"], err)
    return err


def velocity_tracking(env: ManagerBasedRLEnv, chaser: SceneEntityCfg, **glideslope) -> torch.Tensor:
    """|true tip velocity - reference velocity|, m/s."""
    return torch.linalg.vector_norm(velocity_error(env, chaser, True, **glideslope), dim=-1)


def velocity_tracking_kernel(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, sigma_mps: float, **glideslope
) -> torch.Tensor:
    """1 - exp(-|v - v_ref| / sigma): a cost in [0, 1), steep within ~sigma of the field."""
    return 1.0 - torch.exp(-velocity_tracking(env, chaser, **glideslope) / sigma_mps)


def approach_potential(pos: torch.Tensor, range_scale_m: float, lateral_scale_m: float):
    """exp(-range / range_scale) x exp(-lateral / lateral_scale) of the tip position `pos`
    (port axes, m): 1 at the port on its axis, falling off with the distance and, more
    steeply, with the offset from the axis (N,)."""
    rng = torch.linalg.vector_norm(pos, dim=-1)
    lat = torch.linalg.vector_norm(pos[:, :2], dim=-1)
    return torch.exp(-rng / range_scale_m - lat / lateral_scale_m)


class approach_progress(Stateful):
    """Rate of change of `approach_potential` at the true tip position, 1/s (potential-based
    shaping: over an episode it sums to the potential's change, so it pays for moving into
    the port region on its axis, never for staying there, and takes back what a retreat
    gives up). A cost that grows near the port (a lateral-offset penalty weighted by
    proximity) would instead push a policy that is still off the axis away from the port.
    The first step of an episode (no previous potential) gives 0.

    With the glideslope's parameters (`final_mps`, `max_mps`, `time_constant_s`), the gain
    that comes from closing faster than the glideslope speed v(r) is taken back: the term
    is dphi/dt - phi x max(closing - v(r), 0) / range_scale_m, so an arrival faster than
    the glideslope earns per second what one at v(r) earns (the discount would otherwise
    make the shaping pay for rushing into the port, and a rush ends in a hard impact)."""

    state_attrs = ("previous",)

    def __init__(self, cfg, env: ManagerBasedRLEnv):
        self.previous = torch.zeros(env.num_envs, dtype=torch.float64, device=env.device)

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        chaser: SceneEntityCfg,
        range_scale_m: float,
        lateral_scale_m: float,
        final_mps: float | None = None,
        max_mps: float | None = None,
        time_constant_s: float | None = None,
    ) -> torch.Tensor:
        state = truth_state(env, chaser)
        phi = approach_potential(state["pos"], range_scale_m, lateral_scale_m)
        fresh = env.episode_length_buf <= 1
        rate = torch.where(fresh, 0.0, phi - self.previous) / env.step_dt
        self.previous = phi
        if final_mps is not None and max_mps is not None and time_constant_s is not None:
            rng, closing = range_and_closing_speed(state["pos"], state["vel"])
            limit = approach_speed_limit(rng, final_mps, max_mps, time_constant_s)
            rate = rate - phi * (closing - limit).clamp_min(0.0) / range_scale_m
        return rate


def attitude_kernel(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, sigma_rad: float
) -> torch.Tensor:
    """1 - exp(-angle / sigma), angle of the true rotation away from the docking attitude
    (roll included), rad."""
    vec = error_quaternion(env, chaser, True)[:, 1:]
    angle = 2.0 * torch.asin(torch.linalg.vector_norm(vec, dim=-1).clamp(max=1.0))
    return 1.0 - torch.exp(-angle / sigma_rad)


def body_rate_norm(env: ManagerBasedRLEnv, chaser: SceneEntityCfg) -> torch.Tensor:
    """|true body rate|, rad/s."""
    return torch.linalg.vector_norm(body_rates(env, chaser), dim=-1)


def rotation_vector_from(body_to_port: torch.Tensor) -> torch.Tensor:
    """Rotation vector (axis x angle, rad, body axes) of the chaser's rotation away from
    the docking attitude (N, 3)."""
    return rotation_vector_from_quat(error_quaternion_from(body_to_port))


def reference_rate(
    rotation: torch.Tensor, gain_per_s: float = 0.1, max_rate_rad_s: float = 0.5 * DEG
) -> torch.Tensor:
    """Desired body rate for the attitude error `rotation` (rotation vector, body axes):
    -gain x rotation, capped at `max_rate_rad_s` (rad/s, (N, 3))."""
    angle = torch.linalg.vector_norm(rotation, dim=-1, keepdim=True)
    speed = (gain_per_s * angle).clamp(max=max_rate_rad_s)
    return -rotation * speed / angle.clamp_min(1e-12)


def rate_error(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, truth: bool = False, **params
) -> torch.Tensor:
    """Body rate minus `reference_rate` of the attitude error, rad/s (N, 3); measured (gyro
    and star tracker) unless `truth`."""
    rate = body_rates(env, chaser) if truth else chaser.sensors["gyro"].value
    return rate - reference_rate(rotation_vector(env, chaser, truth), **params)


def rate_tracking(env: ManagerBasedRLEnv, chaser: SceneEntityCfg, **params) -> torch.Tensor:
    """|true body rate - reference rate|, rad/s."""
    return torch.linalg.vector_norm(rate_error(env, chaser, truth=True, **params), dim=-1)


def rate_tracking_kernel(
    env: ManagerBasedRLEnv, chaser: SceneEntityCfg, sigma_rad_s: float, **params
) -> torch.Tensor:
    """1 - exp(-|omega - omega_ref| / sigma)."""
    return 1.0 - torch.exp(-rate_tracking(env, chaser, **params) / sigma_rad_s)
