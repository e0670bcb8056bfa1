"""Orbit-layer element configs: surfaces, dipoles and the physics actuators.

Each config is a typed dataclass whose fields carry their units. `resolve`
checks one element against the compiled MuJoCo model and returns its row for
the kernels' tables; every error names the element and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    import mujoco

# Three numbers, checked by `_vector` when an element resolves (so any tuple, as any list).
Vec3 = tuple[float, ...] | list[float] | np.ndarray


def _vector(kind: str, name: str, field_name: str, value: Vec3, *, unit: bool) -> np.ndarray:
    try:
        vec = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        vec = np.full(0, np.nan)
    if vec.shape != (3,) or not np.all(np.isfinite(vec)):
        raise ValueError(f"{kind} '{name}': {field_name} must be 3 finite numbers, got {value!r}")
    if unit:
        scale = float(np.max(np.abs(vec)))  # first, so that huge components cannot overflow
        if scale == 0.0:
            raise ValueError(f"{kind} '{name}': {field_name} must be nonzero, got {value!r}")
        vec = vec / scale
        vec = vec / float(np.linalg.norm(vec))
    return vec


def _is_number(value: Any) -> bool:
    """A real number (int or float, numpy's too), not a bool, string or container."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _positive(kind: str, name: str, field_name: str, value: float, unit: str) -> float:
    if not (_is_number(value) and np.isfinite(value) and value > 0.0):
        raise ValueError(f"{kind} '{name}': {field_name} must be > 0 {unit}, got {value!r}")
    return float(value)


def _nonnegative(kind: str, name: str, field_name: str, value: float) -> float:
    if not (_is_number(value) and np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{kind} '{name}': {field_name} must be >= 0, got {value!r}")
    return float(value)


@dataclass(kw_only=True)
class _ElementCfg:
    """Common fields: a unique name and the MuJoCo body the element is fixed to."""

    kind: ClassVar[str] = "element"
    name: str
    """Unique name of the element within its kind."""
    body_name: str
    """MuJoCo body the element is attached to."""

    def body_id(self, model: mujoco.MjModel) -> int:
        import mujoco  # here, so that the element configs load without MuJoCo

        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, self.body_name)
        if body < 0:
            raise ValueError(
                f"{self.kind} '{self.name}': body_name '{self.body_name}' "
                "is not a body of the model"
            )
        if body == 0:
            raise ValueError(f"{self.kind} '{self.name}': body_name must not be the world body")
        return body

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError


@dataclass(kw_only=True)
class SurfaceCfg(_ElementCfg):
    """A one-sided flat plate receiving drag and solar radiation pressure."""

    kind: ClassVar[str] = "surface"
    center_of_pressure_body: Vec3 = (0.0, 0.0, 0.0)
    """Centre of pressure c_B: offset from the body COM in body axes, m."""
    normal_body: Vec3 = (0.0, 0.0, 1.0)
    """Outward normal n_B in body axes (normalised at compile time)."""
    area: float = 1.0
    """Plate area A, m^2."""
    drag_coeff: float = 2.2
    """Drag coefficient C_D."""
    srp_coeff: float = 1.8
    """Radiation-pressure coefficient C_R."""
    use_drag: bool = True
    """Whether this surface receives drag (the global switch must be on too)."""
    use_srp: bool = True
    """Whether this surface receives SRP (the global switch must be on too)."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        k, n = self.kind, self.name
        return {
            "body": self.body_id(model),
            "normal": _vector(k, n, "normal_body", self.normal_body, unit=True),
            "cop": _vector(
                k, n, "center_of_pressure_body", self.center_of_pressure_body, unit=False
            ),
            "area": _positive(k, n, "area", self.area, "m^2"),
            "cd": _nonnegative(k, n, "drag_coeff", self.drag_coeff),
            "cr": _nonnegative(k, n, "srp_coeff", self.srp_coeff),
            "drag": int(bool(self.use_drag)),
            "srp": int(bool(self.use_srp)),
        }


@dataclass(kw_only=True)
class MagneticDipoleCfg(_ElementCfg):
    """A constant residual magnetic dipole fixed in a body."""

    kind: ClassVar[str] = "magnetic dipole"
    dipole_body: Vec3 = (0.0, 0.0, 0.0)
    """Dipole m_B in body axes, A m^2."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        return {
            "body": self.body_id(model),
            "moment": _vector(self.kind, self.name, "dipole_body", self.dipole_body, unit=False),
        }


