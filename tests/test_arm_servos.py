"""MuJoCo position servos as an actuator group: rate limit, limp and degraded servos."""

from __future__ import annotations

import pytest
import torch

from orbitlab.actuators.base import FailureCfg
from orbitlab.actuators.joints import MujocoActuatorGroupCfg
from orbitlab.scene import Scene, SceneCfg
from orbitlab.scene import spacecraft as library

ARM = ["shoulder_yaw", "shoulder_pitch", "elbow", "wrist_pitch", "wrist_yaw", "wrist_roll"]


def arm_scene(num_envs: int = 2, **group) -> Scene:
    bot = library.arm_bus()
    bot.actuators = {"arm": MujocoActuatorGroupCfg(elements=ARM, **group)}
    return Scene(SceneCfg(num_envs=num_envs, entities={"bot": bot}))


def test_rate_limit_slews_the_servo_targets():
    scene = arm_scene(rate_limit=0.5)  # rad/s: 5 mrad per 0.01 s step
    arm = scene.actuators["bot/arm"]
    scene.step(1)  # the first write after a reset jumps to the command (zero here)
    command = torch.zeros((2, 6), dtype=torch.float64)
    command[:, 2] = 1.0
    command[1, 0] = -0.02
    arm.set_command(command)

    def ctrl():
        return scene.view.array("ctrl")[:, arm.ids]  # a copy (index gather): read afresh

    for k in range(1, 6):
        scene.step(1)
        assert ctrl()[0, 2].item() == pytest.approx(0.005 * k, abs=1e-15)
    assert ctrl()[1, 0].item() == pytest.approx(-0.02)  # reached after 4 steps, then held
    scene.reset(torch.tensor([0]))
    arm.set_command(command[:1], torch.tensor([0]))
    scene.step(1)  # after a reset the target jumps
    assert ctrl()[0, 2].item() == 1.0
    with pytest.raises(ValueError, match="rate_limit must be > 0 per second"):
        arm_scene(rate_limit=0.0)


def test_a_failed_servo_goes_limp_and_a_degraded_one_is_weaker():
    scene = arm_scene()
    arm = scene.actuators["bot/arm"]
    arm.set_failure(torch.tensor([1]), 2, "off")  # world 1's elbow
    command = torch.tensor([[0.3, -0.4, 0.8, 0.2, 0.1, 0.3]] * 2, dtype=torch.float64)
    arm.set_command(command)
    scene.step(100)  # 1 s
    force = scene.view.array("actuator_force")[:, arm.ids]
    assert force[1, 2].item() == 0.0  # limp: no torque at all
    assert force[0, 2].abs().item() > 0.1  # N m: the healthy elbow holds its target
    assert (force[1, [0, 1, 3, 4, 5]].abs() > 0.0).all()
    m = scene.mj_model
    elbow = m.joint("bot/elbow").qposadr[0]
    qpos = scene.view.array("qpos")
    assert abs(qpos[0, elbow].item() - 0.8) < 0.05 and abs(qpos[1, elbow].item() - 0.8) > 0.3
    arm.set_failure(torch.tensor([1]), 2, "degraded", scale=0.5)
    gainprm = scene.data.expand("actuator_gainprm")
    kp = m.actuator_gainprm[arm.ids[2].item(), 0]
    assert gainprm[1, arm.ids[2].item(), 0] == pytest.approx(0.5 * kp)
    assert gainprm[0, arm.ids[2].item(), 0] == pytest.approx(kp)


def test_random_servo_failures_are_drawn_at_reset():
    failures = FailureCfg(stuck_off_prob=0.5)
    scene = arm_scene(num_envs=64, failures=failures)
    arm = scene.actuators["bot/arm"]
    scene.reset(torch.arange(64))
    off = arm.failure == -1
    assert 0.3 < off.float().mean().item() < 0.7
    gainprm = torch.as_tensor(scene.data.expand("actuator_gainprm"))[:, arm.ids, 0]
    assert (gainprm[off] == 0.0).all() and (gainprm[~off] > 0.0).all()


def test_damping_sets_the_servos_velocity_gain():
    """actuator force = kp (target - q) - kv qdot with the configured kv (the MJCF's wrist
    servos have none: kp 10 N m/rad only)."""
    scene = arm_scene(damping=(0.0, 0.0, 0.0, 3.0, 3.0, 3.0))
    arm = scene.actuators["bot/arm"]
    arm.set_command(torch.tensor([[0.0, 0.0, 0.0, 0.4, -0.3, 0.2]] * 2, dtype=torch.float64))
    scene.step(5)
    m = scene.mj_model
    for joint, kp in (("wrist_pitch", 10.0), ("wrist_yaw", 10.0), ("elbow", 40.0)):
        a = int(m.actuator(f"bot/{joint}").id)
        q = scene.view.array("qpos")[:, m.joint(f"bot/{joint}").qposadr[0]]
        qdot = scene.view.array("qvel")[:, m.joint(f"bot/{joint}").dofadr[0]]
        kv = 0.0 if joint == "elbow" else 3.0
        expected = kp * (scene.view.array("ctrl")[:, a] - q) - kv * qdot
        force = scene.view.array("actuator_force")[:, a]
        assert qdot.abs().max() > 0.01 or joint == "elbow"  # moving: the kv term counts
        torch.testing.assert_close(force, expected, rtol=1e-9, atol=1e-9 * kp)
    with pytest.raises(ValueError, match="damping must be >= 0 N m s/rad"):
        arm_scene(damping=-1.0)
