"""Hostile values through the physics API: SimSpec elements, the central body, nworld,
step counts, timesteps, orbits, and non-finite commands written straight to the data.

Spec and call inputs must raise one line naming the field and the value; NaN written to
an actuator array past every check must flag its world (`SimData.unhealthy`) instead of
spreading NaN into the state.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from orbitlab.robustness import CLEAN, WRONG, Case, one_line_naming

XML = """<mujoco><option timestep="{timestep}" integrator="RK4"/>
  <worldbody><body name="spacecraft"><freejoint/>
  <geom type="box" size="0.5 0.3 0.2" mass="100"/></body></worldbody></mujoco>"""
BAD = {"NaN": math.nan, "inf": math.inf, "-1": -1.0, "'abc'": "abc", "None": None}
ELEMENT_FIELDS = {
    "SurfaceCfg": ("normal_body", "center_of_pressure_body", "area", "drag_coeff", "srp_coeff"),
    "ThrusterCfg": ("position_body", "direction_body", "max_force"),
    "ReactionWheelCfg": ("axis_body", "inertia", "max_speed", "max_torque"),
    "MagnetorquerCfg": ("axis_body", "max_dipole"),
}
CENTRAL = ("gm", "radius", "j2", "omega", "magnetic_b0", "magnetic_axis", "atmosphere_rho0")
ALLOWED_NEGATIVE = {
    "position_body",
    "center_of_pressure_body",
    "j2",
    "omega",
    "magnetic_b0",
    "atmosphere_rho0",
}
"""Fields where -1 can be legitimate input (a position; a retrograde spin; a negative B0
flips the dipole as the axis does; a nonpositive reference density means no atmosphere,
as the physics spec says: zero density, tests/test_orbit_laws.py)."""


def _spec(timestep: float = 0.01):
    from orbitlab import SimSpec

    return SimSpec.from_xml_string(XML.format(timestep=timestep))


def _refused(call, *words) -> tuple[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow is no answer
        try:
            call()
        except (ValueError, TypeError, FileNotFoundError) as error:
            return one_line_naming(str(error), *words)
    return WRONG, "accepted"


def _element(cls_name: str, field: str, value) -> tuple[str, str]:
    import orbitlab

    cls = getattr(orbitlab, cls_name)
    element = cls(name="e", body_name="spacecraft", **{field: value})
    spec = _spec()
    kind = {
        "SurfaceCfg": "surfaces",
        "ThrusterCfg": "thrusters",
        "ReactionWheelCfg": "wheels",
        "MagnetorquerCfg": "magnetorquers",
    }[cls_name]
    getattr(spec.orbit.elements, kind).append(element)
    return _refused(spec.compile, field)


def _central(field: str, value) -> tuple[str, str]:
    spec = _spec()
    setattr(spec.orbit.central_body, field, value)
    return _refused(spec.compile, field)


def _model():
    from orbitlab import ReactionWheelCfg, SimSpec
    from orbitlab.sim.elements import MagnetorquerCfg

    spec = SimSpec.from_xml_string(XML.format(timestep=0.01))
    spec.orbit.add_reaction_wheel(
        ReactionWheelCfg(name="rw", body_name="spacecraft", axis_body=[0, 0, 1], inertia=2e-3)
    )
    spec.orbit.add_magnetorquer(
        MagnetorquerCfg(name="mtq", body_name="spacecraft", axis_body=[1, 0, 0], max_dipole=1.0)
    )
    return spec.compile()


def _written(array: str, value: float) -> tuple[str, str]:
    data = _model().make_data(nworld=2)
    getattr(data, array)[1] = value
    data.step(5)
    flagged = data.unhealthy()
    state_ok = np.all(np.isfinite(data.bind("qvel")[0])) and np.all(np.isfinite(data.R))
    if 1 in flagged and 0 not in flagged and state_ok:
        return CLEAN, f"world 1 flagged: {flagged[1]}; world 0 untouched"
    return WRONG, f"flags {flagged}, world 0 state finite: {state_ok}"


def cases() -> list[Case]:
    out: list[Case] = []

    def add(group, name, fn, *args):
        out.append(Case(group, name, lambda: fn(*args)))

    for cls_name, fields in ELEMENT_FIELDS.items():
        for field in fields:
            for label, value in BAD.items():
                if label == "-1" and field in ALLOWED_NEGATIVE:
                    continue
                add(
                    "physics: elements",
                    f"{cls_name}.{field}={label}",
                    _element,
                    cls_name,
                    field,
                    value,
                )
    for field in CENTRAL:
        for label, value in BAD.items():
            if label == "-1" and field in ALLOWED_NEGATIVE:
                continue
            add("physics: central body", f"{field}={label}", _central, field, value)
    for value in (2.7, "4", 0, -1, 2**31, math.nan, None):
        add(
            "physics: nworld, step, timestep",
            f"nworld={value!r}",
            lambda v=value: _refused(lambda: _model().make_data(nworld=v), "nworld"),
        )
    for value in (-3, 1.5, True, "x", math.nan):
        add(
            "physics: nworld, step, timestep",
            f"step({value!r})",
            lambda v=value: _refused(lambda: _model().make_data().step(v), "nstep"),
        )
    for value in (0.0, -0.01, math.nan, math.inf, "x"):
        add(
            "physics: nworld, step, timestep",
            f"compile(timestep={value!r})",
            lambda v=value: _refused(lambda: _spec().compile(timestep=v), "timestep"),
        )
    for value in (-0.01, 0):
        add(
            "physics: nworld, step, timestep",
            f"MJCF timestep {value}",
            lambda v=value: _refused(lambda: _spec(v).compile(), "timestep"),
        )
    for name, (r, v) in {
        "R NaN": ([math.nan, 0, 0], [0, 7.5, 0]),
        "V inf": ([7000.0, 0, 0], [0, math.inf, 0]),
        "R of 2 numbers": ([7000.0, 0], [0, 7.5, 0]),
        "inside the Earth": ([6000.0, 0, 0], [0, 7.5, 0]),
        "R as text": ("abc", [0, 7.5, 0]),
    }.items():
        add("physics: nworld, step, timestep", f"orbit {name}", _orbit, r, v)
    for array in ("wheel_torque", "mtq_dipole"):
        for label, value in (("NaN", math.nan), ("inf", math.inf)):
            add("physics: written to data", f"{array} = {label}", _written, array, value)
    return out


def _orbit(r, v) -> tuple[str, str]:
    from orbitlab import OrbitInit

    return _refused(lambda: _model().make_data(orbit=OrbitInit(R_eci=r, V_eci=v)), "R_eci")
