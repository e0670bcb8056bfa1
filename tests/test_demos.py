"""Demonstrations: scripted recording, robomimic layout, crash safety, exact replay, tools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from orbitlab.demos import tools
from orbitlab.demos.hdf5 import DemoReader, DemoWriter, partial_path
from orbitlab.demos.record import env_args, make_cfg, make_env, record
from orbitlab.demos.replay import replay_demo
from orbitlab.devices import ScriptedCfg, ScriptedDevice

ROOT = Path(__file__).resolve().parents[1]


def _commands(steps: int = 64) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, (steps, 6))


def _record(path: Path, task: str, num_demos: int = 3, max_steps: int = 6) -> None:
    args = env_args(task, seed=1)
    env = make_env({**args, "env_kwargs": {**args["env_kwargs"], "nthread": 1}})
    args["orbitlab_cfg"] = env_args(task, cfg=make_cfg(args["env_kwargs"]))["orbitlab_cfg"]
    device = ScriptedDevice(ScriptedCfg(commands=_commands(), end="loop", events={3: "reset"}))
    with DemoWriter(path, args) as writer:
        stats = record(
            env,
            device,
            writer,
            num_demos=num_demos,
            keep="all",
            max_steps=max_steps,
            seed=1,
            log=lambda _: None,
        )
    assert stats.kept == num_demos and stats.discarded == 1  # the reset at step 3


@pytest.fixture(scope="module")
def docking_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demos") / "docking.hdf5"
    _record(path, "Docking")
    return path


def test_layout_and_attrs(docking_file):
    with h5py.File(docking_file, "r") as f:
        data = f["data"]
        assert sorted(data.keys()) == ["demo_0", "demo_1", "demo_2"]
        env_meta = json.loads(data.attrs["env_args"])
        assert env_meta["env_name"] == "Orbitlab-Docking-v0" and env_meta["type"] == 2
        assert env_meta["env_kwargs"]["task"] == "Docking" and "orbitlab_cfg" in env_meta
        assert data.attrs["total"] == 18
        from orbitlab_tasks.docking.docking_env_cfg import env_cfg

        terms = set(env_cfg(1).observations["policy"].terms)  # one dataset per policy term
        for name in data:
            demo = data[name]
            assert demo.attrs["num_samples"] == 6 and "success" in demo.attrs
            assert set(demo["obs"]) == terms and set(demo["next_obs"]) == terms
            assert demo["actions"].shape == (6, 6) and demo["actions"].dtype == np.float32
            assert demo["rewards"].shape == (6,) and list(demo["dones"][()]) == [0] * 5 + [1]
            assert demo["states"].shape[0] == 6 and demo["states"].dtype == np.float64
            np.testing.assert_array_equal(demo["initial_state"][()], demo["states"][0])
            # next_obs[t] is obs[t + 1] inside an episode
            np.testing.assert_array_equal(demo["next_obs/gyro"][:-1], demo["obs/gyro"][1:])
        assert [n.decode() for n in f["mask/train"][()]] == ["demo_0", "demo_1", "demo_2"]
        assert len(f["mask/valid"]) == 0


@pytest.mark.parametrize("mode", ["actions", "states"])
def test_replay_is_bit_exact(docking_file, mode):
    with DemoReader(docking_file) as reader:
        env = make_env(reader.env_args)
        for demo in reader.demos:
            result = replay_demo(env, reader, demo, mode)
            assert result.exact, result.mismatched
            assert result.steps == 6 and result.state_diff == 0.0 and result.obs_diff == 0.0


def test_replay_detects_a_changed_action(docking_file, tmp_path):
    path = tmp_path / "changed.hdf5"
    path.write_bytes(docking_file.read_bytes())
    with h5py.File(path, "r+") as f:
        f["data/demo_0/actions"][2] += 0.5
    with DemoReader(path) as reader:
        result = replay_demo(make_env(reader.env_args), reader, "demo_0")
    assert not result.exact and result.state_diff > 0.0


def test_detumble_rw_record_and_replay(tmp_path):
    path = tmp_path / "rw.hdf5"
    _record(path, "Detumble-RW", num_demos=2, max_steps=5)
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/replay_demos.py"), f"file={path}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2/2 demos reproduced exactly" in out.stdout


def test_empty_session_leaves_a_valid_file(tmp_path):
    path = tmp_path / "empty.hdf5"
    DemoWriter(path, env_args("Docking")).close()
    with h5py.File(path, "r") as f:
        assert f["data"].attrs["total"] == 0 and len(f["data"]) == 0
        assert len(f["mask/train"]) == 0


def test_sigkill_keeps_completed_demos(tmp_path):
    script = tmp_path / "cmds.npy"
    np.save(script, _commands())
    path = tmp_path / "killed.hdf5"
    path.write_bytes(b"an earlier file")  # not touched: the session writes killed.hdf5.partial
    proc = subprocess.Popen(
        [
            sys.executable,
            "-u",
            str(ROOT / "scripts/record_demos.py"),
            "task=Detumble-RW",
            "device=scripted",
            f"script={script}",
            f"out={path}",
            "num_demos=100000",
            "keep=all",
            "max_steps=4",
            "rate_hz=0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in proc.stdout:
            if line.startswith("demo_1:"):
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == b"an earlier file"
    path = partial_path(path)
    with h5py.File(path, "r") as f:
        demos = list(f["data"])
        assert len(demos) >= 2
        assert f["data"].attrs["total"] == 4 * len(demos)
        for name in demos:
            assert f["data"][name]["states"].shape[0] == 4
    with DemoReader(path) as reader:
        result = replay_demo(make_env(reader.env_args), reader, "demo_1")
        assert result.exact


def test_tools_merge_split_summary(docking_file, tmp_path):
    merged = tmp_path / "merged.hdf5"
    assert tools.merge([docking_file, docking_file], merged) == 6
    info = tools.summary(merged)
    assert info["demos"] == 6 and info["total_samples"] == 36 == info["total_attr"]
    assert info["length_min"] == info["length_max"] == 6 and info["success_rate"] == 0.0
    assert info["masks"] == {"train": 6, "valid": 0}
    assert tools.split(merged, 0.34, seed=0) == (4, 2)
    with h5py.File(merged, "r") as f:
        train = {n.decode() for n in f["mask/train"][()]}
        valid = {n.decode() for n in f["mask/valid"][()]}
    assert not train & valid and len(train | valid) == 6
    assert tools.split(merged, 0.34, seed=0) == (4, 2)  # seeded: the same split again


def test_robomimic_reads_and_trains(docking_file):
    pytest.importorskip("robomimic")
    from orbitlab.demos.robomimic_check import check_robomimic

    found = check_robomimic(docking_file)
    assert found["env_meta"]["env_name"] == "Orbitlab-Docking-v0"
    assert found["shapes"]["ac_dim"] == 6 and found["len"] == 18
    assert set(found["obs_keys"]) == set(found["shapes"]["all_shapes"])
    assert np.isfinite(found["loss"])


def test_recording_shows_a_progress_bar_over_the_kept_demos(tmp_path, monkeypatch):
    """tqdm's bar (on a terminal) counts the kept demos; its postfix follows the episode."""
    from orbitlab.demos import record as record_mod

    class Bar:
        def __init__(self, desc: str, total: int, unit: str):
            self.desc, self.total, self.unit, self.n, self.postfix = desc, total, unit, 0, ""
            self.closed = False

        def update(self, n: int) -> None:
            self.n += n

        def set_postfix_str(self, text: str, refresh: bool) -> None:
            self.postfix = text

        def close(self) -> None:
            self.closed = True

    bars: list[Bar] = []
    monkeypatch.setattr(
        record_mod,
        "progress_bar",
        lambda desc, total, unit: bars.append(Bar(desc, total, unit)) or bars[-1],
    )
    _record(tmp_path / "demos.hdf5", "Detumble-RW", num_demos=2, max_steps=5)
    (bar,) = bars
    assert (bar.desc, bar.total, bar.unit) == ("recording", 2, "demo")
    assert bar.n == 2 and bar.closed
    assert bar.postfix.startswith("episode ") and bar.postfix.endswith(" steps")


def test_every_shipped_task_maps_a_device_command_to_its_actions():
    import torch

    from orbitlab.demos.teleop import TeleopMapping
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.registry import entry_point, make_env_cfg, tasks

    shipped = [spec for spec in tasks() if entry_point(spec.env_cfg).startswith("orbitlab_tasks.")]
    assert len(shipped) >= 9
    for spec in shipped:
        env = ManagerBasedRLEnv(make_env_cfg(spec.name, 1, variant="play"))
        mapping = TeleopMapping(env)
        action = mapping(torch.tensor([0.5, -0.5, 1.0, 0.2, -0.2, 0.1]))
        assert action.shape == (1, env.action_manager.total_dim), spec.name
        env.step(action)  # the env takes it
