"""A video camera that frames the spacecraft, lit by the Sun, with Earth below.

The camera looks at the bounding sphere of the subject (every free-floating entity by
default: the chaser and target, the formation's spacecraft, a servicer and its client)
from a fixed direction of the Hill frame, at the distance that keeps the sphere at a
set share of the frame height:

    tan(a) = fill * tan(fovy / 2),   distance = radius / sin(a)

where a is the sphere's angular radius seen from the camera. "Up" in the picture is
radial (away from Earth), so Earth's limb lies across the lower part of a frame that
looks down. The view direction is chosen once per recording: across the line joining
the two farthest-apart entities (so an approach is seen from the side, not end-on), on
the Sun's side of the subject (its lit faces toward the camera).

Lighting: a directional key light from the Sun, MuJoCo's headlight as a dim fill so the
shadow side reads, and optionally an Earth disc (a sphere of Earth's angular size seen
from the chief, in the nadir direction, far behind the subject).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from orbitlab.viz.recorder import Recording

EARTH_RADIUS_KM = 6378.1363
"""Earth's equatorial radius, km (the backdrop's angular size; the orbit layer's own
central-body radius is in `orbitlab.orbit`)."""
EARTH_RGBA = (0.16, 0.32, 0.62, 1.0)
"""The backdrop's colour: ocean blue, lit by the key light."""
VISIBLE_GROUPS = (0, 1, 2, 4)
"""Geom groups the video draws (3 holds sites, 5 collision-only shapes)."""


@dataclass(kw_only=True)
class CameraCfg:
    """How the video camera frames and lights the subject."""

    fill: float = 0.9
    """Share of the frame height the subject's bounding sphere spans, in (0, 1]."""
    elevation_deg: float = -25.0
    """Camera elevation above the local horizontal, deg (negative: looking down, toward
    Earth; at 400 km the horizon is ~20 deg below the horizontal)."""
    azimuth_deg: float | None = None
    """Azimuth of the view direction in the local horizontal plane, deg from the
    along-track axis toward the orbit normal (None: across the subject, Sun side)."""
    fovy_deg: float = 45.0
    """Vertical field of view, deg."""
    subject: tuple[str, ...] | None = None
    """Entity names to frame (None: every free-floating entity)."""
    key_light: float = 0.9
    """Diffuse intensity of the Sun light, [0, 1]."""
    fill_light: float = 0.3
    """Diffuse intensity of the headlight (fill), [0, 1]; its ambient is half of it."""
    earth: bool = True
    """Draw Earth's disc in the nadir direction behind the subject."""

    def __post_init__(self) -> None:
        checks = {
            "fill": (self.fill, 0.0 < self.fill <= 1.0, "in (0, 1]"),
            "elevation_deg": (
                self.elevation_deg,
                -89.0 <= self.elevation_deg <= 89.0,
                "in [-89, 89]",
            ),
            "fovy_deg": (self.fovy_deg, 1.0 <= self.fovy_deg <= 120.0, "in [1, 120]"),
            "key_light": (self.key_light, 0.0 <= self.key_light <= 1.0, "in [0, 1]"),
            "fill_light": (self.fill_light, 0.0 <= self.fill_light <= 1.0, "in [0, 1]"),
        }
        for name, (value, ok, allowed) in checks.items():
            if not (np.isfinite(value) and ok):
                raise ValueError(f"CameraCfg.{name}={value!r} is invalid: must be {allowed}")


@dataclass(frozen=True)
class Shot:
    """One frame's camera, world axes (parallel to ECI, origin at the chief), m."""

    eye: np.ndarray
    """Camera position."""
    forward: np.ndarray
    """Unit view direction."""
    up: np.ndarray
    """Unit up direction, orthogonal to `forward`."""
    distance: float
    """Eye to the subject's centre."""


def subject_geoms(
    m: mujoco.MjModel, recording: Recording, names: tuple[str, ...] | None
) -> np.ndarray:
    """Ids of the visible geoms of the subject's entities (every geom when there is no
    free-floating entity). A name that is no recorded entity is a ValueError."""
    known = tuple(recording.entities)
    if names is not None:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(
                f"CameraCfg.subject: no entity {unknown[0]!r} (free-floating entities: "
                f"{', '.join(known) or 'none'})"
            )
    wanted = tuple(names) if names is not None else known
    visible = np.isin(m.geom_group, VISIBLE_GROUPS) & (m.geom_rgba[:, 3] > 0.0)
    if not wanted:
        return np.flatnonzero(visible)
    prefixes = tuple(f"{n}/" for n in wanted)
    owned = np.array(
        [m.body(int(m.geom_bodyid[g])).name.startswith(prefixes) for g in range(m.ngeom)],
        dtype=bool,
    )
    return np.flatnonzero(visible & owned)


def bounding_sphere(
    d: mujoco.MjData, m: mujoco.MjModel, geoms: np.ndarray
) -> tuple[np.ndarray, float]:
    """(centre, radius), m, of a sphere holding every geom's bounding sphere (the centre
    of their axis-aligned box; not the smallest sphere, within a factor sqrt(3) of it)."""
    if geoms.size == 0:
        return np.zeros(3), 1.0
    pos, rbound = d.geom_xpos[geoms], m.geom_rbound[geoms][:, None]
    centre = 0.5 * ((pos - rbound).min(axis=0) + (pos + rbound).max(axis=0))
    radius = float((np.linalg.norm(pos - centre, axis=1) + rbound[:, 0]).max())
    return centre, max(radius, 1e-3)


