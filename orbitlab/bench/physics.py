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

from orbitlab.orbit.constants import MU_EARTH_KM3_S2, OrbitInit
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
    stage: bool = True
    """Also time the per-stage coupling (orbit.coupling='stage'; RK4 only) against the plain
    RK4 step of its own batch."""


def benchmark_model(integrator: str | None = None, coupling: str = "held") -> OrbitModel:
    """The reference example's spacecraft with every disturbance switched on."""
    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    spec.integrator = integrator
    spec.orbit.coupling = coupling
    for name, normal in (("panel_front", (0.0, 1.0, 0.0)), ("panel_back", (0.0, -1.0, 0.0))):
        spec.orbit.add_surface(
            SurfaceCfg(
                name=name,
                body_name="spacecraft",
                center_of_pressure_body=(0.0, 0.0, 0.5),
                normal_body=normal,
                area=2.0,
            )
        )
    spec.orbit.add_magnetic_body(
        MagneticDipoleCfg(
            name="residual_dipole", body_name="spacecraft", dipole_body=(0.0, 0.0, 0.05)
        )
    )
    return spec.compile(timestep=0.01)


def _elapsed(step, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def measure_physics(cfg: PhysicsBenchCfg) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({nworld: {orbit_steps_per_s, plain_steps_per_s, orbit_tax, peak_rss_mb}, with
    `cfg.stage` also stage_steps_per_s, stage_plain_steps_per_s, stage_tax, forward4_tax and
    loads4_share}, {nworld: steps/s of the separately allocated plain batch}).

    forward4_tax (four `Batch.forward` calls over the plain RK4 step, - 1) and loads4_share
    (four loads launches over the plain RK4 step) time the per-stage step's parts in the
    same interleaved trials: together they are the floor of its tax."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # explicit Euler, chosen on purpose
        model = benchmark_model(cfg.integrator)
    stage_model = benchmark_model("RK4", "stage") if cfg.stage and cfg.integrator == "RK4" else None
    results: dict[str, dict[str, float]] = {}
    separate: dict[str, float] = {}
    r = 6378.137 + 400.0
    orbit = OrbitInit(R_eci=[r, 0, 0], V_eci=[0, np.sqrt(MU_EARTH_KM3_S2 / r), 0])
    for nworld in cfg.nworlds:
        rates = np.random.default_rng(0).normal(0.0, 0.01, (nworld, 3))

        def make(m, nworld=nworld, rates=rates):
            data = m.make_data(
                nworld=nworld, nthread=cfg.nthread, kernel_threads=cfg.kernel_threads, orbit=orbit
            )
            data.bind("qvel")[:, 3:] = rates
            data.forward()
            data.step(5)
            return data

        data = make(model)
        plain = mjbatch.Batch(model.mj_model, nworld, nthread=cfg.nthread)
        plain.bind("qvel")[:, 3:] = data.bind("qvel")[:, 3:]
        plain.forward()
        plain.step(nstep=5)
        steppers = {"orbit": data.step, "plain": data.backend.batch.step, "separate": plain.step}
        if stage_model is not None:
            staged = make(stage_model)
            stage_batch = staged.backend.batch
            steppers.update(
                stage=staged.step,
                stage_plain=stage_batch.step,
                # The per-stage step's parts: MuJoCo's forward and the loads kernel, 4x each.
                forward4=lambda b=stage_batch: [b.forward() for _ in range(4)],
                loads4=lambda d=staged: [d._loads.launch() for _ in range(4)],
            )
        trials = {name: [] for name in steppers}
        for _ in range(cfg.trials):
            for name, step in steppers.items():
                trials[name].append(_elapsed(step, cfg.steps))
        rate = {
            name: nworld * cfg.steps / float(np.median(seconds)) for name, seconds in trials.items()
        }
        row = {
            "orbit_steps_per_s": rate["orbit"],
            "plain_steps_per_s": rate["plain"],
            "orbit_tax": rate["plain"] / rate["orbit"] - 1.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        }
        if stage_model is not None:
            row.update(
                stage_steps_per_s=rate["stage"],
                stage_plain_steps_per_s=rate["stage_plain"],
                stage_tax=rate["stage_plain"] / rate["stage"] - 1.0,
                forward4_tax=rate["stage_plain"] / rate["forward4"] - 1.0,
                loads4_share=rate["stage_plain"] / rate["loads4"],
            )
        results[str(nworld)] = row
        separate[str(nworld)] = rate["separate"]
        del data, plain, steppers
    return results, separate


def format_physics(results: dict[str, dict[str, float]], separate: dict[str, float]) -> str:
    staged = all("stage_tax" in row for row in results.values())
    lines = [
        (
            f"{'nworld':>8} {'held steps/s':>13} {'plain steps/s':>14} {'held tax':>9} "
            + (
                f"{'stage steps/s':>14} {'stage tax':>10} {'4 fwd':>7} {'4 loads':>8} "
                if staged
                else ""
            )
            + f"{'plain, own batch':>17} {'peak RSS MB':>12}"
        )
    ]
    for nworld, row in results.items():
        lines.append(
            f"{nworld:>8} {row['orbit_steps_per_s']:>13,.0f} "
            f"{row['plain_steps_per_s']:>14,.0f} {row['orbit_tax']:>9.1%} "
            + (
                f"{row['stage_steps_per_s']:>14,.0f} {row['stage_tax']:>10.1%} "
                f"{row['forward4_tax']:>7.1%} {row['loads4_share']:>8.1%} "
                if staged
                else ""
            )
            + f"{separate[nworld]:>17,.0f} {row['peak_rss_mb']:>12.0f}"
        )
    lines.append(
        "held: loads once per step (orbit.coupling='held'); stage: loads at every RK4 "
        "stage ('stage'); each tax is against the plain MuJoCo step of its own batch "
        "with the same integrator; plain, own batch: a separately allocated batch, "
        "for reference"
    )
    if staged:
        lines.append(
            "the stage step's floor, same run: 4 fwd = four Batch.forward calls over the "
            "plain RK4 step, - 1 (what MuJoCo's forward costs beyond its own RK4 step); "
            "4 loads = four loads-kernel launches as a share of the plain RK4 step"
        )
    return "\n".join(lines)
