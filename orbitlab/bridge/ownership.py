"""Per-spacecraft command ownership (`BridgeCfg.command_ownership`).

A client claims a namespace (a spacecraft) by advertising one of its input topics or by
commanding it first; from then on commands to that namespace from any other client id are
rejected ('not_owner') until the owner stops pinging for the heartbeat timeout, when the
next client to command or advertise takes it over. The claims are bounded by the
simulation's namespaces (unknown namespaces never reach this table).

Client ids are what clients say they are: this guards against mistakes between
cooperating controllers (two of them driving one spacecraft), not against a hostile
process, which CURVE (`security`) keeps out.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitlab.bridge.protocol import ProtocolError
from orbitlab.bridge.schema import shown


class Claims:
    """namespace -> the client id that owns its commands."""

    def __init__(self, alive: Callable[[str], bool], track: Callable[[str], bool]):
        self.alive = alive
        """alive(client) -> whether the client was heard within the heartbeat timeout."""
        self.track = track
        """track(client) -> marks it heard; False when no more client ids can be tracked."""
        self.owners: dict[str, str] = {}
        self.handovers = 0
        """Claims taken over from a silent owner."""

    def admit(self, namespace: str, client: str, topic: str = "") -> None:
        """Let `client` command `namespace` (claiming it when free); raises ProtocolError
        'not_owner' when a live other client owns it."""
        owner = self.owners.get(namespace)
        if owner == client:
            return
        if owner is not None and self.alive(owner):
            raise ProtocolError(
                "not_owner",
                f"{topic or namespace}: command from client "
                f"{shown(client, 40)} refused: '{namespace}' is owned by "
                f"client {shown(owner, 40)} (command_ownership)",
                topic or f"/{namespace}",
            )
        if not self.track(client):  # an owner nobody can see ping is no owner
            raise ProtocolError(
                "too_many_clients",
                f"{topic or namespace}: client "
                f"{shown(client, 40)} cannot claim '{namespace}': no more "
                "client ids can be tracked (max_clients)",
                topic or f"/{namespace}",
            )
        if owner is not None:
            self.handovers += 1
        self.owners[namespace] = client

    def reset(self) -> None:
        self.owners.clear()
