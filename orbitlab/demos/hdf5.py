"""robomimic-layout HDF5 demonstration files: an appending writer and a reader.

    data/                       attrs: total (samples), env_args (JSON), state_layout (JSON)
      demo_<i>/                 attrs: num_samples, success, seed, state_layout (JSON)
        obs/<term>              (T, d) float32: the policy group's terms before each action
        next_obs/<term>         (T, d) float32: after each action (the final observation
                                of the episode at its last step)
        actions                 (T, A) float32: the env's action vector
        rewards                 (T,) float64
        dones                   (T,) uint8: 1 at the last step
        states                  (T, D) float64: the full env state (`orbitlab.envs.state`)
                                before each action, flattened by the demo's `state_layout`
        initial_state           (D,) float64: the state after the reset (= states[0]);
                                robomimic keeps a model file and initial state as attrs,
                                here it is a dataset (it can exceed an attr's 64 KiB)
    mask/train, mask/valid      demo names (bytes)

Robustness: each demo is written in one burst when its episode ends, then `data` attrs and
masks are updated and the file is flushed, so a process killed between demos (SIGKILL
included) leaves a valid file holding every completed demo; a new file is valid from the
start (total 0, empty masks). The default HDF5 format is used (no superblock-v3
"open for writing" flag that would block reading after a crash).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import h5py
import numpy as np

from orbitlab.envs.state import StateLayout

STATE_CHUNK = (64, 256)
"""Chunk shape of `states` (rows, columns): columns are blocked so that consecutive rows of
a slowly changing block (e.g. a generator state) fall inside gzip's 32 KiB window."""


@dataclass
class EpisodeBuffer:
    """One episode's samples, gathered in memory until it ends."""

    obs: dict[str, list[np.ndarray]] = field(default_factory=dict)
    next_obs: dict[str, list[np.ndarray]] = field(default_factory=dict)
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    dones: list[int] = field(default_factory=list)
    states: list[dict[str, np.ndarray]] = field(default_factory=list)
    """Per-step state dicts of one world ({key: (1, ...)})."""

    def add(self, obs: dict[str, np.ndarray], action: np.ndarray, reward: float, done: bool,
            next_obs: dict[str, np.ndarray], state: dict[str, np.ndarray]) -> None:
        """One step: observation terms (d,), action (A,), reward, done, next terms, state."""
        for name, value in obs.items():
            self.obs.setdefault(name, []).append(np.asarray(value, dtype=np.float32))
        for name, value in next_obs.items():
            self.next_obs.setdefault(name, []).append(np.asarray(value, dtype=np.float32))
        self.actions.append(np.asarray(action, dtype=np.float32))
        self.rewards.append(float(reward))
        self.dones.append(int(done))
        self.states.append(state)

    def __len__(self) -> int:
        return len(self.actions)


def _json(obj: Any) -> str:
    return json.dumps(obj, default=repr)


class DemoWriter:
    """Appends demos to a new robomimic-layout file (see the module docstring)."""

    def __init__(self, path: str | Path, env_args: dict[str, Any], compression: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = h5py.File(self.path, "w")
        self.compression = compression
        self.data = self.file.create_group("data")
        self.data.attrs["total"] = 0
        self.data.attrs["env_args"] = _json(env_args)
        self.names: list[str] = []
        self.total = 0
        self._write_masks()
        self.file.flush()

    def _write_masks(self, valid: list[str] | None = None) -> None:
        mask = self.file.require_group("mask")
        valid = valid or []
        train = [n for n in self.names if n not in valid]
        for key, names in (("train", train), ("valid", valid)):
            if key in mask:
                del mask[key]
            mask.create_dataset(key, data=np.array(names, dtype="S"))

    def add(self, episode: EpisodeBuffer, attrs: dict[str, Any] | None = None) -> str:
        """Write one episode as the next demo; returns its name ('demo_<i>')."""
        if not len(episode):
            raise ValueError("an episode with no steps cannot be a demo")
        name = f"demo_{len(self.names)}"
        layout = StateLayout.from_state(episode.states)
        states = np.concatenate([layout.flatten(s) for s in episode.states])
        grp = self.data.create_group(name)
        for key, series in (("obs", episode.obs), ("next_obs", episode.next_obs)):
            sub = grp.create_group(key)
            for term, values in series.items():
                sub.create_dataset(term, data=np.stack(values))
        grp.create_dataset("actions", data=np.stack(episode.actions))
        grp.create_dataset("rewards", data=np.asarray(episode.rewards, dtype=np.float64))
        grp.create_dataset("dones", data=np.asarray(episode.dones, dtype=np.uint8))
        options: dict[str, Any] = {}
        if self.compression:
            chunk = (min(STATE_CHUNK[0], len(states)), min(STATE_CHUNK[1], states.shape[1]))
            options = {"chunks": chunk, "compression": "gzip", "compression_opts": 4,
                       "shuffle": True}
        grp.create_dataset("states", data=states, **options)
        grp.create_dataset("initial_state", data=states[0])
        grp.attrs["num_samples"] = len(episode)
        grp.attrs["state_layout"] = layout.to_json()
        for key, value in (attrs or {}).items():
            grp.attrs[key] = value
        self.names.append(name)
        self.total += len(episode)
        if "state_layout" not in self.data.attrs:
            self.data.attrs["state_layout"] = layout.to_json()
        self.data.attrs["total"] = self.total
        self._write_masks()
        self.file.flush()
        return name

    def close(self) -> None:
        if self.file.id.valid:
            self.file.flush()
            self.file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DemoReader:
    """Read access to a demo file: env args, demo names, arrays and decoded states."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.file = h5py.File(self.path, "r")
        self.data = self.file["data"]
        self.env_args: dict[str, Any] = json.loads(self.data.attrs["env_args"])

    @property
    def demos(self) -> list[str]:
        """Demo names in numeric order."""
        return sorted(self.data.keys(), key=lambda n: int(n.split("_")[-1]))

    def layout(self, demo: str) -> StateLayout:
        return StateLayout.from_json(self.data[demo].attrs["state_layout"])

    def states(self, demo: str) -> np.ndarray:
        """(T, D) float64."""
        return self.data[demo]["states"][()]

    def initial_state(self, demo: str) -> dict[str, np.ndarray]:
        """The decoded state after the demo's reset ({key: (1, ...)})."""
        return self.layout(demo).unflatten(self.data[demo]["initial_state"][()])

    def array(self, demo: str, key: str) -> np.ndarray:
        return self.data[demo][key][()]

    def obs(self, demo: str, group: str = "obs") -> dict[str, np.ndarray]:
        return {k: v[()] for k, v in self.data[demo][group].items()}

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
