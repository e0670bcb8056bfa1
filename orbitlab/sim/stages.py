"""Fourth-order orbit coupling: the orbit-layer loads evaluated at every RK4 stage.

MuJoCo's own RK4 evaluates the forces at four stage states but holds `qfrc_applied` and
`xfrc_applied`, which orbitlab writes once per step: every orbit-layer load (differential
gravity, gravity gradient, drag, SRP, magnetic torques, actuators, origin correction) is
then constant over the step, which makes the coupled step first order in dt. This module
drives the classic RK4 itself around MuJoCo's forward dynamics instead, for the whole
coupled state y = (chief R, V in km, km/s; every world's qpos, qvel; the wheels' momenta
in N m s). At each stage k it launches the loads kernel at the stage state (which also
gives the chief's acceleration), runs MuJoCo's `forward` for qacc, and then `rk4_stage`
(one Warp kernel, one thread per world) adds w_k f(y_k) to the step's sum and writes the
next stage state y_0 + c_{k+1} dt f(y_k), or after the last stage y_0 + dt sum_k w_k f(y_k).

Quaternions are integrated in their embedded form q' = q (x) (0, omega) / 2 and normalised
after the step, which keeps the whole coupled step fourth order (stepping them by the
exponential map at each stage, as MuJoCo's own RK4 does, measured second order here: error
ratio 4.0 per halving of dt in the gravity-gradient case, against 15.5 for this form).

The same kernels and the same `StageStepper` serve both backends: on the CPU backend the
MuJoCo arrays are float64 views of `mujoco.batch`'s rows, on MuJoCo-Warp its float32 device
arrays. The step's start state and its sum of stage derivatives are kept in float64 on
either, so that MuJoCo-Warp's float32 state only rounds the stage states, not the sum.
The step issues no host read on a GPU (it can be captured as a CUDA graph).

CMG gimbal angles are part of the state too: the loads kernel gives each stage's gimbal
rate (the command after its rate and angle limits) and the instantaneous reaction torque
at the stage's angle, and the step's end angle is kept within the limits.

Constraints: RK4 as the model's integrator, the chief on the MuJoCo timestep (orbit_dt
None or equal) and no actuator activations; `OrbitData` refuses the others with a
one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch
from orbitlab.sim.records import Elements, WorldState

wp.set_module_options({"enable_backward": False})

f64 = wp.float64
vec3d = wp.vec3d

RK4_NODES = (0.0, 0.5, 0.5, 1.0)
"""Stage times c_k as fractions of the step."""
RK4_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)
"""Weights w_k of the stage derivatives in the update."""

JNT_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
JNT_BALL = int(mujoco.mjtJoint.mjJNT_BALL)


@wp.struct
class JointTable:
    """MuJoCo's joints, one row each: type (mjtJoint), qpos address, dof address."""

    kind: wp.array(dtype=int)
    qposadr: wp.array(dtype=int)
    dofadr: wp.array(dtype=int)


@wp.struct
class StepStart:
    """Per-world float64 state at the step's start (y_0) and the running sum of w_k f(y_k).

    Between steps qpos, qvel and time hold the float64 end of the last step, of which
    MuJoCo's arrays hold the rounding (float32 on MuJoCo-Warp): the next step starts from
    it wherever the arrays are unchanged, so the state is integrated in float64 on both
    backends and only the stage evaluations see MuJoCo-Warp's float32.
    """

    frozen: wp.array(dtype=int)  # 1: unhealthy at the first stage, left as it is
    qpos: wp.array2d(dtype=wp.float64)
    qvel: wp.array2d(dtype=wp.float64)
    R: wp.array(dtype=wp.vec3d)  # km
    V: wp.array(dtype=wp.vec3d)  # km/s
    wheel_momentum: wp.array2d(dtype=wp.float64)  # N m s
    t: wp.array(dtype=wp.float64)  # s since J2000
    time: wp.array(dtype=wp.float64)  # MuJoCo time, s
    sum_qpos: wp.array2d(dtype=wp.float64)  # sum of w_k dqpos/dt
    sum_qvel: wp.array2d(dtype=wp.float64)  # sum of w_k qacc
    sum_R: wp.array(dtype=wp.vec3d)  # sum of w_k V
    sum_V: wp.array(dtype=wp.vec3d)  # sum of w_k a_chief
    sum_wheel: wp.array2d(dtype=wp.float64)  # sum of w_k wheel torque
    cmg_angle: wp.array2d(dtype=wp.float64)  # rad
    sum_cmg: wp.array2d(dtype=wp.float64)  # sum of w_k gimbal rate


