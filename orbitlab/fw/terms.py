"""Kernel terms: reward and termination terms as per-world Warp functions, fused into one
launch per manager.

A kernel term is a factory decorated with `kernel_term`. The manager calls it once, when the
env is built, with a `TermBuild` and the term's params (scene references resolved, as a
torch term gets them). It returns a `@wp.func` of one world,

    f(w: int, s: Any) -> wp.float64   (a reward term; a termination term returns wp.bool;
                                       an observation term a vector, see below)

where `s` is the env's `StepArrays` (the struct of `step_arrays_type`) and the params are
compile-time constants of the function (closure variables of the factory). The manager
generates one kernel that calls its kernel terms in order, weights them and writes the
reward, the episode sums and the termination flags (`make_reward_kernel`,
`make_termination_kernel`): one launch per env step instead of a few torch operations per
term, no host read, nothing allocated, and the same code on the CPU and on a GPU. A term with
state (a potential's last value, a hold timer) asks `TermBuild.state` for columns of the
manager's `term_state` (float64, a row per world), which the env's state keeps.

The math is written in the order of the torch terms it replaces (`orbitlab.envs.mdp`), which
stay as the reference its tests compare against; the kernels are compiled without
floating-point contraction (`fuse_fp`), so that a product and a sum round as torch's do.
"""

# No `from __future__ import annotations` here: Warp reads the generated kernels'
# annotations as objects.

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.kinematics import BodyFrames

MODULE_OPTIONS = {"fuse_fp": False, "enable_backward": False}
"""Options of every generated term kernel (no contraction of a*b+c into one rounding)."""

_STEP_ARRAYS: dict[Any, Any] = {}


def step_arrays_type(float_dtype) -> Any:
    """The `StepArrays` struct for a backend whose state arrays hold `float_dtype`
    (wp.float64 on the CPU backend, wp.float32 on MuJoCo-Warp). Fields:

    * qpos, qvel: the simulation state (MuJoCo's generalized coordinates and velocities;
      a free joint's angular velocity in body axes, rad/s), (N, nq) and (N, nv);
    * action, prev_action: the policy's action of this step and the one before, (N, A);
    * episode_length: env steps of each world's episode so far, (N,);
    * term_state: the columns the manager's stateful terms asked for, (N, K) float64;
    * wheel_momentum: every reaction wheel's spin momentum, N m s, (N, wheels) float64;
    * sensors: the fused sensors' held values, (N, columns) float64
      (`SensorStage.held_columns` gives a sensor's columns; (N, 0) without fused sensors);
    * frames: every body's rotation, COM and velocities in world axes (`BodyFrames`, a row
      per world), current only for a term whose factory asked `TermBuild.frames()`;
    * commands: the fused actuator groups' held commands, (N, elements) float64
      (`ActuatorStage.command_columns` gives a group's columns; (N, 0) without fused groups);
    * qfrc_constraint: MuJoCo's constraint forces, (N, nv), for a manager one of whose terms
      asked `TermBuild.constraint_forces()` (else (N, 0));
    * R, V: the chief's ECI position (km) and velocity (km/s), (N,) vec3d (the orbit layer's
      state; `SimView.hill` builds the Hill frame from them);
    * termination_flags: the termination manager's kernel terms' flags of this step,
      (N, terms) (`TerminationManager.kernel_flag_columns`; (N, 0) before it exists);
    * step_dt: the env step, s.
    """
    if float_dtype not in _STEP_ARRAYS:
        fields = {
            "qpos": wp.array2d(dtype=float_dtype),
            "qvel": wp.array2d(dtype=float_dtype),
            "action": wp.array2d(dtype=wp.float32),
            "prev_action": wp.array2d(dtype=wp.float32),
            "episode_length": wp.array(dtype=wp.int64),
            "term_state": wp.array2d(dtype=wp.float64),
            "wheel_momentum": wp.array2d(dtype=wp.float64),
            "sensors": wp.array2d(dtype=wp.float64),
            "frames": BodyFrames,
            "commands": wp.array2d(dtype=wp.float64),
            "qfrc_constraint": wp.array2d(dtype=float_dtype),
            "termination_flags": wp.array2d(dtype=wp.bool),
            "R": wp.array(dtype=wp.vec3d),
            "V": wp.array(dtype=wp.vec3d),
            "step_dt": wp.float64,
        }
        name = f"StepArrays_{wp.types.type_repr(float_dtype)}"
        cls = type(name, (), {"__annotations__": fields, "__module__": __name__})
        _STEP_ARRAYS[float_dtype] = wp.struct(cls)
    return _STEP_ARRAYS[float_dtype]


