"""`orbitlab train`: train a policy on a task (hydra; defaults in orbitlab/configs/train.yaml).

    orbitlab train                                            # Detumble-RW, rsl-rl PPO, CPU
    orbitlab train task=docking                               # Docking's tuned PPO
    orbitlab train task=docking agent=sb3_ppo num_envs=512 agent.learning_rate=3e-4
    orbitlab train task=pointing env.episode_length_s=120     # any env field of `--cfg job`
    orbitlab train resume=true                                # continue the latest run
    orbitlab train -m seed=0,1,2                              # a sweep (basic launcher)
    torchrun --nproc_per_node=2 scripts/train.py num_envs=128 # multi-process rsl-rl

`python scripts/train.py ...` is the same command. A task is named in any spelling of the
registry (`task=Docking`, `task=docking`, `task=Orbitlab-Docking-v0`); without `agent=` it
trains with the task's tuned agent (`orbitlab list` shows them), else the agent given.

Each run directory (runs/<task>/<time>_<suffix>/, never shared: `orbitlab.rl.run_dirs`) receives the resolved config
(.hydra/config.yaml), tensorboard logs (per reward term, success rate, episode
length), checkpoints (every `agent.save_interval` iterations, and on Ctrl-C), the
exported actor (exported/policy.pt and policy.onnx; rsl-rl, sb3, rl-games) and metrics.json: the
score of the final policy over one episode of `eval_num_envs` fresh worlds. metrics.json
is written before the export; a missing export extra or a failed export check is a
warning there ("export_warning"), never a failed run.

`select_best=true` scores every segment checkpoint over one episode of
`select_num_envs` other fresh worlds (seed + 2) and evaluates, exports and reports
the best (success rate, then return) instead of the last one (rsl-rl, sb3). Left
unset, it is the agent config's `select_best` (true for the tuned agents whose
checkpoints swing), else false.

`resume=true` continues the latest earlier run of the task from its last segment
checkpoint (`resume=<run dir or checkpoint>` picks one) up to `agent.max_iterations`
in all; on the CPU backend the result equals the uninterrupted run's (rsl-rl, sb3).
Resuming an sb3 or rl-games run unpickles its checkpoint, which can run code, so it needs
`trust_checkpoint=true` even for a run of this machine (anyone who can write to runs_root
could have put it there); rsl-rl checkpoints load weights-only and need nothing.

Every value is checked before hydra creates the run directory
(`orbitlab.rl.train.checks`): a bad one, a hydra-level error (an unknown key, a missing
config group) or an unreadable / untrusted checkpoint is one line on stderr and exit
status 2 (1 for a checkpoint), with the traceback under `verbose=true`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from orbitlab.cli.args import ArgumentError, UserError
from orbitlab.cli.hydra_app import CONFIG_DIR, normalize, register_configs, run_app
from orbitlab.envs.evaluate import rollout
from orbitlab.jsonio import write_json
from orbitlab.rl.policies import load_policy
from orbitlab.rl.progress import rollout_progress
from orbitlab.rl.provenance import run_environment
from orbitlab.rl.train import TrainSettings, trainer
from orbitlab.rl.train import distributed as dist
from orbitlab.rl.train.interrupt import interrupt_at_env_steps, requested
from orbitlab.rl.train.resume import (
    SAVED_KEYS,
    algorithm,
    resumed_config,
    run_dir_of,
    same_algorithm,
    saved_config,
)
from orbitlab.stats import wilson_interval


def settings_from(
    cfg: DictConfig, run_dir: Path, info: dist.ProcessInfo, device: str | None
) -> TrainSettings:
    return TrainSettings(
        task=cfg.task.name,
        agent=OmegaConf.to_container(cfg.agent, resolve=True),
        run_dir=run_dir,
        num_envs=int(cfg.num_envs),
        seed=int(cfg.seed),
        backend=cfg.backend,
        device=device,
        rank=info.rank,
        world_size=info.world_size,
        trust_checkpoint=bool(cfg.get("trust_checkpoint", False)),
        env=OmegaConf.to_container(cfg.env, resolve=True) if "env" in cfg else {},
        verbose=bool(cfg.get("verbose", False)),
    )


def evaluate(
    settings: TrainSettings, checkpoint: Path, run_cfg: dict, num_envs: int, seed_offset: int = 1
):
    """Score the checkpoint's deterministic actor over one episode of fresh worlds, at the
    task's full difficulty (no curriculum); worlds from seed + `seed_offset`."""
    seed = settings.seed + seed_offset
    env = settings.make_env(num_envs=num_envs, seed=seed, evaluation=True)
    # trusted: a checkpoint this process wrote into the run directory it created
    policy = load_policy(env, checkpoint, run_cfg, trust_checkpoint=True)
    what = "selection" if seed_offset == 2 else "evaluation"
    progress = rollout_progress(f"{what} {checkpoint.name} ({num_envs} worlds)", env)
    try:
        with torch.inference_mode():
            score = rollout(env, policy=policy, seed=seed, observers=[progress])
    finally:
        progress.close()
    env.close()
    return score


