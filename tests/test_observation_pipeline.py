"""The observation groups built by one kernel launch (`orbitlab.managers.observation_pipeline`),
with the kernel observation terms where a task has them, equal the torch pipeline's
(`fused_observations=False`, every kernel term replaced by its torch twin) bit for bit, for
every shipped task, across resets, final observations and a curriculum's edit of a term."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from kernel_twins import torch_twin

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.managers import ObservationGroupCfg, ObservationTermCfg
from orbitlab.managers.observation_pipeline import fusable
from orbitlab.registry import entry_point, tasks
from orbitlab_tasks import task_entry

NUM_ENVS = 6


def _shipped() -> list[str]:
    return [s.name for s in tasks() if entry_point(s.env_cfg).startswith("orbitlab_tasks.")]


def _pair(entry: str, **changes) -> list[ManagerBasedRLEnv]:
    envs = []
    for fused in (True, False):
        cfg = load_cfg(entry, num_envs=NUM_ENVS)
        cfg.scene.nthread = 1
        cfg = cfg if fused else torch_twin(cfg)
        envs.append(
            ManagerBasedRLEnv(dataclasses.replace(cfg, fused_observations=fused, **changes))
        )
    return envs


def _equal(a: dict, b: dict, where: str) -> None:
    assert list(a) == list(b), where
    for group, x in a.items():
        y = b[group]
        assert isinstance(x, torch.Tensor) and x.dtype == y.dtype, (where, group)
        assert x.is_contiguous() and torch.equal(x, y), (where, group)


def _rollout(envs: list[ManagerBasedRLEnv], steps: int, edit=None) -> int:
    """Same actions into both; compare every observation and final observation."""
    gen = torch.Generator().manual_seed(0)
    obs = [env.reset(seed=2)[0] for env in envs]
    _equal(obs[0], obs[1], "reset")
    ended = 0
    for step in range(steps):
        if edit is not None and step == steps // 2:
            for env in envs:
                edit(env)
        if step % 7 == 3:  # a partial reset in the middle of episodes
            for env in envs:
                env.episode_length_buf[:2] = env.max_episode_length
        action = 2 * torch.rand((NUM_ENVS, envs[0].action_manager.total_dim), generator=gen) - 1
        outs = [env.step(action) for env in envs]
        _equal(outs[0][0], outs[1][0], f"step {step}")
        if "final_obs" in outs[0][4]:
            assert torch.equal(outs[0][4]["final_obs"], outs[1][4]["final_obs"]), step
            ended += 1
    return ended


@pytest.mark.parametrize("task", _shipped())
def test_the_kernel_builds_every_tasks_observations_as_the_torch_pipeline(task):
    entry = task_entry(task)
    for cfg_entry in dict.fromkeys([entry.env_cfg, entry.baseline_cfg]):
        envs = _pair(cfg_entry)
        groups = envs[0].cfg.observations
        assert envs[0].observation_manager._fused is not None or not any(
            fusable(g) for g in groups.values()
        )
        assert envs[1].observation_manager._fused is None
        assert _rollout(envs, 12) >= 2, cfg_entry  # the forced time-outs at least
        for env in envs:
            env.close()


def test_an_edited_scale_clip_or_noise_is_followed_at_the_next_step():
    """A curriculum's edits: a term's scale and clip (the kernel's plan is made again) and
    noise switched on (the group goes back to the torch pipeline, noised the same)."""

    def edit(env):  # Detumble's critic shares the policy's term configs, noise off
        terms = env.observation_manager.groups["policy"].terms
        terms["gyro_fine"].scale = 3.0
        terms["magnetometer"].clip = (-0.1, 0.1)
        terms["gyro"].noise_std = 0.01

    envs = _pair(task_entry("Detumble-RW").env_cfg)
    _rollout(envs, 10, edit=edit)
    assert envs[0].observation_manager._fused is not None
    assert list(envs[0].observation_manager._fused.columns) == ["critic"]


def test_a_group_with_noise_history_or_a_dict_keeps_the_torch_pipeline():
    term = ObservationTermCfg(func=lambda env: env.episode_length_buf[:, None].float())
    assert fusable(ObservationGroupCfg(terms={"t": term}))
    noisy = dataclasses.replace(term, noise_std=0.1)
    assert not fusable(ObservationGroupCfg(terms={"t": noisy}))
    assert fusable(ObservationGroupCfg(terms={"t": noisy}, enable_noise=False))
    assert not fusable(
        ObservationGroupCfg(terms={"t": dataclasses.replace(term, history_length=2)})
    )
    assert not fusable(ObservationGroupCfg(terms={"t": term}, concatenate=False))


def test_kernel_terms_feed_the_torch_pipeline_too():
    """Without the observation kernel (`fused_observations=False`) the kernel terms still
    run in their kernel, and the torch pipeline builds the groups from their values."""
    envs = _pair(task_entry("Detumble-RW").env_cfg)
    cfg = load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=NUM_ENVS)
    cfg.scene.nthread = 1
    envs[0] = ManagerBasedRLEnv(dataclasses.replace(cfg, fused_observations=False))
    assert envs[0].observation_manager._fused._launch is None
    _rollout(envs, 8)


def test_a_term_whose_width_changes_is_named():
    cfg = load_cfg(task_entry("Reach").env_cfg, num_envs=NUM_ENVS)
    env = ManagerBasedRLEnv(cfg)
    env.reset(seed=0)
    manager = env.observation_manager
    name = next(n for n in cfg.observations["policy"].terms if not manager.is_kernel("policy", n))
    env.observation_manager._funcs["policy"][name] = lambda env, **params: torch.zeros(
        (NUM_ENVS, 17)
    )
    with pytest.raises(ValueError, match=f"observation term 'policy/{name}'"):
        env.observation_manager.compute()


def test_the_kernel_builds_the_observations_on_the_warp_backend(warp_device):
    """On MuJoCo-Warp (a GPU in the GPU check) too, bit for bit (Detumble-RW: sensor,
    action, state and wheel kernel terms)."""
    pytest.importorskip("mujoco_warp")
    envs = []
    for fused in (True, False):
        cfg = load_cfg(
            task_entry("Detumble-RW").env_cfg, num_envs=4, backend="warp", device=warp_device
        )
        cfg = cfg if fused else torch_twin(cfg)
        envs.append(ManagerBasedRLEnv(dataclasses.replace(cfg, fused_observations=fused)))
    assert envs[0].observation_manager._fused is not None
    obs = [env.reset(seed=1)[0] for env in envs]
    _equal(obs[0], obs[1], "reset")
    for step in range(4):
        action = torch.zeros((4, envs[0].action_manager.total_dim), device=envs[0].device)
        obs = [env.step(action)[0] for env in envs]
        _equal(obs[0], obs[1], f"step {step}")


def test_a_sensor_term_runs_as_its_torch_twin_where_the_sensor_runs_in_torch():
    """Under `fused_sensors=False` a sensor's values are not in the kernel's arrays: the
    task's kernel sensor terms run as their torch twins (`KernelTerm.twin`), the others
    stay in the kernel."""
    cfg = load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=NUM_ENVS)
    cfg.scene.fused_sensors = False
    env = ManagerBasedRLEnv(cfg)
    manager = env.observation_manager
    assert not manager.is_kernel("policy", "gyro") and not manager.is_kernel(
        "policy", "magnetometer"
    )
    assert manager.is_kernel("policy", "last_action") and manager.is_kernel("policy", "wheel_speed")
    obs, *_ = env.step(torch.zeros((NUM_ENVS, env.action_manager.total_dim)))
    assert torch.isfinite(obs["policy"]).all()
