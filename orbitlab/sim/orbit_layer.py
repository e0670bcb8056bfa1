"""The orbit layer's configuration: switches, central body, chief schedule, elements."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from orbitlab.orbit.constants import CentralBodyCfg
from orbitlab.sim.elements import (
    ControlMomentGyroCfg,
    ElementSet,
    MagneticDipoleCfg,
    MagnetorquerCfg,
    ReactionWheelCfg,
    SurfaceCfg,
    ThrusterCfg,
)

LOAD_SWITCHES = ("use_j2", "use_gravity_gradient", "use_drag", "use_srp", "use_magnetic")
"""The orbit layer's load switches (an MJCF may set them as `orbit.<name>` numerics)."""


@dataclass(kw_only=True)
class OrbitLayerCfg:
    """Switches, central body, chief schedule and elements of the orbit layer."""

    use_j2: bool = True
    """J2 in the chief acceleration and in differential gravity."""
    use_gravity_gradient: bool = True
    """Within-body gravity-gradient torque (differential gravity forces stay on)."""
    use_drag: bool = True
    """Atmospheric drag on surfaces with use_drag."""
    use_srp: bool = True
    """Solar radiation pressure on surfaces with use_srp."""
    use_magnetic: bool = True
    """Residual-dipole and magnetorquer torques."""
    use_penumbra: bool = True
    """Conical shadow (umbra and penumbra of the finite solar disk, illumination in [0, 1],
    continuous across the shadow's edge) instead of the hard cylinder (0 or 1, which
    switches SRP off and on within a step)."""
    central_body: CentralBodyCfg = field(default_factory=CentralBodyCfg)
    """The central body (Earth by default)."""
    orbit_dt: float | None = None
    """Chief RK4 step, s; None uses the MuJoCo timestep. Smaller values substep
    (timestep must be a multiple); larger ones predict segments (a multiple of
    the timestep)."""
    coupling: str = "stage"
    """How the orbit-layer loads enter the integration. 'stage' (the default): evaluated at
    every stage of the integrator. With RK4 this is orbitlab's own RK4 of the coupled state
    (`orbitlab.sim.stages`): fourth order in dt on either backend; it needs orbit_dt on the
    timestep (or None) and no actuator activations. With a one-stage integrator (Euler,
    implicit, implicitfast) the one stage is the step's start: the same step as 'held'.
    'held': evaluated once per step and held over MuJoCo's integration: first order in dt
    wherever a load changes within a step (docs/physics.md gives the errors), any
    integrator and chief schedule, fewer evaluations (the faster of the two)."""
    elements: ElementSet = field(default_factory=ElementSet)
    """Surfaces, dipoles and actuators."""

    def add_surface(self, surface: SurfaceCfg) -> SurfaceCfg:
        self.elements.surfaces.append(surface)
        return surface

    def add_magnetic_body(self, dipole: MagneticDipoleCfg) -> MagneticDipoleCfg:
        self.elements.dipoles.append(dipole)
        return dipole

    def add_thruster(self, thruster: ThrusterCfg) -> ThrusterCfg:
        self.elements.thrusters.append(thruster)
        return thruster

    def add_reaction_wheel(self, wheel: ReactionWheelCfg) -> ReactionWheelCfg:
        self.elements.wheels.append(wheel)
        return wheel

    def add_magnetorquer(self, mtq: MagnetorquerCfg) -> MagnetorquerCfg:
        self.elements.magnetorquers.append(mtq)
        return mtq

    def add_cmg(self, cmg: ControlMomentGyroCfg) -> ControlMomentGyroCfg:
        self.elements.cmgs.append(cmg)
        return cmg

    def schedule(self, timestep: float) -> tuple[int, int]:
        """(RK4 substeps per MuJoCo step, MuJoCo steps per segment) for orbit_dt."""
        orbit_dt = timestep if self.orbit_dt is None else float(self.orbit_dt)
        if not (math.isfinite(orbit_dt) and orbit_dt > 0.0):
            raise ValueError(f"orbit_dt must be > 0 s, got {self.orbit_dt!r}")
        ratio = timestep / orbit_dt if orbit_dt <= timestep else orbit_dt / timestep
        count = round(ratio)
        if abs(ratio - count) > 1e-9 * ratio:
            raise ValueError(
                f"orbit_dt {orbit_dt} s and timestep {timestep} s: the larger "
                "must be an integer multiple of the smaller"
            )
        return (count, 1) if orbit_dt <= timestep else (1, count)
