"""The flat layout of a demo's states: one float64 vector per world (robomimic's `states`).

A state of `orbitlab.envs.state.get_state` is a dict of arrays; `StateLayout` places each
array in one vector and back, and its JSON form (stored with every demo) documents the layout:
key, per-world shape, dtype, offset and size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class LayoutEntry:
    """One state array inside the flat per-world vector."""

    key: str
    """State key."""
    shape: tuple[int, ...]
    """Per-world shape."""
    dtype: str
    """numpy dtype name of the array."""
    offset: int
    """First index in the flat vector."""
    size: int
    """Number of float64 slots (uint8 arrays are packed four bytes per slot as uint32)."""


@dataclass
class StateLayout:
    """Where each state array sits in the flat float64 vector of one world.

    Every value converts to float64 exactly: floats (float32/64), bools and integers
    below 2^53; uint8 arrays whose size is a multiple of 4 (generator states) are packed
    as little-endian uint32 words, one per slot.
    """

    entries: list[LayoutEntry]
    size: int

    @classmethod
    def from_state(
        cls, state: dict[str, np.ndarray] | Sequence[dict[str, np.ndarray]]
    ) -> StateLayout:
        """The layout of one state or of the union of several (keys sorted)."""
        states = [state] if isinstance(state, dict) else list(state)
        spec: dict[str, tuple[tuple[int, ...], str]] = {}
        for s in states:
            for key, value in s.items():
                item = (tuple(int(d) for d in np.shape(value)[1:]), np.asarray(value).dtype.name)
                if spec.setdefault(key, item) != item:
                    raise ValueError(f"state '{key}' changes shape or dtype: {spec[key]} -> {item}")
        entries, offset = [], 0
        for key in sorted(spec):
            shape, dtype = spec[key]
            count = int(np.prod(shape, dtype=np.int64))
            size = count // 4 if dtype == "uint8" and count % 4 == 0 else count
            entries.append(LayoutEntry(key, shape, dtype, offset, size))
            offset += size
        return cls(entries, offset)

    def flatten(self, state: dict[str, np.ndarray]) -> np.ndarray:
        """(k, size) float64; keys of the layout missing from `state` are zero."""
        k = len(next(iter(state.values())))
        out = np.zeros((k, self.size), dtype=np.float64)
        unknown = set(state) - {e.key for e in self.entries}
        if unknown:
            raise KeyError(f"state keys not in the layout: {sorted(unknown)[:5]}")
        for e in self.entries:
            if e.key not in state:
                continue
            value = np.ascontiguousarray(state[e.key], dtype=np.dtype(e.dtype)).reshape(k, -1)
            if e.dtype == "uint8" and value.shape[1] == 4 * e.size:
                value = value.view("<u4")
            out[:, e.offset : e.offset + e.size] = value
        return out

    def unflatten(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """{key: (k, ...) array} from (k, size) or (size,) float64."""
        vec = np.asarray(vector, dtype=np.float64)
        vec = vec[None] if vec.ndim == 1 else vec
        if vec.shape[1] != self.size:
            raise ValueError(f"state vectors have {vec.shape[1]} values, the layout {self.size}")
        out = {}
        for e in self.entries:
            block = vec[:, e.offset : e.offset + e.size]
            count = int(np.prod(e.shape, dtype=np.int64))
            if e.dtype == "uint8" and count == 4 * e.size:
                block = np.ascontiguousarray(block.astype("<u4")).view(np.uint8)
            out[e.key] = block.astype(np.dtype(e.dtype)).reshape(len(vec), *e.shape)
        return out

    def to_json(self) -> str:
        return json.dumps({"size": self.size, "entries": [asdict(e) for e in self.entries]})

    @classmethod
    def from_json(cls, text: str) -> StateLayout:
        raw = json.loads(text)
        entries = [
            LayoutEntry(e["key"], tuple(e["shape"]), e["dtype"], int(e["offset"]), int(e["size"]))
            for e in raw["entries"]
        ]
        return cls(entries, int(raw["size"]))
