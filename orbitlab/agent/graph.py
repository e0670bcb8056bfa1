"""The agent: nodes chained synchronously, each on its own timer.

`AgentGraph.step` runs the nodes in list order; each reads the readings plus the outputs that
earlier nodes published in this call (or hold from their last update), so data moves through
the whole chain within one call. A learned policy replaces a prefix of the chain and feeds the
rest: `graph.suffix("wrench")` is the graph after node 'wrench', whose external inputs include
everything the cut nodes published.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping, Sequence

import torch

from orbitlab.agent.node import Node, as_world_tensor
from orbitlab.cycle import Timing, timing_in_cycle
from orbitlab.stateful import Stateful


class _Published(dict):
    """The outputs published so far in one graph call, reading through to `base` (the
    graph's input values) for any other key: a node's lookup of an earlier node's output
    is one dict lookup, not a walk over a ChainMap's maps."""

    def __init__(self, base: Mapping[str, torch.Tensor]) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, key: str) -> torch.Tensor:
        return self.base[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.base


class AgentGraph(Stateful):
    """An ordered chain of nodes sharing num_envs, dt_s and device.

    Construction checks that every required node input is published by an earlier node or
    listed in `external_inputs` (ValueError naming node and key), that node names are unique and
    that no two nodes publish one key. The graph counts its calls per world (`step_count`,
    zeroed by `reset`); `step` uses that count unless one is given. Nodes are shared, not
    copied, by `suffix`, so a suffix and its parent see the same timers and held outputs.
    """

    state_attrs = ("step_count", "nodes")

    def __init__(self, nodes: Sequence[Node], external_inputs: Iterable[str] = ()) -> None:
        self.nodes = list(nodes)
        self.external_inputs = frozenset(external_inputs)
        if not self.nodes:
            raise ValueError("AgentGraph needs at least one node")
        first = self.nodes[0]
        self.num_envs, self.dt_s, self.device = first.num_envs, first.dt_s, first.device
        self._check_nodes()
        self.step_count = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        """Graph calls since each world's reset, (num_envs,)."""
        self.cycle = 0
        """The cycle `compile` fixed (0: none; every call evaluates every node's timer)."""
        self._plan: list[tuple[tuple[Node, Timing | None], ...]] = []

    def _check_nodes(self) -> None:
        names: set[str] = set()
        publisher: dict[str, str] = {}
        for node in self.nodes:
            if node.name in names:
                raise ValueError(f"AgentGraph: two nodes are named '{node.name}'")
            names.add(node.name)
            if node.num_envs != self.num_envs or abs(node.dt_s - self.dt_s) > 1e-12 * self.dt_s:
                raise ValueError(
                    f"AgentGraph: node '{node.name}' has num_envs {node.num_envs}, "
                    f"dt_s {node.dt_s}; the graph has {self.num_envs}, {self.dt_s}"
                )
            for name, key in node.input_keys.items():
                if (
                    name not in node.optional_inputs
                    and key not in publisher
                    and key not in self.external_inputs
                ):
                    raise ValueError(
                        f"AgentGraph: node '{node.name}' input '{name}' reads key "
                        f"'{key}', which no earlier node publishes and which is "
                        f"not in external_inputs {sorted(self.external_inputs)}"
                    )
            for key in node.output_keys.values():
                if key in publisher:
                    raise ValueError(
                        f"AgentGraph: key '{key}' is published by both node "
                        f"'{publisher[key]}' and node '{node.name}'"
                    )
                publisher[key] = node.name
        self.published_keys = tuple(publisher)

    def compile(self, cycle: int) -> None:
        """Fix the graph's schedule for calls that come in cycles of `cycle` (an env's
        decimation), every world's call count a multiple of `cycle` at the start of each:
        `step(..., phase=i)` then runs, at call i of the cycle, only the nodes that some
        world may be due for (`timing_in_cycle`), without evaluating the timer of a node
        every world is due for. The outputs are those of the uncompiled step, bit for bit."""
        if not (isinstance(cycle, int) and cycle >= 1):
            raise ValueError(f"AgentGraph.compile: cycle = {cycle!r} must be an int >= 1")
        self.cycle = cycle
        self._plan = [
            tuple((node, timing_in_cycle(node.period_steps, cycle, phase)) for node in self.nodes)
            for phase in range(cycle)
        ]

    def step(
        self,
        values: Mapping[str, torch.Tensor],
        step_count: torch.Tensor | int | None = None,
        phase: int | None = None,
    ) -> ChainMap[str, torch.Tensor]:
        """Run every node in order; return `values` overlaid with all published outputs.

        The result is a `ChainMap` whose first map holds the published outputs and whose
        second is `values` itself (not copied), so a live view such as the env's
        `AgentReadings` is read only for the keys the nodes ask for.

        Args:
            values: readings by key, each (num_envs, ...); not modified.
            step_count: calls since each world's reset, (num_envs,) or scalar; None uses the
                graph's own count. The graph's count advances by one either way.
            phase: this call's index in the cycle fixed by `compile` (None: no cycle, every
                node's timer evaluated); the caller vouches that every world's count is
                congruent to it modulo the cycle.
        """
        steps = (
            self.step_count
            if step_count is None
            else as_world_tensor(step_count, self.num_envs, self.device, torch.long)
        )
        published = _Published(values)
        if phase is None:
            for node in self.nodes:
                node.update(published, steps)
                node.publish_into(published)
        else:
            if not 0 <= phase < self.cycle:
                raise ValueError(
                    f"AgentGraph.step: phase = {phase} must be in [0, {self.cycle}) "
                    "(the cycle of `compile`)"
                )
            for node, timing in self._plan[phase]:
                if timing == "every":
                    node.update_everywhere(published)
                elif timing == "timer":
                    node.update(published, steps)
                else:  # no world is due: the node holds its outputs
                    node.updated = False
                node.publish_into(published)
        self.step_count += 1
        return ChainMap(dict(published), values)  # type: ignore[arg-type]

    def reset(self, worlds: torch.Tensor | None = None) -> None:
        """Reset every node's held outputs and state, and the call count, of `worlds`
        (index or bool mask; None: all)."""
        for node in self.nodes:
            node.reset(worlds)
        self.step_count[slice(None) if worlds is None else worlds] = 0

    def node(self, name: str) -> Node:
        """The node called `name` (KeyError if none)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"AgentGraph: no node '{name}' (nodes: {[n.name for n in self.nodes]})")

    def suffix(self, after_node: str) -> AgentGraph:
        """The nodes after `after_node`, as a graph whose external inputs are this graph's plus
        every key published up to and including `after_node` (what a policy replacing that
        prefix provides)."""
        index = self.nodes.index(self.node(after_node))
        if index == len(self.nodes) - 1:
            raise ValueError(f"AgentGraph.suffix: no node after '{after_node}'")
        cut = {key for node in self.nodes[: index + 1] for key in node.output_keys.values()}
        return AgentGraph(self.nodes[index + 1 :], self.external_inputs | cut)

    def __str__(self) -> str:
        rows = [("node", "period", "inputs -> outputs")]
        rows += [
            (name, period, f"{ins} -> {outs}")
            for name, period, ins, outs in (n.describe() for n in self.nodes)
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        title = f"AgentGraph: {self.num_envs} worlds, dt {self.dt_s:g} s ('?': optional input)"
        lines = [title]
        lines += [f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
        return "\n".join(lines)
