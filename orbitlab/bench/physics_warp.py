"""Physics benchmark on the MuJoCo-Warp backend: orbit-coupled vs plain MuJoCo-Warp steps.

On a CUDA device both steppers are captured as CUDA graphs and replayed, with a
synchronisation only around each timed trial; on Warp's CPU device they run as
plain loops. Neither timed loop holds a blocking host read: the orbit-coupled
stepper runs with `step(check=False)` and the buffer-overflow check (a
device-to-host copy that the plain step does not have) runs once after the trials.

GPU memory per world: after the worlds are allocated and both steppers have run
once (graphs captured), the device is synchronised and Python's garbage collected,
then the memory pool's bytes in use, less those in use before the allocation, are
divided by the world count; `peak_pool_mb` is the pool's high-water mark so far
(the sweep grows, so it is this row's peak). Without a memory pool the drop in the
device's free memory is used instead (`memory_source`).
"""

from __future__ import annotations

import gc
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from orbitlab.bench.physics import benchmark_model
from orbitlab.orbit.constants import MU_EARTH_KM3_S2, OrbitInit
from orbitlab.quiet import wp  # Warp, started quietly


@dataclass(kw_only=True)
class WarpBenchCfg:
    nworlds: tuple[int, ...] = (1, 64, 512, 4096, 16384, 65536)
    """World counts to sweep (stops early when the device runs out of memory)."""
    steps: int = 100
    """Steps per trial."""
    trials: int = 5
    """Interleaved trials per stepper; the median is reported."""
    device: str | None = None
    """Warp device ('cuda:0', 'cpu'); default: a GPU when there is one."""
    stage: bool = True
    """Also time the per-stage coupling (orbit.coupling='stage') against the plain
    MuJoCo-Warp step of its own worlds (RK4, the model's integrator)."""


