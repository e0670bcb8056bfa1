"""Per-stage (fourth-order) orbit coupling against independent numpy RK4 references.

The references integrate the absolute equations of the same physics with the classic RK4,
evaluating every load at every stage: drag on a plate (exponential co-rotating atmosphere)
on a point-mass orbit, and a rigid body's attitude under the gravity-gradient torque.
orbitlab integrates the chief and the body's motion relative to it; the two descriptions
are related linearly, so the coupled RK4 is the same scheme and agrees to round-off.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import warp as wp
from conftest import MU, RE, free_body_xml, only

from orbitlab import OrbitInit, SimSpec, SurfaceCfg
from orbitlab.sim.stages import quat_rate

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


def host(array) -> np.ndarray:
    """A host copy of a field on either backend (numpy on 'cpu', Warp on 'warp')."""
    return np.array(array if isinstance(array, np.ndarray) else array.numpy())


def make_data(model, device: str | None):
    """One world on a circular orbit: CPU backend (device None) or MuJoCo-Warp on `device`."""
    if device is None:
        return model.make_data(nworld=1, orbit=circular())
    return model.make_data(nworld=1, orbit=circular(), backend="warp", device=device)


def drag_orbitlab(
    coupling: str, dt: float, duration_s: float = PERIOD_S, device: str | None = None
) -> np.ndarray:
    """Absolute position (m) of the plate-carrying body after `duration_s`."""
    data = make_data(drag_model(coupling, dt), device)
    data.step(round(duration_s / dt))
    return host(data.R)[0] * 1e3 + host(data.bind("qpos"))[0, :3]


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


def gg_orbitlab(coupling: str, dt: float, device: str | None = None) -> np.ndarray:
    """Body-axes rate (rad/s) after one orbit under the gravity-gradient torque."""
    xml = free_body_xml(
        timestep=dt, inertial='<inertial pos="0 0 0" mass="100" diaginertia="10 20 30"/>'
    )
    spec = only(SimSpec.from_xml_string(xml), "use_gravity_gradient")
    spec.orbit.coupling = coupling
    data = make_data(spec.compile(), device)
    for name, values in (("qpos", Q0), ("qvel", OMEGA0)):
        field = data.bind(name)
        array = host(field)
        array[0, 3 : 3 + len(values)] = values
        if isinstance(field, np.ndarray):
            field[...] = array
        else:
            field.assign(array)
    data.forward()
    data.step(round(PERIOD_S / dt))
    return host(data.bind("qvel"))[0, 3:6]


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
@wp.kernel
def _quat_rates(
    q: wp.array(dtype=wp.vec4d), omega: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec4d)
):
    i = wp.tid()
    out[i] = quat_rate(q[i], omega[i])


def test_quaternion_rates_are_the_derivative_of_mujocos_integration():
    import mujoco

    m = mujoco.MjModel.from_xml_string(free_body_xml())
    rng = np.random.default_rng(3)
    quats = rng.normal(size=(5, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    omegas = rng.normal(size=(5, 3))
    rates = wp.zeros(5, dtype=wp.vec4d, device="cpu")
    wp.launch(
        _quat_rates,
        dim=5,
        inputs=[wp.array(quats, dtype=wp.vec4d), wp.array(omegas, dtype=wp.vec3d), rates],
        device="cpu",
    )
    eps = 1e-7  # the rate is the derivative of MuJoCo's own position integration
    for w in range(5):
        qpos = m.qpos0.copy()
        qpos[3:7] = quats[w]
        moved = qpos.copy()
        mujoco.mj_integratePos(m, moved, np.concatenate([np.zeros(3), omegas[w]]), eps)
        # finite difference: O(eps |omega|^2) truncation, ~1e-7 round-off over eps
        np.testing.assert_allclose(
            rates.numpy()[w], (moved[3:7] - qpos[3:7]) / eps, rtol=0, atol=1e-6
        )


def gg_errors(dts: tuple[float, ...], device: str | None = None) -> list[float]:
    """Rate errors (rad/s) of the per-stage mode at each dt against RK4 at dt 0.5 s, over
    5440 s (a multiple of every dt here, about one orbit)."""
    global PERIOD_S
    saved, PERIOD_S = PERIOD_S, 5440.0
    try:
        reference = gg_reference(0.5)
        return [np.linalg.norm(gg_orbitlab("stage", dt, device) - reference) for dt in dts]
    finally:
        PERIOD_S = saved


def test_gravity_gradient_attitude_converges_at_fourth_order():
    """Halving dt divides the rate error by ~16 (reference: RK4 at dt 0.5 s)."""
    errors = gg_errors((40.0, 20.0))
    assert 12.0 < errors[0] / errors[1] < 20.0, errors


def test_stage_coupling_is_the_default_and_states_its_requirements():
    assert SimSpec.from_xml_string(free_body_xml()).compile().make_data().coupling == "stage"
    spec = SimSpec.from_xml_string(free_body_xml())
    spec.orbit.orbit_dt = 1.0
    with pytest.raises(ValueError, match=r"orbit.coupling='stage' \(the default\) needs orbit_dt"):
        spec.compile(timestep=0.1).make_data(nworld=1, orbit=circular())
    spec.orbit.coupling = "held"
    assert spec.compile(timestep=0.1).make_data(nworld=1, orbit=circular()).coupling == "held"
    spec = SimSpec.from_xml_string(free_body_xml())
    spec.orbit.coupling = "staged"
    with pytest.raises(ValueError, match="orbit.coupling must be 'stage' or 'held', got 'staged'"):
        spec.compile().make_data(nworld=1, orbit=circular())


def test_stage_coupling_with_a_one_stage_integrator_is_the_held_step():
    """Euler has one stage, the step's start: 'stage' and 'held' are the same step there
    (bit-identical)."""
    runs = []
    for coupling in ("stage", "held"):
        spec = only(SimSpec.from_xml_string(free_body_xml(integrator="Euler")), "use_drag")
        spec.orbit.coupling = coupling
        spec.orbit.add_surface(
            SurfaceCfg(name="plate", body_name="spacecraft", normal_body=[0, 1, 0], area=2.0)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # explicit Euler, on purpose
            data = spec.compile(timestep=0.5).make_data(nworld=1, orbit=circular())
        assert data.coupling == "held"
        data.bind("qvel")[0, 3:] = [0.01, -0.02, 0.03]
        data.step(50)
        runs.append((data.bind("qpos").copy(), data.bind("qvel").copy(), data.R.copy()))
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ eclipse seasons
def eclipse_model(dt: float, penumbra: bool = True):
    """J2, drag and SRP on a 100 kg box with four 4 m^2 plates (no torques: the plates'
    centres of pressure at the COM), the default coupling; conical shadow or cylinder."""
    spec = only(SimSpec.from_xml_string(free_body_xml()), "use_j2", "use_drag", "use_srp")
    spec.orbit.use_penumbra = penumbra
    for name, normal in (("a", (0, 1, 0)), ("b", (0, -1, 0)), ("c", (1, 0, 0)), ("d", (-1, 0, 0))):
        spec.orbit.add_surface(
            SurfaceCfg(name=name, body_name="spacecraft", normal_body=normal, area=4.0)
        )
    return spec.compile(timestep=dt)


def eclipse_position(dt: float, duration_s: float, penumbra: bool = True) -> np.ndarray:
    """Absolute position (m) after `duration_s` on a 400 km equatorial orbit that crosses
    the Earth's shadow every revolution (epoch 1e8 s after J2000)."""
    from conftest import circular_orbit

    data = eclipse_model(dt, penumbra).make_data(orbit=circular_orbit(alt_km=400.0, t=1e8))
    data.step(round(duration_s / dt))
    return host(data.R)[0] * 1e3 + host(data.bind("qpos"))[0, :3]


