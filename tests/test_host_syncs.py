"""Host reads inside `env.step`: counted by a guard, so that no new one slips in.

A host read (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `nonzero()`, or a tensor turned
into a Python bool/int/float) waits for the device: free on the CPU backend, a stall per call
on a GPU. The guard patches those torch entry points for one steady-state step (no episode
ends) and records the calling function. The env's own loop makes one (which envs to reset)
and the action manager one (a non-finite action is refused before anything is applied); the
rest are listed in `REMAINING` with the component that still makes them, to be removed
there (task code under `tasks/` is not checked). A read at any other place fails the test.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import torch

from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks import task_entry

ROOT = Path(__file__).resolve().parents[1]
READS = ("item", "cpu", "tolist", "numpy", "nonzero", "__bool__", "__int__", "__float__")

PLUMBING = {
    ("orbitlab/envs/manager_based_rl_env.py", "step"): 1,
    ("orbitlab/managers/action_manager.py", "process"): 1,
}
"""The framework loop's own reads per step: the reset decision and the action check."""
REMAINING = {
    ("orbitlab/sensors/base.py", "update"),  # the sensor timer (CPU only: orbitlab.sync)
    ("orbitlab/sensors/fused.py", "_any_due"),  # the fused sensors' timer (CPU only)
    ("orbitlab/agent/node.py", "update"),  # the node timer (CPU only: orbitlab.sync)
    ("orbitlab/actuators/base.py", "set_command"),  # a non-finite command (CPU only)
    ("orbitlab/actuators/allocation.py", "_checked"),  # a non-finite wrench (CPU only)
    ("orbitlab/actuators/allocation.py", "_limits"),  # a negative limit (CPU only)
    ("orbitlab/managers/command_manager.py", "step"),  # the ids of the commands to resample
}
"""Reads outside the loop's plumbing that are still there (component: function)."""
GPU_REMAINING = {
    ("orbitlab/envs/manager_based_rl_env.py", "step"),  # which envs to reset (one read)
}
"""The reads a steady step still makes when built as on a GPU, task code included."""


def _caller() -> tuple[str, str]:
    """(repository path, function) of the innermost orbitlab frame that made the read."""
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename).resolve()
        if ROOT in path.parents and path.name != Path(__file__).name:
            return str(path.relative_to(ROOT)), frame.f_code.co_name
        frame = frame.f_back
    return "?", "?"


@contextlib.contextmanager
def count_host_reads() -> Iterator[Counter]:
    """Count host reads by (file, function) while the block runs."""
    counts: Counter = Counter()
    saved = {name: getattr(torch.Tensor, name) for name in READS}
    saved_nonzero = torch.nonzero

    def counting(original):
        def read(*args, **kwargs):
            counts[_caller()] += 1
            return original(*args, **kwargs)

        return read

    try:
        for name, original in saved.items():
            setattr(torch.Tensor, name, counting(original))
        torch.nonzero = counting(saved_nonzero)
        yield counts
    finally:
        for name, original in saved.items():
            setattr(torch.Tensor, name, original)
        torch.nonzero = saved_nonzero


def _steady_step_reads(entry: str) -> Counter:
    cfg = load_cfg(entry, num_envs=4)
    cfg.scene.nthread = 1
    env = ManagerBasedRLEnv(cfg)
    action = torch.zeros((env.num_envs, env.action_manager.total_dim))
    env.step(action)
    with count_host_reads() as counts:
        env.step(action)
    assert "final_obs" not in env.extras  # a steady-state step: no episode ended
    return counts


GATHERING = ("orbitlab/sensors/base.py", "orbitlab/sensors/fused.py", "orbitlab/agent/node.py")
"""Components that read the host only where reads are free (`orbitlab.sync`): on a GPU
they compute every world, masked."""


def _rollout(entry: str, steps: int) -> list[torch.Tensor]:
    """Observations, rewards and the final state of a rollout with random actions."""
    from orbitlab.envs.state import get_state

    cfg = load_cfg(entry, num_envs=3)
    cfg.scene.nthread = 1
    env = ManagerBasedRLEnv(cfg)
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(steps):
        action = 2 * torch.rand((3, env.action_manager.total_dim), generator=gen) - 1
        obs, reward, *_ = env.step(action)
        out += [obs["policy"].clone(), reward.clone()]
    out += [torch.as_tensor(v) for k, v in sorted(get_state(env).items())]
    return out


