"""What actuator groups see of the simulation: torch views, frames, a wrench buffer.

The context owns the bodies' applied-wrench composition. Each physics step:
`begin_step()` clears the actuator wrench, groups run (some add wrenches, e.g.
the ideal wrench actuator or misalignment corrections), then `end_step()` writes
`external + actuator` into the OrbitData's user `xfrc_applied`. Disturbances
from events go into `external` (world axes, N and N m about the COM), which
persists until changed.
"""

from __future__ import annotations

import torch

from orbitlab.sim import health
from orbitlab.sim.views import SimView
from orbitlab.stateful import Stateful


class ActuatorContext(Stateful):
    """The simulation view plus the applied-wrench composition used by actuator groups."""

    state_attrs = ("external", "actuator_wrench")

    def __init__(self, view: SimView):
        self.view = view
        self.data = view.data
        self.num_worlds = view.num_worlds
        self.dt = view.dt
        self.device = view.device
        self.xfrc_user = view.array("xfrc_user").view(self.num_worlds, -1, 6)
        self.external = torch.zeros_like(self.xfrc_user)
        """Persistent external wrench per body (world axes; force N, torque N m about the COM)."""
        self.actuator_wrench = torch.zeros_like(self.xfrc_user)
        self._uses_wrench = False

    def array(self, name: str) -> torch.Tensor:
        """A zero-copy torch view of an OrbitData array ('thruster_force', 'R', ...)."""
        return self.view.array(name)

    def freeze_worlds(
        self, bad: torch.Tensor, rows: torch.Tensor | slice, code: int = health.NONFINITE_COMMAND
    ) -> None:
        """Mark the worlds `rows` (ids or a slice) where `bad` (k,) bool holds with health
        `code` unless already marked, without a host read: the physics freezes them."""
        codes = self.view.array("health")
        current = codes[rows]
        codes[rows] = torch.where(bad & (current == 0), code, current)

    def frames(self) -> dict[str, torch.Tensor]:
        """Every body's Q, COM, omega and COM velocity at the current state (see SimView)."""
        return self.view.frames()

    def add_wrench(self, body: torch.Tensor | int, wrench_world: torch.Tensor) -> None:
        """Add (num_worlds, [k,] 6) world-axes wrenches about the COM of `body` (id or ids)."""
        self._uses_wrench = True
        if isinstance(body, int):
            self.actuator_wrench[:, body] += wrench_world
        else:  # index_add sums repeated bodies
            self.actuator_wrench.index_add_(1, body, wrench_world)

    def begin_step(self) -> None:
        if self._uses_wrench:
            self.actuator_wrench.zero_()

    def end_step(self) -> None:
        self.xfrc_user.copy_(self.external + self.actuator_wrench)
