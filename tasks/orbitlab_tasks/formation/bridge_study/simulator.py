"""The simulator process: the Formation scene behind a lockstep `BridgeServer` (`serve`)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.bridge_study.config import (
    FLYERS,
    PLAN_TOPIC,
    PROGRESS_FILE,
    StudyCfg,
)
from orbitlab_tasks.formation.bridge_study.recorder import recording_adapter_class


def build_scene(seed: int):
    """The Formation task's scene (one world), reset as the env resets it with `seed`:
    leader at the chief co-rotating with the Hill frame, followers at their slots plus uniform
    noise (`formation_env_cfg.INITIAL_NOISE`), drawn from the event stream (`stream_seed(seed, "events")`)."""
    import torch

    from orbitlab.envs.gym import load_cfg
    from orbitlab.scene.scene import Scene
    from orbitlab.seeding import stream_seed
    from orbitlab_tasks import task_entry
    from orbitlab_tasks.formation import mdp
    from orbitlab_tasks.formation.formation_env_cfg import INITIAL_NOISE

    torch.manual_seed(seed)
    scene = Scene(load_cfg(task_entry("Formation").env_cfg, num_envs=1).scene)
    for name, group in scene.actuators.items():
        group.generator.manual_seed(stream_seed(seed, f"actuators/{name}", group.cfg.seed))
    for sensor in scene.sensors.values():
        sensor.reseed(seed)
    ids = scene.all_worlds
    events = SimpleNamespace(
        generator=torch.Generator(device=scene.device).manual_seed(stream_seed(seed, "events"))
    )
    with scene.deferred_refresh(ids):  # one forward pass, after the formation is placed
        scene.reset(ids)
        mdp.reset_formation(
            SimpleNamespace(scene=scene, device=scene.device, event_manager=events),
            ids,
            **INITIAL_NOISE,
        )
    return scene


def serve(cfg: StudyCfg, out: Path) -> dict[str, Any]:
    """Simulator process: serve the scene until `cfg.seconds` of simulated time, then write
    `out/sim.npz` (the recorder's log) and `out/sim.json` (counters); returns the counters."""
    from orbitlab.bridge import BridgeCfg, BridgeServer, SceneAdapterCfg

    out.mkdir(parents=True, exist_ok=True)
    scene = build_scene(cfg.seed)
    adapter = recording_adapter_class()(
        scene, SceneAdapterCfg(sensors=False, actuator_outputs=False), stop_s=cfg.seconds
    )
    lockstep = tuple(f"{f}/{t}" for f in FLYERS for t in ("cmd_force", "cmd_torque"))
    server = BridgeServer(
        adapter,
        BridgeCfg(
            host=cfg.host,
            pub_port=0,
            sub_port=0,
            heartbeat_port=0,
            mode="hub",
            rate_hz=1.0 / cfg.control_period_s,
            accel=0.0,
            lockstep=True,
            lockstep_topics=lockstep,
            relay_topics=(f"{geo.LEADER}/{PLAN_TOPIC}",),
        ),
    )
    try:
        if abs(server.tick_s - cfg.control_period_s) > 1e-9:
            raise ValueError(
                f"control period {cfg.control_period_s} s is not a whole number of "
                f"physics steps ({adapter.physics_dt} s)"
            )
        ticks = round(cfg.seconds / server.tick_s)
        ports = {k: int(v.rsplit(":", 1)[1]) for k, v in server.endpoints.items()}
        tmp = out / "endpoints.json.tmp"
        tmp.write_text(
            json.dumps(
                {
                    "host": cfg.host,
                    "pub_port": ports["telemetry"],
                    "sub_port": ports["commands"],
                    "heartbeat_port": ports["heartbeat"],
                    "pid": os.getpid(),
                }
            )
        )
        tmp.replace(out / "endpoints.json")
        start = time.monotonic()
        first, last, reported = None, start, start
        while server.stats.ticks < ticks:
            now = time.monotonic()
            limit = cfg.startup_timeout_s if first is None else cfg.step_timeout_s
            if now - last > limit:
                raise TimeoutError(
                    f"no complete round of commands for {limit} s (t = {adapter.time_s:.2f} s)"
                )
            # waits of more than lockstep_republish_s re-send the state to late joiners
            if server.tick(max_wait_s=1.0):
                last = time.monotonic()
                first = first or last
                if last - reported > 0.5:
                    report_progress(out, adapter.time_s)
                    reported = last
        loop_s = time.monotonic() - (first or start)
        server.tick(max_wait_s=cfg.linger_s)  # re-send the final state while controllers exit
        stats = asdict(server.stats)
        inputs = {  # the wrench topics the controllers use (not thr_array_cmd_force)
            s.spec.path: s.received
            for s in server.table.inputs.values()
            if s.spec.topic in ("cmd_force", "cmd_torque")
        }
    finally:
        server.close()
    # values typed Any: numpy's savez stub matches a **dict of arrays against allow_pickle
    log: dict[str, Any] = {k: np.asarray(v) for k, v in adapter.log.items()}
    np.savez(out / "sim.npz", **log)
    summary = {
        "ticks": ticks,
        "tick_s": server.tick_s,
        "sim_time_s": adapter.time_s,
        "loop_wall_s": loop_s,
        "stats": stats,
        "received": inputs,
    }
    (out / "sim.json").write_text(json.dumps(summary, indent=2))
    report_progress(out, adapter.time_s)
    return summary


def report_progress(out: Path, sim_time_s: float) -> None:
    """Write the simulated time so far to `out/PROGRESS_FILE` (replaced whole, so a reader
    never sees half a number)."""
    tmp = out / f"{PROGRESS_FILE}.tmp"
    tmp.write_text(f"{sim_time_s:.3f}\n")
    tmp.replace(out / PROGRESS_FILE)
