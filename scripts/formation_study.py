"""Formation study: the seed's leader-follower scenario with NMPC followers (in-process).

    python scripts/formation_study.py                      # one 160 s episode, seed 0
    python scripts/formation_study.py --seconds 20 --out outputs/formation_study_short

Runs `orbitlab_tasks.formation.nmpc.nmpc_cfg(1)` on the cpu backend for one episode, scores
it with `orbitlab_tasks.formation.evaluate` (formation error: the mean over followers and time
of |rho_f - rho_leader - offset_f|, m), prints the NMPC solve times (mean / max ms per
follower) and writes `<out>/formation_nmpc.png` (like the seed's Fig. 5: Hill positions of the
leader and followers with the followers' slots, yaw, commanded body force and torque) and
`<out>/summary.json` (and the logged series in `<out>/log.npz`). On a terminal a progress
bar counts the env steps (tqdm).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.orbit.rotations import quat_multiply, quat_yaw
from orbitlab.rl.progress import progress_bar
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.evaluate import evaluate
from orbitlab_tasks.formation.nmpc import NMPC_NODE, nmpc_cfg

FLYERS = (geo.LEADER, *geo.FOLLOWERS)


def _hill_states(env: ManagerBasedRLEnv) -> tuple[np.ndarray, np.ndarray]:
    """World 0's positions (3, 3) m from the formation's reference point (where the leader's
    waypoints are fixed), Hill axes, and yaws about Hill z (3,) rad, of leader, follower_1,
    follower_2."""
    C, _ = env.scene.view.hill()
    q_hill = geo.hill_quat(C)
    origin = env.agent.node("reference").held["reference_pos"][0].double()
    pos, yaw = [], []
    for name in FLYERS:
        data = env.scene.entities[name].data
        p, q = data.root_pos_w, data.root_quat_w
        pos.append((C[0] @ (p[0].double() - origin)).cpu().numpy())
        q_bh = quat_multiply(q_hill[0].cpu().numpy(), q[0].double().cpu().numpy())
        yaw.append(float(quat_yaw(q_bh)))
    return np.stack(pos), np.array(yaw)


def _wrenches(env: ManagerBasedRLEnv) -> np.ndarray:
    """World 0's commanded body wrenches (3, 6) [N, N m] of leader, follower_1, follower_2."""
    leader = env.agent.node(f"{geo.LEADER}_wrench").held["wrench_body"][0]
    nmpc = env.agent.node(NMPC_NODE).held
    rows = [leader] + [nmpc[f"wrench/{f}"][0] for f in geo.FOLLOWERS]
    return torch.stack(rows).cpu().numpy()


def record(env: ManagerBasedRLEnv, bar: Any = None) -> dict[str, list]:
    """Wrap `env.step` so every step of world 0 (before any reset) is logged and counted on
    `bar` (a tqdm-like progress bar, or None)."""
    log: dict[str, list] = {"t": [], "pos": [], "yaw": [], "wrench": [], "error": []}
    step = env.step

    def logged_step(action):
        out = step(action)
        if bar is not None:
            bar.update(1)
        terminated, truncated = out[2], out[3]
        if not bool((terminated | truncated)[0]):
            pos, yaw = _hill_states(env)
            log["t"].append(float(env.episode_length_buf[0]) * env.step_dt)
            log["pos"].append(pos)
            log["yaw"].append(yaw)
            log["wrench"].append(_wrenches(env))  # the commands held during this step
            log["error"].append(geo.slot_errors(env)[0].norm(dim=-1).cpu().numpy())
        return out

    env.step = logged_step
    return log


