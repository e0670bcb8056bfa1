"""A camera sensor: RGB and depth images of an MJCF camera at a low rate.

The camera is one of the entity's MJCF cameras (named without the entity
prefix). Images are rendered only for the worlds whose timer is due (OpenGL
engine on the CPU backend; MuJoCo-Warp's batched ray-traced renderer on the
warp backend renders every world in one launch) and held in between. Marker
geoms (group 4 by default) are not seen: only geom groups 0-2 are drawn.
Latency and noise are not modelled for images.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from orbitlab.sensors.base import SensorCfg, _steps
from orbitlab.sensors.rendering import CameraRenderer
from orbitlab.sim.views import SimView


class Camera:
    """Timer-driven images of every world, held between updates."""

    @classmethod
    def from_scene(cls, cfg, name, scene, entity, stream):
        """The camera `cfg.camera` of the entity's MJCF."""
        return cls(cfg, name, scene.view, f"{entity}/{cfg.camera}")

    def __init__(self, cfg: CameraCfg, name: str, view: SimView, camera: str):
        owner = f"sensor '{name}'"
        if cfg.latency_s:
            raise ValueError(f"{owner}: camera latency is not modelled; set latency_s = 0")
        self.cfg, self.name, self.view = cfg, name, view
        self.period_steps = max(1, _steps(cfg.period_s, view.dt, owner, "period_s"))
        self.renderer = CameraRenderer(
            view.data,
            camera,
            cfg.width,
            cfg.height,
            rgb=cfg.rgb,
            depth=cfg.depth,
            engine=cfg.engine,
        )
        n, device = view.num_worlds, view.device
        self.value: dict[str, torch.Tensor] = {}
        """The held images by kind ('rgb', 'depth')."""
        if cfg.rgb:
            self.value["rgb"] = torch.zeros(
                (n, cfg.height, cfg.width, 3), dtype=torch.uint8, device=device
            )
        if cfg.depth:
            self.value["depth"] = torch.zeros(
                (n, cfg.height, cfg.width), dtype=torch.float32, device=device
            )
        self.samples = torch.zeros(n, dtype=torch.long, device=device)

    def _sample(self, worlds: torch.Tensor) -> None:
        rgb, depth = self.renderer.render(worlds.cpu().numpy())
        if rgb is not None:
            self.value["rgb"][worlds] = rgb.to(self.view.device)
        if depth is not None:
            self.value["depth"][worlds] = depth.to(self.view.device)
        self.samples[worlds] += 1

    def reset(self, worlds: torch.Tensor) -> None:
        self.samples[worlds] = 0
        self._sample(worlds)

    def update(self) -> None:
        due = (self.view.step_count % self.period_steps) == 0
        if bool(due.any()):
            self._sample(torch.nonzero(due)[:, 0])

    def close(self) -> None:
        self.renderer.close()


@dataclass(kw_only=True)
class CameraCfg(SensorCfg):
    """Camera: `value["rgb"]` (N, H, W, 3) uint8 and `value["depth"]` (N, H, W) float32, m."""

    class_type: type = Camera
    """The class the scene builds from this config (`Camera.from_scene`)."""

    camera: str = "nav_cam"
    """MJCF camera of the entity."""
    width: int = 64
    """Image width, px."""
    height: int = 64
    """Image height, px."""
    rgb: bool = True
    """Render colour."""
    depth: bool = True
    """Render depth (distance along the optical axis, m)."""
    engine: str | None = None
    """'opengl' or 'warp' (None: the backend's default, see `rendering.py`)."""
    period_s: float = 0.1
