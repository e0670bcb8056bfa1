"""Score the formation: formation error (the task's metric), attitude error and fuel.

    python -m orbitlab_tasks.formation.evaluate agent=baseline num_envs=16
    python -m orbitlab_tasks.formation.evaluate agent=random num_envs=16 max_steps=150
    python -m orbitlab_tasks.formation.evaluate checkpoint=runs/<task>/<time>/model_599.pt

Every world runs until its first episode ends (or `max_steps` env steps); the metrics average
over followers and over every step of those episodes, each world weighted by its duration.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks.formation import mdp


@dataclass
class FormationScore:
    """Averages over followers and the steps of each world's first episode."""

    formation_error_m: float
    """Mean |rho_f - rho_leader - offset_f|, m."""
    max_formation_error_m: float
    """Largest follower slot error seen, m."""
    attitude_error_deg: float
    """Mean follower-to-leader attitude error, deg."""
    impulse_ns: float
    """Mean commanded thruster impulse per follower per episode, N s."""
    failures: int
    """Worlds whose episode ended by a terminal state (drift or collision)."""
    mean_duration_s: float
    """Mean episode duration, s."""

    def __str__(self) -> str:
        return (
            f"formation error {self.formation_error_m:.4f} m (max "
            f"{self.max_formation_error_m:.3f} m), attitude error "
            f"{self.attitude_error_deg:.2f} deg, impulse {self.impulse_ns:.2f} N s per "
            f"follower, failures {self.failures}, duration {self.mean_duration_s:.1f} s"
        )


def _term(env: ManagerBasedRLEnv, cls):
    for fn in env.reward_manager.term_funcs.values():
        if isinstance(fn, cls):
            return fn
    raise ValueError(f"the env has no '{cls.__name__}' reward term")


def evaluate(
    env: ManagerBasedRLEnv,
    policy: str | Callable[[], torch.Tensor] = "baseline",
    max_steps: int | None = None,
    seed: int = 0,
) -> FormationScore:
    """Roll out 'baseline' (the config's agent graph), 'random' (uniform in [-1, 1]),
    'zero' actions or a policy (a callable returning the next actions, e.g. a trained
    actor from `orbitlab.rl.policies.load_policy`) and score every world's first episode."""
    generator = torch.Generator(device=env.device).manual_seed(seed)
    n, dim = env.num_envs, env.action_manager.total_dim
    error, attitude, fuel = (
        _term(env, c) for c in (mdp.formation_error, mdp.attitude_error, mdp.fuel)
    )
    sums = torch.zeros((3, n), dtype=torch.float64, device=env.device)
    worst = torch.zeros(n, dtype=torch.float64, device=env.device)
    steps = torch.zeros(n, dtype=torch.float64, device=env.device)
    running = torch.ones(n, dtype=torch.bool, device=env.device)
    failed = torch.zeros(n, dtype=torch.bool, device=env.device)
    env.reset(seed=seed)
    for _ in range(max_steps or env.max_episode_length):
        if callable(policy):
            action = policy()
        elif policy == "random":
            action = 2 * torch.rand((n, dim), generator=generator, device=env.device) - 1
        else:
            action = torch.zeros((n, dim), device=env.device)
        _, _, terminated, truncated, _ = env.step(action)
        values = torch.stack(
            [
                error.per_follower.mean(-1),
                attitude.per_follower.mean(-1),
                fuel.per_follower.mean(-1) * env.step_dt,
            ]
        ).to(torch.float64)
        sums += torch.where(running, values, 0.0)
        worst = torch.where(running, torch.maximum(worst, error.per_follower.amax(-1)), worst)
        steps += running
        failed |= running & terminated
        running &= ~(terminated | truncated)
        if not bool(running.any()):
            break
    total_steps = steps.sum().clamp_min(1)
    return FormationScore(
        formation_error_m=float(sums[0].sum() / total_steps),
        max_formation_error_m=float(worst.max()),
        attitude_error_deg=float(sums[1].sum() / total_steps) * 57.29577951308232,
        impulse_ns=float(sums[2].mean()),
        failures=int(failed.sum()),
        mean_duration_s=float(steps.mean()) * env.step_dt,
    )


def main(argv: list[str]) -> None:
    from orbitlab_tasks.formation.formation_env_cfg import baseline_cfg, env_cfg

    args = {"agent": "baseline", "num_envs": "16", "max_steps": "0", "seed": "0", "checkpoint": ""}
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or key not in args:
            raise SystemExit(f"bad argument '{item}': use key=value with key in {', '.join(args)}")
        args[key] = value
    num_envs, seed = int(args["num_envs"]), int(args["seed"])
    if args["checkpoint"]:
        score, name = _evaluate_checkpoint(
            args["checkpoint"], num_envs, seed, int(args["max_steps"]) or None
        )
        print(f"{name} [{args['checkpoint']}] {score}")
        return
    if args["agent"] not in ("baseline", "random", "zero"):
        raise SystemExit(f"agent must be baseline, random or zero, got '{args['agent']}'")
    make = baseline_cfg if args["agent"] == "baseline" else env_cfg
    cfg = make(num_envs)
    cfg.seed = seed
    score = evaluate(ManagerBasedRLEnv(cfg), args["agent"], int(args["max_steps"]) or None, seed)
    print(f"Formation [{args['agent']}] {score}")


def _evaluate_checkpoint(
    checkpoint: str, num_envs: int, seed: int, max_steps: int | None
) -> tuple[FormationScore, str]:
    """Score a `scripts/train.py` checkpoint of a formation task (its run's task config with
    the run's `env.*` settings, e.g. its integrator, without curriculum or training-only
    settings: the evaluation env)."""
    from orbitlab.envs.gym import load_cfg
    from orbitlab.registry import apply_env_overrides
    from orbitlab.rl.policies import load_policy, run_config
    from orbitlab_tasks import task_entry

    run_cfg = run_config(checkpoint)
    name = run_cfg["task"]["name"]
    if not name.startswith("Formation"):
        raise SystemExit(f"checkpoint of task '{name}': this scores the Formation tasks")
    cfg = load_cfg(task_entry(name).env_cfg, num_envs=num_envs)
    cfg.seed = seed
    cfg.curriculum = {}  # the task's full ranges, as scripts/train.py evaluates
    apply_env_overrides(cfg, run_cfg.get("env") or {})
    env = ManagerBasedRLEnv(cfg)
    policy = load_policy(env, checkpoint, run_cfg)
    with torch.inference_mode():
        return evaluate(env, policy, max_steps, seed), name


if __name__ == "__main__":
    main(sys.argv[1:])
