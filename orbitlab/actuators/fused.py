"""A scene's actuator groups as one Warp kernel per physics step, one thread per world.

Thrusters (PWM, Schmitt, continuous), reaction wheels (with friction where they sit on one
free-floating body), magnetorquers and CMGs run in one launch (`actuator_kernel`, split across cores on the CPU by `WorldLaunch`,
one launch on a GPU, no host read) when they have no command latency and no misalignment;
other groups keep their torch `ActuatorGroup.apply`. The kernel does what `apply` does,
with the same float operations in the same order, so the outputs are the reference's bit
for bit (checked by the tests on every shipped task).

The kernel writes into the groups' own tensors: each fused group's `command`, `output`,
`gain`, `failure`, `lag_state`, `low`, `high` (and a thruster group's `phase`, `on_time`,
`valve_open`, `open_steps`) become column views of one array per quantity, so its state
(`orbitlab.stateful`), commands, resets and failure draws work unchanged.
`SceneCfg.fused_actuators = False` keeps every group on its torch `apply` (the reference).
"""

from __future__ import annotations

import numpy as np
import torch

from orbitlab.actuators.base import ActuatorGroup
from orbitlab.actuators.context import ActuatorContext
from orbitlab.actuators.momentum import (
    ControlMomentGyroGroup,
    MagnetorquerGroup,
    ReactionWheelGroup,
)
from orbitlab.actuators.thrusters import ThrusterGroup
from orbitlab.fw.actuator_kernel import (
    CMGS,
    MAGNETORQUERS,
    PWM,
    SATURATE,
    SCHMITT,
    THRUSTERS,
    WHEELS,
    ActuatorArrays,
    GroupRows,
    actuator_kernel,
)
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch

TARGETS: dict[type, int] = {
    ThrusterGroup: THRUSTERS,
    ReactionWheelGroup: WHEELS,
    MagnetorquerGroup: MAGNETORQUERS,
    ControlMomentGyroGroup: CMGS,
}
"""Group classes the kernel runs (exactly these classes: a subclass may change the model,
so it keeps its torch `apply`), by the physics array each drives."""

_PHYSICS_ARRAYS = ("thruster_force", "wheel_torque", "mtq_dipole", "cmg_rate")
_MODELS = {"pwm": PWM, "schmitt": SCHMITT, "continuous": SATURATE}


def fusable(group: ActuatorGroup) -> bool:
    """Whether `actuator_kernel` runs this group: its exact class is one of `TARGETS`, it
    has no command latency and no misalignment, and a wheel group with friction has all its
    wheels on one free-floating body (whose rate the kernel reads from its free joint)."""
    if type(group) not in TARGETS or group.cfg.latency_steps != 0:
        return False
    if group.cfg.misalignment_std_rad > 0.0:
        return False
    return not _friction(group) or _free_dof(group) is not None


def _friction(group: ActuatorGroup) -> bool:
    cfg = group.cfg
    return getattr(cfg, "viscous_nms", 0.0) > 0.0 or getattr(cfg, "coulomb_nm", 0.0) > 0.0


def _free_dof(group: ActuatorGroup) -> int | None:
    """The dof address of the free joint of the one body a wheel group sits on, else None."""
    if not isinstance(group, ReactionWheelGroup) or not group.single_body:
        return None
    free = group.ctx.view.free_joint(group.first_body)
    return None if free is None else free[1]