@wp.func
def quat_rate(q: wp.vec4d, omega: wp.vec3d) -> wp.vec4d:
    """dq/dt = q (x) (0, omega) / 2 for (w, x, y, z) q and body-axes rates omega, rad/s."""
    half = f64(0.5)
    return wp.vec4d(
        half * (-q[1] * omega[0] - q[2] * omega[1] - q[3] * omega[2]),
        half * (q[0] * omega[0] + q[2] * omega[2] - q[3] * omega[1]),
        half * (q[0] * omega[1] - q[1] * omega[2] + q[3] * omega[0]),
        half * (q[0] * omega[2] + q[1] * omega[1] - q[2] * omega[0]),
    )


@wp.func
def stage_sum(first: int, previous: Any, weight: f64, rate: Any):
    """The step's sum after stage k: w_k f(y_k), plus the earlier stages' unless k == 0."""
    total = weight * rate
    if first == 0:
        total = previous + total
    return total


@wp.func
def stage_value(last: int, y0: Any, total: Any, rate: Any, h: f64, dt: f64):
    """y_0 + h f(y_k) (the next stage's state, h = c_{k+1} dt, s), or after the last stage
    y_0 + dt sum_k w_k f(y_k)."""
    value = y0 + h * rate
    if last != 0:
        value = y0 + dt * total
    return value


@wp.func
def restore_start(
    w: int,
    state: WorldState,
    start: StepStart,
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    time: wp.array(dtype=Any),
):
    """Put world w back to the state it had at the step's start (frozen during the step)."""
    for i in range(qpos.shape[1]):
        qpos[w, i] = qpos.dtype(start.qpos[w, i])
    for i in range(qvel.shape[1]):
        qvel[w, i] = qvel.dtype(start.qvel[w, i])
    for i in range(state.wheel_momentum.shape[1]):
        state.wheel_momentum[w, i] = start.wheel_momentum[w, i]
    for i in range(state.cmg_angle.shape[1]):
        state.cmg_angle[w, i] = start.cmg_angle[w, i]
    state.R[w] = start.R[w]
    state.V[w] = start.V[w]
    state.t[w] = start.t[w]
    time[w] = time.dtype(start.time[w])


