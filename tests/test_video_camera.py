"""The video camera (orbitlab.viz.camera): framing, lighting, Earth backdrop and grids.

Rendered offscreen; skipped with the reason where no OpenGL backend or imageio-ffmpeg
exists. Coverage is measured with MuJoCo's segmentation rendering of the same scene
(`VideoRenderer.subject_mask`), brightness as the mean of the RGB frame (0-255).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from orbitlab.envs.evaluate import rollout
from orbitlab.registry import make_env
from orbitlab.viz import VizUnavailable
from orbitlab.viz.camera import CameraCfg, framing_distance, hill_view_direction
from orbitlab.viz.recorder import Recorder, Recording
from orbitlab.viz.video import VideoRenderer


def recorded(task: str, steps: int) -> tuple[VideoRenderer, Recording]:
    env = make_env(task, 2, variant="baseline")
    try:
        renderer = VideoRenderer(env.scene.mj_model)
    except VizUnavailable as error:
        pytest.skip(str(error))
    recorder = Recorder(0)
    rollout(env, policy="baseline", observers=[recorder], max_steps=steps)
    return renderer, recorder.recording()


def at_noon(recording: Recording) -> None:
    """Put the Sun overhead (the chief's radial direction) at every sample."""
    r = recording.r_eci_km
    recording.sun_eci[:] = r / np.linalg.norm(r, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def detumble():
    return recorded("Detumble-RW", 10)


def test_framing_distance_puts_the_sphere_at_the_asked_share_of_the_frame():
    for fovy, fill, radius in ((45.0, 0.9, 0.2), (60.0, 0.3, 12.0), (20.0, 1.0, 3.0)):
        d = framing_distance(radius, fovy, fill)
        # The sphere's silhouette has half-angle asin(r / d); its share of the frame
        # height is tan(half-angle) / tan(fovy / 2).
        share = np.tan(np.arcsin(radius / d)) / np.tan(np.radians(fovy) / 2)
        assert share == pytest.approx(fill, rel=1e-12)


def test_a_single_spacecraft_fills_the_frame_and_daylight_reads(detumble):
    renderer, recording = detumble
    at_noon(recording)
    framing = renderer.framing(recording)
    for k in (0, len(recording) // 2, len(recording) - 1):
        coverage = renderer.subject_mask(recording, k, framing).mean()
        brightness = renderer.frame(recording, k, framing).mean()
        assert coverage >= 0.10, (k, coverage)
        assert brightness >= 40.0, (k, brightness)


def test_the_fill_light_keeps_the_shadow_side_visible(detumble):
    renderer, recording = detumble
    at_noon(recording)
    framing = renderer.framing(recording)
    mask = renderer.subject_mask(recording, 0, framing)
    lit = renderer.frame(recording, 0, framing)[mask].mean()
    recording.sun_eci[:] *= -1.0  # the Sun behind Earth: only the fill light on the subject
    dark = renderer.frame(recording, 0, framing)[mask].mean()
    assert 15.0 <= dark < lit, (dark, lit)


def test_the_earth_backdrop_is_below_the_subject_and_can_be_switched_off(detumble):
    renderer, recording = detumble
    at_noon(recording)
    with_earth = renderer.frame(recording, 0)
    lower, upper = with_earth[-120:-40].mean(axis=(0, 1)), with_earth[20:60].mean(axis=(0, 1))
    assert lower[2] > 80.0 and lower[2] > lower[0] + 30.0  # blue Earth below the subject
    assert upper.max() < 30.0  # black space above it
    renderer.cfg.camera.earth = False
    try:
        assert renderer.frame(recording, 0)[-120:-40].mean() < 10.0
    finally:
        renderer.cfg.camera.earth = True


def test_several_spacecraft_stay_in_frame_seen_across_their_spread():
    renderer, recording = recorded("Formation", 5)
    framing = renderer.framing(recording)
    for name in recording.entities:
        renderer.cfg.camera.subject = (name,)
        try:
            only = renderer.framing(recording)
            shown = renderer.subject_mask(
                recording, 0, dataclasses.replace(framing, geoms=only.geoms)
            )
        finally:
            renderer.cfg.camera.subject = None
        assert shown.mean() > 1e-3, name  # every spacecraft visible in the group shot
    view = recording.hill[0].T @ hill_view_direction(recording, renderer.cfg.camera)
    assert view @ recording.sun_eci[0] <= 0.0  # the lit faces toward the camera
    assert len(recording.entities) == 3


def test_a_grid_video_tiles_several_worlds(tmp_path):
    imageio = pytest.importorskip("imageio.v2")
    env = make_env("Formation", 4, variant="baseline")
    try:
        renderer = VideoRenderer(env.scene.mj_model)
    except VizUnavailable as error:
        pytest.skip(str(error))
    recorders = [Recorder(w) for w in range(4)]
    rollout(env, policy="baseline", observers=recorders, max_steps=3)
    path = tmp_path / "grid.mp4"
    assert renderer.write_grid([r.recording() for r in recorders], path) == 4
    frames = imageio.mimread(path, memtest=False)
    assert len(frames) == 4 and frames[0].shape == (480, 640, 3)
    quarters = [frames[0][:240, :320], frames[0][:240, 320:], frames[0][240:, :320]]
    assert all(q.mean() > 5.0 for q in quarters)  # each tile holds a picture


def test_bad_camera_settings_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^CameraCfg.fill=0 is invalid: must be in \(0, 1\]$"):
        CameraCfg(fill=0)
    with pytest.raises(ValueError, match=r"^CameraCfg.elevation_deg=nan is invalid"):
        CameraCfg(elevation_deg=float("nan"))


def test_an_unknown_subject_names_the_entities(detumble):
    renderer, recording = detumble
    renderer.cfg.camera.subject = ("nobody",)
    try:
        with pytest.raises(ValueError, match=r"no entity 'nobody' \(free-floating entities: "):
            renderer.framing(recording)
    finally:
        renderer.cfg.camera.subject = None
