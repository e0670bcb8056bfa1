"""`orbitlab list`: every registered task with its success criterion and tuned agents."""

from __future__ import annotations


def task_table() -> list[str]:
    """One block per task: name (and its `task=` option), summary, success, agents."""
    from orbitlab.registry import broken_sources, tasks

    lines = []
    for spec in tasks():
        agents = ", ".join(f"{lib}: {name}" for lib, name in spec.agents.items())
        lines += [
            f"{spec.name}  (task={spec.config_name}, gym id {spec.gym_id})",
            f"  {spec.summary}",
            f"  success: {spec.success}",
            f"  tuned agent: {agents or 'none (trains with rsl_rl_ppo)'}",
            f"  baseline: {'yes' if spec.baseline_cfg is not None else 'no'}",
        ]
    lines += [f"not loaded: {message}" for message in broken_sources().values()]
    return lines


def print_tasks() -> int:
    print("\n".join(task_table()))
    return 0
