"""Play a task with a trained checkpoint, its non-learned baseline, random or zero actions,
and print (and optionally write) its score.

    python scripts/play.py task=Detumble-RW agent=baseline num_envs=64
    python scripts/play.py task=Detumble-MTQ agent=random num_envs=64 max_steps=600
    python scripts/play.py checkpoint=runs/Detumble-RW/<time>/model_99.pt json=score.json

Arguments are key=value overrides (hydra-style): task, agent (baseline | random |
zero | checkpoint), checkpoint (an rsl-rl checkpoint from scripts/train.py; its run's
saved config gives the task and network), num_envs, max_steps (env steps; default:
one full episode), backend, seed, json (write the score there).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from orbitlab.envs.evaluate import rollout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks import task_entry

DEFAULTS = {"task": "Detumble-RW", "agent": "baseline", "num_envs": "64", "max_steps": "0",
            "backend": "cpu", "seed": "0", "checkpoint": "", "json": ""}


def parse(argv: list[str]) -> dict[str, str]:
    args = dict(DEFAULTS)
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULTS:
            raise SystemExit(f"bad argument '{item}': use key=value with key in "
                             f"{', '.join(DEFAULTS)}")
        args[key] = value
    if args["checkpoint"]:
        args["agent"] = "checkpoint"
    if args["agent"] not in ("baseline", "random", "zero", "checkpoint"):
        raise SystemExit(f"agent must be baseline, random, zero or checkpoint, got "
                         f"'{args['agent']}'")
    if args["agent"] == "checkpoint" and not Path(args["checkpoint"]).is_file():
        raise SystemExit(f"checkpoint=PATH must name a checkpoint file, got "
                         f"'{args['checkpoint']}'")
    return args


def trained_run(checkpoint: str) -> tuple[str, dict]:
    """(task name, agent settings) from the run directory holding `checkpoint`."""
    from omegaconf import OmegaConf

    saved = Path(checkpoint).resolve().parent / ".hydra" / "config.yaml"
    if not saved.is_file():
        raise SystemExit(f"no saved run config beside the checkpoint ({saved})")
    run = OmegaConf.to_container(OmegaConf.load(saved), resolve=False)
    return run["task"]["name"], run["agent"]


def main(argv: list[str]) -> None:
    args = parse(argv)
    agent_cfg = None
    if args["agent"] == "checkpoint":
        args["task"], agent_cfg = trained_run(args["checkpoint"])
    entry = task_entry(args["task"])
    source = entry.baseline_cfg if args["agent"] == "baseline" else entry.env_cfg
    cfg = load_cfg(source, num_envs=int(args["num_envs"]), backend=args["backend"])
    cfg.seed = int(args["seed"])
    env = ManagerBasedRLEnv(cfg)
    policy = args["agent"]
    if agent_cfg is not None:
        from orbitlab.rl.rsl_rl import load_policy

        policy = load_policy(env, args["checkpoint"], agent_cfg)
    score = rollout(env, policy=policy, max_steps=int(args["max_steps"]) or None,
                    seed=int(args["seed"]))
    print(f"{args['task']} [{args['agent']}] {score}")
    if args["json"]:
        out = Path(args["json"])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"task": args["task"], "agent": args["agent"],
                                   **dataclasses.asdict(score)}, indent=2))
        os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1:])
