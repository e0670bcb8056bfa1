"""Loads the simulation applies, checked against closed forms written here."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MU, RE, circular_orbit, free_body_xml, only, quat_to_mat

from orbitlab import (
    MagneticDipoleCfg,
    MagnetorquerCfg,
    OrbitInit,
    SimSpec,
    SurfaceCfg,
    ThrusterCfg,
)

P_SUN = 4.56e-6


def gg_closed_form(R: np.ndarray, J_world: np.ndarray) -> np.ndarray:
    rn = np.linalg.norm(R)
    rh = R / rn
    return 3 * MU / rn**3 * np.cross(rh, J_world @ rh)


def make(spec: SimSpec, orbit: OrbitInit | None = None, nworld: int = 1, timestep=0.01):
    return spec.compile(timestep=timestep).make_data(nworld=nworld, orbit=orbit)


def set_attitude(data, quat) -> None:
    data.bind("qpos")[:, 3:7] = quat
    data.forward()


# ----------------------------------------------------------------- gravity gradient
def test_gravity_gradient_matches_closed_form_for_rotated_diagonal_body():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_gravity_gradient")
    orbit = OrbitInit(R_eci=[6000.0, 3000.0, 2000.0], V_eci=[0.0, 7.0, 1.0])
    data = make(spec, orbit)
    q = np.array([0.9, 0.2, -0.3, 0.25])
    set_attitude(data, q / np.linalg.norm(q))
    m = 100.0
    diag = m / 12 * np.array([0.6**2 + 0.4**2, 1.0**2 + 0.4**2, 1.0**2 + 0.6**2])
    Q = quat_to_mat(q)
    expected = gg_closed_form(data.R[0], Q @ np.diag(diag) @ Q.T)
    # float64 evaluation of the same product: agreement to rounding (1e-12 relative).
    np.testing.assert_allclose(
        data.wrench_buffer[0, 1, 3:], expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max()
    )
    assert np.abs(expected).max() > 1e-6  # the case is not degenerate


def test_gravity_gradient_handles_fullinertia_bodies():
    J_body = np.array([[12.0, 0.8, -0.5], [0.8, 9.0, 0.3], [-0.5, 0.3, 6.0]])
    inertial = (
        '<inertial pos="0 0 0" mass="50" fullinertia="12 9 6 0.8 -0.5 0.3"/>'
        '<geom type="sphere" size="0.1" contype="0" conaffinity="0" mass="0"/>'
    )
    spec = only(SimSpec.from_xml_string(free_body_xml(inertial=inertial)), "use_gravity_gradient")
    data = make(spec, OrbitInit(R_eci=[4000.0, -4500.0, 3500.0], V_eci=[5.0, 4.0, 1.0]))
    q = np.array([0.7, -0.1, 0.5, 0.3])
    set_attitude(data, q / np.linalg.norm(q))
    Q = quat_to_mat(q)
    expected = gg_closed_form(data.R[0], Q @ J_body @ Q.T)
    # ximat/body_inertia are MuJoCo's eigen-decomposition: 1e-10 relative covers it.
    np.testing.assert_allclose(
        data.wrench_buffer[0, 1, 3:], expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max()
    )


def test_gravity_gradient_vanishes_for_principal_axes_along_the_radius():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_gravity_gradient")
    data = make(spec, circular_orbit())
    # Torque scale is 3 mu/r^3 * dI ~ 4e-5 N m; zero means below 1e-18.
    assert np.abs(data.wrench_buffer[0, 1, 3:]).max() < 1e-18


def test_gravity_gradient_scales_as_inverse_cube_of_radius():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_gravity_gradient")
    direction = np.array([0.6, 0.64, 0.48])
    torques = []
    for r in (7000.0, 14000.0):
        data = make(spec, OrbitInit(R_eci=r * direction, V_eci=[0.0, 5.0, 0.0]))
        set_attitude(data, np.array([0.8, 0.2, 0.3, 0.4]) / np.linalg.norm([0.8, 0.2, 0.3, 0.4]))
        torques.append(data.wrench_buffer[0, 1, 3:].copy())
    np.testing.assert_allclose(torques[1], torques[0] / 8.0, rtol=1e-12)


# ------------------------------------------------------------------------- SRP
def sunward_spec(normals, area=1.0, cr=1.8, xml=None) -> tuple[SimSpec, np.ndarray]:
    """A spec whose panels face +/- the Sun at t = 0 (Sun direction read from a probe)."""
    probe = make(only(SimSpec.from_xml_string(free_body_xml()), "use_srp"), circular_orbit())
    s_hat = probe.env.sun_eci[0].copy()
    spec = only(SimSpec.from_xml_string(xml or free_body_xml()), "use_srp")
    for i, sign in enumerate(normals):
        spec.orbit.add_surface(
            SurfaceCfg(
                name=f"p{i}",
                body_name="spacecraft",
                normal_body=sign * s_hat,
                area=area,
                srp_coeff=cr,
            )
        )
    return spec, s_hat


def external_force(data) -> np.ndarray:
    """Total drag + SRP + thrust on the scene, N, from the chief feedback (1e3 M a_fb)."""
    return 1e3 * 100.0 * data.a_feedback[0]


def test_srp_on_a_sunlit_square_metre_is_8_208_micronewton():
    spec, s_hat = sunward_spec([+1.0])
    data = make(spec, circular_orbit(alt_km=400.0))
    assert data.env.eclipse[0] == 1.0
    # Exact product of three constants: 1e-12 relative.
    np.testing.assert_allclose(external_force(data), -8.208e-6 * s_hat, rtol=1e-12, atol=1e-18)


def test_srp_two_opposite_panels_equal_one_and_back_face_gets_nothing():
    both, s_hat = sunward_spec([+1.0, -1.0], area=2.0)
    back, _ = sunward_spec([-1.0], area=2.0)
    f_both = external_force(make(both, circular_orbit()))
    np.testing.assert_allclose(f_both, -2 * 8.208e-6 * s_hat, rtol=1e-12)
    assert np.all(external_force(make(back, circular_orbit())) == 0.0)


def test_srp_is_zero_in_eclipse():
    spec, s_hat = sunward_spec([+1.0])
    behind = OrbitInit(R_eci=-(RE + 400.0) * s_hat, V_eci=np.cross([0, 0, 1.0], s_hat) * 7.67)
    data = make(spec, behind)
    assert data.env.eclipse[0] == 0.0
    assert np.all(external_force(data) == 0.0)


def test_srp_torque_is_lever_arm_cross_force():
    _probe_spec, s_hat = sunward_spec([+1.0])
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_srp")
    spec.orbit.add_surface(
        SurfaceCfg(
            name="p",
            body_name="spacecraft",
            normal_body=s_hat,
            center_of_pressure_body=[0.0, 0.0, 0.5],
            area=1.0,
        )
    )
    data = make(spec, circular_orbit())
    force = -8.208e-6 * s_hat
    np.testing.assert_allclose(
        data.wrench_buffer[0, 1, 3:], np.cross([0, 0, 0.5], force), rtol=1e-12
    )


# ------------------------------------------------------------------------ drag
def drag_expected(data, area, cd=2.2) -> np.ndarray:
    R, V = data.R[0], data.V[0]
    h = np.linalg.norm(R) - RE
    rho = 2.62e-13 * np.exp(-(h - 400.0) / 58.2)
    u = 1e3 * V - 1e3 * np.cross([0, 0, 7.292115e-5], R)
    un = np.linalg.norm(u)
    return -0.5 * rho * un**2 * cd * area * u / un


@pytest.mark.parametrize("area", [1.0, 3.0])
@pytest.mark.parametrize("alt", [400.0, 458.2])
def test_drag_matches_dynamic_pressure_law_and_scales_with_area_and_density(area, alt):
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_drag")
    spec.orbit.add_surface(
        SurfaceCfg(name="ram", body_name="spacecraft", normal_body=[0, 1, 0], area=area)
    )
    data = make(spec, circular_orbit(alt_km=alt))
    # Same formula in numpy on the same inputs: 1e-12 relative.
    np.testing.assert_allclose(external_force(data), drag_expected(data, area), rtol=1e-12)


def test_density_one_scale_height_up_is_rho0_over_e():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_drag")
    low = make(spec, circular_orbit(alt_km=400.0)).env.atm_density[0]
    high = make(spec, circular_orbit(alt_km=458.2)).env.atm_density[0]
    np.testing.assert_allclose(low, 2.62e-13, rtol=1e-12)
    np.testing.assert_allclose(high / low, np.exp(-1.0), rtol=1e-12)


def test_drag_ignores_a_panel_facing_away_from_the_flow_and_per_surface_switch():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_drag")
    spec.orbit.add_surface(SurfaceCfg(name="wake", body_name="spacecraft", normal_body=[0, -1, 0]))
    spec.orbit.add_surface(
        SurfaceCfg(name="off", body_name="spacecraft", normal_body=[0, 1, 0], use_drag=False)
    )
    assert np.all(external_force(make(spec, circular_orbit())) == 0.0)


def test_drag_uses_each_articulated_body_com_velocity():
    """A spinning two-body tree: the plate's COM velocity includes omega x offset."""
    xml = """
<mujoco><option timestep="0.01"/><worldbody>
  <body name="hub"><freejoint/><geom type="sphere" size="0.2" mass="10"/>
    <body name="arm" pos="1 0 0"><joint type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.5 0.05 0.05" pos="0.5 0 0" mass="2"/></body>
  </body></worldbody></mujoco>"""
    spec = only(SimSpec.from_xml_string(xml), "use_drag")
    spec.orbit.add_surface(SurfaceCfg(name="plate", body_name="arm", normal_body=[0, 1, 0]))
    data = make(spec, circular_orbit())
    data.bind("qvel")[0, :] = [0, 0, 0, 0, 0, 0.5, 2.0]  # hub yaw 0.5 rad/s, hinge 2 rad/s
    data.forward()
    import mujoco

    m = data.model.mj_model
    d = data.backend.batch.get_data(0)
    mujoco.mj_forward(m, d)
    vel = np.zeros(6)
    arm = m.body("arm").id
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, arm, vel, 0)  # at xpos? no: COM
    # mj_objectVelocity for bodies reports the velocity at the body COM (xipos), world axes.
    v_com = vel[3:]
    R, V = data.R[0], data.V[0]
    rp = R + 1e-3 * d.xipos[arm]
    u = 1e3 * V + v_com - 1e3 * np.cross([0, 0, 7.292115e-5], rp)
    rho = 2.62e-13 * np.exp(-(np.linalg.norm(rp) - RE - 400.0) / 58.2)
    un = np.linalg.norm(u)
    expected = (
        -0.5
        * rho
        * un**2
        * 2.2
        * max(0.0, (d.xmat[arm].reshape(3, 3) @ [0, 1, 0]) @ u / un)
        * u
        / un
    )
    got = 1e3 * data.a_feedback[0] * m.body_mass.sum()
    # The velocity shift changes the force by ~1e-4 relative; 1e-10 pins it.
    np.testing.assert_allclose(got, expected, rtol=1e-10)


