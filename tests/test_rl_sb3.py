"""The Stable-Baselines3 adapter: VecEnv contract, time-outs, and short PPO / SAC runs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

import orbitlab_tasks
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.sb3 import Sb3VecEnvWrapper

N = 8
TASK = orbitlab_tasks.task_entry("Detumble-RW").env_cfg


def make(num_envs: int = N, **overrides) -> Sb3VecEnvWrapper:
    return Sb3VecEnvWrapper(ManagerBasedRLEnv(load_cfg(TASK, num_envs=num_envs, **overrides)))


def test_spaces_shapes_dtypes():
    wrapped = make()
    env = wrapped.unwrapped
    assert isinstance(wrapped, VecEnv)
    obs_dim = tuple(env.observation_manager.shapes["policy"])
    act_dim = env.action_manager.total_dim
    assert wrapped.num_envs == N
    assert wrapped.observation_space.shape == obs_dim
    assert wrapped.observation_space.dtype == np.float32
    assert wrapped.action_space.shape == (act_dim,)
    assert np.all(wrapped.action_space.low == -1.0) and np.all(wrapped.action_space.high == 1.0)
    obs = wrapped.reset()
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and obs.shape == (N, *obs_dim)
    actions = np.stack([wrapped.action_space.sample() for _ in range(N)])
    obs, rewards, dones, infos = wrapped.step(actions)
    assert obs.shape == (N, *obs_dim) and obs.dtype == np.float32
    assert wrapped.observation_space.contains(obs[0])
    assert rewards.shape == (N,) and rewards.dtype == np.float32
    assert dones.shape == (N,) and dones.dtype == np.bool_
    assert isinstance(infos, list) and len(infos) == N and all(isinstance(i, dict) for i in infos)
    np.testing.assert_allclose(obs, env.obs_buf["policy"].cpu().numpy())


def test_time_out_gives_terminal_observation_and_episode_info():
    wrapped = make(episode_length_s=0.5)
    env = wrapped.unwrapped
    steps = env.max_episode_length
    assert steps >= 2
    wrapped.reset()
    zeros = np.zeros((N, *wrapped.action_space.shape), dtype=np.float32)
    total = np.zeros(N)
    for _ in range(steps - 1):
        obs, rewards, dones, infos = wrapped.step(zeros)
        total += rewards
        assert not dones.any() and not any(infos)
    prev_obs = obs
    obs, rewards, dones, infos = wrapped.step(zeros)
    total += rewards
    assert dones.all()
    for i, info in enumerate(infos):
        assert info["TimeLimit.truncated"] is True
        final = info["terminal_observation"]
        assert final.shape == wrapped.observation_space.shape and final.dtype == np.float32
        assert not np.array_equal(final, obs[i])  # obs is the new episode's first
        assert not np.array_equal(final, prev_obs[i])
        assert info["episode"]["l"] == steps
        assert info["episode"]["r"] == pytest.approx(total[i], rel=1e-5, abs=1e-5)
    assert (env.episode_length_buf == 0).all()
    # the trackers restart with the new episode
    _, _, dones, infos = wrapped.step(zeros)
    assert not dones.any() and not any(infos)


def test_terminal_state_is_not_a_time_out():
    wrapped = make(num_envs=2)
    env = wrapped.unwrapped
    wrapped.reset()
    zeros = np.zeros((2, *wrapped.action_space.shape), dtype=np.float32)
    real_compute = env.termination_manager.compute

    def terminate_env_1():
        done = real_compute()
        env.termination_manager.terminated[1] = True
        return done | env.termination_manager.terminated

    env.termination_manager.compute = terminate_env_1
    _, _, dones, infos = wrapped.step(zeros)
    assert dones[1] and not dones[0]
    assert infos[1]["TimeLimit.truncated"] is False
    assert "terminal_observation" in infos[1] and infos[1]["episode"]["l"] == 1
    assert infos[0] == {}


def test_attributes_methods_and_seed():
    wrapped = make(num_envs=4)
    env = wrapped.unwrapped
    assert wrapped.get_attr("max_episode_length") == [env.max_episode_length] * 4
    assert wrapped.get_attr("num_envs", indices=[1, 2]) == [4, 4]
    assert wrapped.has_attr("step_dt") and not wrapped.has_attr("no_such_attribute")
    assert wrapped.render_mode == "rgb_array"
    wrapped.set_attr("max_episode_length", 7)
    assert env.max_episode_length == 7
    with pytest.raises(ValueError):
        wrapped.set_attr("max_episode_length", 9, indices=[0])
    assert wrapped.env_method("reseed", 3) == [None] * 4
    assert wrapped.env_is_wrapped(gym.Wrapper) == [False] * 4
    assert wrapped.env_is_wrapped(gym.Wrapper, indices=2) == [False]
    # seed() applies at the next reset(), reproducibly
    assert wrapped.seed(5) == [5, 6, 7, 8]
    first = wrapped.reset()
    assert env.seed == 5
    wrapped.seed(5)
    np.testing.assert_array_equal(wrapped.reset(), first)
    wrapped.close()


def test_single_env_passes_sb3_env_checker():
    env = gym.make("orbitlab_tasks:Orbitlab-Detumble-RW-v0").unwrapped
    check_env(env)
    env.close()


def test_vec_normalize_wraps_it():
    venv = VecNormalize(make(episode_length_s=0.5))
    obs = venv.reset()
    assert obs.shape == (N, *venv.observation_space.shape)
    steps = venv.unwrapped.max_episode_length
    for _ in range(steps):
        obs, _, dones, infos = venv.step(np.zeros((N, *venv.action_space.shape)))
    assert obs.shape == (N, *venv.observation_space.shape)
    assert dones.all() and infos[0]["terminal_observation"].shape == obs[0].shape


def test_ppo_learns_two_rollouts():
    torch.manual_seed(0)
    model = PPO(
        "MlpPolicy",
        make(episode_length_s=1.0),
        n_steps=16,
        batch_size=64,
        n_epochs=2,
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=2 * 16 * N)
    assert model.num_timesteps == 2 * 16 * N
    assert len(model.ep_info_buffer) > 0  # episode returns reach SB3's logger
    assert all({"r", "l"} <= set(info) for info in model.ep_info_buffer)
    actions, _ = model.predict(model.get_env().reset(), deterministic=True)
    assert actions.shape == (N, *model.action_space.shape)


def test_sac_learns_a_few_hundred_steps():
    model = SAC(
        "MlpPolicy",
        make(num_envs=4, episode_length_s=2.0),
        learning_starts=16,
        batch_size=32,
        buffer_size=2000,
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=320)
    assert model.num_timesteps >= 320
    assert model.replay_buffer.size() > 0
    assert model.replay_buffer.timeouts.any()  # time-outs recorded for bootstrapping
    assert len(model.ep_info_buffer) > 0


def scalar_tags(run_dir) -> dict[str, list[float]]:
    """Every scalar of the run's tensorboard event files: tag -> values."""
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    )
    events = event_accumulator.EventAccumulator(str(run_dir))
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def episode_terms(tags) -> set[str]:
    """The episode terms of a run: reward, success, episode and termination statistics."""
    prefixes = ("Episode", "Train/mean_reward", "Train/mean_episode_length")
    return {tag for tag in tags if tag.startswith(prefixes) and not tag.endswith("/time")}


