"""Docking's observation, reward and termination terms as kernel terms (`orbitlab.fw.terms`).

Each term is the per-world twin of the torch term of the same name in `mdp` (same params,
same meaning), which stays as the reference its tests compare against. The docking state is
recomputed inside each term's function from the kernel's arrays (the body frames and the
fused sensors' held values) instead of being kept between terms: a few hundred flops per
world, against a tensor cache that a captured step could not refresh.

* truth (`truth_state`): probe tip relative to the port (port axes), the body -> port
  rotation and the probe's misalignment, from the body frames and the latch sensor's
  geometry;
* measured (`measured_state`): the same position, velocity and rotation from the relative
  nav, star tracker, gyro and GNSS readings only. Where one of these sensors is not in the
  kernel's arrays (`SceneCfg.fused_sensors=False`, or latency) the term runs as its torch
  twin.

The math follows the torch terms' order of operations: rewards and flags are bit for bit
those of the torch terms on the rollouts checked (whole baseline episodes with captures), but
torch's `vector_norm` may round a norm differently in its last bit (it accumulates with fused
multiply-adds), so an observation may differ by one float32 ulp, and the tests compare to
float32 rounding.
"""

# No `from __future__ import annotations` here: Warp reads the functions' annotations as
# objects.

import math
from typing import Any

import numpy as np

from orbitlab.envs.mdp.kernel_terms import root_dof, root_rate, sensor_columns, vector_type
from orbitlab.fw.quat import (
    hill_frame,
    quat_from_matrix,
    quat_to_matrix,
    rotate,
    rotate_inverse,
    rotation_vector_from_quat,
)
from orbitlab.fw.sensor_kernel import own_point, target_point
from orbitlab.fw.terms import KernelUnavailable, TermBuild, kernel_term
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sensors.navigation import DockingLatch
from orbitlab_tasks.docking import mdp

f64 = wp.float64
DEG = math.pi / 180.0
_DOCKING_ROTATION = wp.mat33d(*(x for row in mdp.DOCKING_ROTATION for x in row))


def _vec3(values) -> Any:
    return wp.vec3d(*(float(x) for x in values.tolist()))


def _mat33(values) -> Any:
    return wp.mat33d(*(float(x) for row in values.tolist() for x in row))


@wp.func
def norm3(v: wp.vec3d) -> wp.float64:
    """|v| (x, y, z summed in order)."""
    return wp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@wp.func
def lateral(v: wp.vec3d) -> wp.float64:
    """|(v_x, v_y)|: the offset from the port axis."""
    return wp.sqrt(v[0] * v[0] + v[1] * v[1])


@wp.func
def approach_speed_limit(
    range_m: wp.float64, final_mps: wp.float64, max_mps: wp.float64, tau_s: wp.float64
) -> wp.float64:
    """`mdp.approach_speed_limit`: final + range / tau, capped at max, m/s."""
    return wp.min(final_mps + wp.max(range_m, f64(0.0)) / tau_s, max_mps)


@wp.func
def closing_speed(st: Any, range_m: wp.float64) -> wp.float64:
    """-d|pos|/dt = -(pos . vel) / |pos| of a docking state whose range is `range_m`, m/s
    (`range_and_closing_speed`)."""
    dot = st.pos[0] * st.vel[0] + st.pos[1] * st.vel[1] + st.pos[2] * st.vel[2]
    return -dot / wp.max(range_m, f64(1.0e-6))


@wp.func
def error_quaternion(body_to_port: wp.mat33d) -> wp.vec4d:
    """`mdp.error_quaternion_from`: the rotation away from the docking attitude."""
    return quat_from_matrix(wp.transpose(_DOCKING_ROTATION) @ body_to_port)


@wp.struct
class DockingState:
    """The docking state of one world: the probe tip relative to the port, port axes (m,
    m/s; the measured velocity takes the port as inertially fixed), the chaser's body ->
    port rotation and (truth only) the probe's misalignment, rad."""

    pos: wp.vec3d
    vel: wp.vec3d
    body_to_port: wp.mat33d
    misalignment: wp.float64


