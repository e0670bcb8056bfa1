"""CameraRenderer: RGB + depth of one camera in every world, on both engines.

The scene: camera 'eye' at the origin looking along +x (fovy 45 deg), a red 0.4 m
cube on a free joint whose front face is 1.0 m ahead, a blue wall whose front face
is 2.5 m ahead filling the left quarter of the view, a green mocap sphere parked
out of view, and black (empty) background everywhere else.

Depth tolerance (1%): the OpenGL engine recovers metres from MuJoCo's reversed-Z
depth buffer, whose values are quantised (24-bit fixed point or float32, the
driver's choice) and hyperbolic in distance, so the resolution coarsens with
distance^2 / znear; the conversion also runs through float32 near/far planes.
At 1-2.5 m with znear = 3.4 cm the error is ~1e-5 relative, so 1% is a loose
bound that still fails for a wrong convention: e.g. Euclidean instead of planar
depth is 7% off at the image border of the wall, and a wrong projection formula
is off by far more. The warp engine ray-traces in float32 and is held to 1e-3.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from orbitlab import SimSpec
from orbitlab.sensors.rendering import CameraRenderer

XML = """
<mujoco model="render_scene">
  <worldbody>
    <light name="key" directional="true" pos="0 0 0" dir="1 0 0"/>
    <camera name="eye" pos="0 0 0" xyaxes="0 -1 0 0 0 1" fovy="45"/>
    <camera name="side" pos="0 -3 0" xyaxes="1 0 0 0 0 1"/>
    <geom name="wall" type="box" pos="2.6 1.25 0" size="0.1 0.75 1.5" rgba="0 0 1 1"
          contype="0" conaffinity="0"/>
    <body name="target" pos="1.2 0 0">
      <freejoint/>
      <geom name="red" type="box" size="0.2 0.2 0.2" rgba="1 0 0 1" mass="1"
            contype="0" conaffinity="0"/>
    </body>
    <body name="marker" mocap="true" pos="1 -4 0">
      <geom type="sphere" size="0.05" rgba="0 1 0 1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""
W = H = 64
CENTRE = (slice(26, 38), slice(26, 38))  # inside the red face (rows, cols 17..46)
WALL = (slice(4, 60), slice(0, 12))  # inside the wall's front face (cols 0..15)
MARKER_AT = (0.9, 0.0, 0.3)  # in view: image row ~6, column ~32
MARKER_PIXEL = (6, 32)
GL_FAILURE = "could not create an OpenGL context"


@pytest.fixture(scope="module")
def model():
    return SimSpec.from_xml_string(XML).compile(timestep=0.01)


def gl_renderer(data, *args, **kwargs) -> CameraRenderer:
    """A CameraRenderer on the OpenGL engine, or skip when no GL backend works at all."""
    try:
        return CameraRenderer(data, *args, engine="opengl", **kwargs)
    except RuntimeError as error:
        if GL_FAILURE in str(error):
            pytest.skip(f"no OpenGL backend available: {error}")
        raise


def stage(data) -> None:
    """World 1: cube moved out of view. World 2: mocap marker moved into view."""
    for name, world, values in (("qpos", 1, [1.2, -5.0, 0.0]), ("mocap_pos", 2, [MARKER_AT])):
        field = data.bind(name)
        host = field if isinstance(field, np.ndarray) else field.numpy()
        if name == "qpos":
            host[world, :3] = values
        else:
            host[world] = values
        if not isinstance(field, np.ndarray):
            field.assign(host)


def check_scene(rgb: np.ndarray, depth: np.ndarray, far: float, rtol: float) -> None:
    """The staged three-world scene as both engines must show it."""
    # Depth along the camera axis: every pixel of a face normal to the axis has the
    # face's distance, including off-axis ones (Euclidean distance would grow).
    np.testing.assert_allclose(depth[0][CENTRE], 1.0, rtol=rtol)
    np.testing.assert_allclose(depth[0][WALL], 2.5, rtol=rtol)
    np.testing.assert_allclose(depth[0][:, -8:], far, rtol=1e-5)  # nothing there
    # The red face fills the centre: red-dominant.
    centre = rgb[0][CENTRE].reshape(-1, 3).astype(float).mean(axis=0)
    assert centre[0] > 150 and centre[0] > 2 * centre[1] and centre[0] > 2 * centre[2], centre
    assert np.all(rgb[0][WALL][..., 2] > 2 * rgb[0][WALL][..., 0].astype(int))  # blue wall
    # World 1 differs only where the cube was: background colour and far depth there.
    assert not np.array_equal(rgb[0], rgb[1])
    assert np.all(rgb[1][CENTRE] == 0)
    np.testing.assert_allclose(depth[1][CENTRE], far, rtol=1e-5)
    np.testing.assert_array_equal(rgb[1][WALL], rgb[0][WALL])
    # World 2: the mocap marker (green) is where mocap_pos put it; absent elsewhere.
    marker = rgb[2][MARKER_PIXEL].astype(int)
    assert marker[1] > 2 * max(marker[0], marker[2], 10), marker
    assert np.all(rgb[0][MARKER_PIXEL] == 0)
    np.testing.assert_allclose(depth[2][MARKER_PIXEL], 0.9 - 0.05, rtol=0.02)


