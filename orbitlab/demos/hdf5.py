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

Robustness (no finished demo is ever lost, no existing file is ever destroyed):
* `DemoWriter(path)` writes to `<path>.partial` and renames it to `path` when it is closed
  (also after Ctrl-C). An existing `path` is only replaced by a file holding at least one
  demo; a `<path>.partial` left by a killed session is refused, not overwritten.
* Each demo is written in one burst when its episode ends, then `data` attrs and masks are
  updated and the file is flushed, so a process killed between demos (SIGKILL included)
  leaves a valid `<path>.partial` holding every completed demo; a new file is valid from
  the start (total 0, empty masks). The default HDF5 format is used (no superblock-v3
  "open for writing" flag that would block reading after a crash).
* Before a demo is written, the free space of the file system is checked against a
  generous bound of its size (`DiskFullError` otherwise): HDF5 cannot keep a file
  consistent when a metadata write fails half way, so the disk must not fill up under it.
  A write that fails anyway (an I/O error) removes the half-written group, and the
  writer refuses further demos; the file stays readable.
* `DemoReader` ignores demo groups that are incomplete (a kill during their write), and
  says so (`DemoReader.skipped`, and a warning); a file HDF5 cannot read is a
  `DemoFileError` naming it.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import h5py
import numpy as np

from orbitlab.cli import UserError
from orbitlab.demos.layout import StateLayout

REQUIRED = ("obs", "next_obs", "actions", "rewards", "dones", "states", "initial_state")
"""Members every complete demo group has (written in this order, `num_samples` attr last)."""
SPACE_FACTOR, SPACE_MARGIN_B = 1.25, 256 * 1024
"""A demo is written only with SPACE_FACTOR x its uncompressed size + SPACE_MARGIN_B free."""
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

    def add(
        self,
        obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: float,
        done: bool,
        next_obs: dict[str, np.ndarray],
        state: dict[str, np.ndarray],
    ) -> None:
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


class DemoFileError(UserError):
    """A demo file that cannot be read, or written without losing data."""


class DiskFullError(DemoFileError, OSError):
    """Not enough free space to write the next demo safely."""


def partial_path(path: str | Path) -> Path:
    """Where `DemoWriter(path)` writes until it is closed: `<path>.partial`."""
    path = Path(path)
    return path.with_name(path.name + ".partial")


def _json(obj: Any) -> str:
    return json.dumps(obj, default=repr)