def step_arrays(env: Any, term_state: torch.Tensor, constraint_forces: bool = False) -> Any:
    """The env's `StepArrays`: Warp views of its persistent buffers (no copy; they stay
    valid as long as the env keeps those buffers, which it writes in place).
    `constraint_forces`: bind MuJoCo's `qfrc_constraint` (else an empty array)."""
    view = env.scene.view

    def empty(dtype=torch.float64) -> torch.Tensor:  # no storage: keeps the struct's shape
        return torch.zeros((env.num_envs, 0), dtype=dtype, device=env.device)

    qpos, qvel = view.array("qpos"), view.array("qvel")
    s = step_arrays_type(wp.dtype_from_torch(qpos.dtype))()
    s.qpos, s.qvel = wp.from_torch(qpos), wp.from_torch(qvel)
    s.action = wp.from_torch(env.action_manager.action)
    s.prev_action = wp.from_torch(env.action_manager.prev_action)
    s.episode_length = wp.from_torch(env.episode_length_buf)
    s.term_state = wp.from_torch(term_state)
    s.wheel_momentum = wp.from_torch(view.array("wheel_momentum"))
    held = env.scene.sensor_stage.held_values
    s.sensors = wp.from_torch(empty() if held is None else held)
    s.frames = env.scene.data.world_frames
    commands = env.scene.actuator_stage.commands
    s.commands = wp.from_torch(empty() if commands is None else commands)
    s.qfrc_constraint = wp.from_torch(
        view.array("qfrc_constraint") if constraint_forces else empty(qpos.dtype)
    )
    terminations = getattr(env, "termination_manager", None)
    flags = None if terminations is None else terminations.kernel_flags
    s.termination_flags = wp.from_torch(empty(torch.bool) if flags is None else flags)
    s.R = wp.from_torch(view.array("R"), dtype=wp.vec3d)
    s.V = wp.from_torch(view.array("V"), dtype=wp.vec3d)
    s.step_dt = wp.float64(env.step_dt)
    return s


class KernelUnavailable(ValueError):
    """A kernel term's inputs are not in the kernel's arrays in this env (e.g. a sensor run
    in torch: `SceneCfg.fused_sensors=False`)."""


@dataclasses.dataclass(frozen=True)
class KernelTerm:
    """A term written as a per-world Warp function (see the module docstring)."""

    factory: Callable[..., Any]
    """`factory(build: TermBuild, **params) -> wp.func`, called once per env."""
    twin: Callable[..., Any] | None = None
    """The torch term of the same value, run instead where the factory raises
    `KernelUnavailable` (None: that error stands)."""

    @property
    def __name__(self) -> str:
        return self.factory.__name__


def kernel_term(
    factory: Callable[..., Any] | None = None, *, twin: Callable[..., Any] | None = None
) -> Any:
    """Mark `factory(build, **params) -> wp.func` as a kernel term for a manager (as
    `@kernel_term` or `@kernel_term(twin=torch_term)`)."""
    if factory is None:
        return lambda f: KernelTerm(f, twin)
    return KernelTerm(factory, twin)


@dataclasses.dataclass
class TermBuild:
    """What a kernel term's factory gets besides its params."""

    env: Any
    """The env being built (its scene, step and episode length, for constants)."""
    term: str
    """The term's name in its manager, for messages."""
    columns: list[str] = dataclasses.field(default_factory=list)
    """Names of the `term_state` columns handed out so far (the manager's, in order)."""
    uses_frames: bool = False
    """Whether the term reads `s.frames` (set by `frames()`)."""

    def frames(self) -> None:
        """Ask for `s.frames` current when the term is evaluated: the manager makes the
        scene's body frames current first (`SimView.frames()`, once per state, shared
        with the sensors and the torch terms)."""
        self.uses_frames = True

    uses_constraint_forces: bool = False
    """Whether the term reads `s.qfrc_constraint` (set by `constraint_forces()`)."""

    def constraint_forces(self) -> None:
        """Ask for `s.qfrc_constraint`, MuJoCo's constraint forces of the last physics step
        (bound for the manager's kernel; an output field exact-state capture then carries)."""
        self.uses_constraint_forces = True

    def state(self, count: int = 1) -> int:
        """Reserve `count` columns of the manager's `term_state` (float64, zero at the
        start); returns the first column's index, a constant for the term's function."""
        first = len(self.columns)
        self.columns += [f"{self.term}/{i}" for i in range(count)]
        return first


