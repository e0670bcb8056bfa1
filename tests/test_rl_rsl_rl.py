"""The rsl-rl adapter: VecEnv contract, a short PPO run, and a checkpoint round trip."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("rsl_rl")

from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.rl.rsl_rl import OrbitlabOnPolicyRunner, RslRlVecEnvWrapper, ppo_runner_cfg
from orbitlab_tasks import task_entry

N = 8


@pytest.fixture
def wrapped() -> RslRlVecEnvWrapper:
    env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=N))
    return RslRlVecEnvWrapper(env)


def test_wrapper_contract(wrapped):
    env = wrapped.unwrapped
    assert isinstance(wrapped, VecEnv)
    assert wrapped.num_envs == N
    assert wrapped.num_actions == env.action_manager.total_dim
    assert wrapped.max_episode_length == env.max_episode_length
    assert wrapped.cfg is env.cfg
    obs = wrapped.get_observations()
    assert isinstance(obs, TensorDict)
    assert set(obs.keys()) == set(env.observation_manager.shapes)
    for name in ("policy", "critic"):
        assert obs[name].shape == (N, *env.observation_manager.shapes[name])
        assert obs[name].dtype == torch.float32
    obs, extras = wrapped.reset()
    assert isinstance(obs, TensorDict) and "log" in extras
    obs, rewards, dones, extras = wrapped.step(torch.zeros(N, wrapped.num_actions))
    assert isinstance(obs, TensorDict) and obs["policy"].shape[0] == N
    assert rewards.shape == (N,) and rewards.dtype == torch.float32
    assert dones.shape == (N,) and dones.dtype == torch.long
    assert extras["time_outs"].shape == (N,) and "log" in extras
    # the setter writes into the env's own buffer
    wrapped.episode_length_buf = torch.full((N,), 5, dtype=torch.long)
    assert int(env.episode_length_buf[0]) == 5
    # a time-out shows up as done and time_out
    wrapped.episode_length_buf = torch.full((N,), env.max_episode_length - 1, dtype=torch.long)
    _, _, dones, extras = wrapped.step(torch.zeros(N, wrapped.num_actions))
    assert bool(dones.all())
    assert bool(extras["time_outs"][dones.bool() & ~env.termination_manager.terminated].all())
    assert extras["log"]


def test_action_clipping(wrapped):
    seen = []
    manager = wrapped.unwrapped.action_manager
    original = manager.process

    def spy(action):
        seen.append(action.clone())
        return original(action)

    manager.process = spy
    wrapped.step(torch.full((N, wrapped.num_actions), 5.0))
    assert float(seen[-1].abs().max()) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        RslRlVecEnvWrapper(wrapped.unwrapped, clip_actions=0.0)


def test_ppo_learns_and_checkpoints(wrapped, tmp_path):
    torch.manual_seed(0)
    cfg = ppo_runner_cfg(num_steps_per_env=8, num_mini_batches=2)
    runner = OnPolicyRunner(wrapped, cfg, log_dir=None, device="cpu")
    runner.learn(num_learning_iterations=2)
    assert runner.current_learning_iteration == 1

    path = tmp_path / "model.pt"
    runner.save(str(path))
    obs = wrapped.get_observations()
    policy = runner.get_inference_policy(device="cpu")
    with torch.inference_mode():
        expected = policy(obs)
    assert expected.shape == (N, wrapped.num_actions)
    assert torch.isfinite(expected).all()

    fresh = OnPolicyRunner(
        wrapped, ppo_runner_cfg(num_steps_per_env=8, num_mini_batches=2), log_dir=None, device="cpu"
    )
    with torch.inference_mode():
        before = fresh.get_inference_policy(device="cpu")(obs)
    assert not torch.allclose(before, expected)
    fresh.load(str(path))
    assert fresh.current_learning_iteration == 1
    with torch.inference_mode():
        loaded = fresh.get_inference_policy(device="cpu")(obs)
    torch.testing.assert_close(loaded, expected)


def test_init_mean_scale_starts_the_policy_at_a_zero_mean_action(wrapped):
    """`init_mean_scale` scales the actor's initial mean output (its output layer's mean
    rows; biases zeroed): with 0.01 the initial mean actions are a small fraction of
    rsl-rl's in every state; the scale stays out of rsl-rl's config."""
    obs = wrapped.get_observations()
    means = {}
    for scale in (None, 0.01):
        torch.manual_seed(0)
        cfg = ppo_runner_cfg(num_steps_per_env=8, init_std=0.3, init_mean_scale=scale)
        runner = OrbitlabOnPolicyRunner(wrapped, cfg, log_dir=None, device="cpu")
        assert "init_mean_scale" not in runner.cfg
        with torch.inference_mode():
            means[scale] = runner.get_inference_policy(device="cpu")(obs)
    assert float(means[None].abs().mean()) > 0.05
    assert float(means[0.01].abs().max()) < 0.1 * float(means[None].abs().mean())
