"""The default integrator keeps the energy and angular momentum of tumbling spacecraft.

Energy and angular momentum are computed here from MuJoCo's body poses and the model's
masses and inertias (not from MuJoCo's own energy), about the composite COM.
"""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest

from orbitlab import OrbitInit, SimSpec
from orbitlab.scene.catalog import asset_path
from orbitlab.sim import spec as spec_module

RIGID_FREE_FLYERS = (
    "free_body",
    "cubesat_3u",
    "cubesat_6u",
    "formation_flyer",
    "docking_chaser",
    "docking_target",
    "station_module",
)
"""Every shipped asset that is one rigid body on a free joint."""
TUMBLE_RAD_S = np.array([0.12, -0.09, 0.10])  # ~10 deg/s about a non-principal axis
TOL = 1e-6
"""Relative drift allowed. RK4 measures 1e-14 - 3e-11 on these cases, explicit Euler
1.6e-2 - 0.5 (and implicitfast 1.6e-2 - 0.3): 1e-6 separates the two by four decades
either way."""


def momentum_and_energy(m: mujoco.MjModel, d: mujoco.MjData) -> tuple[np.ndarray, float]:
    """Angular momentum about the COM (world frame, kg m^2/s) and kinetic energy of the
    motion about the COM (J) of a rigid tree on a free joint (body 1 is its root)."""
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    omega = d.xmat[1].reshape(3, 3) @ d.qvel[3:6]  # the free joint's rate is in body axes
    mass = m.body_mass[1:]
    com = (mass[:, None] * d.xipos[1:]).sum(axis=0) / mass.sum()
    H, E = np.zeros(3), 0.0
    for b in range(1, m.nbody):
        R = d.ximat[b].reshape(3, 3)
        inertia_world = R @ np.diag(m.body_inertia[b]) @ R.T
        r = d.xipos[b] - com
        v = np.cross(omega, r)
        H += inertia_world @ omega + m.body_mass[b] * np.cross(r, v)
        E += 0.5 * (omega @ inertia_world @ omega + m.body_mass[b] * v @ v)
    return H, E


def tumble(m: mujoco.MjModel, rate_rad_s, duration_s: float) -> tuple[float, float]:
    """(relative |H| drift, relative energy drift) of a torque-free tumble in MuJoCo."""
    d = mujoco.MjData(m)
    d.qvel[3:6] = rate_rad_s
    H0, E0 = momentum_and_energy(m, d)
    for _ in range(round(duration_s / m.opt.timestep)):
        mujoco.mj_step(m, d)
    H, E = momentum_and_energy(m, d)
    return abs(np.linalg.norm(H) / np.linalg.norm(H0) - 1.0), abs(E / E0 - 1.0)


def compiled(name: str, timestep: float, integrator: str | None = None) -> mujoco.MjModel:
    spec = SimSpec.from_xml_path(asset_path(name))
    spec.integrator = integrator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return spec.compile(timestep=timestep).mj_model


@pytest.mark.parametrize("name", RIGID_FREE_FLYERS)
def test_default_compile_keeps_a_tumble_for_10_minutes_at_dt_0_1(name):
    m = compiled(name, 0.1)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    dH, dE = tumble(m, TUMBLE_RAD_S, 600.0)
    assert dH < TOL and dE < TOL, (dH, dE)


def test_explicit_euler_fails_the_same_check():
    """The check above can fail: the integrator MuJoCo defaults to drifts 23 % / 49 %."""
    dH, dE = tumble(compiled("cubesat_3u", 0.1, "Euler"), TUMBLE_RAD_S, 600.0)
    assert dH > 1e-2 and dE > 1e-1, (dH, dE)


def test_tumbling_box_keeps_its_angular_momentum():
    """The 1.0 x 0.6 x 0.4 m box at (2, 1.3, 0.7) rad/s for 30 s at dt 0.01 s (measured
    4.8e-11; Euler 18 %, implicitfast 14 %)."""
    dH, dE = tumble(compiled("free_body", 0.01), [2.0, 1.3, 0.7], 30.0)
    assert dH < TOL and dE < TOL, (dH, dE)


def test_tumble_converges_at_fourth_order():
    """Halving dt divides the rate error after 30 s by ~16 (RK4); reference at dt/16."""

    def final_rate(timestep: float) -> np.ndarray:
        m = compiled("free_body", timestep)
        d = mujoco.MjData(m)
        d.qvel[3:6] = [2.0, 1.3, 0.7]
        for _ in range(round(30.0 / timestep)):
            mujoco.mj_step(m, d)
        return d.qvel[3:6].copy()

    reference = final_rate(0.04 / 16)
    errors = [np.linalg.norm(final_rate(dt) - reference) for dt in (0.04, 0.02)]
    assert 12.0 < errors[0] / errors[1] < 20.0, errors


