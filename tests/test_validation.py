"""Every bad spec, element or orbit is rejected with a message naming what is wrong."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import free_body_xml

from orbitlab import (
    ControlMomentGyroCfg,
    MagneticDipoleCfg,
    MagnetorquerCfg,
    OrbitInit,
    ReactionWheelCfg,
    SimSpec,
    SurfaceCfg,
    ThrusterCfg,
)

BODY = "spacecraft"


@pytest.mark.parametrize(
    "element, adder, message",
    [
        (
            SurfaceCfg(name="p", body_name="nope"),
            "add_surface",
            "surface 'p': body_name 'nope' is not a body of the model",
        ),
        (
            SurfaceCfg(name="p", body_name="world"),
            "add_surface",
            "surface 'p': body_name must not be the world body",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, area=-2.0),
            "add_surface",
            "surface 'p': area must be > 0 m^2, got -2.0",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, area=0.0),
            "add_surface",
            "surface 'p': area must be > 0 m^2, got 0.0",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, normal_body=[0, 0, 0]),
            "add_surface",
            "surface 'p': normal_body must be nonzero",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, drag_coeff=-0.1),
            "add_surface",
            "surface 'p': drag_coeff must be >= 0, got -0.1",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, srp_coeff=-1.0),
            "add_surface",
            "surface 'p': srp_coeff must be >= 0, got -1.0",
        ),
        (
            SurfaceCfg(name="p", body_name=BODY, center_of_pressure_body=[0, 1]),
            "add_surface",
            "surface 'p': center_of_pressure_body must be 3 finite numbers",
        ),
        (
            MagneticDipoleCfg(name="d", body_name=BODY, dipole_body=[np.nan, 0, 0]),
            "add_magnetic_body",
            "magnetic dipole 'd': dipole_body must be 3 finite numbers",
        ),
        (
            ThrusterCfg(name="t", body_name=BODY, max_force=0.0),
            "add_thruster",
            "thruster 't': max_force must be > 0 N, got 0.0",
        ),
        (
            ThrusterCfg(name="t", body_name=BODY, direction_body=[0, 0, 0]),
            "add_thruster",
            "thruster 't': direction_body must be nonzero",
        ),
        (
            ReactionWheelCfg(name="w", body_name=BODY, axis_body=[0, 0, 0]),
            "add_reaction_wheel",
            "reaction wheel 'w': axis_body must be nonzero",
        ),
        (
            ReactionWheelCfg(name="w", body_name=BODY, inertia=-1.0),
            "add_reaction_wheel",
            "reaction wheel 'w': inertia must be > 0 kg m^2, got -1.0",
        ),
        (
            ReactionWheelCfg(name="w", body_name=BODY, max_speed=0.0),
            "add_reaction_wheel",
            "reaction wheel 'w': max_speed must be > 0 rad/s, got 0.0",
        ),
        (
            ReactionWheelCfg(name="w", body_name=BODY, max_torque=-0.1),
            "add_reaction_wheel",
            "reaction wheel 'w': max_torque must be > 0 N m, got -0.1",
        ),
        (
            MagnetorquerCfg(name="m", body_name=BODY, max_dipole=0.0),
            "add_magnetorquer",
            "magnetorquer 'm': max_dipole must be > 0 A m^2, got 0.0",
        ),
        (
            ControlMomentGyroCfg(
                name="c", body_name=BODY, gimbal_axis_body=[0, 0, 1], spin_axis_body=[0, 1, 1]
            ),
            "add_cmg",
            "control moment gyro 'c': spin_axis_body must be orthogonal to gimbal_axis_body",
        ),
        (
            ControlMomentGyroCfg(name="c", body_name=BODY, rotor_momentum=0.0),
            "add_cmg",
            "control moment gyro 'c': rotor_momentum must be > 0 N m s, got 0.0",
        ),
        (
            ControlMomentGyroCfg(name="c", body_name=BODY, max_rate=-1.0),
            "add_cmg",
            "control moment gyro 'c': max_rate must be > 0 rad/s, got -1.0",
        ),
        (
            ControlMomentGyroCfg(name="c", body_name=BODY, min_angle=0.5),
            "add_cmg",
            "control moment gyro 'c': initial_angle 0.0 rad is outside",
        ),
    ],
)
def test_invalid_element_is_rejected_with_its_name_and_field(element, adder, message):
    spec = SimSpec.from_xml_string(free_body_xml())
    getattr(spec.orbit, adder)(element)
    with pytest.raises(ValueError) as excinfo:
        spec.compile()
    assert message in str(excinfo.value)


def test_duplicate_element_names_are_rejected():
    spec = SimSpec.from_xml_string(free_body_xml())
    spec.orbit.add_surface(SurfaceCfg(name="p", body_name=BODY))
    spec.orbit.add_surface(SurfaceCfg(name="p", body_name=BODY))
    with pytest.raises(ValueError, match="surface 'p' is defined more than once"):
        spec.compile()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("gm", 0.0, "central_body.gm must be a finite number > 0 km^3/s^2"),
        ("gm", float("inf"), "central_body.gm must be a finite number > 0 km^3/s^2, got inf"),
        ("gm", "398600", "central_body.gm must be a number, got '398600'"),
        ("radius", -1.0, "central_body.radius must be a finite number > 0 km"),
        ("omega", (0.0, 0.0), "central_body.omega must be 3 finite numbers"),
        ("magnetic_axis", (0.0, 0.0, 0.0), "central_body.magnetic_axis must be nonzero"),
        ("j2", float("nan"), "central_body.j2 must be finite"),
    ],
)
def test_invalid_central_body_is_rejected(field, value, message):
    spec = SimSpec.from_xml_string(free_body_xml())
    setattr(spec.orbit.central_body, field, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        spec.compile()


def test_orbit_dt_must_be_a_multiple_of_the_timestep_or_divide_it():
    spec = SimSpec.from_xml_string(free_body_xml(timestep=0.01))
    spec.orbit.orbit_dt = 0.015
    with pytest.raises(ValueError, match="integer multiple"):
        spec.compile()
    spec.orbit.orbit_dt = -1.0
    with pytest.raises(ValueError, match="orbit_dt must be > 0 s"):
        spec.compile()


def test_timestep_must_be_positive():
    with pytest.raises(ValueError, match="timestep must be > 0 s"):
        SimSpec.from_xml_string(free_body_xml()).compile(timestep=0.0)


def test_orbit_inside_the_central_body_or_malformed_is_rejected():
    model = SimSpec.from_xml_string(free_body_xml()).compile()
    with pytest.raises(ValueError, match="inside the central body"):
        model.make_data(orbit=OrbitInit(R_eci=[6000.0, 0, 0], V_eci=[0, 7.5, 0]))
    with pytest.raises(ValueError, match="R_eci and V_eci must be 3 finite numbers"):
        model.make_data(orbit=OrbitInit(R_eci=[7000.0, 0], V_eci=[0, 7.5, 0]))
    with pytest.raises(ValueError, match="R_eci and V_eci must be 3 finite numbers"):
        model.make_data(orbit=OrbitInit(R_eci="abc", V_eci=[0, 7.5, 0]))  # a bare ValueError
    with pytest.raises(ValueError, match="got 1 orbits for 2 worlds"):
        model.make_data(nworld=2, orbit=[OrbitInit()])
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        model.make_data(backend="gpu")


def test_xml_custom_numerics_set_switches_and_unknown_ones_are_named():
    xml = free_body_xml().replace(
        "<mujoco>",
        '<mujoco><custom><numeric name="orbit.use_drag" data="0"/>'
        '<numeric name="orbit.orbit_dt" data="0.05"/></custom>',
    )
    spec = SimSpec.from_xml_string(xml)
    assert spec.orbit.use_drag is False and spec.orbit.orbit_dt == 0.05
    assert spec.orbit.use_srp is True
    bad = free_body_xml().replace(
        "<mujoco>", '<mujoco><custom><numeric name="orbit.use_dragg" data="0"/></custom>'
    )
    with pytest.raises(ValueError, match="unknown orbit setting 'use_dragg'"):
        SimSpec.from_xml_string(bad)


def test_missing_mjcf_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such.xml"):
        SimSpec.from_xml_path(tmp_path / "no_such.xml")


def test_mujoco_gravity_is_zeroed_at_compile():
    xml = free_body_xml().replace("<option ", '<option gravity="0 0 -9.81" ')
    model = SimSpec.from_xml_string(xml).compile()
    assert np.all(model.mj_model.opt.gravity == 0.0)


def test_vectorized_orbit_state_names_the_bad_world():
    model = SimSpec.from_xml_string(free_body_xml()).compile()
    data = model.make_data(nworld=3)
    R = np.array([[7000.0, 0, 0]] * 2)
    V = np.array([[0, 7.5, 0], [np.nan, 7.5, 0]])
    with pytest.raises(ValueError, match="world 2: R_eci and V_eci must be 3 finite"):
        data.set_orbit_state(R, V, np.zeros(2), worlds=[0, 2])
    with pytest.raises(ValueError, match=r"R_km must have shape \(2, 3\)"):
        data.set_orbit_state(R[:1], V, np.zeros(2), worlds=[0, 2])
    with pytest.raises(ValueError, match="world 1: .* inside the central body"):
        data.set_orbit_state(np.array([[6000.0, 0, 0]]), V[:1], np.zeros(1), worlds=[1])
