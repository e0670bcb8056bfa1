"""Actuator models: PWM, Schmitt trigger, latency, lag, gains, failures, saturation."""

import math

import numpy as np
import pytest
import torch

from orbitlab.actuators.momentum import (
    ControlMomentGyroGroupCfg,
    MagnetorquerGroupCfg,
    ReactionWheelGroupCfg,
)
from orbitlab.actuators.thrusters import ThrusterGroupCfg
from orbitlab.actuators.wrench import WrenchGroupCfg
from orbitlab.scene.entities import SpacecraftCfg
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.sim.elements import (
    ControlMomentGyroCfg,
    ElementSet,
    MagnetorquerCfg,
    ReactionWheelCfg,
    ThrusterCfg,
)

DT = 0.01
F_MAX = 2.0


def make_scene(num_envs=4, actuators=None, **orbit_switches):
    elements = ElementSet(
        thrusters=[
            ThrusterCfg(
                name=f"t{i}",
                body_name="spacecraft",
                max_force=F_MAX,
                direction_body=d,
                position_body=(0.0, 0.2, 0.0),
            )
            for i, d in enumerate([(1, 0, 0), (-1, 0, 0)])
        ],
        wheels=[
            ReactionWheelCfg(
                name="w",
                body_name="spacecraft",
                axis_body=(0, 0, 1),
                inertia=1e-3,
                max_speed=50.0,
                max_torque=0.01,
            )
        ],
        magnetorquers=[MagnetorquerCfg(name="m", body_name="spacecraft", max_dipole=0.2)],
        cmgs=[ControlMomentGyroCfg(name="c", body_name="spacecraft", max_rate=0.5)],
    )
    sc = SpacecraftCfg(mjcf="free_body", elements=elements, actuators=actuators or {})
    cfg = SceneCfg(num_envs=num_envs, entities={"sat": sc}, timestep_s=DT)
    for key, value in orbit_switches.items():
        setattr(cfg.orbit, key, value)
    return Scene(cfg)


def run_outputs(scene, group, steps):
    out = []
    for _ in range(steps):
        scene.step()
        out.append(scene.actuators[group].output.clone())
    return torch.stack(out)  # (steps, N, n)


def test_pwm_on_time_delivers_the_commanded_impulse_and_drops_short_pulses():
    cfg = ThrusterGroupCfg(pwm_period_s=0.1, min_on_time_s=0.012)
    scene = make_scene(num_envs=3, actuators={"rcs": cfg})
    # Duties 0.37 (on 37 ms: 3.7 steps), 0.1 (10 ms < 12 ms minimum: dropped), 1.0.
    cmd = torch.tensor(
        [[0.37 * F_MAX, 0.0], [0.1 * F_MAX, 0.0], [F_MAX, F_MAX]], dtype=torch.float64
    )
    scene.actuators["sat/rcs"].set_command(cmd)
    out = run_outputs(scene, "sat/rcs", 20)
    impulse = out.sum(0) * DT  # N s over two periods
    # Exact to rounding: each period delivers F_max * t_on.
    np.testing.assert_allclose(
        impulse[:, 0], [2 * 0.037 * F_MAX, 0.0, 2 * 0.1 * F_MAX], rtol=0, atol=1e-12
    )
    # The pulse sits at the start of the period: full, full, full, 70%, then off.
    np.testing.assert_allclose(
        out[:10, 0, 0] / F_MAX, [1, 1, 1, 0.7, 0, 0, 0, 0, 0, 0], rtol=0, atol=1e-12
    )


def test_pwm_samples_the_command_once_per_period():
    scene = make_scene(num_envs=1, actuators={"rcs": ThrusterGroupCfg(pwm_period_s=0.05)})
    group = scene.actuators["sat/rcs"]
    group.set_command(torch.tensor([[F_MAX, 0.0]]))
    scene.step(2)
    group.set_command(torch.tensor([[0.0, 0.0]]))  # mid-period: the pulse continues
    out = run_outputs(scene, "sat/rcs", 4)
    np.testing.assert_allclose(out[:, 0, 0], [F_MAX, F_MAX, F_MAX, 0.0])


def test_schmitt_trigger_has_hysteresis_and_minimum_on_time():
    cfg = ThrusterGroupCfg(mode="schmitt", schmitt_on=0.5, schmitt_off=0.2, min_on_time_s=0.03)
    scene = make_scene(num_envs=1, actuators={"rcs": cfg})
    group = scene.actuators["sat/rcs"]
    levels = [0.4, 0.6, 0.3, 0.3, 0.1, 0.6, 0.0, 0.0, 0.0]
    fired = []
    for level in levels:
        group.set_command(torch.tensor([[level * F_MAX, 0.0]]))
        scene.step()
        fired.append(bool(group.output[0, 0] > 0))
    # 0.4: below on; 0.6: opens; 0.3: stays (above off); 0.1: closes; 0.6 opens and is held
    # for the 3-step minimum on-time although the command drops to 0.
    assert fired == [False, True, True, True, False, True, True, True, False]


