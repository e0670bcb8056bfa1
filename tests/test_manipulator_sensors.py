"""The arm's sensors: joint encoders, end-effector pose (body and Hill axes), grapple pose,
wrist force-torque."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from orbitlab.scene import Scene, SceneCfg
from orbitlab.scene import spacecraft as library
from orbitlab.sensors.manipulator import (
    EndEffectorPoseCfg,
    GrapplePoseCfg,
    JointEncoderCfg,
    WristForceTorqueCfg,
)
from orbitlab.sensors.rotations import quat_to_matrix

ARM = ("shoulder_yaw", "shoulder_pitch", "elbow", "wrist_pitch", "wrist_yaw", "wrist_roll")


def servicer_scene(sensors, num_envs=2, client=False) -> Scene:
    bot = library.arm_bus()
    bot.sensors = sensors
    entities = {"bot": bot}
    if client:
        entities["client"] = library.client_sat(pos_m=(2.5, 0.6, -0.4), quat=(0.8, 0.1, 0.3, 0.5))
    return Scene(SceneCfg(num_envs=num_envs, entities=entities))


def mjdata(scene: Scene, world: int) -> mujoco.MjData:
    d = mujoco.MjData(scene.mj_model)
    d.qpos[:] = scene.view.array("qpos")[world].numpy()
    d.qvel[:] = scene.view.array("qvel")[world].numpy()
    mujoco.mj_forward(scene.mj_model, d)
    return d


def move_arm(scene: Scene, steps: int = 40) -> None:
    arm = scene.actuators["bot/arm"]
    target = torch.zeros((scene.cfg.num_envs, arm.num), dtype=torch.float64)
    target[:, :6] = torch.tensor([0.6, -0.5, 0.9, 0.3, -0.2, 0.7])
    arm.set_command(target)
    qvel = scene.view.array("qvel")
    qvel[:, 3:6] = torch.tensor([0.02, -0.01, 0.03], dtype=qvel.dtype)  # the bus tumbles
    scene.step(steps)


def test_joint_encoders_read_the_joints_on_their_timer():
    encoders = JointEncoderCfg(joints=ARM, period_s=0.05)
    scene = servicer_scene({"enc": encoders})
    move_arm(scene, 20)
    sensor = scene.sensors["bot/enc"]
    assert sensor.value.shape == (2, 12)
    m = scene.mj_model
    qpos_adr = [m.joint(f"bot/{j}").qposadr[0] for j in ARM]
    dof_adr = [m.joint(f"bot/{j}").dofadr[0] for j in ARM]
    # 20 steps of 0.01 s from a reset: sampled at steps 0, 5, 10, 15, 20 -> held since 20.
    assert sensor.samples.tolist() == [5, 5]
    truth = torch.cat(
        (scene.view.array("qpos")[:, qpos_adr], scene.view.array("qvel")[:, dof_adr]), -1
    )
    torch.testing.assert_close(sensor.value, truth, rtol=0, atol=0)
    scene.step(1)  # between samples the reading holds
    assert not torch.equal(scene.view.array("qpos")[:, qpos_adr], sensor.value[:, :6])
    with pytest.raises(ValueError, match="joint 'root' is not a hinge or slide of entity 'bot'"):
        servicer_scene({"enc": JointEncoderCfg(joints=("root",))})


def test_joint_encoder_noise_has_its_std():
    scene = servicer_scene(
        {"enc": JointEncoderCfg(joints=ARM[:2], std=(1e-3, 2e-3, 0.0, 0.0))}, 512
    )
    scene.step(1)
    sensor = scene.sensors["bot/enc"]
    error = (sensor.value - sensor.truth_value).std(0)
    # 512 samples: the std estimate is within ~6 % (3 sigma: 10 %).
    np.testing.assert_allclose(error[:2].numpy(), [1e-3, 2e-3], rtol=0.1)
    assert error[2:].abs().max() == 0.0


@pytest.mark.parametrize("frame", ["body", "hill"])
def test_end_effector_pose_against_mujoco(frame):
    scene = servicer_scene({"ee": EndEffectorPoseCfg(site="grasp", frame=frame)})
    move_arm(scene)
    scene.step(1)
    sensor = scene.sensors["bot/ee"]
    m = scene.mj_model
    bus, site = m.body("bot/bus").id, m.site("bot/grasp").id
    for w in range(2):
        d = mjdata(scene, w)
        R_bus = d.xmat[bus].reshape(3, 3)
        d_world = d.site_xpos[site] - d.xpos[bus]
        velocity = np.zeros(6)  # MuJoCo's [angular; linear] of the site and of the bus origin
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, site, velocity, 0)
        bus_velocity = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, bus, bus_velocity, 0)
        rel = velocity[3:] - bus_velocity[3:]
        site_R = d.site_xmat[site].reshape(3, 3)
        if frame == "body":
            axes = R_bus.T
            rel = rel - np.cross(bus_velocity[:3], d_world)
        else:
            C, omega = (t[w].numpy() for t in scene.view.hill())
            axes = C
            rel = rel - np.cross(omega, d_world)
        value = sensor.value[w].numpy()
        np.testing.assert_allclose(value[:3], axes @ d_world, atol=1e-12)
        np.testing.assert_allclose(value[3:6], axes @ rel, atol=1e-12 * max(1.0, np.abs(rel).max()))
        attitude = quat_to_matrix(sensor.value[w : w + 1, 6:])[0].numpy()
        np.testing.assert_allclose(attitude, axes @ site_R, atol=1e-12)
    assert np.linalg.norm(sensor.value[0, 3:6].numpy()) > 0.05  # the gripper is moving


def test_grapple_pose_sees_the_fixture_in_sensor_axes_with_range_noise():
    exact = GrapplePoseCfg(site="grasp", target="client", target_site="client/grapple")
    scene = servicer_scene({"pose": exact}, client=True)
    move_arm(scene, 10)
    scene.step(1)
    m = scene.mj_model
    site, fixture = m.site("bot/grasp").id, m.site("client/grapple").id
    value = scene.sensors["bot/pose"].value
    for w in range(2):
        d = mjdata(scene, w)
        R = d.site_xmat[site].reshape(3, 3)
        np.testing.assert_allclose(
            value[w, :3].numpy(), R.T @ (d.site_xpos[fixture] - d.site_xpos[site]), atol=1e-12
        )
        relative = quat_to_matrix(value[w : w + 1, 3:])[0].numpy()
        np.testing.assert_allclose(relative, R.T @ d.site_xmat[fixture].reshape(3, 3), atol=1e-12)
    noisy = GrapplePoseCfg(
        site="grasp",
        target="client",
        target_site="client/grapple",
        std=0.01,
        range_noise_per_m=0.5,
    )
    scene = servicer_scene({"pose": noisy}, num_envs=512, client=True)
    scene.step(1)
    sensor = scene.sensors["bot/pose"]
    rng = sensor.truth_value[:, :3].norm(dim=-1)
    scaled = (sensor.value[:, :3] - sensor.truth_value[:, :3]) / (1.0 + 0.5 * rng[:, None])
    np.testing.assert_allclose(scaled.std(0).numpy(), 0.01, rtol=0.1)  # 512 samples
    assert float(rng[0]) > 1.0  # m: the scaling is not negligible


def _wrist_wrench_errors(dt: float) -> tuple[float, float, float, float]:
    """Max |sensor - Newton-Euler| of the wrist force (N) and torque (N m) over the arm's
    smooth motion from 0.3 to 0.5 s at timestep `dt`, and the largest force and torque.

    The reference is the carried subtree's momentum balance, from plain MuJoCo at each
    step's end state: F = dp/dt and, about the site p, tau = dL_c/dt + (c - p) x F, with p
    the subtree's linear momentum and L_c its angular momentum about its COM c (central
    differences, second order in dt)."""
    bot = library.arm_bus()
    bot.sensors = {"ft": WristForceTorqueCfg(site="wrist_ft")}
    scene = Scene(SceneCfg(num_envs=1, entities={"bot": bot}, timestep_s=dt))
    m = scene.mj_model
    arm = scene.actuators["bot/arm"]
    target = torch.zeros((1, arm.num), dtype=torch.float64)
    target[:, :6] = torch.tensor([0.6, -0.5, 0.9, 0.3, -0.2, 0.7])
    arm.set_command(target)
    scene.view.array("qvel")[:, 3:6] = torch.tensor([0.02, -0.01, 0.03], dtype=torch.float64)
    hand, site = m.body("bot/hand").id, m.site("bot/wrist_ft").id
    rows = []
    for _ in range(round(0.52 / dt)):
        scene.step(1)
        d = mjdata(scene, 0)
        mujoco.mj_subtreeVel(m, d)
        rows.append(
            (
                m.body_subtreemass[hand] * d.subtree_linvel[hand].copy(),
                d.subtree_angmom[hand].copy(),
                d.subtree_com[hand].copy(),
                d.site_xmat[site].reshape(3, 3).copy(),
                d.site_xpos[site].copy(),
                scene.sensors["bot/ft"].value[0].numpy().copy(),
            )
        )
    force_error = torque_error = force_max = torque_max = 0.0
    for k in range(round(0.3 / dt) - 1, round(0.5 / dt)):  # rows[k] is the state at (k+1) dt
        (p0, L0, *_), (p1, L1, *_) = rows[k - 1], rows[k + 1]
        _, _, com, site_R, site_pos, reading = rows[k]
        force = (p1 - p0) / (2 * dt)
        torque = (L1 - L0) / (2 * dt) + np.cross(com - site_pos, force)
        force_error = max(force_error, np.abs(site_R.T @ force - reading[:3]).max())
        torque_error = max(torque_error, np.abs(site_R.T @ torque - reading[3:]).max())
        force_max, torque_max = (
            max(force_max, np.abs(force).max()),
            max(torque_max, np.abs(torque).max()),
        )
    return force_error, torque_error, force_max, torque_max


def test_wrist_force_torque_is_the_carried_subtrees_momentum_balance_to_second_order():
    coarse, fine = _wrist_wrench_errors(0.01), _wrist_wrench_errors(0.005)
    force_max, torque_max = fine[2], fine[3]
    assert force_max > 1.0 and torque_max > 0.05  # N, N m: the hand is driven hard
    # Measured 2026-12-06: 4.2e-3 / 1.0e-3 N and 1.0e-4 / 2.6e-5 N m, of 2.35 N and 0.095 N m.
    assert fine[0] < 1e-3 * force_max and fine[1] < 1e-3 * torque_max
    # Central differences are second order: halving dt divides the gap by ~4 (a sign or
    # frame error would not shrink, a reading one step off would shrink by ~2).
    assert 3.5 < coarse[0] / fine[0] < 4.5
    assert 3.5 < coarse[1] / fine[1] < 4.5


def test_wrist_force_torque_needs_a_site_of_its_entity():
    for site in ("", "no_such_site"):
        with pytest.raises(ValueError, match=f"site={site!r} must name a site of entity 'bot'"):
            servicer_scene({"ft": WristForceTorqueCfg(site=site)})
