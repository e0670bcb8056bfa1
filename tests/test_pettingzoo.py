"""Formation's followers as a `pettingzoo.ParallelEnv`: PettingZoo's API test, seeding,
episode end, the missing-extra message and the shared-policy example."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from orbitlab_tasks.formation import parallel_env

needs_pettingzoo = pytest.mark.skipif(
    importlib.util.find_spec("pettingzoo") is None,
    reason="needs PettingZoo: pip install 'orbitlab-sim[multiagent]'",
)
AGENTS = ["follower_1", "follower_2"]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "formation_pettingzoo_shared_policy.py"


@needs_pettingzoo
def test_parallel_api_test_passes(capsys):
    """PettingZoo's own checks over two 2 s episodes (10 steps each) of random actions."""
    with warnings.catch_warnings():  # PettingZoo's test module loads its own old-API games
        warnings.simplefilter("ignore", DeprecationWarning)
        from pettingzoo.test import parallel_api_test

    env = parallel_env(episode_length_s=2.0)
    with warnings.catch_warnings(record=True) as caught:  # its findings come as warnings
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=20)
    assert not caught, [str(w.message) for w in caught]
    assert "Passed Parallel API test" in capsys.readouterr().out
    assert env.possible_agents == AGENTS and env.metadata["is_parallelizable"]
    for agent in AGENTS:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent).dtype == np.float32
    assert env.state().shape == env.state_space.shape == (40,)
    with pytest.raises(KeyError, match="leader"):
        env.action_space("leader")


@needs_pettingzoo
def test_seeded_reset_is_reproducible():
    env = parallel_env(episode_length_s=2.0)
    first, infos = env.reset(seed=7)
    again, _ = env.reset(seed=7)
    other, _ = env.reset(seed=8)
    assert list(first) == AGENTS and set(infos) == set(AGENTS)
    for agent in AGENTS:
        assert first[agent].dtype == np.float32 and first[agent].shape == (18,)
        np.testing.assert_array_equal(first[agent], again[agent])
    assert any(not np.array_equal(first[a], other[a]) for a in AGENTS)
    # The same seed and actions give the same step too.
    actions = {a: np.full(6, 0.3, dtype=np.float32) for a in AGENTS}
    outs = []
    for _ in range(2):
        env.reset(seed=7)
        outs.append(env.step(actions))
    for a in AGENTS:
        np.testing.assert_array_equal(outs[0][0][a], outs[1][0][a])
        assert outs[0][1][a] == outs[1][1][a]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pettingzoo.test import parallel_seed_test
    parallel_seed_test(lambda: parallel_env(episode_length_s=1.0), num_cycles=10)


@needs_pettingzoo
def test_agents_empty_at_episode_end():
    """A 1 s episode is 5 steps of 0.2 s: both followers time out together on the last one."""
    env = parallel_env(episode_length_s=1.0)
    obs, _ = env.reset(seed=0)
    zero = {a: np.zeros(6, dtype=np.float32) for a in AGENTS}
    for step in range(5):
        assert env.agents == AGENTS
        obs, rewards, terminated, truncated, infos = env.step(zero)
        assert all(isinstance(rewards[a], float) for a in AGENTS)
    assert env.agents == []
    assert all(truncated.values()) and not any(terminated.values())
    assert all(env.observation_space(a).contains(obs[a]) for a in AGENTS)
    assert "Episode_Termination/time_out" in infos["follower_1"]["episode"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(zero)
    with pytest.raises(ValueError, match=r"'follower_2' must have shape \(6,\), got \(12,\)"):
        env.reset()
        env.step({"follower_1": zero["follower_1"], "follower_2": np.zeros(12)})
    with pytest.raises(ValueError, match="num_envs=4 is not an option"):
        parallel_env(num_envs=4)


@needs_pettingzoo
def test_render_gives_an_image():
    env = parallel_env(render_mode="rgb_array", episode_length_s=1.0, render_size=(60, 80))
    env.reset(seed=0)
    image = env.render()
    assert image is not None and image.shape == (60, 80, 3) and image.dtype == np.uint8
    env.close()


def test_missing_pettingzoo_names_the_extra(monkeypatch):
    """Without PettingZoo the formation package still imports; parallel_env() says what to
    install, in one line."""
    monkeypatch.setitem(sys.modules, "pettingzoo", None)  # `import pettingzoo` now fails
    monkeypatch.delitem(sys.modules, "orbitlab_tasks.formation.pettingzoo_env", raising=False)
    formation = importlib.import_module("orbitlab_tasks.formation")
    with pytest.raises(ImportError) as error:
        formation.parallel_env()
    message = str(error.value)
    assert "pip install 'orbitlab-sim[multiagent]'" in message and "\n" not in message


@needs_pettingzoo
def test_shared_policy_example_runs():
    """Two tiny PPO iterations of the example (its defaults train for about a minute)."""
    spec = importlib.util.spec_from_file_location("formation_pettingzoo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    scores = example.main(
        ["--iterations", "2", "--num-envs", "4", "--steps", "5", "--episode-s", "1.0"]
    )
    assert all(np.isfinite(v) for v in scores.values())