def _truth(build: TermBuild, chaser: SceneEntityCfg):
    """`truth(w, s) -> DockingState`, `mdp.truth_state` of one world."""
    build.frames()
    latch = chaser.sensors["latch"]
    if not isinstance(latch, DockingLatch):
        raise TypeError(f"{build.term}: sensor 'latch' of '{chaser.name}' is not a DockingLatch")
    view = build.env.scene.view
    body, target, root = int(latch.body), int(latch.target), int(chaser.handle.root_body)
    mount_arm, target_arm = _vec3(latch.mount_arm), _vec3(latch.target_arm)
    port_rotation, mount = _mat33(latch.target_rotation), _mat33(latch.mount_rotation)
    free = view.free_joint(body)
    qadr = -1 if free is None else int(free[0])
    mounted = int(latch.site >= 0)

    @wp.func
    def truth(w: int, s: Any):
        port_pos, port_vel = target_point(s.frames, w, target, target_arm)
        port_axes = s.frames.Q[w, target] @ port_rotation
        tip_pos, tip_vel = own_point(s.frames, w, body, mount_arm)
        probe = s.frames.Q[w, body]
        if wp.static(qadr >= 0):  # a free root's rotation from its quaternion, as the latch's
            a = wp.static(qadr)
            probe = quat_to_matrix(
                wp.vec4d(
                    f64(s.qpos[w, a + 3]),
                    f64(s.qpos[w, a + 4]),
                    f64(s.qpos[w, a + 5]),
                    f64(s.qpos[w, a + 6]),
                )
            )
        if wp.static(mounted != 0):
            probe = probe @ mount
        port_z = wp.vec3d(port_axes[0, 2], port_axes[1, 2], port_axes[2, 2])
        probe_z = wp.vec3d(probe[0, 2], probe[1, 2], probe[2, 2])
        mis = wp.acos(wp.clamp(-wp.dot(probe_z, port_z), f64(-1.0), f64(1.0)))
        state = DockingState()
        state.pos = rotate_inverse(port_axes, tip_pos - port_pos)
        state.vel = rotate_inverse(port_axes, tip_vel - port_vel)
        state.body_to_port = wp.transpose(port_axes) @ s.frames.Q[w, root]
        state.misalignment = mis
        return state

    return truth


def _columns(build: TermBuild, chaser: SceneEntityCfg, name: str) -> int:
    """The first column of sensor `name`'s held values in the kernel's `sensors` array."""
    return sensor_columns(build, chaser.sensors[name], f"{name!r} of '{chaser.name}'")[0]


@wp.func
def _held3(s: Any, w: int, c: int) -> wp.vec3d:
    return wp.vec3d(s.sensors[w, c], s.sensors[w, c + 1], s.sensors[w, c + 2])


@wp.func
def _held4(s: Any, w: int, c: int) -> wp.vec4d:
    return wp.vec4d(s.sensors[w, c], s.sensors[w, c + 1], s.sensors[w, c + 2], s.sensors[w, c + 3])


def _measured(build: TermBuild, chaser: SceneEntityCfg):
    """`measured(w, s) -> DockingState`, `mdp.measured_state` of one world (misalignment
    0)."""
    nav, star = _columns(build, chaser, "relative_nav"), _columns(build, chaser, "star_tracker")
    gyro, gnss = _columns(build, chaser, "gyro"), _columns(build, chaser, "gnss")
    lever = _vec3(mdp.probe_lever(build.env, chaser).cpu())

    @wp.func
    def measured(w: int, s: Any):
        r = _held3(s, w, gnss)
        v = _held3(s, w, gnss + 3)
        rate = norm3(wp.cross(r, v)) / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
        omega_hill = wp.vec3d(f64(0.0), f64(0.0), rate)
        body_to_hill = hill_frame(r, v) @ quat_to_matrix(_held4(s, w, star))
        port_to_hill = quat_to_matrix(_held4(s, w, nav + 6))
        rho = _held3(s, w, nav)
        rho_dot = _held3(s, w, nav + 3)
        pos_h = -rho + rotate(body_to_hill, lever)
        vel_h = -(rho_dot + wp.cross(omega_hill, rho)) + rotate(
            body_to_hill, wp.cross(_held3(s, w, gyro), lever)
        )
        state = DockingState()
        state.pos = rotate_inverse(port_to_hill, pos_h)
        state.vel = rotate_inverse(port_to_hill, vel_h)
        state.body_to_port = wp.transpose(port_to_hill) @ body_to_hill
        return state

    return measured


def _state(build: TermBuild, chaser: SceneEntityCfg, truth: bool):
    """`state(w, s) -> DockingState`: `mdp.state_of` of one world."""
    return _truth(build, chaser) if truth else _measured(build, chaser)