def test_the_gpu_path_reads_no_timer_and_matches_the_cpu_path(monkeypatch):
    """Built as on a GPU (`host_reads_are_free` False), sensors and agent nodes make no host
    read, and the rollout (sensors every 1 and 2 physics steps, nodes every 1, 4 and 5) is
    bit-identical to the CPU path's."""
    entries = [task_entry("Formation").baseline_cfg, task_entry("Detumble-MTQ").baseline_cfg]
    cpu = [_rollout(entry, 12) for entry in entries]
    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    for entry, expected in zip(entries, cpu, strict=True):
        counts = _steady_step_reads(entry)
        assert not [site for site in counts if site[0] in GATHERING], counts
        got = _rollout(entry, 12)
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and torch.equal(a, b)


def test_a_steady_step_makes_only_the_listed_host_reads():
    for task in ("Detumble-RW", "Formation"):
        for entry in (task_entry(task).env_cfg, task_entry(task).baseline_cfg):
            counts = _steady_step_reads(entry)
            for site, count in PLUMBING.items():
                assert counts.pop(site, 0) == count, (entry, site)
            unexpected = {
                site: n
                for site, n in counts.items()
                if not site[0].startswith("tasks/")
                and site not in REMAINING
                and (site[0], "*") not in REMAINING
            }
            assert not unexpected, (entry, unexpected)


def test_the_guard_sees_a_host_read():
    with count_host_reads() as counts:
        torch.ones(3).sum().item()
        bool(torch.ones(1))
    assert sum(counts.values()) == 2


def test_built_as_on_a_gpu_every_task_makes_only_the_listed_reads(monkeypatch):
    """Every registered task, with its policy env and its baseline (agent graph), built as on
    a GPU: the action check, command checks, sensor and node timers make no host read; what
    is left is `GPU_REMAINING`, with one read for the reset decision."""
    from orbitlab.registry import entry_point, tasks

    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    shipped = [spec for spec in tasks() if entry_point(spec.env_cfg).startswith("orbitlab_tasks.")]
    assert len(shipped) >= 9  # (other tests may register tasks of their own)
    for spec in shipped:
        for entry in (task_entry(spec.name).env_cfg, task_entry(spec.name).baseline_cfg):
            counts = _steady_step_reads(entry)
            assert counts[("orbitlab/envs/manager_based_rl_env.py", "step")] == 1, entry
            assert set(counts) <= GPU_REMAINING, (entry, counts)


RESET_REMAINING = {
    ("orbitlab/envs/manager_based_rl_env.py", "step"),  # which envs to reset (one read)
    ("orbitlab/envs/manager_based_rl_env.py", "_end_episodes"),  # frozen worlds, their reasons
    ("orbitlab/scene/scene.py", "reset"),  # host ids for MuJoCo's reset, checked
    ("orbitlab/scene/scene.py", "set_orbit_state"),  # host ids for the orbit layer
    ("orbitlab/scene/scene.py", "refresh_worlds"),  # host ids for the forward pass
    ("orbitlab/envs/mdp/events.py", "randomize_orbit"),  # orbits drawn on the host
    ("orbitlab/envs/mdp/curriculum.py", "__call__"),  # the level, decided on the host
}
"""The reads a step that ends episodes still makes when built as on a GPU: the reset
decision, the count of frozen worlds (whose reasons the step reports) and the reset path's
host ids and draws. The episode statistics of the reward and termination terms and the
sensors' restart make none."""


def test_built_as_on_a_gpu_a_step_that_ends_episodes_logs_without_host_reads(monkeypatch):
    from orbitlab.registry import entry_point, tasks

    monkeypatch.setattr("orbitlab.sync.host_reads_are_free", lambda device: False)
    shipped = [spec for spec in tasks() if entry_point(spec.env_cfg).startswith("orbitlab_tasks.")]
    for spec in shipped:
        cfg = load_cfg(task_entry(spec.name).env_cfg, num_envs=4)
        cfg.scene.nthread = 1
        env = ManagerBasedRLEnv(cfg)
        action = torch.zeros((env.num_envs, env.action_manager.total_dim))
        env.step(action)
        env.episode_length_buf[:2] = env.max_episode_length  # two worlds time out next
        with count_host_reads() as counts:
            env.step(action)
        assert "final_obs" in env.extras, spec.name
        log = env.extras["log"]
        assert env.extras["time_outs"][:2].all(), spec.name
        assert all(
            isinstance(v, torch.Tensor) for k, v in log.items() if k.startswith("Episode")
        ), spec.name
        assert counts[("orbitlab/envs/manager_based_rl_env.py", "step")] == 1, spec.name
        assert set(counts) <= RESET_REMAINING, (spec.name, counts)
        # Measured 2026-12-06: 12 (attitude tasks, Reach), 15 (Docking*), 6 (Formation*).
        assert sum(counts.values()) <= 15, (spec.name, counts)
