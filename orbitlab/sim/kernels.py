"""The orbit-coupled step as two Warp kernels, shared by every backend.

`loads_kernel` (one thread per world) evaluates the environment at the chief and
every orbit-layer load (differential gravity, gravity gradient, drag, SRP,
magnetic torques, actuators, origin-acceleration correction), keeps them in the
wrench buffer and writes `user xfrc + wrench` into MuJoCo's `xfrc_applied`.
`advance_kernel` (one thread per world) runs after MuJoCo's step: it advances
the chief (RK4 with orbit_dt scheduling), the environment clock and the
actuator states.

Body-state arrays are generic (`Any`): float64 on the CPU backend, float32 on
MuJoCo-Warp; each value is cast to float64 before any law is applied. Model
arrays indexed `[w % shape[0], body]` may hold one row for all worlds or one row
per world (per-world randomization). A world's thread owns all of its rows, so
the kernels need no atomics and give identical results in any launch order.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from orbitlab.orbit.environment import (
    atmosphere_density,
    atmosphere_velocity,
    dipole_field,
    illumination,
    sun_direction,
)
from orbitlab.orbit.gravity import differential_gravity_accel, gravity_gradient_torque
from orbitlab.orbit.loads import drag_force, magnetic_torque, srp_force
from orbitlab.orbit.propagation import hermite_interpolate, rk4_propagate
from orbitlab.orbit.types import CentralBody

f64 = wp.float64
vec3d = wp.vec3d

wp.set_module_options({"enable_backward": False, "optimization_level": 3})


@wp.struct
class Switches:
    """Model switches (0/1) and the chief schedule."""

    use_j2: int
    use_gravity_gradient: int
    use_drag: int
    use_srp: int
    use_magnetic: int
    penumbra: int
    timestep: wp.float64  # MuJoCo timestep, s
    orbit_substeps: int  # RK4 substeps per MuJoCo step (orbit_dt <= timestep)
    segment_steps: int  # MuJoCo steps per predicted segment (orbit_dt > timestep), else 1


@wp.struct
class Elements:
    """Element tables (body ids, body-axes geometry, limits), one row per element."""

    surf_body: wp.array(dtype=int)
    surf_normal: wp.array(dtype=wp.vec3d)
    surf_cop: wp.array(dtype=wp.vec3d)
    surf_area: wp.array(dtype=wp.float64)
    surf_cd: wp.array(dtype=wp.float64)
    surf_cr: wp.array(dtype=wp.float64)
    surf_drag: wp.array(dtype=int)
    surf_srp: wp.array(dtype=int)
    dip_body: wp.array(dtype=int)
    dip_moment: wp.array(dtype=wp.vec3d)
    thr_body: wp.array(dtype=int)
    thr_pos: wp.array(dtype=wp.vec3d)
    thr_dir: wp.array(dtype=wp.vec3d)
    thr_max: wp.array(dtype=wp.float64)
    rw_body: wp.array(dtype=int)
    rw_axis: wp.array(dtype=wp.vec3d)
    rw_inertia: wp.array(dtype=wp.float64)
    rw_max_speed: wp.array(dtype=wp.float64)
    rw_max_torque: wp.array(dtype=wp.float64)
    mtq_body: wp.array(dtype=int)
    mtq_axis: wp.array(dtype=wp.vec3d)
    mtq_max: wp.array(dtype=wp.float64)
    cmg_body: wp.array(dtype=int)
    cmg_gimbal: wp.array(dtype=wp.vec3d)
    cmg_spin0: wp.array(dtype=wp.vec3d)
    cmg_h: wp.array(dtype=wp.float64)
    cmg_max_rate: wp.array(dtype=wp.float64)
    cmg_min_angle: wp.array(dtype=wp.float64)
    cmg_max_angle: wp.array(dtype=wp.float64)


@wp.struct
class WorldState:
    """Per-world orbit-layer state, diagnostics and actuator commands (float64)."""

    R: wp.array(dtype=wp.vec3d)  # chief position, km
    V: wp.array(dtype=wp.vec3d)  # chief velocity, km/s
    t: wp.array(dtype=wp.float64)  # environment time, s since J2000
    t_anchor: wp.array(dtype=wp.float64)  # environment time at the last reset, s
    nstep: wp.array(dtype=wp.int64)  # MuJoCo steps since the last reset
    a_feedback: wp.array(dtype=wp.vec3d)  # chief load feedback this step, km/s^2
    seg_R0: wp.array(dtype=wp.vec3d)  # segment start / predicted end (orbit_dt > dt)
    seg_V0: wp.array(dtype=wp.vec3d)
    seg_R1: wp.array(dtype=wp.vec3d)
    seg_V1: wp.array(dtype=wp.vec3d)
    seg_a_sum: wp.array(dtype=wp.vec3d)
    seg_k: wp.array(dtype=int)
    sun_eci: wp.array(dtype=wp.vec3d)  # unit vector to the Sun
    eclipse: wp.array(dtype=wp.float64)  # illumination at the chief
    mag_field_eci: wp.array(dtype=wp.vec3d)  # T
    atm_omega: wp.array(dtype=wp.vec3d)  # rad/s
    atm_density: wp.array(dtype=wp.float64)  # kg/m^3 at the chief
    thruster_force: wp.array2d(dtype=wp.float64)  # commands, N
    wheel_torque: wp.array2d(dtype=wp.float64)  # motor torque commands, N m
    wheel_torque_applied: wp.array2d(dtype=wp.float64)  # after limits, N m
    wheel_momentum: wp.array2d(dtype=wp.float64)  # absolute axial momentum, N m s
    mtq_dipole: wp.array2d(dtype=wp.float64)  # commands, A m^2
    cmg_rate: wp.array2d(dtype=wp.float64)  # gimbal-rate commands, rad/s
    cmg_rate_applied: wp.array2d(dtype=wp.float64)  # after limits, rad/s
    cmg_angle: wp.array2d(dtype=wp.float64)  # gimbal angles, rad


@wp.func
def spatial(force: wp.vec3d, torque: wp.vec3d) -> wp.spatial_vectord:
    """Pack a force and a torque into MuJoCo's xfrc layout [force; torque]."""
    return wp.spatial_vectord(force[0], force[1], force[2], torque[0], torque[1], torque[2])


