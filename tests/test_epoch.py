"""Tests for orbitlab.orbit.epoch (needs the optional astropy dependency)."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from orbitlab.orbit import epoch as ep  # imports astropy lazily, so this never fails
from orbitlab.orbit.frames import coe_to_rv

coords = pytest.importorskip("astropy.coordinates")
iers = pytest.importorskip("astropy.utils.iers")
Time = pytest.importorskip("astropy.time").Time

EPOCH = "2026-03-20T12:00:00"


@pytest.fixture(autouse=True)
def _offline_iers() -> Iterator[None]:
    # use astropy's bundled Earth-orientation tables; never reach for the network in tests
    with iers.conf.set_temp("auto_download", False):
        yield


def _era_deg(t: Any) -> float:
    """Earth rotation angle (IERS 2003) from the UTC Julian date (|UT1-UTC| < 0.9 s)."""
    d = (t.utc.jd1 - 2451545.0) + t.utc.jd2
    return float(np.mod(360.0 * (0.7790572732640 + 0.00273781191135448 * d + d), 360.0))


def test_seconds_since_j2000_is_zero_at_j2000_tt() -> None:
    # jd1/jd2 split keeps ~1e-11 s precision; anything above 1e-6 s would be a scale error
    assert ep.seconds_since_j2000(Time("2000-01-01T12:00:00", scale="tt")) == pytest.approx(
        0.0, abs=1e-6
    )


def test_utc_string_at_j2000_is_64_184_s_after_j2000_tt() -> None:
    # TT - UTC = 32.184 s + 32 leap seconds in 2000, so 12:00 UTC is 12:01:04.184 TT;
    # 1e-6 s still catches any scale mix-up (or a sign error)
    assert ep.seconds_since_j2000("2000-01-01T12:00:00") == pytest.approx(64.184, abs=1e-6)


def test_datetime_inputs_are_read_as_utc() -> None:
    ref = ep.seconds_since_j2000(EPOCH)
    naive = dt.datetime(2026, 3, 20, 12, 0, 0)
    aware = dt.datetime(2026, 3, 20, 14, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    # same instant through different parsers: sub-microsecond agreement expected
    assert ep.seconds_since_j2000(naive) == pytest.approx(ref, abs=1e-6)
    assert ep.seconds_since_j2000(aware) == pytest.approx(ref, abs=1e-6)


def test_epoch_from_seconds_round_trips_and_is_tt() -> None:
    s = ep.seconds_since_j2000(EPOCH)
    t = ep.epoch_from_seconds(s)
    assert t.scale == "tt"
    # float64 seconds ~8e8 s carry ~1e-7 s resolution
    assert ep.seconds_since_j2000(t) == pytest.approx(s, abs=1e-6)
    assert abs((t - Time(EPOCH, scale="utc")).sec) < 1e-6
    assert ep.epoch_from_seconds(np.array([0.0, 60.0])).shape == (2,)


def test_teme_to_eci_preserves_radius_and_matches_astropy_round_trip() -> None:
    r, v = coe_to_rv(6778.0, 0.001, 0.9, 1.2, 0.5, 2.0)
    R, V = ep.teme_to_eci(r, v, EPOCH)
    assert R.dtype == V.dtype == np.float64 and R.shape == V.shape == (3,)
    # a pure rotation: |r| kept to rounding (~1e-16) far inside 1e-9
    assert np.linalg.norm(R) == pytest.approx(np.linalg.norm(r), rel=1e-9)
    # TEME drifts only by precession (~1e-11 rad/s): speed kept to ~1e-8 relative
    assert np.linalg.norm(V) == pytest.approx(np.linalg.norm(v), rel=1e-7)
    t = Time(EPOCH, scale="utc")
    diff = coords.CartesianDifferential(V, unit="km/s")
    rep = coords.CartesianRepresentation(R, unit="km", differentials=diff)
    back = coords.GCRS(rep, obstime=t).transform_to(coords.TEME(obstime=t))
    # inverse transform by astropy itself; mm-level (1e-6 km) agreement is rounding-dominated
    np.testing.assert_allclose(back.cartesian.xyz.to_value("km"), r, atol=1e-6)
    np.testing.assert_allclose(back.velocity.d_xyz.to_value("km/s"), v, atol=1e-9)


def test_itrf_equator_point_rotates_by_earth_rotation_angle() -> None:
    for when in (EPOCH, "2010-07-01T03:30:00"):
        R, V = ep.itrf_to_eci([6378.137, 0.0, 0.0], [0.0, 0.0, 0.0], when)
        # |r| preserved by rotations to rounding
        assert np.linalg.norm(R) == pytest.approx(6378.137, rel=1e-9)
        ra = np.degrees(np.arctan2(R[1], R[0]))
        diff = (ra - _era_deg(Time(when, scale="utc")) + 180.0) % 360.0 - 180.0
        # precession-nutation, polar motion and UT1-UTC move this by < 0.01 deg in 2010-2026
        assert abs(diff) < 0.1
        # a point at rest on the ground moves with omega_E |r| = 0.46510 km/s in ECI;
        # LOD variations are ~1e-8 relative, so 1e-5 is a safe but sharp bound
        assert np.linalg.norm(V) == pytest.approx(7.2921150e-5 * 6378.137, rel=1e-5)
        # ...perpendicular to r and eastward (counter-clockwise about +z)
        assert abs(R @ V) < 1e-6 * np.linalg.norm(R) * np.linalg.norm(V)
        assert np.cross(R, V)[2] > 0


def test_conversions_accept_batches_and_seconds_epochs() -> None:
    r = np.array([[7000.0, 0.0, 0.0], [0.0, 7100.0, 10.0], [100.0, -6900.0, 300.0]])
    v = np.array([[0.0, 7.5, 0.1], [-7.4, 0.0, 0.2], [7.0, 1.0, -2.0]])
    s = ep.seconds_since_j2000(EPOCH)
    R, V = ep.itrf_to_eci(r, v, s)
    assert R.shape == V.shape == (3, 3)
    for k in range(3):
        R1, V1 = ep.itrf_to_eci(r[k], v[k], EPOCH)
        # same transform, epoch rebuilt from float seconds (~1e-7 s): 1e-7 s * 7.5 km/s < 1e-6
        np.testing.assert_allclose(R[k], R1, atol=1e-6)
        np.testing.assert_allclose(V[k], V1, atol=1e-9)


def test_missing_astropy_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("astropy.coordinates", "astropy.time", "astropy.units"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"orbitlab-sim\[frames\]"):
        ep.seconds_since_j2000(EPOCH)
