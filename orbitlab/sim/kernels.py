"""The orbit-coupled step as one Warp kernel, shared by every backend.

`loads_kernel` (one thread per world) evaluates the environment at the chief and
every orbit-layer load (differential gravity, gravity gradient, drag, SRP,
magnetic torques, actuators, origin-acceleration correction), keeps them in the
wrench buffer and writes `user xfrc + wrench` into MuJoCo's `xfrc_applied`, or,
when every body is free-floating and the backend asks for it (`to_qfrc`), as
the free joints' generalized forces into `qfrc_applied` (plus the user's own
generalized forces). The two are the same forces: MuJoCo maps xfrc_applied
with mj_applyFT, which on the CPU costs ~20% of a free body's step; the
kernel does the same mapping for a few multiplications.
When stepping, the same launch then advances the chief, the environment clock
and the actuator states over the step that MuJoCo takes next (`advance.py`):
one launch per step.

Body arrays are generic (`Any`): float64 on the CPU backend, float32 on
MuJoCo-Warp; each value is cast to float64 before any law is applied. Model
arrays (mass, inertia, ipos, irot) hold one row shared by all worlds or one row
per world (per-world randomization); `model_row` picks it. A world's thread
owns all of its rows, so there are no atomics and the results do not depend on
how worlds are split across threads.

`make_loads_kernel(layout)` builds the kernel from one body of code: with the
generic layout every element count and switch is read at run time; a
`KernelLayout` of a model makes them compile-time constants, so that the
compiler removes absent loads and unrolls the element loops (~20% less time per
world-step for the benchmark spacecraft, bit-identical results).
"""

from __future__ import annotations

import functools
from dataclasses import field, make_dataclass
from typing import Any

from orbitlab.orbit.environment import (
    atmosphere_density_at_distance,
    atmosphere_density_near,
    atmosphere_velocity,
    dipole_field_at,
    illumination,
    sun_direction,
    sun_distance_km,
)
from orbitlab.orbit.gravity import (
    differential_gravity_accel_at,
    gravity_gradient_torque_at,
    inverse_distance,
    j2_term_at,
    point_mass_accel_at,
)
from orbitlab.orbit.loads import drag_force, magnetic_torque, srp_force
from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim import health
from orbitlab.sim.advance import advance_world
from orbitlab.sim.kinematics import BodyFrames, BodyIndex, fill_frames, frame_row
from orbitlab.sim.records import Elements, Switches, WorldState
from orbitlab.sim.schema import LAYOUT_CONSTANTS

f64 = wp.float64
vec3d = wp.vec3d

wp.set_module_options({"enable_backward": False, "optimization_level": 3})


@wp.func
def spatial(force: wp.vec3d, torque: wp.vec3d) -> wp.spatial_vectord:
    """Pack a force and a torque into MuJoCo's xfrc layout [force; torque]."""
    return wp.spatial_vectord(force[0], force[1], force[2], torque[0], torque[1], torque[2])


@wp.func
def add_wrench(
    wrench: wp.array2d(dtype=wp.spatial_vectord), w: int, b: int, force: wp.vec3d, torque: wp.vec3d
):
    """Accumulate a world-axes force (N) and COM torque (N m) on body b of world w."""
    wrench[w, b] = wrench[w, b] + spatial(force, torque)


@wp.func
def free_joint_force(
    qfrc_applied: Any,
    qfrc_user: wp.array2d(dtype=wp.float64),
    w: int,
    d: int,
    Q: wp.mat33d,
    lever: wp.vec3d,
    wrench: wp.spatial_vectord,
):
    """Write a world force F (N) and COM torque tau (N m) as a free joint's generalized force.

    The same as MuJoCo's mj_applyFT at the COM for a free joint whose dofs start
    at d: the translational dofs take F (world axes); the rotational dofs, whose
    axes are the body axes, take Q^T (tau + lever x F), lever = COM - body
    origin in world axes. The user's generalized force on those dofs is added.
    """
    F = vec3d(wrench[0], wrench[1], wrench[2])
    body_torque = wp.transpose(Q) @ (vec3d(wrench[3], wrench[4], wrench[5]) + wp.cross(lever, F))
    for k in range(3):
        qfrc_applied[w, d + k] = qfrc_applied.dtype(qfrc_user[w, d + k] + F[k])
        qfrc_applied[w, d + 3 + k] = qfrc_applied.dtype(qfrc_user[w, d + 3 + k] + body_torque[k])