def eclipse_errors(duration_s: float, penumbra: bool = True) -> list[float]:
    """Position errors (m) at dt 10, 5, 2 and 1 s against the same run at dt 0.5 s."""
    reference = eclipse_position(0.5, duration_s, penumbra)
    return [
        float(np.linalg.norm(eclipse_position(dt, duration_s, penumbra) - reference))
        for dt in (10.0, 5.0, 2.0, 1.0)
    ]


def test_error_through_an_eclipse_falls_monotonically_with_dt():
    """One revolution (5560 s) through the shadow: the conical shadow is continuous, so the
    per-stage error falls at every halving (measured 1.5e-2, 1.1e-3, 3.9e-5, 7.7e-6 m)."""
    errors = eclipse_errors(5560.0)
    assert all(a > b for a, b in itertools.pairwise(errors)), errors
    assert errors[-1] < 1e-4, errors


@pytest.mark.slow
def test_one_day_of_j2_drag_srp_and_eclipses_converges_within_a_decimetre():
    """A day (86400 s, ~16 shadow crossings): within 1 mm at dt 1 s (measured 1.8e-4 m; the
    physics target is 0.1 m),
    falling from dt 10 s to 1 s (0.46, 0.025, 2.4e-4, 1.8e-4 m). The hard cylinder switches
    SRP inside a step and stalls at ~7e-2 m from dt 2 s on (measured 0.36, 0.18, 0.067,
    0.070 m): the bound on its dt-1 s error shows this test can tell them apart."""
    errors = eclipse_errors(86400.0)
    assert all(a > b for a, b in itertools.pairwise(errors)), errors
    assert errors[-1] < 1e-3, errors
    cylinder = eclipse_errors(86400.0, penumbra=False)
    assert cylinder[-1] > 10 * errors[-1], cylinder