def test_explicit_choices_are_kept_and_euler_warns_once(monkeypatch):
    monkeypatch.setattr(spec_module, "_warned_euler", False)
    xml = asset_path("free_body").read_text()
    with_option = xml.replace(
        '<option timestep="0.01"/>', '<option timestep="0.01" integrator="implicitfast"/>'
    )
    assert with_option != xml
    assert (
        SimSpec.from_xml_string(with_option).compile().mj_model.opt.integrator
        == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    )
    euler = SimSpec.from_xml_string(xml)
    euler.integrator = "Euler"
    with pytest.warns(UserWarning, match=r"explicit Euler .* \+49 %"):
        euler.compile()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert euler.compile().mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    bad = SimSpec.from_xml_string(xml)
    bad.integrator = "rk4"
    with pytest.raises(
        ValueError, match="integrator must be one of Euler, RK4, implicit, implicitfast, got 'rk4'"
    ):
        bad.compile()


def test_scenes_inherit_rk4():
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks import task_entry

    env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-MTQ").env_cfg, num_envs=1))
    try:
        assert env.scene.mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    finally:
        env.close()


def orbit_coupled_tumble(name: str, gm_scale: float) -> tuple[float, float]:
    """(|H - H0| / |H0|, relative energy drift) of a 600 s tumble at dt 0.1 s through
    OrbitData (the default per-stage coupling), every load switch off and the central
    body's gm scaled by `gm_scale` (the chief on its circular orbit at 400 km).

    "Every switch off" leaves the differential gravity on each body (the Encke point-mass
    difference between a body's COM and the chief): for one body at the origin it is ~0,
    but for an asset of several bodies it is the tidal force between them, whose torque
    about the composite COM is the composite's gravity-gradient torque, proportional to gm.
    """
    spec = SimSpec.from_xml_path(asset_path(name))
    for switch in ("use_j2", "use_gravity_gradient", "use_drag", "use_srp", "use_magnetic"):
        setattr(spec.orbit, switch, False)
    spec.orbit.central_body.gm *= gm_scale
    model = spec.compile(timestep=0.1)
    r = spec.orbit.central_body.radius + 400.0
    speed = np.sqrt(spec.orbit.central_body.gm / r)
    data = model.make_data(nworld=2, orbit=OrbitInit(R_eci=[r, 0, 0], V_eci=[0, speed, 0]))
    assert data.coupling == "stage"
    data.bind("qvel")[:, 3:6] = TUMBLE_RAD_S
    data.forward()
    m, d = model.mj_model, mujoco.MjData(model.mj_model)

    def state(world: int) -> tuple[np.ndarray, float]:
        d.qpos[:] = data.bind("qpos")[world]
        d.qvel[:] = data.bind("qvel")[world]
        return momentum_and_energy(m, d)

    H0, E0 = state(0)
    data.step(6000)
    drifts = [state(world) for world in range(2)]
    return (
        max(np.linalg.norm(H - H0) / np.linalg.norm(H0) for H, _ in drifts),
        max(abs(E / E0 - 1) for _, E in drifts),
    )


@pytest.mark.parametrize("name", RIGID_FREE_FLYERS)
def test_orbit_coupled_tumble_keeps_energy_and_momentum_with_gravity_scaled_away(name):
    """With every load off and gm scaled by 1e-12 (no differential gravity left), the
    orbit-coupled step keeps H to 2e-9 and energy to 1e-9 over 10 minutes (measured: H
    <= 4.4e-10, RK4's truncation of its direction; energy <= 4e-11)."""
    dH, dE = orbit_coupled_tumble(name, 1e-12)
    assert dH < 2e-9 and dE < 1e-9, (dH, dE)


@pytest.mark.parametrize("name", ["docking_chaser", "docking_target"])
def test_differential_gravity_is_what_still_turns_a_multibody_asset(name):
    """The loads that "all off" keeps: with Earth's gm the two-body docking assets' H moves
    by 1.3e-5 (chaser) and 9.6e-5 (target) over 10 minutes, the tidal torque between their
    bodies; with gm scaled away the same tumble keeps H to 1e-10 (test above)."""
    dH, _ = orbit_coupled_tumble(name, 1.0)
    assert dH > 1e-6, dH
