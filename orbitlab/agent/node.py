"""Agent nodes: computations with their own update period that hold their output in between.

A node reads named tensors from the graph's value dict, computes named outputs for every world
at once, and publishes them. The graph calls it every `dt_s` seconds; the node recomputes only in
the worlds whose timer is due (`step_count % period_steps == 0`, counted in graph calls since each
world's reset, plus every world that was reset since its last update) and holds its last output
in the others. All tensors are batched over worlds: shape (num_envs, ...), float64.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, cast

import torch

from orbitlab import sync
from orbitlab.stateful import Stateful


@dataclass(kw_only=True)
class NodeCfg:
    """Timing and wiring shared by every node."""

    class_type: type | None = None
    """The `Node` subclass `build` makes from this config (subclasses of NodeCfg name theirs)."""
    period_s: float = 0.0
    """Update period, s (0: every graph call); a whole multiple of the graph's dt_s."""
    inputs: dict[str, str] = field(default_factory=dict)
    """This node's input name -> key it reads in the graph's value dict (default: same name)."""
    outputs: dict[str, str] = field(default_factory=dict)
    """This node's output name -> key it is published under (default: same name)."""

    def build(self, name: str, env: Any) -> Node:
        """The node `name` of `env`'s agent graph: `class_type.from_env(self, name, env)`."""
        if self.class_type is None:
            raise ValueError(f"node '{name}': {type(self).__name__}.class_type names no Node class")
        node_class = cast("type[Node]", self.class_type)  # a Node subclass, see class_type
        return node_class.from_env(self, name, env)


def period_steps(period_s: float, dt_s: float, owner: str) -> int:
    """Graph calls per update for `period_s` (0 -> 1); ValueError naming `owner` if not whole."""
    if not (math.isfinite(dt_s) and dt_s > 0.0):
        raise ValueError(f"{owner}: dt_s = {dt_s} s must be finite and > 0")
    steps = period_s / dt_s
    if not (math.isfinite(period_s) and period_s >= 0.0) or abs(steps - round(steps)) > 1e-9 * max(
        1.0, steps
    ):
        raise ValueError(
            f"{owner}: period_s = {period_s} s must be >= 0 and a whole multiple "
            f"of the graph's dt_s = {dt_s} s"
        )
    return max(1, round(steps))


def known_keys(values: Mapping[str, Any]) -> list[str]:
    """The keys `values` holds, sorted (for error messages; the graph's overlay included)."""
    base = getattr(values, "base", None)
    return sorted(set(values) | (set(base) if isinstance(base, Mapping) else set()))


def as_world_tensor(
    value: object, num_envs: int, device: torch.device | str, dtype: torch.dtype
) -> torch.Tensor:
    """`value` (scalar or (num_envs,)) as a (num_envs,) tensor."""
    return torch.as_tensor(value, dtype=dtype, device=device).expand(num_envs)


class _Wiring(NamedTuple):
    inputs: tuple[tuple[str, str, bool], ...]
    """(input name, value key, optional) per input."""
    outputs: tuple[tuple[str, str], ...]
    """(output name, published key) per output."""
    output_names: frozenset[str]