def plot(log: dict[str, list], path: Path, title: str) -> None:
    """Fig. 5 of the seed, from the study's log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.asarray(log["t"])
    pos, yaw = np.asarray(log["pos"]), np.degrees(np.asarray(log["yaw"]))
    wrench, error = np.asarray(log["wrench"]), np.asarray(log["error"])
    colors = {"leader": "k", "follower_1": "tab:blue", "follower_2": "tab:orange"}
    fig, axes = plt.subplots(4, 2, figsize=(12, 11))
    for k, ax in enumerate(axes.flat):
        if k not in (0, 5):
            ax.sharex(axes.flat[0])  # time axes; panel 5 is the x-y path
    for a, axis in enumerate("xyz"):
        ax = axes.flat[a]
        for i, name in enumerate(FLYERS):
            ax.plot(t, pos[:, i, a], color=colors[name], label=name)
            if name != geo.LEADER:
                slot = pos[:, 0, a] + geo.SLOT_OFFSETS_M[name][a]
                ax.plot(t, slot, color=colors[name], ls="--", lw=0.8)
        ax.set_ylabel(f"{axis}_H from reference point [m]")
    axes.flat[0].legend(loc="upper right", fontsize=8, title="dashed: slot", title_fontsize=8)
    ax = axes.flat[3]
    for i, name in enumerate(FLYERS):
        ax.plot(t, yaw[:, i], color=colors[name])
    ax.set_ylabel("yaw about z_H [deg]")
    ax = axes.flat[4]
    for k, name in enumerate(geo.FOLLOWERS):
        ax.plot(t, error[:, k], color=colors[name])
    ax.set_ylabel("slot error [m]")
    ax = axes.flat[5]
    for i, name in enumerate(FLYERS):
        ax.plot(pos[:, i, 1], pos[:, i, 0], color=colors[name], lw=0.8)
    ax.set_xlabel("y_H [m]")
    ax.set_ylabel("x_H [m]")
    ax.set_title("paths in the Hill x-y plane", fontsize=9)
    ax.set_aspect("equal", adjustable="datalim")
    for j, (label, rows) in enumerate((("force", slice(0, 3)), ("torque", slice(3, 6)))):
        ax = axes.flat[6 + j]
        for i, name in enumerate(FLYERS):
            for c, style in zip(range(rows.start, rows.stop), ("-", "--", ":"), strict=True):
                ax.plot(t, wrench[:, i, c], color=colors[name], ls=style, lw=0.8)
        unit = "N" if label == "force" else "N m"
        ax.set_ylabel(f"body {label} [{unit}]\n(- x, -- y, : z)")
        ax.set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=160.0, help="episode time to run, s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs/formation_study", help="output folder")
    args = parser.parse_args()

    cfg = nmpc_cfg(1)
    cfg.seed = args.seed
    env = ManagerBasedRLEnv(cfg)
    steps = round(args.seconds / env.step_dt)
    bar = progress_bar(f"formation study ({args.seconds:g} s)", steps, unit="step")
    log = record(env, bar)
    start = time.perf_counter()
    try:
        score = evaluate(env, "baseline", max_steps=steps, seed=args.seed)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - start
    node = env.agent.node(NMPC_NODE)
    times = node.solve_time_summary()
    p95 = {f: 1e3 * float(np.percentile(t, 95)) for f, t in node.solve_times_s.items()}
    print(f"Formation [nmpc] {score}")
    for f, (mean_ms, max_ms) in times.items():
        print(
            f"  {f}: NMPC solve {mean_ms:.1f} ms mean, {p95[f]:.1f} ms p95, {max_ms:.1f} ms "
            f"max over "
            f"{len(node.solve_times_s[f])} solves, {node.failures[f]} not converged"
        )
    print(f"  wall time {wall:.1f} s for {score.mean_duration_s:.1f} s simulated")
    out = Path(args.out)
    plot(
        log,
        out / "formation_nmpc.png",
        f"NMPC formation, seed {args.seed}: formation error {score.formation_error_m:.3f} m",
    )
    summary = {
        "seed": args.seed,
        "seconds": args.seconds,
        "wall_s": wall,
        "score": vars(score),
        "solve_ms": {
            f: {"mean": m, "p95": p95[f], "max": x, "first": 1e3 * node.solve_times_s[f][0]}
            for f, (m, x) in times.items()
        },
        "not_converged": node.failures,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    np.savez(out / "log.npz", **{k: np.asarray(v) for k, v in log.items()})
    print(f"  wrote {out / 'formation_nmpc.png'} and {out / 'summary.json'}")


if __name__ == "__main__":
    main()