def selects_best(cfg: DictConfig) -> bool:
    """`select_best`, or where it is null the agent's own `select_best` (tuned agents whose
    checkpoints swing set it), else False."""
    if cfg.select_best is not None:
        return bool(cfg.select_best)
    return bool(cfg.agent.get("select_best", False))


def select_checkpoint(
    module, settings: TrainSettings, run_cfg: dict, num_envs: int, last: Path
) -> tuple[Path, list[dict]]:
    """The best segment checkpoint on `num_envs` selection worlds (seed + 2, apart from the
    final evaluation's seed + 1): highest success rate, then highest mean return."""
    if not hasattr(module, "checkpoints"):
        raise SystemExit(
            f"select_best: checkpoint selection supports rsl_rl and sb3, not "
            f"'{settings.agent['library']}'"
        )
    candidates = module.checkpoints(settings.run_dir) or [last]
    scored = []
    for checkpoint in candidates:
        score = evaluate(settings, checkpoint, run_cfg, num_envs, seed_offset=2)
        scored.append(
            {
                "checkpoint": str(checkpoint),
                "success_rate": score.success_rate,
                "mean_return": score.mean_return,
            }
        )
        print(f"selection: {checkpoint.name}: {score}")
    best = max(scored, key=lambda s: (s["success_rate"], s["mean_return"]))
    return Path(best["checkpoint"]), scored


def export(checkpoint: Path, run_dir: Path, trust_checkpoint: bool = False) -> dict:
    """TorchScript and ONNX copies of the actor in `run_dir/exported`, checked against the
    checkpoint (any library; a pickled one is loaded when this run wrote it or with
    `trust_checkpoint`, the resume's trust).

    Never raises for a trained policy: a missing export extra or a failed check is a
    warning (printed and returned for metrics.json under "export_warning"); the
    checkpoint, the evaluation and metrics.json stay as they are."""
    from orbitlab.rl.export import EXPORT_HINT, ExportMismatchError, export_policy

    own = checkpoint.resolve().is_relative_to(run_dir.resolve())
    try:
        result = export_policy(
            checkpoint, run_dir / "exported", trust_checkpoint=own or trust_checkpoint
        )
    except ImportError:
        print(f"export skipped: install [export] ({EXPORT_HINT})")
        return {"export_warning": f"export skipped: install [export] ({EXPORT_HINT})"}
    except ExportMismatchError as exc:
        print(f"WARNING: export check failed, nothing exported: {exc}")
        return {"export_warning": f"export check failed: {exc}"}
    except (ValueError, TypeError) as exc:  # a policy the exporter cannot express
        print(f"WARNING: export skipped: {exc}")
        return {"export_warning": f"export skipped: {exc}"}
    print(
        f"exported actor: {result.jit_path}, {result.onnx_path} (max |diff| "
        f"{max(result.max_diff_jit, result.max_diff_onnx):.3g} <= {result.tolerance:.3g})"
    )
    return {"exported": {k: str(v) if isinstance(v, Path) else v for k, v in vars(result).items()}}