class Node(Stateful):
    """Base node: per-world timer, held outputs and wiring. Subclasses implement `compute`.

    Subclasses declare `input_names` (required), `optional_inputs` (passed to `compute` only when
    their key is in the value dict) and `output_names`. Inside `compute`, `self.due` is the (N,)
    bool mask of worlds that take the new output: a stateful node advances its state only there
    (the others keep their held output and state). `update_period_s` is the effective period,
    s (`period_steps * dt_s`).
    """

    # `due` is set afresh before every compute
    state_attrs: ClassVar[tuple[str, ...]] = ("held", "_fresh")

    input_names: tuple[str, ...] = ()
    """Not a ClassVar: a node whose inputs depend on its config sets them per instance."""
    optional_inputs: ClassVar[tuple[str, ...]] = ()
    output_names: tuple[str, ...] = ()
    """Not a ClassVar: a node whose outputs depend on its config sets them per instance."""

    @classmethod
    def from_env(cls, cfg: NodeCfg, name: str, env: Any) -> Node:
        """Build for `env`: one world per env, the env's physics step as the graph's dt, its
        device (a node that reads the scene overrides this to take the env itself)."""
        return cls(cfg, name, env.num_envs, env.physics_dt, env.device)

    def __init__(
        self,
        cfg: NodeCfg,
        name: str,
        num_envs: int,
        dt_s: float,
        device: torch.device | str = "cpu",
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"node '{name}': num_envs must be >= 1, got {num_envs}")
        self.cfg, self.name, self.num_envs, self.dt_s = cfg, name, int(num_envs), float(dt_s)
        self.device = torch.device(device)
        self.period_steps = period_steps(cfg.period_s, dt_s, f"node '{name}'")
        self.update_period_s = self.period_steps * self.dt_s
        self._check_wiring(cfg.inputs, self.input_names + self.optional_inputs, "inputs")
        self._check_wiring(cfg.outputs, self.output_names, "outputs")
        self.held: dict[str, torch.Tensor] = {}
        """Current outputs by output name, each (num_envs, ...)."""
        self.due = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        self.updated = False
        """Whether the last `update` ran `compute` (False: no world was due and, on the CPU, the
        call was skipped, so every output was held)."""
        self._fresh = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        self._wiring_cache: _Wiring | None = None
        self._everywhere = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        """`due` of a node that updates at every call (never written)."""
        self._skip_idle_calls = sync.host_reads_are_free(self.device)
        """Skip a call where no world is due (a host read: on the CPU only, `orbitlab.sync`)."""

    def _check_wiring(self, mapping: dict[str, str], names: tuple[str, ...], what: str) -> None:
        unknown = sorted(set(mapping) - set(names))
        if unknown:
            raise ValueError(
                f"node '{self.name}': cfg.{what} names {unknown}, but its {what} are {list(names)}"
            )

    # -------------------------------------------------------------- wiring
    @property
    def input_keys(self) -> dict[str, str]:
        """Input name -> value-dict key, required and optional inputs."""
        return {n: self.cfg.inputs.get(n, n) for n in self.input_names + self.optional_inputs}

    @property
    def output_keys(self) -> dict[str, str]:
        """Output name -> published key."""
        return {n: self.cfg.outputs.get(n, n) for n in self.output_names}

    def published(self) -> dict[str, torch.Tensor]:
        """The held outputs under their published keys."""
        keys = self.output_keys
        return {keys[n]: v for n, v in self.held.items()}

    def gather(self, values: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """This node's inputs from `values`; KeyError naming the node and key if one is missing."""
        inputs = {}
        for name, key, optional in (self._wiring_cache or self._wiring()).inputs:
            try:
                value = values[key]
            except KeyError:
                if optional:
                    continue
                raise KeyError(
                    f"node '{self.name}': input '{name}' needs key '{key}', which is "
                    f"not in the values ({known_keys(values)})"
                ) from None
            if isinstance(value, torch.Tensor) and (
                value.ndim == 0 or value.shape[0] != self.num_envs
            ):
                raise ValueError(
                    f"node '{self.name}': key '{key}' must be batched over "
                    f"{self.num_envs} worlds, got shape {tuple(value.shape)}"
                )
            inputs[name] = value
        return inputs

    def _wiring(self) -> _Wiring:
        """The node's wiring, worked out on first use (a subclass may set its names after
        this base's __init__) instead of at every call."""
        wiring = self._wiring_cache
        if wiring is None:
            wiring = self._wiring_cache = _Wiring(
                inputs=tuple((n, k, n in self.optional_inputs) for n, k in self.input_keys.items()),
                outputs=tuple(self.output_keys.items()),
                output_names=frozenset(self.output_names),
            )
        return wiring

    def publish_into(self, values: dict[str, torch.Tensor]) -> None:
        """Write the held outputs into `values` under their published keys."""
        held = self.held
        for name, key in (self._wiring_cache or self._wiring()).outputs:
            if name in held:
                values[key] = held[name]

    # ----------------------------------------------------------------- run
    def reset(self, worlds: torch.Tensor | None = None) -> None:
        """Zero the held outputs and internal state of `worlds` (index or bool mask; None: all);
        they recompute on their next `update` whatever the step count."""
        rows: torch.Tensor | slice = slice(None) if worlds is None else worlds
        self._fresh[rows] = True
        for value in self.held.values():
            value[rows] = 0
        self.reset_state(rows)

    def reset_state(self, worlds: torch.Tensor | slice) -> None:
        """Subclass hook: clear the internal state of `worlds`."""

    def compute(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Subclass: the outputs of every world, by output name."""
        raise NotImplementedError

    def update(self, values: Mapping[str, torch.Tensor], step_count: torch.Tensor | int) -> None:
        """Recompute the due worlds from `values`; the others hold their last output.

        Args:
            values: the graph's value dict (readings and earlier nodes' outputs).
            step_count: graph calls since each world's reset, (num_envs,) or a scalar.
        """
        if self.period_steps == 1:  # due everywhere, every call: no timer to read
            self.update_everywhere(values)
            return
        self.updated = False
        if not (isinstance(step_count, torch.Tensor) and step_count.shape == self.due.shape):
            step_count = as_world_tensor(step_count, self.num_envs, self.device, torch.long)
        due = (step_count % self.period_steps == 0) | self._fresh
        if self._skip_idle_calls and not bool(due.any()):
            return
        self._recompute(self.gather(values), due)

    def update_everywhere(self, values: Mapping[str, torch.Tensor]) -> None:
        """Recompute every world: for a caller that knows every world's timer is due (a node
        updating at every call, or a compiled schedule's call whose phase the period divides,
        `AgentGraph.compile`), with no timer to evaluate and no mask to apply."""
        self._recompute(self.gather(values), self._everywhere)

    def _recompute(self, inputs: dict[str, torch.Tensor], due: torch.Tensor) -> None:
        """Run `compute` and keep its outputs in the `due` worlds (`_everywhere`: all)."""
        self.due, self.updated = due, True
        outputs = self.compute(inputs)
        if outputs.keys() != (self._wiring_cache or self._wiring()).output_names:
            raise RuntimeError(
                f"node '{self.name}': compute returned {sorted(outputs)}, "
                f"expected {list(self.output_names)}"
            )
        held = self.held
        everywhere = due is self._everywhere
        for name, value in outputs.items():
            old = held.get(name)
            if everywhere:  # a copy: the node may reuse its own tensor
                held[name] = value.clone()
            elif old is None or old.shape != value.shape:
                held[name] = torch.where(
                    due.reshape((-1,) + (1,) * (value.ndim - 1)), value, torch.zeros_like(value)
                )
            else:
                held[name] = torch.where(due.reshape((-1,) + (1,) * (value.ndim - 1)), value, old)
        if everywhere:
            self._fresh.zero_()
        else:
            self._fresh &= ~due

    def describe(self) -> tuple[str, str, str, str]:
        """(name, period, inputs, outputs) for the graph's table."""
        period = "every call" if self.cfg.period_s == 0 else f"{self.update_period_s:g} s"
        ins = ", ".join(
            k + ("?" if n in self.optional_inputs else "") for n, k in self.input_keys.items()
        )
        return self.name, period, ins, ", ".join(self.output_keys.values())


class SceneNode(Node):
    """A node that reads the env's scene itself (truth taps, task-specific estimators): built
    with `(cfg, name, env)`; its world count, dt and device are the env's."""

    def __init__(self, cfg: NodeCfg, name: str, env: Any) -> None:
        super().__init__(cfg, name, env.num_envs, env.physics_dt, env.device)
        self.env = env

    @classmethod
    def from_env(cls, cfg: NodeCfg, name: str, env: Any) -> Node:
        return cls(cfg, name, env)