def framing_distance(radius_m: float, fovy_deg: float, fill: float) -> float:
    """Eye distance, m, at which a sphere of `radius_m` spans `fill` of the frame height."""
    half = np.arctan(fill * np.tan(np.radians(fovy_deg) / 2.0))
    return float(radius_m / np.sin(half))


def hill_view_direction(recording: Recording, cfg: CameraCfg) -> np.ndarray:
    """The view direction in Hill axes (x radial, y along-track, z normal), fixed for the
    recording (see the module doc)."""
    elevation = np.radians(cfg.elevation_deg)
    if cfg.azimuth_deg is not None:
        azimuth = np.radians(cfg.azimuth_deg)
    else:
        hill0 = recording.hill[0]
        sun = hill0 @ recording.sun_eci[0]
        horizontal = np.array([0.0, 0.0, 0.0])
        tracks = [e.pos_m[0] for e in recording.entities.values()]
        if len(tracks) > 1:
            pairs = [(a, b) for i, a in enumerate(tracks) for b in tracks[i + 1 :]]
            a, b = max(pairs, key=lambda p: float(np.linalg.norm(p[0] - p[1])))
            spread = hill0 @ (b - a)
            horizontal = np.array([0.0, -spread[2], spread[1]])  # across the spread
        if np.linalg.norm(horizontal) < 1e-9:  # one entity, or a radial spread
            horizontal = np.array([0.0, -sun[1], -sun[2]])
        if np.linalg.norm(horizontal) < 1e-9:  # the Sun overhead
            horizontal = np.array([0.0, 1.0, 0.0])
        if horizontal @ sun > 0.0:  # look away from the Sun: lit faces toward the camera
            horizontal = -horizontal
        azimuth = np.arctan2(horizontal[2], horizontal[1])
    return np.array(
        [
            np.sin(elevation),
            np.cos(elevation) * np.cos(azimuth),
            np.cos(elevation) * np.sin(azimuth),
        ]
    )


def shot(
    recording: Recording,
    k: int,
    centre: np.ndarray,
    radius: float,
    cfg: CameraCfg,
    view_hill: np.ndarray,
) -> Shot:
    """The camera of sample k looking at a sphere (centre, radius) along `view_hill`."""
    hill = recording.hill[k]
    forward = hill.T @ view_hill
    radial = hill[0]
    up = radial - (radial @ forward) * forward
    up /= np.linalg.norm(up)
    distance = framing_distance(radius, cfg.fovy_deg, cfg.fill)
    return Shot(eye=centre - distance * forward, forward=forward, up=up, distance=distance)


def place_camera(
    scene: mujoco.MjvScene, camera: Shot, fovy_deg: float, aspect: float, far_m: float
) -> None:
    """Write `camera` into both of the scene's GL cameras (after `mjv_updateScene`)."""
    near = 0.05 * camera.distance
    top = near * np.tan(np.radians(fovy_deg) / 2.0)
    for gl in scene.camera:
        gl.pos[:] = camera.eye
        gl.forward[:] = camera.forward
        gl.up[:] = camera.up
        gl.frustum_center = 0.0
        gl.frustum_width = top * aspect
        gl.frustum_bottom, gl.frustum_top = -top, top
        gl.frustum_near, gl.frustum_far = near, far_m
        gl.orthographic = 0


def light_scene(scene: mujoco.MjvScene, sun_eci: np.ndarray, cfg: CameraCfg) -> None:
    """Turn the scene's lights into a Sun key light plus the headlight as a dim fill."""
    sun = sun_eci / max(float(np.linalg.norm(sun_eci)), 1e-12)
    for i in range(scene.nlight):
        light = scene.lights[i]
        if light.headlight:
            light.diffuse[:] = cfg.fill_light
            light.ambient[:] = 0.5 * cfg.fill_light
            light.specular[:] = 0.1
    if scene.nlight < len(scene.lights):
        key = scene.lights[scene.nlight]
        key.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        key.headlight = 0
        key.castshadow = 0
        key.pos[:] = 0.0
        key.dir[:] = -sun
        key.diffuse[:] = cfg.key_light
        key.ambient[:] = 0.0
        key.specular[:] = 0.3
        key.attenuation[:] = (1.0, 0.0, 0.0)
        key.intensity = 0.0
        key.cutoff, key.exponent = 180.0, 0.0
        scene.nlight += 1


def add_earth(
    scene: mujoco.MjvScene,
    recording: Recording,
    k: int,
    centre: np.ndarray,
    camera_eye: np.ndarray,
    distance_m: float,
) -> float:
    """Append Earth's disc as a sphere user geom: in the nadir direction from `centre`, at
    `distance_m` to its centre, with Earth's angular radius seen from the chief. Returns
    the eye distance past which nothing of it is visible (the frustum's far plane), m."""
    r = recording.r_eci_km[k]
    norm = float(np.linalg.norm(r))
    if scene.ngeom >= scene.maxgeom or norm <= EARTH_RADIUS_KM:
        return float(np.linalg.norm(centre - camera_eye)) + distance_m
    radius = distance_m * EARTH_RADIUS_KM / norm
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(
        geom,
        mujoco.mjtGeom.mjGEOM_SPHERE,
        np.full(3, radius),
        centre - distance_m * r / norm,
        np.eye(3).ravel(),
        np.asarray(EARTH_RGBA, dtype=np.float32),
    )
    geom.shininess = 0.1
    geom.specular = 0.2
    scene.ngeom += 1
    return float(np.linalg.norm(centre - camera_eye)) + distance_m
