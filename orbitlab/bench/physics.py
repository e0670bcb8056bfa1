"""Physics benchmark: orbit-coupled step vs a plain MuJoCo batch step, same model, same run.

The scene is the reference example: one free-body spacecraft with two panel
sides, a residual dipole and all five switches on. Both steppers run
interleaved in several trials so that machine noise hits them alike; the
reported rates are the medians.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import numpy as np
from mujoco import batch as mjbatch

from orbitlab.orbit.constants import OrbitInit
from orbitlab.sim.elements import MagneticDipoleCfg, SurfaceCfg
from orbitlab.sim.model import OrbitModel
from orbitlab.sim.spec import SimSpec
from orbitlab.testdata import FREE_BODY_XML


@dataclass(kw_only=True)
class PhysicsBenchCfg:
    nworlds: tuple[int, ...] = (1024, 4096)
    """World counts to measure."""
    steps: int = 50
    """Steps per trial."""
    trials: int = 7
    """Interleaved trials per stepper; the median is reported."""
    nthread: int = 0
    """CPU threads of MuJoCo's batch (0: all cores), for both steppers."""
    kernel_threads: int = 0
    """CPU threads of the orbit-layer kernel (0: all cores)."""


def benchmark_model() -> OrbitModel:
    """The reference example's spacecraft with every disturbance switched on."""
    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    for name, normal in (("panel_front", (0.0, 1.0, 0.0)), ("panel_back", (0.0, -1.0, 0.0))):
        spec.orbit.add_surface(SurfaceCfg(name=name, body_name="spacecraft",
                                          center_of_pressure_body=(0.0, 0.0, 0.5),
                                          normal_body=normal, area=2.0))
    spec.orbit.add_magnetic_body(MagneticDipoleCfg(name="residual_dipole",
                                                   body_name="spacecraft",
                                                   dipole_body=(0.0, 0.0, 0.05)))
    return spec.compile(timestep=0.01)


def _rate(step, nworld: int, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return nworld * steps / (time.perf_counter() - start)


def measure_physics(cfg: PhysicsBenchCfg) -> dict[str, dict[str, float]]:
    """{nworld: {orbit_steps_per_s, plain_steps_per_s, orbit_tax, peak_rss_mb}}."""
    model = benchmark_model()
    results: dict[str, dict[str, float]] = {}
    for nworld in cfg.nworlds:
        r = 6378.137 + 400.0
        data = model.make_data(nworld=nworld, nthread=cfg.nthread,
                               kernel_threads=cfg.kernel_threads,
                               orbit=OrbitInit(R_eci=[r, 0, 0], V_eci=[0, np.sqrt(398600.4418 / r), 0]))
        data.bind("qvel")[:, 3:] = np.random.default_rng(0).normal(0.0, 0.01, (nworld, 3))
        data.forward()
        plain = mjbatch.Batch(model.mj_model, nworld, nthread=cfg.nthread, persistent=True)
        plain.bind("qvel")[:, 3:] = data.bind("qvel")[:, 3:]
        plain.forward()
        data.step(5)
        plain.step(nstep=5)
        orbit_rates, plain_rates = [], []
        for _ in range(cfg.trials):
            orbit_rates.append(_rate(data.step, nworld, cfg.steps))
            plain_rates.append(_rate(plain.step, nworld, cfg.steps))
        orbit_rate, plain_rate = float(np.median(orbit_rates)), float(np.median(plain_rates))
        results[str(nworld)] = {
            "orbit_steps_per_s": orbit_rate,
            "plain_steps_per_s": plain_rate,
            "orbit_tax": plain_rate / orbit_rate - 1.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        }
        del data, plain
    return results


def format_physics(results: dict[str, dict[str, float]]) -> str:
    lines = [(f"{'nworld':>8} {'orbit steps/s':>15} {'plain steps/s':>15} {'orbit tax':>10} "
             f"{'peak RSS MB':>12}")]
    for nworld, row in results.items():
        lines.append(f"{nworld:>8} {row['orbit_steps_per_s']:>15,.0f} "
                     f"{row['plain_steps_per_s']:>15,.0f} {row['orbit_tax']:>10.1%} "
                     f"{row['peak_rss_mb']:>12.0f}")
    return "\n".join(lines)
