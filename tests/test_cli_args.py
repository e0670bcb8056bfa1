"""Every command-line value is checked when it is parsed: one line naming the key, the value
and what is allowed; exit status 2; no traceback unless verbose=true."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitlab.cli import (
    Arg,
    ArgumentError,
    boolean,
    choice,
    existing_file,
    integer,
    integers,
    names,
    number,
    numbers,
    optional,
    parse_args,
    run,
)
from orbitlab.rl.train.checks import check_train_config, check_value

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(
    max_examples=150, deadline=1000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
"""hypothesis bounds: each fuzz test stays well under a few seconds."""


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"cli_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fails(capsys, name: str, argv: list[str], *words: str) -> str:
    """Run scripts/<name>.py's main in process: status 2, one stderr line naming `words`."""
    assert run(script(name).main, argv, name) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


# ------------------------------------------------------------------ named defect cases
@pytest.mark.parametrize(
    "name, argv, words",
    [
        ("play", ["num_envs=abc"], ["num_envs", "'abc'", "integer in [1, "]),
        ("play", ["seed=abc"], ["seed", "'abc'", "integer"]),
        ("play", ["max_steps=-1"], ["max_steps", "'-1'", "integer in [0, "]),
        ("play", ["world=3", "num_envs=2"], ["world", "num_envs=2"]),
        ("play", ["viewer=maybe"], ["viewer", "true or false"]),
        ("play", ["task=Nope"], ["task", "'Nope'", "Detumble-RW"]),
        ("play", ["checkpoint=/no/such.pt"], ["checkpoint", "existing file"]),
        ("play", ["num_envs"], ["bad argument 'num_envs'", "key=value"]),
        ("play", ["num_envs=2", "num_envs=3"], ["num_envs", "twice"]),
        ("record_demos", ["num_demos=abc"], ["num_demos", "'abc'", "integer in [1, "]),
        ("record_demos", ["rate_hz=-5"], ["rate_hz", "'-5'", "0 (as fast as possible) or"]),
        ("record_demos", ["rate_hz=nan"], ["rate_hz", "finite"]),
        ("record_demos", ["device=scripted"], ["script", "(T, 6)"]),
        ("record_demos", ["device=joystick"], ["device", "keyboard"]),
        (
            "record_demos",
            ["device=pilot"],
            ["device", "'pilot'", "Docking has no pilot", "Capture-Arm"],
        ),
        ("record_demos", ["status=maybe"], ["status", "'maybe'", "true, false or auto"]),
        ("record_demos", ["viewer=maybe"], ["viewer", "true or false"]),
        ("replay_demos", [], ["missing required argument file="]),
        ("replay_demos", ["file=/no/such.hdf5"], ["file", "existing file"]),
        ("demo_tools", ["merge", "files=/no/a.hdf5", "out=x.hdf5"], ["files", "existing file"]),
        ("demo_tools", ["frobnicate"], ["usage", "merge|split|summary"]),
        ("export", [], ["missing required argument checkpoint="]),
        ("export", ["checkpoint=/no/such.pt"], ["checkpoint", "existing file"]),
    ],
)
def test_bad_value_is_one_named_line(capsys, name, argv, words):
    fails(capsys, name, argv, *words)


def test_merge_without_out_is_named(capsys, tmp_path):
    demo = tmp_path / "a.hdf5"
    demo.write_bytes(b"x")
    fails(capsys, "demo_tools", ["merge", f"files={demo}"], "missing required argument out=")


def test_export_rtol_must_be_positive(capsys, tmp_path):
    checkpoint = tmp_path / "model_1.pt"
    checkpoint.write_bytes(b"x")
    fails(capsys, "export", [f"checkpoint={checkpoint}", "rtol=0"], "rtol", "> 0")


def test_script_file_is_checked(capsys, tmp_path):
    import numpy as np

    bad = tmp_path / "cmds.npy"
    np.save(bad, np.zeros((4, 5)))
    fails(capsys, "record_demos", ["device=scripted", f"script={bad}"], "script", "(T, 6)")


def test_verbose_shows_the_traceback():
    with pytest.raises(ArgumentError, match="num_envs"):
        run(script("play").main, ["num_envs=abc", "verbose=true"], "play")


def test_scripts_exit_2_as_processes():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "record_demos.py"), "num_demos=abc"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr


# ------------------------------------------------------------------ train.py (hydra)
@pytest.mark.parametrize(
    "override, words",
    [
        ("num_envs=abc", ["num_envs='abc'", "integer"]),
        ("agent.learning_rate=abc", ["agent.learning_rate='abc'", "number"]),
        ("nosuchkey=1", ["nosuchkey"]),  # hydra's own error, in one line
    ],
)
def test_train_rejects_bad_values_before_the_run_directory(tmp_path, override, words):
    pytest.importorskip("hydra")
    run_dir = tmp_path / "runs" / "x"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "train.py"),
            override,
            f"hydra.run.dir={run_dir}",
            f"runs_root={tmp_path / 'runs'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("train:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0]
    assert not run_dir.exists()


