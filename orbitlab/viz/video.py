"""Film a `Recording` to MP4 with MuJoCo's offscreen OpenGL renderer.

    renderer = VideoRenderer(env.scene.mj_model)      # GL context now: fails early
    ... rollout(env, observers=[recorder]) ...
    frames = renderer.write(recorder.recording(), "episode.mp4")

One frame per recorded sample (the state after reset, then one per env step). A free
camera looks from a fixed ECI direction at the tracked entity (the first free-floating
one), or at the centroid of all free entities, far enough to see every one; the Hill axes, nadir and Sun arrows
(`orbitlab.viz.markers`) are drawn as MuJoCo user geoms, with the episode time and a
legend as text. The GL context comes from the same backend search as the camera sensor
(`orbitlab.sensors.rendering`: MUJOCO_GL, else EGL then OSMesa when headless).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from orbitlab.viz import VizUnavailable
from orbitlab.viz.markers import (
    LEGEND,
    add_arrows,
    anchor,
    frame_arrows,
    load_sample,
    marker_length,
)
from orbitlab.viz.recorder import Recording

INSTALL = "pip install 'orbitlab-sim[viz]'"


@dataclass(kw_only=True)
class VideoCfg:
    """Video settings."""

    width: int = 640
    """Frame width, px (a multiple of 16 keeps every codec happy)."""
    height: int = 480
    """Frame height, px."""
    fps: float | None = None
    """Frames per second (None: real time, 1 / env step, at most 30)."""
    azimuth_deg: float = 135.0
    """Camera azimuth about the world z (ECI z) axis, deg."""
    elevation_deg: float = -25.0
    """Camera elevation, deg (negative: looking down)."""


def require_ffmpeg() -> None:
    """Raise VizUnavailable unless imageio and its ffmpeg plugin import."""
    try:
        import imageio  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError as error:
        raise VizUnavailable(
            f"video= needs imageio and imageio-ffmpeg ({error}): {INSTALL}"
        ) from error


class VideoRenderer:
    """Offscreen renderer of recordings of one model (see the module doc)."""

    def __init__(self, mj_model: mujoco.MjModel, cfg: VideoCfg | None = None):
        from orbitlab.sensors.rendering import _make_gl_context

        require_ffmpeg()
        self.cfg = cfg = cfg or VideoCfg()
        model = mj_model.__copy__()
        model.vis.global_.offwidth = max(cfg.width, model.vis.global_.offwidth)
        model.vis.global_.offheight = max(cfg.height, model.vis.global_.offheight)
        try:
            self.gl_backend, self._gl, self._mjr = _make_gl_context(model, cfg.width, cfg.height)
        except RuntimeError as error:
            raise VizUnavailable(
                f"video= needs an OpenGL context for MuJoCo's offscreen renderer: {error}"
            ) from error
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self.m = model
        self._data = mujoco.MjData(model)
        self._scene = mujoco.MjvScene(model, maxgeom=max(1000, 2 * model.ngeom + 50))
        self._option = mujoco.MjvOption()
        self._option.geomgroup[:] = 0
        self._option.geomgroup[[0, 1, 2, 4]] = 1
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._rect = mujoco.MjrRect(0, 0, cfg.width, cfg.height)

    def _distance(self, recording: Recording, length: float) -> float:
        """Camera distance, m: the markers and every free entity in view."""
        spread = 0.0
        if len(recording.entities) > 1:
            pos = np.stack([e.pos_m for e in recording.entities.values()], axis=1)
            spread = float(np.linalg.norm(pos - pos.mean(axis=1, keepdims=True), axis=-1).max())
        return max(4.0 * length, 3.0 * spread)

    @staticmethod
    def _lookat(recording: Recording, k: int) -> np.ndarray:
        """Camera target at sample k: the centroid of the free entities, m."""
        if len(recording.entities) > 1:
            return np.mean([e.pos_m[k] for e in recording.entities.values()], axis=0)
        return anchor(recording, k)

    def frame(self, recording: Recording, k: int, length: float, distance: float) -> np.ndarray:
        """The RGB image (H, W, 3) uint8 of sample k."""
        m, d, cfg = self.m, self._data, self.cfg
        load_sample(m, d, recording, k)
        cam = self._camera
        cam.lookat[:] = self._lookat(recording, k)
        cam.distance, cam.azimuth, cam.elevation = distance, cfg.azimuth_deg, cfg.elevation_deg
        self._gl.make_current()
        mujoco.mjv_updateScene(
            m, d, self._option, None, cam, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        add_arrows(self._scene, frame_arrows(recording, k, length), 0.03 * length)
        mujoco.mjr_render(self._rect, self._scene, self._mjr)
        font = mujoco.mjtFont.mjFONT_NORMAL
        mujoco.mjr_overlay(
            font,
            mujoco.mjtGridPos.mjGRID_TOPLEFT,
            self._rect,
            f"t = {recording.time_s[k]:.1f} s",
            f"world {recording.world}",
            self._mjr,
        )
        mujoco.mjr_overlay(
            font, mujoco.mjtGridPos.mjGRID_BOTTOMLEFT, self._rect, LEGEND, "", self._mjr
        )
        rgb = np.empty((cfg.height, cfg.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, self._rect, self._mjr)
        return rgb[::-1]

    def write(self, recording: Recording, path: str | Path) -> int:
        """Write every sample of `recording` as one frame of an MP4 at `path`; returns the
        number of frames."""
        import imageio.v2 as imageio

        cfg = self.cfg
        fps = cfg.fps or min(30.0, 1.0 / recording.step_dt_s)
        length = marker_length(self.m, recording)
        distance = self._distance(recording, length)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with imageio.get_writer(
            path, fps=fps, codec="libx264", quality=7, macro_block_size=16, ffmpeg_log_level="error"
        ) as writer:
            for k in range(len(recording)):
                writer.append_data(self.frame(recording, k, length, distance))
        return len(recording)

    def close(self) -> None:
        """Free the GL context."""
        if getattr(self, "_mjr", None) is not None:
            self._gl.make_current()
            self._mjr.free()
            self._mjr = None
            self._gl.free()
            self._gl = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finaliser
            self.close()
