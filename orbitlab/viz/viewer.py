"""Watch one world live while the policy runs.

With a display ($DISPLAY or $WAYLAND_DISPLAY) MuJoCo's own interactive viewer
(`mujoco.viewer.launch_passive`) shows the world, with the Hill axes, nadir and Sun
arrows as user geoms; without one, a viser browser viewer (optional extra:
`pip install 'orbitlab-sim[viser]'`) serves the world's bodies (primitive geoms and
meshes), the marker arrows and the episode time, and prints its URL.

    viewer = open_viewer(env, ViewerCfg(world=0))
    rollout(env, observers=[viewer])      # the viewer updates after every env step
    viewer.close()                        # with hold=True: waits for the window / Ctrl-C
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch

from orbitlab.viz import VizUnavailable
from orbitlab.viz.markers import add_arrows, frame_arrows, load_sample, marker_length
from orbitlab.viz.recorder import Recorder, Recording

if TYPE_CHECKING:
    from orbitlab.demos.status import TeleopStatus
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv

VISER_INSTALL = "pip install 'orbitlab-sim[viser]'"
GROUPS = (0, 1, 2, 4)
"""Geom groups shown (MuJoCo's visible groups and the markers' group)."""


@dataclass(kw_only=True)
class ViewerCfg:
    """Live viewer settings."""

    world: int = 0
    """The world shown."""
    speed: float = 1.0
    """Simulated seconds per wall-clock second (0: as fast as the simulation runs)."""
    hold: bool = True
    """Keep the viewer open after the rollout (until the window closes or Ctrl-C)."""
    host: str = "127.0.0.1"
    """viser: the address the server listens on."""
    port: int = 8080
    """viser: the port (viser moves to the next free one if it is taken)."""
    backend: str = "auto"
    """'auto' (mujoco with a display, else viser), 'mujoco' or 'viser'."""


def has_display() -> bool:
    """True when a window can be opened ($DISPLAY or $WAYLAND_DISPLAY is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class _LiveViewer:
    """Shared part: a one-sample recorder of the world, and real-time pacing."""

    def __init__(self, env: ManagerBasedRLEnv, cfg: ViewerCfg):
        self.env, self.cfg = env, cfg
        self.m = env.scene.mj_model
        self.d = mujoco.MjData(self.m)
        self._recorder = Recorder(cfg.world, max_samples=1)
        self._start: float | None = None
        self._length: float | None = None
        self.frames = 0
        """Updates shown so far."""
        self.status: TeleopStatus | None = None
        """The status shown as a text overlay (`set_status`), if any."""

    def observe(
        self,
        env: ManagerBasedRLEnv,
        terms: dict[str, torch.Tensor],
        outputs: dict[str, torch.Tensor],
    ) -> None:
        if not self._recorder.active:
            return
        self._recorder.observe(env, terms, outputs)
        rec = self._recorder.recording()
        if self._length is None:
            self._length = marker_length(self.m, rec)
        load_sample(self.m, self.d, rec, 0)
        self.show(rec)
        self.frames += 1
        self._pace(float(rec.time_s[0]))

    def episode_ended(self, ended: torch.Tensor) -> None:
        self._recorder.episode_ended(ended)

    def _pace(self, sim_time_s: float) -> None:
        now = time.perf_counter()
        if self._start is None:
            self._start = now - (sim_time_s / self.cfg.speed if self.cfg.speed > 0 else 0.0)
        if self.cfg.speed > 0:
            lag = self._start + sim_time_s / self.cfg.speed - now
            if lag > 0:
                time.sleep(lag)

    def show(self, rec: Recording) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_status(self, status: TeleopStatus) -> None:
        """Show a recording session's status (`orbitlab.demos.status`) over the world."""
        self.status = status

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class MujocoViewer(_LiveViewer):
    """MuJoCo's passive interactive viewer (needs a display)."""

    def __init__(self, env: ManagerBasedRLEnv, cfg: ViewerCfg):
        super().__init__(env, cfg)
        import mujoco.viewer

        self.handle = mujoco.viewer.launch_passive(self.m, self.d)
        self.handle.opt.geomgroup[4] = 1

    def show(self, rec: Recording) -> None:
        if not self.handle.is_running():
            return
        with self.handle.lock():
            scene = self.handle.user_scn
            scene.ngeom = 0
            add_arrows(scene, frame_arrows(rec, 0, self._length), 0.03 * self._length)
        self.handle.sync()

    def set_status(self, status: TeleopStatus) -> None:
        """The status as a text overlay (labels and values, top left of the window)."""
        from orbitlab.demos.status import overlay_text

        super().set_status(status)
        if self.handle.is_running():
            labels, values = overlay_text(status)
            self.handle.set_texts(
                (
                    mujoco.mjtFontScale.mjFONTSCALE_150,
                    mujoco.mjtGridPos.mjGRID_TOPLEFT,
                    labels,
                    values,
                )
            )

    def close(self) -> None:
        if self.cfg.hold:
            print("close the viewer window to exit")
            while self.handle.is_running():
                time.sleep(0.1)
        self.handle.close()


def _rgb(rgba) -> tuple[int, int, int]:
    return tuple(round(255 * float(c)) for c in rgba[:3])


class ViserViewer(_LiveViewer):
    """A viser browser viewer (headless machines); prints the URL to open."""

    def __init__(self, env: ManagerBasedRLEnv, cfg: ViewerCfg):
        super().__init__(env, cfg)
        try:
            import viser
        except ImportError as error:
            raise VizUnavailable(
                f"viewer=true without a display needs viser ({error}): {VISER_INSTALL}"
            ) from error
        self.server = viser.ViserServer(host=cfg.host, port=cfg.port, verbose=False)
        self.url = f"http://{cfg.host}:{self.server.get_port()}"
        self._bodies = {}
        self._build()
        self._clock = self.server.scene.add_label("/clock", "t = 0.0 s", position=(0, 0, 0))
        print(f"viser viewer: open {self.url}", flush=True)

    def _geom(self, name: str, g: int):
        m, scene = self.m, self.server.scene
        kind, size = int(m.geom_type[g]), m.geom_size[g]
        rgba = m.mat_rgba[m.geom_matid[g]] if m.geom_matid[g] >= 0 else m.geom_rgba[g]
        pose = {"position": tuple(m.geom_pos[g]), "wxyz": tuple(m.geom_quat[g])}
        style = {"color": _rgb(rgba), "opacity": float(rgba[3]) if rgba[3] < 1 else None}
        t = mujoco.mjtGeom
        if kind == t.mjGEOM_BOX:
            return scene.add_box(name, dimensions=tuple(2 * size), **style, **pose)
        if kind in (t.mjGEOM_SPHERE, t.mjGEOM_ELLIPSOID):
            scale = tuple(size) if kind == t.mjGEOM_ELLIPSOID else float(size[0])
            return scene.add_icosphere(name, radius=1.0, scale=scale, **style, **pose)
        if kind in (t.mjGEOM_CYLINDER, t.mjGEOM_CAPSULE):
            height = 2 * size[1] + (2 * size[0] if kind == t.mjGEOM_CAPSULE else 0.0)
            return scene.add_cylinder(
                name, radius=float(size[0]), height=float(height), **style, **pose
            )
        if kind == t.mjGEOM_MESH:
            mesh = m.geom_dataid[g]
            v0, nv = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
            f0, nf = m.mesh_faceadr[mesh], m.mesh_facenum[mesh]
            return scene.add_mesh_simple(
                name,
                m.mesh_vert[v0 : v0 + nv].astype(np.float32),
                m.mesh_face[f0 : f0 + nf].astype(np.uint32),
                **style,
                **pose,
            )
        return None  # planes, height fields, SDFs: not shown

    def _build(self) -> None:
        m = self.m
        for b in range(1, m.nbody):
            geoms = [
                g
                for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b])
                if m.geom_group[g] in GROUPS
            ]
            if not geoms:
                continue
            name = f"/world/{m.body(b).name or b}".replace("//", "/")
            self._bodies[b] = self.server.scene.add_frame(name, show_axes=False)
            for g in geoms:
                self._geom(f"{name}/geom{g}", g)

    def show(self, rec: Recording) -> None:
        d = self.d
        with self.server.atomic():
            for b, frame in self._bodies.items():
                frame.position = tuple(d.xpos[b])
                frame.wxyz = tuple(d.xquat[b])
            arrows = frame_arrows(rec, 0, self._length)
            points = np.array([[a.start, a.end] for a in arrows], dtype=np.float32)
            colors = np.array([_rgb(a.rgba) for a in arrows], dtype=np.uint8)
            self.server.scene.add_arrows(
                "/markers",
                points,
                colors,
                shaft_radius=0.02 * self._length,
                head_radius=0.05 * self._length,
                head_length=0.12 * self._length,
            )
            self._clock.text = f"t = {rec.time_s[0]:.1f} s (world {rec.world})"
            if self.status is not None:
                from orbitlab.demos.status import format_status

                self._clock.text = format_status(self.status)
            self._clock.position = tuple(points[0, 0] + np.array([0, 0, self._length]))

    def close(self) -> None:
        try:
            if self.cfg.hold:
                print(f"viewer at {self.url}; Ctrl-C to exit", flush=True)
                while True:
                    time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.server.stop()


def open_viewer(env: ManagerBasedRLEnv, cfg: ViewerCfg | None = None) -> _LiveViewer:
    """MuJoCo's viewer with a display, else viser (cfg.backend forces either)."""
    cfg = cfg or ViewerCfg()
    if not 0 <= cfg.world < env.num_envs:
        raise ValueError(f"world={cfg.world} is out of range [0, {env.num_envs})")
    backend = cfg.backend if cfg.backend != "auto" else ("mujoco" if has_display() else "viser")
    if backend == "mujoco":
        return MujocoViewer(env, cfg)
    if backend == "viser":
        return ViserViewer(env, cfg)
    raise ValueError(f"viewer backend must be 'auto', 'mujoco' or 'viser', got {backend!r}")
