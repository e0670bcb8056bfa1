"""The MuJoCo-Warp backend (on the `warp_device` fixture's device) against the CPU backend.

MuJoCo-Warp keeps the multibody state in float32, so states agree to float32
accuracy; the orbit layer (chief R, V, time) stays float64 on both backends.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import circular_orbit, free_body_xml

from orbitlab import (
    ControlMomentGyroCfg,
    MagneticDipoleCfg,
    MagnetorquerCfg,
    ReactionWheelCfg,
    SimSpec,
    SurfaceCfg,
    ThrusterCfg,
)

pytest.importorskip("mujoco_warp")


def spacecraft_spec(integrator: str = "Euler") -> SimSpec:
    spec = SimSpec.from_xml_string(free_body_xml(integrator=integrator, timestep=0.01))
    for name, normal in (("front", [0, 1, 0]), ("back", [0, -1, 0])):
        spec.orbit.add_surface(
            SurfaceCfg(
                name=name,
                body_name="spacecraft",
                normal_body=normal,
                center_of_pressure_body=[0.1, 0.0, 0.5],
                area=2.0,
            )
        )
    spec.orbit.add_magnetic_body(
        MagneticDipoleCfg(name="res", body_name="spacecraft", dipole_body=[0.0, 0.0, 0.05])
    )
    return spec


def set_host(data, name: str, values) -> None:
    """Write an MjData field on either backend (explicit host write on 'warp')."""
    field = data.bind(name)
    if isinstance(field, np.ndarray):
        field[...] = values
    else:
        host = field.numpy()
        host[...] = values
        field.assign(host)
    data.forward()


def host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.numpy()


def run_both(spec: SimSpec, nstep: int, setup=None, nworld: int = 3, *, device: str):
    model = spec.compile()
    datas = []
    for backend in ("cpu", "warp"):
        kwargs = {"device": device} if backend == "warp" else {}
        data = model.make_data(
            nworld=nworld,
            orbit=[circular_orbit(alt_km=350 + 20 * i) for i in range(nworld)],
            backend=backend,
            **kwargs,
        )
        if setup is not None:
            setup(data)
        data.step(nstep)
        datas.append(data)
    return datas


def assert_states_agree(cpu, warp, rel: float = 1e-4):
    for name in ("qpos", "qvel"):
        a, b = host(cpu.bind(name)), host(warp.bind(name))
        scale = max(np.abs(a).max(), 1e-12)
        # float32 state over 100 steps: 1e-4 of the state's scale.
        np.testing.assert_allclose(b, a, rtol=0, atol=rel * scale, err_msg=name)
    # The chief is float64 on both; only the float32 feedback differs: 1e-10 km.
    np.testing.assert_allclose(host(warp.R), cpu.R, rtol=0, atol=1e-10)
    np.testing.assert_allclose(host(warp.V), cpu.V, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(host(warp.t), cpu.t)


def test_tumbling_spacecraft_with_all_disturbances_matches_cpu(warp_device):
    def setup(data):
        set_host(data, "qvel", np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (data.nworld, 1)))

    cpu, warp = run_both(spacecraft_spec(), 100, setup, device=warp_device)
    assert np.abs(cpu.bind("qvel")[:, 3:]).max() > 0.01
    assert_states_agree(cpu, warp)
    np.testing.assert_allclose(
        host(warp.wrench_buffer),
        cpu.wrench_buffer,
        rtol=0,
        atol=1e-4 * np.abs(cpu.wrench_buffer).max(),
    )


def test_stage_coupling_matches_cpu(warp_device):
    """orbit.coupling='stage' (the loads at every RK4 stage) on both backends: the same
    stage kernel around each backend's forward dynamics, float32 evaluations on Warp."""
    spec = spacecraft_spec("RK4")
    spec.orbit.coupling = "stage"

    def setup(data):
        set_host(data, "qvel", np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (data.nworld, 1)))

    cpu, warp = run_both(spec, 50, setup, device=warp_device)
    assert np.abs(cpu.bind("qvel")[:, 3:]).max() > 0.01
    assert_states_agree(cpu, warp)


