"""The simulator's recorder: a `SceneAdapter` that logs the flyers' true Hill states and held
wrenches after every bridge tick (the study's truth log, `sim.npz`)."""

from __future__ import annotations

import math

import numpy as np

from orbitlab.orbit.rotations import mrp_to_quat
from orbitlab_tasks.formation import constants as geo
from orbitlab_tasks.formation.bridge_study.config import FLYERS


def recording_adapter_class():
    from orbitlab.bridge import SceneAdapter

    class RecordingAdapter(SceneAdapter):
        """A `SceneAdapter` that logs, after every step, the true Hill state of each flyer
        (relative to the chief), the slot and attitude errors of the followers and the body
        wrench each flyer held during the step."""

        def __init__(self, scene, cfg=None, stop_s: float = math.inf) -> None:
            super().__init__(scene, cfg)
            self.stop_s = stop_s
            self.log: dict[str, list] = {
                k: []
                for k in ("t", "pos", "vel", "quat", "rate", "wrench", "error", "attitude_error")
            }

        def step(self, nstep: int = 1) -> None:
            held = np.stack([self._wrench[f].copy() for f in FLYERS])
            super().step(nstep)
            if self.time_s <= self.stop_s + 1e-9:
                self.record(held)

        def record(self, wrench: np.ndarray) -> None:
            states = self._entity_states()
            trans = [states[f]["hill_trans_state"] for f in FLYERS]
            pos = np.array([h["r_DC_H"] for h in trans])
            quat = np.array([mrp_to_quat(states[f]["hill_rot_state"]["sigma_BR"]) for f in FLYERS])
            offsets = np.array([geo.SLOT_OFFSETS_M[f] for f in geo.FOLLOWERS])
            error = np.linalg.norm(pos[1:] - pos[0] - offsets, axis=-1)
            dots = np.abs(quat[1:] @ quat[0]).clip(max=1.0)
            log = self.log
            log["t"].append(self.time_s)
            log["pos"].append(pos)
            log["vel"].append(np.array([h["v_DC_H"] for h in trans]))
            log["quat"].append(quat)
            log["rate"].append(np.array([states[f]["sc_states"]["omega_BN_B"] for f in FLYERS]))
            log["wrench"].append(wrench)
            log["error"].append(error)
            log["attitude_error"].append(2.0 * np.arccos(dots))

    return RecordingAdapter
