"""Compiled cycles (`orbitlab.cycle`): which timers can be due at a physics step of an env
step, and an env stepping as it would reading every timer."""

from __future__ import annotations

import pytest
import torch

from orbitlab.cycle import timing_in_cycle
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import make_env_cfg


@pytest.mark.parametrize("cycle", range(1, 9))
def test_a_cycles_timing_is_exactly_which_worlds_can_be_due(cycle):
    """A world's call count at call `phase` of a cycle is phase + k * cycle (k: the cycles
    since its reset); brute force over k against the closed form."""
    for period in range(1, 13):
        for phase in range(cycle):
            due = {(phase + k * cycle) % period == 0 for k in range(2 * period)}
            expected = "every" if due == {True} else None if due == {False} else "timer"
            assert timing_in_cycle(period, cycle, phase) == expected, (period, cycle, phase)


@pytest.mark.parametrize(
    "task, fused",
    [
        ("Formation-Velocity", True),
        ("Docking-Velocity", True),
        ("Capture-Arm", True),
        ("Docking", True),
        ("Pointing", False),  # the sensors' torch updates (periods of 1 and 5, decimation 10)
    ],
)
def test_an_env_compiled_for_its_decimation_steps_as_the_uncompiled_one(task, fused):
    """The env compiles its agent graph and its sensors for its decimation: observations,
    rewards and ends bit for bit those of the same env evaluating every node's and every
    sensor's timer at every physics step, across resets of some worlds."""
    cfg = make_env_cfg(task, 8)
    cfg.scene.fused_sensors = fused
    envs = [ManagerBasedRLEnv(cfg) for _ in range(2)]
    compiled, reference = envs
    decimation = compiled.cfg.decimation
    assert decimation > 1 and compiled.scene.sensor_stage.cycle == decimation
    reference.scene.sensor_stage.cycle = 0  # no cycle: the timers are read
    if compiled.agent is not None:
        assert compiled.agent.cycle == decimation
        step = reference.agent.step
        reference.agent.step = lambda values, count=None, phase=None: step(values, count)
    for env in envs:
        env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for i in range(24):
        action = 2 * torch.rand((8, compiled.action_manager.total_dim), generator=gen) - 1
        (obs, *rest), (obs_ref, *rest_ref) = (env.step(action) for env in envs)
        for group, value in obs.items():
            assert torch.equal(value, obs_ref[group]), (task, i, group)
        for a, b in zip(rest[:3], rest_ref[:3], strict=True):  # reward, terminated, truncated
            assert torch.equal(a, b), (task, i)
        if i % 10 == 4:
            for env in envs:
                env._reset_idx(torch.tensor([2, 5]))
    for env in envs:
        env.close()