@wp.func
def add_wrench(wrench: wp.array2d(dtype=wp.spatial_vectord), w: int, b: int,
               force: wp.vec3d, torque: wp.vec3d):
    """Accumulate a world-axes force (N) and COM torque (N m) on body b of world w."""
    wrench[w, b] = wrench[w, b] + spatial(force, torque)


@wp.func
def com_velocity(cvel: Any, subtree_com: Any, xipos: Any, rootid: int, w: int, b: int):
    """Angular velocity (rad/s) and COM linear velocity (m/s) of body b, world axes.

    MuJoCo's cvel is a spatial velocity about the subtree COM of the body's root;
    the COM velocity shifts it by omega x (xipos - subtree_com[root]), so that
    articulated bodies get their own COM velocity.
    """
    v = cvel[w, b]
    omega = vec3d(f64(v[0]), f64(v[1]), f64(v[2]))
    lin = vec3d(f64(v[3]), f64(v[4]), f64(v[5]))
    offset = vec3d(xipos[w, b]) - vec3d(subtree_com[w, rootid])
    return omega, lin + wp.cross(omega, offset)


@wp.func
def body_mass_at(body_mass: Any, w: int, b: int) -> f64:
    return f64(body_mass[w % body_mass.shape[0], b])


@wp.func
def rotor_axis(el: Elements, i: int, delta: f64) -> wp.vec3d:
    """CMG rotor axis in body axes at gimbal angle delta: s0 cos + (g x s0) sin."""
    s0 = el.cmg_spin0[i]
    return wp.cos(delta) * s0 + wp.sin(delta) * wp.cross(el.cmg_gimbal[i], s0)