# ---------------------------------------------------------------------- OpenGL engine
def test_opengl_scene_on_cpu_backend(model):
    data = model.make_data(nworld=3)
    with gl_renderer(data, "eye", W, H) as renderer:
        stage(data)  # after construction: render reads the current state, no forward()
        rgb, depth = renderer.render()
        assert renderer.engine == "opengl" and renderer.gl_backend
        assert rgb.shape == (3, H, W, 3) and rgb.dtype == torch.uint8
        assert depth.shape == (3, H, W) and depth.dtype == torch.float32
        assert rgb.device.type == "cpu" and depth.device.type == "cpu"
        check_scene(rgb.numpy(), depth.numpy(), renderer.far, rtol=0.01)
        # A subset, in the order asked for.
        rgb_sub, depth_sub = renderer.render(worlds=[2, 0])
        assert rgb_sub.shape == (2, H, W, 3)
        np.testing.assert_array_equal(rgb_sub.numpy(), rgb.numpy()[[2, 0]])
        np.testing.assert_array_equal(depth_sub.numpy(), depth.numpy()[[2, 0]])


def test_opengl_options_and_shapes(model):
    data = model.make_data(nworld=2)
    with gl_renderer(data, "eye", 48, 30, depth=False) as renderer:
        rgb, depth = renderer.render(worlds=[1])
        assert depth is None and rgb.shape == (1, 30, 48, 3)
    with gl_renderer(data, "eye", 16, 16, rgb=False) as renderer:
        rgb, depth = renderer.render()
        assert rgb is None and depth.shape == (2, 16, 16)
    with gl_renderer(data, "eye", 32, 32, geom_groups=(1,)) as renderer:  # all geoms are 0
        rgb, depth = renderer.render()
        assert np.all(rgb.numpy() == 0)
        np.testing.assert_allclose(depth.numpy(), renderer.far, rtol=1e-5)


def test_opengl_depth_matches_mujoco_renderer(model, tmp_path):
    """Same metres as mujoco.Renderer's own depth mode (run with MUJOCO_GL=egl)."""
    data = model.make_data(nworld=1)
    with gl_renderer(data, "eye", W, H) as renderer:
        if renderer.gl_backend != "egl":
            pytest.skip("reference run uses MUJOCO_GL=egl")
        _, depth = renderer.render()
    script = textwrap.dedent(f"""
        import mujoco, numpy as np
        m = mujoco.MjModel.from_xml_string({XML!r})
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        with mujoco.Renderer(m, {H}, {W}) as r:
            r.enable_depth_rendering()
            r.update_scene(d, camera="eye")
            np.save({str(tmp_path / "ref.npy")!r}, r.render())
    """)
    env = {**os.environ, "MUJOCO_GL": "egl"}
    env.pop("PYOPENGL_PLATFORM", None)
    run = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    # mujoco.Renderer inverts the projection with float32 coefficients: ~3e-5 relative.
    np.testing.assert_allclose(depth.numpy()[0], np.load(tmp_path / "ref.npy"), rtol=1e-4)


# --------------------------------------------------------------------------- errors
def test_errors_are_named(model):
    data = model.make_data(nworld=2)
    with pytest.raises(ValueError, match=r"unknown camera 'nope'.*'eye', 'side'"):
        CameraRenderer(data, "nope", W, H)
    for width, height in ((0, 10), (10, -1), (2.5, 10)):
        with pytest.raises(ValueError, match="must be a positive integer"):
            CameraRenderer(data, "eye", width, height)
    offwidth = model.mj_model.vis.global_.offwidth
    with pytest.raises(ValueError, match=r"offscreen framebuffer.*<visual><global offwidth"):
        CameraRenderer(data, "eye", offwidth + 1, 10)
    with pytest.raises(ValueError, match="nothing to render"):
        CameraRenderer(data, "eye", W, H, rgb=False, depth=False)
    with pytest.raises(ValueError, match="engine='warp' needs a data made with backend='warp'"):
        CameraRenderer(data, "eye", W, H, engine="warp")
    with pytest.raises(ValueError, match="unknown engine"):
        CameraRenderer(data, "eye", W, H, engine="vulkan")
    renderer = gl_renderer(data, "eye", 8, 8)
    for worlds in ([2], [-1], [[0, 1]], [0.5]):
        with pytest.raises(ValueError, match="world"):
            renderer.render(worlds=worlds)
    renderer.close()
    renderer.close()  # idempotent
    with pytest.raises(RuntimeError, match="after close"):
        renderer.render()


