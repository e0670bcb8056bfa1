"""`orbitlab bench` (= `python scripts/benchmark.py`): throughput benchmarks of orbitlab.

    orbitlab bench mode=physics nworld=[1024,4096] json=bench.json
    orbitlab bench mode=physics backend=warp device=cuda:0 nworld=[1,64,512] fresh_kernel_cache=true
    orbitlab bench mode=env tasks=[Detumble-RW,Pointing] nworld=[1024,4096] json=env.json plot=env.png
    orbitlab bench mode=sensors tasks=[Formation,Docking] nworld=[256,4096]
    orbitlab bench mode=actuators tasks=[Docking,Formation] nworld=[256,4096]
    orbitlab bench mode=contacts tasks=[Docking,Reach] nworld=[64]
    orbitlab bench mode=train tasks=Detumble-RW nworld=[256,1024] iterations=5 warmup=1
    orbitlab bench mode=bridge spacecraft=[1,100] speed=[1,100] rates=[100,1000,10000] duration=2

Modes: physics (orbit-coupled step vs plain MuJoCo / MuJoCo-Warp step, same model, same
run); env (each task's env steps/s with random actions, the physics of the same worlds, the
framework tax, the cost of resetting 10% of the envs, and the Python calls and torch
operations of one env step); sensors (each task's sensor stage per physics step, the fused
kernel against the torch sensors, interleaved; see orbitlab/bench/sensors.py); actuators
(each task's actuator stage per physics step and its thruster allocation, the Warp kernels
against the torch reference, interleaved; see orbitlab/bench/actuators.py); contacts (each
task's peak contacts, broadphase candidates and constraint rows per world over a baseline
and a random rollout on the cpu backend, its configured and suggested warp-backend
capacity, and the warp backend's buffer memory per world at that capacity and at the
scene's worst case; see orbitlab/bench/contacts.py); train (rsl-rl PPO iterations per
task and env count: collection env-steps/s, learning s per iteration, total env-steps/s and
iteration time, warm-up iterations excluded); bridge (external-bridge round trips, state out
and command in, with a client process over loopback: achieved Hz and jitter per asked rate,
spacecraft count and speed-up; see orbitlab/bench/bridge.py).

Keys (key=value; a list is `[a,b]` or one value):
  mode                physics | env | sensors | actuators | contacts | train | bridge (required)
  tasks               env, sensors, actuators, contacts: task names (default every registered
                      task); train:
                      Detumble-RW
  nworld              world counts (cpu: [1024,4096]; warp: [1, ..., 65536] on a GPU,
                      [1,64,512] on Warp's CPU device; sensors, actuators, train:
                      [256,1024]; contacts: [64]; sensors, actuators and contacts run on
                      the cpu backend)
  backend             cpu | warp (physics, env, train)
  device              Warp device of backend=warp ('cuda:0', 'cpu'): physics, env, train
  steps, trials       steps per trial and interleaved trials (physics: 20 and 31 on cpu, 50
                      and 7 on warp; env: 10 and 5; sensors, actuators: 20 and 7;
                      contacts: env steps per rollout, default one whole episode)
  fresh_kernel_cache  true: Warp compiles every kernel anew into a temporary cache, so the
                      reported start-up time is the real compile time
  nthread             physics (cpu): MuJoCo CPU threads (0: all)
  kernel_threads      physics (cpu): orbit-layer kernel CPU threads (0: all)
  integrator          physics (cpu): RK4 | Euler | implicit | implicitfast, of both steppers
  iterations, warmup  train: measured PPO iterations per row (median reported), leading
                      iterations not reported
  steps_per_env       train: rollout steps per env per PPO iteration
  spacecraft          bridge: spacecraft counts
  speed               bridge: simulation speed-ups (accelFactor)
  rates               bridge: asked rates per spacecraft, wall Hz
  clients             bridge: controller processes sharing the spacecraft of a paced
                      stand-in row (one row per count)
  duration            bridge: measured wall seconds per row
  lockstep            bridge: false skips the lockstep (as fast as possible) rows
  real_sim            bridge: false skips the rows with the real Formation scene
  plot                env: throughput plot (PNG)
  json                also write the results to this JSON file (rewritten per finished row)
  verbose             true: tracebacks instead of one-line errors

A bad value is one line naming the key, the value and what is allowed (exit status 2).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from orbitlab.cli.args import (
    REQUIRED,
    Arg,
    bad,
    boolean,
    choice,
    integer,
    integers,
    list_items,
    number,
    numbers,
    optional,
    output_file,
    parse_args,
    text,
)
from orbitlab.jsonio import json_safe, write_json
from orbitlab.limits import MAX_NUM_ENVS, max_threads

MODES = ("physics", "env", "sensors", "actuators", "contacts", "train", "bridge")


def task_names(key: str, value: str) -> list[str]:
    """A list of registered task names (any spelling of the registry)."""
    from orbitlab_tasks import task_arg

    return [task_arg(key, item) for item in list_items(value)]


ARGS: dict[str, Arg] = {
    "mode": Arg(REQUIRED, choice(*MODES)),
    "tasks": Arg("", optional(task_names)),
    "nworld": Arg("", optional(integers(min=1, max=MAX_NUM_ENVS))),
    "backend": Arg("cpu", choice("cpu", "warp")),
    "device": Arg("", optional(text)),
    "steps": Arg("", optional(integer(min=1))),
    "trials": Arg("", optional(integer(min=1))),
    "fresh_kernel_cache": Arg("false", boolean),
    "nthread": Arg("0", integer(min=0, max=max_threads())),
    "kernel_threads": Arg("0", integer(min=0)),
    "integrator": Arg("RK4", choice("RK4", "Euler", "implicit", "implicitfast")),
    "iterations": Arg("5", integer(min=1)),
    "warmup": Arg("1", integer(min=0)),
    "steps_per_env": Arg("32", integer(min=1)),
    "spacecraft": Arg("[1, 100]", integers(min=1)),
    "speed": Arg("[1.0, 100.0]", numbers(min=0.0, min_open=True)),
    "rates": Arg("[100.0, 1000.0, 10000.0]", numbers(min=0.0, min_open=True)),
    "clients": Arg("[1]", integers(min=1)),
    "duration": Arg("2.0", number(min=0.0, min_open=True)),
    "lockstep": Arg("true", boolean),
    "real_sim": Arg("true", boolean),
    "plot": Arg("", optional(output_file)),
    "json": Arg("", optional(output_file)),
}
"""The key=value arguments (orbitlab.cli, module docstring); a bad one exits with status 2."""


def run_warp(args: dict[str, Any]) -> dict:
    from orbitlab.bench.physics_warp import WarpBenchCfg, format_physics_warp, measure_physics_warp
    from orbitlab.sim.backends.warp import default_device

    device = args["device"] or default_device()
    default = (1, 64, 512, 4096, 16384, 65536) if device.startswith("cuda") else (1, 64, 512)
    results = measure_physics_warp(
        WarpBenchCfg(
            nworlds=tuple(args["nworld"] or default),
            steps=args["steps"],
            trials=args["trials"],
            device=device,
        ),
        on_row=partial_writer(args, "physics"),
    )
    print("physics benchmark (warp backend)")
    print(format_physics_warp(results))
    return results


def partial_writer(args: dict[str, Any], mode: str, rows: int | None = None):
    """With `json=`, a callback that rewrites the file with the rows done so far and prints
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
        if args["json"]:
            write_json(args["json"], {mode: results, "partial": True})

    return write


