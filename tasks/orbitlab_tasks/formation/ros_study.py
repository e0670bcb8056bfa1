"""The simulator of the formation study for ROS 2 controllers through the public BSK-ROS2
bridge node ('ros' mode): the study's scene and recorder (`bridge_study`), Basilisk topics in
the bsk-ros2-mpc demo's namespaces, lockstep at the 5 Hz control rate over the three
flyers' `cmd_force` (a subset of the confirmed input topics), as fast as the controllers
answer; `require_bridge` (it waits for the node).

    python -m orbitlab_tasks.formation.ros_study --out DIR [--seconds 160 --seed 0 \\
        --pub-port 5550 --sub-port 5551 --heartbeat-port 5552]

Writes DIR/sim.npz (the recorder's log: true Hill states, errors) and DIR/sim.json
(counters, formation error). The controllers are `ros_nodes` (or any ROS 2 nodes with the
demo's topic use), run beside the node.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.bridge_study import FLYERS, build_scene, recording_adapter_class
from orbitlab_tasks.formation.ros_nodes import NAMESPACES


def serve_ros(
    out: Path,
    seconds: float = 160.0,
    seed: int = 0,
    ports: tuple[int, int, int] = (5550, 5551, 5552),
    period_s: float = 0.2,
    timeout_s: float = 300.0,
) -> dict:
    """Serve the scene to the node on `ports` (telemetry, commands, heartbeat) until
    `seconds` of simulated time; returns (and writes) the summary."""
    from orbitlab.bridge import BridgeCfg, BridgeServer, SceneAdapterCfg

    out.mkdir(parents=True, exist_ok=True)
    adapter = recording_adapter_class()(
        build_scene(seed),
        SceneAdapterCfg(basilisk_only=True, namespaces=dict(NAMESPACES)),
        stop_s=seconds,
    )
    server = BridgeServer(
        adapter,
        BridgeCfg(
            mode="ros",
            pub_port=ports[0],
            sub_port=ports[1],
            heartbeat_port=ports[2],
            rate_hz=1.0 / period_s,
            accel=0.0,
            lockstep=True,
            lockstep_topics=tuple(f"{NAMESPACES[f]}/cmd_force" for f in FLYERS),
            require_bridge=True,
        ),
    )
    try:
        ticks = round(seconds / server.tick_s)
        start = last = time.monotonic()
        while server.stats.ticks < ticks:
            if time.monotonic() - last > timeout_s:
                raise TimeoutError(f"no step for {timeout_s} s (t = {adapter.time_s:.2f} s)")
            if server.tick(max_wait_s=0.5):
                last = time.monotonic()
        wall = time.monotonic() - start
        handshakes = server.table.handshakes.values()
        summary = {
            "ticks": server.stats.ticks,
            "sim_time_s": adapter.time_s,
            "wall_s": wall,
            "stats": asdict(server.stats),
            "topics_confirmed": sum(h.confirmed and h.success for h in handshakes),
            "topics": len(handshakes),
            "max_frames_in_flight": server.flow.max_in_flight if server.flow else None,
            "received": {s.spec.path: s.received for s in server.table.inputs.values()},
        }
    finally:
        server.close()
    # values typed Any: numpy's savez stub matches a **dict of arrays against allow_pickle
    log: dict[str, Any] = {k: np.asarray(v) for k, v in adapter.log.items()}
    np.savez(out / "sim.npz", **log)
    error = log["error"]
    summary["formation_error_m"] = float(error.mean())
    summary["max_formation_error_m"] = float(error.max())
    summary["attitude_error_deg"] = float(np.degrees(log["attitude_error"].mean()))
    summary["slots"] = {f: list(geo.SLOT_OFFSETS_M[f]) for f in geo.FOLLOWERS}
    (out / "sim.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=160.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pub-port", type=int, default=5550)
    parser.add_argument("--sub-port", type=int, default=5551)
    parser.add_argument("--heartbeat-port", type=int, default=5552)
    a = parser.parse_args(argv)
    if not (a.seconds > 0 and math.isfinite(a.seconds)):
        raise SystemExit(f"--seconds must be > 0, got {a.seconds}")
    summary = serve_ros(a.out, a.seconds, a.seed, (a.pub_port, a.sub_port, a.heartbeat_port))
    print(
        f"formation error {summary['formation_error_m']:.4f} m (max "
        f"{summary['max_formation_error_m']:.3f} m), attitude error "
        f"{summary['attitude_error_deg']:.2f} deg over {summary['sim_time_s']:.1f} s; "
        f"{summary['topics_confirmed']}/{summary['topics']} topics confirmed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
