"""The fused sensor kernel: every fused sensor of a world sampled by one thread.

What each kind measures, and the per-sensor constants (`SensorRows`), mirror the torch
sensors of `orbitlab.sensors.inertial` and `orbitlab.sensors.navigation`; the stage that
builds and launches it is `orbitlab.sensors.fused`.
"""

from __future__ import annotations

from typing import Any

from orbitlab.fw.quat import (
    canonical,
    hill_frame,
    quat_from_matrix,
    quat_from_rotation_vector,
    quat_multiply,
    quat_to_matrix,
    rotate,
    rotate_inverse,
)
from orbitlab.fw.rng import episode_hash, normal_draw
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.kinematics import BodyFrames

GYRO, STAR_TRACKER, MAGNETOMETER, RELATIVE_NAV, GNSS, DOCKING_LATCH = 0, 1, 2, 3, 4, 5
MAX_NOISE_DIM = 9
"""Most noisy components of one sensor (relative navigation)."""

_GYRO = wp.constant(GYRO)
_STAR_TRACKER = wp.constant(STAR_TRACKER)
_MAGNETOMETER = wp.constant(MAGNETOMETER)
_RELATIVE_NAV = wp.constant(RELATIVE_NAV)
_GNSS = wp.constant(GNSS)
_DOCKING_LATCH = wp.constant(DOCKING_LATCH)
_MAX_NOISE = wp.constant(MAX_NOISE_DIM)
_WHITE, _BIAS = wp.constant(wp.uint32(0)), wp.constant(wp.uint32(1))
f64 = wp.float64
vec10d = wp.types.vector(length=10, dtype=wp.float64)
"""One sensor's values (the largest, relative navigation, has 10)."""
vec9d = wp.types.vector(length=MAX_NOISE_DIM, dtype=wp.float64)


@wp.struct
class SensorRows:
    """Per-sensor constants of the fused sensors (row s: the s-th fused sensor)."""

    kind: wp.array(dtype=int)
    dim: wp.array(dtype=int)
    body: wp.array(dtype=int)
    free_qpos: wp.array(dtype=int)  # qpos address of the body's free joint, -1: not a free root
    free_dof: wp.array(dtype=int)
    period: wp.array(dtype=int)  # physics steps
    out_col: wp.array(dtype=int)  # first column in held / truth
    noise_col: wp.array(dtype=int)  # first column in world_bias / std / bias / walk
    noise_dim: wp.array(dtype=int)
    noisy_col: wp.array(dtype=int)  # first noisy component of the sensor's values
    has_walk: wp.array(dtype=int)
    has_white: wp.array(dtype=int)
    mounted: wp.array(dtype=int)  # the sensor sits on a site (mount rotation and arm)
    mount: wp.array(dtype=wp.mat33d)  # sensor axes in body axes
    mount_arm: wp.array(dtype=wp.vec3d)  # sensor origin from the body COM, body axes, m
    target: wp.array(dtype=int)
    target_rotation: wp.array(dtype=wp.mat33d)
    target_arm: wp.array(dtype=wp.vec3d)
    misalignment: wp.array(dtype=wp.vec4d)
    range_per_m: wp.array(dtype=wp.float64)
    latch_limits: wp.array(dtype=wp.vec4d)  # contact distance m, closing m/s, lateral m, angle rad
    std: wp.array(dtype=wp.float64)  # per noise column
    bias: wp.array(dtype=wp.float64)
    walk: wp.array(dtype=wp.float64)  # walk std times sqrt(sampling interval)
    salts: wp.array(dtype=wp.uint32)
    quantiles: wp.array(dtype=wp.float32)


@wp.func
def body_rotation(rows: SensorRows, s: int, qpos: Any, frames: BodyFrames, w: int) -> wp.mat33d:
    """World-from-body rotation of sensor s's body (`SimView.body_rotation`)."""
    a = rows.free_qpos[s]
    if a < 0:
        return frames.Q[w, rows.body[s]]
    q = wp.vec4d(f64(qpos[w, a + 3]), f64(qpos[w, a + 4]), f64(qpos[w, a + 5]), f64(qpos[w, a + 6]))
    return quat_to_matrix(q)


@wp.func
def body_rate(rows: SensorRows, s: int, qvel: Any, frames: BodyFrames, w: int) -> wp.vec3d:
    """Body angular velocity in body axes, rad/s (`SimView.body_angular_velocity`)."""
    d = rows.free_dof[s]
    if d < 0:
        b = rows.body[s]
        return rotate_inverse(frames.Q[w, b], frames.omega[w, b])
    return wp.vec3d(f64(qvel[w, d + 3]), f64(qvel[w, d + 4]), f64(qvel[w, d + 5]))


