"""Capture: the latching end effector (a scene weld), the stack's mass properties, the wrist
loads, the episode's start, the scripted baseline and the env checkers."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.scene import spacecraft
from orbitlab.scene.compile import assemble
from orbitlab.scene.scene import Scene, SceneCfg
from orbitlab.scene.welds import WeldCfg
from orbitlab.sensors.rotations import quat_from_matrix, quat_to_matrix
from orbitlab_tasks.capture import capture_env_cfg as capture
from orbitlab_tasks.capture import mdp

DEG = math.pi / 180.0

sys.path.insert(0, str(Path(__file__).parent))
from test_free_floating import free_space


def latched_pair(client_rate_rad_s=(0.0, 0.0, 0.0), **backend) -> Scene:
    """The servicer at rest, arm in the ready pose, and the client placed exactly at the
    latch's held pose (its centre of mass at rest, turning at `client_rate_rad_s`, body
    axes); the latch released. `backend`: SceneCfg's backend and device (default the CPU)."""
    scene = Scene(
        SceneCfg(
            num_envs=1,
            entities={"bot": spacecraft.servicer(), "client": spacecraft.client_sat()},
            welds={"latch": capture.env_cfg(1).scene.welds["latch"]},
            orbit=free_space(),
            **backend,
        )
    )
    m = scene.mj_model
    qpos = scene.view.array("qpos")
    ready = torch.tensor([mdp.READY_POSE_RAD], dtype=torch.float64)
    for name, q in zip(spacecraft.ARM_JOINTS, mdp.READY_POSE_RAD, strict=True):
        qpos[0, m.joint(f"bot/{name}").qposadr[0]] = q
    scene.actuators["bot/arm"].set_command(ready)  # the servos hold the ready pose
    scene.actuators["bot/gripper"].set_command(torch.tensor([[mdp.GRIPPER_OPEN_M]]))
    scene.refresh_worlds(torch.tensor([0]))
    hand = scene.body_id("bot/hand")
    hand_rot = scene.view.array("xmat")[0, hand].reshape(3, 3).to(torch.float64)
    hand_pos = scene.view.array("xpos")[0, hand].to(torch.float64)
    offset, quat = (torch.tensor(x, dtype=torch.float64) for x in mdp.FIXTURE_IN_HAND)
    fixture_rot = hand_rot @ quat_to_matrix(quat)
    fixture_pos = hand_pos + hand_rot @ offset
    fixture_in_client = torch.as_tensor(m.body_pos[scene.body_id("client/fixture")])
    client_pos = fixture_pos - fixture_rot @ fixture_in_client  # the fixture is not turned
    com = fixture_rot @ torch.as_tensor(m.body_ipos[scene.body_id("client/bus")])
    com_world = client_pos + com  # the client's bus holds its centre of mass offset
    rate = torch.tensor(client_rate_rad_s, dtype=torch.float64)
    omega_world = fixture_rot @ rate
    scene.entities["client"].set_root_state(
        torch.tensor([0]),
        pos_m=client_pos[None],
        quat=quat_from_matrix(fixture_rot)[None],
        lin_vel_mps=torch.linalg.cross(omega_world, client_pos - com_world)[None],
        ang_vel_body=rate[None],
    )
    return scene


