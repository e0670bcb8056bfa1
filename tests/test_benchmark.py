"""`orbitlab bench` (= scripts/benchmark.py) runs, writes its JSON schema (no timing is asserted
here) and checks its key=value arguments."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from orbitlab.cli import ArgumentError
from orbitlab.cli.dispatch import main as orbitlab_main

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "benchmark.py"


def load_script():
    spec = importlib.util.spec_from_file_location("benchmark_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_physics_benchmark_writes_the_documented_json(tmp_path, capsys):
    out = tmp_path / "bench.json"  # through the hydra front end: lists as [a,b]
    argv = ["bench", "mode=physics", "nworld=[4,8]", "steps=2", "trials=1", f"json={out}"]
    assert orbitlab_main(argv) == 0
    rows = json.loads(out.read_text())["physics"]
    assert set(rows) == {"4", "8"}
    for row in rows.values():
        assert set(row) == {
            "orbit_steps_per_s",
            "plain_steps_per_s",
            "orbit_tax",
            "peak_rss_mb",
            "stage_steps_per_s",
            "stage_plain_steps_per_s",
            "stage_tax",
            "forward4_tax",
            "loads4_share",
        }
        assert row["stage_tax"] == pytest.approx(
            row["stage_plain_steps_per_s"] / row["stage_steps_per_s"] - 1.0
        )
        assert row["orbit_steps_per_s"] > 0 and row["plain_steps_per_s"] > 0
        assert row["orbit_tax"] == pytest.approx(
            row["plain_steps_per_s"] / row["orbit_steps_per_s"] - 1.0
        )
    printed = capsys.readouterr().out
    assert "held tax" in printed and "stage tax" in printed


def test_warp_physics_benchmark_runs_on_warps_cpu_device(tmp_path):
    pytest.importorskip("mujoco_warp")
    out = tmp_path / "bench.json"
    assert (
        load_script().main(
            [
                "mode=physics",
                "backend=warp",
                "device=cpu",
                "nworld=2",
                "steps=2",
                "trials=1",
                f"json={out}",
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())["physics"]
    assert result["meta"]["device"] == "cpu" and result["meta"]["startup_s"] > 0
    assert result["2"]["memory_per_world_kb"] is None  # no device memory on the CPU
    assert result["2"]["stage_tax"] == pytest.approx(
        result["2"]["stage_plain_steps_per_s"] / result["2"]["stage_steps_per_s"] - 1.0
    )


def test_benchmark_rejects_a_nonpositive_world_count():
    with pytest.raises(ArgumentError):
        load_script().main(["mode=physics", "nworld=0"])


def test_env_benchmark_writes_the_documented_json_and_plot(tmp_path, capsys):
    out, plot = tmp_path / "env.json", tmp_path / "env.png"
    assert (
        load_script().main(
            [
                "mode=env",
                "tasks=Detumble-RW",
                "nworld=[4,8]",
                "steps=2",
                "trials=1",
                f"json={out}",
                f"plot={plot}",
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["env"]["Detumble-RW"]
    assert set(rows) == {"4", "8"}
    for row in rows.values():
        assert {"env_steps_per_s", "physics_steps_per_s", "framework_tax"} <= set(row)
        assert row["env_steps_per_s"] > 0 and row["physics_steps_per_s"] > 0
        # RK4 with per-stage coupling, 5 physics steps per env step: four MuJoCo forward
        # passes and at least four loads and four stage launches per physics step
        assert row["mujoco_calls_per_step"] == 4 * 5
        assert row["warp_launches_per_step"] >= 8 * 5
    printed = capsys.readouterr().out
    assert plot.stat().st_size > 1000 and "framework tax" in printed
    assert "warp launches/step" in printed


def test_actuator_benchmark_writes_the_documented_json(tmp_path, capsys):
    out = tmp_path / "actuators.json"
    argv = ["mode=actuators", "tasks=[Docking,Detumble-RW]", "nworld=8", "steps=2", "trials=1"]
    assert load_script().main([*argv, f"json={out}"]) == 0
    rows = json.loads(out.read_text())["actuators"]
    docking, wheels = rows["Docking"]["8"], rows["Detumble-RW"]["8"]
    assert docking["fused_groups"] == docking["groups"] == 2
    for key in ("stage_speedup", "allocation_speedup", "allocation_kernel_python_calls"):
        assert docking[key] > 0, key
    assert wheels["fused_groups"] == 1 and "allocation_speedup" not in wheels  # no thrusters
    assert "alloc torch/kernel ms" in capsys.readouterr().out


def test_contact_benchmark_writes_the_documented_json(tmp_path, capsys):
    """Docking's peaks fit its configured capacity, which costs far less than the worst
    case; a scene without collidable pairs needs none."""
    out = tmp_path / "contacts.json"
    argv = ["mode=contacts", "tasks=[Docking,Detumble-RW]", "nworld=2", "steps=20"]
    assert load_script().main([*argv, f"json={out}"]) == 0
    rows = json.loads(out.read_text())["contacts"]
    docking, wheels = rows["Docking"]["2"], rows["Detumble-RW"]["2"]
    assert docking["samples"] > 0
    assert docking["peak_candidates"] <= docking["contacts_per_world"] < docking["worst_contacts"]
    assert docking["kb_per_world"] < 0.2 * docking["worst_kb_per_world"]
    assert wheels["worst_contacts"] == wheels["peak_candidates"] == 0
    assert "GB @65536" in capsys.readouterr().out


def test_train_benchmark_writes_the_documented_json(tmp_path, capsys):
    pytest.importorskip("rsl_rl")
    out = tmp_path / "train.json"
    assert (
        load_script().main(
            [
                "mode=train",
                "tasks=Detumble-RW",
                "nworld=8",
                "iterations=2",
                "warmup=1",
                "steps_per_env=8",
                f"json={out}",
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["train"]["Detumble-RW"]
    assert set(rows) == {"8"}
    row = rows["8"]
    assert set(row) == {
        "collect_steps_per_s",
        "collect_s",
        "learn_s",
        "iteration_s",
        "total_steps_per_s",
        "learn_fraction",
    }
    assert all(math.isfinite(v) and v > 0 for v in row.values())
    assert row["learn_fraction"] < 1
    assert row["total_steps_per_s"] == pytest.approx(8 * 8 / row["iteration_s"])
    assert row["collect_steps_per_s"] == pytest.approx(8 * 8 / row["collect_s"])
    assert "collect steps/s" in capsys.readouterr().out


def test_train_benchmark_rejects_zero_iterations():
    with pytest.raises(ArgumentError):
        load_script().main(["mode=train", "iterations=0"])


def test_bridge_benchmark_writes_the_documented_json(tmp_path):
    pytest.importorskip("zmq")
    out = tmp_path / "bench.json"
    assert (
        load_script().main(
            [
                "mode=bridge",
                "spacecraft=4",
                "speed=1",
                "rates=50",
                "clients=[1,2]",
                "duration=0.5",
                "lockstep=false",
                "real_sim=false",
                f"json={out}",
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["bridge"]
    assert [r["clients"] for r in rows] == [1, 2]
    for row in rows:
        assert {
            "achieved_hz",
            "jitter_ms",
            "commands_hz",
            "applied_hz",
            "client_cpu",
            "server_cpu",
            "python_ns",
            "rejected",
        } <= set(row)
        assert row["achieved_hz"] == pytest.approx(50.0, rel=0.2)  # 50 Hz is easy
        assert row["applied_hz"] == pytest.approx(50.0, rel=0.2) and row["rejected"] == 0


def test_bridge_benchmark_rejects_zero_clients():
    with pytest.raises(ArgumentError):
        load_script().main(["mode=bridge", "clients=0"])


@pytest.mark.parametrize(
    "argv",
    [
        ["mode=bridge", "device=cpu"],
        ["mode=physics", "device=cuda:0"],
        ["mode=env", "device=cuda:0"],
    ],
)
def test_benchmark_refuses_a_device_that_the_mode_would_ignore(argv):
    with pytest.raises(ArgumentError, match="applies to backend=warp"):
        load_script().main(argv)


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], ["missing required argument mode="]),
        (
            ["mode=phys"],
            ["mode='phys'", "one of physics, env, sensors, actuators, contacts, train, bridge"],
        ),
        (
            ["mode=sensors", "backend=warp"],
            ["backend='warp'", "mode=sensors runs on the cpu backend"],
        ),
        (
            ["mode=actuators", "backend=warp"],
            ["backend='warp'", "mode=actuators runs on the cpu backend"],
        ),
        (
            ["mode=contacts", "backend=warp"],
            ["backend='warp'", "mode=contacts runs on the cpu backend"],
        ),
        (["mode=env", "nworld=[4,0]"], ["nworld='[4,0]'", "integers in [1, "]),
        (["mode=env", "nworld=4,8"], ["nworld=4,8", "key=[value1,value2]"]),
        (["mode=env", "tasks=[Docking,dockng]"], ["tasks='dockng'", "did you mean 'Docking'"]),
        (["mode=bridge", "speed=[1,0]"], ["speed='[1,0]'", "numbers > 0"]),
        (["mode=bridge", "lockstep=maybe"], ["lockstep='maybe'", "true or false"]),
        (["mode=bridge", "device=cuda:0"], ["device='cuda:0'", "backend=warp"]),
        (["mode=env", "env.decimation=2"], ["env"]),  # bench takes no env overrides
    ],
)
def test_bench_verb_bad_values_are_one_line_naming_key_value_and_rule(argv, words, capsys):
    """`orbitlab bench` under hydra: exit status 2, one line, no traceback."""
    assert orbitlab_main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)


def test_bench_verb_help_and_cfg_job(capsys):
    assert orbitlab_main(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: orbitlab bench") and "fresh_kernel_cache" in out
    argv = ["bench", "mode=env", "tasks=[Docking,Pointing]", "nworld=[4,8]", "--cfg", "job"]
    assert orbitlab_main(argv) == 0
    out = capsys.readouterr().out
    assert "mode: env" in out and "nworld:\n- 4\n- 8" in out and "\nenv:" not in out


def test_warp_physics_benchmark_writes_each_row_as_it_finishes(tmp_path, monkeypatch):
    """The JSON on disk holds the finished rows while later ones run (a time limit keeps them)."""
    pytest.importorskip("mujoco_warp")
    from orbitlab.bench import physics_warp

    out = tmp_path / "bench.json"
    seen = []
    real = physics_warp._measure_row

    def row_then_look(model, orbit, device, nworld, cfg, stage_model=None):
        if nworld == 2:  # the second row starts: the first must already be on disk
            seen.append(json.loads(out.read_text())["physics"])
        return real(model, orbit, device, nworld, cfg, stage_model)

    monkeypatch.setattr(physics_warp, "_measure_row", row_then_look)
    assert (
        load_script().main(
            [
                "mode=physics",
                "backend=warp",
                "device=cpu",
                "nworld=[1,2]",
                "steps=1",
                "trials=1",
                f"json={out}",
            ]
        )
        == 0
    )
    assert set(seen[0]) == {"meta", "1"}
    assert set(json.loads(out.read_text())["physics"]) == {"meta", "1", "2"}