@wp.func
def rotor_axis(el: Elements, i: int, delta: f64) -> wp.vec3d:
    """CMG rotor axis in body axes at gimbal angle delta: s0 cos + (g x s0) sin."""
    s0 = el.cmg_spin0[i]
    return wp.cos(delta) * s0 + wp.sin(delta) * wp.cross(el.cmg_gimbal[i], s0)


@wp.func
def wheel_motor_torque(
    sw: Switches, el: Elements, i: int, command: f64, h: f64, a: wp.vec3d, omega: wp.vec3d
) -> f64:
    """Motor torque of wheel i after its limits, N m (input: the command, N m).

    The command is clamped to +-max_torque and to what keeps the speed relative to the
    body, h/I_w - a.omega (h: absolute axial momentum, N m s; a: world spin axis), within
    +-max_speed at the end of the step.
    """
    speed = h / el.rw_inertia[i] - wp.dot(a, omega)
    tau_m = wp.clamp(command, -el.rw_max_torque[i], el.rw_max_torque[i])
    # The torque that would carry the speed past the limit within this step is cut to
    # what just reaches it (h changes by tau_m dt): holds for any rotor inertia.
    room = el.rw_inertia[i] / sw.timestep
    upper = wp.max(f64(0.0), (el.rw_max_speed[i] - speed) * room)
    lower = wp.min(f64(0.0), (-el.rw_max_speed[i] - speed) * room)
    return wp.clamp(tau_m, lower, upper)


@wp.func
def wheel_reaction_torque(tau_m: f64, h: f64, a: wp.vec3d, omega: wp.vec3d) -> wp.vec3d:
    """Reaction torque of a wheel on its body, N m: -tau_m a - omega x (h a)."""
    return -tau_m * a - wp.cross(omega, h * a)


@wp.func
def cmg_next_angle(sw: Switches, el: Elements, i: int, command: f64, delta: f64) -> f64:
    """Gimbal angle of CMG i at the end of the step, rad: the rate command (rad/s)
    clamped to +-max_rate, the angle stopped at its limits."""
    rate = wp.clamp(command, -el.cmg_max_rate[i], el.cmg_max_rate[i])
    return wp.clamp(delta + rate * sw.timestep, el.cmg_min_angle[i], el.cmg_max_angle[i])


@wp.func
def cmg_reaction_torque(
    sw: Switches, el: Elements, i: int, delta: f64, delta_next: f64, Q: wp.mat33d, omega: wp.vec3d
) -> wp.vec3d:
    """Reaction torque of CMG i on its body, N m: -h (g x s) delta_dot - omega x (h s).

    The gimbal term uses the step's chord h (s(delta_next) - s(delta))/dt, so the
    exchange is exact in body axes; the gyroscopic term uses the mid-step axis.
    """
    dt = sw.timestep
    h = el.cmg_h[i]
    chord = rotor_axis(el, i, delta_next) - rotor_axis(el, i, delta)
    s_mid = Q @ rotor_axis(el, i, f64(0.5) * (delta + delta_next))
    return -h / dt * (Q @ chord) - wp.cross(omega, h * s_mid)


@wp.func
def cmg_rate_torque(
    el: Elements, i: int, delta: f64, rate: f64, Q: wp.mat33d, omega: wp.vec3d
) -> wp.vec3d:
    """Reaction torque of CMG i at gimbal angle delta (rad) turning at rate (rad/s), N m:
    -h rate Q (g x s(delta)) - omega x (h Q s(delta)), the instantaneous form that the
    per-stage coupling evaluates at every RK4 stage (d s / d delta = g x s)."""
    h = el.cmg_h[i]
    s = rotor_axis(el, i, delta)
    return -h * rate * (Q @ wp.cross(el.cmg_gimbal[i], s)) - wp.cross(omega, h * (Q @ s))


@wp.func
def commands_code(state: WorldState, w: int, nthr: int, nrw: int, nmtq: int, ncmg: int) -> int:
    """NONFINITE_COMMAND if an actuator command of world w is not finite (a NaN written
    straight to the data is an error, not a saturated command), else OK."""
    for i in range(nthr):
        if not wp.isfinite(state.thruster_force[w, i]):
            return health.NONFINITE_COMMAND
    for i in range(nrw):
        if not wp.isfinite(state.wheel_torque[w, i]):
            return health.NONFINITE_COMMAND
    for i in range(nmtq):
        if not wp.isfinite(state.mtq_dipole[w, i]):
            return health.NONFINITE_COMMAND
    for i in range(ncmg):
        if not wp.isfinite(state.cmg_rate[w, i]):
            return health.NONFINITE_COMMAND
    return health.OK


