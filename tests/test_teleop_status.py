"""The recorder's status line: fields from the task's own terms, one formatted line with
units, a bounded update rate, and `orbitlab record` printing it without changing the file."""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path
from types import SimpleNamespace

import h5py
import mujoco
import numpy as np
import pytest
import torch

from orbitlab.cli import run
from orbitlab.demos.record import env_args, make_env
from orbitlab.demos.status import (
    StatusLine,
    TeleopStatus,
    format_status,
    overlay_text,
    read_status,
    task_status_fn,
)
from orbitlab.demos.teleop import TeleopMapping
from orbitlab.devices import ScriptedCfg, ScriptedDevice

LINE = re.compile(r"^t \d+\.\d s \| .* \| demos \d+/\d+ \| step \d+$")


def _env(task: str):
    args = env_args(task, seed=1)
    env = make_env({**args, "env_kwargs": {**args["env_kwargs"], "nthread": 1}})
    env.reset(seed=1)
    return env


def _port_distance(env) -> float:
    """Probe tip to port, m, from world 0's joint positions (MuJoCo's own kinematics)."""
    m = env.scene.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = env.scene.view.array("qpos")[0].cpu().numpy()
    mujoco.mj_kinematics(m, d)
    return float(np.linalg.norm(d.site("chaser/probe_tip").xpos - d.site("target/port").xpos))


def test_docking_status_follows_a_scripted_approach():
    env = _env("Docking")
    reading = task_status_fn("Docking")
    first = read_status(env, reading, "scripted", 1, 5, 0)
    assert first.time_s == 0.0 and (first.demos_done, first.demos_wanted, first.steps) == (1, 5, 0)
    assert first.distance_m == pytest.approx(_port_distance(env), rel=1e-9, abs=1e-9)
    assert "axis" in first.error and "deg" in first.error
    forward = np.zeros((1, 6))
    forward[0, 0] = 1.0  # full thrust along the probe, towards the port
    device = ScriptedDevice(ScriptedCfg(commands=forward, end="hold"))
    mapping = TeleopMapping(env)
    distances = [first.distance_m]
    for _ in range(10):
        env.step(mapping(device.advance()))
        distances.append(_port_distance(env))
    status = read_status(env, reading, device="scripted", demos_done=1, demos_wanted=5, steps=10)
    assert status.time_s == pytest.approx(10 * env.step_dt)
    assert status.distance_m == pytest.approx(distances[-1], rel=1e-9, abs=1e-9)
    assert all(b < a for a, b in itertools.pairwise(distances[1:]))
    assert status.closing_speed_m_s > 0.05
    # the closing speed is the distance's rate of decrease (within one step's acceleration)
    rate = (distances[-2] - distances[-1]) / env.step_dt
    assert status.closing_speed_m_s == pytest.approx(rate, rel=0.1)


def test_detumble_status_shows_the_rate_instead_of_a_distance():
    env = _env("Detumble-RW")
    status = read_status(env, task_status_fn("Detumble-RW"), "gamepad", 0, 2, 0)
    assert status.distance_m is None and status.closing_speed_m_s is None
    omega = env.scene.entities["sat"].data.root_ang_vel_b[0].norm()
    assert status.error == f"|omega| {float(torch.rad2deg(omega)):.2f} deg/s"
    line = format_status(status)
    assert "dist" not in line and "deg/s" in line and "gamepad" in line


def test_formatter_gives_one_line_with_units():
    status = TeleopStatus(
        time_s=12.34,
        distance_m=8.4213,
        closing_speed_m_s=0.1181,
        error="axis 2.1 deg",
        device="keyboard",
        demos_done=3,
        demos_wanted=10,
        steps=123,
    )
    line = format_status(status)
    assert line == (
        "t 12.3 s | dist 8.42 m | closing +0.118 m/s | axis 2.1 deg | keyboard | "
        "demos 3/10 | step 123"
    )
    assert LINE.match(line) and "\n" not in line and "\r" not in line
    opening = format_status(TeleopStatus(0.0, 5.0, -0.2, "", "spacemouse", 0, 1, 0, paused=True))
    assert "closing -0.200 m/s" in opening and "spacemouse (paused)" in opening
    labels, values = overlay_text(status)
    assert labels.splitlines()[:3] == ["t", "dist", "closing"]
    assert values.splitlines()[:3] == ["12.3 s", "8.42 m", "+0.118 m/s"]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _stub_env():
    return SimpleNamespace(episode_length_buf=torch.tensor([42]), step_dt=0.1)