TRAIN_DEFAULTS = {
    "num_envs": 256,
    "seed": 0,
    "backend": "cpu",
    "eval_num_envs": 256,
    "select_best": None,
    "resume": False,
    "runs_root": "runs",
    "agent": {
        "library": "rsl_rl",
        "max_iterations": 100,
        "learning_rate": 1e-3,
        "hidden_dims": [64, 64],
        "init_std": 0.5,
        "save_interval": 50,
    },
}


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("num_envs", 0, ["num_envs=0", "integer in [1, "]),
        ("seed", -3, ["seed=-3", "integer in [0, 4294967295]"]),
        ("backend", "gpu", ["backend='gpu'", "cpu, warp"]),
        ("select_best", "yes", ["select_best='yes'", "true, false or null"]),
        ("agent", {"learning_rate": 0.0}, ["agent.learning_rate=0.0", "in (0, 1]"]),
        ("agent", {"learning_rate": float("nan")}, ["agent.learning_rate=nan"]),
        ("agent", {"hidden_dims": [64, "x"]}, ["agent.hidden_dims[1]='x'", "integer"]),
        ("agent", {"max_iterations": 2.5}, ["agent.max_iterations=2.5", "integer"]),
        ("resume", "", ["resume=''", "true, false or a run directory"]),
    ],
)
def test_train_config_checks(key, value, words):
    cfg = {**TRAIN_DEFAULTS, key: value}
    if key == "agent":
        cfg["agent"] = {**TRAIN_DEFAULTS["agent"], **value}
    with pytest.raises(ArgumentError) as info:
        check_train_config(cfg, TRAIN_DEFAULTS)
    for word in words:
        assert word in str(info.value)


def test_train_defaults_pass():
    check_train_config(TRAIN_DEFAULTS, TRAIN_DEFAULTS)
    check_train_config({**TRAIN_DEFAULTS, "resume": "runs/x", "extra": [1]}, TRAIN_DEFAULTS)


# ------------------------------------------------------------------ fuzz
SPEC = {
    "n": Arg("1", integer(min=1, max=100)),
    "x": Arg("0.5", number(min=0.0)),
    "flag": Arg("false", boolean),
    "mode": Arg("a", choice("a", "b")),
    "path": Arg("", optional(existing_file)),
}
KEYS = st.sampled_from([*SPEC, "verbose", "bogus", ""])
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["true", "FALSE", "1e400", " 7", "a", "b", "-0", "/"]),
)


@FUZZ
@given(st.lists(st.tuples(KEYS, VALUES, st.booleans()), max_size=5))
def test_fuzz_key_value_parser(items):
    """Any argv either parses into values that keep every rule, or raises one ArgumentError
    line naming a key or the bad item; nothing else escapes."""
    argv = [f"{k}={v}" if sep else f"{k}{v}" for k, v, sep in items]
    try:
        args = parse_args(argv, SPEC)
    except ArgumentError as error:
        message = str(error)
        assert "\n" not in message
        assert any(key in message for key in (*SPEC, "verbose", "bad argument"))
        return
    assert isinstance(args["n"], int) and 1 <= args["n"] <= 100
    assert isinstance(args["x"], float) and args["x"] >= 0 and args["x"] != float("inf")
    assert isinstance(args["flag"], bool) and args["mode"] in ("a", "b")
    assert args["path"] is None or args["path"].is_file()


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**9), 10**9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-5, 300), max_size=3),
)


@FUZZ
@given(
    st.sampled_from(
        [
            "num_envs",
            "seed",
            "eval_num_envs",
            "backend",
            "select_best",
            "resume",
            "agent.learning_rate",
            "agent.max_iterations",
            "agent.hidden_dims",
            "agent.init_std",
        ]
    ),
    SCALARS,
)
def test_fuzz_train_config_values(key, value):
    """Any value of a train key is either accepted with the type and range orbitlab reads,
    or refused by one ArgumentError line that names the key."""
    cfg = {**TRAIN_DEFAULTS, "agent": dict(TRAIN_DEFAULTS["agent"])}
    top, _, sub = key.partition(".")
    (cfg["agent"] if sub else cfg)[sub or top] = value
    try:
        check_train_config(cfg, TRAIN_DEFAULTS)
    except ArgumentError as error:
        assert key in str(error) and "\n" not in str(error)
        return
    default = TRAIN_DEFAULTS["agent"][sub] if sub else TRAIN_DEFAULTS[top]
    if key == "resume":  # true, false or a path
        assert isinstance(value, bool) or (isinstance(value, str) and value.strip())
    elif isinstance(default, bool):
        assert isinstance(value, bool)
    elif isinstance(default, int):
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif isinstance(default, float):
        assert value > 0 and value != float("inf")
    elif isinstance(default, list):
        assert all(isinstance(v, int) and v >= 1 for v in value)