def run_env(args: dict[str, Any]) -> dict:
    from orbitlab.bench.env import EnvBenchCfg, format_env, measure_env, plot_env

    tasks = _chosen_tasks(args)
    num_envs = tuple(args["nworld"] or (1024, 4096))
    results = measure_env(
        EnvBenchCfg(
            tasks=tasks,
            num_envs=num_envs,
            steps=args["steps"] or 10,
            trials=args["trials"] or 5,
            backend=args["backend"],
            device=args["device"],
        ),
        on_row=partial_writer(args, "env", rows=len(tasks) * len(num_envs)),
    )
    device = f", device {args['device']}" if args["device"] else ""
    print(f"env benchmark ({args['backend']} backend{device}, {os.cpu_count()} CPUs)")
    print(format_env(results))
    if args["plot"]:
        plot_env(results, args["plot"])
        print(f"wrote {args['plot']}")
    return results


def _chosen_tasks(args: dict[str, Any]) -> tuple[str, ...]:
    """The `tasks` argument's registered names, or every registered task."""
    from orbitlab.registry import get_task
    from orbitlab.registry import tasks as all_tasks

    names = args["tasks"] or [spec.name for spec in all_tasks()]
    return tuple(get_task(name).name for name in names)


def run_stage_bench(args: dict[str, Any], mode: str, cfg_class, measure, title: str) -> dict:
    """A per-task stage benchmark (sensors, actuators): kernel against torch, per env count."""
    tasks = _chosen_tasks(args)
    num_envs = tuple(args["nworld"] or (256, 1024))
    cfg = cfg_class(
        tasks=tasks, num_envs=num_envs, steps=args["steps"] or 20, trials=args["trials"] or 7
    )
    results = measure(cfg, on_row=partial_writer(args, mode, rows=len(tasks) * len(num_envs)))
    print(f"{title} (cpu backend, {os.cpu_count()} CPUs; ms per call)")
    return results


def run_sensors(args: dict[str, Any]) -> dict:
    from orbitlab.bench.sensors import SensorBenchCfg, format_sensors, measure_sensors

    results = run_stage_bench(
        args, "sensors", SensorBenchCfg, measure_sensors, "sensor benchmark, per sensor update"
    )
    print(format_sensors(results))
    return results