def spinning_wheel_spacecraft(coupling: str) -> SimSpec:
    """The disturbed spacecraft (RK4) with a wheel spinning at 200 rad/s, in `coupling`."""
    spec = spacecraft_spec("RK4")
    spec.orbit.coupling = coupling
    spec.orbit.add_reaction_wheel(
        ReactionWheelCfg(name="rw", body_name="spacecraft", axis_body=[0, 0, 1], inertia=2e-3)
    )
    return spec


def attitude_rate_gap(coupling: str, device: str, nstep: int = 1000) -> float:
    """Largest |body rate difference| (rad/s) between the backends after `nstep` steps of a
    tumbling spacecraft with a spinning wheel."""

    def setup(data):
        set_host(data, "qvel", np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (data.nworld, 1)))
        momentum = host(data.wheel_momentum)
        momentum[:] = 0.4  # N m s: 200 rad/s on 2e-3 kg m^2
        if isinstance(data.wheel_momentum, np.ndarray):
            data.wheel_momentum[:] = momentum
        else:
            data.wheel_momentum.assign(momentum)

    cpu, warp = run_both(spinning_wheel_spacecraft(coupling), nstep, setup, device=device)
    rates = host(cpu.bind("qvel"))[:, 3:]
    assert np.abs(rates - [0.05, -0.03, 0.02]).max() > 1e-3  # the wheel's gyroscopic torque
    return float(np.abs(host(warp.bind("qvel"))[:, 3:] - rates).max())


@pytest.mark.slow
@pytest.mark.parametrize("coupling", ["held", "stage"])
def test_both_backends_agree_on_attitude_in_either_coupling(warp_device, coupling):
    """1000 steps at dt 10 ms: the body rates agree to 1e-6 rad/s (measured 8.4e-9 per
    stage, 9.2e-8 held, on Warp's CPU device). Both backends hold a step's loads as the
    free joint's generalized force (body-axes torque); with MuJoCo-Warp holding them as
    world-axes xfrc_applied instead, the held step's rates were 6.7e-6 rad/s apart."""
    assert attitude_rate_gap(coupling, warp_device) < 1e-6


def test_free_drift_of_an_offset_body_matches_cpu(warp_device):
    def setup(data):
        set_host(data, "qpos", np.tile([10.0, -3.0, 2.0, 1, 0, 0, 0], (data.nworld, 1)))

    cpu, warp = run_both(spacecraft_spec(), 100, setup, device=warp_device)
    assert np.abs(cpu.bind("qvel")[:, :3]).max() > 1e-5  # differential gravity moved it
    assert_states_agree(cpu, warp)


def test_wheels_cmg_thrusters_and_magnetorquer_match_cpu(warp_device):
    spec = spacecraft_spec()
    spec.orbit.add_reaction_wheel(
        ReactionWheelCfg(
            name="rw", body_name="spacecraft", axis_body=[0, 0, 1], inertia=2e-3, max_torque=0.02
        )
    )
    spec.orbit.add_cmg(
        ControlMomentGyroCfg(
            name="cmg",
            body_name="spacecraft",
            gimbal_axis_body=[0, 1, 0],
            spin_axis_body=[1, 0, 0],
            rotor_momentum=0.2,
        )
    )
    spec.orbit.add_thruster(
        ThrusterCfg(
            name="thr",
            body_name="spacecraft",
            position_body=[0.5, 0.2, 0.0],
            direction_body=[-1, 0, 0],
            max_force=1.0,
        )
    )
    spec.orbit.add_magnetorquer(
        MagnetorquerCfg(name="mtq", body_name="spacecraft", axis_body=[0, 1, 0], max_dipole=0.5)
    )

    def setup(data):
        for name, value in (
            ("wheel_torque", 0.01),
            ("cmg_rate", 0.3),
            ("thruster_force", 0.5),
            ("mtq_dipole", 0.4),
        ):
            target = getattr(data, name)
            if isinstance(target, np.ndarray):
                target[:] = value
            else:
                target.fill_(value)

    cpu, warp = run_both(spec, 100, setup, device=warp_device)
    assert np.abs(cpu.bind("qvel")).max() > 1e-3
    assert_states_agree(cpu, warp)
    np.testing.assert_allclose(host(warp.wheel_momentum), cpu.wheel_momentum, rtol=1e-12)
    np.testing.assert_allclose(host(warp.cmg_angle), cpu.cmg_angle, rtol=1e-12)