@wp.func
def target_point(frames: BodyFrames, w: int, t: int, arm_body: wp.vec3d):
    """Position (m) and velocity (m/s) relative to the chief, world axes, of the point at
    `arm_body` from body t's COM (body axes): a target's port (`_Targeted.target_point`)."""
    arm = rotate(frames.Q[w, t], arm_body)
    return frames.com[w, t] + arm, frames.v_com[w, t] + wp.cross(frames.omega[w, t], arm)


@wp.func
def own_point(frames: BodyFrames, w: int, b: int, arm_body: wp.vec3d):
    """Position (m) and velocity (m/s) relative to the chief, world axes, of a sensor's
    origin at `arm_body` from body b's COM (body axes) (`_Targeted.own_point`; its velocity
    uses the offset as rounded in the position)."""
    com = frames.com[w, b]
    po = com + rotate(frames.Q[w, b], arm_body)
    return po, frames.v_com[w, b] + wp.cross(frames.omega[w, b], po - com)


@wp.func
def relative_state(
    rows: SensorRows, s: int, R: wp.vec3d, V: wp.vec3d, frames: BodyFrames, w: int
) -> vec10d:
    """Target position (m), velocity (m/s) in the Hill frame and attitude quaternion relative
    to it (`RelativeNav.truth`)."""
    C = hill_frame(R, V)
    h = wp.cross(R, V)
    omega_hill = h / (R[0] * R[0] + R[1] * R[1] + R[2] * R[2])
    t = rows.target[s]
    Qt = frames.Q[w, t]
    pt, vt = target_point(frames, w, t, rows.target_arm[s])
    po, vo = own_point(frames, w, rows.body[s], rows.mount_arm[s])
    d = pt - po
    rho = rotate(C, d)
    rho_dot = rotate(C, vt - vo - wp.cross(omega_hill, d))
    q = quat_from_matrix(C @ (Qt @ rows.target_rotation[s]))
    out = vec10d()
    for c in range(3):
        out[c] = rho[c]
        out[3 + c] = rho_dot[c]
    for c in range(4):
        out[6 + c] = q[c]
    return out


@wp.func
def latch_state(rows: SensorRows, s: int, qpos: Any, frames: BodyFrames, w: int) -> vec10d:
    """[contact, latch closing now, distance m, closing speed m/s, lateral error m,
    misalignment rad] between the sensor's probe point and the target's port
    (`DockingLatch.truth`; the kernel turns the second into the held latch)."""
    t = rows.target[s]
    pt, vt = target_point(frames, w, t, rows.target_arm[s])
    Q_port = frames.Q[w, t] @ rows.target_rotation[s]
    po, vo = own_point(frames, w, rows.body[s], rows.mount_arm[s])
    Q_probe = body_rotation(rows, s, qpos, frames, w)
    if rows.mounted[s] != 0:
        Q_probe = Q_probe @ rows.mount[s]
    axis_port = wp.vec3d(Q_port[0, 2], Q_port[1, 2], Q_port[2, 2])
    axis_probe = wp.vec3d(Q_probe[0, 2], Q_probe[1, 2], Q_probe[2, 2])
    d = po - pt
    dist = wp.length(d)
    along = wp.dot(d, axis_port)
    lateral = wp.length(d - along * axis_port)
    closing = -wp.dot(vo - vt, axis_port)
    mis = wp.acos(wp.clamp(-wp.dot(axis_probe, axis_port), f64(-1.0), f64(1.0)))
    limits = rows.latch_limits[s]
    out = vec10d()
    if dist <= limits[0]:
        out[0] = f64(1.0)
        if closing <= limits[1] and lateral <= limits[2] and mis <= limits[3]:
            out[1] = f64(1.0)
    out[2] = dist
    out[3] = closing
    out[4] = lateral
    out[5] = mis
    return out


@wp.func
def gnss_state(
    rows: SensorRows, s: int, R: wp.vec3d, V: wp.vec3d, frames: BodyFrames, w: int
) -> vec10d:
    """The sensor point's absolute ECI position (m) and velocity (m/s): the chief's plus the
    point's relative to it (`Gnss.truth`)."""
    r, v = own_point(frames, w, rows.body[s], rows.mount_arm[s])
    out = vec10d()
    for c in range(3):
        out[c] = f64(1.0e3) * R[c] + r[c]
        out[3 + c] = f64(1.0e3) * V[c] + v[c]
    return out