def test_command_latency_shifts_a_step_by_exactly_the_delay():
    delay = 7
    cfg = ThrusterGroupCfg(mode="continuous", latency_steps=delay)
    scene = make_scene(num_envs=2, actuators={"rcs": cfg})
    scene.actuators["sat/rcs"].set_command(torch.tensor([[1.0, 0.0], [1.0, 0.0]]))
    out = run_outputs(scene, "sat/rcs", 12)[:, 0, 0]
    assert out[:delay].abs().max() == 0.0 and torch.all(out[delay:] == 1.0)


def test_first_order_lag_follows_its_time_constant():
    tau = 0.1
    cfg = ReactionWheelGroupCfg(time_constant_s=tau)
    scene = make_scene(num_envs=1, actuators={"rw": cfg})
    scene.actuators["sat/rw"].set_command(torch.tensor([[0.01]], dtype=torch.float64))
    out = run_outputs(scene, "sat/rw", 30)[:, 0, 0]
    expected = 0.01 * (1 - np.exp(-DT * np.arange(1, 31) / tau))  # exact discrete response
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_failures_and_gains_act_per_world():
    cfg = ThrusterGroupCfg(mode="continuous", gain_range=(0.5, 0.8))
    scene = make_scene(num_envs=4, actuators={"rcs": cfg})
    group = scene.actuators["sat/rcs"]
    group.set_command(torch.full((4, 2), 1.0))
    group.set_failure(torch.tensor([1]), 0, "off")
    group.set_failure(torch.tensor([2]), 0, "on")
    group.set_failure(torch.tensor([3]), 0, "degraded", scale=0.25)
    scene.step()
    out = group.output[:, 0]
    assert 0.5 <= out[0] <= 0.8  # nominal world: a random gain in gain_range
    assert out[1] == 0.0 and out[2] == F_MAX and out[3] == 0.25
    # The physics layer received exactly these forces.
    np.testing.assert_array_equal(scene.data.thruster_force[:, 0], out.numpy())


def test_random_failures_follow_their_probabilities():
    from orbitlab.actuators.base import FailureCfg

    cfg = ThrusterGroupCfg(failures=FailureCfg(stuck_off_prob=0.2, stuck_on_prob=0.1))
    scene = make_scene(num_envs=2000, actuators={"rcs": cfg})
    failure = scene.actuators["sat/rcs"].failure.double()
    # 4000 Bernoulli draws: the rate's std is <= 0.0065, so 0.03 is > 4.5 sigma.
    assert abs((failure == -1).double().mean() - 0.2) < 0.03
    assert abs((failure == 1).double().mean() - 0.1) < 0.03


def test_reaction_wheel_torque_and_speed_saturate():
    scene = make_scene(
        num_envs=1,
        actuators={"rw": ReactionWheelGroupCfg()},
        use_gravity_gradient=False,
        use_magnetic=False,
        use_drag=False,
        use_srp=False,
    )
    group = scene.actuators["sat/rw"]
    group.set_command(torch.tensor([[1.0]]))  # far above the 0.01 N m limit
    scene.step()
    assert group.output[0, 0] == pytest.approx(0.01)
    scene.step(600)  # 0.01 N m / 1e-3 kg m^2 = 10 rad/s^2: the 50 rad/s limit after ~5 s
    speed = float(group.speed()[0, 0])
    assert 49.0 < speed < 50.0 + 10.0 * DT  # stops within one step of the limit
    # At the limit the motor torque is cut to what keeps the speed there: each RK4 stage
    # leaves a sliver of room (measured 3.5e-10 N m), 1e-4 of the 0.01 N m limit bounds it.
    assert abs(scene.data.wheel_torque_applied[0, 0]) < 1e-6


def test_wheel_friction_opposes_speed():
    cfg = ReactionWheelGroupCfg(viscous_nms=1e-4, coulomb_nm=1e-3)
    scene = make_scene(num_envs=1, actuators={"rw": cfg})
    scene.data.wheel_momentum[0, 0] = 1e-3 * 20.0  # 20 rad/s, body at rest
    scene.view.invalidate()
    scene.step()
    # Net torque = 0 - 1e-4 * 20 - 1e-3 = -3e-3 N m.
    assert scene.actuators["sat/rw"].output[0, 0] == pytest.approx(-3e-3, rel=1e-9)


