"""Contact benchmark: how many contacts and constraint rows a task's worlds need, and what the
warp backend's buffers cost per world at the task's capacity and at the scene's worst case.

For each task, rollouts on the CPU backend (MuJoCo, float64) count after every physics step
the most contacts, broadphase candidates and constraint rows any world holds
(`orbitlab.sim.contact_capacity.PeakCounter`): one episode of the baseline agent (the
task's intended contacts: a docking, a grasp) and one of uniform random actions in the
training variant (its collisions). The capacity a task should set is that peak with a
margin (`orbitlab.sim.contact_capacity.suggested_capacity`). Memory per world is that of MuJoCo-Warp's `Data` (every
array it allocates, measured as the difference between two and one world on Warp's CPU
device, the same sizes as on a GPU) plus the convex narrowphase's scratch per contact slot,
which MuJoCo-Warp allocates at each collision call when the scene has convex pairs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import mujoco

from orbitlab.bench.rows import Results, measure_rows
from orbitlab.envs.evaluate import rollout
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab.registry import get_task, make_env_cfg
from orbitlab.sim.contact_capacity import (
    ContactPeaks,
    PeakCounter,
    suggested_capacity,
    worst_case,
)


@dataclass(kw_only=True)
class ContactBenchCfg:
    tasks: tuple[str, ...]
    """Registered task names (`orbitlab.registry`)."""
    num_envs: tuple[int, ...] = (64,)
    """Worlds per rollout."""
    max_steps: int | None = None
    """Env steps per rollout (None: until every world has ended one episode)."""
    margin: float = 2.0
    """Suggested capacity = margin x the peak."""


def ccd_scratch_bytes(mj_model: mujoco.MjModel) -> int:
    """Bytes of MuJoCo-Warp's convex-narrowphase scratch per contact slot: with e CCD
    iterations, (10 + 2 e) polytope vertices (a float32 vec3 and an index each), (6 + 5 e)
    faces (an index, a vec3 projection and its squared norm each) and a 24-entry horizon
    (MuJoCo-Warp 4.0; 4,996 bytes at MuJoCo's default e = 35)."""
    e = int(mj_model.opt.ccd_iterations)
    return (10 + 2 * e) * (12 + 4) + (6 + 5 * e) * (4 + 12 + 4) + 24 * 4


def data_bytes_per_world(mj_model: mujoco.MjModel, nconmax: int, njmax: int) -> int:
    """Bytes of every array in MuJoCo-Warp's `Data` per world at this capacity."""
    from orbitlab.quiet import wp
    from orbitlab.sim.backends.warp import _import_mujoco_warp

    mjw = _import_mujoco_warp()

    def nbytes(record) -> int:
        total = 0
        for f in dataclasses.fields(record):
            value = getattr(record, f.name)
            if isinstance(value, wp.array):
                total += value.capacity
            elif dataclasses.is_dataclass(value):
                total += nbytes(value)
        return total

    with wp.ScopedDevice("cpu"):
        one, two = (
            nbytes(mjw.make_data(mj_model, nworld=n, nconmax=nconmax, njmax=njmax)) for n in (1, 2)
        )
    return two - one


def measure_peaks(env: ManagerBasedRLEnv, policy: str, max_steps: int | None) -> ContactPeaks:
    """The peaks of one rollout of `env` (CPU backend) under `policy` ('baseline', 'random')."""
    counter = PeakCounter(env.scene.mj_model, env.scene.data.backend.bind)
    step = env.scene.step

    def counted_step(*args, **kwargs):
        step(*args, **kwargs)
        counter.sample()

    env.scene.step = counted_step  # type: ignore[method-assign]
    try:
        rollout(env, policy, max_steps=max_steps)
    finally:
        del env.scene.step  # the class's method again
    return counter.peaks()


def _merge(peaks: list[ContactPeaks]) -> ContactPeaks:
    return ContactPeaks(
        contacts=max(p.contacts for p in peaks),
        candidates=max(p.candidates for p in peaks),
        rows=max(p.rows for p in peaks),
        samples=sum(p.samples for p in peaks),
    )


def measure_task(task: str, num_envs: int, cfg: ContactBenchCfg) -> dict[str, float]:
    """One (task, num_envs) row: peaks, the configured and suggested capacity, memory."""
    runs = [("random", "train")]
    if get_task(task).baseline_cfg is not None:
        runs.insert(0, ("baseline", "baseline"))
    peaks = []
    configured = None
    for policy, variant in runs:
        env_cfg = make_env_cfg(task, num_envs, variant=variant, backend="cpu")
        if configured is None:
            configured = (env_cfg.scene.contacts_per_world, env_cfg.scene.constraint_rows_per_world)
        env = ManagerBasedRLEnv(env_cfg)
        peaks.append(measure_peaks(env, policy, cfg.max_steps))
    assert configured is not None
    peak = _merge(peaks)
    model = env.scene.mj_model
    worst_contacts, worst_rows = worst_case(model)
    contacts = configured[0] or worst_contacts
    rows = configured[1] or worst_rows
    suggested = suggested_capacity(peak, model, cfg.margin)
    scratch = ccd_scratch_bytes(model)

    def per_world_kb(ncon: int, nrow: int) -> float:
        return (data_bytes_per_world(model, max(1, ncon), max(1, nrow)) + scratch * ncon) / 1024

    return {
        "peak_contacts": peak.contacts,
        "peak_candidates": peak.candidates,
        "peak_rows": peak.rows,
        "samples": peak.samples,
        "contacts_per_world": contacts,
        "constraint_rows_per_world": rows,
        "suggested_contacts": suggested[0],
        "suggested_rows": suggested[1],
        "worst_contacts": worst_contacts,
        "worst_rows": worst_rows,
        "kb_per_world": per_world_kb(contacts, rows),
        "worst_kb_per_world": per_world_kb(worst_contacts, worst_rows),
    }


def measure_contacts(cfg: ContactBenchCfg, on_row: Callable[[dict], None] | None = None) -> Results:
    """{task: {num_envs: row}}; `on_row(results)` after every row."""
    return measure_rows(cfg.tasks, cfg.num_envs, lambda t, n: measure_task(t, n, cfg), on_row)


def format_contacts(results) -> str:
    """The rows as a text table."""
    width = max([len("task"), *(len(task) for task in results)])
    header = (
        f"{'task':<{width}} {'envs':>5} {'peak con/cand/rows':>19} {'capacity con/rows':>18} "
        f"{'suggested':>10} {'worst case':>11} {'KB/world':>9} {'worst KB':>9} "
        f"{'GB @65536':>10}"
    )
    lines = [header]
    for task, rows in results.items():
        for n, r in rows.items():
            peak = f"{r['peak_contacts']:.0f}/{r['peak_candidates']:.0f}/{r['peak_rows']:.0f}"
            capacity = f"{r['contacts_per_world']:.0f}/{r['constraint_rows_per_world']:.0f}"
            suggested = f"{r['suggested_contacts']:.0f}/{r['suggested_rows']:.0f}"
            worst = f"{r['worst_contacts']:.0f}/{r['worst_rows']:.0f}"
            gb = r["kb_per_world"] * 1024 * 65536 / 1e9
            lines.append(
                f"{task:<{width}} {n:>5} {peak:>19} {capacity:>18} {suggested:>10} {worst:>11} "
                f"{r['kb_per_world']:>9.1f} {r['worst_kb_per_world']:>9.1f} {gb:>10.2f}"
            )
    return "\n".join(lines)