def _reference_velocity(
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
    speed_fraction: float = 0.85,
    lateral_time_s: float = 8.0,
    max_lateral_mps: float = 0.1,
    align_range_m: float = 3.0,
    align_deg: float = 2.5,
):
    """`reference(pos, misalignment) -> vel`: `mdp.reference_velocity` with these params."""
    final, top, tau = f64(final_mps), f64(max_mps), f64(time_constant_s)
    fraction, lat_time, lat_max = f64(speed_fraction), f64(lateral_time_s), f64(max_lateral_mps)
    align_range, align_rad = f64(align_range_m), f64(align_deg * DEG)

    @wp.func
    def reference(pos: wp.vec3d, misalignment: wp.float64) -> wp.vec3d:
        rng = norm3(pos)
        lat = lateral(pos)
        cap = wp.min(lat_max / wp.max(lat / lat_time, f64(1.0e-9)), f64(1.0))
        v_x = -pos[0] / lat_time * cap
        v_y = -pos[1] / lat_time * cap
        allowed = f64(0.02) + f64(0.1) * rng
        gate = wp.clamp(f64(2.0) - lat / allowed, f64(0.0), f64(1.0))
        align = wp.clamp(f64(2.0) - misalignment / align_rad, f64(0.0), f64(1.0))
        if rng < align_range:
            gate = gate * align
        closing = fraction * approach_speed_limit(rng, final, top, tau) * gate
        return wp.vec3d(v_x, v_y, -closing)

    return reference


def _reference_rate(gain_per_s: float = 0.1, max_rate_rad_s: float = 0.5 * DEG):
    """`reference(rotation) -> rate`: `mdp.reference_rate` with these params."""
    gain, top = f64(gain_per_s), f64(max_rate_rad_s)

    @wp.func
    def reference(rotation: wp.vec3d) -> wp.vec3d:
        angle = norm3(rotation)
        speed = wp.min(gain * angle, top)
        return -rotation * speed / wp.max(angle, f64(1.0e-12))

    return reference


def _velocity_error(build, chaser, truth, body_axes, glideslope):
    state, reference = _state(build, chaser, truth), _reference_velocity(**glideslope)

    @wp.func
    def error(w: int, s: Any) -> wp.vec3d:
        st = state(w, s)
        mis = wp.acos(wp.clamp(-st.body_to_port[2, 0], f64(-1.0), f64(1.0)))
        err = st.vel - reference(st.pos, mis)
        if wp.static(body_axes):
            err = rotate_inverse(st.body_to_port, err)
        return err

    return error


def _rate_error(build, chaser, truth, params):
    state, reference = _state(build, chaser, truth), _reference_rate(**params)
    rate_at = _body_rate(build, chaser) if truth else _gyro(build, chaser)

    @wp.func
    def error(w: int, s: Any) -> wp.vec3d:
        st = state(w, s)
        rotation = rotation_vector_from_quat(error_quaternion(st.body_to_port))
        return rate_at(w, s) - reference(rotation)

    return error


def _body_rate(build, chaser):
    dof = root_dof(chaser, build)

    @wp.func
    def rate(w: int, s: Any) -> wp.vec3d:
        return root_rate(s, w, dof)

    return rate


def _gyro(build, chaser):
    first = _columns(build, chaser, "gyro")

    @wp.func
    def rate(w: int, s: Any) -> wp.vec3d:
        return _held3(s, w, first)

    return rate


# --------------------------------------------------------------- observations
def _tip(build: TermBuild, chaser: SceneEntityCfg, truth: bool, velocity: bool):
    """The probe tip's position or (`velocity`) velocity relative to the port, port axes."""
    state = _state(build, chaser, truth)

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        st = state(w, s)
        if wp.static(velocity):
            return st.vel
        return st.pos

    return f, 3


@kernel_term(twin=mdp.tip_position)
def tip_position(build: TermBuild, chaser: SceneEntityCfg, truth: bool = False):
    """Probe tip relative to the port, port axes, m (`mdp.tip_position`)."""
    return _tip(build, chaser, truth, velocity=False)


@kernel_term(twin=mdp.tip_velocity)
def tip_velocity(build: TermBuild, chaser: SceneEntityCfg, truth: bool = False):
    """Probe tip velocity relative to the port, port axes, m/s (`mdp.tip_velocity`)."""
    return _tip(build, chaser, truth, velocity=True)