def test_gl_disabled_error(model, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "off")
    data = model.make_data(nworld=1)
    with pytest.raises(RuntimeError, match=r"OpenGL rendering is disabled \(MUJOCO_GL='off'\)"):
        CameraRenderer(data, "eye", W, H)


def test_gl_failure_lists_backends_and_fix(tmp_path):
    """MUJOCO_GL=glfw without a display: the error says what was tried and how to fix it.

    (A MUJOCO_GL naming a backend whose library is missing, e.g. osmesa without
    libOSMesa, already breaks `import mujoco`; glfw without a display fails later,
    when the context is made.)
    """
    script = textwrap.dedent(f"""
        from orbitlab import SimSpec
        from orbitlab.sensors.rendering import CameraRenderer
        data = SimSpec.from_xml_string({XML!r}).compile().make_data(nworld=1)
        try:
            CameraRenderer(data, "eye", 8, 8)
            print("RENDERED")
        except RuntimeError as error:
            print("ERROR", error)
    """)
    env = {**os.environ, "MUJOCO_GL": "glfw"}
    for name in ("PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    if "RENDERED" in run.stdout:
        pytest.skip("GLFW makes a context without a display here; nothing fails")
    assert "MUJOCO_GL='glfw'; tried glfw (" in run.stdout, run.stdout
    for hint in ("libegl1", "libosmesa6", "MUJOCO_GL=egl|osmesa", "unset MUJOCO_GL"):
        assert hint in run.stdout, run.stdout


# ----------------------------------------------------------------------- warp engine
@pytest.fixture(scope="module")
def warp_data(model, warp_device):
    pytest.importorskip("mujoco_warp")
    data = model.make_data(nworld=3, backend="warp", device=warp_device)
    stage(data)
    return data


def test_warp_batched_engine(warp_data, warp_device):
    with CameraRenderer(warp_data, "eye", W, H) as renderer:
        assert renderer.engine == "warp" and renderer.gl_backend is None
        rgb, depth = renderer.render()
        assert rgb.shape == (3, H, W, 3) and rgb.dtype == torch.uint8
        assert depth.shape == (3, H, W) and depth.dtype == torch.float32
        assert str(rgb.device) == str(torch.device(warp_device))
        rgb, depth = rgb.cpu().numpy(), depth.cpu().numpy()
        check_scene(rgb, depth, renderer.far, rtol=1e-3)
        rgb_sub, depth_sub = renderer.render(worlds=[2, 0])
        np.testing.assert_array_equal(rgb_sub.cpu().numpy(), rgb[[2, 0]])
        np.testing.assert_array_equal(depth_sub.cpu().numpy(), depth[[2, 0]])
    with CameraRenderer(warp_data, "eye", 40, 24, rgb=False) as renderer:
        rgb, depth = renderer.render(worlds=[1])
        assert rgb is None and depth.shape == (1, 24, 40)


def test_opengl_engine_on_warp_backend_agrees(warp_data, warp_device):
    """engine='opengl' copies the device state to the host; geometry matches 'warp'."""
    with CameraRenderer(warp_data, "eye", W, H) as batched:
        rgb_w, depth_w = (image.cpu().numpy() for image in batched.render())
    with gl_renderer(warp_data, "eye", W, H) as renderer:
        rgb, depth = renderer.render()
        assert str(depth.device) == str(torch.device(warp_device))
        rgb, depth = rgb.cpu().numpy(), depth.cpu().numpy()
    check_scene(rgb, depth, renderer.far, rtol=0.01)
    # Both take one sample at each pixel centre: rasterisation and ray casting agree
    # but for ties on silhouette pixels; shading differs a little (OpenGL lighting).
    assert np.isclose(depth, depth_w, rtol=1e-3).mean() > 0.99
    colour_gap = np.abs(rgb.astype(int) - rgb_w).max(axis=-1)
    assert (colour_gap <= 16).mean() > 0.99, colour_gap.max()