# ------------------------------------------------------------------ MuJoCo-Warp backend
# The same stage kernel around mujoco_warp.forward. MuJoCo-Warp evaluates in float32, while
# the stepper integrates the state in float64 (see orbitlab.sim.stages.StepStart). A step
# costs ~50 ms on Warp's CPU device (four forwards of ~90 kernel launches each), so the
# one-orbit cases at dt 1 s (5431 steps, ~4-5 min each there) are marked slow.


def test_warp_gravity_gradient_attitude_converges_at_fourth_order(warp_device):
    """As on the CPU: halving dt divides the rate error by ~16 (measured 15.5). At dt 80 and
    40 s (204 steps in all) the errors, 3.7e-7 and 2.4e-8 rad/s, stand far above the ~3e-10
    rad/s that MuJoCo-Warp's float32 evaluation adds (the dt-20 s error differs by that
    much between the backends)."""
    pytest.importorskip("mujoco_warp")
    errors = gg_errors((80.0, 40.0), warp_device)
    assert 12.0 < errors[0] / errors[1] < 20.0, errors


def test_warp_drag_is_the_same_fourth_order_scheme(warp_device):
    """At dt 40 s over 5440 s (136 steps) the per-stage step equals the reference's RK4 of
    the same dt to 1e-5 m (measured 8e-8 m), while that scheme is itself 5.7 m off the
    converged orbit there and held loads would be metres off: MuJoCo-Warp runs the same
    fourth-order scheme."""
    pytest.importorskip("mujoco_warp")
    duration, dt = 5440.0, 40.0
    error = np.linalg.norm(
        drag_orbitlab("stage", dt, duration, warp_device) - drag_reference(dt, duration)
    )
    assert error < 1e-5, error


@pytest.mark.slow
def test_warp_drag_after_one_orbit_matches_the_per_stage_reference(warp_device):
    """As on the CPU: within 1 cm of the reference at dt 1 s after one orbit (the held loads
    are off by ~15 cm there)."""
    pytest.importorskip("mujoco_warp")
    error = np.linalg.norm(drag_orbitlab("stage", 1.0, device=warp_device) - drag_reference(1.0))
    assert error < 0.01, error


