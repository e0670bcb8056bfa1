"""Sensors: timers, hold, latency, noise statistics and the truth of each model."""

import math

import numpy as np
import pytest
import torch

from orbitlab.actuators.thrusters import ThrusterGroupCfg
from orbitlab.orbit.constants import OrbitInit
from orbitlab.scene.entities import PassiveObjectCfg, SpacecraftCfg
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sensors.inertial import (
    AccelerometerCfg,
    GyroCfg,
    MagnetometerCfg,
    StarTrackerCfg,
    SunSensorCfg,
)
from orbitlab.sensors.navigation import (
    DockingLatchCfg,
    GnssCfg,
    RangeBearingCfg,
    RelativeNavCfg,
)
from orbitlab.sensors.rotations import quat_angle
from orbitlab.sim.elements import ElementSet, ThrusterCfg

DT = 0.01
QUIET = {"use_gravity_gradient": False, "use_drag": False, "use_srp": False, "use_magnetic": False}


def make_scene(
    sensors,
    num_envs=4,
    target_pos=(10.0, 0.0, 0.0),
    orbit_init=None,
    actuators=None,
    elements=None,
    quiet=True,
    backend="cpu",
    device=None,
):
    sc = SpacecraftCfg(
        mjcf="free_body",
        sensors=sensors,
        actuators=actuators or {},
        elements=elements or ElementSet(),
    )
    cfg = SceneCfg(
        num_envs=num_envs,
        timestep_s=DT,
        orbit_init=orbit_init,
        backend=backend,
        device=device,
        entities={"sat": sc, "target": PassiveObjectCfg(mjcf="free_body", pos_m=target_pos)},
    )
    if quiet:
        for key, value in QUIET.items():
            setattr(cfg.orbit, key, value)
    return Scene(cfg)


def spin(scene, worlds, omega_body):
    """Set the spacecraft's body rate without restarting the sensors (a step in the truth)."""
    ang = scene.entities["sat"].data.root_ang_vel_b
    ang[worlds] = torch.as_tensor(omega_body, dtype=ang.dtype)
    scene.data.forward()
    scene.view.invalidate()


@pytest.mark.parametrize("period_s", [0.01, 0.05, 0.2])
def test_sensor_timer_holds_the_value_between_updates(period_s):
    scene = make_scene({"gyro": GyroCfg(period_s=period_s, std=1e-3)}, num_envs=2)
    history = []
    for _ in range(40):
        scene.step()
        history.append(scene.sensors["sat/gyro"].value.clone())
    history = torch.stack(history)
    changed = (history[1:] != history[:-1]).any(-1).any(-1).numpy()
    steps = round(period_s / DT)
    # Step k (1-based) samples when k % steps == 0; new values appear exactly then.
    expected = np.array([(k + 1) % steps == 0 for k in range(1, 40)])
    np.testing.assert_array_equal(changed, expected)


def test_worlds_keep_their_own_timers_after_a_partial_reset():
    scene = make_scene({"gyro": GyroCfg(period_s=0.05, std=1e-3)}, num_envs=2)
    scene.step(2)
    scene.reset(torch.tensor([1]))  # world 1 samples now and then every 5 steps from here
    before = scene.sensors["sat/gyro"].samples.clone()
    scene.step(3)
    after = scene.sensors["sat/gyro"].samples
    assert (after - before).tolist() == [1, 0]  # world 0 due at its step 5, world 1 not yet


def test_sensor_latency_shifts_a_step_by_exactly_the_delay():
    delay = 4
    scene = make_scene({"gyro": GyroCfg(latency_s=delay * DT)}, num_envs=2)
    scene.step(3)
    spin(scene, slice(None), [0.0, 0.0, 0.1])
    out = []
    for _ in range(8):
        scene.step()
        out.append(float(scene.sensors["sat/gyro"].value[0, 2]))
    # The first post-step sample enters the line at step 1 and leaves it `delay` steps later.
    assert out[:delay] == [0.0] * delay
    assert out[delay:] == pytest.approx([0.1] * (8 - delay), rel=1e-12)


