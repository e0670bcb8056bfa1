"""Demo files are never destroyed: arguments first, temporary file + rename, merge refuses
its own input, a full disk or read-only directory stops cleanly, incomplete demos are
skipped on open."""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from orbitlab.cli import ArgumentError, run
from orbitlab.demos import hdf5, tools
from orbitlab.demos.hdf5 import DemoFileError, DemoReader, DemoWriter, DiskFullError
from orbitlab.demos.record import env_args, make_env, record
from orbitlab.demos.replay import replay_demo
from orbitlab.devices import ScriptedCfg, ScriptedDevice

ROOT = Path(__file__).resolve().parents[1]
TASK = "Detumble-RW"


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"demo_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _device() -> ScriptedDevice:
    commands = np.random.default_rng(0).uniform(-1.0, 1.0, (32, 6))
    return ScriptedDevice(ScriptedCfg(commands=commands, end="loop"))


def _record(path: Path, num_demos: int, writer: DemoWriter | None = None) -> DemoWriter:
    args = env_args(TASK, seed=1)
    env = make_env({**args, "env_kwargs": {**args["env_kwargs"], "nthread": 1}})
    writer = writer or DemoWriter(path, args)
    with writer:
        record(
            env,
            _device(),
            writer,
            num_demos=num_demos,
            keep="all",
            max_steps=4,
            seed=1,
            log=lambda _: None,
        )
    return writer


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("files") / "three.hdf5"
    _record(path, 3)
    return path


def _copy(demos: Path, tmp_path: Path, name: str = "a.hdf5") -> Path:
    path = tmp_path / name
    shutil.copy(demos, path)
    return path


def _readable(path: Path, count: int) -> None:
    """`path` holds `count` complete demos and the last one replays exactly."""
    with DemoReader(path) as reader:
        assert len(reader.demos) == count
        if count:
            result = replay_demo(make_env(reader.env_args), reader, reader.demos[-1])
            assert result.exact


# ------------------------------------------------------------------ arguments first
def test_bad_num_demos_leaves_an_existing_output_untouched(demos, tmp_path, capsys):
    out = _copy(demos, tmp_path)
    before = out.read_bytes()
    argv = [f"out={out}", "num_demos=1O", f"task={TASK}"]
    assert run(script("record_demos").main, argv, "record_demos") == 2
    assert "num_demos='1O'" in capsys.readouterr().err
    assert out.read_bytes() == before and not hdf5.partial_path(out).exists()


def test_recording_goes_through_a_partial_file(tmp_path):
    path = tmp_path / "new.hdf5"
    writer = DemoWriter(path, env_args(TASK))
    assert hdf5.partial_path(path).is_file() and not path.exists()
    writer.close()
    assert path.is_file() and not hdf5.partial_path(path).exists()


def test_empty_session_keeps_an_existing_file(demos, tmp_path):
    out = _copy(demos, tmp_path)
    before = out.read_bytes()
    DemoWriter(out, env_args(TASK)).close()
    assert out.read_bytes() == before


def test_partial_file_of_a_killed_session_is_not_overwritten(tmp_path):
    path = tmp_path / "d.hdf5"
    hdf5.partial_path(path).write_bytes(b"demos of a killed session")
    with pytest.raises(DemoFileError, match="interrupted session"):
        DemoWriter(path, env_args(TASK))
    assert hdf5.partial_path(path).read_bytes() == b"demos of a killed session"


