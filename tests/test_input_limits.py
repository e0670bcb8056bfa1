"""Numbers that size the work (worlds, threads, steps, episode lengths) have upper bounds:
a value past one is a one-line error naming it, exit status 2, before anything is built or
written; a long but allowed run is announced with its estimated cost."""

from __future__ import annotations

import pytest

from orbitlab import limits
from orbitlab.cli import ArgumentError
from orbitlab.cli.dispatch import main
from orbitlab.registry import make_env, make_env_cfg


def one_line(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    ("item", "words"),
    [
        # a segmentation fault (torch's pool asked for 100000 threads)
        ("env.scene.torch_threads=100000", ["env.scene.torch_threads=100000", "[1, "]),
        ("env.scene.nthread=100000", ["env.scene.nthread=100000", "[0, "]),
        # ran for ever without a word
        ("env.decimation=1000000000", ["env.decimation=1000000000", "[1, 10000]"]),
        ("env.episode_length_s=1e308", ["env.episode_length_s=1e+308", "(0, 1e+06] s"]),
        # an OverflowError traceback; a sensor's error under a traceback
        ("env.scene.timestep_s=1e-300", ["env.scene.timestep_s=1e-300", "[1e-05, 10] s"]),
        ("env.scene.timestep_s=100", ["env.scene.timestep_s=100", "[1e-05, 10] s"]),
        # std::bad_alloc
        ("num_envs=1000000000", ["num_envs='1000000000'", "[1, 4194304]"]),
    ],
)
def test_play_refuses_values_that_would_crash_hang_or_exhaust(item, words, capsys, tmp_path):
    out = tmp_path / "score.json"
    assert main(["play", "num_envs=2", "max_steps=1", f"json={out}", item]) == 2
    one_line(capsys, "play: ", *words)
    assert not out.exists()


def test_an_allowed_timestep_the_task_cannot_use_is_named_with_the_reason(capsys):
    assert main(["play", "num_envs=2", "max_steps=1", "env.scene.timestep_s=0.03"]) == 2
    one_line(capsys, "env.scene.timestep_s=0.03", "Detumble-RW", "sensor 'sat/gyro'", "0.03 s")


def test_episode_length_and_timestep_together_are_bounded():
    with pytest.raises(ArgumentError, match=r"1e\+10 physics steps \(at most 1e\+08\)"):
        make_env_cfg("Pointing", 1, env={"episode_length_s": 1e5, "scene": {"timestep_s": 1e-5}})
    with pytest.raises(ArgumentError, match=r"num_envs=4194305 is invalid"):
        make_env_cfg("Pointing", limits.MAX_NUM_ENVS + 1)


def test_worlds_that_do_not_fit_in_memory_are_refused_before_allocation(monkeypatch):
    monkeypatch.setattr(limits, "available_memory_bytes", lambda: 64 * 2**20)  # 64 MB
    with pytest.raises(ArgumentError, match=r"num_envs=100000 is invalid: 100000 worlds need"):
        make_env("Detumble-RW", 100_000)
    problem = limits.world_memory_problem(1000, 1024.0)
    assert problem is None  # 17 MB of 64 MB: fits


def test_a_long_step_is_announced_with_its_estimated_cost(monkeypatch, capsys):
    assert limits.step_cost_warning(2, 10, 0.01, 60.0) is None
    warning = limits.step_cost_warning(200_000, 1000, 0.01, 60.0)
    assert "1000 physics steps of 200000 worlds" in warning and "(~1.1 h" in warning
    monkeypatch.setattr(limits, "NOMINAL_WORLD_STEPS_PER_S", 1.0)  # as if the CPU were slow
    env = make_env("Detumble-RW", 2)
    env.close()
    line = one_line(capsys, "orbitlab: warning: each env step is 5 physics steps of 2 worlds")
    assert "an episode 3000 env steps" in line