def test_white_noise_and_bias_statistics_over_many_worlds():
    n = 4096
    cfg = GyroCfg(std=(1e-3, 2e-3, 3e-3), bias=(1e-4, 0.0, -2e-4), seed=7)
    scene = make_scene({"gyro": cfg}, num_envs=n)
    value = scene.sensors["sat/gyro"].value  # at rest: measurement = bias + noise
    std = torch.tensor([1e-3, 2e-3, 3e-3], dtype=torch.float64)
    mean = torch.tensor([1e-4, 0.0, -2e-4], dtype=torch.float64)
    # Sample mean error has std sigma/sqrt(n); 4 of those is a 6e-5 chance per axis.
    assert torch.all((value.mean(0) - mean).abs() < 4 * std / math.sqrt(n))
    # Sample std of n normals has relative std 1/sqrt(2n) = 1.1%; allow 5%.
    assert torch.all((value.std(0) / std - 1).abs() < 0.05)
    # Independent axes and worlds: correlations within ~4/sqrt(n).
    corr = torch.corrcoef(value.T)
    assert (corr - torch.eye(3, dtype=torch.float64)).abs().max() < 4 / math.sqrt(n)


def test_noise_is_reproducible_per_world():
    a = make_scene({"gyro": GyroCfg(std=1e-3, seed=1)}, num_envs=8)
    b = make_scene({"gyro": GyroCfg(std=1e-3, seed=1)}, num_envs=3)
    a.step(5)
    b.step(5)
    # World k's stream does not depend on how many worlds there are.
    assert torch.equal(a.sensors["sat/gyro"].value[:3], b.sensors["sat/gyro"].value)
    c = make_scene({"gyro": GyroCfg(std=1e-3, seed=2)}, num_envs=3)
    c.step(5)
    assert not torch.equal(c.sensors["sat/gyro"].value, b.sensors["sat/gyro"].value)


def test_bias_random_walk_grows_with_the_square_root_of_time():
    n, walk = 4096, 1e-3  # rad/s/sqrt(s)
    scene = make_scene({"gyro": GyroCfg(bias_walk_std=walk, period_s=0.1)}, num_envs=n)
    scene.step(100)  # 10 samples over 1 s after the reset sample
    bias = scene.sensors["sat/gyro"].world_bias
    expected = walk * math.sqrt(10 * 0.1)
    # Std of the sample std over 3 x 4096 values ~ 0.6%; allow 5%.
    assert abs(float(bias.std()) / expected - 1) < 0.05


def test_per_world_random_bias_is_constant_within_an_episode():
    scene = make_scene({"gyro": GyroCfg(bias_std=1e-3)}, num_envs=512)
    first = scene.sensors["sat/gyro"].value.clone()
    scene.step(10)
    assert torch.equal(scene.sensors["sat/gyro"].value, first)  # at rest, no white noise
    assert abs(float(first.std()) / 1e-3 - 1) < 0.1  # 1536 draws: ~2% std
    scene.reset()
    assert not torch.equal(scene.sensors["sat/gyro"].value, first)  # redrawn per episode


def test_star_tracker_reports_the_body_attitude_with_noise_and_misalignment():
    n = 2048
    misalignment = (0.0, 0.0, 0.01)
    scene = make_scene({"st": StarTrackerCfg(std=1e-4, misalignment_rad=misalignment)}, num_envs=n)
    spin(scene, slice(None), [0.1, -0.2, 0.3])
    scene.step(50)
    quat = scene.entities["sat"].data.root_quat_w
    measured = scene.sensors["sat/st"].value
    truth = scene.sensors["sat/st"].truth_value
    assert quat_angle(truth, quat.clone()).max() < 1e-12
    angle = quat_angle(measured, truth)
    # Misalignment 0.01 rad plus 3-axis noise of 1e-4 rad each: within 5e-4 rad.
    assert torch.all((angle - 0.01).abs() < 5e-4)