def run_actuators(args: dict[str, Any]) -> dict:
    from orbitlab.bench.actuators import ActuatorBenchCfg, format_actuators, measure_actuators

    results = run_stage_bench(
        args, "actuators", ActuatorBenchCfg, measure_actuators, "actuator benchmark"
    )
    print(format_actuators(results))
    return results


def run_contacts(args: dict[str, Any]) -> dict:
    from orbitlab.bench.contacts import ContactBenchCfg, format_contacts, measure_contacts

    tasks = _chosen_tasks(args)
    num_envs = tuple(args["nworld"] or (64,))
    cfg = ContactBenchCfg(tasks=tasks, num_envs=num_envs, max_steps=args["steps"])
    results = measure_contacts(
        cfg, on_row=partial_writer(args, "contacts", rows=len(tasks) * len(num_envs))
    )
    print(
        "contact benchmark (cpu backend rollouts: baseline and random actions; peaks per "
        "world; capacity = contacts / constraint rows per world; memory of the warp "
        "backend's buffers per world, and at 65536 worlds)"
    )
    print(format_contacts(results))
    return results


def run_train(args: dict[str, Any]) -> dict:
    import torch

    from orbitlab.bench.train import TrainBenchCfg, format_train, measure_train
    from orbitlab.registry import get_task

    tasks = tuple(get_task(name).name for name in args["tasks"] or ["Detumble-RW"])
    cfg = TrainBenchCfg(
        tasks=tasks,
        num_envs=tuple(args["nworld"] or (256, 1024)),
        iterations=args["iterations"],
        warmup=args["warmup"],
        num_steps_per_env=args["steps_per_env"],
        backend=args["backend"],
        device=args["device"],
    )
    results = measure_train(cfg)
    print(
        f"train benchmark (rsl-rl PPO, {args['backend']} backend, {os.cpu_count()} CPUs, "
        f"{torch.get_num_threads()} torch threads, {cfg.num_steps_per_env} steps/env per "
        f"iteration, median of {cfg.iterations} after {cfg.warmup} warm-up)"
    )
    print(format_train(results))
    return results


def run_bridge(args: dict[str, Any]) -> list[dict]:
    from orbitlab.bench.bridge import BridgeBenchCfg, format_bridge, measure_bridge

    cfg = BridgeBenchCfg(
        spacecraft=tuple(args["spacecraft"]),
        speeds=tuple(args["speed"]),
        rates_hz=tuple(args["rates"]),
        duration_s=args["duration"],
        lockstep=args["lockstep"],
        real_sim=args["real_sim"],
        clients=tuple(args["clients"]),
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


def run_cpu_physics(args: dict[str, Any]) -> dict:
    from orbitlab.bench.physics import PhysicsBenchCfg, format_physics, measure_physics

    nworlds = tuple(args["nworld"] or (1024, 4096))
    results, separate = measure_physics(
        PhysicsBenchCfg(
            nworlds=nworlds,
            steps=args["steps"],
            trials=args["trials"],
            nthread=args["nthread"],
            kernel_threads=args["kernel_threads"],
            integrator=args["integrator"],
        )
    )
    print(
        f"physics benchmark (cpu backend, {os.cpu_count()} CPUs, {args['integrator']}; the "
        f"plain step uses the same integrator)"
    )
    print(format_physics(results, separate))
    return results


def parse(argv: list[str]) -> dict[str, Any]:
    """Typed arguments; ArgumentError naming a bad one (a device that its mode would ignore)."""
    args = parse_args(argv, ARGS)
    device = args["device"]
    if device is not None and (
        args["mode"] == "bridge" or (args["backend"] == "cpu" and device != "cpu")
    ):
        raise bad(
            "device",
            device,
            "a device applies to backend=warp in physics, env and train modes only "
            f"(got mode={args['mode']}, backend={args['backend']})",
        )
    if args["mode"] in ("sensors", "actuators", "contacts") and args["backend"] != "cpu":
        raise bad("backend", args["backend"], f"cpu (mode={args['mode']} runs on the cpu backend)")
    if args["mode"] == "physics":
        steps, trials = (50, 7) if args["backend"] == "warp" else (20, 31)
        args["steps"], args["trials"] = args["steps"] or steps, args["trials"] or trials
    return args


def main(argv: list[str]) -> int:
    """Run one benchmark (see the module docstring); ArgumentError on a bad argument."""
    args = parse(argv)
    if args["fresh_kernel_cache"]:
        from orbitlab.quiet import wp

        wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="orbitlab-warp-cache-")
    runners = {
        "env": run_env,
        "sensors": run_sensors,
        "actuators": run_actuators,
        "contacts": run_contacts,
        "bridge": run_bridge,
        "train": run_train,
        "physics": run_warp if args["backend"] == "warp" else run_cpu_physics,
    }
    results = runners[args["mode"]](args)
    if args["json"]:
        write_json(args["json"], {args["mode"]: results})
        print(f"wrote {args['json']}")
    return 0


if __name__ == "__main__":
    from orbitlab.cli.dispatch import main as orbitlab_main

    sys.exit(orbitlab_main(["bench", *sys.argv[1:]]))
