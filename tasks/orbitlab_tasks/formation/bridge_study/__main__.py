"""Entry point of the study's three processes: `python -m orbitlab_tasks.formation.bridge_study
sim|leader|followers --out DIR ...` (see the package docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orbitlab_tasks.formation.bridge_study.config import LinkCfg, StudyCfg


def main(argv: list[str] | None = None) -> int:
    """Entry point of the three processes: `sim`, `leader` or `followers`."""
    parser = argparse.ArgumentParser(
        description="The formation study over the ZeroMQ bridge: one of its three processes."
    )
    parser.add_argument("role", choices=("sim", "leader", "followers"))
    parser.add_argument("--out", required=True, help="folder for ports, logs and results")
    parser.add_argument("--seconds", type=float, default=StudyCfg.seconds)
    parser.add_argument("--seed", type=int, default=StudyCfg.seed)
    parser.add_argument("--period", type=float, default=StudyCfg.control_period_s)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--pub-port", type=int, default=0)
    parser.add_argument("--sub-port", type=int, default=0)
    parser.add_argument("--heartbeat-port", type=int, default=0)
    args = parser.parse_args(argv)
    cfg = StudyCfg(
        seconds=args.seconds, seed=args.seed, control_period_s=args.period, host=args.host
    )
    out = Path(args.out)
    link = LinkCfg(
        host=args.host,
        pub_port=args.pub_port,
        sub_port=args.sub_port,
        heartbeat_port=args.heartbeat_port,
    )
    if args.role == "sim":
        from orbitlab_tasks.formation.bridge_study.simulator import serve

        summary = serve(cfg, out)
        print(
            f"sim: {summary['ticks']} ticks, t = {summary['sim_time_s']:.2f} s, loop "
            f"{summary['loop_wall_s']:.1f} s wall, {summary['stats']}"
        )
    elif args.role == "leader":
        from orbitlab_tasks.formation.bridge_study.leader import run_leader

        summary = run_leader(cfg, link, out)
        print(f"leader: {summary['updates']} updates, last state t = {summary['last_time_s']}")
    else:
        from orbitlab_tasks.formation.bridge_study.followers import run_followers

        summary = run_followers(cfg, link, out)
        print(f"followers: {summary['updates']} updates, not converged {summary['not_converged']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
