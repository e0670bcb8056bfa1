"""A controller's side of the bridge: its client and the wait for one tick's states."""

from __future__ import annotations

import time

from orbitlab_tasks.formation.bridge_study.config import LinkCfg


def connect(link: LinkCfg, client_id: str):
    from orbitlab.bridge import Client, ClientCfg

    return Client(
        ClientCfg(
            host=link.host,
            pub_port=link.pub_port,
            sub_port=link.sub_port,
            heartbeat_port=link.heartbeat_port,
            client_id=client_id,
        )
    )


def wait_tick(
    client, keys: list[tuple[str, str]], after: float, timeout_s: float
) -> dict[tuple[str, str], dict]:
    """Poll until every topic of `keys` has a message of one and the same time > `after`."""
    end = time.monotonic() + timeout_s
    while True:
        msgs = {k: client.latest(k) for k in keys}
        times = [m["time"] for m in msgs.values() if m is not None]
        if len(times) == len(keys) and min(times) > after + 1e-9 and max(times) - min(times) < 1e-9:
            return msgs
        remaining = end - time.monotonic()
        if remaining <= 0:
            missing = [k for k, m in msgs.items() if m is None or m["time"] <= after + 1e-9]
            raise TimeoutError(
                f"no state after t = {after:.3f} s within {timeout_s} s (waiting for {missing})"
            )
        client.poll(min(remaining, 0.05))