@pytest.mark.slow
def test_contact_between_two_spacecraft_matches_cpu(warp_device):
    xml = """
<mujoco><option timestep="0.005"/><worldbody>
  <body name="chaser" pos="-0.6 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="20"/></body>
  <body name="target" pos="0.6 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="40"/></body>
</worldbody></mujoco>"""
    spec = SimSpec.from_xml_string(xml)
    spec.orbit.use_drag = spec.orbit.use_srp = False

    def setup(data):
        qvel = np.zeros((data.nworld, 12))
        qvel[:, 0] = 0.5  # chaser closes at 0.5 m/s: contact after ~1.4 s
        set_host(data, "qvel", qvel)

    cpu, warp = run_both(spec, 400, setup, nworld=2, device=warp_device)
    v = cpu.bind("qvel")
    assert v[0, 6] > 0.05  # the target was pushed: contact happened
    # Contact resolution in float32 vs float64: momentum and positions to 1e-3.
    np.testing.assert_allclose(host(warp.bind("qvel")), v, rtol=0, atol=1e-3 * np.abs(v).max())
    np.testing.assert_allclose(host(warp.bind("qpos")), cpu.bind("qpos"), rtol=0, atol=1e-3)


@pytest.mark.parametrize("coupling", ["stage", "held"])
def test_contact_buffer_overflow_is_an_error_not_silent(warp_device, coupling):
    """Either coupling: the per-stage step runs MuJoCo-Warp's forward only, whose overflow
    orbitlab flags itself (MuJoCo-Warp flags it when it advances)."""
    xml = """
<mujoco><option timestep="0.005"/><worldbody>
  <body name="a" pos="-0.26 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="20"/></body>
  <body name="b" pos="0.26 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="20"/></body>
</worldbody></mujoco>"""
    spec = SimSpec.from_xml_string(xml)
    spec.orbit.coupling = coupling
    model = spec.compile()
    from orbitlab.sim.contact_capacity import worst_case

    assert worst_case(model.mj_model)[0] == 8  # one box pair, up to 8 points
    data = model.make_data(backend="warp", device=warp_device, orbit=circular_orbit(), nconmax=1)
    set_host(data, "qvel", [[0.2, 0, 0, 0, 0, 0, -0.2, 0, 0, 0, 0, 0]])
    with pytest.raises(
        RuntimeError, match=r"buffer overflow in 1 world.*contacts_per_world \(now 1\)"
    ):
        data.step(20)


@pytest.mark.parametrize("coupling", ["held", "stage"])
def test_articulated_scene_uses_derived_fields_and_matches_cpu(warp_device, coupling):
    xml = """
<mujoco><option timestep="0.01"/><worldbody>
  <body name="hub"><freejoint/><geom type="sphere" size="0.2" mass="10"/>
    <body name="arm" pos="0.3 0 0"><joint type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.5 0.05 0.05" pos="0.5 0 0" mass="2"/></body>
  </body></worldbody></mujoco>"""
    spec = SimSpec.from_xml_string(xml)
    spec.orbit.add_surface(
        SurfaceCfg(name="plate", body_name="arm", normal_body=[0, 1, 0], area=20.0)
    )
    spec.orbit.coupling = coupling

    def setup(data):
        set_host(data, "qvel", np.tile([0, 0, 0, 0, 0, 0.2, 1.0], (data.nworld, 1)))

    cpu, warp = run_both(spec, 100 if coupling == "held" else 40, setup, device=warp_device)
    assert cpu._switches.from_qpos == 0 and warp._switches.from_qpos == 0
    assert_states_agree(cpu, warp)


def test_custom_central_body_applies_on_warp(warp_device):
    spec = spacecraft_spec()
    spec.orbit.central_body.gm = 4902.8  # Moon
    spec.orbit.central_body.radius = 1737.4
    spec.orbit.central_body.j2 = 2.03e-4
    model = spec.compile()
    from orbitlab import OrbitInit

    orbit = OrbitInit(R_eci=[1837.4, 0, 0], V_eci=[0, np.sqrt(4902.8 / 1837.4), 0])
    cpu = model.make_data(orbit=orbit)
    warp = model.make_data(orbit=orbit, backend="warp", device=warp_device)
    cpu.step(50)
    warp.step(50)
    np.testing.assert_allclose(host(warp.R), cpu.R, rtol=0, atol=1e-10)
    assert np.linalg.norm(cpu.R[0]) < 1900  # it orbits the Moon, not the Earth


