"""Named per-world state of a component: `state_dict()` and `load_state_dict()`.

A stateful component (actuator group, sensor, manager, term, agent node, the env itself)
lists the attributes that hold its state in `state_attrs`, the way a torch module registers
its buffers. Everything else it holds is configuration or a constant. An attribute's value
may be:

* a tensor or numpy array whose first dimension is the world count (one row per world);
* a `DelayLine` (its samples, oldest first, one row per world);
* a `torch.Generator` (shared by all worlds);
* another `Stateful` component, or a dict or list of any of these (a manager's terms, a
  node's held outputs); functions and other objects inside a dict or list are skipped
  (a manager's plain function terms have no state).

`state_dict()` returns these values live, as torch's does, under the attribute names;
`load_state_dict(state, env_ids)` writes the rows of `env_ids` back and the generators'
states, creating entries the component has not made yet (a node's outputs before its first
update). `leaves` and `load_leaves` flatten and unflatten a tree of components under
'/'-separated keys (`orbitlab.envs.state` builds the env's state from them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from orbitlab.delay_line import DelayLine

__all__ = ["Leaf", "Stateful", "decode_key", "delay_rows", "encode_key", "leaves", "load_leaf"]


class Stateful:
    """A component whose per-world state is the attributes named in `state_attrs`."""

    state_attrs: ClassVar[tuple[str, ...]] = ()
    """Attributes holding state (see the module docstring for the values they may hold)."""

    def state_dict(self) -> dict[str, Any]:
        """This component's state by attribute name: the live values, None ones left out."""
        state = {}
        for name in self.state_attrs:
            value = getattr(self, name, None)
            if value is not None:
                state[name] = value
        return state

    def load_state_dict(
        self, state: Mapping[str, Any], env_ids: torch.Tensor | np.ndarray | None = None
    ) -> list[str]:
        """Write `state` into this component: another component's `state_dict()` (live values,
        copied) or the same shape with arrays, one row per world of `env_ids` (default all; a
        generator as its `get_state()` bytes, a delay line as its rows oldest first). Returns
        the keys not restored because they lie inside an object not created yet."""
        count = getattr(self, "num_envs", None) or getattr(self, "num_worlds", None)
        skipped = []
        for key, value in _flatten(state, ""):
            if not load_leaf(self, key[1:], value, env_ids, count, getattr(self, "device", None)):
                skipped.append(key[1:])
        return skipped


