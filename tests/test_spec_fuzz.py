"""Fuzz: any value in an element or central-body field compiles, or fails with a one-line
ValueError that names the element and the field; nothing else escapes."""

from __future__ import annotations

import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from conftest import free_body_xml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitlab import (
    MagnetorquerCfg,
    ReactionWheelCfg,
    SimSpec,
    SurfaceCfg,
    ThrusterCfg,
)

ANY_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.lists(st.one_of(st.floats(allow_nan=True), st.text(max_size=2)), max_size=4),
    st.tuples(st.floats(), st.floats(), st.floats()),
)
ELEMENTS = {
    SurfaceCfg: ("normal_body", "center_of_pressure_body", "area", "drag_coeff", "srp_coeff"),
    ThrusterCfg: ("position_body", "direction_body", "max_force"),
    ReactionWheelCfg: ("axis_body", "inertia", "max_speed", "max_torque"),
    MagnetorquerCfg: ("axis_body", "max_dipole"),
}
CASES = st.sampled_from([(cls, name) for cls, names in ELEMENTS.items() for name in names])
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # e.g. an overflow


def compile_with(element) -> None:
    spec = SimSpec.from_xml_string(free_body_xml())
    kind = {
        SurfaceCfg: "surfaces",
        ThrusterCfg: "thrusters",
        ReactionWheelCfg: "wheels",
        MagnetorquerCfg: "magnetorquers",
    }[type(element)]
    getattr(spec.orbit.elements, kind).append(element)
    spec.compile()


@FUZZ
@given(case=CASES, value=ANY_VALUE)
def test_any_element_field_value_compiles_or_names_itself(case, value):
    cls, field_name = case
    element = cls(name="e", body_name="spacecraft", **{field_name: value})
    try:
        compile_with(element)
    except ValueError as error:
        message = str(error)
        assert "\n" not in message
        assert "'e'" in message and (
            field_name in message or field_name.replace("_coeff", "") in message
        ), message


@FUZZ
@given(
    field=st.sampled_from(
        [
            "gm",
            "radius",
            "j2",
            "magnetic_b0",
            "atmosphere_h0",
            "atmosphere_rho0",
            "atmosphere_scale_height",
            "omega",
            "magnetic_axis",
        ]
    ),
    value=ANY_VALUE,
)
def test_any_central_body_value_compiles_or_names_itself(field, value):
    spec = SimSpec.from_xml_string(free_body_xml())
    setattr(spec.orbit.central_body, field, value)
    try:
        spec.compile()
    except ValueError as error:
        assert "\n" not in str(error) and f"central_body.{field}" in str(error), str(error)
    else:
        if field == "gm":
            assert math.isfinite(value) and value > 0