def test_per_world_mass_randomization_on_warp(warp_device):
    spec = spacecraft_spec()
    spec.orbit.use_drag = spec.orbit.use_srp = False  # the thruster is the only external force
    spec.orbit.add_thruster(ThrusterCfg(name="thr", body_name="spacecraft", max_force=1.0))
    model = spec.compile()
    data = model.make_data(nworld=2, backend="warp", device=warp_device, orbit=circular_orbit())
    mass = data.expand("body_mass")
    host_mass = mass.numpy()
    host_mass[1, 1] = 200.0
    mass.assign(host_mass)
    data.thruster_force.fill_(1.0)
    data.forward()
    feedback = data.a_feedback.numpy()
    # Feedback acceleration is F / M_total per world: 1 N on 100 kg vs on 200 kg.
    np.testing.assert_allclose(np.linalg.norm(feedback, axis=1), [1e-5, 0.5e-5], rtol=1e-12)


def test_torch_views_share_device_memory(warp_device):
    torch = pytest.importorskip("torch")
    model = spacecraft_spec().compile()
    data = model.make_data(nworld=2, backend="warp", device=warp_device, orbit=circular_orbit())
    R = data.torch("R")
    assert isinstance(R, torch.Tensor) and R.shape == (2, 3)
    data.step()
    np.testing.assert_array_equal(R.cpu().numpy(), data.R.numpy())  # the same memory, no copy


def test_warp_backend_needs_no_cpu_only_options():
    model = spacecraft_spec().compile()
    with pytest.raises(ValueError, match="apply to backend='warp' only"):
        model.make_data(device="cuda:0")


def needs_cuda(device: str) -> None:
    if not device.startswith("cuda"):
        pytest.skip("CUDA graphs need a GPU (run with a GPU or ORBITLAB_TEST_DEVICE=cuda:0)")


def plain_loop(data, nstep: int) -> None:
    """What `data.step(nstep)` launches, one launch after another, without a graph."""
    for _ in range(nstep):
        data._loads_and_advance.launch()
        data.backend.step(derived=not data._switches.from_qpos)
    data.backend.check()


def assert_bitwise_equal(graph, loop) -> None:
    """Replaying the captured graph runs the very same kernels: results equal to the bit."""
    for name in ("qpos", "qvel"):
        np.testing.assert_array_equal(graph.bind(name).numpy(), loop.bind(name).numpy())
    np.testing.assert_array_equal(graph.R.numpy(), loop.R.numpy())
    np.testing.assert_array_equal(graph.t.numpy(), loop.t.numpy())


def graph_and_loop(model, nworld: int, device: str, qvel):
    datas = [
        model.make_data(nworld=nworld, backend="warp", device=device, orbit=circular_orbit())
        for _ in range(2)
    ]
    for data in datas:
        set_host(data, "qvel", qvel)
    return datas


def test_cuda_graph_replay_equals_the_plain_loop(warp_device):
    needs_cuda(warp_device)
    model = spacecraft_spec().compile()
    graph, loop = graph_and_loop(
        model, 64, warp_device, np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (64, 1))
    )
    graph.step(100)  # captured once, replayed
    plain_loop(loop, 100)
    assert_bitwise_equal(graph, loop)


def test_cuda_graph_replay_of_the_stage_step(warp_device):
    """The per-stage step (loads, forward and stage kernel, four times) is captured whole."""
    needs_cuda(warp_device)
    spec = spacecraft_spec("RK4")
    spec.orbit.coupling = "stage"
    graph, loop = graph_and_loop(
        spec.compile(), 64, warp_device, np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (64, 1))
    )
    graph.step(50)
    for _ in range(50):
        loop._stepper.step()
    assert_bitwise_equal(graph, loop)


