"""orbitlab's task suite. Importing this package registers every task with
`orbitlab.registry` (each task folder's `__init__` registers its own) and with Gymnasium as
`Orbitlab-<Task>-v0`; `gymnasium.make("orbitlab_tasks:Orbitlab-Detumble-MTQ-v0")` imports
it for you. Look tasks up with `orbitlab.registry.get_task` and build them with
`orbitlab.registry.make_env`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from orbitlab.envs.registration import register_task as register_gym
from orbitlab.registry import entry_point, get_task, tasks

_FOLDERS = ("detumble", "pointing", "docking", "formation", "reach", "capture", "insertion")
for _folder in _FOLDERS:  # registers, in this order
    importlib.import_module(f"orbitlab_tasks.{_folder}")

TASKS: dict[str, object] = {spec.name: spec for spec in tasks()}
"""Task name -> its `orbitlab.registry.TaskSpec`, in registration order."""


@dataclass(frozen=True)
class TaskEntry:
    """A task's factories as 'module:function' text, for `orbitlab.envs.gym.load_cfg` (and
    Gymnasium's text entry points); new code uses `orbitlab.registry.make_env_cfg`."""

    env_cfg: str
    baseline_cfg: str


def task_entry(name: str) -> TaskEntry:
    """The entry points of a task by any spelling ('Detumble-MTQ', 'Orbitlab-Detumble-MTQ-v0',
    'detumble_mtq'); an ArgumentError (a ValueError) with "did you mean" otherwise."""
    spec = get_task(name)
    baseline = spec.baseline_cfg or spec.env_cfg
    return TaskEntry(entry_point(spec.env_cfg), entry_point(baseline))


def register_all() -> list[str]:
    """Register every task with Gymnasium; returns their ids."""
    return [register_gym(spec.name, entry_point(spec.env_cfg)) for spec in tasks()]


register_all()


def task_arg(key: str, value: str) -> str:
    """An `orbitlab.cli` converter: `value` must name a registered task; returns its name."""
    from orbitlab.cli import bad

    try:
        return get_task(value).name
    except ValueError as error:
        raise bad(key, value, str(error).split(": ", 1)[-1]) from None
