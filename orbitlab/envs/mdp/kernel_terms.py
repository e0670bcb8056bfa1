"""Observation, reward and termination terms as kernel terms (`orbitlab.fw.terms`): the
generic terms of `orbitlab.envs.mdp.observations`, `.rewards` and `.terminations`, per world,
fused by their manager into one launch.

Each factory takes a `TermBuild` and the params of its torch twin (same names, same
meaning) and returns the per-world function; the torch twins stay as the reference their
tests compare against. Write a task's own term the same way:

    @kernel_term
    def rate_kernel(build, entity):
        dof = root_dof(entity, build)

        @wp.func
        def f(w: int, s: Any) -> wp.float64:
            return 1.0 - wp.exp(-wp.length(root_rate(s, w, dof)) / 0.01)

        return f
"""

# No `from __future__ import annotations` here: Warp reads the functions' annotations as
# objects.

import functools
from typing import Any

from orbitlab.actuators.momentum import ReactionWheelGroup
from orbitlab.envs.mdp import observations
from orbitlab.fw.terms import KernelTerm, KernelUnavailable, TermBuild, kernel_term
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.quiet import wp  # Warp, started quietly

__all__ = [
    "action_l2",
    "action_rate_l2",
    "ang_vel_above",
    "ang_vel_norm",
    "constant",
    "held_for",
    "last_action",
    "potential_progress",
    "root_ang_vel",
    "root_dof",
    "root_rate",
    "sensor_columns",
    "sensor_value",
    "time_out",
    "wheel_speed",
]

f64 = wp.float64


@functools.cache
def vector_type(dim: int) -> Any:
    """The float64 Warp vector of `dim` components an observation kernel term returns."""
    return wp.types.vector(length=dim, dtype=wp.float64)


def root_dof(entity: SceneEntityCfg, build: TermBuild) -> int:
    """The first velocity address of `entity`'s free root joint (a kernel term's constant);
    a ValueError naming the term when the root is not free."""
    handle = entity.handle
    if not handle.free:
        raise ValueError(f"{build.term}: entity '{entity.name}' has no free root joint")
    return int(handle.dof_adr)


@wp.func
def root_rate(s: Any, w: int, dof: int) -> wp.vec3d:
    """Angular velocity of a free root whose velocities start at `dof`, body axes, rad/s."""
    return wp.vec3d(f64(s.qvel[w, dof + 3]), f64(s.qvel[w, dof + 4]), f64(s.qvel[w, dof + 5]))


def sensor_columns(build: TermBuild, sensor: Any, label: str, twin: str = "") -> tuple[int, int]:
    """(first, end) columns of a fused sensor's held values in `StepArrays.sensors`; for a
    sensor outside the fused kernel (or with latency) a `KernelUnavailable` naming the term,
    the sensor (`label`) and the torch term to use (`twin`; a term that declares its twin
    then runs as it)."""
    columns = build.env.scene.sensor_stage.held_columns(sensor)
    if columns is None:
        use = f"; use {twin}" if twin else ""
        raise KernelUnavailable(
            f"{build.term}: sensor {label} is not a fused sensor without latency (its value "
            f"is not in the kernel's arrays){use}"
        )
    return int(columns[0]), int(columns[1])


@wp.func
def norm3(v: wp.vec3d) -> wp.float64:
    """|v|, summed x, y, z in order as torch's `vector_norm` of three components."""
    return wp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@kernel_term
def ang_vel_norm(build: TermBuild, entity: SceneEntityCfg):
    """|omega| of an entity's root body, rad/s (`rewards.ang_vel_norm`)."""
    dof = root_dof(entity, build)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return norm3(root_rate(s, w, dof))

    return f


@kernel_term
def action_l2(build: TermBuild):
    """Squared norm of the policy action (`rewards.action_l2`): float32, summed in order,
    which is torch's order for up to 4 components (measured: torch sums 5 or more, but 8,
    in another order, so a longer action's sum may differ from the torch twin's in its last
    bit)."""
    dim = int(build.env.action_manager.action.shape[1])

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        total = wp.float32(0.0)
        for i in range(wp.static(dim)):
            a = s.action[w, i]
            total = total + a * a
        return f64(total)

    return f


@kernel_term
def action_rate_l2(build: TermBuild):
    """Squared norm of the change of the policy action (`rewards.action_rate_l2`); summed
    as `action_l2`."""
    dim = int(build.env.action_manager.action.shape[1])

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        total = wp.float32(0.0)
        for i in range(wp.static(dim)):
            d = s.action[w, i] - s.prev_action[w, i]
            total = total + d * d
        return f64(total)

    return f


@kernel_term
def constant(build: TermBuild):
    """1 per second (`rewards.constant`)."""

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        return f64(1.0)

    return f


@kernel_term
def potential_progress(build: TermBuild, potential: KernelTerm, potential_params=None):
    """The decrease per second of a potential (`rewards.potential_progress`): `potential`
    is a kernel term (with `potential_params`); 0 in an episode's first step. Keeps the
    last potential in one `term_state` column."""
    now = potential.factory(build, **(potential_params or {}))
    col = build.state(1)

    @wp.func
    def f(w: int, s: Any) -> wp.float64:
        value = now(w, s)
        progress = f64(0.0)
        if s.episode_length[w] > wp.int64(1):
            progress = (s.term_state[w, col] - value) / s.step_dt
        s.term_state[w, col] = value
        return progress

    return f