# ------------------------------------------------------------------- magnetic
def test_residual_dipole_torque_is_m_cross_b_and_switch_disables_it():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_magnetic")
    spec.orbit.add_magnetic_body(
        MagneticDipoleCfg(name="res", body_name="spacecraft", dipole_body=[0.1, -0.2, 0.05])
    )
    data = make(spec, OrbitInit(R_eci=[6000.0, 3000.0, 3000.0], V_eci=[0, 7, 0]))
    q = np.array([0.9, 0.1, 0.3, -0.2]) / np.linalg.norm([0.9, 0.1, 0.3, -0.2])
    set_attitude(data, q)
    Q = quat_to_mat(q)
    B = data.env.mag_field_eci[0]
    expected = Q @ np.cross([0.1, -0.2, 0.05], Q.T @ B)
    np.testing.assert_allclose(data.wrench_buffer[0, 1, 3:], expected, rtol=1e-12)
    spec.orbit.use_magnetic = False
    assert np.all(make(spec).wrench_buffer[0, 1, 3:] == 0.0)


def test_magnetorquer_dipole_saturates_at_its_limit():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_magnetic")
    spec.orbit.add_magnetorquer(
        MagnetorquerCfg(name="mtq_x", body_name="spacecraft", axis_body=[1, 0, 0], max_dipole=0.2)
    )
    data = make(spec, OrbitInit(R_eci=[6000.0, 3000.0, 3000.0], V_eci=[0, 7, 0]))
    data.mtq_dipole[:] = 5.0
    data.forward()
    B = data.env.mag_field_eci[0]
    np.testing.assert_allclose(data.wrench_buffer[0, 1, 3:], np.cross([0.2, 0, 0], B), rtol=1e-12)