class ActuatorStage:
    """Runs a scene's actuator groups for one physics step: the fusable ones in one kernel
    launch, the others with their own torch `apply` (`fused=False`: all of them)."""

    def __init__(self, groups: dict[str, ActuatorGroup], ctx: ActuatorContext, fused: bool = True):
        chosen = [g for g in groups.values() if fused and fusable(g)]
        self.fused = chosen
        self.others = [g for g in groups.values() if not any(g is f for f in chosen)]
        self.ctx = ctx
        self._launch: WorldLaunch | None = None
        self.commands: torch.Tensor | None = None
        """Every fused group's held command, column after column, (N, elements) float64
        (None without fused groups); `command_columns` gives a group's columns."""
        self._command_columns: dict[int, tuple[int, int]] = {}
        if chosen:
            self._build(chosen)

    def command_columns(self, group: ActuatorGroup) -> tuple[int, int] | None:
        """(first, end) columns of `commands` that are `group.command` (a fused group);
        None for any other group (its command is its own tensor)."""
        return self._command_columns.get(id(group))

    def apply(self) -> None:
        """One physics step of every group: commands through their models into the physics."""
        ctx = self.ctx
        ctx.begin_step()
        if self._launch is not None:
            self._launch.launch()
        for group in self.others:
            group.apply()
        ctx.end_step()

    def close(self) -> None:
        if self._launch is not None:
            self._launch.close()
            self._launch = None

    # ------------------------------------------------------------------ build
    def _build(self, groups: list[ActuatorGroup]) -> None:
        ctx = self.ctx
        n, device = ctx.num_worlds, ctx.device
        counts = [g.num for g in groups]
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
        total = int(sum(counts))
        f64 = {"dtype": torch.float64, "device": device}
        shared = {
            "command": torch.zeros((n, total), **f64),
            "output": torch.zeros((n, total), **f64),
            "gain": torch.zeros((n, total), **f64),
            "failure": torch.zeros((n, total), dtype=torch.int8, device=device),
            "lag_state": torch.zeros((n, total), **f64),
            "low": torch.zeros((n, total), **f64),
            "high": torch.zeros((n, total), **f64),
            "on_time": torch.zeros((n, total), **f64),
            "valve_open": torch.zeros((n, total), dtype=torch.bool, device=device),
            "open_steps": torch.zeros((n, total), dtype=torch.long, device=device),
        }
        phase = torch.zeros((n, len(groups)), dtype=torch.long, device=device)
        for g, (group, c) in enumerate(zip(groups, first, strict=True)):
            # the group's tensors become column views of the shared arrays (values kept)
            for name, array in shared.items():
                if hasattr(group, name):
                    column = array[:, c : c + group.num]
                    column.copy_(getattr(group, name))
                    setattr(group, name, column)
            if isinstance(group, ThrusterGroup):
                phase[:, g].copy_(group.phase)
                group.phase = phase[:, g]
        self._shared, self._phase = shared, phase  # kept alive for the launch
        self.commands = shared["command"]
        self._command_columns = {
            id(group): (int(c), int(c) + group.num) for group, c in zip(groups, first, strict=True)
        }
        arrays = ActuatorArrays()
        for name, array in shared.items():
            setattr(arrays, name, wp.from_torch(array))
        arrays.phase = wp.from_torch(phase)
        columns = np.concatenate([_columns(group) for group in groups]).astype(np.int32)
        arrays.column = wp.array(columns, dtype=int, device=str(device))
        axes, inertia = [], []
        for group in groups:
            if isinstance(group, ReactionWheelGroup):
                axes.append(group.axis.cpu().numpy())
                inertia.append(group.wheel_inertia.cpu().numpy())
            else:
                axes.append(np.zeros((group.num, 3)))
                inertia.append(np.ones(group.num))
        arrays.axis = wp.array(np.concatenate(axes), dtype=wp.vec3d, device=str(device))
        arrays.inertia = wp.array(np.concatenate(inertia), dtype=wp.float64, device=str(device))
        self._arrays = arrays
        targets = [_physics_array(ctx, name) for name in _PHYSICS_ARRAYS]
        self._rows = _rows(groups, first, ctx.dt, str(device))  # kept alive for the launch
        inputs = [
            self._rows,
            len(groups),
            wp.float64(ctx.dt),
            arrays,
        ]
        inputs += targets
        inputs += [_physics_array(ctx, "wheel_momentum"), wp.from_torch(ctx.array("qvel"))]
        self._targets = targets
        self._launch = WorldLaunch(actuator_kernel, n, inputs, str(device), ctx.data.kernel_threads)


def _columns(group: ActuatorGroup) -> np.ndarray:
    """The group's columns in its physics array."""
    columns = group.columns
    if isinstance(columns, slice):
        return np.arange(columns.start, columns.stop)
    return columns.detach().cpu().numpy()


def _physics_array(ctx: ActuatorContext, name: str):
    """A Warp view of physics array `name` (a one-column stand-in where the scene has none
    of its elements: the kernel never writes it)."""
    array = ctx.array(name)
    if array.shape[1] == 0:
        array = torch.zeros((ctx.num_worlds, 1), dtype=torch.float64, device=ctx.device)
    return wp.from_torch(array)


def _rows(groups: list[ActuatorGroup], first: np.ndarray, dt: float, device: str) -> GroupRows:
    """The per-group constants of `groups` as a `GroupRows` on `device`."""

    def column(values, dtype):
        return wp.array(np.asarray(values), dtype=dtype, device=device)

    def thruster(group: ActuatorGroup, attr: str, default: float) -> float:
        return getattr(group.cfg, attr) if isinstance(group, ThrusterGroup) else default

    rows = GroupRows()
    rows.first = column(first, int)
    rows.count = column([g.num for g in groups], int)
    rows.model = column(
        [_MODELS[g.cfg.mode] if isinstance(g, ThrusterGroup) else SATURATE for g in groups], int
    )
    rows.target = column([TARGETS[type(g)] for g in groups], int)
    rows.alpha = column([g.alpha for g in groups], wp.float64)
    steps = [g.period_steps if isinstance(g, ThrusterGroup) else 1 for g in groups]
    rows.period_steps = column(steps, int)
    rows.period_s = column([s * dt for s in steps], wp.float64)  # as `ThrusterGroup._pwm`
    rows.min_on_time_s = column([thruster(g, "min_on_time_s", 0.0) for g in groups], wp.float64)
    rows.schmitt_on = column([thruster(g, "schmitt_on", 0.0) for g in groups], wp.float64)
    rows.schmitt_off = column([thruster(g, "schmitt_off", 0.0) for g in groups], wp.float64)
    rows.min_on_steps = column(
        [g.min_on_steps if isinstance(g, ThrusterGroup) else 0 for g in groups], int
    )
    rows.friction = column([int(_friction(g)) for g in groups], int)
    rows.free_dof = column([_free_dof(g) or 0 for g in groups], int)
    rows.viscous = column([getattr(g.cfg, "viscous_nms", 0.0) for g in groups], wp.float64)
    rows.coulomb = column([getattr(g.cfg, "coulomb_nm", 0.0) for g in groups], wp.float64)
    return rows
