"""Coupled dynamics: relative motion, conservation laws, chief schedule, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MU, circular_orbit, free_body_xml, only

from orbitlab import (
    ControlMomentGyroCfg,
    OrbitInit,
    ReactionWheelCfg,
    SimSpec,
    SurfaceCfg,
)
from orbitlab.orbit.frames import cw_propagate, lvlh_angular_velocity, lvlh_rotation


def angular_momentum(data, body: int = 1) -> np.ndarray:
    """World angular momentum of a free body about its COM, N m s, (nworld, 3)."""
    data.forward()  # derived fields (ximat, cvel) at the current state
    m = data.model.mj_model
    ximat = data.bind("ximat").reshape(data.nworld, -1, 3, 3)[:, body]
    omega = data.bind("cvel")[:, body, :3]
    J = ximat @ np.diag(m.body_inertia[body]) @ np.swapaxes(ximat, 1, 2)
    return np.einsum("nij,nj->ni", J, omega)


def rotational_energy(data, body: int = 1) -> np.ndarray:
    omega = data.bind("cvel")[:, body, :3]
    return 0.5 * np.einsum("ni,ni->n", omega, angular_momentum(data, body))


def test_free_drift_from_10_m_radial_matches_clohessy_wiltshire():
    spec = only(SimSpec.from_xml_string(free_body_xml(timestep=0.1)))
    spec.orbit.use_j2 = False  # CW assumes a Keplerian circular reference
    data = spec.compile().make_data(orbit=circular_orbit(alt_km=500.0))
    R0, V0 = data.R[0].copy(), data.V[0].copy()
    C = lvlh_rotation(R0, V0)
    omega, _ = lvlh_angular_velocity(R0, V0)
    rho0 = np.array([10.0, 0.0, 0.0])  # m, Hill frame, at rest in the rotating frame
    data.bind("qpos")[0, :3] = C.T @ rho0
    data.bind("qvel")[0, :3] = np.cross(
        omega, C.T @ rho0
    )  # inertial velocity of a Hill-fixed point
    data.forward()
    n = np.sqrt(MU / np.linalg.norm(R0) ** 3)
    duration = 600.0
    data.step(round(duration / 0.1))
    C1 = lvlh_rotation(data.R[0], data.V[0])
    rho = C1 @ data.bind("qpos")[0, :3]
    expected = cw_propagate(np.r_[rho0, 0, 0, 0], n, duration)[:3]
    drift = np.linalg.norm(expected - rho0)
    assert drift > 5.0  # the body really drifted (CW: ~ 6 m along-track in 600 s)
    # CW neglects terms of order |rho|/R ~ 1e-6 of the drift; the zero-order hold of
    # loads over 0.1 s steps adds ~1e-5: 1e-4 relative to the drift bounds both.
    np.testing.assert_allclose(rho, expected, atol=1e-4 * drift)


def test_torque_free_tumbling_conserves_energy_and_angular_momentum():
    spec = only(SimSpec.from_xml_string(free_body_xml(timestep=0.005)))
    data = spec.compile().make_data(orbit=circular_orbit())
    data.bind("qvel")[0, 3:] = [0.3, -0.2, 0.5]  # rad/s, an asymmetric body: a real tumble
    data.forward()
    L0, E0 = angular_momentum(data)[0].copy(), rotational_energy(data)[0]
    data.step(2000)
    L1, E1 = angular_momentum(data)[0], rotational_energy(data)[0]
    assert np.linalg.norm(data.bind("cvel")[0, 1, :3] - [0.3, -0.2, 0.5]) > 0.05  # it tumbles
    # MuJoCo's RK4 at 5 ms over 10 s conserves both to ~1e-9; 1e-7 leaves margin.
    np.testing.assert_allclose(L1, L0, rtol=0, atol=1e-7 * np.linalg.norm(L0))
    np.testing.assert_allclose(E1, E0, rtol=1e-7)


def wheel_spec(max_speed: float = 600.0, timestep: float = 0.005, coupling: str = "stage"):
    spec = only(SimSpec.from_xml_string(free_body_xml(timestep=timestep)))
    spec.orbit.coupling = coupling
    for i, axis in enumerate(np.eye(3)):
        spec.orbit.add_reaction_wheel(
            ReactionWheelCfg(
                name=f"rw{i}",
                body_name="spacecraft",
                axis_body=axis,
                inertia=2e-3,
                max_speed=max_speed,
                max_torque=0.05,
            )
        )
    return spec


def total_momentum_with_wheels(data) -> np.ndarray:
    data.forward()
    xmat = data.bind("xmat").reshape(data.nworld, -1, 3, 3)[:, 1]
    wheels = np.einsum("nij,nj->ni", xmat, data.wheel_momentum)  # axes are body x, y, z
    return angular_momentum(data) + wheels


def wheel_momentum_drift(timestep: float, coupling: str = "stage") -> tuple[float, float]:
    """(|total momentum change|, |body momentum change|) after 5 s of wheel torques, N m s."""
    spec = wheel_spec(timestep=timestep, coupling=coupling)
    data = spec.compile().make_data(orbit=circular_orbit())
    data.bind("qvel")[0, 3:] = [0.05, -0.02, 0.03]
    data.forward()
    H0 = total_momentum_with_wheels(data)[0].copy()
    L0 = angular_momentum(data)[0].copy()
    data.wheel_torque[0] = [0.02, -0.03, 0.01]
    data.step(round(5.0 / timestep))
    return (
        float(np.linalg.norm(total_momentum_with_wheels(data)[0] - H0)),
        float(np.linalg.norm(angular_momentum(data)[0] - L0)),
    )


def test_reaction_wheels_exchange_momentum_and_conserve_the_total():
    """The default per-stage coupling integrates the wheels with the body: the total is
    kept to round-off while ~0.19 N m s moves between them."""
    drift, exchanged = wheel_momentum_drift(0.005)
    assert exchanged > 0.15  # 5 s of ~0.037 N m moved ~0.19 N m s into the body
    # Measured 2.2e-15 N m s (round-off of the 1000 steps' sums); 1e-12 leaves margin.
    assert drift < 1e-12


def test_held_wheel_torques_are_first_order():
    """coupling='held' holds the wheels' reaction over a step: the total drifts at first
    order (measured 1.4e-5 N m s at 5 ms, 7.5e-5 of the exchange), halving with the step."""
    drift, exchanged = wheel_momentum_drift(0.005, "held")
    finer, _ = wheel_momentum_drift(0.0025, "held")
    assert exchanged > 0.15
    assert drift < 5e-5
    assert finer == pytest.approx(drift / 2, rel=0.1)


def spinning_wheels_momentum_drift(coupling: str) -> tuple[float, float]:
    """(|inertial H change| / |H|, |body rate change| rad/s) of a torque-free tumbling
    spacecraft whose three wheels spin at 100-300 rad/s (no motor torque), 600 s at the
    tasks' dt of 0.1 s."""
    data = wheel_spec(timestep=0.1, coupling=coupling).compile().make_data(orbit=circular_orbit())
    data.bind("qvel")[0, 3:] = [0.05, -0.02, 0.03]
    data.wheel_momentum[0] = 2e-3 * np.array([100.0, -200.0, 300.0])  # N m s, body x, y, z
    data.forward()
    H0 = total_momentum_with_wheels(data)[0].copy()
    omega0 = data.bind("qvel")[0, 3:].copy()
    data.step(6000)
    H1 = total_momentum_with_wheels(data)[0]
    exact = spinning_wheels_rate(omega0, data.wheel_momentum[0].copy(), 600.0)
    return (
        float(np.linalg.norm(H1 - H0) / np.linalg.norm(H0)),
        float(np.linalg.norm(data.bind("qvel")[0, 3:] - exact)),
    )


