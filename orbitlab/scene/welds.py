"""Welds between two entities' bodies, engaged and released while the worlds run.

A weld holds `body2` at a fixed pose relative to `body1` (MuJoCo's weld equality, a soft
constraint with its own `solref`). A scene-level weld joins bodies of different entities:
a latching end effector rigidizing on a client's grapple fixture, a berthing latch. It starts
released (or engaged, `active=True`); `scene.set_weld_active(name, mask, active)` switches it
per world, and a reset restores `active`.

The held pose is the config's, not the pose at the moment of engagement: a weld engaged a
few millimetres off pulls the bodies together along its constraint (as a latch's
rigidization draws a fixture in), and the pull is a load like any other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from orbitlab.scene.entities import Quat, Vec3


@dataclass(kw_only=True)
class WeldCfg:
    """A weld of scene body `body2` to scene body `body1` ('entity/body' names)."""

    body1: str
    """The holding body, e.g. 'bot/hand'."""
    body2: str
    """The held body, e.g. 'client/fixture'."""
    pos_m: Vec3 = (0.0, 0.0, 0.0)
    """body2's origin in body1's frame when engaged, m."""
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    """body2's orientation in body1's frame when engaged (w, x, y, z)."""
    active: bool = False
    """Engaged at the start of every episode."""
    solref: tuple[float, float] = (0.02, 1.0)
    """MuJoCo's constraint reference (time constant s, damping ratio): how stiffly the weld
    pulls the bodies to the held pose."""

    def add_to(self, spec: mujoco.MjSpec, name: str) -> None:
        """Add the weld to the scene's spec as the equality `name`."""
        if not name or "/" in name:
            raise ValueError(f"weld name {name!r} must be non-empty and contain no '/'")
        for field_name in ("body1", "body2"):
            body = getattr(self, field_name)
            if not isinstance(body, str) or spec.body(body) is None:
                raise ValueError(
                    f"weld '{name}': {field_name}={body!r} must name a body of the scene "
                    "('entity/body')"
                )
        if self.body1 == self.body2:
            raise ValueError(f"weld '{name}': body1 and body2 are both {self.body1!r}")
        quat = np.asarray(self.quat, dtype=float)
        norm = float(np.linalg.norm(quat))
        if quat.shape != (4,) or not math.isfinite(norm) or abs(norm - 1.0) > 1e-6:
            raise ValueError(f"weld '{name}': quat={self.quat!r} must be a unit quaternion")
        pos = np.asarray(self.pos_m, dtype=float)
        if pos.shape != (3,) or not np.isfinite(pos).all():
            raise ValueError(f"weld '{name}': pos_m={self.pos_m!r} must be 3 finite numbers")
        weld = spec.add_equality(
            name=name,
            type=mujoco.mjtEq.mjEQ_WELD,
            objtype=mujoco.mjtObj.mjOBJ_BODY,
            name1=self.body1,
            name2=self.body2,
            active=bool(self.active),
        )
        # eq_data of a weld: anchor in body2's frame (3: its origin), relpose (pos 3, quat 4),
        # torque scale (1)
        data = np.zeros(len(weld.data))
        data[3:6] = pos
        data[6:10] = quat
        data[10] = 1.0
        weld.data = data
        weld.solref = list(self.solref)