@pytest.fixture(scope="module")
def hydra_compose():
    """hydra's compose over orbitlab/configs (the same parser and config as orbitlab train)."""
    pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from orbitlab.cli.hydra_app import CONFIG_DIR, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        yield compose, OmegaConf.to_container(compose(config_name="train"), resolve=True)


@settings(
    max_examples=15,
    deadline=None,  # a hydra compose is ~0.1-0.5 s
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(
        [
            "num_envs",
            "seed",
            "agent.learning_rate",
            "agent.max_iterations",
            "eval_num_envs",
            "select_best",
        ]
    ),
    st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=10),
)
def test_fuzz_train_overrides_through_hydra(hydra_compose, key, text):
    """Override text goes through hydra's parser and the checks: a hydra error (which
    train.py prints as one line), an ArgumentError naming the key, or a valid config."""
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    compose, defaults = hydra_compose
    try:
        cfg = compose(config_name="train", overrides=[f"{key}={text}"])
        plain = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException):
        return
    try:
        check_train_config(plain, defaults)
    except ArgumentError as error:
        assert key in str(error)


def test_check_value_names_nested_keys():
    with pytest.raises(ArgumentError, match=r"agent\.config\.learning_rate='x'"):
        check_value(
            "agent", {"config": {"learning_rate": "x"}}, {"config": {"learning_rate": 3e-4}}
        )


@pytest.mark.parametrize(
    "item, words",
    [
        (
            "rate_hz=abc",
            ["rate_hz='abc'", "finite number in [1e-05, 100000]"],
        ),  # a ValueError traceback
        ("rate_hz=nan", ["rate_hz='nan'", "finite"]),  # was accepted
        ("accel=abc", ["accel='abc'"]),
        ("duration=abc", ["duration='abc'"]),
        ("pub_port=abc", ["pub_port='abc'", "[0, 65535]"]),
        ("heartbeat_port=70000", ["heartbeat_port='70000'", "[0, 65535]"]),  # was accepted
    ],
)
def test_bridge_numbers_are_checked_before_the_scene_is_built(item, words):
    from orbitlab.cli.bridge import parse

    with pytest.raises(SystemExit) as info:
        parse([item])
    message = str(info.value.code)
    assert "\n" not in message and all(word in message for word in words), message


@pytest.mark.parametrize("text", ["[1,64]", "[1, 64]", "1,64"])
def test_lists_are_typed_as_hydra_writes_them_or_comma_separated(text):
    assert integers(min=1)("nworld", text) == [1, 64]
    assert numbers(min=0.0, min_open=True)("speed", text) == [1.0, 64.0]
    assert names("demos", text) == ["1", "64"]
    assert integers()("nworld", "4") == [4]  # one value: a list of one


@pytest.mark.parametrize("text", ["", "[]", "[1,]", "1,x", "[0,4]"])
def test_a_bad_list_is_one_error_naming_the_whole_value(text):
    with pytest.raises(ArgumentError, match=r"nworld=.* expected a list of integers >= 1"):
        integers(min=1)("nworld", text)


def test_key_value_scripts_print_their_usage_on_help(capsys):
    from orbitlab.cli.args import run

    assert run(lambda argv: 1 / 0, ["--help"], "tool", "usage: tool file=...") == 0
    assert capsys.readouterr().out.strip() == "usage: tool file=..."


def test_select_best_left_unset_is_the_tuned_agents_choice():
    from omegaconf import OmegaConf

    from orbitlab.cli.hydra_app import CONFIG_DIR
    from orbitlab.cli.train import selects_best

    def cfg(select_best, agent):
        return OmegaConf.create({"select_best": select_best, "agent": agent})

    assert selects_best(cfg(None, {"library": "rsl_rl", "select_best": True}))
    assert not selects_best(cfg(None, {"library": "rsl_rl"}))
    assert not selects_best(cfg(False, {"library": "rsl_rl", "select_best": True}))
    assert selects_best(cfg(True, {"library": "rsl_rl"}))
    shipped = OmegaConf.load(Path(CONFIG_DIR) / "agent" / "rsl_rl_ppo_docking_velocity.yaml")
    assert selects_best(cfg(None, shipped))