def composite_inertia(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    """Inertia of every body about the whole model's centre of mass, kg m^2 (3, 3), from each
    body's mass, principal inertia and pose (parallel-axis theorem)."""
    mass = m.body_mass
    com = (mass[:, None] * d.xipos).sum(0) / mass.sum()
    total = np.zeros((3, 3))
    for b in range(1, m.nbody):
        r = d.xipos[b] - com
        rot = d.ximat[b].reshape(3, 3)
        total += rot @ np.diag(m.body_inertia[b]) @ rot.T
        total += mass[b] * (r @ r * np.eye(3) - np.outer(r, r))
    return total


def angular_momentum(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    """The model's angular momentum about its centre of mass, N m s."""
    mujoco.mj_forward(m, d)
    mujoco.mj_subtreeVel(m, d)
    return d.subtree_angmom[0].copy()


def latch_gaps(**backend) -> tuple[float, float, float]:
    """Grapple point to grasp centre (m) of a tumbling client placed on the held pose:
    at the start, 2 s later unlatched, 3 s later latched."""
    rate = (0.02, -0.03, 0.05)
    scene = latched_pair(client_rate_rad_s=rate, **backend)
    grasp, grapple = scene.site_id("bot/grasp"), scene.site_id("client/grapple")

    def gap() -> float:
        sites = scene.view.array("site_xpos")[0].to(torch.float64).cpu()
        return (sites[grapple] - sites[grasp]).norm().item()

    start = gap()
    scene.step(200)  # released: the tumbling client turns away from the gripper (~4 cm in 2 s)
    unlatched = gap()
    scene = latched_pair(client_rate_rad_s=rate, **backend)
    scene.set_weld_active("latch", torch.ones(1, dtype=torch.bool, device=scene.device), True)
    assert scene.weld_active("latch").tolist() == [True]
    scene.step(300)
    latched = gap()
    scene.reset()
    assert scene.weld_active("latch").tolist() == [False]
    return start, unlatched, latched


def test_the_latch_holds_the_fixture_at_the_grasp_and_a_reset_releases_it():
    start, unlatched, latched = latch_gaps()
    assert start < 1e-12  # placed on the held pose
    assert unlatched > 0.01  # not held
    assert latched < 2e-3  # held (a soft constraint under the stack's loads)
    with pytest.raises(ValueError, match="no weld named 'nope'.*welds: latch"):
        latched_pair().weld_id("nope")


def test_the_latch_holds_on_the_warp_backend(warp_device):
    """The weld switched per world in MuJoCo-Warp's data (float32): the same hold."""
    pytest.importorskip("mujoco_warp")
    start, unlatched, latched = latch_gaps(backend="warp", device=warp_device)
    assert start < 1e-5  # float32 positions of a ~1 m arm
    assert unlatched > 0.01 and latched < 2e-3


def rigid_stack_model(scene: Scene) -> mujoco.MjModel:
    """Plain MuJoCo (no orbit layer, no gravity) of the scene's bodies with the latch engaged
    and every arm joint locked at the ready pose by an equality: one rigid stack once the
    constraints have settled."""
    compiled = assemble(
        {"bot": spacecraft.servicer(), "client": spacecraft.client_sat()},
        {},
        scene.physics_dt,
        # engaged, and stiffer than the task's (0.05 s) so that the stack settles in seconds
        {"latch": dataclasses.replace(scene.cfg.welds["latch"], active=True, solref=(0.02, 1.0))},
    )
    spec = compiled.mj_spec
    spec.option.gravity = [0.0, 0.0, 0.0]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    for name, q in zip(spacecraft.ARM_JOINTS, mdp.READY_POSE_RAD, strict=True):
        lock = spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=f"bot/{name}")
        lock.data[:5] = [q, 0.0, 0.0, 0.0, 0.0]
    return spec.compile()


def test_a_latched_client_turns_with_the_stack_as_their_mass_properties_say():
    """The client tumbling at 5 deg/s is latched to a servicer at rest: angular momentum is
    kept through the grasp and the stack then turns as one rigid body, at the rate its
    composite inertia (the parallel-axis sum over every body) gives, not the client's."""
    rate = 5.0 * DEG * np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81])
    scene = latched_pair(client_rate_rad_s=tuple(rate))
    m = rigid_stack_model(scene)
    d = mujoco.MjData(m)
    for field in ("qpos", "qvel", "ctrl"):
        getattr(d, field)[:] = scene.view.array(field)[0].numpy()
    momentum = angular_momentum(m, d)
    assert np.linalg.norm(momentum) > 0.5  # the client's, about the stack's centre
    for _ in range(600):  # 6 s: the constraints' transient has decayed ~1e4 times
        mujoco.mj_step(m, d)
    # the weld's force pair acts at two points a soft constraint's error apart: measured
    # 1.0e-4 of H, all of it in the first 0.1 s
    np.testing.assert_allclose(
        angular_momentum(m, d), momentum, rtol=0, atol=3e-4 * np.linalg.norm(momentum)
    )
    expected = np.linalg.solve(composite_inertia(m, d), momentum)
    for body in ("bot/bus", "client/bus"):
        omega = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, m.body(body).id, omega, 0)
        np.testing.assert_allclose(
            omega[:3], expected, rtol=0, atol=2e-3 * np.linalg.norm(expected)
        )
    assert np.linalg.norm(expected) < 0.3 * np.linalg.norm(rate)  # the client alone: 5 deg/s


