"""The fused actuator kernel: every fused actuator group of a world run by one thread.

Per element, in the order of `ActuatorGroup.apply`: first-order lag of the held command
(latency 0), gain, failures (stuck off: 0, stuck on: the upper limit), saturation to the
limits, then the group's device model: none (`SATURATE`: magnetorquers, CMGs, continuous
thrusters), wheel friction against the wheel's speed relative to its body
(`orbitlab.actuators.momentum`), pulse-width modulation (`PWM`) or the Schmitt trigger
(`SCHMITT`) of `orbitlab.actuators.thrusters`, with the same float operations in the same
order. The result is the group's `output` and goes straight into the physics array the
group drives. The stage that builds and launches it is `orbitlab.actuators.fused`.
"""

from __future__ import annotations

from typing import Any

from orbitlab.actuators.base import STUCK_OFF, STUCK_ON
from orbitlab.quiet import wp  # Warp, started quietly

SATURATE, PWM, SCHMITT = 0, 1, 2
THRUSTERS, WHEELS, MAGNETORQUERS, CMGS = 0, 1, 2, 3
"""Physics arrays a group drives: thruster_force, wheel_torque, mtq_dipole, cmg_rate."""


_PWM, _SCHMITT = wp.constant(PWM), wp.constant(SCHMITT)
_THRUSTERS, _WHEELS, _MAGNETORQUERS = (
    wp.constant(THRUSTERS),
    wp.constant(WHEELS),
    wp.constant(MAGNETORQUERS),
)
_STUCK_OFF, _STUCK_ON = wp.constant(wp.int8(STUCK_OFF)), wp.constant(wp.int8(STUCK_ON))
f64 = wp.float64


@wp.struct
class GroupRows:
    """Per-group constants of the fused groups (row g: the g-th fused group)."""

    first: wp.array(dtype=int)  # first column of the group in the shared arrays
    count: wp.array(dtype=int)  # elements
    model: wp.array(dtype=int)  # SATURATE, PWM or SCHMITT
    target: wp.array(dtype=int)  # THRUSTERS, WHEELS, MAGNETORQUERS or CMGS
    alpha: wp.array(dtype=wp.float64)  # lag factor 1 - exp(-dt / tau) (1: no lag)
    period_steps: wp.array(dtype=int)  # PWM period, physics steps
    period_s: wp.array(dtype=wp.float64)  # PWM period, s (period_steps * dt)
    min_on_time_s: wp.array(dtype=wp.float64)
    schmitt_on: wp.array(dtype=wp.float64)
    schmitt_off: wp.array(dtype=wp.float64)
    min_on_steps: wp.array(dtype=int)
    friction: wp.array(dtype=int)  # wheels: 1 where viscous or Coulomb friction is modelled
    free_dof: wp.array(dtype=int)  # wheels with friction: dof address of the body's free joint
    viscous: wp.array(dtype=wp.float64)  # N m s/rad
    coulomb: wp.array(dtype=wp.float64)  # N m


@wp.struct
class ActuatorArrays:
    """Per-world state of the fused elements, (num_worlds, elements) each, and the phase
    of each group's PWM cycle, (num_worlds, groups)."""

    command: wp.array2d(dtype=wp.float64)
    output: wp.array2d(dtype=wp.float64)
    gain: wp.array2d(dtype=wp.float64)
    failure: wp.array2d(dtype=wp.int8)
    lag_state: wp.array2d(dtype=wp.float64)
    low: wp.array2d(dtype=wp.float64)
    high: wp.array2d(dtype=wp.float64)
    on_time: wp.array2d(dtype=wp.float64)
    valve_open: wp.array2d(dtype=wp.bool)
    open_steps: wp.array2d(dtype=wp.int64)
    phase: wp.array2d(dtype=wp.int64)
    column: wp.array(dtype=int)  # per element: its column in the physics array
    axis: wp.array(dtype=wp.vec3d)  # per element: a wheel's spin axis, body axes
    inertia: wp.array(dtype=wp.float64)  # per element: a wheel's inertia, kg m^2


