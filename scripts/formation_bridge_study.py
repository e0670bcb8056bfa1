"""Formation study over the ZeroMQ bridge: simulator, leader and followers as three processes.

    python scripts/formation_bridge_study.py                  # 160 s, seed 0
    python scripts/formation_bridge_study.py --seconds 10 --out outputs/formation_bridge_short

Starts `orbitlab_tasks.formation.bridge_study` three times (sim, leader, followers; see its
docstring) on free ports, in lockstep at 5 Hz of simulated time, as fast as the controllers
allow (so the result does not depend on machine speed; on a terminal a progress bar shows the
simulated time so far). Scores the simulator's truth log with
the task's metric (formation error: the mean over followers and ticks of
|rho_f - rho_leader - offset_f|, m) and writes `<out>/formation_bridge.png` (Fig. 5 of the
seed: Hill positions from the leader's reference point with the followers' slots, yaw, slot
error, commanded body force and torque), `<out>/summary.json` and the processes' logs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from orbitlab.orbit.rotations import quat_yaw
from orbitlab_tasks.formation.bridge_study import StudyCfg, StudyResult, run_study


def _study_plot():
    """`plot` of scripts/formation_study.py (the in-process study's Fig. 5)."""
    path = Path(__file__).with_name("formation_study.py")
    spec = importlib.util.spec_from_file_location("formation_study", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plot


def fig5_log(result: StudyResult) -> dict[str, np.ndarray]:
    """The plot's series from the simulator's log: positions from the leader's reference point
    (interpolated at the log's times), yaw about Hill z, wrenches and slot errors."""
    out = Path(result.out)
    log = np.load(out / "sim.npz")
    t = log["t"]
    ref_t = np.asarray(result.leader["t"])
    ref = np.asarray(result.leader["reference_hill"])
    origin = np.stack([np.interp(t, ref_t, ref[:, a]) for a in range(3)], -1)
    yaw = quat_yaw(log["quat"])
    return {
        "t": t,
        "pos": log["pos"] - origin[:, None],
        "yaw": yaw,
        "wrench": log["wrench"],
        "error": log["error"],
    }


def summarize(result: StudyResult, cfg: StudyCfg) -> dict:
    """summary.json: the score, rates, timings and the exact command lines."""
    solve = result.followers["solve_s"]
    solve_ms = {
        f: {
            "mean": 1e3 * float(np.mean(s)),
            "p95": 1e3 * float(np.percentile(s, 95)),
            "max": 1e3 * float(np.max(s)),
            "solves": len(s),
        }
        for f, s in solve.items()
    }
    return {
        "cfg": asdict(cfg),
        "formation_error_m": result.formation_error_m,
        "max_formation_error_m": result.max_formation_error_m,
        "attitude_error_deg": result.attitude_error_deg,
        "sim_time_s": result.sim_time_s,
        "ticks": result.ticks,
        "wall_s": result.wall_s,
        "loop_wall_s": result.loop_wall_s,
        "control_rate_hz_sim": result.control_rate_hz,
        "control_rate_hz_wall": result.wall_rate_hz,
        "bridge_stats": result.sim["stats"],
        "commands_received": result.sim["received"],
        "leader_compute_ms_mean": 1e3 * float(np.mean(result.leader["compute_s"])),
        "nmpc_solve_ms": solve_ms,
        "not_converged": result.followers["not_converged"],
        "returncodes": result.returncodes,
        "commands": {role: " ".join(cmd) for role, cmd in result.commands.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=160.0, help="simulated time, s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs/formation_bridge_study", help="output folder")
    args = parser.parse_args()

    cfg = StudyCfg(seconds=args.seconds, seed=args.seed)
    out = Path(args.out)
    result = run_study(cfg, out)
    summary = summarize(result, cfg)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    _study_plot()(
        fig5_log(result),
        out / "formation_bridge.png",
        f"NMPC formation over the bridge (3 processes), seed {args.seed}: formation "
        f"error {result.formation_error_m:.4f} m",
    )
    f = summary["nmpc_solve_ms"]
    print(
        f"Formation over the bridge: formation error {result.formation_error_m:.4f} m (max "
        f"{result.max_formation_error_m:.3f} m), attitude error "
        f"{result.attitude_error_deg:.2f} deg over {result.sim_time_s:.1f} s simulated"
    )
    print(
        f"  {result.ticks} lockstep ticks, control {result.control_rate_hz:.2f} Hz of sim time "
        f"per spacecraft, {result.wall_rate_hz:.2f} ticks per wall s; wall "
        f"{result.wall_s:.1f} s (loop {result.loop_wall_s:.1f} s)"
    )
    for name, s in f.items():
        print(
            f"  {name}: NMPC solve {s['mean']:.1f} ms mean, {s['p95']:.1f} ms p95, "
            f"{s['max']:.1f} ms max over {s['solves']} solves, "
            f"{result.followers['not_converged'][name]} not converged"
        )
    if not math.isfinite(result.formation_error_m):
        raise SystemExit("formation error is not finite")
    print(f"  wrote {out / 'formation_bridge.png'} and {out / 'summary.json'}")


if __name__ == "__main__":
    main()