def test_the_wrist_carries_the_latched_clients_inertial_load():
    """A 40 N push on the servicer's bus, aimed through the rigid stack's centre of mass,
    accelerates the 150 kg stack without turning it; the wrist's force-torque sensor then
    carries the share of what lies beyond it (the hand and the client, 80.9 kg)."""
    scene = latched_pair()
    m = rigid_stack_model(scene)
    d = mujoco.MjData(m)
    for field in ("qpos", "qvel", "ctrl"):
        getattr(d, field)[:] = scene.view.array(field)[0].numpy()
    mujoco.mj_forward(m, d)
    bus = m.body("bot/bus").id
    com = (m.body_mass[:, None] * d.xipos).sum(0) / m.body_mass.sum()
    push = 40.0 * (com - d.xipos[bus]) / np.linalg.norm(com - d.xipos[bus])
    d.xfrc_applied[bus, :3] = push
    for _ in range(200):  # 2 s
        mujoco.mj_step(m, d)
    carried = (
        m.body_subtreemass[m.body("bot/hand").id] + m.body_subtreemass[m.body("client/bus").id]
    )
    expected = push * carried / m.body_mass.sum()  # the force on the carried bodies, world
    sensor = m.sensor("bot/wrist_ft/force")
    force_site = d.sensordata[sensor.adr[0] : sensor.adr[0] + 3]
    site = m.site("bot/wrist_ft").id
    force = d.site_xmat[site].reshape(3, 3) @ force_site
    np.testing.assert_allclose(force, expected, rtol=0, atol=0.01 * np.linalg.norm(expected))


def test_a_reset_puts_the_servicer_at_standoff_behind_a_tumbling_client():
    env = ManagerBasedRLEnv(capture.env_cfg(64))
    env.reset(seed=3)
    client = mdp.client_state(env)
    rate = client["omega"].norm(dim=-1) / DEG
    assert rate.min() >= 1.0 - 1e-9 and rate.max() <= 5.0 + 1e-9 and rate.max() - rate.min() > 2.5
    target = mdp.target_state(env)
    grasp = mdp.grasp_state(env)
    gap = target["pos"] - grasp["pos"]
    along = (gap * target["rot"][..., 0]).sum(-1)
    assert along.min() >= 1.0 - 1e-6 and along.max() <= 3.0 + 1e-6
    torch.testing.assert_close(gap, along[:, None] * target["rot"][..., 0], rtol=0, atol=1e-9)
    assert mdp.angle_error(env).max().item() < 1e-6
    assert mdp.finger_opening(env).min().item() == pytest.approx(mdp.GRIPPER_OPEN_M)
    assert not mdp.latched(env).any()
    bus = env.scene.entities["bot"].data
    assert bus.root_lin_vel_w.abs().max() == 0 and bus.root_ang_vel_b.abs().max() == 0


def test_closing_the_gripper_latches_only_inside_the_capture_envelope():
    env = ManagerBasedRLEnv(capture.env_cfg(2))
    env.reset(seed=0)
    close = torch.zeros((2, env.action_manager.total_dim))
    close[:, -1] = -1.0  # gripper closed, bus and arm idle
    env.step(close)
    assert not mdp.latched(env).any()  # 1-3 m away: the fingers close on nothing
    assert mdp.finger_opening(env).max().item() < mdp.GRIPPER_OPEN_M


def test_the_latch_releases_only_on_an_open_command_held_half_a_second():
    """A noisy gripper command that crosses the threshold for a step keeps the latch; an
    open command held for `RELEASE_HOLD_S` (10 env steps) releases it; a reset restarts the
    timer (and it is part of the env's state)."""
    env = ManagerBasedRLEnv(capture.env_cfg(1))
    env.reset(seed=0)
    term = env.command_manager.terms["target"]
    ctrl = env.scene.view.array("ctrl")
    gripper = int(env.scene.mj_model.actuator("bot/gripper").id)
    env.scene.set_weld_active("latch", torch.tensor([True]), True)

    def command(opening: float, steps: int) -> bool:
        for _ in range(steps):
            ctrl[:, gripper] = opening
            term.latch.update()
        return bool(mdp.latched(env)[0])

    assert command(mdp.GRIPPER_OPEN_M, 9) and command(0.0, 1)  # 0.45 s open, then closed
    assert command(mdp.GRIPPER_OPEN_M, 9)  # the timer restarted at the closed step
    assert "latch" in term.state_dict()
    assert term.latch.state_dict()["open_s"].item() == pytest.approx(0.45)
    assert not command(mdp.GRIPPER_OPEN_M, 1)  # 0.5 s held open: released
    env.reset()
    assert term.latch.open_s.item() == 0.0