@wp.func
def duty(value: wp.float64, high: wp.float64) -> wp.float64:
    """value / high where high > 0, else 0 (the torch models' `torch.where`)."""
    if high > f64(0.0):
        return value / wp.max(high, f64(1e-300))
    return f64(0.0)


@wp.func
def sign(x: wp.float64) -> wp.float64:
    """-1, 0 or 1 (`torch.sign`)."""
    if x > f64(0.0):
        return f64(1.0)
    if x < f64(0.0):
        return f64(-1.0)
    return f64(0.0)


@wp.func
def wheel_speed(a: ActuatorArrays, e: int, w: int, dof: int, qvel: Any, momentum: Any) -> Any:
    """Wheel e's speed relative to its body, rad/s: h / I_w - a . omega_body, the body's
    rate taken from its free joint (`ReactionWheelGroup.speed`)."""
    axis = a.axis[e]
    spin = f64(qvel[w, dof + 3]) * axis[0] + f64(qvel[w, dof + 4]) * axis[1]
    spin = spin + f64(qvel[w, dof + 5]) * axis[2]
    return momentum[w, a.column[e]] / a.inertia[e] - spin


@wp.kernel
def actuator_kernel(
    world_offset: int,
    chunk: int,
    rows: GroupRows,
    count: int,
    dt: wp.float64,
    a: ActuatorArrays,
    thruster_force: wp.array2d(dtype=wp.float64),
    wheel_torque: wp.array2d(dtype=wp.float64),
    mtq_dipole: wp.array2d(dtype=wp.float64),
    cmg_rate: wp.array2d(dtype=wp.float64),
    wheel_momentum: wp.array2d(dtype=wp.float64),
    qvel: wp.array2d(dtype=Any),
):
    """One physics step of every fused group of world w (see the module doc)."""
    w = world_offset + wp.tid()
    for g in range(count):
        model = rows.model[g]
        phase = a.phase[w, g]
        start = rows.first[g]
        for e in range(start, start + rows.count[g]):
            lag = a.lag_state[w, e]
            lag = lag + rows.alpha[g] * (a.command[w, e] - lag)
            a.lag_state[w, e] = lag
            high = a.high[w, e]
            value = a.gain[w, e] * lag
            failure = a.failure[w, e]
            if failure == _STUCK_OFF:
                value = f64(0.0)
            if failure == _STUCK_ON:
                value = high
            value = wp.min(wp.max(value, a.low[w, e]), high)
            if rows.friction[g] != 0:
                speed = wheel_speed(a, e, w, rows.free_dof[g], qvel, wheel_momentum)
                value = value - rows.viscous[g] * speed - rows.coulomb[g] * sign(speed)
            if model == _PWM:
                on_time = duty(value, high) * rows.period_s[g]
                if on_time < rows.min_on_time_s[g] - f64(1e-12):
                    on_time = f64(0.0)
                if phase == wp.int64(0):
                    a.on_time[w, e] = on_time
                elapsed = f64(phase) * dt
                left = wp.min(wp.max(a.on_time[w, e] - elapsed, f64(0.0)), dt)
                value = high * (left / dt)
            elif model == _SCHMITT:
                d = duty(value, high)
                was_open = a.valve_open[w, e]
                held = was_open and a.open_steps[w, e] < wp.int64(rows.min_on_steps[g])
                opened = d > rows.schmitt_on[g] or (was_open and d >= rows.schmitt_off[g])
                is_open = opened or held
                a.valve_open[w, e] = is_open
                if is_open:
                    a.open_steps[w, e] = a.open_steps[w, e] + wp.int64(1)
                    value = high
                else:
                    a.open_steps[w, e] = wp.int64(0)
                    value = f64(0.0)
            a.output[w, e] = value
            target = rows.target[g]
            column = a.column[e]
            if target == _THRUSTERS:
                thruster_force[w, column] = value
            elif target == _WHEELS:
                wheel_torque[w, column] = value
            elif target == _MAGNETORQUERS:
                mtq_dipole[w, column] = value
            else:
                cmg_rate[w, column] = value
        if model == _PWM:
            a.phase[w, g] = (phase + wp.int64(1)) % wp.int64(rows.period_steps[g])