def _flatten(tree: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(key, value) of every leaf of a `state_dict()`-shaped tree: rows as they are, a live
    generator as its state bytes, a live delay line as its rows (oldest first)."""
    for leaf in leaves(tree, path, None):
        if leaf.kind == "rng":
            yield leaf.path, leaf.obj.get_state()
        elif leaf.kind == "delay":
            yield leaf.path, delay_rows(leaf.obj, torch.arange(leaf.obj.buffer.shape[1]))
        else:
            yield leaf.path, leaf.obj


# ------------------------------------------------------------------ keys
def encode_key(component: Any) -> str:
    """One key component: a str/int as text ('/' and '%' escaped), a tuple as 't:<json>'."""
    text = "t:" + json.dumps(list(component)) if isinstance(component, tuple) else str(component)
    return text.replace("%", "%25").replace("/", "%2F")


def decode_key(text: str) -> Any:
    """The dict key or attribute name an encoded component stands for."""
    comp = text.replace("%2F", "/").replace("%25", "%")
    return tuple(json.loads(comp[2:])) if comp.startswith("t:") else comp


# ---------------------------------------------------------------- leaves
@dataclass
class Leaf:
    """One piece of state inside a tree of components."""

    path: str
    """'/'-separated key."""
    kind: Literal["row", "delay", "rng"]
    """'row': a tensor or array, one row per world; 'delay': a `DelayLine`; 'rng': a generator."""
    obj: Any


def leaves(obj: Any, path: str, num_envs: int | None) -> Iterator[Leaf]:
    """Every state leaf under `obj` (a component, or a dict or list of them), keys under
    `path`; rows are tensors and arrays with leading dimension `num_envs` (None: any)."""
    if isinstance(obj, DelayLine):
        if obj.steps:
            yield Leaf(path, "delay", obj)
    elif isinstance(obj, torch.Generator):
        yield Leaf(path, "rng", obj)
    elif isinstance(obj, (torch.Tensor, np.ndarray)):
        if obj.ndim >= 1 and (num_envs is None or obj.shape[0] == num_envs):
            yield Leaf(path, "row", obj)
    elif isinstance(obj, Stateful):
        for name, value in obj.state_dict().items():
            yield from leaves(value, f"{path}/{encode_key(name)}", num_envs)
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from leaves(value, f"{path}/{encode_key(key)}", num_envs)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from leaves(value, f"{path}/{i}", num_envs)


def _child(container: Any, component: str) -> Any:
    key = decode_key(component)
    if isinstance(container, Stateful):
        return container.state_dict().get(key)
    if isinstance(container, Mapping):
        return container.get(key)
    if isinstance(container, (list, tuple)):
        i = int(key)
        return container[i] if i < len(container) else None
    return None


def _assign(container: Any, component: str, value: Any) -> None:
    key = decode_key(component)
    if isinstance(container, Stateful):
        if key not in container.state_attrs:
            raise KeyError(f"{type(container).__name__} has no state '{key}'")
        setattr(container, key, value)
    elif isinstance(container, dict):
        container[key] = value
    elif isinstance(container, list):
        container[int(key)] = value
    else:
        raise KeyError(f"cannot create state '{key}' inside a {type(container).__name__}")


def _delay_order(line: DelayLine) -> torch.Tensor:
    """Buffer slots oldest first (the slot at `head` is the oldest)."""
    size = line.steps + 1
    return (torch.arange(size) + line.head) % size


def delay_rows(line: DelayLine, ids: torch.Tensor) -> torch.Tensor:
    """The samples of worlds `ids`, (k, steps + 1, ...), oldest first."""
    buf = line.buffer[_delay_order(line).to(line.buffer.device)][:, ids.to(line.buffer.device)]
    return buf.movedim(0, 1)


def load_leaf(
    root: Any,
    path: str,
    value: Any,
    env_ids: torch.Tensor | np.ndarray | None,
    num_envs: int | None = None,
    device: torch.device | str | None = None,
) -> bool:
    """Write one leaf's rows (or a generator's state) at `path` under `root`.

    Creates a missing or mis-shaped row tensor (zeros of `num_envs` rows, default: the
    world count of the value when `env_ids` is None, on `device`, default the CPU). Returns False, writing nothing, when
    the path runs through an object `root` has not created yet (rebuilt by the next step).
    """
    parts = path.split("/")
    parent = root
    for part in parts[:-1]:
        parent = _child(parent, part)
        if parent is None:
            return False
    target = _child(parent, parts[-1])
    if isinstance(target, torch.Generator):
        target.set_state(torch.as_tensor(np.asarray(value, dtype=np.uint8)))
        return True
    ids = None if env_ids is None else torch.as_tensor(np.asarray(env_ids), dtype=torch.long)
    rows = torch.as_tensor(np.ascontiguousarray(value))
    if isinstance(target, DelayLine):
        buf = target.buffer
        order = _delay_order(target).to(buf.device)
        index = torch.arange(buf.shape[1]) if ids is None else ids
        buf[order[:, None], index.to(buf.device)[None, :]] = rows.movedim(1, 0).to(
            device=buf.device, dtype=buf.dtype
        )
        return True
    if isinstance(target, np.ndarray):
        target[slice(None) if ids is None else ids.numpy()] = np.asarray(value)
        return True
    count = num_envs if num_envs is not None else int(rows.shape[0]) if ids is None else None
    if not (
        isinstance(target, torch.Tensor)
        and target.shape[1:] == rows.shape[1:]
        and (count is None or target.shape[0] == count)
    ):
        if count is None:
            raise ValueError(f"state '{path}': cannot create it without the world count")
        if isinstance(target, torch.Tensor):
            device = target.device
        target = torch.zeros((count, *rows.shape[1:]), dtype=rows.dtype, device=device)
        _assign(parent, parts[-1], target)
    where = slice(None) if ids is None else ids.to(target.device)
    target[where] = rows.to(device=target.device, dtype=target.dtype)
    return True
