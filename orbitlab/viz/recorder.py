"""Record one world of a rollout, step by step, for plots, videos and viewers.

    recorder = Recorder(world=0)
    score = rollout(env, policy="baseline", observers=[recorder])
    recording = recorder.recording()       # numpy arrays, one row per sample

Samples: the state after reset, then the state after every env step's physics (before
the env resets finished worlds, so the terminal state is kept), until the world's first
episode ends or the rollout stops. Nothing is simulated twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

OUTPUT_UNITS = {"thrusters": "N", "wheels": "N m", "magnetorquers": "A m^2", "cmgs": "rad/s"}
"""Units of an actuator group's output, by element kind."""


@dataclass
class EntityTrack:
    """A free-floating entity's root over the recording (world axes parallel to ECI,
    origin at the chief)."""

    pos_m: np.ndarray
    """Root position relative to the chief, m, (T, 3)."""
    quat: np.ndarray
    """Root orientation (w, x, y, z), body to world, (T, 4)."""
    rate_rad_s: np.ndarray
    """Angular velocity in body axes, rad/s, (T, 3)."""


@dataclass
class Recording:
    """Everything recorded of one world; arrays have one row per sample (T rows)."""

    world: int
    """The recorded world."""
    step_dt_s: float
    """Env step, s."""
    time_s: np.ndarray
    """Episode time of each sample, s, (T,)."""
    qpos: np.ndarray
    """MuJoCo qpos, (T, nq)."""
    mocap_pos: np.ndarray
    """Marker (mocap) positions relative to the chief, m, (T, nmocap, 3)."""
    mocap_quat: np.ndarray
    """Marker orientations (w, x, y, z), (T, nmocap, 4)."""
    r_eci_km: np.ndarray
    """Chief position, ECI, km, (T, 3)."""
    v_eci_kms: np.ndarray
    """Chief velocity, ECI, km/s, (T, 3)."""
    sun_eci: np.ndarray
    """Unit vector toward the Sun, ECI, (T, 3)."""
    hill: np.ndarray
    """ECI -> Hill rotation (rows: radial, along-track, orbit normal), (T, 3, 3)."""
    entities: dict[str, EntityTrack] = field(default_factory=dict)
    """Free-floating entities by name."""
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    """Applied output of each actuator group, mean over each env step, (T, num)."""
    output_units: dict[str, str] = field(default_factory=dict)
    """Units of each group's output."""
    actions: np.ndarray | None = None
    """Policy actions (raw, before scaling), (T, action_dim); None without action terms."""
    terms: dict[str, np.ndarray] = field(default_factory=dict)
    """Unweighted reward terms, (T,), nan at the first sample (after reset)."""

    def __len__(self) -> int:
        return int(self.time_s.shape[0])


def _row(tensor: torch.Tensor, world: int) -> np.ndarray:
    return tensor[world].detach().to(torch.float64).cpu().numpy().copy()


class Recorder:
    """A rollout observer (`orbitlab.envs.evaluate.StepObserver`) storing world `world`
    (only the last `max_samples` samples when given: live viewers keep one)."""

    def __init__(self, world: int = 0, max_samples: int | None = None):
        self.world = int(world)
        self.max_samples = max_samples
        self.active = True
        self._rows: list[dict] = []
        self._env = None

    def observe(
        self, env, terms: dict[str, torch.Tensor], outputs: dict[str, torch.Tensor]
    ) -> None:
        if not self.active:
            return
        if not 0 <= self.world < env.num_envs:
            raise ValueError(f"world={self.world} is out of range [0, {env.num_envs})")
        self._env = env
        w, view, scene = self.world, env.scene.view, env.scene
        hill, _ = view.hill()
        row = {
            "time_s": float(env.episode_length_buf[w]) * env.step_dt,
            "qpos": _row(view.array("qpos"), w),
            "mocap_pos": _row(view.array("mocap_pos"), w).reshape(-1, 3),
            "mocap_quat": _row(view.array("mocap_quat"), w).reshape(-1, 4),
            "r_eci_km": _row(view.array("R"), w),
            "v_eci_kms": _row(view.array("V"), w),
            "sun_eci": _row(view.array("sun_eci"), w),
            "hill": _row(hill, w),
            "outputs": {k: _row(v, w) for k, v in outputs.items()},
            "terms": {k: float(v[w]) for k, v in terms.items()},
        }
        if env.action_manager.total_dim:
            row["actions"] = _row(env.action_manager.action, w)
        for name, entity in scene.entities.items():
            if entity.free:
                data = entity.data
                row[f"entity/{name}"] = (
                    _row(data.root_pos_w, w),
                    _row(data.root_quat_w, w),
                    _row(data.root_ang_vel_b, w),
                )
        self._rows.append(row)
        if self.max_samples is not None and len(self._rows) > self.max_samples:
            del self._rows[: -self.max_samples]

    def episode_ended(self, ended: torch.Tensor) -> None:
        if bool(ended[self.world]):
            self.active = False

    def recording(self) -> Recording:
        """The samples so far as a `Recording` (needs at least one sample)."""
        if not self._rows:
            raise RuntimeError("nothing recorded: pass the recorder to rollout(observers=...)")
        env, rows = self._env, self._rows

        def stack(key):
            return np.stack([r[key] for r in rows])

        entities = {}
        for key in rows[0]:
            if key.startswith("entity/"):
                parts = [np.stack([r[key][k] for r in rows]) for k in range(3)]
                entities[key.removeprefix("entity/")] = EntityTrack(*parts)
        term_names = list(rows[-1]["terms"])
        groups = env.scene.actuators
        return Recording(
            world=self.world,
            step_dt_s=env.step_dt,
            time_s=np.array([r["time_s"] for r in rows]),
            qpos=stack("qpos"),
            mocap_pos=stack("mocap_pos"),
            mocap_quat=stack("mocap_quat"),
            r_eci_km=stack("r_eci_km"),
            v_eci_kms=stack("v_eci_kms"),
            sun_eci=stack("sun_eci"),
            hill=stack("hill"),
            entities=entities,
            outputs={k: np.stack([r["outputs"][k] for r in rows]) for k in rows[0]["outputs"]},
            output_units={k: OUTPUT_UNITS.get(g.kind, "") for k, g in groups.items()},
            actions=stack("actions") if "actions" in rows[0] else None,
            terms={k: np.array([r["terms"].get(k, np.nan) for r in rows]) for k in term_names},
        )