def test_gyro_magnetometer_and_sun_sensor_are_rotated_into_the_body():
    scene = make_scene(
        {
            "gyro": GyroCfg(),
            "mag": MagnetometerCfg(),
            "sun": SunSensorCfg(fov_half_angle_rad=math.pi),
        },
        num_envs=2,
    )
    quat = scene.entities["sat"].data.root_quat_w
    quat[:] = torch.tensor([math.cos(0.5), 0.0, 0.0, math.sin(0.5)], dtype=torch.float64)
    spin(scene, slice(None), [0.0, 0.0, 0.2])
    scene.refresh_sensors(scene.all_worlds)
    c, s = math.cos(1.0), math.sin(1.0)
    Q = torch.tensor([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=torch.float64)
    B = torch.as_tensor(scene.data.env.mag_field_eci[0])
    sun = torch.as_tensor(scene.data.env.sun_eci[0])
    torch.testing.assert_close(scene.sensors["sat/mag"].value[0], Q.T @ B, rtol=1e-12, atol=0)
    lit = float(scene.data.env.eclipse[0]) > 0.5
    expected_sun = (Q.T @ sun) if lit else torch.zeros(3, dtype=torch.float64)
    torch.testing.assert_close(
        scene.sensors["sat/sun"].value[0, :3], expected_sun, rtol=1e-12, atol=1e-15
    )
    torch.testing.assert_close(
        scene.sensors["sat/gyro"].value[0], torch.tensor([0, 0, 0.2], dtype=torch.float64)
    )


def test_sun_sensor_reads_nothing_in_eclipse():
    from orbitlab.orbit.evaluate import environment

    t = 0.0
    s_hat = environment(np.array([7000.0, 0.0, 0.0]), t)["sun_eci"]
    r = 6778.0
    shadow = OrbitInit(R_eci=-r * s_hat, V_eci=np.cross(s_hat, [0, 0, 1.0]) * 7.6, t=t)
    sunlit = OrbitInit(R_eci=r * s_hat, V_eci=np.cross(s_hat, [0, 0, 1.0]) * 7.6, t=t)
    for init, valid in ((shadow, 0.0), (sunlit, 1.0)):
        scene = make_scene(
            {"sun": SunSensorCfg(fov_half_angle_rad=math.pi)}, num_envs=1, orbit_init=init
        )
        assert float(scene.sensors["sat/sun"].value[0, 3]) == valid


def test_gnss_reads_the_absolute_position_and_velocity():
    scene = make_scene({"gnss": GnssCfg()}, num_envs=2)
    scene.step(10)
    frames = scene.view.frames()
    expected = torch.cat(
        [
            1e3 * scene.view.array("R") + frames["com"][:, 1],
            1e3 * scene.view.array("V") + frames["v_com"][:, 1],
        ],
        -1,
    )
    torch.testing.assert_close(scene.sensors["sat/gnss"].value, expected, rtol=1e-15, atol=0)


def test_relative_navigation_matches_the_simulation_hill_state():
    scene = make_scene(
        {"rel": RelativeNavCfg(target="target")},
        num_envs=3,
        target_pos=(3.0, -20.0, 1.5),
        quiet=False,
    )
    scene.step(200)
    rho_t, rhodot_t = scene.data.hill_state("target/spacecraft")
    rho_s, rhodot_s = scene.data.hill_state("sat/spacecraft")
    value = scene.sensors["sat/rel"].value.numpy()
    # An independent numpy path (OrbitData.hill_state): equal to rounding.
    np.testing.assert_allclose(value[:, :3], rho_t - rho_s, rtol=0, atol=1e-12)
    np.testing.assert_allclose(value[:, 3:6], rhodot_t - rhodot_s, rtol=0, atol=1e-12)


def test_relative_navigation_noise_grows_with_range():
    n = 2048
    cfg = RelativeNavCfg(target="target", std=0.01, range_noise_per_m=0.1)
    near = make_scene({"rel": cfg}, num_envs=n, target_pos=(10.0, 0, 0))
    far = make_scene({"rel": cfg}, num_envs=n, target_pos=(40.0, 0, 0))

    def pos_std(scene):
        s = scene.sensors["sat/rel"]
        return float((s.value[:, :3] - s.truth_value[:, :3]).std())

    # std = 0.01 (1 + 0.1 r): 0.02 at 10 m, 0.05 at 40 m; 2.5x within sampling error.
    assert abs(pos_std(near) / 0.02 - 1) < 0.05
    assert abs(pos_std(far) / 0.05 - 1) < 0.05


def test_range_bearing_and_field_of_view():
    scene = make_scene(
        {"rb": RangeBearingCfg(target="target", max_range_m=50.0, fov_half_angle_rad=0.3)},
        num_envs=1,
        target_pos=(10.0, 10.0 * math.tan(0.2), 0.0),
    )
    rng, az, el, valid = scene.sensors["sat/rb"].value[0].tolist()
    assert rng == pytest.approx(10.0 / math.cos(0.2), rel=1e-9)
    assert az == pytest.approx(0.2, abs=1e-9) and el == pytest.approx(0.0, abs=1e-9)
    assert valid == 1.0
    outside = make_scene(
        {"rb": RangeBearingCfg(target="target", fov_half_angle_rad=0.1)},
        num_envs=1,
        target_pos=(10.0, 10.0 * math.tan(0.2), 0.0),
    )
    assert outside.sensors["sat/rb"].value[0].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_accelerometer_measures_thrust_over_mass_not_gravity():
    thr = ElementSet(thrusters=[ThrusterCfg(name="t", body_name="spacecraft", max_force=3.0)])
    scene = make_scene(
        {"acc": AccelerometerCfg()},
        num_envs=2,
        quiet=False,
        elements=thr,
        actuators={"rcs": ThrusterGroupCfg(mode="continuous")},
    )
    scene.step(5)
    free_fall = scene.sensors["sat/acc"].value.clone()
    scene.actuators["sat/rcs"].set_command(torch.tensor([[3.0], [0.0]], dtype=torch.float64))
    scene.step(5)
    acc = scene.sensors["sat/acc"].value
    # In free fall the accelerometer reads drag and SRP only (< 1e-6 m/s^2 for this box).
    assert free_fall.abs().max() < 1e-6
    # 3 N on 100 kg along body x; other loads are below 1e-6 m/s^2.
    torch.testing.assert_close(
        acc[0], torch.tensor([0.03, 0.0, 0.0], dtype=torch.float64), rtol=0, atol=1e-6
    )


def test_docking_latch_closes_only_on_a_soft_aligned_contact():
    cfg = DockingLatchCfg(
        target="target", contact_distance_m=0.05, max_closing_speed_mps=0.1, max_lateral_m=0.05
    )
    scene = make_scene({"latch": cfg}, num_envs=2, target_pos=(1.0, 0.0, 0.0))
    # Port: the target's origin with +z out of the port; turn the target so +z faces -x.
    q_t = scene.entities["target"].data.root_quat_w
    half = math.sqrt(0.5)
    q_t[:] = torch.tensor([half, 0.0, -half, 0.0], dtype=torch.float64)
    sat = scene.entities["sat"]
    # The probe is the sat's body frame here: its +z turned to face +x, toward the port.
    sat.set_root_state(
        scene.all_worlds,
        pos_m=[[0.97, 0.0, 0.0], [0.97, 0.0, 0.0]],
        quat=[half, 0.0, half, 0.0],
        lin_vel_mps=[[0.05, 0.0, 0.0], [0.3, 0.0, 0.0]],
    )
    contact, latched, dist, closing, lateral, mis = scene.sensors["sat/latch"].value.T
    assert lateral.tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    assert mis.tolist() == pytest.approx([0.0, 0.0], abs=1e-7)  # acos near 1: sqrt(eps)
    assert contact.tolist() == [1.0, 1.0]
    assert latched.tolist() == [1.0, 0.0]  # world 1 closes at 0.3 m/s > 0.1 m/s
    assert closing.tolist() == pytest.approx([0.05, 0.3])
    assert dist.tolist() == pytest.approx([0.03, 0.03])
    sat.set_root_state(scene.all_worlds, pos_m=[[0.0, 0.0, 0.0]] * 2)
    assert scene.sensors["sat/latch"].value[:, 1].tolist() == [0.0, 0.0]  # restarted


def test_sensor_errors_are_named():
    with pytest.raises(ValueError, match="sensor 'sat/g'.*period_s"):
        make_scene({"g": GyroCfg(period_s=0.015)})
    with pytest.raises(ValueError, match="no body named 'nobody'"):
        make_scene({"r": RelativeNavCfg(target="nobody")})
    with pytest.raises(ValueError, match="std needs 1 or 3 values"):
        make_scene({"g": GyroCfg(std=(1.0, 2.0))})
    with pytest.raises(ValueError, match="no site named 'sat/imu'"):
        make_scene({"g": GyroCfg(site="imu")})


def test_a_new_sensor_is_a_config_naming_its_class_with_nothing_to_register():
    """A sensor kind outside orbitlab: a Sensor subclass and a SensorCfg whose class_type
    names it; the scene builds it through `from_scene` (site resolved by name)."""
    from dataclasses import dataclass

    from orbitlab.scene import Scene, SceneCfg
    from orbitlab.scene import spacecraft as library
    from orbitlab.sensors import Sensor, SensorCfg

    class Altimeter(Sensor):
        dim = 1

        def truth(self):
            return torch.linalg.vector_norm(self.view.array("R"), dim=-1, keepdim=True)

    @dataclass(kw_only=True)
    class AltimeterCfg(SensorCfg):
        class_type: type = Altimeter

    sat = library.cubesat_3u()
    sat.sensors = {"altimeter": AltimeterCfg(site="imu")}
    scene = Scene(SceneCfg(num_envs=2, entities={"sat": sat}))
    scene.step(1)
    sensor = scene.sensors["sat/altimeter"]
    assert isinstance(sensor, Altimeter) and sensor.site >= 0
    assert torch.allclose(
        sensor.value[:, 0], torch.linalg.vector_norm(scene.view.array("R"), dim=-1)
    )