def spinning_wheels_rate(omega0: np.ndarray, h_wheels: np.ndarray, duration: float):
    """Body rate after `duration` s of torque-free motion with constant wheel momenta along
    the body axes: I w' = -w x (I w + h), by scipy's DOP853 at tolerance 1e-13."""
    from scipy.integrate import solve_ivp

    inertia = np.diag(_box_inertia())

    def f(_, w):
        return np.linalg.solve(inertia, -np.cross(w, inertia @ w + h_wheels))

    sol = solve_ivp(f, (0.0, duration), omega0, method="DOP853", rtol=1e-13, atol=1e-15)
    return sol.y[:, -1]


def _box_inertia() -> np.ndarray:
    """Principal inertia of conftest's 100 kg 1.0 x 0.6 x 0.4 m box, kg m^2."""
    a, b, c = 1.0, 0.6, 0.4
    return 100.0 / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def test_spinning_wheels_conserve_inertial_momentum_in_the_default_coupling():
    """Per stage (the default): |H| kept to 1e-9 (relative) over 600 s at dt 0.1 s (measured
    1.8e-11) and the body rate within 3e-9 rad/s of an independent integration (measured
    6.8e-10, RK4's own truncation at this dt). Held, the wheels' gyroscopic torque drifts H
    by 3e-2 and the rate by 2e-2 rad/s here: both bounds reject it."""
    drift, rate_error = spinning_wheels_momentum_drift("stage")
    assert drift < 1e-9
    assert rate_error < 3e-9
    held_drift, held_rate_error = spinning_wheels_momentum_drift("held")
    assert held_drift > 1e-6 and held_rate_error > 1e-6