class DemoWriter:
    """Appends demos to a new robomimic-layout file (see the module docstring)."""

    def __init__(self, path: str | Path, env_args: dict[str, Any], compression: bool = True):
        self.path = Path(path)
        self.partial = partial_path(self.path)
        if self.partial.exists():
            raise DemoFileError(
                f"{self.partial} exists (demos of an interrupted session?): "
                f"rename it to keep them, or delete it"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = h5py.File(self.partial, "x")
        except OSError as error:
            raise DemoFileError(f"cannot write demos to {self.partial}: {_reason(error)}") from None
        self.failed: str | None = None
        """Why the writer stopped taking demos (a write failed), or None."""
        self.saved_to: Path | None = None
        """Where the demos are once closed: `path`, `<path>.partial`, or None (none kept)."""
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
        if self.failed is not None:
            raise DemoFileError(
                f"{self.partial}: no more demos after a failed write ({self.failed})"
            )
        name = f"demo_{len(self.names)}"
        layout = StateLayout.from_state(episode.states)
        states = np.concatenate([layout.flatten(s) for s in episode.states])
        self._check_space(name, episode, states)
        try:
            self._write(name, episode, states, layout, attrs)
        except OSError as error:  # an I/O error under HDF5: drop the half-written group
            self.failed = _reason(error)
            try:
                if name in self.data:
                    del self.data[name]
                self.file.flush()
            except (OSError, RuntimeError):
                pass
            raise DemoFileError(
                f"writing {name} failed ({self.failed}): recording stopped"
            ) from None
        return name

    def _check_space(self, name: str, episode: EpisodeBuffer, states: np.ndarray) -> None:
        """DiskFullError unless the file system has room for this demo with a margin."""
        size = (
            states.nbytes
            + states[0].nbytes
            + sum(
                np.asarray(v).nbytes
                for series in (episode.obs, episode.next_obs)
                for values in series.values()
                for v in values
            )
        )
        size += len(episode) * (len(episode.actions[0]) * 4 + 9)
        needed = int(SPACE_FACTOR * size) + SPACE_MARGIN_B
        free = shutil.disk_usage(self.partial.parent).free
        if free < needed:
            self.failed = "disk full"
            raise DiskFullError(
                f"not enough free space for {name} in {self.partial.parent} "
                f"({free / 2**20:.2f} MiB free, {needed / 2**20:.2f} MiB "
                f"needed): recording stopped"
            )

    def _write(
        self,
        name: str,
        episode: EpisodeBuffer,
        states: np.ndarray,
        layout: StateLayout,
        attrs: dict[str, Any] | None,
    ) -> None:
        """The demo group, then the file's totals and masks, then a flush."""
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
            options = {
                "chunks": chunk,
                "compression": "gzip",
                "compression_opts": 4,
                "shuffle": True,
            }
        grp.create_dataset("states", data=states, **options)
        grp.create_dataset("initial_state", data=states[0])
        for key, value in (attrs or {}).items():
            grp.attrs[key] = value
        grp.attrs["state_layout"] = layout.to_json()
        grp.attrs["num_samples"] = len(episode)  # last: marks the group complete
        self.names.append(name)
        self.total += len(episode)
        if "state_layout" not in self.data.attrs:
            self.data.attrs["state_layout"] = layout.to_json()
        self.data.attrs["total"] = self.total
        self._write_masks()
        self.file.flush()

    def close(self) -> None:
        """Close the file and move it to `path` (see the module docstring): an existing
        `path` is replaced only by a file with demos; after a failed write the partial
        file stays where it is unless `path` does not exist."""
        if not self.file.id.valid:
            return
        try:
            self.file.flush()
        finally:
            self.file.close()
        if not self.names and self.path.exists():
            self.partial.unlink()  # an empty session never replaces a file
        elif self.failed is None or not self.path.exists():
            os.replace(self.partial, self.path)
            self.saved_to = self.path
        else:
            self.saved_to = self.partial

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _reason(error: OSError) -> str:
    """The short reason of an OSError (strerror, or its first line)."""
    return error.strerror or (str(error).strip().splitlines() or [type(error).__name__])[0]


def incomplete(group: h5py.Group) -> str | None:
    """What a demo group lacks (a member, or its `num_samples` attr), or None if complete."""
    missing = [key for key in REQUIRED if key not in group]
    if missing:
        return f"missing {', '.join(missing)}"
    if "num_samples" not in group.attrs or "state_layout" not in group.attrs:
        return "missing its num_samples / state_layout attrs"
    if group["states"].shape[0] != int(group.attrs["num_samples"]):
        return "states and num_samples disagree"
    return None


def complete_demos(data: h5py.Group) -> tuple[list[str], dict[str, str]]:
    """(complete demo names in numeric order, {incomplete name: what it lacks})."""
    names = [n for n in data if n.startswith("demo_") and n[5:].isdigit()]
    good, bad = [], {}
    for name in sorted(names, key=lambda n: int(n[5:])):
        problem = incomplete(data[name])
        if problem is None:
            good.append(name)
        else:
            bad[name] = problem
    return good, bad


class DemoReader:
    """Read access to a demo file: env args, demo names, arrays and decoded states."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.file = h5py.File(self.path, "r")
        except (OSError, ValueError) as error:
            raise DemoFileError(
                f"{self.path} is not a readable HDF5 demo file: "
                f"{_reason(error) if isinstance(error, OSError) else error}"
            ) from None
        try:
            self.data = self.file["data"]
            self.env_args: dict[str, Any] = json.loads(self.data.attrs["env_args"])
            self._demos, self.skipped = complete_demos(self.data)
        except (KeyError, ValueError, OSError, RuntimeError) as error:
            self.file.close()
            raise DemoFileError(
                f"{self.path} is not a readable demo file: "
                f"{(str(error).splitlines() or [type(error).__name__])[0]}"
            ) from None
        if self.skipped:
            warnings.warn(
                f"{self.path}: ignoring incomplete demo(s) "
                + "; ".join(f"{n} ({why})" for n, why in self.skipped.items()),
                stacklevel=2,
            )

    @property
    def demos(self) -> list[str]:
        """Names of the complete demos in numeric order (incomplete ones: `skipped`)."""
        return list(self._demos)

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
