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


def test_orbit_coupled_tumble_keeps_energy_with_the_loads_off():
    """End to end through OrbitData (the orbit layer running, its torques switched off)."""
    spec = SimSpec.from_xml_path(asset_path("cubesat_3u"))
    for switch in ("use_j2", "use_gravity_gradient", "use_drag", "use_srp", "use_magnetic"):
        setattr(spec.orbit, switch, False)
    model = spec.compile(timestep=0.1)
    data = model.make_data(nworld=2, orbit=OrbitInit(R_eci=[6778.137, 0, 0], V_eci=[0, 7.6686, 0]))
    data.bind("qvel")[:, 3:6] = TUMBLE_RAD_S
    data.forward()
    m, d = model.mj_model, mujoco.MjData(model.mj_model)

    def state(world: int) -> tuple[np.ndarray, float]:
        d.qpos[:] = data.bind("qpos")[world]
        d.qvel[:] = data.bind("qvel")[world]
        return momentum_and_energy(m, d)

    H0, E0 = state(0)
    data.step(6000)
    for world in range(2):
        H, E = state(world)
        assert abs(np.linalg.norm(H) / np.linalg.norm(H0) - 1) < TOL
        assert abs(E / E0 - 1) < TOL