def test_cuda_graph_replay_after_reset_and_expand(warp_device):
    """reset() writes in place (the captured graph stays valid); expand() swaps a model
    array, so the graph must be captured again: both keep replay equal to the loop."""
    needs_cuda(warp_device)
    model = spacecraft_spec().compile()
    graph, loop = graph_and_loop(
        model, 8, warp_device, np.tile([0.0, 0.0, 0.0, 0.05, -0.03, 0.02], (8, 1))
    )
    graph.step(20)
    plain_loop(loop, 20)
    for data in (graph, loop):
        data.reset(worlds=[1, 5])
        set_host(data, "qvel", np.tile([0.0, 0.0, 0.0, -0.02, 0.04, 0.01], (8, 1)))
    graph.step(20)
    plain_loop(loop, 20)
    assert_bitwise_equal(graph, loop)
    for data in (graph, loop):
        mass = data.expand("body_mass")
        values = mass.numpy()
        values[3, 1] = 250.0
        mass.assign(values)
        data.forward()
    graph.step(20)
    plain_loop(loop, 20)
    assert_bitwise_equal(graph, loop)
    feedback = np.linalg.norm(graph.a_feedback.numpy(), axis=1)
    assert feedback[3] < 0.5 * feedback[2]  # the recaptured graph sees the 2.5x heavier world


def test_cuda_graph_replay_with_contact(warp_device):
    needs_cuda(warp_device)
    xml = """
<mujoco><option timestep="0.005"/><worldbody>
  <body name="chaser" pos="-0.6 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="20"/></body>
  <body name="target" pos="0.6 0 0"><freejoint/><geom type="box" size="0.25 0.25 0.25" mass="40"/></body>
</worldbody></mujoco>"""
    spec = SimSpec.from_xml_string(xml)
    spec.orbit.use_drag = spec.orbit.use_srp = False
    qvel = np.zeros((4, 12))
    qvel[:, 0] = 0.5  # the chaser closes at 0.5 m/s: contact after ~1.4 s
    graph, loop = graph_and_loop(spec.compile(), 4, warp_device, qvel)
    graph.step(400)
    plain_loop(loop, 400)
    assert graph.bind("qvel").numpy()[0, 6] > 0.05  # the target was pushed: contact happened
    assert_bitwise_equal(graph, loop)


def test_reset_of_a_subset_of_worlds_on_warp(warp_device):
    model = spacecraft_spec().compile()
    data = model.make_data(nworld=3, backend="warp", device=warp_device, orbit=circular_orbit())
    set_host(data, "qvel", np.tile([0.0, 0.0, 0.0, 0.1, 0.0, 0.0], (3, 1)))
    data.step(10)
    before = data.R.numpy().copy()
    data.reset(worlds=[1])
    R, qvel, t = data.R.numpy(), data.bind("qvel").numpy(), data.t.numpy()
    np.testing.assert_array_equal(R[[0, 2]], before[[0, 2]])
    np.testing.assert_array_equal(R[1], circular_orbit().R_eci)
    assert qvel[1, 3] == 0.0 and qvel[0, 3] == pytest.approx(0.1, abs=1e-3)  # untouched world
    assert t[1] == 0.0 and t[0] > 0.0


@pytest.mark.slow
def test_wrist_force_torque_reads_the_same_on_both_backends(warp_device):
    import torch

    from orbitlab.scene import Scene, SceneCfg
    from orbitlab.scene import spacecraft as library
    from orbitlab.sensors.manipulator import WristForceTorqueCfg

    readings = {}
    for backend, device in (("cpu", None), ("warp", warp_device)):
        bot = library.arm_bus()
        bot.sensors = {"ft": WristForceTorqueCfg(site="wrist_ft")}
        cfg = SceneCfg(num_envs=2, entities={"bot": bot}, backend=backend, device=device)
        scene = Scene(cfg)
        arm = scene.actuators["bot/arm"]
        target = torch.zeros((2, arm.num), dtype=torch.float64, device=scene.view.device)
        target[:, :6] = torch.tensor([0.6, -0.5, 0.9, 0.3, -0.2, 0.7])
        arm.set_command(target)
        scene.step(30)
        readings[backend] = scene.sensors["bot/ft"].value.cpu().numpy()
    cpu = readings["cpu"]
    assert np.abs(cpu[:, :3]).max() > 1.0  # N: the hand is driven
    # MuJoCo-Warp's float32 against float64 (measured on Warp's CPU device: 5e-6 N of 2.3 N).
    np.testing.assert_allclose(readings["warp"], cpu, rtol=0, atol=1e-4 * np.abs(cpu).max())