@dataclass(kw_only=True)
class ThrusterCfg(_ElementCfg):
    """A thruster: force along a fixed body direction, commanded in [0, max_force] N."""

    kind: ClassVar[str] = "thruster"
    position_body: Vec3 = (0.0, 0.0, 0.0)
    """Point of application relative to the body ORIGIN (not the COM), body axes, m."""
    direction_body: Vec3 = (1.0, 0.0, 0.0)
    """Direction of the force on the body (opposite to the exhaust), body axes."""
    max_force: float = 1.0
    """Force limit, N; commands are clamped to [0, max_force]."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        k, n = self.kind, self.name
        return {
            "body": self.body_id(model),
            "pos": _vector(k, n, "position_body", self.position_body, unit=False),
            "dir": _vector(k, n, "direction_body", self.direction_body, unit=True),
            "max": _positive(k, n, "max_force", self.max_force, "N"),
        }


@dataclass(kw_only=True)
class ReactionWheelCfg(_ElementCfg):
    """A reaction wheel spinning about a body axis, with gyroscopic coupling.

    Its state is the absolute axial momentum h = I_w (Omega + a.omega) (N m s);
    the MJCF body inertia must exclude the wheel's axial inertia I_w.
    """

    kind: ClassVar[str] = "reaction wheel"
    axis_body: Vec3 = (0.0, 0.0, 1.0)
    """Spin axis a in body axes (normalised)."""
    inertia: float = 1e-4
    """Axial rotor inertia I_w, kg m^2."""
    max_speed: float = 600.0
    """Speed limit of the wheel relative to the body, rad/s."""
    max_torque: float = 0.01
    """Motor torque limit, N m."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        k, n = self.kind, self.name
        return {
            "body": self.body_id(model),
            "axis": _vector(k, n, "axis_body", self.axis_body, unit=True),
            "inertia": _positive(k, n, "inertia", self.inertia, "kg m^2"),
            "max_speed": _positive(k, n, "max_speed", self.max_speed, "rad/s"),
            "max_torque": _positive(k, n, "max_torque", self.max_torque, "N m"),
        }


@dataclass(kw_only=True)
class MagnetorquerCfg(_ElementCfg):
    """A magnetorquer: a commanded dipole along a body axis, clamped to +-max_dipole."""

    kind: ClassVar[str] = "magnetorquer"
    axis_body: Vec3 = (1.0, 0.0, 0.0)
    """Dipole axis in body axes (normalised)."""
    max_dipole: float = 0.2
    """Dipole limit, A m^2."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        k, n = self.kind, self.name
        return {
            "body": self.body_id(model),
            "axis": _vector(k, n, "axis_body", self.axis_body, unit=True),
            "max": _positive(k, n, "max_dipole", self.max_dipole, "A m^2"),
        }


@dataclass(kw_only=True)
class ControlMomentGyroCfg(_ElementCfg):
    """A single-gimbal CMG: a rotor of constant momentum turned about a gimbal axis.

    Its rotor axis is s(delta) = s0 cos(delta) + (g x s0) sin(delta) in body axes.
    """

    kind: ClassVar[str] = "control moment gyro"
    gimbal_axis_body: Vec3 = (0.0, 0.0, 1.0)
    """Gimbal axis g in body axes (normalised)."""
    spin_axis_body: Vec3 = (1.0, 0.0, 0.0)
    """Rotor axis s0 at zero gimbal angle, body axes; must be orthogonal to g."""
    rotor_momentum: float = 0.05
    """Rotor angular momentum h, N m s."""
    max_rate: float = 1.0
    """Gimbal-rate limit, rad/s."""
    min_angle: float = -np.inf
    """Lower gimbal-angle limit, rad (-inf: none)."""
    max_angle: float = np.inf
    """Upper gimbal-angle limit, rad (+inf: none)."""
    initial_angle: float = 0.0
    """Gimbal angle at reset, rad."""

    def resolve(self, model: mujoco.MjModel) -> dict[str, Any]:
        k, n = self.kind, self.name
        g = _vector(k, n, "gimbal_axis_body", self.gimbal_axis_body, unit=True)
        s0 = _vector(k, n, "spin_axis_body", self.spin_axis_body, unit=True)
        if abs(float(g @ s0)) > 1e-9:
            raise ValueError(
                f"{k} '{n}': spin_axis_body must be orthogonal to "
                f"gimbal_axis_body (cosine {float(g @ s0):.3g})"
            )
        if not self.min_angle <= self.initial_angle <= self.max_angle:
            raise ValueError(
                f"{k} '{n}': initial_angle {self.initial_angle} rad is outside "
                f"[min_angle, max_angle] = [{self.min_angle}, {self.max_angle}]"
            )
        return {
            "body": self.body_id(model),
            "gimbal": g,
            "spin0": s0,
            "h": _positive(k, n, "rotor_momentum", self.rotor_momentum, "N m s"),
            "max_rate": _positive(k, n, "max_rate", self.max_rate, "rad/s"),
            "min_angle": float(self.min_angle),
            "max_angle": float(self.max_angle),
            "initial_angle": float(self.initial_angle),
        }


@dataclass(kw_only=True)
class ElementSet:
    """All orbit-layer elements of a spec, by kind."""

    surfaces: list[SurfaceCfg] = field(default_factory=list)
    dipoles: list[MagneticDipoleCfg] = field(default_factory=list)
    thrusters: list[ThrusterCfg] = field(default_factory=list)
    wheels: list[ReactionWheelCfg] = field(default_factory=list)
    magnetorquers: list[MagnetorquerCfg] = field(default_factory=list)
    cmgs: list[ControlMomentGyroCfg] = field(default_factory=list)

    def resolve(self, model: mujoco.MjModel) -> dict[str, list[dict[str, Any]]]:
        """Validate every element against the model; return their rows by kind."""
        rows: dict[str, list[dict[str, Any]]] = {}
        for kind, items in vars(self).items():
            names = [item.name for item in items]
            for name in names:
                if names.count(name) > 1:
                    raise ValueError(f"{items[0].kind} '{name}' is defined more than once")
            rows[kind] = [item.resolve(model) for item in items]
        return rows
