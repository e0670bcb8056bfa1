"""Hostile files: crafted and broken checkpoints, torn demo files, destructive arguments.

A crafted checkpoint must not run code (its payload would create a marker file); broken
files must be refused in one line naming the file; a bad command must leave an existing
demo file byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from orbitlab.robustness import CLEAN, WRONG, Case, one_line_naming
from orbitlab.robustness.cli import invoke

TASK = "Detumble-RW"


class _Payload:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@contextlib.contextmanager
def workspace():
    """A temporary directory holding a two-demo file (`demos.hdf5`)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _record(root / "demos.hdf5")
        yield root


def _record(path: Path) -> None:
    import numpy as np

    from orbitlab.demos.hdf5 import DemoWriter
    from orbitlab.demos.record import env_args, make_env, record
    from orbitlab.devices import ScriptedCfg, ScriptedDevice

    args = env_args(TASK, seed=1)
    env = make_env({**args, "env_kwargs": {**args["env_kwargs"], "nthread": 1}})
    device = ScriptedDevice(
        ScriptedCfg(commands=np.random.default_rng(0).uniform(-1, 1, (32, 6)), end="loop")
    )
    with DemoWriter(path, args) as writer:
        record(env, device, writer, num_demos=2, keep="all", max_steps=4, seed=1, log=str)


def _crafted(root: Path, via: str) -> tuple[str, str]:
    import torch

    run_dir, marker = root / f"crafted_{via}", root / f"code_ran_{via}"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text(
        "task:\n  name: Detumble-RW\nagent:\n  library: rsl_rl\n  hidden_dims: [64, 64]\n"
    )
    path = run_dir / "model_3.pt"
    torch.save({"actor_state_dict": _Payload(marker), "iter": 3}, path)
    if via == "load":
        from orbitlab.rl.checkpoints import CheckpointError, load_torch_checkpoint

        try:
            load_torch_checkpoint(path)
            message, code = "", 0
        except CheckpointError as error:
            message, code = str(error), 1
    elif via == "play":
        code, message = invoke("play", ["agent=checkpoint", f"checkpoint={path}", "num_envs=2"])
    else:
        code, message = invoke("export", [f"checkpoint={path}"])
    if marker.exists():
        return WRONG, f"the payload ran (marker created); exit {code}"
    if code == 0:
        return WRONG, "loaded without error (the payload did not run)"
    outcome, seen = one_line_naming(_last_lines(message), "model_3.pt")
    return outcome, f"marker not created; {seen}"


def _broken_checkpoint(root: Path, name: str, content) -> tuple[str, str]:
    from orbitlab.rl.checkpoints import CheckpointError, load_torch_checkpoint

    path = root / f"{name}.pt"
    path.write_bytes(content() if callable(content) else content)
    try:
        load_torch_checkpoint(path)
    except CheckpointError as error:
        return one_line_naming(str(error), str(path))
    return WRONG, "loaded"


def _truncated(fraction: float, root: Path) -> bytes:
    import torch

    path = root / "whole.pt"
    torch.save({"actor_state_dict": {"w": torch.zeros(64, 64)}}, path)
    data = path.read_bytes()
    return data[: int(len(data) * fraction)]


def _last_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip() and "Warning" not in line)


def _demo_file_refused(root: Path, name: str, spoil) -> tuple[str, str]:
    path = root / f"{name}.hdf5"
    shutil.copy(root / "demos.hdf5", path)
    spoil(path)
    with warnings.catch_warnings(record=True):
        code, err = invoke("replay", [f"file={path}"])
    if code == 0:
        return WRONG, "replayed without error"
    return one_line_naming(_last_lines(err), str(path))


