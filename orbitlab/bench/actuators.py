"""Actuator benchmark: a task's actuator stage and thruster allocation, the Warp kernels
against the torch reference.

For each task and env count:

* **stage**: two envs are built from the same config, one with
  `SceneCfg.fused_actuators=False` (every group's torch `apply`, the reference), reset with
  the same seed and given the same random commands; a trial times `steps` calls of each
  scene's actuator stage (the env's per-physics-step call, `scene.actuator_stage.apply()`),
  the two interleaved;
* **allocation** (tasks with thrusters): the first thruster group's allocator of each env,
  the kernel solver (`ThrusterGroupCfg.allocation_solver='kernel'`) and the torch solver,
  allocates the same wrenches under the group's limits, a third of them beyond what the
  thrusters can give (saturated), interleaved.

Medians over the trials are reported in ms per call, with the Python calls and torch
operations of one call (`orbitlab.bench.calls`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from orbitlab.actuators.allocation import ThrusterAllocator
from orbitlab.actuators.thrusters import ThrusterGroupCfg
from orbitlab.bench.calls import calls_per_call
from orbitlab.bench.rows import Results, interleaved, measure_rows
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import make_env_cfg


@dataclass(kw_only=True)
class ActuatorBenchCfg:
    tasks: tuple[str, ...]
    """Registered task names (`orbitlab.registry`)."""
    num_envs: tuple[int, ...] = (256, 4096)
    steps: int = 20
    """Calls per trial."""
    trials: int = 7
    """Interleaved trials (median reported)."""


def _env(task: str, num_envs: int, fused: bool) -> ManagerBasedRLEnv:
    """The task's env with its actuators fused and allocation kernel (`fused`) or the
    torch reference of both, with random commands held."""
    cfg = make_env_cfg(task, num_envs, backend="cpu")
    cfg.scene.fused_actuators = fused
    for entity in cfg.scene.entities.values():
        for group in getattr(entity, "actuators", {}).values():
            if isinstance(group, ThrusterGroupCfg):
                group.allocation_solver = "kernel" if fused else "torch"
    env = ManagerBasedRLEnv(cfg)
    env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    for group in env.scene.actuators.values():
        u = torch.rand((num_envs, group.num), generator=gen, dtype=torch.float64)
        group.set_command(group.low + u * (group.high - group.low))
    return env


def _requests(allocator: ThrusterAllocator, num_envs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Wrenches of random forces within the limits, a third of them tripled (saturated)."""
    gen = torch.Generator().manual_seed(1)
    u = allocator.max_force_n.expand(num_envs, -1)
    forces = torch.rand(u.shape, generator=gen, dtype=torch.float64) * u
    wrench = forces @ allocator.matrix.T
    wrench[::3] *= 3.0
    return wrench, u


def measure_task(task: str, num_envs: int, cfg: ActuatorBenchCfg) -> dict[str, float]:
    """One (task, num_envs) row: ms per call of each stage and solver, ratios, counts."""
    reference, fused = _env(task, num_envs, False), _env(task, num_envs, True)
    stages = {
        "torch": reference.scene.actuator_stage.apply,
        "fused": fused.scene.actuator_stage.apply,
    }
    t = interleaved(stages, cfg.steps, cfg.trials)
    row = {
        "groups": len(fused.scene.actuators),
        "fused_groups": len(fused.scene.actuator_stage.fused),
        "stage_torch_ms": 1e3 * t["torch"],
        "stage_fused_ms": 1e3 * t["fused"],
        "stage_speedup": t["torch"] / t["fused"],
    }
    for key, fn in stages.items():
        row[f"stage_{key}_python_calls"], row[f"stage_{key}_torch_ops"] = calls_per_call(fn)
    names = [name for name, g in fused.scene.actuators.items() if g.kind == "thrusters"]
    if names:
        solvers = {
            "torch": reference.scene.actuators[names[0]].allocator(),
            "kernel": fused.scene.actuators[names[0]].allocator(),
        }
        wrench, limits = _requests(solvers["kernel"], num_envs)
        calls = {key: (lambda a=a: a.allocate(wrench, limits)) for key, a in solvers.items()}
        t = interleaved(calls, max(1, cfg.steps // 4), cfg.trials)
        row.update(
            {
                "allocation_torch_ms": 1e3 * t["torch"],
                "allocation_kernel_ms": 1e3 * t["kernel"],
                "allocation_speedup": t["torch"] / t["kernel"],
            }
        )
        for key, fn in calls.items():
            row[f"allocation_{key}_python_calls"], row[f"allocation_{key}_torch_ops"] = (
                calls_per_call(fn)
            )
    return row


def measure_actuators(
    cfg: ActuatorBenchCfg, on_row: Callable[[dict], None] | None = None
) -> Results:
    """{task: {num_envs: row}}; `on_row(results)` after every row."""
    return measure_rows(cfg.tasks, cfg.num_envs, lambda t, n: measure_task(t, n, cfg), on_row)


def format_actuators(results) -> str:
    """The rows as a text table (allocation columns '-' for tasks without thrusters)."""
    width = max([len("task"), *(len(task) for task in results)])
    header = (
        f"{'task':<{width}} {'envs':>6} {'fused/all':>9} {'stage torch/fused ms':>21} "
        f"{'speed-up':>9} {'py calls':>13} {'alloc torch/kernel ms':>22} {'speed-up':>9} "
        f"{'py calls':>13}"
    )
    lines = [header]
    for task, rows in results.items():
        for n, r in rows.items():
            stage = f"{r['stage_torch_ms']:.2f} / {r['stage_fused_ms']:.2f}"
            stage_calls = (
                f"{r['stage_torch_python_calls']:,.0f} / {r['stage_fused_python_calls']:,.0f}"
            )
            if "allocation_torch_ms" in r:
                alloc = f"{r['allocation_torch_ms']:.2f} / {r['allocation_kernel_ms']:.2f}"
                alloc_x = f"{r['allocation_speedup']:.1f}x"
                alloc_calls = (
                    f"{r['allocation_torch_python_calls']:,.0f} / "
                    f"{r['allocation_kernel_python_calls']:,.0f}"
                )
            else:
                alloc, alloc_x, alloc_calls = "-", "-", "-"
            lines.append(
                f"{task:<{width}} {n:>6} {r['fused_groups']:>4.0f}/{r['groups']:<4.0f} "
                f"{stage:>21} {r['stage_speedup']:>8.1f}x {stage_calls:>13} {alloc:>22} "
                f"{alloc_x:>9} {alloc_calls:>13}"
            )
    return "\n".join(lines)