def test_the_scripted_baseline_captures_and_detumbles():
    """4 of 4 worlds (seed 0) latch, hold 10 s under the load limits and bring the stack
    below 0.5 deg/s within the episode (the 256-world figure: README)."""
    env = ManagerBasedRLEnv(capture.baseline_cfg(4))
    env.reset(seed=0)
    success = torch.zeros(4, dtype=torch.bool)
    ended = torch.zeros(4, dtype=torch.bool)
    for _ in range(round(100.0 / env.step_dt)):
        _, _, terminated, truncated, _ = env.step(torch.zeros((4, 0)))
        success |= env.termination_manager.last["success"] & ~ended
        ended |= terminated | truncated
        if ended.all():
            break
    assert success.all(), success


def test_capture_passes_the_gymnasium_and_sb3_env_checkers():
    env = gym.make("orbitlab_tasks:Orbitlab-Capture-v0").unwrapped
    check_env(env, skip_render_check=True)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(env)
    env.close()


def test_the_gripper_action_opens_at_zero_and_above_and_closes_below():
    env = ManagerBasedRLEnv(capture.env_cfg(3))
    env.reset(seed=0)
    action = torch.zeros((3, env.action_manager.total_dim))
    action[:, -1] = torch.tensor([0.0, 0.7, -0.01])
    env.step(action)
    command = env.scene.actuators["bot/gripper"].command[:, 0].tolist()
    assert command == [mdp.GRIPPER_OPEN_M, mdp.GRIPPER_OPEN_M, 0.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"body1": "bot/nope"}, r"weld 'latch': body1='bot/nope' must name a body"),
        ({"body2": "bot/hand"}, r"weld 'latch': body1 and body2 are both 'bot/hand'"),
        (
            {"quat": (1.0, 1.0, 0.0, 0.0)},
            r"weld 'latch': quat=\(1.0, 1.0, 0.0, 0.0\) must be a unit",
        ),
        ({"pos_m": (0.0, float("nan"), 0.0)}, r"weld 'latch': pos_m=.* must be 3 finite numbers"),
    ],
)
def test_a_bad_weld_is_refused_naming_the_item(change, message):
    weld = dataclasses.replace(WeldCfg(body1="bot/hand", body2="client/fixture"), **change)
    with pytest.raises(ValueError, match=message):
        Scene(
            SceneCfg(
                entities={"bot": spacecraft.arm_bus(), "client": spacecraft.client_sat()},
                welds={"latch": weld},
            )
        )


def test_capture_arm_leaves_the_bus_to_the_synchronised_loop():
    """Capture-Arm: 7 actions (joint rates, gripper); the agent graph flies the bus: from
    rest it closes in on the client (the standoff shrinks) whatever the arm does."""
    env = ManagerBasedRLEnv(capture.arm_env_cfg(2))
    env.reset(seed=0)
    assert env.action_manager.total_dim == 7
    assert set(env.agent_outputs.values()) == {"bot/rcs"}
    bus = env.agent.nodes[0]
    start = bus.standoff.clone()
    for _ in range(100):  # 5 s
        env.step(torch.zeros((2, 7)))
    assert (bus.standoff < start - 0.1).all()  # ~0.1 m/s once synchronised


def test_teleop_drives_the_arm_and_the_grip_button_toggles_the_gripper():
    from orbitlab.demos.teleop import TeleopMapping
    from orbitlab.devices import ScriptedCfg, ScriptedDevice

    env = ManagerBasedRLEnv(capture.arm_env_cfg(1))
    env.reset(seed=0)
    device = ScriptedDevice(
        ScriptedCfg(commands=[[1.0, 0, 0, 0, 0, 0]], events={1: "grip"}, end="hold")
    )
    mapping = TeleopMapping(env, device)
    assert "'grip' button" in mapping.describe()
    gripper = []
    for _ in range(3):
        action = mapping(device.advance())
        assert action.shape == (1, 7) and action[0, :6].abs().max() > 0  # the arm's rates
        gripper.append(float(action[0, 6]))
    assert gripper == [1.0, -1.0, -1.0]  # open until the button, then closed
    mapping.reset()
    assert float(mapping(device.advance())[0, 6]) == 1.0


