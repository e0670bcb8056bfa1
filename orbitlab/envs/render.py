"""`env.render()`: an offscreen RGB image of one env, markers included.

The scene compiler adds a camera named 'viewer' (looking at the chief origin);
MuJoCo's OpenGL renderer draws geom groups 0-2 and the markers' group 4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def render_rgb(env: ManagerBasedRLEnv, env_id: int = 0, camera: str | None = None) -> np.ndarray:
    from orbitlab.sensors.rendering import CameraRenderer

    name = camera or "viewer"
    if env._renderer is None or env._renderer_camera != name:
        if env._renderer is not None:
            env._renderer.close()
        height, width = env.cfg.render_size
        env._renderer = CameraRenderer(
            env.scene.data,
            name,
            width,
            height,
            rgb=True,
            depth=False,
            engine="opengl",
            geom_groups=(0, 1, 2, 4),
        )
        env._renderer_camera = name
    rgb, _ = env._renderer.render(np.array([env_id]))
    return rgb[0].cpu().numpy()