def test_magnetorquer_and_cmg_commands_saturate():
    actuators = {"mtq": MagnetorquerGroupCfg(), "cmg": ControlMomentGyroGroupCfg()}
    scene = make_scene(num_envs=1, actuators=actuators)
    scene.actuators["sat/mtq"].set_command(torch.tensor([[-5.0]]))
    scene.actuators["sat/cmg"].set_command(torch.tensor([[3.0]]))
    scene.step()
    assert scene.data.mtq_dipole[0, 0] == -0.2 and scene.data.cmg_rate[0, 0] == 0.5


def test_thruster_misalignment_adds_the_off_axis_wrench():
    cfg = ThrusterGroupCfg(mode="continuous", misalignment_std_rad=0.05, seed=3)
    scene = make_scene(
        num_envs=64,
        actuators={"rcs": cfg},
        use_gravity_gradient=False,
        use_drag=False,
        use_srp=False,
        use_magnetic=False,
    )
    group = scene.actuators["sat/rcs"]
    group.set_command(torch.tensor([[F_MAX, 0.0]]).expand(64, 2))
    scene.step()
    user = scene.data.xfrc_applied[:, 1]  # the correction goes through the user wrench
    error = group.direction_error[:, 0]
    np.testing.assert_allclose(user[:, :3], F_MAX * error.numpy(), atol=1e-15)
    angles = torch.asin(
        torch.linalg.vector_norm(
            torch.cross(group.direction[0].expand(64, 3), group.direction[0] + error, dim=-1),
            dim=-1,
        )
    )
    # 64 draws of a 2-D Gaussian angle: its rms is 0.05 * sqrt(2) within ~20%.
    assert 0.8 < float(angles.pow(2).mean().sqrt()) / (0.05 * math.sqrt(2)) < 1.2


def test_ideal_wrench_moves_the_body_as_commanded():
    cfg = WrenchGroupCfg(max_force_n=10.0, max_torque_nm=1.0)
    scene = make_scene(
        num_envs=2,
        actuators={"w": cfg},
        use_gravity_gradient=False,
        use_drag=False,
        use_srp=False,
        use_magnetic=False,
        use_j2=False,
    )
    scene.actuators["sat/w"].set_command(torch.tensor([[5.0, 0, 0, 0, 0, 0.0]] * 2))
    scene.step(100)
    vel = scene.entities["sat"].data.root_lin_vel_w
    # 5 N on 100 kg for 1 s: 0.05 m/s, up to the tiny differential gravity (~1e-6 m/s).
    assert float(vel[0, 0]) == pytest.approx(0.05, abs=1e-5)


def test_bad_commands_and_configs_are_named():
    scene = make_scene(num_envs=2, actuators={"rcs": ThrusterGroupCfg()})
    with pytest.raises(ValueError, match="'sat/rcs'.*shape"):
        scene.actuators["sat/rcs"].set_command(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="NaN"):
        scene.actuators["sat/rcs"].set_command(torch.full((2, 2), float("nan")))
    with pytest.raises(ValueError, match="pwm_period_s"):
        make_scene(actuators={"rcs": ThrusterGroupCfg(pwm_period_s=0.015)})
    with pytest.raises(ValueError, match="no thrusters named \\['t9'\\]"):
        make_scene(actuators={"rcs": ThrusterGroupCfg(elements=["t9"])})
    with pytest.raises(ValueError, match="latency_steps"):
        make_scene(actuators={"rcs": ThrusterGroupCfg(latency_steps=-1)})


def test_wrench_command_is_allocated_to_thrusters_around_failures():
    from orbitlab.scene import spacecraft as library

    scene = Scene(SceneCfg(num_envs=3, entities={"ff": library.formation_flyer()}))
    rcs = scene.actuators["ff/rcs"]
    rcs.set_failure(torch.tensor([1]), 0, "off")
    rcs.set_failure(torch.tensor([2]), 1, "on")
    wrench = torch.tensor([[0.3, -0.3, 0.2, 0.05, -0.2, 0.1]] * 3, dtype=torch.float64)
    result = rcs.set_wrench_command(wrench)
    # Achievable in every world, even without thruster 0 or with thruster 1 stuck on
    # (worked out by hand from the x-thrusters' force and y-torque): met to rounding.
    assert result.achievable.all()
    torch.testing.assert_close(result.achieved, wrench, rtol=0, atol=1e-9)
    assert rcs.command[1, 0] == 0.0  # the failed thruster is not asked for anything
    # The stuck-on thruster's push is part of the achieved wrench: the others compensate.
    forces = rcs.command.clone()
    forces[2, 1] = rcs.high[2, 1]
    torch.testing.assert_close(forces @ rcs.allocator().matrix.T, wrench, rtol=0, atol=1e-9)
    too_big = rcs.set_wrench_command(torch.tensor([[10.0, 0, 0, 0, 0, 0]] * 3, dtype=torch.float64))
    assert not too_big.achievable.any()  # 3 N is the most any axis can get