# ------------------------------------------------------------------ thrusters
def test_thruster_force_torque_and_orbit_feedback():
    xml = free_body_xml(inertial='<geom type="box" size="0.5 0.3 0.2" pos="0.1 0 0" mass="100"/>')
    spec = only(SimSpec.from_xml_string(xml))
    spec.orbit.add_thruster(
        ThrusterCfg(
            name="t",
            body_name="spacecraft",
            position_body=[0.1, 0.3, 0.0],
            direction_body=[1, 0, 0],
            max_force=1.5,
        )
    )
    data = make(spec, circular_orbit())
    gravity_only = data.wrench_buffer[0, 1, :3].copy()  # differential gravity at the offset COM
    data.thruster_force[:] = 3.0  # clamped to 1.5 N
    data.forward()
    np.testing.assert_allclose(data.a_feedback[0], [1.5e-3 / 100.0, 0, 0], rtol=1e-14)
    # The COM is at x = 0.1: lever arm (0, 0.3, 0) from the COM.
    np.testing.assert_allclose(
        data.wrench_buffer[0, 1, 3:], np.cross([0, 0.3, 0], [1.5, 0, 0]), rtol=1e-14
    )
    # Origin correction cancels the thrust on the only body: only gravity is left.
    np.testing.assert_allclose(data.wrench_buffer[0, 1, :3], gravity_only, rtol=0, atol=1e-15)
    data.thruster_force[:] = -1.0  # negative commands clamp to zero
    data.forward()
    assert np.all(data.a_feedback == 0.0)


