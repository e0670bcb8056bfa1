"""Per-stage (fourth-order) orbit coupling against independent numpy RK4 references.

The references integrate the absolute equations of the same physics with the classic RK4,
evaluating every load at every stage: drag on a plate (exponential co-rotating atmosphere)
on a point-mass orbit, and a rigid body's attitude under the gravity-gradient torque.
orbitlab integrates the chief and the body's motion relative to it; the two descriptions
are related linearly, so the coupled RK4 is the same scheme and agrees to round-off.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import MU, RE, free_body_xml, only

from orbitlab import OrbitInit, SimSpec, SurfaceCfg
from orbitlab.sim.stages import PositionRates, quat_rate

ALT_KM = 300.0
PERIOD_S = float(round(2 * np.pi * np.sqrt((RE + ALT_KM) ** 3 / MU)))  # 5431 s
PLATE_AREA_M2 = 20.0


def rk4(f, y: np.ndarray, dt: float, steps: int) -> np.ndarray:
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def circular() -> OrbitInit:
    r = RE + ALT_KM
    return OrbitInit(R_eci=[r, 0.0, 0.0], V_eci=[0.0, np.sqrt(MU / r), 0.0])


# ------------------------------------------------------------------ drag
def drag_model(coupling: str, dt: float):
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_drag")
    spec.orbit.coupling = coupling
    spec.orbit.add_surface(
        SurfaceCfg(name="plate", body_name="spacecraft", normal_body=[0, 1, 0], area=PLATE_AREA_M2)
    )
    return spec.compile(timestep=dt)


def drag_orbitlab(coupling: str, dt: float, duration_s: float = PERIOD_S) -> np.ndarray:
    """Absolute position (m) of the plate-carrying body after `duration_s`."""
    model = drag_model(coupling, dt)
    data = model.make_data(nworld=1, orbit=circular())
    data.step(round(duration_s / dt))
    return data.R[0] * 1e3 + data.bind("qpos")[0, :3]


def drag_reference(dt: float, duration_s: float = PERIOD_S) -> np.ndarray:
    """The same body as a point mass: two-body gravity plus plate drag, RK4 at dt."""
    model = drag_model("held", dt)
    row = model.rows["surfaces"][0]
    cb = model.orbit.central_body
    omega, mass, normal = np.asarray(cb.omega), model.mj_model.body_mass[1], np.array([0, 1.0, 0])

    def f(y):
        r, v = y[:3], y[3:]  # km, km/s
        rn = np.linalg.norm(r)
        rho = cb.atmosphere_rho0 * np.exp(
            (cb.atmosphere_h0 - (rn - cb.radius)) / cb.atmosphere_scale_height
        )
        u = 1e3 * (v - np.cross(omega, r))  # m/s relative to the atmosphere
        force = -0.5 * rho * row["cd"] * row["area"] * max(0.0, normal @ u) * u  # N
        return np.concatenate([v, -MU * r / rn**3 + 1e-3 * force / mass])

    y0 = np.concatenate([circular().R_eci, circular().V_eci])
    return rk4(f, np.asarray(y0, dtype=float), dt, round(duration_s / dt))[:3] * 1e3


def test_drag_after_one_orbit_matches_the_per_stage_reference():
    """Per stage: within 1 cm of the reference (measured 3e-8 m); the held loads are off
    by ~15 cm at dt 1 s (first order), which the same bound rejects."""
    reference = drag_reference(1.0)
    assert np.linalg.norm(drag_orbitlab("stage", 1.0) - reference) < 0.01
    assert np.linalg.norm(drag_orbitlab("held", 1.0) - reference) > 0.05


def test_drag_converges_at_fourth_order():
    """Halving dt divides the error by ~16 (reference: RK4 at dt 2.5 s, converged), over
    5440 s (a multiple of every dt here, about one orbit)."""
    duration = 5440.0
    reference = drag_reference(2.5, duration)
    errors = [
        np.linalg.norm(drag_orbitlab("stage", dt, duration) - reference) for dt in (40.0, 20.0)
    ]
    assert errors[1] > 1e-4  # well above round-off
    assert 12.0 < errors[0] / errors[1] < 20.0, errors


# ------------------------------------------------------------------ gravity gradient
INERTIA = np.array([10.0, 20.0, 30.0])
Q0 = np.array([0.9, 0.3, -0.2, 0.25]) / np.linalg.norm([0.9, 0.3, -0.2, 0.25])
OMEGA0 = np.array([1e-3, -2e-3, 1.5e-3])  # rad/s, body axes


def gg_orbitlab(coupling: str, dt: float) -> np.ndarray:
    """Body-axes rate (rad/s) after one orbit under the gravity-gradient torque."""
    xml = free_body_xml(
        timestep=dt, inertial='<inertial pos="0 0 0" mass="100" diaginertia="10 20 30"/>'
    )
    spec = only(SimSpec.from_xml_string(xml), "use_gravity_gradient")
    spec.orbit.coupling = coupling
    data = spec.compile().make_data(nworld=1, orbit=circular())
    data.bind("qpos")[0, 3:7] = Q0
    data.bind("qvel")[0, 3:6] = OMEGA0
    data.forward()
    data.step(round(PERIOD_S / dt))
    return data.bind("qvel")[0, 3:6].copy()


def quat_mul(a, b):
    aw, av, bw, bv = a[0], a[1:], b[0], b[1:]
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def rotation(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def gg_reference(dt: float) -> np.ndarray:
    """Euler's equations with tau = 3 mu/r^3 r_b x (I r_b), q' = q (x) (0, omega) / 2."""

    def f(y):
        r, v, q, w = y[:3], y[3:6], y[6:10], y[10:]
        rn = np.linalg.norm(r)
        r_body = rotation(q).T @ (r / rn)
        torque = 3 * MU / rn**3 * np.cross(r_body, INERTIA * r_body)  # mu/r^3 in s^-2: N m
        w_dot = (torque - np.cross(w, INERTIA * w)) / INERTIA
        q_dot = 0.5 * quat_mul(q, np.concatenate([[0.0], w]))
        return np.concatenate([v, -MU * r / rn**3, q_dot, w_dot])

    y0 = np.concatenate([circular().R_eci, circular().V_eci, Q0, OMEGA0]).astype(float)
    return rk4(f, y0, dt, round(PERIOD_S / dt))[10:]


def test_gravity_gradient_attitude_after_one_orbit_matches_the_reference():
    """Per stage: the rate within 1e-8 rad/s of the reference; held: off by more."""
    reference = gg_reference(1.0)
    stage_error = np.linalg.norm(gg_orbitlab("stage", 1.0) - reference)
    held_error = np.linalg.norm(gg_orbitlab("held", 1.0) - reference)
    assert stage_error < 1e-8, stage_error
    assert held_error > 10 * stage_error, (held_error, stage_error)


# ------------------------------------------------------------------ building blocks
def test_quaternion_rates_are_the_derivative_of_mujocos_integration():
    import mujoco

    m = mujoco.MjModel.from_xml_string(free_body_xml())
    rng = np.random.default_rng(3)
    qpos = np.tile(m.qpos0, (5, 1))
    qpos[:, 3:7] = rng.normal(size=(5, 4))
    qpos[:, 3:7] /= np.linalg.norm(qpos[:, 3:7], axis=1, keepdims=True)
    qvel = rng.normal(size=(5, m.nv))
    rates = PositionRates(m)(qpos, qvel)
    np.testing.assert_array_equal(rates[:, :3], qvel[:, :3])
    eps = 1e-7  # the rate is the derivative of MuJoCo's own position integration
    for w in range(5):
        moved = qpos[w].copy()
        mujoco.mj_integratePos(m, moved, qvel[w], eps)
        np.testing.assert_allclose(
            rates[w, 3:7], (moved[3:7] - qpos[w, 3:7]) / eps, rtol=0, atol=1e-6
        )
    assert np.array_equal(quat_rate(qpos[:1, 3:7], np.zeros((1, 3))), np.zeros((1, 4)))


def test_gravity_gradient_attitude_converges_at_fourth_order():
    """Halving dt divides the rate error by ~16 (reference: RK4 at dt 0.5 s)."""
    global PERIOD_S
    saved, PERIOD_S = PERIOD_S, 5440.0  # a multiple of every dt here
    try:
        reference = gg_reference(0.5)
        errors = [np.linalg.norm(gg_orbitlab("stage", dt) - reference) for dt in (40.0, 20.0)]
    finally:
        PERIOD_S = saved
    assert 12.0 < errors[0] / errors[1] < 20.0, errors


def test_stage_coupling_states_its_requirements():
    spec = SimSpec.from_xml_string(free_body_xml(integrator="Euler"))
    spec.orbit.coupling = "stage"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # explicit Euler, on purpose
        model = spec.compile()
    with pytest.raises(ValueError, match=r"orbit.coupling='stage' needs integrator RK4"):
        model.make_data(nworld=1, orbit=circular())
    spec = SimSpec.from_xml_string(free_body_xml())
    spec.orbit.coupling = "staged"
    with pytest.raises(ValueError, match="orbit.coupling must be 'stage' or 'held', got 'staged'"):
        spec.compile().make_data(nworld=1, orbit=circular())