@kernel_term(twin=mdp.docking_attitude_error)
def docking_attitude_error(build: TermBuild, chaser: SceneEntityCfg, truth: bool = False):
    """Vector part of the error quaternion from the docking attitude
    (`mdp.docking_attitude_error`)."""
    state = _state(build, chaser, truth)

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        st = state(w, s)
        q = error_quaternion(st.body_to_port)
        return wp.vec3d(q[1], q[2], q[3])

    return f, 3


@kernel_term(twin=mdp.latch_features)
def latch_features(build: TermBuild, chaser: SceneEntityCfg):
    """The latch sensor's reading, normalised and clipped to +-10 (`mdp.latch_features`)."""
    latch = chaser.sensors["latch"]
    first = _columns(build, chaser, "latch")
    cfg = latch.cfg
    scale = [
        f64(x)
        for x in (
            1.0,
            1.0,
            0.1,
            1.0 / cfg.max_closing_speed_mps,
            1.0 / cfg.max_lateral_m,
            1.0 / cfg.max_misalignment_rad,
        )
    ]
    value_type = vector_type(6)

    @wp.func
    def f(w: int, s: Any) -> value_type:
        out = value_type()
        for c in range(wp.static(6)):
            value = s.sensors[w, first + c] * wp.static(scale[c])
            out[c] = wp.clamp(value, f64(-10.0), f64(10.0))
        return out

    return f, 6


@kernel_term(twin=mdp.body_rates)
def body_rates(build: TermBuild, chaser: SceneEntityCfg):
    """True body rates, rad/s (`mdp.body_rates`, privileged)."""
    return _body_rate(build, chaser), 3


@kernel_term(twin=mdp.velocity_error)
def velocity_error(
    build: TermBuild,
    chaser: SceneEntityCfg,
    truth: bool = False,
    body_axes: bool = False,
    **glideslope,
):
    """Tip velocity minus the reference velocity, m/s, port or body axes
    (`mdp.velocity_error`)."""
    return _velocity_error(build, chaser, truth, body_axes, glideslope), 3


@kernel_term(twin=mdp.rate_error)
def rate_error(build: TermBuild, chaser: SceneEntityCfg, truth: bool = False, **params):
    """Body rate minus the reference rate of the attitude error, rad/s (`mdp.rate_error`)."""
    return _rate_error(build, chaser, truth, params), 3


# -------------------------------------------------------------------- rewards
@kernel_term(twin=mdp.progress)
def progress(
    build: TermBuild,
    chaser: SceneEntityCfg,
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
):
    """Range rate towards the port, capped at the glideslope speed, m/s (`mdp.progress`)."""
    truth = _truth(build, chaser)
    final, top, tau = f64(final_mps), f64(max_mps), f64(time_constant_s)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        st = truth(w, s)
        rng = norm3(st.pos)
        return wp.min(closing_speed(st, rng), approach_speed_limit(rng, final, top, tau))

    return f


@kernel_term(twin=mdp.misalignment)
def misalignment(build: TermBuild, chaser: SceneEntityCfg):
    """Angle between the probe axis and the port's inward axis, rad (`mdp.misalignment`)."""
    truth = _truth(build, chaser)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return truth(w, s).misalignment

    return f


@kernel_term(twin=mdp.overspeed)
def overspeed(
    build: TermBuild,
    chaser: SceneEntityCfg,
    final_mps: float,
    max_mps: float,
    time_constant_s: float,
):
    """Closing speed above the glideslope speed, m/s (`mdp.overspeed`)."""
    truth = _truth(build, chaser)
    final, top, tau = f64(final_mps), f64(max_mps), f64(time_constant_s)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        st = truth(w, s)
        limit = approach_speed_limit(norm3(st.pos), final, top, tau)
        return wp.max(-st.vel[2] - limit, f64(0.0))

    return f


@kernel_term(twin=mdp.velocity_tracking)
def velocity_tracking(build: TermBuild, chaser: SceneEntityCfg, **glideslope):
    """|true tip velocity - reference velocity|, m/s (`mdp.velocity_tracking`)."""
    error = _velocity_error(build, chaser, True, False, glideslope)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return norm3(error(w, s))

    return f


@kernel_term(twin=mdp.velocity_tracking_kernel)
def velocity_tracking_kernel(
    build: TermBuild, chaser: SceneEntityCfg, sigma_mps: float, **glideslope
):
    """1 - exp(-|v - v_ref| / sigma) (`mdp.velocity_tracking_kernel`)."""
    error, sigma = _velocity_error(build, chaser, True, False, glideslope), f64(sigma_mps)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return f64(1.0) - wp.exp(-norm3(error(w, s)) / sigma)

    return f