KernelLayout = make_dataclass(
    "KernelLayout",
    [(name, int, field(default=-1)) for name in LAYOUT_CONSTANTS],
    frozen=True,
)
KernelLayout.__module__ = __name__
KernelLayout.__doc__ = """What a specialised loads kernel fixes at compile time (-1: read at run time).

Its fields are `orbitlab.sim.schema.LAYOUT_CONSTANTS`: the body count, each element kind's
count (nsurf, ndip, nthr, nrw, nmtq, ncmg) and every integer switch. With them as
constants, the compiler drops the code of absent loads, folds the switches and unrolls the
element loops. `GENERIC` leaves everything to run time (one compiled kernel for every
model); `OrbitData` specialises large batches (see `specialize`).
"""

GENERIC = KernelLayout()


@wp.func
def static_or(value: int, runtime: int) -> int:
    """A layout constant (>= 0) or, for -1, the run-time value."""
    if value >= 0:
        return value
    return runtime


@wp.func
def model_row(nrow: int, w: int) -> int:
    """Row of a model field for world w: its own row, or row 0 when shared."""
    if nrow == 1:
        return 0
    return w


def make_loads_kernel(layout: KernelLayout = GENERIC, module: str | None = None):
    """The loads kernel with `layout`'s values as compile-time constants.

    Every layout runs the same code below (the constants only resolve its
    counts and switches), so a specialised kernel gives bit-identical results.
    """
    L = layout
    NBODY, NSURF, NTHR, NDIP, NMTQ, NRW, NCMG = (
        L.nbody,
        L.nsurf,
        L.nthr,
        L.ndip,
        L.nmtq,
        L.nrw,
        L.ncmg,
    )
    USE_J2, USE_GG, USE_DRAG, USE_SRP, USE_MAG, PENUMBRA = (
        L.use_j2,
        L.use_gravity_gradient,
        L.use_drag,
        L.use_srp,
        L.use_magnetic,
        L.penumbra,
    )
    FROM_QPOS, TO_QFRC, SEGMENT_STEPS, ORBIT_SUBSTEPS, STAGE = (
        L.from_qpos,
        L.to_qfrc,
        L.segment_steps,
        L.orbit_substeps,
        L.stage,
    )

    def loads_kernel(
        world_offset: int,
        chunk: int,
        advance: int,
        body: CentralBody,
        sw: Switches,
        el: Elements,
        state: WorldState,
        idx: BodyIndex,
        frames: BodyFrames,
        qpos: wp.array2d(dtype=Any),
        qvel: wp.array2d(dtype=Any),
        xipos: wp.array2d(dtype=Any),
        xmat: wp.array2d(dtype=Any),
        cvel: wp.array2d(dtype=Any),
        ref_pos: wp.array2d(dtype=Any),
        body_mass: wp.array2d(dtype=Any),
        body_inertia: wp.array2d(dtype=Any),
        body_ipos: wp.array2d(dtype=Any),
        body_irot: wp.array2d(dtype=Any),
        xfrc_user: wp.array2d(dtype=wp.spatial_vectord),
        wrench: wp.array2d(dtype=wp.spatial_vectord),
        xfrc_applied: wp.array2d(dtype=Any),
        qfrc_user: wp.array2d(dtype=wp.float64),
        qfrc_applied: wp.array2d(dtype=Any),
    ):
        """Environment at the chief and every orbit-layer load of world w.

        With `advance`, also moves the chief, clock and actuator states to the end of
        the step that MuJoCo is about to take with these loads.
        """
        w = wp.tid() + world_offset
        use_j2 = static_or(USE_J2, sw.use_j2)
        use_gg = static_or(USE_GG, sw.use_gravity_gradient)
        use_drag = static_or(USE_DRAG, sw.use_drag)
        use_srp = static_or(USE_SRP, sw.use_srp)
        use_magnetic = static_or(USE_MAG, sw.use_magnetic)
        penumbra = static_or(PENUMBRA, sw.penumbra)
        kq = static_or(FROM_QPOS, sw.from_qpos)
        to_qfrc = static_or(TO_QFRC, sw.to_qfrc)
        stage = static_or(STAGE, sw.stage)
        nbody = static_or(NBODY, body_mass.shape[1])
        nsurf = static_or(NSURF, el.surf_body.shape[0])
        nthr = static_or(NTHR, el.thr_body.shape[0])
        ndip = static_or(NDIP, el.dip_body.shape[0])
        nmtq = static_or(NMTQ, el.mtq_body.shape[0])
        nrw = static_or(NRW, el.rw_body.shape[0])
        ncmg = static_or(NCMG, el.cmg_body.shape[0])
        row_mass = model_row(body_mass.shape[0], w)
        row_inertia = model_row(body_inertia.shape[0], w)
        row_ipos = model_row(body_ipos.shape[0], w)
        row_irot = model_row(body_irot.shape[0], w)

        R = state.R[w]
        V = state.V[w]
        t = state.t[w]
        zero = vec3d(f64(0.0), f64(0.0), f64(0.0))
        # A frozen world keeps its state; a newly unhealthy one is frozen here (health.py).
        if state.health[w] != health.OK:
            state.a_feedback[w] = zero
            return
        code = health.chief_code(body.radius, R, V, t)
        if code != health.OK:
            state.health[w] = code
            state.a_feedback[w] = zero
            return
        # 1/|R|^2 and 1/|R| once for every law at the chief (field, atmosphere, gravity,
        # and RK4's first stage through g_R).
        inv_R2, inv_R = inverse_distance(R)
        R_norm = wp.dot(R, R) * inv_R
        j2_R = j2_term_at(body, use_j2, R, inv_R2, inv_R)
        g_R = point_mass_accel_at(body.gm, R, inv_R2, inv_R) + j2_R
        s_hat = sun_direction(t)
        B = dipole_field_at(body, R, inv_R, t)
        state.sun_eci[w] = s_hat
        state.mag_field_eci[w] = B
        sun_km = f64(0.0)
        if penumbra != 0:
            sun_km = sun_distance_km(t)
        state.eclipse[w] = illumination(body, penumbra, R, s_hat, sun_km)
        rho = atmosphere_density_at_distance(body, R_norm)
        state.atm_density[w] = rho

        # Kinematics of every body once; then differential gravity and gravity gradient.
        fr = frame_row(frames, state.R.shape[0], w, chunk)
        fill_frames(
            kq,
            nbody,
            idx,
            frames,
            fr,
            w,
            qpos,
            qvel,
            xipos,
            xmat,
            cvel,
            ref_pos,
            body_ipos,
            row_ipos,
        )
        for b in range(1, nbody):
            if code == health.OK:
                code = health.body_code(frames.com[fr, b], frames.omega[fr, b], frames.v_com[fr, b])
        if code == health.OK:
            code = commands_code(state, w, nthr, nrw, nmtq, ncmg)
        if code != health.OK:
            state.health[w] = code
            state.a_feedback[w] = zero
            return
        M = f64(0.0)
        for b in range(1, nbody):  # body 0 is the world
            Q = frames.Q[fr, b]
            x = frames.com[fr, b]
            m = f64(body_mass[row_mass, b])
            force = zero
            torque = zero
            if m > f64(0.0):
                M += m
                delta = f64(1.0e-3) * x
                r = R + delta
                inv_r2, inv_r = inverse_distance(r)
                force = (
                    f64(1.0e3)
                    * m
                    * differential_gravity_accel_at(
                        body, use_j2, R, inv_R2, inv_R, j2_R, delta, inv_r2, inv_r
                    )
                )
                if use_gg != 0:
                    Q_I = Q @ wp.mat33d(body_irot[row_irot, b])  # MuJoCo's ximat
                    torque = gravity_gradient_torque_at(
                        body.gm, r, inv_r2, inv_r, Q_I, vec3d(body_inertia[row_inertia, b])
                    )
            wrench[w, b] = spatial(force, torque)

        F_ext = zero
        # Drag and SRP on each plate, evaluated at its own position.
        for s in range(nsurf):
            b = el.surf_body[s]
            Q = frames.Q[fr, b]
            n = Q @ el.surf_normal[s]
            c = Q @ el.surf_cop[s]
            rp = R + f64(1.0e-3) * (frames.com[fr, b] + c)
            force = zero
            if use_drag != 0 and el.surf_drag[s] != 0:
                u = (
                    f64(1.0e3) * V
                    + frames.v_com[fr, b]
                    + wp.cross(frames.omega[fr, b], c)
                    - atmosphere_velocity(body, rp)
                )
                rho_s = atmosphere_density_near(body, rho, R_norm, rp)
                force += drag_force(rho_s, u, n, el.surf_area[s], el.surf_cd[s])
            if use_srp != 0 and el.surf_srp[s] != 0:
                chi = illumination(body, penumbra, rp, s_hat, sun_km)
                force += srp_force(chi, s_hat, n, el.surf_area[s], el.surf_cr[s])
            add_wrench(wrench, w, b, force, wp.cross(c, force))
            F_ext += force

        # Thrusters: force along the body direction at a point given from the body origin.
        for i in range(nthr):
            b = el.thr_body[i]
            Q = frames.Q[fr, b]
            f = wp.clamp(state.thruster_force[w, i], f64(0.0), el.thr_max[i])
            force = f * (Q @ el.thr_dir[i])
            arm = Q @ (el.thr_pos[i] - vec3d(body_ipos[row_ipos, b]))
            add_wrench(wrench, w, b, force, wp.cross(arm, force))
            F_ext += force

        if use_magnetic != 0:
            for i in range(ndip):
                b = el.dip_body[i]
                m_world = frames.Q[fr, b] @ el.dip_moment[i]
                add_wrench(wrench, w, b, zero, magnetic_torque(m_world, B))
            for i in range(nmtq):
                b = el.mtq_body[i]
                dipole = wp.clamp(state.mtq_dipole[w, i], -el.mtq_max[i], el.mtq_max[i])
                m_world = dipole * (frames.Q[fr, b] @ el.mtq_axis[i])
                add_wrench(wrench, w, b, zero, magnetic_torque(m_world, B))

        # Momentum devices: internal torques with gyroscopic coupling.
        for i in range(nrw):
            b = el.rw_body[i]
            omega = frames.omega[fr, b]
            a = frames.Q[fr, b] @ el.rw_axis[i]
            h = state.wheel_momentum[w, i]
            tau_m = wheel_motor_torque(sw, el, i, state.wheel_torque[w, i], h, a, omega)
            state.wheel_torque_applied[w, i] = tau_m
            add_wrench(wrench, w, b, zero, wheel_reaction_torque(tau_m, h, a, omega))
        for i in range(ncmg):
            b = el.cmg_body[i]
            angle = state.cmg_angle[w, i]
            angle_next = cmg_next_angle(sw, el, i, state.cmg_rate[w, i], angle)
            rate = (angle_next - angle) / sw.timestep
            state.cmg_rate_applied[w, i] = rate
            torque = zero
            if stage != 0:  # the stage's own angle and rate (the stepper integrates the angle)
                torque = cmg_rate_torque(el, i, angle, rate, frames.Q[fr, b], frames.omega[fr, b])
            else:
                torque = cmg_reaction_torque(
                    sw, el, i, angle, angle_next, frames.Q[fr, b], frames.omega[fr, b]
                )
            add_wrench(wrench, w, b, zero, torque)

        # Reference-orbit feedback and the origin-acceleration correction.
        a_fb = zero
        if M > f64(0.0):
            a_fb = f64(1.0e-3) / M * F_ext
        state.a_feedback[w] = a_fb
        state.a_chief[w] = g_R + a_fb
        for b in range(1, nbody):
            m = f64(body_mass[row_mass, b])
            if m > f64(0.0):
                add_wrench(wrench, w, b, -f64(1.0e3) * m * a_fb, zero)
            total = xfrc_user[w, b] + wrench[w, b]
            if code == health.OK:
                code = health.wrench_code(total)
            if to_qfrc != 0:
                lever = frames.Q[fr, b] @ vec3d(body_ipos[row_ipos, b])
                free_joint_force(
                    qfrc_applied, qfrc_user, w, idx.dofadr[b], frames.Q[fr, b], lever, total
                )
            else:
                xfrc_applied[w, b] = xfrc_applied.dtype(total)
        if code != health.OK:
            state.health[w] = code
        elif advance != 0:
            advance_world(
                body,
                sw,
                el,
                state,
                w,
                g_R,
                a_fb,
                use_j2,
                static_or(SEGMENT_STEPS, sw.segment_steps),
                static_or(ORBIT_SUBSTEPS, sw.orbit_substeps),
                nrw,
                ncmg,
            )

    options = {"enable_backward": False, "optimization_level": 3}
    if module is None:
        return wp.kernel(loads_kernel, enable_backward=False)
    return wp.kernel(loads_kernel, enable_backward=False, module=module, module_options=options)


loads_kernel = make_loads_kernel()
"""The generic kernel: every count and switch read at run time."""


@functools.cache
def specialized_loads_kernel(layout: KernelLayout):
    """The loads kernel compiled for `layout` (one Warp module per distinct layout, cached
    in memory here and on disk by Warp)."""
    return make_loads_kernel(layout, module="unique")
