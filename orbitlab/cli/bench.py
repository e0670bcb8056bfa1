"""Throughput benchmarks of orbitlab.

    python scripts/benchmark.py physics [--nworld 1024 4096] [--json out.json]
    python scripts/benchmark.py physics --backend warp [--device cuda:0] [--nworld 1 64 512 ...]
    python scripts/benchmark.py env [--tasks Detumble-RW Pointing] [--nworld 1024 4096]
        [--json out.json] [--plot out.png]
    python scripts/benchmark.py train [--tasks Detumble-RW] [--nworld 256 1024] [--iterations 5]
        [--warmup 1] [--steps-per-env 32] [--json out.json]
    python scripts/benchmark.py bridge [--spacecraft 1 100] [--speed 1 100]
        [--rates 100 1000 10000] [--duration 2] [--json out.json]

Modes: physics (orbit-coupled step vs plain MuJoCo / MuJoCo-Warp step, same model,
same run); env (each task's env steps/s with random actions, the physics of the same
worlds, the framework tax and the cost of resetting 10% of the envs); train (rsl-rl PPO
iterations per task and env count: collection env-steps/s, learning s per iteration, total
env-steps/s and iteration time, warm-up iterations excluded); bridge (external-bridge round
trips, state out and command in, with a client process over loopback: achieved Hz and jitter
per asked rate, spacecraft count and speed-up; see orbitlab/bench/bridge.py). With --fresh-kernel-cache,
Warp compiles every kernel anew into a temporary cache, so the reported start-up time is the
real compile time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from orbitlab.jsonio import json_safe, write_json


def run_warp(args) -> dict:
    from orbitlab.bench.physics_warp import WarpBenchCfg, format_physics_warp, measure_physics_warp
    from orbitlab.sim.backends.warp import default_device

    device = args.device or default_device()
    default = (1, 64, 512, 4096, 16384, 65536) if device.startswith("cuda") else (1, 64, 512)
    results = measure_physics_warp(
        WarpBenchCfg(
            nworlds=tuple(args.nworld or default),
            steps=args.steps,
            trials=args.trials,
            device=device,
        ),
        on_row=partial_writer(args, "physics"),
    )
    print("physics benchmark (warp backend)")
    print(format_physics_warp(results))
    return results


def partial_writer(args, mode: str, rows: int | None = None):
    """With --json, a callback that rewrites the file with the rows done so far and prints
    the progress at once (a run cut short by a time limit keeps its finished rows); with
    `rows`, also a progress bar with the ETA over that many rows (on a terminal)."""
    from orbitlab.rl.progress import progress_bar

    bar = progress_bar(f"{mode} benchmark", rows, unit="row") if rows else None

    def write(results: dict) -> None:
        if bar is not None:
            bar.update(1)
            if bar.n >= rows:
                bar.close()
        last = list(results)[-1]
        print(f"[{mode}] {last}: {json.dumps(json_safe(results[last]))}", flush=True)
        if args.json:
            write_json(args.json, {mode: results, "partial": True})

    return write


def run_env(args) -> dict:
    from orbitlab.bench.env import EnvBenchCfg, format_env, measure_env, plot_env
    from orbitlab.registry import get_task
    from orbitlab.registry import tasks as all_tasks

    names = args.tasks or [spec.name for spec in all_tasks()]
    tasks = tuple(get_task(name).name for name in names)
    num_envs = tuple(args.nworld or (1024, 4096))
    results = measure_env(
        EnvBenchCfg(
            tasks=tasks,
            num_envs=num_envs,
            steps=args.steps or 10,
            trials=args.trials or 5,
            backend=args.backend,
            device=args.device,
        ),
        on_row=partial_writer(args, "env", rows=len(tasks) * len(num_envs)),
    )
    device = f", device {args.device}" if args.device else ""
    print(f"env benchmark ({args.backend} backend{device}, {os.cpu_count()} CPUs)")
    print(format_env(results))
    if args.plot:
        plot_env(results, args.plot)
        print(f"wrote {args.plot}")
    return results


def run_train(args) -> dict:
    import torch

    from orbitlab.bench.train import TrainBenchCfg, format_train, measure_train
    from orbitlab.registry import get_task

    tasks = tuple(get_task(name).name for name in args.tasks or ["Detumble-RW"])
    cfg = TrainBenchCfg(
        tasks=tasks,
        num_envs=tuple(args.nworld or (256, 1024)),
        iterations=args.iterations,
        warmup=args.warmup,
        num_steps_per_env=args.steps_per_env,
        backend=args.backend,
        device=args.device,
    )
    results = measure_train(cfg)
    print(
        f"train benchmark (rsl-rl PPO, {args.backend} backend, {os.cpu_count()} CPUs, "
        f"{torch.get_num_threads()} torch threads, {cfg.num_steps_per_env} steps/env per "
        f"iteration, median of {cfg.iterations} after {cfg.warmup} warm-up)"
    )
    print(format_train(results))
    return results


def run_bridge(args) -> list[dict]:
    from orbitlab.bench.bridge import BridgeBenchCfg, format_bridge, measure_bridge

    cfg = BridgeBenchCfg(
        spacecraft=tuple(args.spacecraft),
        speeds=tuple(args.speed),
        rates_hz=tuple(args.rates),
        duration_s=args.duration,
        lockstep=not args.no_lockstep,
        real_sim=not args.no_real_sim,
        clients=tuple(args.clients),
    )
    print(
        f"bridge benchmark ({os.cpu_count()} CPUs; client in a separate process, loopback "
        "TCP; 'stand-in' rows measure the bridge alone, 'formation' rows step the real "
        "Formation scene)",
        flush=True,
    )
    results = measure_bridge(cfg)
    print(format_bridge(results))
    return results


def run_cpu_physics(args) -> dict:
    from orbitlab.bench.physics import PhysicsBenchCfg, format_physics, measure_physics

    nworlds = tuple(args.nworld or (1024, 4096))
    results, separate = measure_physics(
        PhysicsBenchCfg(
            nworlds=nworlds,
            steps=args.steps,
            trials=args.trials,
            nthread=args.nthread,
            kernel_threads=args.kernel_threads,
            integrator=args.integrator,
        )
    )
    print(
        f"physics benchmark (cpu backend, {os.cpu_count()} CPUs, {args.integrator}; the "
        f"plain step uses the same integrator)"
    )
    print(format_physics(results, separate))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "mode", choices=["physics", "env", "train", "bridge"], help="what to measure"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        help="env mode: task names (default: every registered task); "
        "train mode: default Detumble-RW",
    )
    parser.add_argument("--plot", type=Path, help="env mode: throughput plot (PNG)")
    parser.add_argument("--backend", choices=["cpu", "warp"], default="cpu")
    parser.add_argument(
        "--device",
        default=None,
        help="Warp device for --backend warp ('cuda:0', 'cpu'): physics, env "
        "and train modes; refused elsewhere",
    )
    parser.add_argument(
        "--nworld",
        type=int,
        nargs="+",
        default=None,
        help="world counts (cpu: 1024 4096; warp: 1 .. 65536 on a GPU, "
        "1 64 512 on Warp's CPU device; train: 256 1024)",
    )
    parser.add_argument(
        "--fresh-kernel-cache",
        action="store_true",
        help="compile Warp kernels into a new temporary cache",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per trial (physics: 20 cpu / 50 warp, env: 10)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help="interleaved trials (physics: 31 cpu / 7 warp, env: 5)",
    )
    parser.add_argument("--nthread", type=int, default=0, help="MuJoCo CPU threads (0: all)")
    parser.add_argument(
        "--integrator",
        choices=["RK4", "Euler", "implicit", "implicitfast"],
        default="RK4",
        help="physics mode (cpu): MuJoCo integrator of both "
        "steppers (default RK4, orbitlab's default)",
    )
    parser.add_argument(
        "--kernel-threads", type=int, default=0, help="orbit-layer kernel CPU threads (0: all)"
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=5,
        help="train mode: measured PPO iterations per row (median reported)",
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="train mode: leading PPO iterations not reported"
    )
    parser.add_argument(
        "--steps-per-env",
        type=int,
        default=32,
        help="train mode: rollout steps per env per PPO iteration",
    )
    parser.add_argument(
        "--spacecraft", type=int, nargs="+", default=[1, 100], help="bridge mode: spacecraft counts"
    )
    parser.add_argument(
        "--speed",
        type=float,
        nargs="+",
        default=[1.0, 100.0],
        help="bridge mode: simulation speed-ups (accelFactor)",
    )
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=[100.0, 1000.0, 10000.0],
        help="bridge mode: asked rates per spacecraft, wall Hz",
    )
    parser.add_argument(
        "--clients",
        type=int,
        nargs="+",
        default=[1],
        help="bridge mode: controller processes sharing the spacecraft of a "
        "paced stand-in row (one row per count)",
    )
    parser.add_argument(
        "--duration", type=float, default=2.0, help="bridge mode: measured wall seconds per row"
    )
    parser.add_argument(
        "--no-lockstep",
        action="store_true",
        help="bridge mode: skip the lockstep (as fast as possible) rows",
    )
    parser.add_argument(
        "--no-real-sim",
        action="store_true",
        help="bridge mode: skip the rows with the real Formation scene",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    if args.nworld is not None and any(n < 1 for n in args.nworld):
        parser.error("--nworld values must be >= 1")
    if args.mode == "train" and (args.iterations < 1 or args.warmup < 0 or args.steps_per_env < 1):
        parser.error("train mode needs --iterations >= 1, --warmup >= 0, --steps-per-env >= 1")
    if args.mode == "bridge" and any(k < 1 for k in args.clients):
        parser.error("--clients values must be >= 1")
    if args.device is not None and (
        args.mode == "bridge" or (args.backend == "cpu" and args.device != "cpu")
    ):
        parser.error(
            f"--device {args.device} applies to --backend warp in physics, env and "
            f"train modes only (got mode {args.mode}, --backend {args.backend})"
        )
    if args.fresh_kernel_cache:
        import warp as wp

        wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="orbitlab-warp-cache-")

    if args.mode == "physics":
        steps, trials = (50, 7) if args.backend == "warp" else (20, 31)
        args.steps, args.trials = args.steps or steps, args.trials or trials
    runners = {
        "env": run_env,
        "bridge": run_bridge,
        "train": run_train,
        "physics": run_warp if args.backend == "warp" else run_cpu_physics,
    }
    results = runners[args.mode](args)
    if args.json:
        write_json(args.json, {args.mode: results})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