@kernel_term(twin=mdp.approach_progress)
def approach_progress(
    build: TermBuild,
    chaser: SceneEntityCfg,
    range_scale_m: float,
    lateral_scale_m: float,
    final_mps: float | None = None,
    max_mps: float | None = None,
    time_constant_s: float | None = None,
):
    """Rate of change of the approach potential, less the gain of closing faster than the
    glideslope (`mdp.approach_progress`); keeps the last potential in one `term_state`
    column."""
    truth, col = _truth(build, chaser), build.state(1)
    range_scale, lateral_scale = f64(range_scale_m), f64(lateral_scale_m)
    glide = final_mps is not None and max_mps is not None and time_constant_s is not None
    final, top, tau = (f64(x or 0.0) for x in (final_mps, max_mps, time_constant_s))

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        st = truth(w, s)
        rng = norm3(st.pos)
        phi = wp.exp(-rng / range_scale - lateral(st.pos) / lateral_scale)
        rate = f64(0.0)
        if s.episode_length[w] > wp.int64(1):
            rate = (phi - s.term_state[w, col]) / s.step_dt
        s.term_state[w, col] = phi
        if wp.static(glide):
            closing = closing_speed(st, rng)
            limit = approach_speed_limit(rng, final, top, tau)
            rate = rate - phi * wp.max(closing - limit, f64(0.0)) / range_scale
        return rate

    return f


@kernel_term(twin=mdp.attitude_kernel)
def attitude_kernel(build: TermBuild, chaser: SceneEntityCfg, sigma_rad: float):
    """1 - exp(-angle / sigma) of the true rotation away from the docking attitude
    (`mdp.attitude_kernel`)."""
    state, sigma = _state(build, chaser, True), f64(sigma_rad)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        st = state(w, s)
        q = error_quaternion(st.body_to_port)
        angle = f64(2.0) * wp.asin(wp.min(norm3(wp.vec3d(q[1], q[2], q[3])), f64(1.0)))
        return f64(1.0) - wp.exp(-angle / sigma)

    return f


@kernel_term(twin=mdp.rate_tracking)
def rate_tracking(build: TermBuild, chaser: SceneEntityCfg, **params):
    """|true body rate - reference rate|, rad/s (`mdp.rate_tracking`)."""
    error = _rate_error(build, chaser, True, params)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return norm3(error(w, s))

    return f


@kernel_term(twin=mdp.rate_tracking_kernel)
def rate_tracking_kernel(build: TermBuild, chaser: SceneEntityCfg, sigma_rad_s: float, **params):
    """1 - exp(-|omega - omega_ref| / sigma) (`mdp.rate_tracking_kernel`)."""
    error, sigma = _rate_error(build, chaser, True, params), f64(sigma_rad_s)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return f64(1.0) - wp.exp(-norm3(error(w, s)) / sigma)

    return f


@kernel_term(twin=mdp.thruster_force_sum)
def thruster_force_sum(build: TermBuild, actuator_cfg: SceneEntityCfg):
    """Sum of a thruster group's commanded forces, N (`mdp.thruster_force_sum`; summed in
    order, where torch's row sum may round differently in the last bit)."""
    group = actuator_cfg.actuator
    columns = build.env.scene.actuator_stage.command_columns(group)
    if columns is None:
        raise KernelUnavailable(
            f"{build.term}: actuator group {actuator_cfg.actuator_names[0]!r} is not a fused "
            "group (its command is not in the kernel's arrays)"
        )
    first, count = columns[0], columns[1] - columns[0]

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        total = f64(0.0)
        for i in range(wp.static(count)):
            total = total + s.commands[w, first + i]
        return total

    return f


@kernel_term(twin=mdp.termination_impulse)
def termination_impulse(build: TermBuild, terms: tuple[str, ...]):
    """1 / step_dt (float32) when any of the named terminations fired this step
    (`mdp.termination_impulse`); the named terms must be termination kernel terms."""
    manager = getattr(build.env, "termination_manager", None)
    known = {} if manager is None else manager.kernel_flag_columns
    missing = [name for name in terms if name not in known]
    if missing:
        raise KernelUnavailable(
            f"{build.term}: terminations {missing} are not termination kernel terms (their "
            "flags are not in the kernel's arrays)"
        )
    columns = [known[name] for name in terms]
    impulse = f64(float(np.float32(1.0) / np.float32(build.env.step_dt)))

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        fired = False
        for i in range(wp.static(len(columns))):
            fired = fired or s.termination_flags[w, wp.static(columns[i])]
        if fired:
            return impulse
        return f64(0.0)

    return f


