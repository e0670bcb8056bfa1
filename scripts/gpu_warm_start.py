"""Warm restart: what a fresh process pays once the Warp kernel cache is populated.

    python scripts/gpu_warm_start.py [--device cuda:0] [--num-envs 4096] [--json out.json]

Times, in seconds of wall clock: importing orbitlab and the tasks, building the Detumble-RW
env on the device, its first step (kernels loaded from the cache, CUDA graphs captured)
and a later step; then the physics benchmark's model: data for `--num-envs` worlds and its
first step. Run by scripts/gpu_check.sh after the phases that compiled the kernels.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

START = time.perf_counter()


def lap(times: dict[str, float], name: str, since: float) -> float:
    now = time.perf_counter()
    times[name] = now - since
    print(f"{name}: {times[name]:.2f} s", flush=True)
    return now


def sync(device) -> None:
    """Wait for the device's queued work, so that a lap includes it."""
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda:0", help="Warp device")
    parser.add_argument("--num-envs", type=int, default=4096, help="envs and physics worlds")
    parser.add_argument("--json", type=Path, help="also write the times to this JSON file")
    args = parser.parse_args(argv)
    if args.num_envs < 1:
        parser.error("--num-envs must be >= 1")
    times: dict[str, float] = {}
    import torch

    import orbitlab_tasks
    from orbitlab.bench.physics import benchmark_model
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.jsonio import write_json

    t = lap(times, "import_s", START)
    entry = orbitlab_tasks.task_entry("Detumble-RW").env_cfg
    env = ManagerBasedRLEnv(
        load_cfg(entry, num_envs=args.num_envs, backend="warp", device=args.device)
    )
    t = lap(times, "env_build_s", t)
    action = torch.zeros((args.num_envs, env.action_manager.total_dim), device=env.device)
    env.step(action)
    sync(env.device)
    t = lap(times, "env_first_step_s", t)
    env.step(action)
    sync(env.device)
    t = lap(times, "env_next_step_s", t)
    env.close()
    data = benchmark_model().make_data(nworld=args.num_envs, backend="warp", device=args.device)
    data.step()
    lap(times, "physics_data_and_first_step_s", t)
    times["total_s"] = time.perf_counter() - START
    if args.json:
        write_json(
            args.json, {"restart": {"device": args.device, "num_envs": args.num_envs, **times}}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
