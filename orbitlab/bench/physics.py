"""Physics benchmark: orbit-coupled step vs a plain MuJoCo batch step, same model, same run.

The scene is the reference example: one free-body spacecraft with two panel
sides, a residual dipole and all five switches on. The steppers run
interleaved in many short trials so that machine noise hits them alike; each
rate is the steps of a trial over the stepper's median trial time (on the 2-core
reference machine single trials vary by ~20%, in bursts that a sum would let
through), and the tax is plain/orbit - 1 of those rates.

The orbit tax compares the orbit-coupled step with a plain `mujoco.batch` step
of the *same* batch (the same simulations in the same memory, with the loads
of the last orbit step still applied): the difference is exactly the orbit
layer's cost. A second, separately allocated plain batch is timed too, for
reference only: on the 2-core reference machine identical batches differ by
5-7% depending on the order in which they were allocated (the first is
slowest), which would otherwise be charged to or credited to the orbit layer.
"""

from __future__ import annotations

import resource
import time
import warnings
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
    steps: int = 20
    """Steps per trial."""
    trials: int = 31
    """Interleaved trials per stepper."""
    nthread: int = 0
    """CPU threads of MuJoCo's batch (0: all cores), for both steppers."""
    kernel_threads: int = 0
    """CPU threads of the orbit-layer kernel (0: all cores)."""
    integrator: str = "RK4"
    """MuJoCo integrator of the model, so of both steppers (orbitlab's default: RK4)."""


def benchmark_model(integrator: str | None = None) -> OrbitModel:
    """The reference example's spacecraft with every disturbance switched on."""
    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    spec.integrator = integrator
    for name, normal in (("panel_front", (0.0, 1.0, 0.0)), ("panel_back", (0.0, -1.0, 0.0))):
        spec.orbit.add_surface(SurfaceCfg(name=name, body_name="spacecraft",
                                          center_of_pressure_body=(0.0, 0.0, 0.5),
                                          normal_body=normal, area=2.0))
    spec.orbit.add_magnetic_body(MagneticDipoleCfg(name="residual_dipole",
                                                   body_name="spacecraft",
                                                   dipole_body=(0.0, 0.0, 0.05)))
    return spec.compile(timestep=0.01)


def _elapsed(step, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def measure_physics(cfg: PhysicsBenchCfg) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({nworld: {orbit_steps_per_s, plain_steps_per_s, orbit_tax, peak_rss_mb}},
    {nworld: steps/s of the separately allocated plain batch})."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # explicit Euler, chosen on purpose
        model = benchmark_model(cfg.integrator)
    results: dict[str, dict[str, float]] = {}
    separate: dict[str, float] = {}
    for nworld in cfg.nworlds:
        r = 6378.137 + 400.0
        data = model.make_data(nworld=nworld, nthread=cfg.nthread,
                               kernel_threads=cfg.kernel_threads,
                               orbit=OrbitInit(R_eci=[r, 0, 0], V_eci=[0, np.sqrt(398600.4418 / r), 0]))
        data.bind("qvel")[:, 3:] = np.random.default_rng(0).normal(0.0, 0.01, (nworld, 3))
        data.forward()
        plain = mjbatch.Batch(model.mj_model, nworld, nthread=cfg.nthread)
        plain.bind("qvel")[:, 3:] = data.bind("qvel")[:, 3:]
        plain.forward()
        data.step(5)
        plain.step(nstep=5)
        same_batch = data.backend.batch
        trials = {"orbit": [], "plain": [], "separate": []}
        for _ in range(cfg.trials):
            trials["orbit"].append(_elapsed(data.step, cfg.steps))
            trials["plain"].append(_elapsed(same_batch.step, cfg.steps))
            trials["separate"].append(_elapsed(plain.step, cfg.steps))
        rate = {name: nworld * cfg.steps / float(np.median(seconds))
                for name, seconds in trials.items()}
        results[str(nworld)] = {
            "orbit_steps_per_s": rate["orbit"],
            "plain_steps_per_s": rate["plain"],
            "orbit_tax": rate["plain"] / rate["orbit"] - 1.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        }
        separate[str(nworld)] = rate["separate"]
        del data, plain
    return results, separate


def format_physics(results: dict[str, dict[str, float]], separate: dict[str, float]) -> str:
    lines = [(f"{'nworld':>8} {'orbit steps/s':>15} {'plain steps/s':>15} {'orbit tax':>10} "
             f"{'plain, own batch':>17} {'peak RSS MB':>12}")]
    for nworld, row in results.items():
        lines.append(f"{nworld:>8} {row['orbit_steps_per_s']:>15,.0f} "
                     f"{row['plain_steps_per_s']:>15,.0f} {row['orbit_tax']:>10.1%} "
                     f"{separate[nworld]:>17,.0f} "
                     f"{row['peak_rss_mb']:>12.0f}")
    lines.append("plain: the orbit data's own batch stepped without the orbit layer (the tax's "
                 "reference); plain, own batch: a separately allocated batch, for reference")
    return "\n".join(lines)
