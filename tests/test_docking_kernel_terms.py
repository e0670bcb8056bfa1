"""Docking's kernel terms (`orbitlab_tasks.docking.kernel_terms`): an env built with them
steps as the same env built with their torch twins (`orbitlab_tasks.docking.mdp`): the
same flags, and observations, rewards and episode sums equal to float32 rounding (the
kernels follow the torch terms' order of operations; torch's `vector_norm` may round a norm
differently in its last bit). The docking states behind them (truth from the body frames,
measured from the fused sensors) are checked against the torch states directly."""

from __future__ import annotations

import pytest
import torch
from kernel_twins import FLOAT32, NUM_ENVS, compare_rollout, torch_twin, twin_env

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.fw.terms import KernelTerm
from orbitlab_tasks import task_entry
from orbitlab_tasks.docking import docking_env_cfg, mdp
from orbitlab_tasks.docking import kernel_terms as dk


@pytest.mark.parametrize("task", ["Docking", "Docking-Velocity"])
def test_docking_kernel_terms_step_as_their_torch_twins(task):
    envs = [twin_env(task, twin) for twin in (False, True)]
    try:
        obs = envs[0].observation_manager
        assert obs.is_kernel("policy", "velocity_error") and obs.is_kernel("critic", "true_rates")
        assert not envs[1].observation_manager.is_kernel("policy", "velocity_error")
        assert compare_rollout(envs, 40) >= NUM_ENVS  # forced time-outs, 8 worlds x 4
    finally:
        for env in envs:
            env.close()


def test_the_docking_states_of_the_kernel_equal_the_torch_states():
    """Tip position, velocity and attitude error, true and measured, unscaled and unclipped,
    after random steps (as float32, the observation kernel's output)."""
    env = twin_env("Docking", False)
    try:
        env.reset(seed=11)
        gen = torch.Generator().manual_seed(2)
        for _ in range(6):
            env.step(2 * torch.rand((NUM_ENVS, env.action_manager.total_dim), generator=gen) - 1)
        chaser = docking_env_cfg.CHASER.resolve(env.scene)
        for truth in (True, False):
            state = mdp.state_of(env, chaser, truth)
            for name, key in (("tip_position", "pos"), ("tip_velocity", "vel")):
                term = getattr(dk, name)
                value = _kernel_value(env, term, chaser=chaser, truth=truth)
                torch.testing.assert_close(value, state[key].float(), **FLOAT32)
            value = _kernel_value(env, dk.docking_attitude_error, chaser=chaser, truth=truth)
            reference = mdp.docking_attitude_error(env, chaser, truth)
            torch.testing.assert_close(value, reference.float(), **FLOAT32)
    finally:
        env.close()


def _kernel_value(env: ManagerBasedRLEnv, term: KernelTerm, **params) -> torch.Tensor:
    """A kernel observation term's value in every world (float32), by a one-term kernel."""
    from orbitlab.fw.terms import TermBuild, make_observation_term_kernel, step_arrays
    from orbitlab.quiet import wp
    from orbitlab.sim.launch import WorldLaunch

    build = TermBuild(env, "test term")
    func, dim = term.factory(build, **params)
    out = torch.zeros((env.num_envs, dim), dtype=torch.float32)
    arrays = step_arrays(env, torch.zeros((env.num_envs, 0), dtype=torch.float64))
    kernel = make_observation_term_kernel([func], [dim], [0], arrays.qpos.dtype)
    env.scene.view.frames()
    launch = WorldLaunch(kernel, env.num_envs, [arrays, wp.from_torch(out)], "cpu")
    launch.launch()
    launch.close()
    return out


def test_measured_terms_run_as_their_twins_without_fused_sensors():
    """Under `fused_sensors=False` the sensor-based terms run as their torch twins; the
    truth-based ones stay in the kernel; the env steps as the torch twins' env."""
    envs = [twin_env("Docking", twin, fused_sensors=False) for twin in (False, True)]
    try:
        obs = envs[0].observation_manager
        assert not obs.is_kernel("policy", "velocity_error")
        assert obs.is_kernel("critic", "true_velocity_error")
        compare_rollout(envs, 8)
    finally:
        for env in envs:
            env.close()


def test_captures_impacts_and_collisions_flag_as_the_torch_terms():
    """Probes started 0.2-0.3 m out, up to 0.35 m off the port axis, flying at the port at
    0.02-0.4 m/s: soft captures, a hard impact and collisions, with the same flags and
    rewards (the termination impulses and the fuel term included) as the torch terms."""
    n = NUM_ENVS
    speed = torch.linspace(0.02, 0.4, n, dtype=torch.float64)[:, None]
    envs = []
    for twin in (False, True):
        cfg = load_cfg(task_entry("Docking").env_cfg, num_envs=n)
        cfg.curriculum = {}
        cfg.events["chaser"].params.update(
            range_m=(0.2, 0.3), max_lateral_m=0.35, max_lateral_per_range=None, max_speed_mps=0.0
        )
        envs.append(ManagerBasedRLEnv(torch_twin(cfg) if twin else cfg))
    try:
        assert envs[0].termination_manager.kernel_flags is not None
        assert not envs[1].termination_manager.kernel_flag_columns
        for env in envs:
            env.reset(seed=4)
            chaser = docking_env_cfg.CHASER.resolve(env.scene)
            port_z = chaser.sensors["latch"].target_point()[2][:, :, 2]
            chaser.handle.set_root_state(torch.arange(n), lin_vel_mps=-speed * port_z)
        ends = dict.fromkeys(envs[0].termination_manager.last, 0)
        gen = torch.Generator().manual_seed(1)
        for step in range(40):
            action = 0.2 * torch.rand((n, envs[0].action_manager.total_dim), generator=gen)
            outs = [env.step(action.clone()) for env in envs]
            assert torch.equal(outs[0][1], outs[1][1]), step
            for name in ends:
                a, b = (env.termination_manager.last[name] for env in envs)
                assert torch.equal(a, b), (step, name)
                ends[name] += int(a.sum())
        assert ends["success"] and ends["impact"] and ends["collision"], ends
    finally:
        for env in envs:
            env.close()
