"""Film a `Recording` to MP4 with MuJoCo's offscreen OpenGL renderer.

    renderer = VideoRenderer(env.scene.mj_model)      # GL context now: fails early
    ... rollout(env, observers=[recorder]) ...
    frames = renderer.write(recorder.recording(), "episode.mp4")
    frames = renderer.write_grid([rec0, rec1, rec2, rec3], "grid.mp4")   # several worlds

One frame per recorded sample (the state after reset, then one per env step). The camera
(`orbitlab.viz.camera`) keeps the spacecraft's bounding sphere at a set share of the
frame, lit by the Sun with a dim fill light, Earth's disc below; the Hill axes, nadir and
Sun arrows (`orbitlab.viz.markers`) are drawn as MuJoCo user geoms, with the episode
time and a legend as text. The GL context comes from the same backend search as the
camera sensor (`orbitlab.sensors.rendering`: MUJOCO_GL, else EGL then OSMesa when
headless).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from orbitlab.viz import VizUnavailable
from orbitlab.viz.camera import (
    VISIBLE_GROUPS,
    CameraCfg,
    add_earth,
    bounding_sphere,
    hill_view_direction,
    light_scene,
    place_camera,
    shot,
    subject_geoms,
)
from orbitlab.viz.markers import LEGEND, add_arrows, frame_arrows, load_sample, marker_length
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
    camera: CameraCfg = field(default_factory=CameraCfg)
    """Framing and lighting (`orbitlab.viz.camera`)."""


@dataclass(frozen=True)
class Framing:
    """What the camera keeps over one recording."""

    geoms: np.ndarray
    """Ids of the subject's visible geoms (`orbitlab.viz.camera.subject_geoms`)."""
    view_hill: np.ndarray
    """View direction in Hill axes (`orbitlab.viz.camera.hill_view_direction`)."""
    arrow_length_m: float
    """Length of the Hill-axes arrows, m (`orbitlab.viz.markers.marker_length`, at most
    the subject's bounding radius at the first sample, so they stay in the frame)."""


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
        model.vis.headlight.active = 1  # the fill light (light_scene sets its strength)
        model.vis.quality.numslices = max(model.vis.quality.numslices, 160)  # a round Earth
        model.vis.quality.numstacks = max(model.vis.quality.numstacks, 80)
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
        self._option.geomgroup[list(VISIBLE_GROUPS)] = 1
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._rect = mujoco.MjrRect(0, 0, cfg.width, cfg.height)

    def framing(self, recording: Recording) -> Framing:
        """What stays fixed over a recording's frames (see `Framing`)."""
        geoms = subject_geoms(self.m, recording, self.cfg.camera.subject)
        load_sample(self.m, self._data, recording, 0)
        _, radius = bounding_sphere(self._data, self.m, geoms)
        return Framing(
            geoms=geoms,
            view_hill=hill_view_direction(recording, self.cfg.camera),
            arrow_length_m=min(marker_length(self.m, recording), radius),
        )

    def _compose(self, recording: Recording, k: int, framing: Framing) -> None:
        """Fill the scene with sample k: bodies, lights, arrows, Earth and the camera."""
        m, d, cfg = self.m, self._data, self.cfg
        load_sample(m, d, recording, k)
        centre, radius = bounding_sphere(d, m, framing.geoms)
        camera = shot(recording, k, centre, radius, cfg.camera, framing.view_hill)
        self._gl.make_current()
        self._camera.lookat[:] = centre
        self._camera.distance = camera.distance
        mujoco.mjv_updateScene(
            m, d, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        light_scene(self._scene, recording.sun_eci[k], cfg.camera)
        length = framing.arrow_length_m
        add_arrows(self._scene, frame_arrows(recording, k, length), 0.03 * length)
        far = 4.0 * camera.distance + 2.0 * length
        if cfg.camera.earth:
            far = add_earth(self._scene, recording, k, centre, camera.eye, 200.0 * camera.distance)
        place_camera(self._scene, camera, cfg.camera.fovy_deg, cfg.width / cfg.height, far)

    def _read(self) -> np.ndarray:
        rgb = np.empty((self.cfg.height, self.cfg.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, self._rect, self._mjr)
        return rgb[::-1]

    def frame(self, recording: Recording, k: int, framing: Framing | None = None) -> np.ndarray:
        """The RGB image (H, W, 3) uint8 of sample k."""
        self._compose(recording, k, framing or self.framing(recording))
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
        return self._read()

    def subject_mask(
        self, recording: Recording, k: int, framing: Framing | None = None
    ) -> np.ndarray:
        """(H, W) bool: the pixels of frame k that show the subject's geoms (MuJoCo's
        segmentation rendering of the same scene, without the overlays)."""
        framing = framing or self.framing(recording)
        self._compose(recording, k, framing)
        flags = self._scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = 1
        try:
            mujoco.mjr_render(self._rect, self._scene, self._mjr)
            rgb = self._read().astype(np.int64)
        finally:
            flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = 0
        index = rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2] - 1
        subject = np.zeros(self._scene.ngeom + 1, dtype=bool)
        for i in range(self._scene.ngeom):
            geom = self._scene.geoms[i]
            subject[i] = geom.objtype == mujoco.mjtObj.mjOBJ_GEOM and geom.objid in framing.geoms
        return subject[np.where((index >= 0) & (index < self._scene.ngeom), index, -1)]

    def frames(self, recording: Recording):
        """Every sample's frame, in order (a generator of (H, W, 3) uint8 images)."""
        framing = self.framing(recording)
        for k in range(len(recording)):
            yield self.frame(recording, k, framing)

    def write(self, recording: Recording, path: str | Path) -> int:
        """Write every sample of `recording` as one frame of an MP4 at `path`; returns the
        number of frames."""
        return self._write(self.frames(recording), recording.step_dt_s, path)

    def write_grid(self, recordings: list[Recording], path: str | Path) -> int:
        """Write several worlds' recordings side by side as one MP4 (a grid of
        ceil(sqrt(n)) columns, each tile one frame of this renderer's size, shrunk to fit
        the frame); a world whose episode ended shows its last frame. Returns the number
        of frames."""
        if not recordings:
            raise ValueError("write_grid needs at least one recording")
        cfg, n = self.cfg, len(recordings)
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
        tiles = [list(self.frames(r)) for r in recordings]
        count = max(len(t) for t in tiles)

        def grid_frames():
            height, width = cfg.height // rows, cfg.width // cols
            for k in range(count):
                canvas = np.zeros((cfg.height, cfg.width, 3), dtype=np.uint8)
                for i, tile in enumerate(tiles):
                    image = tile[min(k, len(tile) - 1)]
                    ys = np.arange(height) * cfg.height // height
                    xs = np.arange(width) * cfg.width // width
                    row, col = divmod(i, cols)
                    canvas[row * height : (row + 1) * height, col * width : (col + 1) * width] = (
                        image[ys][:, xs]
                    )
                yield canvas

        return self._write(grid_frames(), recordings[0].step_dt_s, path)

    def _write(self, frames, step_dt_s: float, path: str | Path) -> int:
        import imageio.v2 as imageio

        fps = self.cfg.fps or min(30.0, 1.0 / step_dt_s)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with imageio.get_writer(
            path, fps=fps, codec="libx264", quality=7, macro_block_size=16, ffmpeg_log_level="error"
        ) as writer:
            for image in frames:
                writer.append_data(image)
                count += 1
        return count

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
