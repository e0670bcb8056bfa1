"""Torch twins of the kernel terms, for the tests that compare an env built with kernel
terms against the same env built with their torch twins (`torch_twin`)."""

from __future__ import annotations

import dataclasses

import torch

from orbitlab.envs import mdp
from orbitlab.envs.mdp import kernel_terms as kt
from orbitlab.fw.terms import KernelTerm
from orbitlab_tasks.detumble import detumble_env_cfg as detumble

THRESHOLD = detumble.SUCCESS_RATE_RAD_S


def slow_enough(env, entity):
    return mdp.ang_vel_norm(env, entity) < THRESHOLD


def rate_potential(env):
    rate = env.scene.entities["sat"].data.root_ang_vel_b
    return torch.linalg.vector_norm(rate, dim=-1) / THRESHOLD


def rate_kernel(env, entity):
    return 1.0 - torch.exp(-mdp.ang_vel_norm(env, entity) / THRESHOLD)


TWINS = {
    kt.ang_vel_norm: mdp.ang_vel_norm,
    kt.action_l2: mdp.action_l2,
    kt.action_rate_l2: mdp.action_rate_l2,
    kt.constant: mdp.constant,
    kt.ang_vel_above: mdp.ang_vel_above,
    kt.time_out: mdp.time_out,
    kt.held_for: mdp.held_for,
    kt.potential_progress: mdp.potential_progress,
    kt.sensor_value: mdp.sensor_value,
    kt.last_action: mdp.last_action,
    kt.root_ang_vel: mdp.root_ang_vel,
    kt.wheel_speed: mdp.wheel_speed,
    detumble.slow_enough: slow_enough,
    detumble.rate_potential: rate_potential,
    detumble.rate_kernel: rate_kernel,
}
"""Each kernel term and its torch twin (the library's, or the reference of a task's own)."""


def twin_of(func):
    """The torch twin of a kernel term (`TWINS`, else its declared `KernelTerm.twin`);
    anything else as it is."""
    if not isinstance(func, KernelTerm):
        return func
    return TWINS.get(func, func.twin)


def _twin_term(term):
    params = {k: twin_of(v) for k, v in term.params.items()}
    return dataclasses.replace(term, func=twin_of(term.func), params=params)


def torch_twin(cfg, keep: tuple[str, ...] = ()):
    """`cfg` with every kernel term (but the reward and termination terms named in `keep`)
    and every kernel term inside a term's params replaced by its torch twin (new term
    configs: the task's own are left as they are)."""
    for manager in (cfg.rewards, cfg.terminations):
        for name, term in list(manager.items()):
            if name not in keep:
                manager[name] = _twin_term(term)
    twins: dict[int, object] = {}  # a term config shared by groups stays shared
    for group, group_cfg in list(cfg.observations.items()):
        terms = {
            name: twins.setdefault(id(term), _twin_term(term))
            for name, term in group_cfg.terms.items()
        }
        cfg.observations[group] = dataclasses.replace(group_cfg, terms=terms)
    return cfg


# ------------------------------------------------ comparing an env with its twin
NUM_ENVS = 32
"""Worlds of the twin-comparison rollouts."""
FLOAT32 = {"rtol": 2.5e-7, "atol": 1e-9}
"""Two float32 ulps of the value (and a floor for values that are 0 in one env)."""


def twin_env(task: str, twin: bool, **scene):
    """`task`'s policy env at `NUM_ENVS` worlds, with its kernel terms or (`twin`) their
    torch twins; `scene`: `SceneCfg` fields to change."""
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab_tasks import task_entry

    cfg = load_cfg(task_entry(task).env_cfg, num_envs=NUM_ENVS)
    if scene:
        cfg = dataclasses.replace(cfg, scene=dataclasses.replace(cfg.scene, **scene))
    return ManagerBasedRLEnv(torch_twin(cfg) if twin else cfg)


def assert_close32(a, b, where: str) -> None:
    """Tensors (or dicts of them) equal to float32 rounding (`FLOAT32`)."""
    if isinstance(a, dict):
        for key in a:
            assert_close32(a[key], b[key], f"{where}/{key}")
        return
    torch.testing.assert_close(a, b, **FLOAT32, msg=lambda m: f"{where}: {m}")


def compare_rollout(envs, steps: int) -> int:
    """Step two envs with the same random actions, a quarter of the worlds timed out every 9
    steps: observations (final ones too), rewards and episode sums equal to float32
    rounding, flags equal; returns how many episodes ended."""
    gen = torch.Generator().manual_seed(0)
    obs = [env.reset(seed=7)[0] for env in envs]
    assert_close32(obs[0], obs[1], "reset")
    ended = 0
    for step in range(steps):
        if step % 9 == 4:
            for env in envs:
                env.episode_length_buf[: NUM_ENVS // 4] = env.max_episode_length
        action = 2 * torch.rand((NUM_ENVS, envs[0].action_manager.total_dim), generator=gen) - 1
        outs = [env.step(action.clone()) for env in envs]
        (o, r, te, tr, extras), other = outs[0], outs[1]
        assert_close32(o, other[0], f"step {step}")
        assert_close32(r, other[1], f"reward {step}")
        assert torch.equal(te, other[2]) and torch.equal(tr, other[3]), step
        if "final_obs" in extras:
            assert_close32(extras["final_obs"], other[4]["final_obs"], f"final {step}")
        for name in envs[0].termination_manager.last:
            a, b = (env.termination_manager.last[name] for env in envs)
            assert torch.equal(a, b), (step, name)
        for name in envs[0].reward_manager.episode_sums:
            a, b = (env.reward_manager.episode_sums[name] for env in envs)
            assert_close32(a, b, f"sum {name} {step}")
        ended += int((te | tr).sum())
    return ended