@wp.kernel
def sensor_kernel(
    world_offset: int,
    chunk: int,
    rows: SensorRows,
    count: int,
    step_count: wp.array(dtype=wp.int64),
    episode: wp.array(dtype=wp.int64),
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    R: wp.array(dtype=wp.vec3d),
    V: wp.array(dtype=wp.vec3d),
    field: wp.array(dtype=wp.vec3d),
    frames: BodyFrames,
    keys: wp.array2d(dtype=wp.int64),
    samples: wp.array2d(dtype=wp.int64),
    world_bias: wp.array2d(dtype=wp.float64),
    held: wp.array2d(dtype=wp.float64),
    truth: wp.array2d(dtype=wp.float64),
    latched: wp.array2d(dtype=wp.bool),
):
    """Sample every fused sensor of world w whose timer is due (see the module doc)."""
    w = world_offset + wp.tid()
    for s in range(count):
        if step_count[w] % wp.int64(rows.period[s]) != wp.int64(0):
            continue
        kind = rows.kind[s]
        value = vec10d()
        if kind == _GYRO:
            g = body_rate(rows, s, qvel, frames, w)
            if rows.mounted[s] != 0:
                g = rotate_inverse(rows.mount[s], g)
            for c in range(3):
                value[c] = g[c]
        elif kind == _STAR_TRACKER:
            q = quat_from_matrix(body_rotation(rows, s, qpos, frames, w))
            for c in range(4):
                value[c] = q[c]
        elif kind == _MAGNETOMETER:
            Q = body_rotation(rows, s, qpos, frames, w)
            if rows.mounted[s] != 0:
                Q = Q @ rows.mount[s]
            b = rotate_inverse(Q, field[w])
            for c in range(3):
                value[c] = b[c]
        elif kind == _GNSS:
            value = gnss_state(rows, s, R[w], V[w], frames, w)
        elif kind == _DOCKING_LATCH:  # the latch holds once closed, until a reset
            value = latch_state(rows, s, qpos, frames, w)
            if value[1] != f64(0.0):
                latched[w, s] = True
            value[1] = f64(0.0)
            if latched[w, s]:
                value[1] = f64(1.0)
        else:
            value = relative_state(rows, s, R[w], V[w], frames, w)
        # bias walk and white noise (`Sensor._noise`)
        col = rows.noise_col[s]
        sample = samples[w, s]
        key = wp.uint32(keys[w, s])
        noise = vec9d()
        if rows.has_walk[s] != 0:
            h = episode_hash(key, _BIAS, episode[w])
            for c in range(rows.noise_dim[s]):
                step = rows.walk[col + c] * normal_draw(h, sample, rows.salts[c], rows.quantiles)
                world_bias[w, col + c] = world_bias[w, col + c] + step
        h = episode_hash(key, _WHITE, episode[w])
        for c in range(rows.noise_dim[s]):
            noise[c] = rows.bias[col + c] + world_bias[w, col + c]
            if rows.has_white[s] != 0:
                white = normal_draw(h, sample, rows.salts[c], rows.quantiles)
                noise[c] = noise[c] + rows.std[col + c] * white
        # the measurement (`measure` of each kind)
        out = rows.out_col[s]
        measured = value
        if kind == _STAR_TRACKER:
            error = quat_from_rotation_vector(wp.vec3d(noise[0], noise[1], noise[2]))
            q = wp.vec4d(value[0], value[1], value[2], value[3])
            q = canonical(quat_multiply(q, quat_multiply(rows.misalignment[s], error)))
            for c in range(4):
                measured[c] = q[c]
        elif kind == _RELATIVE_NAV:
            rho = wp.vec3d(value[0], value[1], value[2])
            scale = f64(1.0) + rows.range_per_m[s] * wp.length(rho)
            for c in range(_MAX_NOISE):
                noise[c] = noise[c] * scale
            for c in range(6):
                measured[c] = value[c] + noise[c]
            q = wp.vec4d(value[6], value[7], value[8], value[9])
            e = quat_from_rotation_vector(wp.vec3d(noise[6], noise[7], noise[8]))
            q = canonical(quat_multiply(q, e))
            for c in range(4):
                measured[6 + c] = q[c]
        else:
            first = rows.noisy_col[s]
            for c in range(rows.noise_dim[s]):
                measured[first + c] = value[first + c] + noise[c]
        for c in range(rows.dim[s]):
            truth[w, out + c] = value[c]
            held[w, out + c] = measured[c]
        samples[w, s] = sample + wp.int64(1)