def cmg_momentum_drift(timestep: float, coupling: str = "stage") -> tuple[float, object]:
    """|total momentum change| (N m s) after a 1 rad gimbal sweep at 1 rad/s, and the data."""
    spec = only(SimSpec.from_xml_string(free_body_xml(timestep=timestep)))
    spec.orbit.coupling = coupling
    spec.orbit.add_cmg(
        ControlMomentGyroCfg(
            name="cmg",
            body_name="spacecraft",
            gimbal_axis_body=[0, 0, 1],
            spin_axis_body=[1, 0, 0],
            rotor_momentum=0.5,
            max_rate=1.0,
        )
    )
    data = spec.compile().make_data(orbit=circular_orbit())

    def total():
        data.forward()
        xmat = data.bind("xmat").reshape(-1, 3, 3)[1]  # world 0, body 1
        delta = data.cmg_angle[0, 0]
        return angular_momentum(data)[0] + 0.5 * xmat @ np.array([np.cos(delta), np.sin(delta), 0])

    data.bind("qvel")[0, 3:] = [0.02, -0.01, 0.03]
    H0 = total().copy()
    data.cmg_rate[0] = 3.0  # clamped to 1 rad/s
    data.step(round(1.0 / timestep))
    return float(np.linalg.norm(total() - H0)), data


def test_cmg_gimbal_exchanges_momentum_and_conserves_the_total():
    """Per stage (the default): the gimbal angle and the body integrate together; the total
    is kept to 1e-11 N m s (measured 2.5e-12 at dt 10 ms, 1.6e-13 at 5 ms: fourth order)
    while ~0.48 N m s moves to the body."""
    drift, data = cmg_momentum_drift(0.01)
    assert data.cmg_angle[0, 0] == pytest.approx(1.0, abs=1e-12)  # 1 s at the 1 rad/s limit
    assert np.linalg.norm(angular_momentum(data)[0]) > 0.3
    assert drift < 1e-11


def test_held_cmg_gimbal_is_first_order():
    """coupling='held': the gimbal exchange is exact per step, the held gyroscopic term is
    first order (measured 8.8e-5 N m s at 5 ms, 1.8e-4 of the exchange), halving with dt."""
    drift, data = cmg_momentum_drift(0.005, "held")
    finer, _ = cmg_momentum_drift(0.0025, "held")
    assert data.cmg_angle[0, 0] == pytest.approx(1.0, abs=1e-12)
    assert drift < 1.5e-4
    assert finer == pytest.approx(drift / 2, rel=0.15)


def drag_scene(orbit_dt: float | None, timestep: float = 0.1) -> SimSpec:
    spec = SimSpec.from_xml_string(free_body_xml(timestep=timestep))
    spec.orbit.add_surface(
        SurfaceCfg(
            name="ram",
            body_name="spacecraft",
            center_of_pressure_body=[0.1, 0.0, 0.3],
            normal_body=[0, 1, 0],
            area=10.0,
        )
    )
    spec.orbit.orbit_dt = orbit_dt
    spec.orbit.coupling = "held"  # the chief schedule (orbit_dt) is the held step's
    return spec


def run_chief(spec: SimSpec, nstep: int):
    data = spec.compile().make_data(orbit=circular_orbit(alt_km=300.0, incl_rad=0.9))
    data.bind("qvel")[0, 3:] = [0.01, 0.02, -0.01]
    data.forward()
    data.step(nstep)
    return data