@wp.func
def apply_momentum_devices(sw: Switches, el: Elements, state: WorldState, xmat: Any, cvel: Any,
                           w: int,
                           wrench: wp.array2d(dtype=wp.spatial_vectord)):
    """Reaction-wheel and CMG reaction torques, gyroscopic coupling included.

    Wheel: tau = -tau_m a - omega x (h a), with the motor torque tau_m clamped to
    +-max_torque and cut when the relative speed h/I_w - a.omega is at its limit
    and the torque would raise it. CMG: tau = -h (g x s) delta_dot - omega x (h s),
    with the gimbal rate clamped to +-max_rate and stopped at the angle limits;
    the gimbal term uses the step's chord h (s(delta_next) - s(delta))/dt so the
    exchange is exact in body axes. The total (bodies + rotors) angular momentum
    is conserved up to the hold of the gyroscopic term over a step (first order).
    """
    zero = vec3d(f64(0.0), f64(0.0), f64(0.0))
    for i in range(el.rw_body.shape[0]):
        b = el.rw_body[i]
        a = wp.mat33d(xmat[w, b]) @ el.rw_axis[i]
        v = cvel[w, b]
        omega = vec3d(f64(v[0]), f64(v[1]), f64(v[2]))
        h = state.wheel_momentum[w, i]
        speed = h / el.rw_inertia[i] - wp.dot(a, omega)
        tau_m = wp.clamp(state.wheel_torque[w, i], -el.rw_max_torque[i], el.rw_max_torque[i])
        if wp.abs(speed) >= el.rw_max_speed[i] and tau_m * speed > f64(0.0):
            tau_m = f64(0.0)
        state.wheel_torque_applied[w, i] = tau_m
        add_wrench(wrench, w, el.rw_body[i], zero, -tau_m * a - wp.cross(omega, h * a))
    dt = sw.timestep
    for i in range(el.cmg_body.shape[0]):
        b = el.cmg_body[i]
        Q = wp.mat33d(xmat[w, b])
        v = cvel[w, b]
        omega = vec3d(f64(v[0]), f64(v[1]), f64(v[2]))
        delta = state.cmg_angle[w, i]
        rate = wp.clamp(state.cmg_rate[w, i], -el.cmg_max_rate[i], el.cmg_max_rate[i])
        delta_next = wp.clamp(delta + rate * dt, el.cmg_min_angle[i], el.cmg_max_angle[i])
        state.cmg_rate_applied[w, i] = (delta_next - delta) / dt
        hc = el.cmg_h[i]
        # Gimbal reaction over the step: the rotor momentum's chord, exact in body axes.
        chord = rotor_axis(el, i, delta_next) - rotor_axis(el, i, delta)
        s_mid = Q @ rotor_axis(el, i, f64(0.5) * (delta + delta_next))
        torque = -hc / dt * (Q @ chord) - wp.cross(omega, hc * s_mid)
        add_wrench(wrench, w, b, zero, torque)


@wp.kernel
def loads_kernel(
    world_offset: int, body: CentralBody, sw: Switches, el: Elements, state: WorldState,
    xipos: wp.array2d(dtype=Any), xmat: wp.array2d(dtype=Any),
    ximat: wp.array2d(dtype=Any), cvel: wp.array2d(dtype=Any),
    subtree_com: wp.array2d(dtype=Any), body_mass: wp.array2d(dtype=Any),
    body_inertia: wp.array2d(dtype=Any), body_ipos: wp.array2d(dtype=Any),
    body_rootid: wp.array(dtype=int), xfrc_user: wp.array2d(dtype=wp.spatial_vectord),
    wrench: wp.array2d(dtype=wp.spatial_vectord), xfrc_applied: wp.array2d(dtype=Any),
):
    """Environment at the chief and every orbit-layer load of world w."""
    w = wp.tid() + world_offset
    R = state.R[w]
    V = state.V[w]
    t = state.t[w]
    s_hat = sun_direction(t)
    B = dipole_field(body, R, t)
    state.sun_eci[w] = s_hat
    state.mag_field_eci[w] = B
    state.eclipse[w] = illumination(body, sw.penumbra, R, s_hat, t)
    state.atm_density[w] = atmosphere_density(body, R)
    state.atm_omega[w] = body.omega
    zero = vec3d(f64(0.0), f64(0.0), f64(0.0))
    nbody = xipos.shape[1]
    mw = w % body_inertia.shape[0]

    # Differential gravity and gravity-gradient torque on every massive body.
    M = f64(0.0)
    for b in range(nbody):
        m = body_mass_at(body_mass, w, b)
        force = zero
        torque = zero
        if m > f64(0.0):
            M += m
            delta = f64(1.0e-3) * vec3d(xipos[w, b])
            force = f64(1.0e3) * m * differential_gravity_accel(body, sw.use_j2, R, delta)
            if sw.use_gravity_gradient != 0:
                torque = gravity_gradient_torque(body.gm, R + delta, wp.mat33d(ximat[w, b]),
                                                 vec3d(body_inertia[mw, b]))
        wrench[w, b] = spatial(force, torque)

    F_ext = zero
    # Drag and SRP on each plate, evaluated at its own position.
    for s in range(el.surf_body.shape[0]):
        b = el.surf_body[s]
        Q = wp.mat33d(xmat[w, b])
        n = Q @ el.surf_normal[s]
        c = Q @ el.surf_cop[s]
        rp = R + f64(1.0e-3) * (vec3d(xipos[w, b]) + c)
        force = zero
        if sw.use_drag != 0 and el.surf_drag[s] != 0:
            omega, v_com = com_velocity(cvel, subtree_com, xipos, body_rootid[b], w, b)
            vp = f64(1.0e3) * V + v_com + wp.cross(omega, c)
            u = vp - atmosphere_velocity(body, rp)
            force += drag_force(atmosphere_density(body, rp), u, n, el.surf_area[s],
                                el.surf_cd[s])
        if sw.use_srp != 0 and el.surf_srp[s] != 0:
            chi = illumination(body, sw.penumbra, rp, s_hat, t)
            force += srp_force(chi, s_hat, n, el.surf_area[s], el.surf_cr[s])
        add_wrench(wrench, w, b, force, wp.cross(c, force))
        F_ext += force

    # Thrusters: force along the body direction at a point given from the body origin.
    for i in range(el.thr_body.shape[0]):
        b = el.thr_body[i]
        Q = wp.mat33d(xmat[w, b])
        f = wp.clamp(state.thruster_force[w, i], f64(0.0), el.thr_max[i])
        force = f * (Q @ el.thr_dir[i])
        arm = Q @ (el.thr_pos[i] - vec3d(body_ipos[mw, b]))
        add_wrench(wrench, w, b, force, wp.cross(arm, force))
        F_ext += force

    if sw.use_magnetic != 0:
        for i in range(el.dip_body.shape[0]):
            b = el.dip_body[i]
            m_world = wp.mat33d(xmat[w, b]) @ el.dip_moment[i]
            add_wrench(wrench, w, b, zero, magnetic_torque(m_world, B))
        for i in range(el.mtq_body.shape[0]):
            b = el.mtq_body[i]
            dipole = wp.clamp(state.mtq_dipole[w, i], -el.mtq_max[i], el.mtq_max[i])
            m_world = dipole * (wp.mat33d(xmat[w, b]) @ el.mtq_axis[i])
            add_wrench(wrench, w, b, zero, magnetic_torque(m_world, B))

    apply_momentum_devices(sw, el, state, xmat, cvel, w, wrench)

    # Reference-orbit feedback and the origin-acceleration correction.
    a_fb = zero
    if M > f64(0.0):
        a_fb = f64(1.0e-3) / M * F_ext
    state.a_feedback[w] = a_fb
    for b in range(nbody):
        m = body_mass_at(body_mass, w, b)
        if m > f64(0.0):
            add_wrench(wrench, w, b, -f64(1.0e3) * m * a_fb, zero)
        xfrc_applied[w, b] = xfrc_applied.dtype(xfrc_user[w, b] + wrench[w, b])


