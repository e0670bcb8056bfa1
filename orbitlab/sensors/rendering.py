"""Camera images (RGB + depth) of the worlds of an `OrbitData`.

`CameraRenderer(data, camera, width, height)` renders one MJCF camera in every
world, or in a chosen subset, and returns torch tensors on the data's device:
RGB as (k, H, W, 3) uint8 and depth as (k, H, W) float32 metres.

Engines (`engine=`):

* `"opengl"`: MuJoCo's OpenGL renderer (`mjv_updateScene` + `mjr_render` into the
  offscreen framebuffer), one world after another on the host. A scratch MjData
  receives each world's qpos and mocap pose; `mj_kinematics`, `mj_comPos`,
  `mj_camlight` (and `mj_flex` with flexes) place the geoms, the camera and the
  lights. RGB and depth come from one render pass, without multisampling: one
  sample at each pixel centre, like the warp engine (no anti-aliasing; with MuJoCo's
  default 4x multisampling the depth read back belongs to one sub-pixel sample and
  silhouettes shift). Default for `backend='cpu'`; also usable with
  `backend='warp'`, by request only: qpos/mocap are then copied from the device to
  the host on every call.
* `"warp"`: MuJoCo-Warp's batched ray-traced renderer (`create_render_context`,
  `refit_bvh`, `render`), every world in one launch on the data's device. A scratch
  MuJoCo-Warp Data receives qpos and mocap pose (`kinematics`, `com_pos`,
  `camlight`, `flex`), so rendering never touches the simulated Data. Default for
  `backend='warp'`; not available for `backend='cpu'`. The batched renderer traces
  every world; `worlds` selects which are returned. Per-world model fields
  (`data.expand(...)`) are seen by this engine; the OpenGL engine uses the shared
  MjModel.

Both engines draw geoms of `geom_groups` (default 0, 1, 2) only: no sites,
tendons or decorations (contact points, frames, rangefinder rays), and cast no
shadows unless `shadows=True`. Geometry and depth agree between the engines up to
ties on silhouette pixels; shading differs a little (OpenGL's own lighting model
and reflections), a few colour levels on plain lit faces.

Depth is the distance along the camera's optical axis (planar depth, not the
Euclidean distance to the pixel's surface point), in metres. The OpenGL engine
reads MuJoCo's reversed-Z depth buffer (`mjDEPTH_ZEROFAR`: 1 at the near plane,
0 at the far plane) and inverts the perspective projection,
depth = near * far / (near + z * (far - near)) (orthographic: far - z (far - near)),
which is what `mujoco.Renderer.enable_depth_rendering()` returns too.
Near and far are `vis.map.znear` and `vis.map.zfar` times `stat.extent`. Pixels
that see no geometry have depth `far` (the far clip distance) in both engines;
the warp engine's "no hit" (0) is mapped to `far`, and its depth is clamped to it.

GL context selection (OpenGL engine). MuJoCo reads `MUJOCO_GL` once, at
`import mujoco`: `mujoco/__init__.py` imports `mujoco.rendering.classic.gl_context`,
which binds `GLContext` to the class that the variable names (GLFW when unset on
Linux). `orbitlab` imports mujoco before this module can run, so setting the
variable here would change nothing in this process, and `mujoco.Renderer` would
still try GLFW, which fails without a display. This module therefore never writes
`MUJOCO_GL`; it picks the context class itself, per renderer:

* `MUJOCO_GL` set by the user: that backend only (`egl`, `osmesa`, `glfw`/`glx`,
  `cgl`; `disable`/`off`/... disables rendering);
* unset, with `DISPLAY` or `WAYLAND_DISPLAY`: `glfw`, then `egl`, then `osmesa`;
* unset, headless: `egl`, then `osmesa`.

If none works, a RuntimeError lists each backend tried with its error and what to
install. Note that mujoco's `egl`/`osmesa` modules set `PYOPENGL_PLATFORM` when
imported, and PyOpenGL binds one platform per process; and that a `MUJOCO_GL`
naming a backend whose library is missing (osmesa without libOSMesa) already makes
`import mujoco` fail, before this module can say anything.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import os
import platform
import sys
import warnings
from typing import Self

import mujoco
import numpy as np
import torch

from orbitlab.quiet import wp  # Warp, started quietly

_DISABLED = ("disable", "disabled", "off", "false", "0")
_GLFW_NAMES = ("enable", "enabled", "on", "true", "1", "glfw", "glx", "wgl")
_GL_HELP = (
    "install an OpenGL backend (Debian/Ubuntu: 'apt-get install libegl1' for EGL "
    "(GPU or Mesa), or 'apt-get install libosmesa6' for software OSMesa; PyOpenGL must "
    "be installed), or set MUJOCO_GL=egl|osmesa (glfw needs a display)"
)


def gl_backends_to_try() -> list[str]:
    """The GL context backends the OpenGL engine tries, in order (see the module doc)."""
    requested = os.environ.get("MUJOCO_GL", "").lower().strip()
    if requested in _DISABLED:
        return []
    if requested:
        return ["glfw" if requested in _GLFW_NAMES else requested]
    system = platform.system()
    if system == "Darwin":
        return ["cgl", "glfw"]
    if system != "Linux":
        return ["glfw"]
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return ["glfw", "egl", "osmesa"]
    return ["egl", "osmesa"]


def _make_gl_context(mj_model: mujoco.MjModel, width: int, height: int):
    """(backend name, GL context, MjrContext) for the first backend that works."""
    requested = os.environ.get("MUJOCO_GL", "")
    backends = gl_backends_to_try()
    if not backends:
        raise RuntimeError(
            f"OpenGL rendering is disabled (MUJOCO_GL={requested!r}); unset it "
            "or set MUJOCO_GL=egl|osmesa|glfw"
        )
    failures = []
    for name in backends:
        platform_before = os.environ.get("PYOPENGL_PLATFORM")
        context = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GLFW reports its failures as warnings
                context = importlib.import_module(f"mujoco.{name}").GLContext(width, height)
                context.make_current()
                # A context that did not come up shows here (mujoco.FatalError).
                mjr = mujoco.MjrContext(mj_model, mujoco.mjtFontScale.mjFONTSCALE_50)
            return name, context, mjr
        except Exception as error:  # noqa: BLE001 - every failure is reported below
            failures.append(f"{name} ({type(error).__name__}: {error})")
            if context is not None:
                with contextlib.suppress(Exception):  # best effort on a broken context
                    context.free()
            if platform_before is None and "OpenGL" not in sys.modules:
                os.environ.pop("PYOPENGL_PLATFORM", None)
    fix = _GL_HELP + ("; or unset MUJOCO_GL to try egl, then osmesa" if requested else "")
    raise RuntimeError(
        f"could not create an OpenGL context for offscreen rendering "
        f"(MUJOCO_GL={requested!r}; tried {'; '.join(failures)}). To fix: {fix}."
    )


def _camera_names(mj_model: mujoco.MjModel) -> list[str]:
    return [mj_model.camera(i).name or f"#{i}" for i in range(mj_model.ncam)]


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.numpy()


class _OpenGLEngine:
    """MuJoCo's OpenGL renderer, one world after another (see the module doc)."""

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        camera_id: int,
        width: int,
        height: int,
        geom_groups: tuple[int, ...],
        shadows: bool,
    ):
        offwidth = mj_model.vis.global_.offwidth
        offheight = mj_model.vis.global_.offheight
        if width > offwidth or height > offheight:
            raise ValueError(
                f"{width}x{height} exceeds the model's offscreen framebuffer "
                f"{offwidth}x{offheight} (engine='opengl'). Raise it in the MJCF with "
                f'<visual><global offwidth="{max(width, offwidth)}" '
                f'offheight="{max(height, offheight)}"/></visual>, or set '
                "model.mj_model.vis.global_.offwidth / .offheight before creating the renderer."
            )
        self.m = mj_model
        self.width, self.height = width, height
        # Without multisampling (offsamples 0) every pixel is one sample at its centre,
        # as in the warp engine; with it the depth read back is one sub-pixel sample's,
        # which shifts silhouettes. The MjrContext is built from a copy of the model so
        # that the caller's model is not touched; it only reads assets and buffer sizes.
        single_sample = copy.copy(mj_model)
        single_sample.vis.quality.offsamples = 0
        self.gl_backend, self._gl, self._mjr = _make_gl_context(single_sample, width, height)
        del single_sample
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self._mjr.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scratch = mujoco.MjData(mj_model)
        self._scene = mujoco.MjvScene(mj_model, maxgeom=max(1000, 2 * mj_model.ngeom))
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(shadows)
        self._option = mujoco.MjvOption()
        self._option.geomgroup[:] = 0
        self._option.geomgroup[list(geom_groups)] = 1
        self._option.sitegroup[:] = 0
        self._option.tendongroup[:] = 0
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._camera.fixedcamid = camera_id
        self._catmask = int(mujoco.mjtCatBit.mjCAT_STATIC | mujoco.mjtCatBit.mjCAT_DYNAMIC)
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._orthographic = bool(mj_model.cam_projection[camera_id])
        self.near = float(mj_model.vis.map.znear * mj_model.stat.extent)
        self.far = float(mj_model.vis.map.zfar * mj_model.stat.extent)

    def render(
        self,
        qpos: np.ndarray,
        mocap_pos: np.ndarray,
        mocap_quat: np.ndarray,
        rgb: bool,
        depth: bool,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Images of the worlds whose states are the rows of qpos, mocap_pos, mocap_quat."""
        if self._mjr is None:
            raise RuntimeError("render() called after close()")
        m, sd = self.m, self._scratch
        count = qpos.shape[0]
        h, w = self.height, self.width
        rgb_out = np.empty((count, h, w, 3), dtype=np.uint8) if rgb else None
        raw = np.empty((count, h, w), dtype=np.float32) if depth else None
        rgb_buffer = np.empty((h, w, 3), dtype=np.uint8) if rgb else None
        depth_buffer = np.empty((h, w), dtype=np.float32) if depth else None
        self._gl.make_current()
        for k in range(count):
            sd.qpos[:] = qpos[k]
            if m.nmocap:
                sd.mocap_pos[:] = mocap_pos[k]
                sd.mocap_quat[:] = mocap_quat[k]
            mujoco.mj_kinematics(m, sd)
            mujoco.mj_comPos(m, sd)
            mujoco.mj_camlight(m, sd)
            if m.nflex:
                mujoco.mj_flex(m, sd)
            mujoco.mjv_updateScene(
                m, sd, self._option, None, self._camera, self._catmask, self._scene
            )
            mujoco.mjr_render(self._rect, self._scene, self._mjr)
            mujoco.mjr_readPixels(rgb_buffer, depth_buffer, self._rect, self._mjr)
            # OpenGL's rows run bottom-up; images run top-down. (`rgb` and `depth` decide
            # which of these arrays exist, so the None tests are those flags.)
            if rgb_out is not None and rgb_buffer is not None:
                rgb_out[k] = rgb_buffer[::-1]
            if raw is not None and depth_buffer is not None:
                raw[k] = depth_buffer[::-1]
        return rgb_out, (self._metric_depth(raw) if raw is not None else None)

    def _metric_depth(self, z: np.ndarray) -> np.ndarray:
        """Reversed-Z depth-buffer values (1 near, 0 far) to metres along the camera axis."""
        near, far = np.float64(self.near), np.float64(self.far)
        z = z.astype(np.float64)
        if self._orthographic:
            metres = far - z * (far - near)
        else:
            metres = near * far / (near + z * (far - near))
        return metres.astype(np.float32)

    def close(self) -> None:
        if self._mjr is not None:
            self._gl.make_current()
            self._mjr.free()
            self._mjr = None
        if self._gl is not None:
            self._gl.free()
            self._gl = None


@wp.kernel
def _gather_images(
    worlds: wp.array(dtype=wp.int32),
    packed: wp.array2d(dtype=wp.uint32),
    rgb_adr: int,
    depth_data: wp.array2d(dtype=wp.float32),
    depth_adr: int,
    width: int,
    far: float,
    want_rgb: int,
    want_depth: int,
    rgb_out: wp.array4d(dtype=wp.uint8),
    depth_out: wp.array3d(dtype=wp.float32),
):
    """Unpack MuJoCo-Warp's packed 0xAARRGGBB pixels and planar depth of chosen worlds."""
    k, pixel = wp.tid()  # type: ignore[misc]  # Warp's stub: tid() -> int | tuple[...]
    world = worlds[k]
    y = pixel // width
    x = pixel - y * width
    if want_rgb != 0:
        value = packed[world, rgb_adr + pixel]
        rgb_out[k, y, x, 0] = wp.uint8((value >> wp.uint32(16)) & wp.uint32(255))
        rgb_out[k, y, x, 1] = wp.uint8((value >> wp.uint32(8)) & wp.uint32(255))
        rgb_out[k, y, x, 2] = wp.uint8(value & wp.uint32(255))
    if want_depth != 0:
        z = depth_data[world, depth_adr + pixel]
        if z <= 0.0 or z > far:  # 0: the ray hit nothing
            z = far
        depth_out[k, y, x] = z


class _WarpEngine:
    """MuJoCo-Warp's batched ray-traced renderer (see the module doc)."""

    def __init__(
        self,
        backend,
        camera: str,
        width: int,
        height: int,
        rgb: bool,
        depth: bool,
        geom_groups: tuple[int, ...],
        shadows: bool,
    ):
        mjw = backend.mjw
        missing = [
            name
            for name in ("create_render_context", "refit_bvh", "render")
            if not hasattr(mjw, name)
        ]
        if missing:
            version = getattr(mjw, "__version__", "unknown")
            raise NotImplementedError(
                f"engine='warp' needs MuJoCo-Warp's batched renderer, but mujoco_warp "
                f"{version} lacks {', '.join(missing)}. Upgrade mujoco-warp, or pass "
                "engine='opengl' to render on the host with MuJoCo's OpenGL renderer "
                "(qpos/mocap are copied from the device each call)."
            )
        self.mjw = mjw
        self.backend = backend
        self.device = backend.device
        self.width, self.height = width, height
        mj_model = backend.mj_model
        nworld = backend.nworld
        with wp.ScopedDevice(self.device):
            self.rc = mjw.create_render_context(
                mj_model,
                nworld=nworld,
                cam_res=(width, height),
                render_rgb=rgb,
                render_depth=depth,
                render_seg=False,
                cam_active=[camera],
                enabled_geom_groups=list(geom_groups),
                use_shadows=shadows,
            )
            # Rendering state: positions only, no contacts or constraints.
            self._scratch = mjw.make_data(mj_model, nworld=nworld, nconmax=1, njmax=1)
        self._rgb_adr = int(self.rc.rgb_adr.numpy()[0])
        self._depth_adr = int(self.rc.depth_adr.numpy()[0])
        self.near = float(self.rc.znear)
        self.far = float(self.rc.zfar)
        self._dummy_rgb = wp.zeros((1, 1, 1, 3), dtype=wp.uint8, device=self.device)
        self._dummy_depth = wp.zeros((1, 1, 1), dtype=wp.float32, device=self.device)
        self._all_worlds: wp.array = wp.array(
            np.arange(nworld, dtype=np.int32), dtype=wp.int32, device=self.device
        )

    def render(self, worlds: np.ndarray | None, rgb: bool, depth: bool):
        if self.rc is None:
            raise RuntimeError("render() called after close()")
        mjw, m, live, sd = self.mjw, self.backend.m, self.backend.d, self._scratch
        with wp.ScopedDevice(self.device):
            wp.copy(sd.qpos, live.qpos)
            if m.nmocap:
                wp.copy(sd.mocap_pos, live.mocap_pos)
                wp.copy(sd.mocap_quat, live.mocap_quat)
            mjw.kinematics(m, sd)
            mjw.com_pos(m, sd)
            mjw.camlight(m, sd)
            if m.nflex:
                mjw.flex(m, sd)
            mjw.refit_bvh(m, sd, self.rc)
            mjw.render(m, sd, self.rc)
            if worlds is None:
                index = self._all_worlds
            else:
                index = wp.array(worlds.astype(np.int32), dtype=wp.int32, device=self.device)
            count, h, w = index.shape[0], self.height, self.width
            rgb_out = wp.empty((count, h, w, 3), dtype=wp.uint8) if rgb else self._dummy_rgb
            depth_out = wp.empty((count, h, w), dtype=wp.float32) if depth else self._dummy_depth
            wp.launch(
                _gather_images,
                dim=(count, h * w),
                inputs=[
                    index,
                    self.rc.rgb_data,
                    self._rgb_adr,
                    self.rc.depth_data,
                    self._depth_adr,
                    w,
                    self.far,
                    int(rgb),
                    int(depth),
                ],
                outputs=[rgb_out, depth_out],
            )
        return (wp.to_torch(rgb_out) if rgb else None, wp.to_torch(depth_out) if depth else None)

    def close(self) -> None:
        self.rc = None
        self._scratch = None


class CameraRenderer:
    """Renders one MJCF camera in every (or some) world(s) of an OrbitData.

    Args:
        data: the `OrbitData` whose worlds to render.
        camera: name of an MJCF camera.
        width, height: image size in pixels (at most the model's offscreen framebuffer,
            `<visual><global offwidth offheight/>`, with engine='opengl').
        rgb, depth: which images `render` returns (at least one).
        engine: 'opengl' or 'warp'; default 'opengl' for backend='cpu' and 'warp' (the
            batched renderer) for backend='warp'. See the module doc.
        geom_groups: geom groups drawn (MuJoCo's default visible groups 0, 1, 2).
        shadows: cast shadows (off by default in both engines: with software GL (Mesa
            llvmpipe) OpenGL shadow maps cost tens of ms per image, against < 1 ms without).

    `render(worlds)` returns (rgb, depth): rgb (k, H, W, 3) uint8 and depth (k, H, W)
    float32 metres along the camera axis (`far` where nothing is hit), as torch
    tensors on the data's device, or None where not requested; k is len(worlds),
    or nworld by default. Images show the current qpos/mocap state; no forward()
    is needed. Call `close()` (or use a `with` block) to free the GL context or
    device buffers.
    """

    def __init__(
        self,
        data,
        camera: str,
        width: int,
        height: int,
        *,
        rgb: bool = True,
        depth: bool = True,
        engine: str | None = None,
        geom_groups: tuple[int, ...] = (0, 1, 2),
        shadows: bool = False,
    ):
        mj_model = data.model.mj_model
        names = _camera_names(mj_model)
        camera_id = (
            mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
            if isinstance(camera, str)
            else -1
        )
        if camera_id < 0:
            raise ValueError(
                f"unknown camera {camera!r}; the model's cameras: "
                f"{names if names else 'none (add a <camera> to the MJCF)'}"
            )
        for label, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        if not (rgb or depth):
            raise ValueError("nothing to render: rgb and depth are both False")
        groups = tuple(int(g) for g in geom_groups)
        if any(not 0 <= g < mujoco.mjNGROUP for g in groups):
            raise ValueError(f"geom_groups must lie in [0, {mujoco.mjNGROUP}), got {geom_groups}")
        on_warp = getattr(data.backend, "mjw", None) is not None
        engine = engine or ("warp" if on_warp else "opengl")
        if engine not in ("opengl", "warp"):
            raise ValueError(f"unknown engine {engine!r} (available: 'opengl', 'warp')")
        if engine == "warp" and not on_warp:
            raise ValueError(
                "engine='warp' needs a data made with backend='warp'; "
                "backend='cpu' renders with engine='opengl'"
            )
        self.data = data
        self.camera = camera
        self.camera_id = int(camera_id)
        self.width, self.height = int(width), int(height)
        self.rgb, self.depth = bool(rgb), bool(depth)
        self.engine = engine
        self._on_warp = on_warp
        self._torch_device = torch.device(wp.device_to_torch(data.device)) if on_warp else None
        self._engine: _WarpEngine | _OpenGLEngine | None
        if engine == "warp":
            self._engine = _WarpEngine(
                data.backend,
                camera,
                self.width,
                self.height,
                self.rgb,
                self.depth,
                groups,
                bool(shadows),
            )
        else:
            self._engine = _OpenGLEngine(
                mj_model, self.camera_id, self.width, self.height, groups, bool(shadows)
            )
        self.near: float = self._engine.near
        """Near clip distance, m (vis.map.znear * stat.extent)."""
        self.far: float = self._engine.far
        """Far clip distance, m: the depth of pixels that see nothing."""
        self.gl_backend: str | None = getattr(self._engine, "gl_backend", None)
        """The GL context backend in use ('egl', 'osmesa', 'glfw', ...); None for 'warp'."""

    def _world_ids(self, worlds) -> np.ndarray | None:
        if worlds is None:
            return None
        ids = np.asarray(worlds)
        if ids.ndim == 0:
            ids = ids[None]
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(f"worlds must be a 1-D sequence of world indices, got {worlds!r}")
        ids = ids.astype(np.int64)
        bad = ids[(ids < 0) | (ids >= self.data.nworld)]
        if bad.size:
            raise ValueError(f"world indices {bad.tolist()} out of range [0, {self.data.nworld})")
        return ids

    def render(self, worlds=None):
        """(rgb, depth) of the camera in `worlds` (default: every world); see the class doc."""
        if self.__dict__.get("_engine") is None:
            raise RuntimeError("render() called after close()")
        ids = self._world_ids(worlds)
        if self.engine == "warp":
            return self._engine.render(ids, self.rgb, self.depth)
        rows = slice(None) if ids is None else ids
        state = [_host(self.data.bind(name))[rows] for name in ("qpos", "mocap_pos", "mocap_quat")]
        rgb, depth = self._engine.render(*state, rgb=self.rgb, depth=self.depth)
        out = tuple(None if image is None else torch.from_numpy(image) for image in (rgb, depth))
        if self._torch_device is not None:
            out = tuple(None if image is None else image.to(self._torch_device) for image in out)
        return out

    def close(self) -> None:
        """Free the GL context (engine='opengl') or the render buffers (engine='warp')."""
        engine = self.__dict__.get("_engine")
        if engine is not None:
            engine.close()
            self._engine = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finaliser
            self.close()