# ------------------------------------------------------------------ merge
@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink"])
def test_merge_refuses_an_output_that_is_an_input(demos, tmp_path, spelling, capsys):
    a = _copy(demos, tmp_path)
    before = a.read_bytes()
    out = {
        "same": a,
        "dotted": tmp_path / "." / "sub" / ".." / "a.hdf5",
        "symlink": tmp_path / "link.hdf5",
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        out.symlink_to(a)
    with pytest.raises(ArgumentError, match="is the input"):
        tools.merge([a], out)
    argv = ["merge", f"files={a}", f"out={out}"]
    assert run(script("demo_tools").main, argv, "demo_tools") == 2
    assert "is the input" in capsys.readouterr().err
    assert a.read_bytes() == before


def test_merge_writes_a_new_file_atomically(demos, tmp_path):
    out = tmp_path / "merged.hdf5"
    assert tools.merge([demos, demos], out) == 6
    assert not (tmp_path / "merged.hdf5.partial").exists()
    assert tools.summary(out)["demos"] == 6


def test_merge_of_an_unreadable_input_is_named_and_leaves_no_output(demos, tmp_path):
    junk = tmp_path / "junk.hdf5"
    junk.write_bytes(b"not hdf5")
    out = tmp_path / "merged.hdf5"
    with pytest.raises(DemoFileError, match="junk.hdf5 is not a readable HDF5 demo file"):
        tools.merge([demos, junk], out)
    assert not out.exists() and not (tmp_path / "merged.hdf5.partial").exists()


# ------------------------------------------------------------------ incomplete groups
def test_incomplete_last_demo_is_skipped_and_reported(demos, tmp_path, capsys):
    path = _copy(demos, tmp_path)
    with h5py.File(path, "r+") as f:  # what a kill in the middle of demo_3 leaves
        f["data"].create_group("demo_3").create_group("obs")
    with pytest.warns(UserWarning, match="demo_3"):
        reader = DemoReader(path)
    assert reader.demos == ["demo_0", "demo_1", "demo_2"] and "demo_3" in reader.skipped
    reader.close()
    with pytest.warns(UserWarning):
        assert run(script("replay_demos").main, [f"file={path}"], "replay_demos") == 0
    out = capsys.readouterr().out
    assert "demo_3: skipped, incomplete" in out and "3/3 demos reproduced exactly" in out
    assert tools.summary(path)["demos"] == 3


def test_unreadable_demo_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "junk.hdf5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    assert run(script("replay_demos").main, [f"file={path}"], "replay_demos") == 1
    err = capsys.readouterr().err
    assert "is not a readable" in err and err.count("\n") == 1


# ------------------------------------------------------------------ full disk, read-only
def test_full_disk_stops_before_writing_and_keeps_finished_demos(tmp_path, monkeypatch):
    path = tmp_path / "full.hdf5"
    writer = DemoWriter(path, env_args(TASK, seed=1))
    real = shutil.disk_usage

    def usage(folder):  # room for two demos, then none
        free = 10**9 if len(writer.names) < 2 else 1000
        return real(folder)._replace(free=free)

    monkeypatch.setattr(hdf5.shutil, "disk_usage", usage)
    with pytest.raises(DiskFullError, match="not enough free space for demo_2"):
        _record(path, 5, writer)
    assert writer.saved_to == path  # nothing was there before: the demos are at `path`
    monkeypatch.undo()
    _readable(path, 2)


def test_write_error_mid_demo_removes_the_half_group(demos, tmp_path, monkeypatch):
    out = _copy(demos, tmp_path, "existing.hdf5")
    before = out.read_bytes()
    writer = DemoWriter(out, env_args(TASK, seed=1))
    real = h5py.Group.create_dataset

    def create_dataset(self, name, *args, **kwargs):
        if name == "states" and len(writer.names) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", create_dataset)
    with pytest.raises(DemoFileError, match="writing demo_1 failed .No space left on device"):
        _record(out, 3, writer)
    monkeypatch.undo()
    assert out.read_bytes() == before  # the existing file stays; the new demo is beside it
    assert writer.saved_to == hdf5.partial_path(out)
    _readable(writer.saved_to, 1)


def test_read_only_directory_is_a_clear_error(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(hdf5.h5py, "File", read_only)
    with pytest.raises(DemoFileError, match="cannot write demos to .*Read-only file system"):
        DemoWriter(tmp_path / "d.hdf5", env_args(TASK))


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            check=False,
            capture_output=True,
        ).returncode
        == 0
    )


def _record_process(out: Path, cmds: Path, max_steps: int = 20) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "record_demos.py"),
            f"task={TASK}",
            "device=scripted",
            f"script={cmds}",
            f"out={out}",
            "num_demos=100000",
            "keep=all",
            f"max_steps={max_steps}",
            "rate_hz=0",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_real_full_disk_gives_a_clear_error_and_readable_demos(tmp_path):
    """On a 4 MiB tmpfs (root only): the recorder used to segfault (rc 139) and leave a
    file whose demo_1 was unreadable."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "4m"):
        pytest.skip("needs root to mount a tmpfs")
    try:
        cmds = tmp_path / "cmds.npy"
        np.save(cmds, np.random.default_rng(0).uniform(-1.0, 1.0, (64, 6)))
        result = _record_process(disk / "d.hdf5", cmds)
        assert result.returncode == 1, result.stderr[-2000:]
        assert "not enough free space" in result.stderr and "Traceback" not in result.stderr
        with DemoReader(disk / "d.hdf5") as reader:
            assert reader.demos and not reader.skipped
            for demo in reader.demos:
                assert reader.states(demo).shape[0] == 20
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_real_read_only_directory_gives_a_clear_error(tmp_path):
    disk = tmp_path / "ro"
    if not _mount_tmpfs(disk, "1m"):
        pytest.skip("needs root to mount a tmpfs")
    try:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        cmds = tmp_path / "cmds.npy"
        np.save(cmds, np.zeros((4, 6)))
        result = _record_process(disk / "d.hdf5", cmds)
        assert result.returncode == 1 and "Read-only file system" in result.stderr
        assert "Traceback" not in result.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=False)