@wp.kernel
def advance_kernel(world_offset: int, body: CentralBody, sw: Switches, el: Elements, state: WorldState):
    """After MuJoCo's step: advance the chief, the clock and the actuator states."""
    w = wp.tid() + world_offset
    dt = sw.timestep
    a_fb = state.a_feedback[w]
    K = sw.segment_steps
    if K <= 1:
        h = dt / f64(sw.orbit_substeps)
        R, V = rk4_propagate(body, sw.use_j2, state.R[w], state.V[w], a_fb, h,
                             sw.orbit_substeps)
        state.R[w] = R
        state.V[w] = V
    else:
        T = dt * f64(K)
        k = state.seg_k[w]
        if k == 0:
            # Predict the segment's end with the feedback at its start.
            state.seg_R0[w] = state.R[w]
            state.seg_V0[w] = state.V[w]
            R1, V1 = rk4_propagate(body, sw.use_j2, state.R[w], state.V[w], a_fb, T, 1)
            state.seg_R1[w] = R1
            state.seg_V1[w] = V1
            state.seg_a_sum[w] = vec3d(f64(0.0), f64(0.0), f64(0.0))
        state.seg_a_sum[w] = state.seg_a_sum[w] + a_fb
        k = k + 1
        if k == K:
            # Close the segment from its start with the time-averaged feedback.
            R, V = rk4_propagate(body, sw.use_j2, state.seg_R0[w], state.seg_V0[w],
                                 state.seg_a_sum[w] / f64(K), T, 1)
            state.R[w] = R
            state.V[w] = V
            k = 0
        else:
            R, V = hermite_interpolate(state.seg_R0[w], state.seg_V0[w], state.seg_R1[w],
                                       state.seg_V1[w], T, f64(k) / f64(K))
            state.R[w] = R
            state.V[w] = V
        state.seg_k[w] = k
    n = state.nstep[w] + wp.int64(1)
    state.nstep[w] = n
    state.t[w] = state.t_anchor[w] + f64(n) * dt
    for i in range(el.rw_body.shape[0]):
        state.wheel_momentum[w, i] = state.wheel_momentum[w, i] + state.wheel_torque_applied[w, i] * dt
    for i in range(el.cmg_body.shape[0]):
        state.cmg_angle[w, i] = wp.clamp(state.cmg_angle[w, i] + state.cmg_rate_applied[w, i] * dt,
                                         el.cmg_min_angle[i], el.cmg_max_angle[i])