@wp.kernel
def rk4_stage(
    world_offset: int,
    chunk: int,
    k: int,
    dt: f64,
    joints: JointTable,
    el: Elements,
    state: WorldState,
    start: StepStart,
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    qacc: wp.array2d(dtype=Any),
    time: wp.array(dtype=Any),
):
    """Stage k (0..3) of world w: add w_k f(y_k) to the sum, write the next stage state
    (or the step's end). y_k is in the arrays, with MuJoCo's qacc and the loads kernel's
    chief acceleration and wheel torques evaluated at it. A world unhealthy at the first
    stage is left as it is; one found unhealthy later returns to its start state."""
    w = wp.tid() + world_offset
    first = 0
    if k == 0:
        first = 1
    last = 0
    if k == 3:
        last = 1
    if first != 0:
        frozen = 0
        if state.health[w] != 0:
            frozen = 1
        start.frozen[w] = frozen
    if start.frozen[w] != 0:
        return
    nq = qpos.shape[1]
    nv = qvel.shape[1]
    nrw = state.wheel_momentum.shape[1]
    ncmg = state.cmg_angle.shape[1]
    if first != 0:
        # y_0: the float64 end of the last step wherever the arrays still hold its rounding
        # (MuJoCo-Warp's float32), else what was written there since (a reset, a user).
        for i in range(nq):
            if qpos.dtype(start.qpos[w, i]) != qpos[w, i]:
                start.qpos[w, i] = f64(qpos[w, i])
        for i in range(nv):
            if qvel.dtype(start.qvel[w, i]) != qvel[w, i]:
                start.qvel[w, i] = f64(qvel[w, i])
        if time.dtype(start.time[w]) != time[w]:
            start.time[w] = f64(time[w])
        for i in range(nrw):
            start.wheel_momentum[w, i] = state.wheel_momentum[w, i]
        for i in range(ncmg):
            start.cmg_angle[w, i] = state.cmg_angle[w, i]
        start.R[w] = state.R[w]
        start.V[w] = state.V[w]
        start.t[w] = state.t[w]
    if last != 0 and state.health[w] != 0:
        restore_start(w, state, start, qpos, qvel, time)
        return
    weight = f64(1.0) / f64(6.0)
    if k == 1 or k == 2:
        weight = f64(1.0) / f64(3.0)
    h = f64(0.5) * dt  # c_{k+1} dt
    if k >= 2:
        h = dt
    # Positions first: their rates read this stage's qvel, which the velocities overwrite.
    for j in range(joints.kind.shape[0]):
        kind = joints.kind[j]
        qa = joints.qposadr[j]
        da = joints.dofadr[j]
        nlin = 1
        quat_at = -1
        if kind == JNT_FREE:
            nlin = 3
            quat_at = 3
        elif kind == JNT_BALL:
            nlin = 0
            quat_at = 0
        for i in range(nlin):
            rate = f64(qvel[w, da + i])
            total = stage_sum(first, start.sum_qpos[w, qa + i], weight, rate)
            start.sum_qpos[w, qa + i] = total
            value = stage_value(last, start.qpos[w, qa + i], total, rate, h, dt)
            qpos[w, qa + i] = qpos.dtype(value)
            if last != 0:
                start.qpos[w, qa + i] = value
        if quat_at >= 0:
            a = qa + quat_at
            b = da + quat_at
            q = wp.vec4d(
                f64(qpos[w, a]), f64(qpos[w, a + 1]), f64(qpos[w, a + 2]), f64(qpos[w, a + 3])
            )
            omega = vec3d(f64(qvel[w, b]), f64(qvel[w, b + 1]), f64(qvel[w, b + 2]))
            rate4 = quat_rate(q, omega)
            q0 = wp.vec4d(
                start.qpos[w, a], start.qpos[w, a + 1], start.qpos[w, a + 2], start.qpos[w, a + 3]
            )
            previous = wp.vec4d(
                start.sum_qpos[w, a],
                start.sum_qpos[w, a + 1],
                start.sum_qpos[w, a + 2],
                start.sum_qpos[w, a + 3],
            )
            total4 = stage_sum(first, previous, weight, rate4)
            value4 = stage_value(last, q0, total4, rate4, h, dt)
            if last != 0:
                value4 = wp.normalize(value4)
            for i in range(4):
                start.sum_qpos[w, a + i] = total4[i]
                qpos[w, a + i] = qpos.dtype(value4[i])
                if last != 0:
                    start.qpos[w, a + i] = value4[i]
    for i in range(nv):
        rate = f64(qacc[w, i])
        total = stage_sum(first, start.sum_qvel[w, i], weight, rate)
        start.sum_qvel[w, i] = total
        value = stage_value(last, start.qvel[w, i], total, rate, h, dt)
        qvel[w, i] = qvel.dtype(value)
        if last != 0:
            start.qvel[w, i] = value
    for i in range(nrw):
        rate = state.wheel_torque_applied[w, i]
        total = stage_sum(first, start.sum_wheel[w, i], weight, rate)
        start.sum_wheel[w, i] = total
        state.wheel_momentum[w, i] = stage_value(
            last, start.wheel_momentum[w, i], total, rate, h, dt
        )
    for i in range(ncmg):
        rate = state.cmg_rate_applied[w, i]
        total = stage_sum(first, start.sum_cmg[w, i], weight, rate)
        start.sum_cmg[w, i] = total
        angle = stage_value(last, start.cmg_angle[w, i], total, rate, h, dt)
        if last != 0:
            angle = wp.clamp(angle, el.cmg_min_angle[i], el.cmg_max_angle[i])
        state.cmg_angle[w, i] = angle
    V = state.V[w]
    A = state.a_chief[w]
    sum_R = stage_sum(first, start.sum_R[w], weight, V)
    sum_V = stage_sum(first, start.sum_V[w], weight, A)
    start.sum_R[w] = sum_R
    start.sum_V[w] = sum_V
    state.R[w] = stage_value(last, start.R[w], sum_R, V, h, dt)
    state.V[w] = stage_value(last, start.V[w], sum_V, A, h, dt)
    if last != 0:
        n = state.nstep[w] + wp.int64(1)
        state.nstep[w] = n
        state.t[w] = state.t_anchor[w] + f64(n) * dt
        start.time[w] = start.time[w] + dt
        time[w] = time.dtype(start.time[w])
    else:
        state.t[w] = start.t[w] + h
        time[w] = time.dtype(start.time[w] + h)


