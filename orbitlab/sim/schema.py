"""The orbit layer's data, declared once.

Three tables describe everything the loads kernel reads and writes:

* `ELEMENT_KINDS`: per element kind (surfaces, dipoles, thrusters, wheels, magnetorquers,
  CMGs), its columns (the Warp `Elements` record's field, the key of the row that the
  element config's `resolve` returns, the dtype) and the name of its compile-time count.
* `WORLD_FIELDS`: every per-world array (`WorldState`), with its dtype, unit, whether it
  has one column per element of a kind, and its role for the kernel: `STATE` (read and
  advanced by the kernel), `INPUT` (a command the actuator layer writes, which the kernel
  only reads) or `OUTPUT` (written by the kernel at every evaluation).
* `SWITCHES`: the model's switches and chief schedule (`Switches`), the same for every
  world; with the element counts they make the kernel's compile-time `LAYOUT_CONSTANTS`.

From them `orbitlab.sim.records` builds the three Warp records, `OrbitModel` packs the element
tables, `OrbitData` allocates the arrays, and `orbitlab.sim.kernels.KernelLayout` takes its
compile-time counts. Adding an element kind or a per-world array is one row here (plus the
physics that uses it in the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbitlab.quiet import wp  # Warp, started quietly

STATE = "state"
"""Read and advanced by the kernel (the chief, clocks, actuator states)."""
INPUT = "input"
"""Written by the actuator layer or the user, only read by the kernel (commands)."""
OUTPUT = "output"
"""Written by the kernel at every evaluation (environment at the chief, applied values)."""


@dataclass(frozen=True)
class Column:
    """One column of an element table."""

    field: str
    """Field of the `Elements` record, e.g. 'surf_normal'."""
    key: str
    """Key of the row returned by the element config's `resolve`, e.g. 'normal'."""
    dtype: Any
    """int (body ids, 0/1 flags), wp.float64 or wp.vec3d (body axes)."""


@dataclass(frozen=True)
class ElementKind:
    """An element kind: its `ElementSet` field, compile-time count and table columns."""

    name: str
    """The `ElementSet` field and `OrbitModel.count` key, e.g. 'surfaces'."""
    count: str
    """The `KernelLayout` constant holding how many there are, e.g. 'nsurf'."""
    columns: tuple[Column, ...]


ELEMENT_KINDS: tuple[ElementKind, ...] = (
    ElementKind(
        "surfaces",
        "nsurf",
        (
            Column("surf_body", "body", int),
            Column("surf_normal", "normal", wp.vec3d),  # unit outward normal, body axes
            Column("surf_cop", "cop", wp.vec3d),  # centre of pressure from the COM, m
            Column("surf_area", "area", wp.float64),  # m^2
            Column("surf_cd", "cd", wp.float64),
            Column("surf_cr", "cr", wp.float64),
            Column("surf_drag", "drag", int),
            Column("surf_srp", "srp", int),
        ),
    ),
    ElementKind(
        "dipoles",
        "ndip",
        (Column("dip_body", "body", int), Column("dip_moment", "moment", wp.vec3d)),  # A m^2
    ),
    ElementKind(
        "thrusters",
        "nthr",
        (
            Column("thr_body", "body", int),
            Column("thr_pos", "pos", wp.vec3d),  # from the body origin, body axes, m
            Column("thr_dir", "dir", wp.vec3d),  # unit force direction, body axes
            Column("thr_max", "max", wp.float64),  # N
        ),
    ),
    ElementKind(
        "wheels",
        "nrw",
        (
            Column("rw_body", "body", int),
            Column("rw_axis", "axis", wp.vec3d),  # unit spin axis, body axes
            Column("rw_inertia", "inertia", wp.float64),  # kg m^2
            Column("rw_max_speed", "max_speed", wp.float64),  # rad/s relative to the body
            Column("rw_max_torque", "max_torque", wp.float64),  # N m
        ),
    ),
    ElementKind(
        "magnetorquers",
        "nmtq",
        (
            Column("mtq_body", "body", int),
            Column("mtq_axis", "axis", wp.vec3d),  # unit dipole axis, body axes
            Column("mtq_max", "max", wp.float64),  # A m^2
        ),
    ),
    ElementKind(
        "cmgs",
        "ncmg",
        (
            Column("cmg_body", "body", int),
            Column("cmg_gimbal", "gimbal", wp.vec3d),  # unit gimbal axis, body axes
            Column("cmg_spin0", "spin0", wp.vec3d),  # unit rotor axis at zero angle
            Column("cmg_h", "h", wp.float64),  # rotor momentum, N m s
            Column("cmg_max_rate", "max_rate", wp.float64),  # rad/s
            Column("cmg_min_angle", "min_angle", wp.float64),  # rad
            Column("cmg_max_angle", "max_angle", wp.float64),  # rad
        ),
    ),
)


@dataclass(frozen=True)
class WorldField:
    """One per-world array of `WorldState`."""

    name: str
    dtype: Any
    """wp.vec3d, wp.float64, wp.int64 or int."""
    role: str
    """STATE, INPUT or OUTPUT (see the module docstring)."""
    doc: str
    """Meaning and unit."""
    per: str | None = None
    """An element kind: one column per element of it, shape (nworld, count); None: (nworld,)."""