@pytest.mark.slow
def test_warp_gravity_gradient_attitude_after_one_orbit_matches_the_reference(warp_device):
    """As on the CPU: the rate within 1e-8 rad/s of the reference after one orbit at dt 1 s
    (held: 6.3e-6 rad/s); float32 evaluation of the stage derivatives, float64 state."""
    pytest.importorskip("mujoco_warp")
    error = np.linalg.norm(gg_orbitlab("stage", 1.0, warp_device) - gg_reference(1.0))
    assert error < 1e-8, error


# ------------------------------------------------------------------ health
def broken_and_clean(device: str | None) -> tuple:
    """Five worlds with drag and a wheel, per-stage coupling, 20 steps: a clean run and one
    with a NaN body velocity (world 1), a chief inside the Earth (2) and a NaN wheel
    torque (3)."""
    from orbitlab import ReactionWheelCfg
    from orbitlab.testdata import FREE_BODY_XML

    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    spec.orbit.coupling = "stage"
    spec.orbit.add_surface(
        SurfaceCfg(name="panel", body_name="spacecraft", normal_body=[0, 1, 0], area=2.0)
    )
    spec.orbit.add_reaction_wheel(
        ReactionWheelCfg(name="rw", body_name="spacecraft", axis_body=[0, 0, 1], inertia=2e-3)
    )
    model = spec.compile(timestep=0.1)
    runs = []
    for spoil in (False, True):
        kwargs = {} if device is None else {"backend": "warp", "device": device}
        data = model.make_data(nworld=5, orbit=circular(), **kwargs)
        edits = {"qvel": host(data.bind("qvel")), "R": host(data.R)}
        edits["qvel"][:, 3:6] = [0.1, 0.05, -0.02]
        torque = np.full((5, 1), 1e-3)
        if spoil:
            edits["qvel"][1, 0] = np.nan
            edits["R"][2] = [6000.0, 0.0, 0.0]
            torque[3] = np.nan
        for field, values in (
            (data.bind("qvel"), edits["qvel"]),
            (data.R, edits["R"]),
            (data.wheel_torque, torque),
        ):
            if isinstance(field, np.ndarray):
                field[...] = values
            else:
                field.assign(values)
        data.step(20)
        runs.append(data)
    return runs


def test_stage_coupling_freezes_broken_worlds_and_isolates_them():
    assert_frozen_and_isolated(*broken_and_clean(None))


def test_warp_stage_coupling_freezes_broken_worlds_and_isolates_them(warp_device):
    pytest.importorskip("mujoco_warp")
    assert_frozen_and_isolated(*broken_and_clean(warp_device))


def assert_frozen_and_isolated(clean, broken) -> None:
    """Flagged with their reasons, their chief and clock frozen, the NaN kept in its world,
    and the healthy worlds bit-identical to a clean run."""
    from orbitlab.sim import health

    assert broken.unhealthy() == {
        1: health.describe(health.NONFINITE_STATE),
        2: health.describe(health.BELOW_SURFACE),
        3: health.describe(health.NONFINITE_COMMAND),
    }
    for name in ("qpos", "qvel"):
        np.testing.assert_array_equal(
            host(broken.bind(name))[[0, 4]], host(clean.bind(name))[[0, 4]]
        )
    np.testing.assert_array_equal(host(broken.R)[[0, 4]], host(clean.R)[[0, 4]])
    np.testing.assert_array_equal(
        host(broken.wheel_momentum)[[0, 4]], host(clean.wheel_momentum)[[0, 4]]
    )
    assert np.all(np.isfinite(host(broken.R)))
    np.testing.assert_array_equal(host(broken.t)[1:4], np.zeros(3) + circular().resolved_time())
    assert host(broken.t)[0] == pytest.approx(circular().resolved_time() + 2.0)
