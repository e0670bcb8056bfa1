"""The formation's kernel observation terms (`orbitlab_tasks.formation.kernel_terms`): each
formation task's env built with them steps as the same env built with their torch twins
(`orbitlab_tasks.formation.mdp`): observations equal to float32 rounding (the kernels follow
the torch terms' order of operations; torch's norms and batched matrix products may round
differently in the last bit), rewards and flags as well."""

from __future__ import annotations

import pytest
from kernel_twins import compare_rollout, twin_env


@pytest.mark.parametrize(
    ("task", "measured"),
    [
        ("Formation", "follower_1/slot_pos"),
        ("Formation-Translation", "follower_2/slot_pos"),
        ("Formation-Velocity", "follower_1/slot_vel"),
    ],
)
def test_formation_kernel_terms_step_as_their_torch_twins(task, measured):
    envs = [twin_env(task, twin) for twin in (False, True)]
    try:
        manager = envs[0].observation_manager
        assert manager.is_kernel("policy", measured)
        assert manager.is_kernel("critic", "follower_1/last_action")
        assert not envs[1].observation_manager.is_kernel("policy", measured)
        assert compare_rollout(envs, 30) >= 24  # forced time-outs, 8 worlds x 3
    finally:
        for env in envs:
            env.close()


def test_measured_formation_terms_run_as_their_twins_without_fused_sensors():
    """Under `fused_sensors=False` the sensor-based terms run as their torch twins, the
    privileged ones stay in the kernel, and the env steps as the torch twins' env."""
    envs = [twin_env("Formation", twin, fused_sensors=False) for twin in (False, True)]
    try:
        manager = envs[0].observation_manager
        assert not manager.is_kernel("policy", "follower_1/slot_pos")
        assert manager.is_kernel("critic", "follower_1/true_slot")
        compare_rollout(envs, 6)
    finally:
        for env in envs:
            env.close()