def make_reward_kernel(funcs: list[Any], float_dtype) -> Any:
    """`kernel(world_offset, chunk, s, scale, columns, values, sums, reward, accumulate)`:
    for each world, term i's value (unweighted, float64) into `values[w, i]`; with
    `accumulate` also that value times `scale[i]` (its weight, float32) times the step
    (float32), as the torch reward manager rounds it, added in order to
    `sums[w, columns[i]]` and to `reward[w]` (zeroed first). A term of weight 0 is skipped,
    as the torch manager skips it (its value 0)."""
    step_type, count = step_arrays_type(float_dtype), len(funcs)

    def reward_kernel(
        world_offset: int,
        chunk: int,
        s: step_type,
        scale: wp.array(dtype=wp.float32),
        columns: wp.array(dtype=int),
        values: wp.array2d(dtype=wp.float64),
        sums: wp.array2d(dtype=wp.float32),
        reward: wp.array(dtype=wp.float32),
        accumulate: int,
    ):
        w = world_offset + wp.tid()
        dt = wp.float32(s.step_dt)
        total = wp.float32(0.0)
        for i in range(wp.static(count)):
            value = wp.float64(0.0)
            if scale[i] != wp.float32(0.0):
                value = wp.static(funcs[i])(w, s)
                if accumulate != 0:
                    v = wp.float32(value) * scale[i] * dt
                    total = total + v
                    sums[w, columns[i]] = sums[w, columns[i]] + v
            values[w, i] = value
        if accumulate != 0:
            reward[w] = total

    return wp.kernel(reward_kernel, module="unique", module_options=MODULE_OPTIONS)


def make_termination_kernel(funcs: list[Any], float_dtype) -> Any:
    """`kernel(world_offset, chunk, s, time_out, flags, terminated, time_outs, done,
    accumulate)`: each term's flag into `flags[w, i]`; with `accumulate` also or-ed into
    `time_outs` (where `time_out[i]`) or `terminated` (both cleared first) and `done`."""
    step_type, count = step_arrays_type(float_dtype), len(funcs)

    def termination_kernel(
        world_offset: int,
        chunk: int,
        s: step_type,
        time_out: wp.array(dtype=int),
        flags: wp.array2d(dtype=wp.bool),
        terminated: wp.array(dtype=wp.bool),
        time_outs: wp.array(dtype=wp.bool),
        done: wp.array(dtype=wp.bool),
        accumulate: int,
    ):
        w = world_offset + wp.tid()
        ended, truncated = False, False
        for i in range(wp.static(count)):
            flag = wp.bool(wp.static(funcs[i])(w, s))
            flags[w, i] = flag
            if time_out[i] != 0:
                truncated = truncated or flag
            else:
                ended = ended or flag
        if accumulate != 0:
            terminated[w] = ended
            time_outs[w] = truncated
            done[w] = ended or truncated

    return wp.kernel(termination_kernel, module="unique", module_options=MODULE_OPTIONS)


def _column_writer(func: Any, dim: int, first: int) -> Any:
    """A function writing `func`'s value, cast to float32, into raw[w, first : first + dim]
    (one per term: each term's vector has its own type)."""

    @wp.func
    def write(w: int, s: Any, raw: wp.array2d(dtype=wp.float32)):
        value = func(w, s)
        for c in range(wp.static(dim)):
            raw[w, first + c] = wp.float32(value[c])

    return write


def make_observation_term_kernel(
    funcs: list[Any], dims: list[int], firsts: list[int], float_dtype
) -> Any:
    """`kernel(world_offset, chunk, s, raw)`: term i's value, cast to float32 component by
    component, into `raw[w, firsts[i] : firsts[i] + dims[i]]`."""
    step_type, count = step_arrays_type(float_dtype), len(funcs)
    writers = [_column_writer(f, d, c) for f, d, c in zip(funcs, dims, firsts, strict=True)]

    def observation_term_kernel(
        world_offset: int,
        chunk: int,
        s: step_type,
        raw: wp.array2d(dtype=wp.float32),
    ):
        w = world_offset + wp.tid()
        for i in range(wp.static(count)):
            wp.static(writers[i])(w, s, raw)

    return wp.kernel(observation_term_kernel, module="unique", module_options=MODULE_OPTIONS)