@kernel_term
def time_out(build: TermBuild):
    """The episode's time limit is reached (`terminations.time_out`)."""
    limit = int(build.env.max_episode_length)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        return s.episode_length[w] >= wp.int64(limit)

    return f


@kernel_term
def ang_vel_above(build: TermBuild, entity: SceneEntityCfg, limit_rad_s: float):
    """The root's angular speed exceeds `limit_rad_s` (`terminations.ang_vel_above`)."""
    dof, limit = root_dof(entity, build), float(limit_rad_s)

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        return norm3(root_rate(s, w, dof)) > f64(limit)

    return f


@kernel_term
def held_for(build: TermBuild, condition: KernelTerm, duration_s: float, condition_params=None):
    """True once `condition` (a kernel term returning a bool, with `condition_params`) has
    held continuously for `duration_s` (`terminations.held_for`). Keeps the time held, s,
    in one `term_state` column."""
    ok = condition.factory(build, **(condition_params or {}))
    col, limit = build.state(1), float(duration_s) - 1e-9

    @wp.func
    def f(w: int, s: Any) -> wp.bool:
        held = f64(0.0)
        if ok(w, s):
            if s.episode_length[w] <= wp.int64(1):
                held = s.step_dt
            else:
                held = s.term_state[w, col] + s.step_dt
        s.term_state[w, col] = held
        return held >= f64(limit)

    return f


@kernel_term(twin=observations.sensor_value)
def sensor_value(build: TermBuild, sensor_cfg: SceneEntityCfg, slice_=None):
    """The delivered measurement of a sensor (`observations.sensor_value`), optionally a
    component slice (first, end): in the kernel for a fused sensor without latency, as its
    torch twin for the others (a sensor with latency, or every sensor under
    `SceneCfg.fused_sensors=False`)."""
    first, end = sensor_columns(
        build, sensor_cfg.sensor, repr(sensor_cfg.sensor_names[0]), "orbitlab.envs.mdp.sensor_value"
    )
    if slice_ is not None:
        first, end = first + int(slice_[0]), first + int(slice_[1])
    dim = end - first
    value_type = vector_type(dim)

    @wp.func
    def f(w: int, s: Any) -> value_type:
        out = value_type()
        for c in range(wp.static(dim)):
            out[c] = s.sensors[w, first + c]
        return out

    return f, dim


@kernel_term
def last_action(build: TermBuild):
    """The previous policy action (`observations.last_action`)."""
    dim = int(build.env.action_manager.action.shape[1])
    value_type = vector_type(dim)

    @wp.func
    def f(w: int, s: Any) -> value_type:
        out = value_type()
        for c in range(wp.static(dim)):
            out[c] = f64(s.action[w, c])
        return out

    return f, dim


@kernel_term
def root_ang_vel(build: TermBuild, entity: SceneEntityCfg):
    """True body angular velocity of an entity's root in body axes, rad/s
    (`observations.root_ang_vel`, privileged)."""
    dof = root_dof(entity, build)

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        return root_rate(s, w, dof)

    return f, 3


@kernel_term(twin=observations.wheel_speed)
def wheel_speed(build: TermBuild, actuator_cfg: SceneEntityCfg, scale_rad_s=None):
    """Speeds of a reaction-wheel group's wheels relative to their body, over their limit
    (or `scale_rad_s`) (`observations.wheel_speed`): h / I_w - a . omega, in the kernel for
    a group on one free-floating body, as its torch twin for the others."""
    wheels = actuator_cfg.actuator
    if not isinstance(wheels, ReactionWheelGroup):
        raise TypeError(f"{build.term}: {actuator_cfg!r} names a {type(wheels).__name__}")
    joint = build.env.scene.view.free_joint(wheels.first_body) if wheels.single_body else None
    if joint is None:
        raise KernelUnavailable(
            f"{build.term}: wheel group {actuator_cfg.actuator_names[0]!r} is not on one "
            "free-floating body; use orbitlab.envs.mdp.wheel_speed"
        )
    dof, count = joint[1], wheels.num
    columns = [int(c) for c in wheels.ids.tolist()]
    inertia = [wp.float64(x) for x in wheels.wheel_inertia.tolist()]
    ax, ay, az = ([wp.float64(row[k]) for row in wheels.axis.tolist()] for k in range(3))
    limits = [
        wp.float64(row["max_speed"] if scale_rad_s is None else scale_rad_s) for row in wheels._rows
    ]
    value_type = vector_type(count)

    @wp.func
    def f(w: int, s: Any) -> value_type:
        omega = root_rate(s, w, dof)
        out = value_type()
        for i in range(wp.static(count)):
            spin = (
                omega[0] * wp.static(ax[i])
                + omega[1] * wp.static(ay[i])
                + omega[2] * wp.static(az[i])
            )
            h = s.wheel_momentum[w, wp.static(columns[i])]
            out[i] = (h / wp.static(inertia[i]) - spin) / wp.static(limits[i])
        return out

    return f, count