def discard_run_dir(run_dir: Path, runs_root: Path) -> None:
    """Remove what hydra put into `run_dir` (.hydra/, the job log) and the directory, with
    its empty parents below `runs_root`, if that leaves it empty: a run that failed on its
    arguments leaves nothing behind."""
    shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
    for log in run_dir.glob("*.log"):
        if log.stat().st_size == 0 or log.name == "train.log":
            log.unlink(missing_ok=True)
    root = runs_root.resolve()
    for folder in (run_dir, *run_dir.parents):
        if not folder.is_dir() or any(folder.iterdir()) or folder.resolve() == root:
            break
        folder.rmdir()
        if root not in folder.resolve().parents:
            break


def main(cfg: DictConfig) -> None:
    """The training job of one composed config (hydra calls it once per run or sweep job)."""
    run_dir = Path(hydra.core.hydra_config.HydraConfig.get().runtime.output_dir)
    try:
        module, info, settings = prepare(cfg, run_dir)
    except UserError as error:
        if os.getenv("RANK", "0").strip() in ("0", ""):
            discard_run_dir(run_dir, Path(cfg.runs_root))
        if cfg.verbose:
            raise
        print(f"train: {error}", file=sys.stderr)  # SystemExit: hydra logs no "Error executing"
        raise SystemExit(2 if isinstance(error, ArgumentError) else 1) from None
    train(cfg, module, info, settings)


def prepare(cfg: DictConfig, output_dir: Path):
    """(trainer module, process info, settings) of a checked config, its resume found."""
    library = cfg.agent.library
    module = trainer(library)
    info = dist.process_info()
    if info.distributed and library != "rsl_rl":
        raise SystemExit(f"torchrun runs rsl-rl only (agent library '{library}')")
    device = dist.init(info, cfg.device)
    run_dir = dist.shared_run_dir(info, output_dir)
    resume_from = None
    if cfg.resume:
        try:
            resume_from = module.resume_checkpoint(
                cfg.resume,
                Path(cfg.runs_root),
                cfg.task.name,
                run_dir,
                same_algorithm(OmegaConf.to_container(cfg.agent, resolve=True)),
            )
        except (FileNotFoundError, ValueError) as error:
            raise ArgumentError(str(error)) from None
        adopt_saved_config(cfg, resume_from, run_dir if info.rank == 0 else None)
    settings = settings_from(cfg, run_dir, info, device)
    settings.resume_from = resume_from
    if resume_from is not None and library != "rsl_rl":
        from orbitlab.rl.checkpoints import require_trust

        require_trust(resume_from, settings.trust_checkpoint, f"the {library} checkpoint to resume")
    return module, info, settings


def adopt_saved_config(cfg: DictConfig, checkpoint: Path, run_dir: Path | None) -> None:
    """Continue the run of `checkpoint` with its saved config (`orbitlab.rl.train.resume`):
    `cfg` takes its task, env, agent, num_envs, seed and backend, then the command line's own
    values; the result replaces this run's `.hydra/config.yaml` (when `run_dir` is given)."""
    from omegaconf import open_dict

    source = run_dir_of(checkpoint)
    saved = saved_config(source)
    if saved is None:
        print(
            f"WARNING: {source} keeps no config (.hydra/config.yaml): resuming with "
            "this command line's",
            file=sys.stderr,
        )
        return
    current = OmegaConf.to_container(cfg.agent, resolve=True)
    if algorithm(saved.get("agent") or {}) != algorithm(current):
        raise ArgumentError(
            f"resume={cfg.resume}: that run trained {' '.join(algorithm(saved['agent']))}, not "
            f"{' '.join(algorithm(current))}: pass its agent (e.g. agent=sb3_sac) or another run"
        )
    overrides = list(hydra.core.hydra_config.HydraConfig.get().overrides.task)
    merged = resumed_config(OmegaConf.to_container(cfg, resolve=True), saved, overrides)
    with open_dict(cfg):
        for key in SAVED_KEYS:
            if key in merged:
                cfg[key] = merged[key]
    print(f"resuming {checkpoint} with its run's config ({source / '.hydra' / 'config.yaml'})")
    if run_dir is not None and (run_dir / ".hydra").is_dir():
        OmegaConf.save(cfg, run_dir / ".hydra" / "config.yaml")