def test_capture_arms_joint_targets_return_to_the_ready_pose():
    """With `home_rad`, the rate action integrates less (target - home) / time constant: a
    held rate settles at home + rate x time constant, no action decays back home."""
    env = ManagerBasedRLEnv(capture.arm_env_cfg(1))
    env.reset(seed=0)
    term = env.action_manager.terms["arm"]
    home = torch.tensor(mdp.READY_POSE_RAD, dtype=torch.float64)
    tau = capture.ARM_HOME_TIME_CONSTANT_S
    action = torch.zeros((1, 7))
    action[0, 0] = 0.2  # shoulder yaw at 0.1 rad/s
    for _ in range(200):  # 10 s = 5 time constants
        env.step(action)
    offset = term.target[0] - home
    assert offset[0].item() == pytest.approx(0.1 * tau, rel=0.01)
    assert offset[1:].abs().max().item() < 1e-12
    for _ in range(200):
        env.step(torch.zeros((1, 7)))
    assert (term.target[0] - home).abs().max().item() < 0.01 * 0.1 * tau


def test_the_trainer_notes_segments_shorter_than_an_episode():
    """Every training segment starts by resetting every env: a segment shorter than the
    episode cuts it, and the trainer says so (Capture-Arm's config is long enough)."""
    from types import SimpleNamespace

    from orbitlab.rl.train.rsl_rl import segment_cuts_episodes

    env = SimpleNamespace(max_episode_length_s=120.0, step_dt=0.05)  # 2400 steps
    note = segment_cuts_episodes({"save_interval": 50, "num_steps_per_env": 32}, env)
    assert note is not None and "1600 env steps" in note and "at least 75" in note
    assert segment_cuts_episodes({"save_interval": 100, "num_steps_per_env": 32}, env) is None


def test_a_segments_reset_restarts_the_logged_episode_sums():
    """rsl-rl's logger sums each env's return and length until a done; a segment's reset
    ends every episode without one, so the trainer restarts the sums: the next logged
    episode is the 2 steps after the reset, not 5."""
    pytest.importorskip("rsl_rl")
    from rsl_rl.utils.logger import Logger

    from orbitlab.rl.train.rsl_rl import restart_episode_sums

    logger = Logger(None, {"algorithm": {}}, {}, 2, False, 1, 0, "cpu")
    logger.writer = object()  # rsl-rl sums episodes only where it writes logs
    ones, running, done = torch.ones(2), torch.zeros(2), torch.tensor([1, 0])
    for _ in range(3):
        logger.process_env_step(ones, running, {})
    restart_episode_sums(logger)
    logger.process_env_step(ones, running, {})
    logger.process_env_step(ones, done, {})
    assert list(logger.lenbuffer) == [2.0] and list(logger.rewbuffer) == [2.0]


def test_the_stack_rate_term_charges_nothing_for_the_clients_free_tumble():
    """Before the latch the client tumbles freely at 1-5 deg/s and the bus follows it: the
    potential-based stack-rate term pays back what it charged (episode sum = 0.5 x the
    potential's drop since the first step), a small fraction of the 0.5 x rate x 3 s that a
    per-second cost of the rate would charge."""
    env = ManagerBasedRLEnv(capture.arm_env_cfg(8))
    env.reset(seed=0)
    hold_open = torch.zeros((8, env.action_manager.total_dim))
    hold_open[:, -1] = 1.0
    env.step(hold_open)
    first = mdp.stack_rate_potential(env).clone()  # rate / (1 deg/s)
    for _ in range(59):
        env.step(hold_open)
    assert not mdp.latched(env).any()
    paid = env.reward_manager.episode_sums["stack_rate"].double()
    expected = 0.5 * (first - mdp.stack_rate_potential(env))
    torch.testing.assert_close(paid, expected, rtol=1e-4, atol=1e-6)  # float32 sums
    per_second_cost = 0.5 * first * 3.0
    assert (paid.abs() < 0.02 * per_second_cost).all(), (paid, per_second_cost)
