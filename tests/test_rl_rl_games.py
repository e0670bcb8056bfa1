"""The rl-games adapter: IVecEnv contract, registration, and a short PPO run of the YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

pytest.importorskip("rl_games")

import gymnasium as gym
from rl_games.common import env_configurations, vecenv
from rl_games.common.ivecenv import IVecEnv
from rl_games.torch_runner import Runner

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.rl_games import RlGamesVecEnvWrapper, register_rl_games_env
from orbitlab_tasks import task_entry

N = 8
PARAMS = (
    Path(__file__).resolve().parents[1] / "orbitlab" / "configs" / "agent" / "rl_games_ppo.yaml"
)


def make_env(**_env_config) -> ManagerBasedRLEnv:
    return ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=N))


@pytest.fixture
def wrapped() -> RlGamesVecEnvWrapper:
    return RlGamesVecEnvWrapper(make_env())


def test_wrapper_contract(wrapped):
    env = wrapped.unwrapped
    shapes = env.observation_manager.shapes
    num_actions = env.action_manager.total_dim
    assert isinstance(wrapped, IVecEnv)
    assert wrapped.get_number_of_agents() == 1
    info = wrapped.get_env_info()
    for key, shape in (
        ("observation_space", shapes["policy"]),
        ("state_space", shapes["critic"]),
        ("action_space", (num_actions,)),
    ):
        assert isinstance(info[key], gym.spaces.Box) and info[key].shape == tuple(shape)
    assert float(info["action_space"].low.min()) == -1.0
    assert float(info["action_space"].high.max()) == 1.0

    obs = wrapped.reset()
    assert set(obs) == {"obs", "states"}
    assert obs["obs"].shape == (N, *shapes["policy"]) and obs["obs"].dtype == torch.float32
    assert obs["states"].shape == (N, *shapes["critic"])
    assert obs["obs"].device == torch.device(env.device)

    obs, rewards, dones, infos = wrapped.step(torch.full((N, num_actions), 5.0))
    assert float(env.action_manager.action.abs().max()) <= 1.0  # clipped to the space
    assert rewards.shape == (N,) and rewards.dtype == torch.float32
    assert dones.shape == (N,) and dones.dtype == torch.uint8
    assert infos["time_outs"].shape == (N,) and "log" in infos

    # a time-out shows up as done and time_out, with the episode statistics
    env.episode_length_buf[:] = env.max_episode_length - 1
    _, _, dones, infos = wrapped.step(torch.zeros(N, num_actions))
    assert bool(dones.all())
    assert bool(infos["time_outs"][~env.termination_manager.terminated].all())
    assert infos["episode"] and infos["episode"] is infos["log"]


def test_register_and_short_ppo_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    register_rl_games_env(make_env)
    assert env_configurations.configurations["orbitlab"]["vecenv_type"] in vecenv.vecenv_config
    made = vecenv.create_vec_env("orbitlab", N)
    assert isinstance(made, RlGamesVecEnvWrapper) and made.num_envs == N
    with pytest.raises(ValueError, match="num_actors"):
        vecenv.create_vec_env("orbitlab", N + 1)

    params = yaml.safe_load(PARAMS.read_text())
    assert params["config"]["env_name"] == "orbitlab"
    assert params["algo"]["name"] == "a2c_continuous"
    cfg = params["config"]
    cfg.update(
        num_actors=N,
        max_epochs=2,
        horizon_length=8,
        minibatch_size=32,
        mini_epochs=2,
        device=str(made.device),
        device_name=str(made.device),
        train_dir=str(tmp_path / "runs"),
        full_experiment_name="test",
        save_frequency=0,
        save_best_after=1000,
    )
    cfg["central_value_config"].update(minibatch_size=32, mini_epochs=2)
    params["torch_threads"] = 0  # leave the process's torch thread count alone

    runner = Runner()
    runner.load({"params": params})
    runner.run({"train": True, "play": False, "checkpoint": None, "sigma": None})
    assert (tmp_path / "runs" / "test" / "nn").is_dir()


def test_minibatch_fits_any_number_of_envs():
    from orbitlab.rl.train.rl_games import fitting_minibatch

    assert fitting_minibatch(8192, 32 * 256) == 8192
    assert fitting_minibatch(8192, 32 * 128) == 4096  # was: "batch_size 4096 must be ..."
    assert fitting_minibatch(8192, 32 * 100) == 3200
    assert fitting_minibatch(1000, 32 * 100) == 800
    with pytest.raises(ValueError, match="minibatch_size must be >= 1, got 0"):
        fitting_minibatch(0, 64)
