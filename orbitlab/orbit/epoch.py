"""Epoch handling and Earth-frame conversions (TEME, ITRF -> GCRS) through astropy.

astropy is an optional dependency (the ``frames`` extra); it is imported inside the functions
so that importing this module never needs it.

Time scale: simulation time is counted in seconds of **TT** (Terrestrial Time) since J2000.0,
i.e. since ``2000-01-01T12:00:00 TT`` (JD 2451545.0 TT). TT is uniform (no leap seconds), so
it can be integrated directly; ``TT - UTC = 32.184 s + (TAI - UTC)``, 64.184 s in 2000.

"ECI" here is astropy's geocentric GCRS (with ``obsgeoloc = obsgeovel = 0``), which agrees with
J2000/EME2000 to about 23 milliarcseconds (frame bias). Earth orientation (UT1 - UTC, polar
motion) comes from astropy's IERS tables; results outside their range are degraded (astropy
warns) and astropy may try to download newer tables unless
``astropy.utils.iers.conf.auto_download`` is ``False``.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from astropy.time import Time

    EpochLike: TypeAlias = str | _dt.datetime | float | Time
    """ISO string (UTC), datetime (naive = UTC), astropy Time, or TT seconds since J2000."""

J2000_JD: float = 2451545.0
"""Julian date of J2000.0 (in TT)."""

SECONDS_PER_DAY: float = 86400.0

_MISSING = (
    "orbitlab.orbit.epoch needs astropy; install the 'frames' extra: "
    "pip install 'orbitlab-sim[frames]'"
)


def _astropy() -> tuple[Any, Any, Any]:
    """Import and return ``(astropy.time, astropy.coordinates, astropy.units)``."""
    try:
        import astropy.coordinates as coords
        import astropy.time as atime
        import astropy.units as u
    except ImportError as exc:  # pragma: no cover - exercised only without astropy
        raise ImportError(_MISSING) from exc
    return atime, coords, u


def _as_time(epoch: EpochLike) -> Time:
    """Convert an epoch to an astropy ``Time``.

    Args:
        epoch: ISO string (UTC), ``datetime`` (naive = UTC, aware = converted to UTC),
            astropy ``Time`` (kept in its own scale) or a number of TT seconds since J2000.0.

    Returns:
        astropy ``Time``.
    """
    atime, _, _ = _astropy()
    if isinstance(epoch, atime.Time):
        return epoch
    if isinstance(epoch, _dt.datetime):
        if epoch.tzinfo is not None:
            epoch = epoch.astimezone(_dt.UTC).replace(tzinfo=None)
        return atime.Time(epoch, scale="utc")
    if isinstance(epoch, str):
        return atime.Time(epoch, scale="utc")
    if isinstance(epoch, (int, float, np.floating, np.integer)):
        return epoch_from_seconds(float(epoch))
    raise TypeError(f"unsupported epoch type: {type(epoch).__name__}")


def seconds_since_j2000(epoch: EpochLike) -> float:
    """TT seconds elapsed since J2000.0 (``2000-01-01T12:00:00 TT``).

    Args:
        epoch: ISO string such as ``"2026-03-20T12:00:00"`` (interpreted as UTC), a
            ``datetime`` (naive means UTC), an astropy ``Time`` in any scale, or a number
            (already TT seconds since J2000.0, returned unchanged up to rounding).

    Returns:
        Seconds (s, TT) since J2000.0; negative before it.
    """
    tt = _as_time(epoch).tt
    return float(((tt.jd1 - J2000_JD) + tt.jd2) * SECONDS_PER_DAY)


def epoch_from_seconds(t: ArrayLike) -> Time:
    """astropy ``Time`` (scale TT) from TT seconds since J2000.0.

    Args:
        t: Seconds (s, TT) since ``2000-01-01T12:00:00 TT``; scalar or array.

    Returns:
        astropy ``Time`` in the TT scale, same shape as ``t``.
    """
    atime, _, _ = _astropy()
    days = np.asarray(t, dtype=np.float64) / SECONDS_PER_DAY
    return atime.Time(J2000_JD, days, format="jd", scale="tt")


def _to_gcrs(
    frame_name: str,
    r_km: ArrayLike,
    v_kms: ArrayLike,
    epoch: EpochLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    _, coords, u = _astropy()
    t = _as_time(epoch)
    r = np.asarray(r_km, dtype=np.float64)
    v = np.asarray(v_kms, dtype=np.float64)
    r, v = np.broadcast_arrays(r, v)
    diff = coords.CartesianDifferential(np.moveaxis(v, -1, 0) * (u.km / u.s))
    rep = coords.CartesianRepresentation(np.moveaxis(r, -1, 0) * u.km, differentials=diff)
    src = getattr(coords, frame_name)(rep, obstime=t)
    out = src.transform_to(coords.GCRS(obstime=t))
    R = np.moveaxis(out.cartesian.xyz.to_value(u.km), 0, -1)
    V = np.moveaxis(out.velocity.d_xyz.to_value(u.km / u.s), 0, -1)
    return np.ascontiguousarray(R, dtype=np.float64), np.ascontiguousarray(V, dtype=np.float64)


def teme_to_eci(
    r_km: ArrayLike, v_kms: ArrayLike, epoch: EpochLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Convert a TEME state (e.g. from SGP4) to ECI (GCRS).

    Args:
        r_km: Position in TEME (km), ``(..., 3)``.
        v_kms: Velocity in TEME (km/s), ``(..., 3)``.
        epoch: Epoch of the state: ISO string (UTC), ``datetime`` (naive = UTC), astropy
            ``Time`` or TT seconds since J2000.0.

    Returns:
        ``(R, V)`` in GCRS, km and km/s, float64 arrays of shape ``(..., 3)``.
    """
    return _to_gcrs("TEME", r_km, v_kms, epoch)


def itrf_to_eci(
    r_km: ArrayLike, v_kms: ArrayLike, epoch: EpochLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Convert an Earth-fixed ITRF (astropy ITRS) state to ECI (GCRS).

    The velocity is transformed with the frame's rotation rate, so a point at rest on the
    ground gets the ``omega_E x r`` inertial velocity.

    Args:
        r_km: Position in ITRF (km), ``(..., 3)``.
        v_kms: Velocity relative to the rotating Earth, in ITRF axes (km/s), ``(..., 3)``.
        epoch: Epoch of the state: ISO string (UTC), ``datetime`` (naive = UTC), astropy
            ``Time`` or TT seconds since J2000.0.

    Returns:
        ``(R, V)`` in GCRS, km and km/s, float64 arrays of shape ``(..., 3)``.
    """
    return _to_gcrs("ITRS", r_km, v_kms, epoch)
