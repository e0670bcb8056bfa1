"""Throughput benchmarks of orbitlab.

    python scripts/benchmark.py physics [--nworld 1024 4096] [--json out.json]

Modes: physics (orbit-coupled step vs plain MuJoCo step, same model, same run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path


def write_json_atomically(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        json.dump(payload, f, indent=2)
        tmp = f.name
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["physics"], help="what to measure")
    parser.add_argument("--backend", choices=["cpu"], default="cpu")
    parser.add_argument("--nworld", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--steps", type=int, default=50, help="steps per trial")
    parser.add_argument("--trials", type=int, default=7, help="interleaved trials (median)")
    parser.add_argument("--nthread", type=int, default=0, help="MuJoCo CPU threads (0: all)")
    parser.add_argument("--kernel-threads", type=int, default=0,
                        help="orbit-layer kernel CPU threads (0: all)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.nworld):
        parser.error("--nworld values must be >= 1")

    from orbitlab.bench.physics import PhysicsBenchCfg, format_physics, measure_physics

    results = measure_physics(PhysicsBenchCfg(nworlds=tuple(args.nworld), steps=args.steps,
                                              trials=args.trials, nthread=args.nthread,
                                              kernel_threads=args.kernel_threads))
    print(f"physics benchmark ({args.backend} backend, {os.cpu_count()} CPUs)")
    print(format_physics(results))
    if args.json:
        write_json_atomically(args.json, {"physics": results})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
