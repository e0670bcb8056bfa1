"""Command terms: counter-based draws per world, and resampling by mask on a GPU.

A world's n-th draw depends only on the term's seed, the world and n, so resampling the due
worlds by index (the CPU path, one host read) and drawing for every world under a mask (the
GPU path, no host read) give the same commands bit for bit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.envs.state import get_state
from orbitlab.registry import make_env_cfg

sys.path.insert(0, str(Path(__file__).parent))
from test_host_syncs import count_host_reads


def pointing(num_envs: int = 6) -> ManagerBasedRLEnv:
    """Pointing with slews redrawn every 0.5-2 s, so that worlds resample mid-episode at
    different steps."""
    cfg = make_env_cfg("Pointing", num_envs, backend="cpu")
    cfg.commands["attitude"].resampling_time_range_s = (0.5, 2.0)
    return ManagerBasedRLEnv(cfg)


def rollout(steps: int = 40) -> tuple[list[torch.Tensor], int]:
    """(observations, rewards, targets and the final state; command-manager host reads)."""
    env = pointing()
    term = env.command_manager.terms["attitude"]
    gen = torch.Generator().manual_seed(0)
    out, reads = [], 0
    for _ in range(steps):
        action = 2 * torch.rand((6, env.action_manager.total_dim), generator=gen) - 1
        with count_host_reads() as counts:
            obs, reward, *_ = env.step(action)
        reads += sum(n for (path, _), n in counts.items() if path.endswith("command_manager.py"))
        out += [obs["policy"].clone(), reward.clone(), term.target.clone()]
    out += [torch.as_tensor(v) for _, v in sorted(get_state(env).items())]
    return out, reads


def test_resampling_by_mask_matches_resampling_by_index_without_host_reads(monkeypatch):
    cpu, cpu_reads = rollout()
    assert cpu_reads > 0  # the CPU path finds the due worlds with a host read
    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    gpu, gpu_reads = rollout()
    assert gpu_reads == 0
    assert len(gpu) == len(cpu)
    for a, b in zip(gpu, cpu, strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b)
    targets = torch.stack(cpu[2:120:3])  # the slews really were redrawn during the rollout
    assert (targets[1:] != targets[:-1]).any(dim=-1).sum() >= 6


def test_a_worlds_draws_do_not_depend_on_which_worlds_draw_with_it():
    term = pointing().command_manager.terms["attitude"]
    term.reseed(7)
    together = term.draw_normal(torch.tensor([1, 3, 4]), 3)
    again = term.draw_uniform(torch.tensor([3]), -1.0, 1.0)
    term.reseed(7)
    alone = term.draw_normal(torch.tensor([3]), 3)
    masked = term.draw_uniform(torch.tensor([False, False, False, True, False, False]), -1.0, 1.0)
    assert torch.equal(alone[0], together[1]) and torch.equal(masked[3], again[0])
    assert term.draws.tolist() == [0, 0, 0, 2, 0, 0]  # a mask advances only its worlds


@pytest.mark.parametrize("low, high", [(0.0, 1.0), (10.0, 90.0)])
def test_uniform_draws_fill_their_range_evenly(low, high):
    term = pointing(4096).command_manager.terms["attitude"]
    u = term.draw_uniform(torch.arange(4096), low, high)
    assert ((u > low) & (u < high)).all()
    # mean and variance of 4096 uniform draws: within 4 standard errors
    mean, var = (high - low) / 2 + low, (high - low) ** 2 / 12
    assert abs(float(u.mean()) - mean) < 4 * (var / 4096) ** 0.5
    assert abs(float(u.var()) / var - 1.0) < 4 * (0.8 / 4096) ** 0.5