WORLD_FIELDS: tuple[WorldField, ...] = (
    WorldField("R", wp.vec3d, STATE, "chief position, ECI, km"),
    WorldField("V", wp.vec3d, STATE, "chief velocity, ECI, km/s"),
    WorldField("t", wp.float64, STATE, "environment time, s since J2000"),
    WorldField("t_anchor", wp.float64, STATE, "environment time at the last reset, s"),
    WorldField("nstep", wp.int64, STATE, "MuJoCo steps since the last reset"),
    WorldField("health", int, STATE, "0 healthy, else why the world is frozen (sim/health.py)"),
    WorldField("a_feedback", wp.vec3d, OUTPUT, "chief load feedback this step, km/s^2"),
    WorldField("a_chief", wp.vec3d, OUTPUT, "chief acceleration (gravity + feedback), km/s^2"),
    WorldField("seg_R0", wp.vec3d, STATE, "segment start position (orbit_dt > dt), km"),
    WorldField("seg_V0", wp.vec3d, STATE, "segment start velocity, km/s"),
    WorldField("seg_R1", wp.vec3d, STATE, "predicted segment end position, km"),
    WorldField("seg_V1", wp.vec3d, STATE, "predicted segment end velocity, km/s"),
    WorldField("seg_a_sum", wp.vec3d, STATE, "load feedback summed over the segment, km/s^2"),
    WorldField("seg_k", int, STATE, "MuJoCo steps taken in the segment"),
    WorldField("sun_eci", wp.vec3d, OUTPUT, "unit vector to the Sun, ECI"),
    WorldField("eclipse", wp.float64, OUTPUT, "illumination at the chief, 0-1"),
    WorldField("mag_field_eci", wp.vec3d, OUTPUT, "magnetic field at the chief, ECI, T"),
    WorldField("atm_density", wp.float64, OUTPUT, "atmospheric density at the chief, kg/m^3"),
    WorldField("thruster_force", wp.float64, INPUT, "thrust commands, N", "thrusters"),
    WorldField("wheel_torque", wp.float64, INPUT, "wheel motor torque commands, N m", "wheels"),
    WorldField(
        "wheel_torque_applied", wp.float64, OUTPUT, "motor torque after limits, N m", "wheels"
    ),
    WorldField("wheel_momentum", wp.float64, STATE, "absolute axial momentum, N m s", "wheels"),
    WorldField("mtq_dipole", wp.float64, INPUT, "dipole commands, A m^2", "magnetorquers"),
    WorldField("cmg_rate", wp.float64, INPUT, "gimbal-rate commands, rad/s", "cmgs"),
    WorldField("cmg_rate_applied", wp.float64, OUTPUT, "gimbal rate after limits, rad/s", "cmgs"),
    WorldField("cmg_angle", wp.float64, STATE, "gimbal angles, rad", "cmgs"),
)


@dataclass(frozen=True)
class Switch:
    """One field of the `Switches` record (the same for every world)."""

    name: str
    dtype: Any
    """int (a 0/1 switch or a count) or wp.float64."""
    doc: str


SWITCHES: tuple[Switch, ...] = (
    Switch("use_j2", int, "J2 in the chief and differential gravity (0/1)"),
    Switch("use_gravity_gradient", int, "within-body gravity-gradient torque (0/1)"),
    Switch("use_drag", int, "atmospheric drag (0/1)"),
    Switch("use_srp", int, "solar radiation pressure (0/1)"),
    Switch("use_magnetic", int, "dipole and magnetorquer torques (0/1)"),
    Switch("penumbra", int, "conical penumbra instead of the hard cylinder (0/1)"),
    Switch("timestep", wp.float64, "MuJoCo timestep, s"),
    Switch("orbit_substeps", int, "chief RK4 substeps per MuJoCo step (orbit_dt <= timestep)"),
    Switch("segment_steps", int, "MuJoCo steps per predicted segment (orbit_dt > timestep)"),
    Switch("from_qpos", int, "1: body kinematics from qpos/qvel (free bodies), 0: derived"),
    Switch("to_qfrc", int, "1: loads as free-joint qfrc_applied, 0: as xfrc_applied"),
    Switch("stage", int, "1: the loads are evaluated at every RK4 stage (sim/stages.py), 0: held"),
)

LAYOUT_CONSTANTS: tuple[str, ...] = (
    "nbody",
    *(kind.count for kind in ELEMENT_KINDS),
    *(switch.name for switch in SWITCHES if switch.dtype is int),
)
"""What a specialised loads kernel can fix at compile time (`KernelLayout`'s fields): the
body count, each element kind's count and every integer switch."""

PER_ELEMENT_FIELDS: dict[str, str] = {f.name: f.per for f in WORLD_FIELDS if f.per is not None}
"""Per-world arrays with one column per element: name -> element kind."""


def warp_struct(name: str, doc: str, fields: dict[str, Any]):
    """A Warp record type named `name` with `fields` (field -> Warp type), in this module."""
    cls = type(name, (), {"__annotations__": fields, "__doc__": doc, "__module__": __name__})
    return wp.struct(cls)


def switch_record_fields() -> dict[str, Any]:
    """The `Switches` record's fields."""
    return {switch.name: switch.dtype for switch in SWITCHES}


def element_record_fields() -> dict[str, Any]:
    """The `Elements` record's fields: one array per column of every element kind."""
    return {c.field: wp.array(dtype=c.dtype) for kind in ELEMENT_KINDS for c in kind.columns}


def world_record_fields() -> dict[str, Any]:
    """The `WorldState` record's fields: (nworld,) or (nworld, count) arrays."""
    return {f.name: (wp.array2d if f.per else wp.array)(dtype=f.dtype) for f in WORLD_FIELDS}