def tiny_run(tmp_path, agent: dict):
    from orbitlab.rl.train import trainer
    from orbitlab.rl.train.common import TrainSettings

    settings = TrainSettings(
        "Detumble-RW", agent, tmp_path, num_envs=4, env={"episode_length_s": 0.5}
    )
    trainer(agent["library"]).train(settings)
    return scalar_tags(tmp_path)


SB3_AGENTS = {
    "PPO": {"n_steps": 8, "batch_size": 16, "n_epochs": 1},
    "SAC": {"steps_per_iteration": 8, "learning_starts": 16, "batch_size": 16, "buffer_size": 200},
}


@pytest.fixture(scope="module")
def rsl_rl_terms(tmp_path_factory) -> set[str]:
    pytest.importorskip("rsl_rl")
    agent = {"library": "rsl_rl", "max_iterations": 2, "save_interval": 2}
    agent |= {"num_steps_per_env": 8, "hidden_dims": [16], "learning_rate": 1e-3, "init_std": 0.5}
    return episode_terms(tiny_run(tmp_path_factory.mktemp("rsl_rl"), agent))


@pytest.mark.parametrize("algorithm", sorted(SB3_AGENTS))
def test_tensorboard_carries_rsl_rls_episode_terms(algorithm, rsl_rl_terms, tmp_path):
    """A tiny PPO and SAC run write, once per iteration, the episode reward, success rate and
    every reward / termination term of the env's `extras["log"]` under rsl-rl's names."""
    agent = {"library": "sb3", "algorithm": algorithm, "max_iterations": 2, "save_interval": 2}
    agent |= {"net_arch": [16], "verbose": 0, **SB3_AGENTS[algorithm]}
    tags = tiny_run(tmp_path, agent)
    expected = {
        "Train/mean_reward",
        "Train/mean_episode_length",
        "Episode/success_rate",
        "Episode_Reward/rate",
        "Episode_Termination/success",
    }
    assert expected <= rsl_rl_terms
    assert episode_terms(tags) == rsl_rl_terms
    assert all(len(tags[tag]) == 2 for tag in ("time/fps", "Train/mean_reward"))  # per iteration
