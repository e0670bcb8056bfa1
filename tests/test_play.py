"""scripts/play.py: metrics in the JSON, plots, video and the live viewers (orbitlab.viz)."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from orbitlab.envs.evaluate import rollout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.viz import VizUnavailable
from orbitlab_tasks import task_entry

PLAY = Path(__file__).resolve().parents[1] / "scripts" / "play.py"
GL_FAILURE = "could not create an OpenGL context"
STEPS = 12


def play(*args: str, env: dict | None = None, timeout: float = 120):
    return subprocess.run(
        [
            sys.executable,
            str(PLAY),
            "task=Detumble-RW",
            "agent=baseline",
            "num_envs=2",
            f"max_steps={STEPS}",
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def headless_env() -> dict:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """One run with json= and plots= (the recording comes from the same rollout)."""
    out = tmp_path_factory.mktemp("play")
    result = play(f"json={out / 'score.json'}", f"plots={out / 'plots'}")
    assert result.returncode == 0, result.stderr[-2000:]
    return out, json.loads((out / "score.json").read_text())


def test_json_holds_the_cost_and_final_error_metrics(played):
    _, score = played
    for key in ("episodes", "success_rate", "mean_return", "mean_success_time_s"):
        assert key in score  # the old fields stay
    assert score["mean_delta_v_mps"] is None and score["mean_impulse_ns"] is None  # wheels only
    assert score["control_effort"]["sat/wheels"] > 0.0
    assert score["control_effort_units"]["sat/wheels"] == "N m s"
    assert score["final_terms"]["rate"] > 0.0  # |omega|, rad/s, still tumbling after 1.2 s
    assert score["final_errors"] == {} and score["worlds"] == 2


def test_plots_are_written_as_png(played):
    out, score = played
    pngs = sorted((out / "plots").glob("*.png"))
    assert {p.stem for p in pngs} == {"position", "attitude", "actuators", "terms"}
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert len(score["plots"]) == 4


def test_video_has_one_frame_per_sample(tmp_path):
    imageio = pytest.importorskip("imageio.v2")
    pytest.importorskip("imageio_ffmpeg")
    video = tmp_path / "out.mp4"
    result = play(f"video={video}", f"json={tmp_path / 's.json'}", "world=1")
    if result.returncode != 0 and GL_FAILURE in result.stderr:
        pytest.skip(f"no OpenGL backend available: {result.stderr[-300:]}")
    assert result.returncode == 0, result.stderr[-2000:]
    frames = imageio.mimread(video, memtest=False)
    assert len(frames) == STEPS + 1  # the state after reset, then one per env step
    assert frames[0].shape == (480, 640, 3) and frames[-1].std() > 1.0  # not blank
    assert json.loads((tmp_path / "s.json").read_text())["video_frames"] == STEPS + 1


@pytest.fixture(scope="module")
def rw_env():
    return ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").baseline_cfg, num_envs=1))


def test_viewer_without_display_or_viser_says_what_to_install(rw_env, monkeypatch):
    from orbitlab.viz.viewer import ViewerCfg, open_viewer

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setitem(sys.modules, "viser", None)  # `import viser` raises ImportError
    with pytest.raises(VizUnavailable, match=r"pip install 'orbitlab-sim\[viser\]'"):
        open_viewer(rw_env, ViewerCfg(hold=False))


def test_play_turns_a_missing_viewer_into_a_clear_exit(rw_env, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("play_script", PLAY)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setitem(sys.modules, "viser", None)
    args = script.parse(["num_envs=1", "viewer=true", "hold=false"])
    from orbitlab.cli import UserError

    with pytest.raises(UserError, match=r"orbitlab-sim\[viser\]"):  # one line, status 1
        script.observers_for(args, rw_env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_viser_viewer_runs_headless_and_shuts_down():
    pytest.importorskip("viser")
    port = free_port()
    result = play(
        "viewer=true", "hold=false", "speed=0", f"port={port}", env=headless_env(), timeout=90
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "viser viewer: open http://127.0.0.1:" in result.stdout
    with socket.socket() as s:  # the server is gone with the process
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_thruster_delta_v_is_impulse_over_mass_and_wrappers_are_removed():
    env = ManagerBasedRLEnv(load_cfg(task_entry("Docking").baseline_cfg, num_envs=2))
    score = rollout(env, policy="baseline", max_steps=20)
    mass = env.scene.entities["chaser"].mass_kg
    assert score.mean_impulse_ns > 0.0
    assert score.mean_delta_v_mps == pytest.approx(score.mean_impulse_ns / mass, rel=1e-9)
    assert score.control_effort_units["chaser/rcs"] == "N s"
    assert "alignment" in score.final_terms and str(score).startswith("episodes 0, success")
    for group in env.scene.actuators.values():
        assert "apply" not in vars(group)
    assert "compute" not in vars(env.reward_manager)
    env.step(torch.zeros(2, env.action_manager.total_dim))  # still steps normally


GOOD_AGENT = {
    "library": "rsl_rl",
    "max_iterations": 1,
    "num_steps_per_env": 4,
    "hidden_dims": [64, 64],
    "learning_rate": 1e-3,
    "init_std": 0.5,
    "save_interval": 50,
}


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"hidden_dims": 64}, "agent.hidden_dims=64 is invalid: expected a list"),
        ({"hidden_dims": ["a"]}, "agent.hidden_dims[0]='a' is invalid: expected an integer"),
        ({"algorithm": [1, 2]}, "agent.algorithm=[1, 2] is invalid: expected a mapping"),
        ({"num_steps_per_env": "abc"}, "agent.num_steps_per_env='abc' is invalid: expected an"),
        ({"init_std": "x"}, "agent.init_std='x' is invalid: expected a finite number"),
        (
            {"init_std": -1.0},
            "agent.init_std=-1.0 is invalid: expected a finite number in (0, 100]",
        ),
        ({"library": ["rsl_rl"]}, "agent.library=['rsl_rl']"),  # + expected one of ...
        ({"hidden_dims": None}, "agent.hidden_dims is missing: an agent of library rsl_rl needs"),
    ],
)
def test_a_copied_run_config_with_a_wrong_agent_section_is_one_line(
    tmp_path, capsys, change, expected
):
    """A run config whose agent section has the wrong shape (a list for a mapping,
    text for a number, a key missing) is a one-line error naming the key and what is
    allowed (exit status 1), not a TypeError deep in the loader; the same for export."""
    import yaml

    from orbitlab.cli import run
    from orbitlab.cli.export import main as export_main
    from orbitlab.cli.play import main

    agent = {**GOOD_AGENT, **change}
    agent = {key: value for key, value in agent.items() if value is not None}
    (tmp_path / ".hydra").mkdir()
    config = {"task": {"name": "Detumble-RW"}, "agent": agent, "seed": 0}
    (tmp_path / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    checkpoint = tmp_path / "model_0.pt"
    checkpoint.write_bytes(b"")
    for command, argv in ((main, ["num_envs=1"]), (export_main, [])):
        status = run(command, [f"checkpoint={checkpoint}", *argv], "play")
        err = capsys.readouterr().err
        assert status == 1 and expected in err, err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_every_packaged_agent_config_passes_the_saved_agent_check():
    import yaml

    from orbitlab.rl.policies import agent_problem

    agents = sorted((Path(__file__).resolve().parents[1] / "orbitlab/configs/agent").glob("*.yaml"))
    assert len(agents) >= 4
    for path in agents:
        assert agent_problem(yaml.safe_load(path.read_text())) is None, path.name