def test_user_xfrc_applied_is_added_to_orbit_loads_not_overwritten():
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_gravity_gradient")
    data = make(spec, OrbitInit(R_eci=[6000.0, 3000.0, 2000.0], V_eci=[0, 7, 0]))
    set_attitude(data, np.array([0.9, 0.2, -0.3, 0.25]) / np.linalg.norm([0.9, 0.2, -0.3, 0.25]))
    data.xfrc_applied[0, 1] = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
    data.forward()
    applied = applied_generalized_force(data, data.xfrc_applied[0, 1] + data.wrench_buffer[0, 1])
    np.testing.assert_allclose(
        data.backend.bind("qfrc_applied")[0], applied, rtol=1e-13, atol=1e-15
    )
    data.step()
    assert np.all(data.xfrc_applied[0, 1] == [1.0, 2.0, 3.0, 0.1, 0.2, 0.3])


def applied_generalized_force(data, wrench: np.ndarray, world: int = 0) -> np.ndarray:
    """MuJoCo's own mapping (mj_applyFT at the COM) of a body-1 wrench, at world's state."""
    import mujoco

    m = data.model.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = data.bind("qpos")[world]
    mujoco.mj_forward(m, d)
    qfrc = np.zeros(m.nv)
    mujoco.mj_applyFT(m, d, wrench[:3].copy(), wrench[3:].copy(), d.xipos[1].copy(), 1, qfrc)
    return qfrc


def test_loads_reach_mujoco_as_the_generalized_forces_mj_applyft_gives():
    """Free-floating scenes on the CPU get their loads as qfrc_applied (MuJoCo's xfrc
    mapping costs ~20% of a step); with an offset COM, a rotated body and a user
    generalized force, the result is MuJoCo's mj_applyFT of the same wrench, and the
    accelerations equal those of the same wrench given as xfrc_applied."""
    import mujoco

    inertial = (
        '<inertial pos="0.12 -0.05 0.08" mass="80" fullinertia="12 9 6 0.8 -0.5 0.3"/>'
        '<geom type="sphere" size="0.1" contype="0" conaffinity="0" mass="0"/>'
    )
    spec = SimSpec.from_xml_string(free_body_xml(inertial=inertial))
    spec.orbit.add_surface(
        SurfaceCfg(
            name="panel",
            body_name="spacecraft",
            normal_body=[0.6, 0.8, 0.0],
            area=3.0,
            center_of_pressure_body=[0.4, 0.1, -0.2],
        )
    )
    spec.orbit.add_thruster(
        ThrusterCfg(
            name="t",
            body_name="spacecraft",
            position_body=[0.3, 0.2, -0.1],
            direction_body=[0, 0, 1],
            max_force=2.0,
        )
    )
    data = make(spec, OrbitInit(R_eci=[6000.0, 3000.0, 2000.0], V_eci=[0, 7, 0]))
    q = np.array([0.7, -0.1, 0.5, 0.3])
    data.bind("qvel")[0] = [0.1, -0.2, 0.05, 0.02, -0.03, 0.01]
    set_attitude(data, q / np.linalg.norm(q))
    data.thruster_force[:] = 1.5
    data.bind("qfrc_applied")[0] = [0.5, -0.25, 0.125, 0.01, 0.02, -0.03]  # the user's own
    data.forward()
    assert np.all(data.backend.bind("xfrc_applied") == 0.0)
    wrench = data.wrench_buffer[0, 1]
    assert np.abs(wrench[3:]).max() > 1e-2  # thrust off the COM: a real torque
    expected = applied_generalized_force(data, wrench) + data.bind("qfrc_applied")[0]
    np.testing.assert_allclose(
        data.backend.bind("qfrc_applied")[0], expected, rtol=1e-13, atol=1e-15
    )
    # The same loads as xfrc_applied through MuJoCo give the same accelerations.
    m = data.model.mj_model
    ref = mujoco.MjData(m)
    ref.qpos[:], ref.qvel[:] = data.bind("qpos")[0], data.bind("qvel")[0]
    ref.xfrc_applied[1] = wrench
    ref.qfrc_applied[:] = data.bind("qfrc_applied")[0]
    mujoco.mj_forward(m, ref)
    mine = mujoco.MjData(m)
    mine.qpos[:], mine.qvel[:] = ref.qpos, ref.qvel
    mine.qfrc_applied[:] = data.backend.bind("qfrc_applied")[0]
    mujoco.mj_forward(m, mine)
    np.testing.assert_allclose(mine.qacc, ref.qacc, rtol=1e-12, atol=1e-14)
