"""Earth-relative frame markers drawn around the spacecraft, and a world's pose state.

`frame_arrows` gives, for one recorded sample, arrows from the tracked entity's root:
the Hill (LVLH) axes (x radial red, y along-track green, z orbit normal blue), the
direction to Earth's centre (nadir, cyan) and the direction to the Sun (yellow). MuJoCo's
world axes are parallel to ECI, so ECI directions are drawn as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from orbitlab.viz.recorder import Recording

LEGEND = "Hill x radial (red), y along-track (green), z normal (blue); nadir (cyan); Sun (yellow)"


@dataclass(frozen=True)
class Arrow:
    """An arrow in world axes (m) with an RGBA colour in [0, 1]."""

    start: np.ndarray
    end: np.ndarray
    rgba: tuple[float, float, float, float]
    label: str


def tracked_entity(recording: Recording) -> str | None:
    """The entity the markers and cameras follow: the first free-floating one."""
    return next(iter(recording.entities), None)


def anchor(recording: Recording, k: int) -> np.ndarray:
    """Where the arrows start at sample k: the tracked entity's root, else the chief, m."""
    name = tracked_entity(recording)
    return recording.entities[name].pos_m[k] if name else np.zeros(3)


def marker_length(m: mujoco.MjModel, recording: Recording) -> float:
    """Arrow length, m: three times the largest bounding radius of the tracked entity's geoms."""
    name = tracked_entity(recording)
    geoms = (
        [g for g in range(m.ngeom) if name and m.body(m.geom_bodyid[g]).name.startswith(f"{name}/")]
        if name
        else list(range(m.ngeom))
    )
    radius = max((float(m.geom_rbound[g]) for g in geoms), default=0.0)
    return 3.0 * radius if radius > 0.0 else 0.5


def frame_arrows(recording: Recording, k: int, length_m: float) -> list[Arrow]:
    """The Hill axes, nadir and Sun arrows of sample k (see the module doc)."""
    start = anchor(recording, k)
    hill = recording.hill[k]
    arrows = [
        Arrow(start, start + length_m * hill[i], rgba, label)
        for i, (rgba, label) in enumerate(
            (
                ((1, 0.2, 0.2, 1), "Hill x (radial)"),
                ((0.2, 1, 0.2, 1), "Hill y (along-track)"),
                ((0.3, 0.4, 1, 1), "Hill z (normal)"),
            )
        )
    ]
    r = recording.r_eci_km[k]
    nadir = -r / max(float(np.linalg.norm(r)), 1e-12)
    sun = recording.sun_eci[k] / max(float(np.linalg.norm(recording.sun_eci[k])), 1e-12)
    arrows.append(Arrow(start, start + 1.3 * length_m * nadir, (0, 0.9, 0.9, 1), "nadir"))
    arrows.append(Arrow(start, start + 1.3 * length_m * sun, (1, 0.9, 0, 1), "Sun"))
    return arrows


def load_sample(m: mujoco.MjModel, d: mujoco.MjData, recording: Recording, k: int) -> None:
    """Put sample k's pose into `d` and place bodies, geoms, cameras and lights."""
    d.qpos[:] = recording.qpos[k]
    if m.nmocap:
        d.mocap_pos[:] = recording.mocap_pos[k]
        d.mocap_quat[:] = recording.mocap_quat[k]
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    mujoco.mj_camlight(m, d)


def add_arrows(scene: mujoco.MjvScene, arrows: list[Arrow], width_m: float) -> None:
    """Append `arrows` to an MjvScene as user geoms (mjv_initGeom + mjv_connector)."""
    for arrow in arrows:
        if scene.ngeom >= scene.maxgeom:
            return
        geom = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(
            geom,
            mujoco.mjtGeom.mjGEOM_ARROW,
            np.zeros(3),
            np.zeros(3),
            np.eye(3).ravel(),
            np.asarray(arrow.rgba, dtype=np.float32),
        )
        mujoco.mjv_connector(
            geom,
            mujoco.mjtGeom.mjGEOM_ARROW,
            width_m,
            np.asarray(arrow.start, dtype=np.float64),
            np.asarray(arrow.end, dtype=np.float64),
        )
        scene.ngeom += 1
