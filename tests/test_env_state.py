"""Env state capture/restore: bit-exact continuation in a fresh env (cpu backend)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from orbitlab.demos.layout import StateLayout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.envs.state import get_state, set_state, states_equal
from orbitlab_tasks import task_entry


def _env(task: str, num_envs: int, baseline: bool = False) -> ManagerBasedRLEnv:
    entry = task_entry(task)
    cfg = load_cfg(entry.baseline_cfg if baseline else entry.env_cfg, num_envs=num_envs)
    cfg.scene.nthread = 1
    return ManagerBasedRLEnv(cfg)


def _actions(env, steps: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    dim = env.action_manager.total_dim
    return [2 * torch.rand((env.num_envs, dim), generator=gen) - 1 for _ in range(steps)]


@pytest.mark.parametrize(
    ("task", "baseline"), [("Docking", False), ("Detumble-RW", False), ("Docking", True)]
)
def test_restore_continues_bit_exactly(task, baseline):
    a = _env(task, 2, baseline)
    a.reset(seed=3)
    actions = _actions(a, 30)
    for t in range(12):
        a.step(actions[t])
    state = get_state(a)
    layout = StateLayout.from_state(state)
    restored = layout.unflatten(layout.flatten(state))  # through the robomimic vector
    assert states_equal(state, restored)[0]
    b = _env(task, 2, baseline)
    set_state(b, restored)
    assert states_equal(get_state(b), state)[0]
    for t in range(12, 30):
        obs_a, rew_a, term_a, trunc_a, _ = a.step(actions[t])
        obs_b, rew_b, term_b, trunc_b, _ = b.step(actions[t])
        equal, diff, keys = states_equal(get_state(a), get_state(b))
        assert equal, (t, diff, keys[:5])
        for group in obs_a:
            assert torch.equal(obs_a[group], obs_b[group]), (t, group)
        assert torch.equal(rew_a, rew_b) and torch.equal(term_a, term_b)
        assert torch.equal(trunc_a, trunc_b)


def test_one_world_into_another_env():
    """World 1 of a 2-world env, restored into world 0 of a 1-world env, continues exactly."""
    a = _env("Detumble-RW", 2)
    a.reset(seed=5)
    actions = _actions(a, 20)
    for t in range(8):
        a.step(actions[t])
    b = _env("Detumble-RW", 1)
    set_state(b, get_state(a, [1]), [0], restore_globals=True)
    for t in range(8, 20):
        a.step(actions[t])
        b.step(actions[t][1:])
        equal, diff, keys = states_equal(get_state(a, [1]), get_state(b, [0]), ignore=("global/",))
        assert equal, (t, diff, keys[:5])


def test_a_state_captured_between_physics_steps_is_refused_before_anything_is_written():
    """The env's timers are compiled for its decimation (`orbitlab.cycle`): a state whose
    step counts are not whole env steps names the key, its value and the rule, and the
    env is left as it was."""
    a = _env("Detumble-RW", 2)  # decimation 5
    a.reset(seed=5)
    a.step(_actions(a, 1)[0])
    state = get_state(a)
    state["view/step_count"] = state["view/step_count"] + np.array([0, 2])
    before = get_state(a)
    with pytest.raises(ValueError, match=r"'view/step_count' = 7 \(row 1\).*decimation 5"):
        set_state(a, state)
    assert states_equal(before, get_state(a))[0]


def test_layout_packs_generators_and_round_trips():
    env = _env("Detumble-RW", 1)
    state = get_state(env)
    layout = StateLayout.from_state(state)
    rng = [e for e in layout.entries if e.key.startswith("global/rng/")]
    assert rng and all(e.dtype == "uint8" and e.size * 4 == np.prod(e.shape) for e in rng)
    assert StateLayout.from_json(layout.to_json()) == layout
    vector = layout.flatten(state)
    assert vector.shape == (1, layout.size) and vector.dtype == np.float64
    assert states_equal(layout.unflatten(vector[0]), state)[0]