def test_orbit_dt_smaller_and_larger_than_the_timestep_agree():
    reference = run_chief(drag_scene(None), 1000)  # 100 s, RK4 at the 0.1 s timestep
    assert np.linalg.norm(reference.a_feedback[0]) > 1e-10  # drag feedback is active (~5e-7 m/s^2)
    for orbit_dt in (0.025, 1.0):
        other = run_chief(drag_scene(orbit_dt), 1000)
        # RK4 truncation (dt^5 terms, ~1e-10 km) and the averaged feedback over 1 s
        # segments (drag varies ~1e-4 over 1 s): 1e-8 km, 1e-10 km/s bound both.
        np.testing.assert_allclose(other.R[0], reference.R[0], rtol=0, atol=1e-8)
        np.testing.assert_allclose(other.V[0], reference.V[0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(other.bind("qpos")[0], reference.bind("qpos")[0], atol=1e-9)


def test_segment_interpolation_between_endpoints_tracks_the_orbit():
    """Inside a 10 s segment the interpolated chief stays on the RK4 reference."""
    fine = drag_scene(None, timestep=0.1)
    coarse = drag_scene(10.0, timestep=0.1)
    a = fine.compile().make_data(orbit=circular_orbit())
    b = coarse.compile().make_data(orbit=circular_orbit())
    worst = 0.0
    for _ in range(150):
        a.step()
        b.step()
        worst = max(worst, float(np.linalg.norm(a.R[0] - b.R[0])))
    # Cubic Hermite error ~ |jerk| T^4/384 ~ 1e-7 km for T = 10 s (a linear chord: 1e-4 km).
    assert worst < 1e-6


def test_an_error_in_a_helper_thread_is_raised_by_the_launch_after_every_chunk_ran():
    from orbitlab.sim.launch import WorldLaunch, _Helper

    ran = []

    def failing():
        ran.append("helper")
        raise FloatingPointError("chunk 1")

    launch = object.__new__(WorldLaunch)  # the replay alone, without a recorded kernel
    launch._calls = [lambda: ran.append("caller")]
    launch._helpers = [_Helper(failing), _Helper(lambda: ran.append("helper 2"))]
    try:
        with pytest.raises(FloatingPointError, match="chunk 1"):
            launch.launch()
        assert sorted(ran) == ["caller", "helper", "helper 2"]
        launch._helpers[0].stop()
        launch._helpers[0] = _Helper(lambda: ran.append("helper"))
        launch.launch()  # the helpers still answer, nothing left over in their queues
        assert len(ran) == 6
    finally:
        launch.close()


def test_one_and_two_threads_are_bit_identical(monkeypatch):
    import orbitlab.sim.launch

    monkeypatch.setattr(orbitlab.sim.launch, "MIN_WORLDS_PER_CHUNK", 1)  # 8 worlds, 2 chunks

    def run(nthread):
        spec = drag_scene(None, timestep=0.05)
        spec.orbit.add_reaction_wheel(ReactionWheelCfg(name="rw", body_name="spacecraft"))
        inits = [circular_orbit(alt_km=300.0 + 10 * i, t=100.0 * i) for i in range(8)]
        data = spec.compile().make_data(
            nworld=8, orbit=inits, nthread=nthread, kernel_threads=nthread
        )
        assert len(data._loads_and_advance._calls) == nthread
        data.bind("qvel")[:, 3:] = np.linspace(-0.1, 0.1, 24).reshape(8, 3)
        data.wheel_torque[:] = 0.001
        data.step(50)
        return [
            data.R.copy(),
            data.V.copy(),
            data.bind("qpos").copy(),
            data.bind("qvel").copy(),
            data.wheel_momentum.copy(),
        ]

    for x, y in zip(run(1), run(2), strict=True):
        np.testing.assert_array_equal(x, y)


def test_each_world_follows_its_own_orbit():
    spec = only(SimSpec.from_xml_string(free_body_xml()))
    inits = [
        circular_orbit(alt_km=400.0),
        OrbitInit(R_eci=[0.0, 7000.0, 0.0], V_eci=[-7.5, 0.0, 0.0], t=5e8),
    ]
    data = spec.compile().make_data(nworld=2, orbit=inits)
    data.step(10)
    assert data.t[1] == pytest.approx(5e8 + 0.1, abs=1e-6)
    assert data.R[0, 0] > 6700 and data.R[1, 1] > 6900


def test_reset_restores_a_subset_of_worlds_only():
    spec = only(SimSpec.from_xml_string(free_body_xml()))
    data = spec.compile().make_data(nworld=3, orbit=circular_orbit())
    data.bind("qvel")[:, 3] = 0.1
    data.forward()
    data.step(20)
    before = data.R.copy()
    data.reset(worlds=[1])
    np.testing.assert_array_equal(data.R[[0, 2]], before[[0, 2]])
    np.testing.assert_array_equal(data.R[1], circular_orbit().R_eci)
    assert data.bind("qvel")[1, 3] == 0.0 and data.bind("qvel")[0, 3] == 0.1
    assert data.t[1] == 0.0 and data.t[0] > 0.0


def test_kinematics_from_qpos_match_mujocos_derived_fields(monkeypatch):
    """Free bodies read pose/velocity from qpos/qvel; the derived-field path must agree.

    The free-body path also hands the loads to MuJoCo as generalized forces
    (qfrc_applied) instead of xfrc_applied. Both are held over the step, but RK4's
    intermediate stages re-map xfrc_applied at the stage's attitude (a world-frame
    hold) while qfrc_applied stays in body axes, an O(|omega| dt) difference within
    a step; with Euler, one evaluation per step, the two paths must agree exactly.
    """
    import orbitlab.sim.data as data_module

    def run():
        xml = free_body_xml(
            integrator="Euler",
            inertial='<geom type="box" size="0.5 0.3 0.2" pos="0.1 -0.05 0.02"'
            ' euler="10 20 30" mass="100"/>',
        )
        spec = SimSpec.from_xml_string(xml)
        spec.orbit.add_surface(
            SurfaceCfg(
                name="p",
                body_name="spacecraft",
                normal_body=[0, 1, 0],
                center_of_pressure_body=[0.2, 0.1, 0.5],
                area=4.0,
            )
        )
        spec.orbit.add_reaction_wheel(ReactionWheelCfg(name="rw", body_name="spacecraft"))
        data = spec.compile().make_data(orbit=circular_orbit(alt_km=300.0))
        data.bind("qpos")[0, :7] = [1.0, -2.0, 0.5, 0.8, 0.1, -0.3, 0.5]
        data.bind("qvel")[0, :] = [0.01, 0.02, -0.03, 0.05, -0.04, 0.03]
        data.wheel_torque[:] = 0.005
        data.forward()
        first = data.wrench_buffer.copy()
        data.step(100)
        return first, data.wrench_buffer.copy(), data.bind("qpos").copy(), data._switches.from_qpos

    fast = run()
    monkeypatch.setattr(data_module, "all_free_floating", lambda m: False)
    derived = run()
    assert fast[3] == 1 and derived[3] == 0
    for a, b in zip(fast[:3], derived[:3], strict=True):
        # Same quantities through two float64 paths (quaternion vs MuJoCo's xmat): 1e-10.
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(b).max())


def test_hill_state_reports_a_radial_offset_at_rest_in_the_rotating_frame():
    spec = only(SimSpec.from_xml_string(free_body_xml()))
    data = spec.compile().make_data(orbit=circular_orbit())
    C, omega = data.hill_frame()
    offset = C[0].T @ np.array([10.0, -4.0, 2.0])
    data.bind("qpos")[0, :3] = offset
    data.bind("qvel")[0, :3] = np.cross(omega[0], offset)  # co-rotating with the Hill frame
    data.forward()
    rho, rho_dot = data.hill_state("spacecraft")
    np.testing.assert_allclose(rho[0], [10.0, -4.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(rho_dot[0], 0.0, atol=1e-15)


def test_calendar_epoch_sets_the_environment_time():
    pytest.importorskip("astropy")
    spec = only(SimSpec.from_xml_string(free_body_xml()))
    init = OrbitInit(R_eci=[6778.137, 0, 0], V_eci=[0, 7.668558, 0], epoch="2000-01-01T12:00:00")
    data = spec.compile().make_data(orbit=init)
    # Noon UTC on 2000-01-01 is 64.184 s after J2000 (TT).
    assert data.t[0] == pytest.approx(64.184, abs=1e-6)


TWO_SPACECRAFT_XML = """
<mujoco><option timestep="0.05"/><worldbody>
  <body name="a" pos="0 0 0"><freejoint/><geom type="box" size="0.4 0.3 0.2" mass="20"/></body>
  <body name="b" pos="5 1 0"><freejoint/><geom type="box" size="0.2 0.3 0.5" mass="8"
        pos="0.05 0 0"/></body>
</worldbody></mujoco>"""
ARTICULATED_XML = """
<mujoco><option timestep="0.05"/><worldbody>
  <body name="a"><freejoint/><geom type="sphere" size="0.3" mass="10"/>
    <body name="b" pos="1 0 0"><joint type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.5 0.05 0.05" pos="0.5 0 0" mass="2"/></body>
  </body></worldbody></mujoco>"""


def every_element_spec(xml: str, orbit_dt: float | None) -> SimSpec:
    """Surfaces on both bodies, dipole, thrusters, wheel, magnetorquer and CMG."""
    from orbitlab import ControlMomentGyroCfg, MagneticDipoleCfg, MagnetorquerCfg, ThrusterCfg

    spec = SimSpec.from_xml_string(xml)
    spec.orbit.orbit_dt = orbit_dt
    if orbit_dt is not None:
        spec.orbit.coupling = "held"  # the chief schedule (orbit_dt) is the held step's
    for body, normal in (("a", (0, 1, 0)), ("a", (0, -1, 0)), ("b", (1, 0, 0))):
        spec.orbit.add_surface(
            SurfaceCfg(
                name=f"{body}{normal}",
                body_name=body,
                center_of_pressure_body=(0.1, 0.0, 0.2),
                normal_body=normal,
                area=3.0,
            )
        )
    spec.orbit.add_magnetic_body(
        MagneticDipoleCfg(name="res", body_name="b", dipole_body=(0.0, 0.1, 0.05))
    )
    for i, direction in enumerate(((1, 0, 0), (0, 1, 0))):
        spec.orbit.add_thruster(
            ThrusterCfg(
                name=f"t{i}",
                body_name="a",
                position_body=(0.2, 0.1, -0.1),
                direction_body=direction,
                max_force=2.0,
            )
        )
    spec.orbit.add_reaction_wheel(ReactionWheelCfg(name="rw", body_name="a"))
    spec.orbit.add_magnetorquer(MagnetorquerCfg(name="mtq", body_name="b"))
    spec.orbit.add_cmg(ControlMomentGyroCfg(name="cmg", body_name="a"))
    return spec


@pytest.mark.parametrize(
    "xml, orbit_dt, per_world_mass",
    [
        (TWO_SPACECRAFT_XML, 0.2, True),  # free bodies (loads as generalized forces), segments
        (ARTICULATED_XML, 0.025, False),  # derived fields, xfrc_applied, RK4 substeps
        (TWO_SPACECRAFT_XML, None, True),  # the per-stage coupling (the default)
        (ARTICULATED_XML, None, False),
    ],
)
def test_specialised_kernel_is_bit_identical_to_the_generic_one(xml, orbit_dt, per_world_mass):
    """The kernel compiled for a model's counts and switches runs the same arithmetic."""
    spec = every_element_spec(xml, orbit_dt)

    def run(specialize: bool):
        inits = [
            circular_orbit(alt_km=300.0 + 20 * i, incl_rad=0.3 * i, t=50.0 * i) for i in range(4)
        ]
        data = spec.compile().make_data(nworld=4, orbit=inits, specialize=specialize)
        assert data.specialize == specialize
        if per_world_mass:
            data.expand("body_mass")[:, 1] = [20.0, 21.0, 22.0, 23.0]
        data.bind("qvel")[:, 3:6] = np.linspace(-0.1, 0.1, 12).reshape(4, 3)
        data.forward()
        data.thruster_force[:] = [1.0, 0.5]
        data.wheel_torque[:] = 0.001
        data.mtq_dipole[:] = 0.1
        data.cmg_rate[:] = 0.2
        data.step(30)
        return [
            data.R,
            data.V,
            data.wrench_buffer,
            data.a_feedback,
            data.bind("qpos"),
            data.bind("qvel"),
            data.wheel_momentum,
            data.cmg_angle,
            data.env.eclipse,
        ]

    generic, special = run(False), run(True)
    assert np.abs(generic[2]).max() > 0
    for x, y in zip(generic, special, strict=True):
        np.testing.assert_array_equal(x, y)