def _timed(step, device: str, nworld: int, steps: int) -> float:
    wp.synchronize_device(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    wp.synchronize_device(device)
    return nworld * steps / (time.perf_counter() - start)


def _plain_stepper(data):
    """mujoco_warp.step on the same model and worlds, as a graph on CUDA."""
    backend = data.backend
    if not data.device.startswith("cuda"):
        return lambda: backend.mjw.step(backend.m, backend.d)
    with wp.ScopedDevice(data.device), wp.ScopedCapture() as capture:
        backend.mjw.step(backend.m, backend.d)
    return lambda: wp.capture_launch(capture.graph)


def _device_bytes(dev) -> tuple[int, str]:
    """Bytes in use on CUDA device `dev` after a sync and a gc, and where they were read."""
    wp.synchronize_device(dev)
    gc.collect()
    if wp.is_mempool_enabled(dev):
        return wp.get_mempool_used_mem_current(dev), "mempool"
    return dev.total_memory - dev.free_memory, "free_memory"


def _measure_row(
    model, orbit, device: str, nworld: int, cfg: WarpBenchCfg, stage_model=None
) -> dict[str, float]:
    dev = wp.get_device(device)
    before, source = _device_bytes(dev) if dev.is_cuda else (0, None)
    data = model.make_data(nworld=nworld, orbit=orbit, backend="warp", device=device)
    data.step()  # capture the graph (CUDA) outside the timed trials, and warm up
    plain = _plain_stepper(data)
    plain()
    used, _ = _device_bytes(dev) if dev.is_cuda else (0, None)
    steppers = {"orbit": lambda: data.step(check=False), "plain": plain}
    staged = None
    if stage_model is not None:
        staged = stage_model.make_data(nworld=nworld, orbit=orbit, backend="warp", device=device)
        staged.step()
        steppers["stage"] = lambda: staged.step(check=False)
        steppers["stage_plain"] = _plain_stepper(staged)
    rates: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(cfg.trials):
        for name, step in steppers.items():
            rates[name].append(_timed(step, device, nworld, cfg.steps))
    data.backend.check()  # once, outside the timed loops
    median = {name: float(np.median(values)) for name, values in rates.items()}
    orbit_rate, plain_rate = median["orbit"], median["plain"]
    extra = {}
    if staged is not None:
        staged.backend.check()
        extra = {
            "stage_steps_per_s": median["stage"],
            "stage_plain_steps_per_s": median["stage_plain"],
            "stage_tax": median["stage_plain"] / median["stage"] - 1.0,
        }
    return {
        "orbit_steps_per_s": orbit_rate,
        "plain_steps_per_s": plain_rate,
        "orbit_tax": plain_rate / orbit_rate - 1.0,
        **extra,
        "memory_per_world_kb": (used - before) / nworld / 1024.0 if dev.is_cuda else None,
        "peak_pool_mb": (
            wp.get_mempool_used_mem_high(dev) / 2**20
            if dev.is_cuda and source == "mempool"
            else None
        ),
        "memory_source": source,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def measure_physics_warp(
    cfg: WarpBenchCfg, on_row: Callable[[dict], None] | None = None
) -> dict[str, dict]:
    """{nworld: {orbit_steps_per_s, plain_steps_per_s, orbit_tax, memory_per_world_kb, ...}}.

    `on_row(results)` is called after every row (and after the start-up), so that a
    caller can write what is done before a time limit cuts the sweep short.
    """
    from orbitlab.sim.backends.warp import default_device

    device = str(wp.get_device(cfg.device or default_device()))
    start = time.perf_counter()
    model = benchmark_model()
    stage_model = benchmark_model("RK4", "stage") if cfg.stage else None
    r = 6378.137 + 400.0
    orbit = OrbitInit(R_eci=[r, 0, 0], V_eci=[0, np.sqrt(MU_EARTH_KM3_S2 / r), 0])
    first = model.make_data(nworld=1, orbit=orbit, backend="warp", device=device)
    first.step()
    startup_s = time.perf_counter() - start  # kernel compile (or cache load) + first step
    del first
    results: dict[str, dict] = {"meta": {"device": device, "startup_s": startup_s}}
    if on_row is not None:
        on_row(results)
    for nworld in cfg.nworlds:
        try:
            results[str(nworld)] = _measure_row(model, orbit, device, nworld, cfg, stage_model)
        except (RuntimeError, MemoryError) as error:  # out of device memory: stop the sweep
            results[str(nworld)] = {"error": str(error)[:200]}
            break
        finally:
            if on_row is not None:
                on_row(results)
    return results


def format_physics_warp(results: dict) -> str:
    meta = results.get("meta", {})
    startup = meta.get("startup_s", float("nan"))
    staged = any("stage_tax" in row for name, row in results.items() if name != "meta")
    header = (
        f"{'nworld':>8} {'held steps/s':>15} {'plain steps/s':>15} {'held tax':>10} "
        + (f"{'stage steps/s':>14} {'stage tax':>10} " if staged else "")
        + f"{'KB/world':>9} {'pool peak MB':>12}"
    )
    lines = [
        f"device {meta.get('device')}, kernel compile/load + first step: {startup:.1f} s",
        header,
    ]
    for nworld, row in results.items():
        if nworld == "meta":
            continue
        if "error" in row:
            lines.append(f"{nworld:>8} stopped: {row['error']}")
            continue
        memory, peak = row["memory_per_world_kb"], row.get("peak_pool_mb")
        memory_text = "n/a" if memory is None else f"{memory:.1f}"
        peak_text = "n/a" if peak is None else f"{peak:.0f}"
        stage_text = ""
        if staged:
            stage_text = (
                f"{row['stage_steps_per_s']:>14,.0f} {row['stage_tax']:>10.1%} "
                if "stage_tax" in row
                else f"{'-':>14} {'-':>10} "
            )
        lines.append(
            f"{nworld:>8} {row['orbit_steps_per_s']:>15,.0f} "
            f"{row['plain_steps_per_s']:>15,.0f} {row['orbit_tax']:>10.1%} "
            f"{stage_text}{memory_text:>9} {peak_text:>12}"
        )
    if staged:
        lines.append(
            "held: loads once per step (orbit.coupling='held'); stage: loads at every RK4 "
            "stage ('stage'), against the plain MuJoCo-Warp step of its own worlds"
        )
    return "\n".join(lines)
