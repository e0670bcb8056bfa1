"""Play a task with its non-learned baseline, random or zero actions, and print its score.

    python scripts/play.py task=Detumble-RW agent=baseline num_envs=64
    python scripts/play.py task=Detumble-MTQ agent=random num_envs=64 max_steps=600

Arguments are key=value overrides (hydra-style): task, agent (baseline | random |
zero), num_envs, max_steps (env steps; default: one full episode), backend, seed.
"""

from __future__ import annotations

import sys

from orbitlab.envs.evaluate import rollout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks import task_entry

DEFAULTS = {"task": "Detumble-RW", "agent": "baseline", "num_envs": "64", "max_steps": "0",
            "backend": "cpu", "seed": "0"}


def parse(argv: list[str]) -> dict[str, str]:
    args = dict(DEFAULTS)
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULTS:
            raise SystemExit(f"bad argument '{item}': use key=value with key in "
                             f"{', '.join(DEFAULTS)}")
        args[key] = value
    if args["agent"] not in ("baseline", "random", "zero"):
        raise SystemExit(f"agent must be baseline, random or zero, got '{args['agent']}'")
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    entry = task_entry(args["task"])
    source = entry.baseline_cfg if args["agent"] == "baseline" else entry.env_cfg
    cfg = load_cfg(source, num_envs=int(args["num_envs"]), backend=args["backend"])
    cfg.seed = int(args["seed"])
    env = ManagerBasedRLEnv(cfg)
    score = rollout(env, policy=args["agent"], max_steps=int(args["max_steps"]) or None,
                    seed=int(args["seed"]))
    print(f"{args['task']} [{args['agent']}] {score}")


if __name__ == "__main__":
    main(sys.argv[1:])