# ---------------------------------------------------------------- terminations
@kernel_term(twin=mdp.capture)
def capture(build: TermBuild, chaser: SceneEntityCfg, soft: bool = True, window_steps: int = 3):
    """The latch has closed, softly (`soft`: the closing speed along the port axis was
    within the latch's limit at the last `window_steps` env steps) or not (`mdp.capture`);
    keeps those closing speeds in `window_steps` `term_state` columns. Needs the latch
    sampled at every physics step (its held reading is then its closed flag)."""
    truth = _truth(build, chaser)
    latch = chaser.sensors["latch"]
    first = _columns(build, chaser, "latch")
    if latch.period_steps != 1:
        raise KernelUnavailable(
            f"{build.term}: the latch of '{chaser.name}' is sampled every "
            f"{latch.period_steps} physics steps (its reading is not its closed flag)"
        )
    window = int(window_steps)
    col, limit = build.state(window), f64(latch.cfg.max_closing_speed_mps)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        closing = -truth(w, s).vel[2]
        fresh = s.episode_length[w] <= wp.int64(1)
        worst = closing
        for i in range(wp.static(window)):
            value = closing
            if i < wp.static(window - 1) and not fresh:
                value = s.term_state[w, col + i + 1]
            s.term_state[w, col + i] = value
            worst = wp.max(worst, value)
        gentle = worst <= limit
        latched = s.sensors[w, first + 1] != f64(0.0)
        if wp.static(soft):
            return latched and gentle
        return latched and not gentle

    return f


@kernel_term(twin=mdp.collision)
def collision(
    build: TermBuild, chaser: SceneEntityCfg, target: SceneEntityCfg, threshold: float = 1e-6
):
    """Chaser-target contact (a constraint force on the target's free joint) while the probe
    tip is not inside the port's funnel (`mdp.collision`, with `mdp.in_port`'s defaults)."""
    truth = _truth(build, chaser)
    build.constraint_forces()
    dof, limit = int(target.handle.dof_adr), f64(threshold)
    throat, mouth, slope, margin = 0.08, 0.30, 0.733, 0.05  # mdp.in_port's defaults
    near, far = f64(-margin), f64(mouth + margin)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        force = f64(0.0)
        for i in range(6):
            force = wp.max(force, wp.abs(f64(s.qfrc_constraint[w, dof + i])))
        st = truth(w, s)
        along = st.pos[2]
        width = f64(throat) + f64(slope) * wp.clamp(along, f64(0.0), f64(mouth))
        inside = along >= near and along <= far and lateral(st.pos) <= width + f64(margin)
        return force > limit and not inside

    return f


@kernel_term(twin=mdp.left_corridor)
def left_corridor(
    build: TermBuild,
    chaser: SceneEntityCfg,
    half_angle_deg: float = 30.0,
    cone_start_m: float = 2.0,
    max_range_m: float = 45.0,
):
    """The probe tip left the approach corridor (`mdp.left_corridor`)."""
    truth = _truth(build, chaser)
    half = half_angle_deg * DEG
    cos_half, tube = f64(math.cos(half)), f64(cone_start_m * math.sin(half))
    cone_start, max_range = f64(cone_start_m), f64(max_range_m)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        st = truth(w, s)
        rng = norm3(st.pos)
        along = st.pos[2]
        outside_cone = rng > cone_start and along < rng * cos_half
        outside_tube = rng <= cone_start and lateral(st.pos) > tube
        return outside_cone or outside_tube or along < f64(-0.2) or rng > max_range

    return f


__all__ = [
    "approach_progress",
    "attitude_kernel",
    "body_rates",
    "capture",
    "collision",
    "docking_attitude_error",
    "latch_features",
    "left_corridor",
    "misalignment",
    "overspeed",
    "progress",
    "rate_error",
    "rate_tracking",
    "rate_tracking_kernel",
    "termination_impulse",
    "thruster_force_sum",
    "tip_position",
    "tip_velocity",
    "velocity_error",
    "velocity_tracking",
    "velocity_tracking_kernel",
]