def train(cfg: DictConfig, module, info, settings: TrainSettings) -> None:
    """Train, then select, evaluate, write metrics.json and export (rank 0)."""
    library = cfg.agent.library
    run_dir = settings.run_dir
    torch.manual_seed(settings.seed)
    with interrupt_at_env_steps():  # Ctrl-C stops at an env step, not inside a library
        result = module.train(settings)
        if requested():  # Ctrl-C after the last env step: stop before the evaluation
            result = dataclasses.replace(result, interrupted=True)
    if not result.interrupted and settings.resume_from and not result.checkpoint.exists():
        print(
            f"{settings.resume_from} already completed agent.max_iterations "
            f"({result.iterations}): evaluating it"
        )
        result = dataclasses.replace(result, checkpoint=settings.resume_from)
    print(
        f"{settings.task}: {result.iterations} iterations ({result.env_steps} env steps in "
        f"{result.train_s:.0f} s here); last checkpoint {result.checkpoint}"
    )
    if info.rank == 0 and not result.interrupted:
        run_cfg = OmegaConf.to_container(cfg, resolve=True)
        checkpoint, selection = result.checkpoint, None
        if selects_best(cfg):
            started = time.perf_counter()
            checkpoint, selection = select_checkpoint(
                module, settings, run_cfg, int(cfg.select_num_envs), checkpoint
            )
            selection = {
                "checkpoints": selection,
                "selected": str(checkpoint),
                "select_s": time.perf_counter() - started,
            }
            print(f"selected {checkpoint}")
        started = time.perf_counter()
        eval_num_envs = int(cfg.eval_num_envs)
        score = (
            evaluate(settings, checkpoint, run_cfg, eval_num_envs) if eval_num_envs > 0 else None
        )
        metrics = {
            "task": settings.task,
            "library": library,
            "train_s": result.train_s,
            "iterations": result.iterations,
            "env_steps": result.env_steps,
            "world_size": info.world_size,
            "checkpoint": str(checkpoint),
            "last_checkpoint": str(result.checkpoint),
            "selection": selection,
            "resumed_from": str(settings.resume_from) if settings.resume_from else None,
            "eval_s": time.perf_counter() - started,
            "environment": run_environment(),
            **(score_dict(score) if score is not None else {}),
        }
        if score is not None:  # Wilson's 95 % interval over the evaluation's episodes
            rate, episodes = score.success_rate, score.episodes
            metrics["success_rate_ci95"] = list(wilson_interval(rate * episodes, episodes))
        write_json(run_dir / "metrics.json", metrics)  # before the export: nothing is lost
        print(
            f"{settings.task}: final policy: "
            + (str(score) if score is not None else "not evaluated (eval_num_envs=0)")
        )
        if cfg.export:
            metrics.update(export(checkpoint, run_dir, settings.trust_checkpoint))
            write_json(run_dir / "metrics.json", metrics)
        print(f"run directory: {run_dir}")
    dist.finish(info)
    if result.interrupted:
        print(
            f"interrupted: the last checkpoint is {result.checkpoint}; continue with "
            f"resume={run_dir}",
            file=sys.stderr,
        )
        raise SystemExit(130)  # the shell's code for a run ended by Ctrl-C (SIGINT)


def score_dict(score) -> dict:
    import dataclasses

    return dataclasses.asdict(score)


def cli(argv: list[str], prog: str = "train") -> int:
    """`orbitlab train` over `argv` (hydra overrides; task spellings and the tuned agent as
    `orbitlab.cli.hydra_app.normalize`); input errors are one line on stderr: status 2 for
    arguments, 1 for files (verbose=true: the traceback)."""
    try:
        register_configs()
        argv = normalize(argv, tuned_agent=True)
    except UserError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    return run_app(prog, main, argv, "train", str(CONFIG_DIR), doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
