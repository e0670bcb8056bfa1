"""What the agent graph reads from the env: sensors, commands and policy inputs, by key.

`AgentReadings` is a read-only mapping built once per env. Looking a key up returns the
current tensor (a sensor's `value`, a command term's `command`, an action's graph input),
so nothing is copied or rebuilt per physics step; the graph overlays its nodes' outputs on
it (`AgentGraph.step`).

Keys: every sensor under its full name ('sat/gyro') and, when no other entity has a sensor
of that name, also under its short name ('gyro'); every command term by name; every
graph input of the action manager by its key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def sensor_keys(sensors) -> list[tuple[str, str]]:
    """(graph key, sensor name) pairs: every sensor under its full name ('sat/gyro') and,
    when no other entity has a sensor of that name, also under its short name ('gyro')."""
    shorts = Counter(name.split("/", 1)[-1] for name in sensors)
    keys = [(name, name) for name in sensors]
    keys += [
        (name.split("/", 1)[-1], name)
        for name in sensors
        if shorts[name.split("/", 1)[-1]] == 1 and "/" in name
    ]
    return keys


class AgentReadings(Mapping[str, torch.Tensor]):
    """Live, read-only view of the env's values that the agent graph may read."""

    def __init__(self, env: ManagerBasedRLEnv):
        sensors, commands = env.scene.sensors, env.command_manager.terms
        inputs = env.agent_inputs
        readers: dict[str, Callable[[], torch.Tensor]] = {}
        for key, name in sensor_keys(sensors):
            readers[key] = partial(getattr, sensors[name], "value")
        for name, term in commands.items():
            readers[name] = partial(getattr, term, "command")
        self._readers = readers
        self._inputs = inputs

    def __getitem__(self, key: str) -> torch.Tensor:
        if key in self._inputs:  # policy inputs take precedence, as they did in the dict
            return self._inputs[key]
        return self._readers[key]()

    def __contains__(self, key: object) -> bool:
        return key in self._inputs or key in self._readers

    def __iter__(self) -> Iterator[str]:
        yield from self._readers
        yield from (key for key in self._inputs if key not in self._readers)

    def __len__(self) -> int:
        return len(self._readers) + sum(key not in self._readers for key in self._inputs)
