"""Physical constants and the central-body configuration.

Orbit-side units are km, km/s and s (float64); the few SI constants say so in
their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MU_EARTH_KM3_S2 = 398600.4418
"""Earth's gravitational parameter mu, km^3/s^2 (the default `CentralBodyCfg.gm`); where a
central body is at hand, use its `gm` instead."""

MU_EARTH_M3_S2 = 398600.4418e9
"""The same in SI units, m^3/s^2."""

SOLAR_PRESSURE_N_PER_M2 = 4.56e-6
"""Solar radiation pressure P_sun at 1 AU, N/m^2 (constant, no Sun-distance scaling)."""

MAGNETIC_PHASE_AT_J2000_RAD = 4.894961212823756
"""Rotation angle of the body-fixed dipole axis about the spin axis at t = 0, rad."""

SECONDS_PER_JULIAN_CENTURY = 36525.0 * 86400.0
"""Seconds in a Julian century (used by the analytic Sun direction)."""

AU_KM = 149_597_870.7
"""Astronomical unit, km (used only by the optional conical penumbra model)."""

SUN_RADIUS_KM = 695_700.0
"""Nominal solar radius, km (used only by the optional conical penumbra model)."""


@dataclass(kw_only=True)
class CentralBodyCfg:
    """The central body: gravity, rotation, magnetic dipole and atmosphere.

    Defaults are Earth's. Every field may be changed before compiling a spec.
    """

    gm: float = MU_EARTH_KM3_S2
    """Gravitational parameter mu, km^3/s^2."""
    radius: float = 6378.137
    """Reference (equatorial) radius a, km; used by J2, altitude and eclipse."""
    j2: float = 1.08262668e-3
    """Second zonal harmonic J2 (dimensionless); its symmetry axis is ECI z."""
    omega: tuple[float, float, float] = (0.0, 0.0, 7.292115e-5)
    """Spin vector Omega in ECI, rad/s; rotates the atmosphere and the dipole axis."""
    magnetic_b0: float = 3.12e-5
    """Equatorial surface field of the centred dipole B0, T."""
    magnetic_axis: tuple[float, float, float] = (0.0, 0.0, -1.0)
    """Dipole axis in body-fixed axes (normalised at compile time)."""
    atmosphere_h0: float = 400.0
    """Reference altitude h0 of the exponential atmosphere, km above `radius`."""
    atmosphere_rho0: float = 2.62e-13
    """Density rho0 at h0, kg/m^3 (non-positive gives zero density)."""
    atmosphere_scale_height: float = 58.2
    """Scale height H, km (non-positive gives zero density)."""

    def validate(self) -> None:
        """Raise ValueError naming the first field that cannot describe a body."""
        for name in (
            "gm",
            "radius",
            "j2",
            "magnetic_b0",
            "atmosphere_h0",
            "atmosphere_rho0",
            "atmosphere_scale_height",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.floating, np.integer)
            ):
                raise ValueError(  # noqa: TRY004 (bad config values are ValueErrors here)
                    f"central_body.{name} must be a number, got {value!r}"
                )
        if not (np.isfinite(self.gm) and self.gm > 0.0):
            raise ValueError(f"central_body.gm must be a finite number > 0 km^3/s^2, got {self.gm}")
        if not (np.isfinite(self.radius) and self.radius > 0.0):
            raise ValueError(
                f"central_body.radius must be a finite number > 0 km, got {self.radius}"
            )
        for name in ("omega", "magnetic_axis"):
            try:
                vec = np.asarray(getattr(self, name), dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"central_body.{name} must be 3 finite numbers, got {getattr(self, name)!r}"
                ) from None
            if vec.shape != (3,) or not np.all(np.isfinite(vec)) or np.max(np.abs(vec)) > 1e150:
                raise ValueError(
                    f"central_body.{name} must be 3 finite numbers (each at most "
                    f"1e150 in magnitude), got {vec}"
                )
        if np.linalg.norm(self.magnetic_axis) == 0.0 and self.magnetic_b0 != 0.0:
            raise ValueError("central_body.magnetic_axis must be nonzero when magnetic_b0 != 0")
        for name in (
            "j2",
            "magnetic_b0",
            "atmosphere_h0",
            "atmosphere_rho0",
            "atmosphere_scale_height",
        ):
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"central_body.{name} must be finite, got {getattr(self, name)}")


@dataclass(kw_only=True)
class OrbitInit:
    """Initial chief state of one world.

    Attributes:
        R_eci: chief position in ECI, km.
        V_eci: chief velocity in ECI, km/s.
        t: environment time, s since J2000 (TT). Ignored when `epoch` is given.
        epoch: optional calendar epoch (ISO string, datetime or astropy Time);
            needs the `frames` extra. When given, `t` is derived from it.
    """

    R_eci: np.ndarray | list[float] | tuple[float, ...] = field(
        default_factory=lambda: np.array([6778.137, 0.0, 0.0])
    )
    V_eci: np.ndarray | list[float] | tuple[float, ...] = field(
        default_factory=lambda: np.array([0.0, 7.668558, 0.0])
    )
    t: float = 0.0
    epoch: object | None = None

    def resolved_time(self) -> float:
        """Environment time in s since J2000, from `epoch` when one is given."""
        if self.epoch is None:
            return float(self.t)
        from orbitlab.orbit.epoch import seconds_since_j2000

        return seconds_since_j2000(self.epoch)
