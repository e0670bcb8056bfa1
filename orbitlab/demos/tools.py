"""Demo-file tools: merge files, split train/valid masks, summarize."""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np

from orbitlab.cli import ArgumentError
from orbitlab.demos.hdf5 import DemoFileError, complete_demos


def _demos(group: h5py.Group) -> list[str]:
    """The complete demos of a `data` group (incomplete ones are left out)."""
    return complete_demos(group)[0]


def _open(path: str | Path, mode: str = "r") -> h5py.File:
    """The HDF5 file at `path`; DemoFileError naming it when HDF5 cannot open it."""
    try:
        return h5py.File(path, mode)
    except OSError as error:
        raise DemoFileError(
            f"{path} is not a readable HDF5 demo file: "
            f"{error.strerror or str(error).splitlines()[0]}"
        ) from None


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))


def merge(inputs: list[str | Path], output: str | Path) -> int:
    """Copy every complete demo of `inputs` (in order) into a new file, renumbered demo_0..;
    masks are concatenated (renamed). env_args come from the first file. Returns the count.

    The output is written to `<output>.partial` and renamed when complete; ArgumentError
    when `output` is one of `inputs` (also through a link or another spelling).
    """
    output = Path(output)
    for path in inputs:
        if _same_file(Path(path), output):
            raise ArgumentError(
                f"out={str(output)!r} is invalid: it is the input {path}; merge writes a new file"
            )
    partial = output.with_name(output.name + ".partial")
    try:
        count = _merge_into(inputs, partial)
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _merge_into(inputs: list[str | Path], output: Path) -> int:
    """`merge` into `output`, which is created or overwritten."""
    names: dict[str, list[bytes]] = {"train": [], "valid": []}
    total, count = 0, 0
    with h5py.File(output, "w") as out:
        data = out.create_group("data")
        for k, path in enumerate(inputs):
            with _open(path) as f:
                if "data" not in f:
                    raise DemoFileError(f"{path} is no demo file (no 'data' group)")
                if k == 0:
                    for key, value in f["data"].attrs.items():
                        data.attrs[key] = value
                rename = {}
                for demo in _demos(f["data"]):
                    new = f"demo_{count}"
                    f.copy(f["data"][demo], data, name=new)
                    rename[demo] = new
                    total += int(f["data"][demo].attrs["num_samples"])
                    count += 1
                for key in names:
                    if f"mask/{key}" in f:
                        names[key] += [
                            rename[n.decode()].encode()
                            for n in f[f"mask/{key}"][()]
                            if n.decode() in rename
                        ]
        data.attrs["total"] = total
        mask = out.create_group("mask")
        for key, values in names.items():
            mask.create_dataset(key, data=np.array(values, dtype="S"))
    return count


def split(path: str | Path, valid_fraction: float = 0.1, seed: int = 0) -> tuple[int, int]:
    """Rewrite `mask/train` and `mask/valid`: a seeded random `valid_fraction` of the demos
    (at least one when there are two or more) is valid. Returns (train, valid) counts."""
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    with _open(path, "r+") as f:
        demos = _demos(f["data"])
        n_valid = round(valid_fraction * len(demos))
        if valid_fraction > 0 and len(demos) >= 2:
            n_valid = max(1, n_valid)
        order = np.random.default_rng(seed).permutation(len(demos))
        valid = sorted((demos[i] for i in order[:n_valid]), key=lambda n: int(n[5:]))
        train = [d for d in demos if d not in valid]
        mask = f.require_group("mask")
        for key, values in (("train", train), ("valid", valid)):
            if key in mask:
                del mask[key]
            mask.create_dataset(key, data=np.array(values, dtype="S"))
    return len(train), len(valid)


def summary(path: str | Path) -> dict:
    """Demos, samples, episode lengths (min/mean/max) and the success rate where each demo
    carries a `success` attr."""
    with _open(path) as f:
        data = f["data"]
        demos = _demos(data)
        lengths = np.array([int(data[d].attrs["num_samples"]) for d in demos])
        flags = [bool(data[d].attrs["success"]) for d in demos if "success" in data[d].attrs]
        env_args = json.loads(data.attrs["env_args"]) if "env_args" in data.attrs else {}
        masks = {k: len(f[f"mask/{k}"]) for k in ("train", "valid") if f"mask/{k}" in f}
        return {
            "env_name": env_args.get("env_name"),
            "demos": len(demos),
            "total_samples": int(lengths.sum()) if len(demos) else 0,
            "total_attr": int(data.attrs.get("total", -1)),
            "length_min": int(lengths.min()) if len(demos) else 0,
            "length_mean": float(lengths.mean()) if len(demos) else 0.0,
            "length_max": int(lengths.max()) if len(demos) else 0,
            "success_rate": float(np.mean(flags)) if flags else None,
            "masks": masks,
        }
