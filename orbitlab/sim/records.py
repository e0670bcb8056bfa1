"""Warp records shared by the kernels: switches, element tables, per-world state."""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly


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
    from_qpos: int  # 1: body kinematics from qpos/qvel (free bodies only), 0: derived fields
    to_qfrc: int  # 1: loads go to qfrc_applied as free-joint generalized forces, 0: xfrc_applied


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
    health: wp.array(dtype=int)  # 0 healthy, else why the world is frozen (sim/health.py)
    a_feedback: wp.array(dtype=wp.vec3d)  # chief load feedback this step, km/s^2
    a_chief: wp.array(dtype=wp.vec3d)  # chief acceleration (gravity + feedback), km/s^2
    seg_R0: wp.array(dtype=wp.vec3d)  # segment start / predicted end (orbit_dt > dt)
    seg_V0: wp.array(dtype=wp.vec3d)
    seg_R1: wp.array(dtype=wp.vec3d)
    seg_V1: wp.array(dtype=wp.vec3d)
    seg_a_sum: wp.array(dtype=wp.vec3d)
    seg_k: wp.array(dtype=int)
    sun_eci: wp.array(dtype=wp.vec3d)  # unit vector to the Sun
    eclipse: wp.array(dtype=wp.float64)  # illumination at the chief
    mag_field_eci: wp.array(dtype=wp.vec3d)  # T
    atm_density: wp.array(dtype=wp.float64)  # kg/m^3 at the chief
    thruster_force: wp.array2d(dtype=wp.float64)  # commands, N
    wheel_torque: wp.array2d(dtype=wp.float64)  # motor torque commands, N m
    wheel_torque_applied: wp.array2d(dtype=wp.float64)  # after limits, N m
    wheel_momentum: wp.array2d(dtype=wp.float64)  # absolute axial momentum, N m s
    mtq_dipole: wp.array2d(dtype=wp.float64)  # commands, A m^2
    cmg_rate: wp.array2d(dtype=wp.float64)  # gimbal-rate commands, rad/s
    cmg_rate_applied: wp.array2d(dtype=wp.float64)  # after limits, rad/s
    cmg_angle: wp.array2d(dtype=wp.float64)  # gimbal angles, rad
