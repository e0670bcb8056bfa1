"""The `orbitlab` console command: one verb per job, each a hydra command line.

    orbitlab list                                     # tasks, success criteria, tuned agents
    orbitlab train task=docking                       # trains with Docking's tuned PPO
    orbitlab play task=pointing agent=baseline num_envs=32 env.episode_length_s=120
    orbitlab eval checkpoint=runs/Detumble-RW/<time>/model_99.pt json=score.json
    orbitlab export checkpoint=runs/Detumble-RW/<time>/model_99.pt
    orbitlab record task=docking device=keyboard out=demos/docking.hdf5
    orbitlab replay file=demos/docking.hdf5
    orbitlab bench mode=env tasks=Docking nworld=[256,1024]
    orbitlab bridge task=formation                     # the ZeroMQ bridge (extra 'bridge')

Every hydra verb takes `--help`, `--cfg job` and `key=value` overrides; a bad value is one
line naming the key, the value and what is allowed (exit status 2), `verbose=true` shows the
traceback. `scripts/*.py` are aliases of these verbs.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

VERBS = {
    "train": "train a policy (rsl-rl, SB3, rl-games); writes runs/<task>/<time>_<suffix>/",
    "play": "roll out a checkpoint, the baseline, random or zero actions; video, plots, viewer",
    "eval": "score a checkpoint or the baseline on fresh worlds (play without the viewers)",
    "export": "export a checkpoint's actor to TorchScript and ONNX, checked",
    "record": "record teleoperated demonstrations (robomimic HDF5)",
    "replay": "replay demonstrations and check them bit for bit",
    "bench": "throughput benchmarks: mode=physics|env|train|bridge",
    "bridge": "serve a task over the ZeroMQ bridge (key=value options)",
    "list": "the registered tasks, their success criteria and tuned agents",
    "runs": "report a task's training runs: per seed, median, worst, learning curves",
}
"""Verb -> one line of `orbitlab --help`."""

EVAL_KEYS = ("task", "agent", "num_envs", "max_steps", "backend", "seed", "checkpoint")
"""play's keys that `orbitlab eval` takes (plus trust_checkpoint and json)."""


def usage() -> str:
    lines = ["usage: orbitlab <verb> [key=value ...] [--help] [--cfg job]", "", "verbs:"]
    lines += [f"  {verb:7s} {what}" for verb, what in VERBS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The console entry point: `orbitlab <verb> ...`; the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"orbitlab: unknown verb '{verb}' (one of {', '.join(VERBS)})", file=sys.stderr)
        return 2
    from orbitlab.cli.args import ArgumentError
    from orbitlab.cli.environment import check_environment

    try:
        check_environment()  # before MuJoCo is imported: it refuses a bad MUJOCO_GL itself
    except ArgumentError as error:
        print(f"orbitlab {verb}: {error}", file=sys.stderr)
        return 2
    if verb == "train":
        from orbitlab.cli.train import cli

        return cli(rest, prog="train")
    if verb == "list":
        from orbitlab.cli.listing import print_tasks

        return print_tasks()
    if verb == "bridge":
        return bridge(rest)
    if verb == "runs":
        from orbitlab.cli.runs import main as runs_main

        return runs_main(rest)
    return key_value_verb(verb, rest)


def key_value_verb(verb: str, argv: list[str]) -> int:
    """A key=value command (play, eval, export, record, replay, bench) under hydra: hydra composes
    the command's config from its `Arg` spec, the command's own converters check it."""
    from orbitlab.cli.args import run
    from orbitlab.cli.hydra_app import as_argv, normalize, register_command, run_app

    args, command, takes_env = spec_of(verb)
    status = 0

    def body(cfg: Any) -> None:
        nonlocal status
        from omegaconf import OmegaConf

        plain = OmegaConf.to_container(cfg, resolve=True)
        items = as_argv(plain, args)
        env = plain.get("env") or {}
        if takes_env:
            status = run(lambda a: command(a, env=env), items, verb)
        else:
            status = run(command, items, verb)

    try:
        register_command(verb, args, env=takes_env)
        argv = normalize(argv, tuned_agent=False)
    except ValueError as error:
        print(f"orbitlab {verb}: {error}", file=sys.stderr)
        return 2
    if takes_env:
        argv = [f"++{item}" if item.startswith("env.") else item for item in argv]
    doc = sys.modules[command.__module__].__doc__ or ""
    if verb == "eval":
        doc = f"`orbitlab eval`: {VERBS[verb]}; play's keys (below):\n\n{doc}"
    code = run_app(verb, body, argv, verb, doc=doc)
    return code or status


def spec_of(verb: str) -> tuple[dict, Callable[..., Any], bool]:
    """(Arg spec, main(argv), whether main takes env overrides) of a key=value verb."""
    if verb in ("play", "eval"):
        from orbitlab.cli import play

        if verb == "play":
            return play.ARGS, play.main, True
        args = {key: play.ARGS[key] for key in (*EVAL_KEYS, "trust_checkpoint", "json")}
        args["num_envs"] = dataclasses.replace(args["num_envs"], default="256")
        return args, play.main, True
    if verb == "export":
        from orbitlab.cli import export

        return export.ARGS, export.main, False
    if verb == "bench":
        from orbitlab.cli import bench

        return bench.ARGS, bench.main, False
    if verb == "record":
        from orbitlab.cli import record

        return record.ARGS, record.main, False
    from orbitlab.cli import replay

    return replay.ARGS, replay.main, False


def bridge(argv: list[str]) -> int:
    """`orbitlab bridge` (orbitlab/cli/bridge.py, with its own key=value checks)."""
    from orbitlab.cli.bridge import main as bridge_main

    try:
        return bridge_main(argv)
    except SystemExit as done:
        code = done.code
        if isinstance(code, str):
            print(f"orbitlab bridge: {code}", file=sys.stderr)
        return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":
    sys.exit(main())
