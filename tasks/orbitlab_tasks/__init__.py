"""orbitlab's task suite: every task registers as `Orbitlab-<Task>-v0` with Gymnasium.

Importing this package registers them all; `gymnasium.make("orbitlab_tasks:Orbitlab-
Detumble-MTQ-v0")` imports it for you. Each task has an RL config (actions from a
policy) and a baseline config (a non-learned agent graph drives the actuators).
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitlab.envs.gym import register_task


@dataclass(frozen=True)
class TaskEntry:
    """Where a task's configs live ('module:function', each taking num_envs)."""

    env_cfg: str
    baseline_cfg: str


TASKS: dict[str, TaskEntry] = {
    "Detumble-MTQ": TaskEntry(
        "orbitlab_tasks.detumble.detumble_env_cfg:mtq_env_cfg",
        "orbitlab_tasks.detumble.detumble_env_cfg:mtq_baseline_cfg",
    ),
    "Detumble-RW": TaskEntry(
        "orbitlab_tasks.detumble.detumble_env_cfg:rw_env_cfg",
        "orbitlab_tasks.detumble.detumble_env_cfg:rw_baseline_cfg",
    ),
    "Pointing": TaskEntry(
        "orbitlab_tasks.pointing.pointing_env_cfg:env_cfg",
        "orbitlab_tasks.pointing.pointing_env_cfg:baseline_cfg",
    ),
    "Docking": TaskEntry(
        "orbitlab_tasks.docking.docking_env_cfg:env_cfg",
        "orbitlab_tasks.docking.docking_env_cfg:baseline_cfg",
    ),
    "Docking-Translation": TaskEntry(
        "orbitlab_tasks.docking.docking_env_cfg:translation_env_cfg",
        "orbitlab_tasks.docking.docking_env_cfg:baseline_cfg",
    ),
    "Docking-Velocity": TaskEntry(
        "orbitlab_tasks.docking.docking_env_cfg:velocity_env_cfg",
        "orbitlab_tasks.docking.docking_env_cfg:baseline_cfg",
    ),
    "Formation": TaskEntry(
        "orbitlab_tasks.formation.formation_env_cfg:env_cfg",
        "orbitlab_tasks.formation.formation_env_cfg:baseline_cfg",
    ),
    "Formation-Translation": TaskEntry(
        "orbitlab_tasks.formation.formation_env_cfg:translation_env_cfg",
        "orbitlab_tasks.formation.formation_env_cfg:baseline_cfg",
    ),
    "Formation-Velocity": TaskEntry(
        "orbitlab_tasks.formation.formation_env_cfg:velocity_env_cfg",
        "orbitlab_tasks.formation.formation_env_cfg:baseline_cfg",
    ),
}
"""Task name -> its config factories."""


def task_entry(name: str) -> TaskEntry:
    """A task by name ('Detumble-MTQ' or 'Orbitlab-Detumble-MTQ-v0')."""
    key = name.removeprefix("Orbitlab-").removesuffix("-v0")
    if key not in TASKS:
        raise ValueError(f"unknown task '{name}'; known: {', '.join(TASKS)}")
    return TASKS[key]


def register_all() -> list[str]:
    """Register every task with Gymnasium; returns their ids."""
    return [register_task(name, entry.env_cfg) for name, entry in TASKS.items()]


register_all()


def task_arg(key: str, value: str) -> str:
    """An `orbitlab.cli` converter: `value` must name a registered task."""
    from orbitlab.cli import bad

    try:
        task_entry(value)
    except ValueError:
        raise bad(key, value, f"expected a task: {', '.join(TASKS)}") from None
    return value