def test_train_refuses_huge_values_before_any_run_directory(tmp_path, capsys):
    from orbitlab.cli.train import cli

    for item, words in (
        ("num_envs=1000000000", ["num_envs=1000000000", "[1, 4194304]"]),
        ("env.decimation=1000000000", ["env.decimation=1000000000", "[1, 10000]"]),
        ("agent.num_steps_per_env=1000000000", ["agent.num_steps_per_env", "[1, 100000]"]),
    ):
        with pytest.raises(SystemExit) as done:  # hydra's callback ends the process
            cli([item, f"runs_root={tmp_path}", f"hydra.run.dir={tmp_path}/run"])
        assert done.value.code == 2
        one_line(capsys, *words)
        assert not list(tmp_path.iterdir())


def test_a_text_file_as_scripted_commands_is_named_without_numpys_pickle_hint(tmp_path):
    from orbitlab.cli.record import load_script

    text = tmp_path / "commands.txt"
    text.write_text("1 2 3 4 5 6\n")
    with pytest.raises(ArgumentError, match=r"script='.*commands.txt' is invalid: expected a"):
        load_script(text)
    with pytest.raises(ArgumentError) as refused:
        load_script(text)
    assert "pickle" not in str(refused.value)


def test_a_non_finite_mjcf_number_is_named_instead_of_replaced_by_the_density():
    from orbitlab import SimSpec

    xml = (
        '<mujoco><worldbody><body name="sc"><freejoint/>'
        '<geom name="hull" type="box" size="0.5 0.3 0.2" mass="{}"/></body></worldbody></mujoco>'
    )
    for value in ("nan", "NaN", "inf", "-inf"):
        with pytest.raises(ValueError, match=rf"<geom name='hull'>: mass='{value}' is invalid"):
            SimSpec.from_xml_string(xml.format(value))
    assert SimSpec.from_xml_string(xml.format("10")).compile().mj_model.body_mass[1] == 10.0


def test_an_orbit_given_as_text_is_named():
    from orbitlab import OrbitInit, SimSpec

    xml = (
        '<mujoco><worldbody><body name="sc"><freejoint/>'
        '<geom type="box" size="0.5 0.3 0.2" mass="10"/></body></worldbody></mujoco>'
    )
    model = SimSpec.from_xml_string(xml).compile()
    with pytest.raises(TypeError, match=r"orbit='leo' is invalid: expected an OrbitInit"):
        model.make_data(nworld=1, orbit="leo")
    with pytest.raises(TypeError, match=r"orbit='leo' is invalid"):
        model.make_data(nworld=2, orbit=[OrbitInit(), "leo"])
    with pytest.raises(TypeError, match=r"orbit=None is invalid"):
        model.make_data(nworld=1, orbit=[None])


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        # tracebacks: torch's seed overflowed, the sleep of a 1e-300 Hz step overflowed
        (["play", "seed=99999999999999999999"], ["seed", "[0, 4294967295]"]),
        (["record", "out=x.hdf5", "rate_hz=1e-300"], ["rate_hz", "[1e-05, 100000]"]),
        (["bridge", "rate_hz=1e-300"], ["rate_hz", "1e-300"]),
        (["bridge", "accel=1e308"], ["accel", "1e308", "[1e-06, 1e+06]"]),
        (["play", f"max_steps={10**9}"], ["max_steps", "[0, 100000000]"]),
    ],
)
def test_seeds_steps_and_rates_past_their_bounds_are_one_line(
    argv, words, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # hydra writes its output directory there
    assert main(argv) == 2
    one_line(capsys, *words)


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ("seed=99999999999999999999", ["seed=", "[0, 4294967295]"]),  # a traceback
        ("agent.max_iterations=1000000000000", ["agent.max_iterations", "[1, 10000000]"]),
        ("agent.learning_rate=1e308", ["agent.learning_rate=1e+308", "(0, 1]"]),  # NaN weights
        ("agent.init_std=1e308", ["agent.init_std=1e+308", "(0, 100]"]),  # was accepted
    ],
)
def test_train_refuses_seeds_iterations_and_rates_past_their_bounds(item, words, tmp_path, capsys):
    from orbitlab.cli.train import cli

    with pytest.raises(SystemExit) as done:  # hydra's callback ends the process
        cli([item, f"runs_root={tmp_path}", f"hydra.run.dir={tmp_path}/run"])
    assert done.value.code == 2
    one_line(capsys, *words)
    assert not list(tmp_path.iterdir())
