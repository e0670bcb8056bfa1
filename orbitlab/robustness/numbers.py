"""Extreme numbers on the command line: values of the right type far outside what a run can
do (10^9 worlds, 10^5 threads, a 1e-300 s timestep, a 1e308 s episode, 20-digit seeds).

Each case runs in process through `orbitlab.cli.dispatch.main`, as the CLI class does
(`orbitlab.robustness.cli.try_command`: stderr captured, a 60 s alarm), and must be refused
with one line naming the key and the value as the message prints it (`1e+308` for
`1e308`) before anything is built: an accepted value would allocate the worlds, start the
threads or run for ever (a wrong result at the alarm). The bounds are
`orbitlab.limits` (docs/robustness.md, "Bounds").
"""

from __future__ import annotations

from pathlib import Path

from orbitlab.robustness import Case
from orbitlab.robustness.cli import try_command

HUGE_INT = "99999999999999999999"
"""20 digits: more than a 64-bit integer holds."""

ENV_ITEMS: list[tuple[str, str]] = [
    ("env.scene.torch_threads=100000", "100000"),
    ("env.scene.nthread=100000", "100000"),
    ("env.decimation=1000000000", "1000000000"),
    ("env.episode_length_s=1e308", "1e+308"),
    ("env.scene.timestep_s=1e-300", "1e-300"),
    ("env.scene.timestep_s=100", "100"),
    ("env.scene.timestep_s=1e308", "1e+308"),
]
"""(env override, its value as the message prints it), for every verb taking env.*."""

TRAIN_ITEMS: list[tuple[str, str]] = [
    ("num_envs=1000000000", "1000000000"),
    (f"num_envs={HUGE_INT}", HUGE_INT),
    ("eval_num_envs=1000000000", "1000000000"),
    ("select_num_envs=1000000000", "1000000000"),
    (f"seed={HUGE_INT}", HUGE_INT),
    ("agent.max_iterations=1000000000000", "1000000000000"),
    ("agent.num_steps_per_env=1000000000", "1000000000"),
    ("agent.hidden_dims=[1000000000]", "1000000000"),
    ("agent.learning_rate=1e308", "1e+308"),
    ("agent.init_std=1e308", "1e+308"),
]

RUN_ITEMS: dict[str, list[tuple[str, str]]] = {
    "play": [
        ("num_envs=1000000000", "1000000000"),
        (f"num_envs={HUGE_INT}", HUGE_INT),
        (f"seed={HUGE_INT}", HUGE_INT),
        (f"world={HUGE_INT}", HUGE_INT),
        (f"max_steps={HUGE_INT}", HUGE_INT),
    ],
    "eval": [
        ("num_envs=1000000000", "1000000000"),
        (f"seed={HUGE_INT}", HUGE_INT),
    ],
    "record": [
        ("num_demos=1000000000", "1000000000"),
        (f"seed={HUGE_INT}", HUGE_INT),
        (f"max_steps={HUGE_INT}", HUGE_INT),
        ("rate_hz=1e308", "1e+308"),  # hydra composes record's values: printed as 1e+308
        ("rate_hz=1e-300", "1e-300"),
    ],
    "bridge": [
        ("rate_hz=1e308", "1e308"),
        ("rate_hz=1e-300", "1e-300"),
        ("accel=1e308", "1e308"),
        ("accel=1e-300", "1e-300"),
        ("telemetry_rate_hz=1e-300", "1e-300"),
        (f"duration={'9' * 400}", "9" * 20),
    ],
}


def cases(tmp: Path) -> list[Case]:
    """The cases (`tmp`: the CLI class's workspace, where train's runs_root lies)."""
    import numpy as np

    np.save(tmp / "commands.npy", np.zeros((8, 6)))
    table: list[tuple[str, list[str], list[str]]] = []
    train_dir = [f"runs_root={tmp / 'runs'}", f"hydra.run.dir={tmp / 'runs' / 'x'}"]
    for item, shown in [*ENV_ITEMS, *TRAIN_ITEMS]:
        table.append(("train", [item, *train_dir], [item.partition("=")[0], shown]))
    table.append(
        (
            "train",
            ["env.episode_length_s=1000000", "env.scene.timestep_s=0.00001", *train_dir],
            ["env.episode_length_s", "env.scene.timestep_s", "1e+08"],
        )
    )
    for item, shown in ENV_ITEMS:
        table.append(("play", [item], [item.partition("=")[0], shown]))
    for verb, items in RUN_ITEMS.items():
        out = (
            ["out=new.hdf5", "device=scripted", f"script={tmp / 'commands.npy'}"]
            if verb == "record"
            else []
        )
        for item, shown in items:
            table.append((verb, [*out, item], [item.partition("=")[0], shown]))
    return [
        Case(
            f"numbers: {verb}",
            " ".join(a for a in argv if "runs" not in a and "script" not in a),
            _bind(verb, argv, w),
        )
        for verb, argv, w in table
    ]


def _name(argv: list[str]) -> str:
    shown = " ".join(a for a in argv if "runs" not in a and "script" not in a)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _bind(verb: str, argv: list[str], words: list[str]):
    return lambda: try_command(verb, argv, words)