def joint_table(m: mujoco.MjModel, device: str) -> JointTable:
    """The model's joints as Warp arrays on `device`."""
    table = JointTable()
    for name, values in (
        ("kind", m.jnt_type),
        ("qposadr", m.jnt_qposadr),
        ("dofadr", m.jnt_dofadr),
    ):
        setattr(table, name, wp.array(np.asarray(values, dtype=np.int32), dtype=int, device=device))
    return table


class StageStepper:
    """One per-stage RK4 step of every healthy world of an `OrbitData`, on either backend.

    Args:
        data: the `OrbitData` (its backend, its orbit-layer state, its loads launch).
        prepare: `prepare(ids)` makes MuJoCo's position/velocity-derived fields current
            where the loads kernel reads them (articulated scenes; None for free-floating
            ones, whose kernel reads qpos/qvel).
        active: `active()` gives the healthy worlds' ids for MuJoCo's per-world calls, or
            None for all (MuJoCo-Warp, or every world healthy). Must not read the device on
            a GPU.
    """

    def __init__(self, data, prepare: Callable | None, active: Callable[[], Any]):
        self.data = data
        self.prepare = prepare
        self.active = active
        backend, m = data.backend, data.model.mj_model
        nworld, nrw = data.nworld, data.model.count("wheels")
        ncmg = data.model.count("cmgs")
        self.forward = backend.forward
        self.start = StepStart()
        self.start.frozen = backend.alloc((nworld,), int)
        for name, shape, dtype in (
            ("qpos", (nworld, m.nq), wp.float64),
            ("qvel", (nworld, m.nv), wp.float64),
            ("R", (nworld,), vec3d),
            ("V", (nworld,), vec3d),
            ("wheel_momentum", (nworld, nrw), wp.float64),
            ("t", (nworld,), wp.float64),
            ("time", (nworld,), wp.float64),
            ("sum_qpos", (nworld, m.nq), wp.float64),
            ("sum_qvel", (nworld, m.nv), wp.float64),
            ("sum_R", (nworld,), vec3d),
            ("sum_V", (nworld,), vec3d),
            ("sum_wheel", (nworld, nrw), wp.float64),
            ("cmg_angle", (nworld, ncmg), wp.float64),
            ("sum_cmg", (nworld, ncmg), wp.float64),
        ):
            setattr(self.start, name, backend.alloc(shape, dtype))
        field = backend.body_field
        inputs = [
            wp.float64(data.model.timestep),
            joint_table(m, data.device),
            data._elements,
            data._state,
            self.start,
            field("qpos"),
            field("qvel"),
            field("qacc"),
            field("time"),
        ]
        self.stages = [
            WorldLaunch(
                rk4_stage,
                nworld,
                inputs=[k, *inputs],
                device=data.device,
                nthread=data._kernel_threads,
            )
            for k in range(len(RK4_NODES))
        ]

    def step(self) -> None:
        """Advance the healthy worlds by one timestep (frozen worlds keep their state).

        Where the loads read MuJoCo's derived fields (`prepare`), they are made current at
        the new state at the end, as the held step leaves them; otherwise they describe
        the last stage's state, as after the held step of a free-floating scene (call
        `OrbitData.forward()` before reading them).
        """
        ids = self.active()
        for stage in self.stages:
            if self.prepare is not None:
                self.prepare(ids)
            self.data._loads.launch()
            self.forward(ids)
            stage.launch()
        if self.prepare is not None:
            self.prepare(ids)

    def close(self) -> None:
        for stage in self.stages:
            stage.close()