def test_terminal_line_is_rewritten_in_place_at_most_10_hz():
    clock, out, shown = Clock(), io.StringIO(), []
    line = StatusLine(_stub_env(), None, "keyboard", 4, stream=out, tty=True, clock=clock)
    line.overlay = shown.append
    assert line.update(0, 1) is not None  # the first update is shown
    for _ in range(9):  # 90 ms of updates: none shown
        clock.now += 0.01
        assert line.update(0, 2) is None
    clock.now += 0.011
    assert line.update(1, 3).steps == 3
    assert line.shown == 2 and len(shown) == 2 and shown[-1].demos_done == 1
    text = out.getvalue()
    assert text.count("\r") == 2 and "\n" not in text
    assert text.rsplit("\r", 1)[1] == "t 4.2 s | keyboard | demos 1/4 | step 3"
    line.clear()  # before a log line: the line is wiped, the next update redraws it
    assert out.getvalue().endswith(
        "\r" + " " * len("t 4.2 s | keyboard | demos 1/4 | step 3") + "\r"
    )
    assert line.update(1, 3, force=True) is not None
    line.close()
    assert out.getvalue().endswith("step 3\n")


def test_log_output_gets_one_line_per_second():
    clock, out = Clock(), io.StringIO()
    line = StatusLine(_stub_env(), None, "scripted", 2, stream=out, tty=False, clock=clock)
    for _ in range(35):  # 3.4 s of 10 Hz updates
        line.update(0, 5)
        clock.now += 0.1
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and "\r" not in out.getvalue()
    assert all(LINE.match(text) for text in lines)
    line.close()  # nothing to end
    assert len(out.getvalue().splitlines()) == 4


def test_mujoco_viewer_overlays_the_status():
    from orbitlab.viz.viewer import MujocoViewer

    texts = []
    viewer = MujocoViewer.__new__(MujocoViewer)
    viewer.status = None
    viewer.handle = SimpleNamespace(is_running=lambda: True, set_texts=texts.append)
    status = TeleopStatus(1.0, 2.0, 0.5, "", "keyboard", 0, 1, 10)
    viewer.set_status(status)
    (_font, where, labels, values) = texts[0]
    assert where == mujoco.mjtGridPos.mjGRID_TOPLEFT and labels.startswith("t\ndist")
    assert values.startswith("1.0 s\n2.00 m\n+0.500 m/s") and viewer.status is status


def _record(tmp_path: Path, name: str, capsys, *extra: str) -> tuple[Path, str]:
    from orbitlab.cli import record

    script = tmp_path / "forward.npy"
    commands = np.zeros((8, 6))
    commands[:, 0] = 1.0
    np.save(script, commands)
    out = tmp_path / name
    argv = [
        "task=Docking",
        "device=scripted",
        f"script={script}",
        f"out={out}",
        "num_demos=2",
        "keep=all",
        "max_steps=5",
        "rate_hz=0",
        *extra,
    ]
    assert run(record.main, argv, "record") == 0
    captured = capsys.readouterr()
    return out, captured.err


def _contents(path: Path) -> dict:
    found = {}
    with h5py.File(path, "r") as f:

        def visit(name, item):
            attrs = {k: np.asarray(v).tolist() for k, v in item.attrs.items()}
            data = item[()].tolist() if isinstance(item, h5py.Dataset) else None
            found[name] = (attrs, data)

        f.visititems(visit)
        found["/"] = {k: np.asarray(v).tolist() for k, v in f.attrs.items()}
    return found


def test_record_prints_status_lines_and_writes_the_same_file(tmp_path, capsys):
    shown, err = _record(tmp_path, "status.hdf5", capsys, "status=true")
    lines = [text for text in err.splitlines() if text.startswith("t ")]
    assert len(lines) >= 2, err
    assert all(LINE.match(text) and " m/s | " in text and "scripted" in text for text in lines)
    assert lines[0].endswith("demos 0/2 | step 0") and "demos 2/2" in lines[-1]
    plain, err = _record(tmp_path, "plain.hdf5", capsys)  # auto: scripted, not a terminal
    assert not [text for text in err.splitlines() if text.startswith("t ")]
    assert _contents(shown) == _contents(plain)
