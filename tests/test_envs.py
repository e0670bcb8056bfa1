"""Manager-based env: managers on hand-made states, auto-reset, time-outs, gymnasium."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from orbitlab.actuators.momentum import ReactionWheelGroupCfg
from orbitlab.envs import mdp
from orbitlab.envs.gym import OrbitlabVectorEnv
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from orbitlab.managers import SceneEntityCfg
from orbitlab.managers.action_manager import ActuatorActionCfg
from orbitlab.managers.observation_manager import ObservationManager
from orbitlab.managers.terms import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from orbitlab.scene.entities import SpacecraftCfg
from orbitlab.scene.scene import SceneCfg
from orbitlab.sensors.inertial import GyroCfg
from orbitlab.sim.elements import ElementSet, ReactionWheelCfg

DT = 0.05


def spin_rate(env) -> torch.Tensor:
    return env.scene.entities["sat"].data.root_ang_vel_b[:, 2]


def spinning(env, env_ids, rate):
    env.scene.entities["sat"].set_root_state(env_ids, ang_vel_body=[0.0, 0.0, rate])


def step_index(env) -> torch.Tensor:
    return env.episode_length_buf.float()


def make_env(num_envs=4, episode_s=1.0, noise=0.0, history=0, fail_above=None, **kw):
    elements = ElementSet(
        wheels=[
            ReactionWheelCfg(
                name="w",
                body_name="spacecraft",
                axis_body=(0, 0, 1),
                inertia=1e-2,
                max_torque=1.0,
                max_speed=1e3,
            )
        ]
    )
    sat = SpacecraftCfg(
        mjcf="free_body",
        elements=elements,
        actuators={"rw": ReactionWheelGroupCfg()},
        sensors={"gyro": GyroCfg()},
    )
    terminations = {}
    if fail_above is not None:
        terminations["spun_up"] = TerminationTermCfg(
            func=mdp.ang_vel_above,
            params={"entity": SceneEntityCfg("sat"), "limit_rad_s": fail_above},
        )
    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=num_envs, entities={"sat": sat}, timestep_s=DT),
        decimation=2,
        episode_length_s=episode_s,
        actions={"rw": ActuatorActionCfg(group="sat/rw", scale=1.0)},
        observations={
            "policy": ObservationGroupCfg(
                terms={
                    "rate": ObservationTermCfg(
                        func=mdp.sensor_value,
                        params={"sensor_cfg": SceneEntityCfg("sat", sensor_names=("gyro",))},
                        noise_std=noise,
                        history_length=history,
                    ),
                    "step": ObservationTermCfg(func=lambda env: step_index(env)[:, None]),
                }
            )
        },
        rewards={
            "rate": RewardTermCfg(
                func=mdp.ang_vel_norm, params={"entity": SceneEntityCfg("sat")}, weight=-2.0
            ),
            "alive": RewardTermCfg(func=mdp.constant, weight=0.5),
        },
        terminations=terminations,
        events={"spin": EventTermCfg(func=spinning, mode="reset", params={"rate": 0.1})},
        **kw,
    )
    return ManagerBasedRLEnv(cfg)


def test_reward_is_the_weighted_sum_times_the_step():
    env = make_env(num_envs=2)
    _, reward, *_ = env.step(torch.zeros(2, 1))
    rate = float(spin_rate(env)[0])  # unchanged by a zero wheel torque (no other loads)
    expected = (-2.0 * abs(rate) + 0.5) * env.step_dt
    assert float(reward[0]) == pytest.approx(expected, rel=1e-5)  # float32 reward buffer


def test_time_outs_are_truncations_and_reset_only_those_envs():
    env = make_env(num_envs=3, episode_s=1.0)  # 10 env steps of 0.1 s
    env.episode_length_buf[1] = 5  # env 1 is half an episode ahead
    for k in range(5):
        _, _, terminated, truncated, extras = env.step(torch.zeros(3, 1))
    assert truncated.tolist() == [False, True, False] and not terminated.any()
    assert extras["time_outs"].tolist() == [False, True, False]
    assert env.episode_length_buf.tolist() == [5, 0, 5]  # only env 1 was reset
    assert "final_obs" in extras  # the ended episode's last observation


def test_terminal_states_reset_alone_and_are_not_time_outs():
    env = make_env(num_envs=2, fail_above=0.5, episode_s=10.0)
    torque = torch.tensor([[-1.0], [0.0]])  # the wheel spins env 0's body up: ~0.09 rad/s^2
    for _ in range(60):
        _, _, terminated, truncated, extras = env.step(torque)
        if terminated.any():
            break
    assert terminated.tolist() == [True, False] and not truncated.any()
    assert extras["log"]["Episode_Termination/spun_up"] == 1
    assert float(spin_rate(env)[0]) == pytest.approx(0.1)  # reset event re-applied
    assert float(spin_rate(env)[1]) == pytest.approx(0.1, abs=1e-4)  # only tiny GG torques


def test_a_reset_event_that_refreshes_still_costs_one_forward_pass(monkeypatch):
    """The `spin` event calls set_root_state with its default refresh: inside the env's reset
    the refresh waits for the end of the events, so the reset runs one forward pass, and the
    gyro's first sample after the reset sees the event's rate."""
    env = make_env(num_envs=3)
    env.step(torch.zeros(3, 1))
    calls = []
    forward = env.scene.data.forward
    monkeypatch.setattr(env.scene.data, "forward", lambda w=None: (calls.append(w), forward(w)))
    env._reset_idx(torch.tensor([2]))
    assert len(calls) == 1 and list(calls[0]) == [2]
    gyro = env.scene.sensors["sat/gyro"]
    assert float(gyro.truth_value[2, 2]) == 0.1


def test_episode_reward_sums_are_logged_at_reset():
    env = make_env(num_envs=2, episode_s=0.5)
    logs = []
    for _ in range(5):
        _, _, _, _, extras = env.step(torch.zeros(2, 1))
        logs.append(extras["log"])
    log = logs[-1]
    # 5 steps of 0.1 s at 0.5 alive and -2 |0.1 rad/s|: (0.5 - 0.2) * 0.5 s per 0.5 s.
    assert log["Episode_Reward/alive"] == pytest.approx(0.5, rel=1e-5)
    assert log["Episode_Reward/rate"] == pytest.approx(-0.2, rel=1e-4)


def test_observation_noise_has_its_std():
    env = make_env(num_envs=4096, noise=0.01)
    obs = env.obs_buf["policy"][:, 2] - spin_rate(env).float()
    # 4096 samples: the sample std is within 5% of 0.01 with overwhelming probability.
    assert abs(float(obs.std()) / 0.01 - 1) < 0.05 and abs(float(obs.mean())) < 0.001


def test_observation_history_stacks_oldest_first_and_restarts_at_reset():
    env = make_env(num_envs=2, history=2, episode_s=0.3)
    torque = torch.tensor([[-1.0], [-1.0]])
    seen = [env.obs_buf["policy"][0, 6:9:2].tolist()]  # z-rate history entries 0 and 2
    for _ in range(2):
        obs, *_ = env.step(torque)
        seen.append(obs["policy"][0].tolist())
    hist = torch.tensor(seen[-1][:9]).reshape(3, 3)[:, 2]  # z rates, oldest first
    assert hist[0] < hist[1] < hist[2]  # the body spins up step by step
    obs, *_ = env.step(torque)  # episode ends (3 steps): history refilled with the new value
    z = torch.tensor(obs["policy"][0, :9].tolist()).reshape(3, 3)[:, 2]
    assert torch.allclose(z, torch.full((3,), 0.1, dtype=z.dtype))


def scaled_step(env, gain) -> torch.Tensor:
    return gain * step_index(env)[:, None]


def test_a_term_shared_by_two_groups_follows_an_edit_of_either_groups_params():
    env = make_env(num_envs=2)
    groups = {
        g: ObservationGroupCfg(
            terms={"s": ObservationTermCfg(func=scaled_step, params={"gain": 2.0})}
        )
        for g in ("policy", "critic")
    }
    manager = ObservationManager(groups, env)
    env.episode_length_buf[:] = 3
    out = manager.compute()
    assert out["policy"].tolist() == out["critic"].tolist() == [[6.0], [6.0]]
    groups["critic"].terms["s"].params["gain"] = -1.0  # e.g. a curriculum's edit
    out = manager.compute()
    assert out["policy"].tolist() == [[6.0], [6.0]] and out["critic"].tolist() == [[-3.0], [-3.0]]
    groups["policy"].terms["s"].params["gain"] = torch.tensor([1.0, 5.0])[:, None]  # an array
    out = manager.compute()
    assert out["policy"].tolist() == [[3.0], [15.0]] and out["critic"].tolist() == [[-3.0], [-3.0]]


def test_bad_actions_are_refused_before_anything_is_applied():
    env = make_env(num_envs=2)
    with pytest.raises(ValueError, match="shape"):
        env.step(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="NaN"):
        env.step(torch.tensor([[0.0], [float("nan")]]))
    assert env.episode_length_buf.tolist() == [0, 0]


def test_vector_env_spaces_and_autoreset():
    env = OrbitlabVectorEnv(make_env(num_envs=3, episode_s=0.2))
    assert env.single_observation_space.shape == (4,)
    assert env.action_space.shape == (3, 1)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs.astype(np.float32))
    env.step(np.zeros((3, 1), dtype=np.float32))
    _, _, _, truncated, infos = env.step(np.zeros((3, 1), dtype=np.float32))
    assert truncated.all() and infos["_final_obs"].all()


def test_render_returns_an_image():
    env = make_env(num_envs=1, render_size=(60, 80))
    image = env.render()
    assert image.shape == (60, 80, 3) and image.dtype == np.uint8 and image.max() > 0


def test_curriculum_pools_episodes_and_holds_between_its_rates():
    """`min_episodes` 4 with two worlds that end every step: one decision per two steps, on
    the pooled rate; >= 0.8 promotes, < 0.5 demotes, in between the level holds."""
    from orbitlab.managers.terms import CurriculumTermCfg

    outcome = {"success": torch.ones(2, dtype=torch.bool)}

    def spin_in(env, env_ids, rate_range):
        pass

    def success(env):
        return outcome["success"].clone()

    def failure(env):
        return ~outcome["success"]

    env = make_env(num_envs=2, episode_s=10.0)
    cfg = env.cfg
    cfg.events = {
        "spin": EventTermCfg(func=spin_in, mode="reset", params={"rate_range": (0.0, 0.1)})
    }
    cfg.terminations = {
        "success": TerminationTermCfg(func=success),
        "failure": TerminationTermCfg(func=failure),
    }
    cfg.curriculum = {
        "rate": CurriculumTermCfg(
            func=mdp.grow_range_on_success,
            params={
                "event": "spin",
                "param": "rate_range",
                "start": (0.0, 0.1),
                "final": (0.0, 1.1),
                "step": 0.25,
                "promote_rate": 0.8,
                "demote_rate": 0.5,
                "min_episodes": 4,
            },
        )
    }
    env = ManagerBasedRLEnv(cfg)
    levels = []
    for successes in ([True, True],) * 4 + ([True, False],) * 4 + ([False, False],) * 2:
        outcome["success"] = torch.tensor(successes)
        env.step(torch.zeros(2, 1))
        levels.append(env.curriculum_manager.state["rate"])
    # all succeed: up at steps 2 and 4; half succeed: holds; none: down at step 10
    assert levels == [0.0, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25]
    assert env.event_manager.terms["spin"].params["rate_range"] == pytest.approx((0.0, 0.35))


def test_curriculum_widens_a_reset_range_as_episodes_succeed():
    from orbitlab.managers.terms import CurriculumTermCfg

    seen = []

    def spin_in(env, env_ids, rate_range):
        seen.append(tuple(rate_range))

    def always(env):
        return torch.ones(env.num_envs, dtype=torch.bool, device=env.device)

    env = make_env(num_envs=2, episode_s=10.0)
    cfg = env.cfg
    cfg.events = {
        "spin": EventTermCfg(func=spin_in, mode="reset", params={"rate_range": (0.0, 0.1)})
    }
    cfg.terminations = {"success": TerminationTermCfg(func=always)}
    cfg.curriculum = {
        "rate": CurriculumTermCfg(
            func=mdp.grow_range_on_success,
            params={
                "event": "spin",
                "param": "rate_range",
                "start": (0.0, 0.1),
                "final": (0.0, 1.1),
                "step": 0.25,
            },
        )
    }
    env = ManagerBasedRLEnv(cfg)
    for _ in range(5):
        env.step(torch.zeros(2, 1))  # every episode ends in success: one promotion a step
    assert seen[0] == (0.0, 0.1)
    assert seen[-1] == pytest.approx((0.0, 1.1))  # reached the final range after 4 steps
    assert env.curriculum_manager.state["rate"] == 1.0
    # a training resume carries the level; an explicit reset() moves nothing
    fresh = ManagerBasedRLEnv(cfg)
    assert fresh.event_manager.terms["spin"].params["rate_range"] == (0.0, 0.1)
    fresh.curriculum_manager.load_state_dict(env.curriculum_manager.state_dict())
    assert fresh.event_manager.terms["spin"].params["rate_range"] == pytest.approx((0.0, 1.1))
    fresh.step(torch.zeros(2, 1))  # mid-episode worlds (length > 0) at an explicit reset:

    def moved(env_ids):
        raise AssertionError("reset() moved the curriculum")

    fresh.curriculum_manager.compute = moved
    fresh.reset(seed=3)
    # the level and the (empty: min_episodes 0 decides at every reset) success pool
    assert fresh.curriculum_manager.state_dict() == {
        "rate": {"level": 1.0, "ended": 0, "succeeded": 0}
    }
    with pytest.raises(KeyError, match="no stateful term"):
        fresh.curriculum_manager.load_state_dict({"nope": {"level": 0.5}})