def _incomplete_group(root: Path) -> tuple[str, str]:
    import h5py

    path = root / "incomplete.hdf5"
    shutil.copy(root / "demos.hdf5", path)
    with h5py.File(path, "r+") as f:  # what a kill in the middle of demo_2 leaves
        f["data"].create_group("demo_2").create_group("obs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, err = invoke("replay", [f"file={path}"])
    named = any("demo_2" in str(w.message) for w in caught)
    if code == 0 and named:
        return CLEAN, "demo_2 skipped with a warning naming it; demos 0-1 replayed"
    return WRONG, f"exit {code}, warning naming demo_2: {named}: {_last_lines(err)[-200:]}"


def _untouched(root: Path, verb: str, argv_of) -> tuple[str, str]:
    """A command that must fail and leave the existing demo file as it was."""
    path = root / f"keep_{abs(hash(str(argv_of(Path('x')))))}.hdf5"
    shutil.copy(root / "demos.hdf5", path)
    before = path.read_bytes()
    code, err = invoke(verb, argv_of(path))
    if path.read_bytes() != before:
        return WRONG, f"the existing file changed (exit {code})"
    if code == 0:
        return WRONG, "accepted (exit 0); the file is unchanged"
    outcome, seen = one_line_naming(_last_lines(err))
    return outcome, f"file unchanged; {seen}"


def _spoil_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _spoil_garbage(path: Path) -> None:
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)


def _spoil_empty(path: Path) -> None:
    path.write_bytes(b"")


def cases(root: Path) -> list[Case]:
    out: list[Case] = []

    def add(group, name, fn, *args):
        out.append(Case(group, name, lambda: fn(*args)))

    for via in ("load", "play", "export"):
        add("files: crafted checkpoint", f"pickle payload via {via}", _crafted, root, via)
    for name, content in {
        "pickle garbage": b"\x80\x02garbage" * 4,
        "empty": b"",
        "zip header only": b"PK\x03\x04" + b"\x00" * 26,
        "random bytes": bytes(range(256)) * 4,
        "text": b"hello checkpoint\n",
    }.items():
        add(
            "files: broken checkpoint",
            name,
            _broken_checkpoint,
            root,
            name.replace(" ", "_"),
            content,
        )
    for fraction in (0.1, 0.5, 0.9):
        add(
            "files: broken checkpoint",
            f"truncated to {fraction:.0%}",
            _broken_checkpoint,
            root,
            f"trunc{int(fraction * 100)}",
            lambda f=fraction: _truncated(f, root),
        )
    for name, spoil in {
        "truncated to 50%": _spoil_truncate,
        "HDF5 signature, no body": _spoil_garbage,
        "empty file": _spoil_empty,
    }.items():
        add("files: torn demo file", name, _demo_file_refused, root, name.split()[0], spoil)
    add("files: torn demo file", "incomplete last demo group", _incomplete_group, root)
    for spelling in ("same", "dotted", "symlink"):
        add(
            "files: destructive arguments",
            f"merge out=in ({spelling})",
            _merge_onto_input,
            root,
            spelling,
        )
    for item in ("num_demos=abc", "rate_hz=-5", "task=Nope", "device=joystick", "seed=x"):
        add(
            "files: destructive arguments",
            f"record into an existing file with {item}",
            _untouched,
            root,
            "record",
            lambda p, item=item: [f"out={p}", item],
        )
    return out


def _merge_onto_input(root: Path, spelling: str) -> tuple[str, str]:
    a = root / f"merge_{spelling}.hdf5"
    shutil.copy(root / "demos.hdf5", a)
    (root / "sub").mkdir(exist_ok=True)
    out = {"same": a, "dotted": root / "." / "sub" / ".." / a.name, "symlink": root / "link.hdf5"}
    target = out[spelling]
    if spelling == "symlink" and not target.exists():
        target.symlink_to(a)
    return _untouched_path(a, "demo_tools", ["merge", f"files={a}", f"out={target}"])


def _untouched_path(path: Path, verb: str, argv: list[str]) -> tuple[str, str]:
    before = path.read_bytes()
    code, err = invoke(verb, argv)
    if path.read_bytes() != before:
        return WRONG, f"the input changed (exit {code})"
    if code == 0:
        return WRONG, "accepted (exit 0)"
    outcome, seen = one_line_naming(_last_lines(err), "input")
    return outcome, f"input unchanged; {seen}"
